// Runs one call through an official provider SDK and prints what the SDK
// made of the answer, as JSON on stdout. Driven by gatewaytest.RunSDK; the
// call's description arrives as JSON on stdin:
//
//   {"sdk": "anthropic" | "openai", "baseURL": "...", "apiKey": "...",
//    "authToken": "...", "headers": {...},
//    "call": "create" | "stream" | "count_tokens" | "raw_stream",
//    "body": {...}, "abortAfter": N}
//
// Output: {"ok": true, "result": <the SDK's final object>, "events": [...]}
// or {"ok": false, "status": N, "error": <the error body>, "name": "..."}.
// Retries are off, so an upstream error reaches the test as it came.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const spec = JSON.parse(Buffer.concat(chunks).toString('utf8'));

function client() {
  const common = { baseURL: spec.baseURL, maxRetries: 0, timeout: 60_000, defaultHeaders: spec.headers || {} };
  if (spec.sdk === 'anthropic') {
    return new Anthropic({ ...common, apiKey: spec.apiKey ?? null, authToken: spec.authToken ?? null });
  }
  return new OpenAI({ ...common, apiKey: spec.apiKey });
}

// collect reads a stream's events, aborting after spec.abortAfter of them.
async function collect(s, events) {
  for await (const ev of s) {
    events.push(ev);
    if (spec.abortAfter && events.length >= spec.abortAfter) {
      s.abort();
      return true;
    }
  }
  return false;
}

async function run() {
  const c = client();
  const events = [];
  if (spec.sdk === 'anthropic') {
    switch (spec.call) {
      case 'create':
        return { result: await c.messages.create(spec.body), events };
      case 'count_tokens':
        return { result: await c.messages.countTokens(spec.body), events };
      case 'stream': {
        const s = c.messages.stream(spec.body);
        if (await collect(s, events)) return { result: null, events, aborted: true };
        return { result: await s.finalMessage(), events };
      }
    }
  } else {
    switch (spec.call) {
      case 'create':
        return { result: await c.chat.completions.create(spec.body), events };
      case 'stream': {
        const s = c.chat.completions.stream(spec.body);
        if (await collect(s, events)) return { result: null, events, aborted: true };
        return { result: await s.finalChatCompletion(), events };
      }
    }
  }
  throw new Error(`unknown call ${spec.sdk}.${spec.call}`);
}

try {
  const out = await run();
  process.stdout.write(JSON.stringify({ ok: true, ...out }));
} catch (err) {
  process.stdout.write(JSON.stringify({
    ok: false,
    name: err?.constructor?.name ?? 'Error',
    status: err?.status ?? 0,
    error: err?.error ?? null,
    message: String(err?.message ?? err),
  }));
}
