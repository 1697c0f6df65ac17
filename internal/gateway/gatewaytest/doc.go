// Package gatewaytest is the gateway's test support: it runs the official
// Anthropic and OpenAI SDKs against a URL (RunSDK), checks stream bytes
// against the providers' event grammar (CheckAnthropicStream,
// CheckOpenAIStream), cuts requests into prompt-cache units (Prefix), and
// drives long scripted conversations (NewScenario, Agent, Replay) against
// the scripted model of package scriptedmodel.
//
// It imports testing and is for tests only; the mcproxy binary must never
// link it (cmd/mcproxy's TestBinaryLinksNoTestCode checks). What a
// benchmark needs at run time belongs in scriptedmodel.
package gatewaytest
