// smoke.mjs drives mcproxy with the official MCP TypeScript SDK client, as an
// independent check that mcproxy speaks the protocol the way other
// implementations expect. The Go end-to-end test runs it; it is not part of
// mcproxy.
//
// Usage: node smoke.mjs '<json>' where json is
//   {"transport": "stdio", "command": "...", "args": [...], "fsDir": "...", "tag": "..."}
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "fsDir": "...", "tag": "..."}
// It prints one line per check and exits non-zero on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const opts = JSON.parse(process.argv[2]);

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exit(1);
}

function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// noa (on by default) ends each result with a ref tag such as [m00004 · 12 tok].
const refTag = /^\[m\d{5} · [0-9.,]+K? tok\]$/;

// upstreamText is the result's text without the blocks noa added.
function upstreamText(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text" && !refTag.test(c.text) && !c.text.startsWith("[noa]"))
    .map((c) => c.text)
    .join("\n");
}

async function call(client, name, args) {
  const result = await client.callTool({ name: "call_tool", arguments: { name, arguments: args } });
  if (result.isError) fail(`call_tool ${name} returned a tool error: ${text(result)}`);
  if (!(result.content ?? []).some((c) => c.type === "text" && refTag.test(c.text))) fail(`call_tool ${name}: no noa ref tag in ${JSON.stringify(text(result))}`);
  return result;
}

const transport =
  opts.transport === "stdio"
    ? new StdioClientTransport({ command: opts.command, args: opts.args, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(opts.url));
const client = new Client({ name: "mcproxy-smoke", version: "0.0.0" });

try {
  await client.connect(transport);
  console.log(`ok connect ${client.getServerVersion()?.name}`);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  if (names.join(",") !== "Compress,call_tool,describe_tool,read_archive,retrieve_tools") fail(`tools/list: got ${names}`);
  if (!(client.getInstructions() ?? "").includes("noa manages this session's context")) fail(`instructions lack noa's note: ${client.getInstructions()}`);
  console.log(`ok tools/list ${names.join(",")}`);

  const found = await client.callTool({ name: "retrieve_tools", arguments: { query: "read the contents of a file", limit: 3 } });
  const listing = text(found);
  if (found.isError || !/filesystem:read_(text_)?file\b/.test(listing)) fail(`retrieve_tools: no filesystem read tool in the top 3:\n${listing}`);
  console.log("ok retrieve_tools");

  const path = `${opts.fsDir}/ts-${opts.tag}.txt`;
  const content = `written by the TypeScript SDK over ${opts.tag}`;
  await call(client, "filesystem:write_file", { path, content });
  const read = await call(client, "filesystem:read_text_file", { path });
  if (upstreamText(read) !== content) fail(`read_text_file: got ${JSON.stringify(upstreamText(read))}, want ${JSON.stringify(content)}`);
  console.log("ok filesystem write/read");

  const echo = await call(client, "everything:echo", { message: `ts ${opts.tag}` });
  if (!text(echo).includes(`ts ${opts.tag}`)) fail(`echo: got ${JSON.stringify(text(echo))}`);
  console.log("ok echo");

  const entity = `ts-entity-${opts.tag}`;
  await call(client, "memory:create_entities", { entities: [{ name: entity, entityType: "test", observations: ["from smoke.mjs"] }] });
  const graph = await call(client, "memory:read_graph", {});
  if (!text(graph).includes(entity)) fail(`read_graph: ${entity} missing from ${text(graph)}`);
  console.log("ok memory");
} catch (err) {
  fail(err?.stack ?? String(err));
} finally {
  await client.close().catch(() => {});
}
