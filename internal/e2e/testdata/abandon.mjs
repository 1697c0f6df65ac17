// abandon.mjs opens sessions with the official MCP TypeScript SDK's client
// over streamable HTTP, makes one tool call in each, and closes each with
// close(), which sends no DELETE: the sessions are abandoned, as ordinary
// clients leave them. The Go end-to-end test runs it; it is not part of
// mcproxy.
//
// Usage: node abandon.mjs '{"url": "http://127.0.0.1:PORT/mcp", "sessions": 500, "parallel": 20}'
// It prints {"sessions": N, "ids": K} and exits non-zero on a failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const opts = JSON.parse(process.argv[2]);
const ids = new Set();
let next = 0;

async function one(i) {
  const transport = new StreamableHTTPClientTransport(new URL(opts.url));
  const client = new Client({ name: "abandon.mjs", version: "1" });
  await client.connect(transport);
  const res = await client.callTool({ name: "call_tool", arguments: { name: "everything:echo", arguments: { message: `session ${i}` } } });
  if (res.isError || !JSON.stringify(res.content).includes(`Echo: session ${i}`)) {
    throw new Error(`session ${i}: unexpected answer ${JSON.stringify(res)}`);
  }
  ids.add(transport.sessionId);
  await client.close(); // no DELETE
}

async function worker() {
  while (next < opts.sessions) {
    await one(next++);
  }
}

try {
  await Promise.all(Array.from({ length: opts.parallel }, worker));
} catch (err) {
  console.error(`FAIL ${err?.stack ?? err}`);
  process.exit(1);
}
console.log(JSON.stringify({ sessions: next, ids: ids.size }));
