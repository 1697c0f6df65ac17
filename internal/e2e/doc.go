// Package e2e holds mcproxy's end-to-end tests: they build the mcproxy binary,
// run it as a subprocess over the real npm reference MCP servers (everything,
// filesystem, memory) and drive it with real clients (mcp-go's and the
// official TypeScript SDK's) over stdio, streamable HTTP and legacy SSE. It
// has no non-test code; `npm ci` must have been run in the repository root.
package e2e
