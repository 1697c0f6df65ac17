// learn.mjs plays one client session against mcproxy with the official MCP
// TypeScript SDK client, for the learning-from-use end-to-end test: each
// step is a retrieve_tools search or a call_tool call, and the texts of the
// answers are printed as one JSON array on stdout. It is not part of mcproxy.
//
// Usage: node learn.mjs '<json>' where json is
//   {"url": "http://127.0.0.1:PORT/mcp", "steps": [
//      {"search": "QUERY", "limit": 5} | {"call": "server:tool", "arguments": {...}}]}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const opts = JSON.parse(process.argv[2]);
const client = new Client({ name: "mcproxy-learn", version: "0.0.0" });
const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const out = [];
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)));
  for (const step of opts.steps) {
    let r;
    if (step.search !== undefined) {
      r = await client.callTool({ name: "retrieve_tools", arguments: { query: step.search, limit: step.limit ?? 5 } });
    } else {
      r = await client.callTool({ name: "call_tool", arguments: { name: step.call, arguments: step.arguments ?? {} } });
    }
    out.push({ isError: r.isError === true, text: text(r) });
  }
  await client.close();
} catch (e) {
  console.error(`FAIL ${e}`);
  process.exit(1);
}
console.log(JSON.stringify(out));
