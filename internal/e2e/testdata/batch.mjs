// batch.mjs sends a JSON-RPC batch to mcproxy with the official MCP
// TypeScript SDK's streamable HTTP transport, which can send an array of
// messages and reads an array answer, as a client on protocol 2025-03-26
// may. The Go end-to-end test runs it; it is not part of mcproxy.
//
// Usage: node batch.mjs '{"url": "http://127.0.0.1:PORT/mcp"}'
// It prints the responses it got as one JSON line and exits non-zero on a
// failure.
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const opts = JSON.parse(process.argv[2]);
const transport = new StreamableHTTPClientTransport(new URL(opts.url));
const responses = new Map();
const waiting = new Map();
transport.onmessage = (msg) => {
  if (msg.id === undefined || msg.method !== undefined) return;
  responses.set(msg.id, msg);
  waiting.get(msg.id)?.();
};
transport.onerror = (err) => {
  console.error(`FAIL transport: ${err}`);
  process.exit(1);
};

function responseTo(id) {
  if (responses.has(id)) return Promise.resolve(responses.get(id));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no response to ${id} within 60s`)), 60000);
    waiting.set(id, () => {
      clearTimeout(timer);
      resolve(responses.get(id));
    });
  });
}

await transport.start();
await transport.send({
  jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "batch.mjs", version: "1" } },
});
const init = await responseTo(1);
if (init.error) {
  console.error(`FAIL initialize: ${JSON.stringify(init.error)}`);
  process.exit(1);
}
transport.setProtocolVersion(init.result.protocolVersion);
await transport.send([{ jsonrpc: "2.0", method: "notifications/initialized" }]);
await transport.send([
  { jsonrpc: "2.0", id: 2, method: "ping" },
  { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "retrieve_tools", arguments: { query: "echo a message" } } },
  { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "call_tool", arguments: { name: "everything:echo", arguments: { message: "sent in a batch" } } } },
]);
const got = {};
for (const id of [2, 3, 4]) got[id] = await responseTo(id);
console.log(JSON.stringify(got));
await transport.close();
