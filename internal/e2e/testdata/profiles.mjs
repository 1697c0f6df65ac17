// profiles.mjs drives mcproxy's profiles (issue 31) with the official MCP
// TypeScript SDK client: over streamable HTTP and legacy SSE with client
// tokens and over stdio with serve --stdio --profile, each client must see exactly its
// profile's upstream tools, a call outside the profile must be refused as
// unknown, and a token for another profile must be refused. The Go
// end-to-end test runs it; it is not part of mcproxy.
//
// Usage: node profiles.mjs '{"base": "http://127.0.0.1:PORT", "echo": TOKEN, "mem": TOKEN,
//                             "binary": PATH, "config": PATH}'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const opts = JSON.parse(process.argv[2]);
const noa = new Set(["Compress", "read_archive"]);

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exit(1);
}

function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function overHTTP(profile, token) {
  const client = new Client({ name: `profiles-${profile}`, version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${opts.base}/mcp/p/${profile}`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  return client;
}

// overSSE connects over legacy SSE: the stream at /sse/p/<profile>, whose
// endpoint event names the profile's message endpoint; the token goes on
// the stream's GET and on every message's POST.
async function overSSE(profile, token) {
  const client = new Client({ name: `profiles-sse-${profile}`, version: "0.0.0" });
  await client.connect(new SSEClientTransport(new URL(`${opts.base}/sse/p/${profile}`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  return client;
}

async function overStdio(profile) {
  const client = new Client({ name: `profiles-stdio-${profile}`, version: "0.0.0" });
  await client.connect(new StdioClientTransport({
    command: opts.binary, args: ["serve", "--stdio", "--config", opts.config, "--profile", profile], stderr: "pipe",
  }));
  return client;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// upstreamTools polls tools/list until want shows (the upstreams connect in
// the background) and returns the upstream tools listed.
async function upstreamTools(client, want) {
  for (let i = 0; i < 150; i++) {
    const names = (await client.listTools()).tools.map((t) => t.name).filter((n) => !noa.has(n));
    if (names.includes(want)) return names.sort();
    await sleep(200);
  }
  fail(`tools/list never held ${want}`);
}

async function refusedOutside(client, label) {
  const r = await client.callTool({ name: "call_tool", arguments: { name: "everything:echo", arguments: { message: "x" } } });
  const t = text(r);
  if (!r.isError || t.includes("Echo: x")) fail(`${label}: a call outside the profile ran: ${t}`);
  if (!t.includes('Unknown tool "everything:echo"') || t.includes("profile")) fail(`${label}: the refusal is not a plain unknown tool: ${t}`);
  console.log(`ok ${label}: a call outside the profile is refused: ${t.split("\n")[0]}`);
}

for (const [label, connect] of [["http", overHTTP], ["sse", overSSE], ["stdio", (p) => overStdio(p)]]) {
  const echo = await connect("echo", opts.echo);
  const names = await upstreamTools(echo, "everything__echo");
  if (JSON.stringify(names) !== JSON.stringify(["everything__echo"])) fail(`${label} echo profile lists ${names}, want only everything__echo`);
  console.log(`ok ${label} echo profile lists exactly ${names}`);
  await echo.close();

  const mem = await connect("mem", opts.mem);
  const tools = (await mem.listTools()).tools.map((t) => t.name);
  if (!tools.includes("retrieve_tools") || tools.some((n) => n.startsWith("everything"))) fail(`${label} mem profile lists ${tools}`);
  let found = "";
  for (let i = 0; i < 150 && !found.includes("memory:create_entities"); i++) {
    found = text(await mem.callTool({ name: "retrieve_tools", arguments: { query: "create entities in the knowledge graph" } }));
    if (!found.includes("memory:create_entities")) await sleep(200);
  }
  if (!found.includes("memory:create_entities") || found.includes("everything:")) fail(`${label} mem retrieve_tools: ${found}`);
  console.log(`ok ${label} mem profile retrieves only memory's tools`);
  await refusedOutside(mem, `${label} mem`);
  await mem.close();
}

// A token for another profile is refused before any MCP message.
try {
  const c = await overHTTP("mem", opts.echo);
  await c.close();
  fail("the echo token connected to the mem profile");
} catch (e) {
  if (e.code !== 403 && !String(e).includes("forbidden: client token echo-bot is not for profile mem")) fail(`echo token on mem: ${e}, want a 403`);
  console.log("ok a token for another profile gets 403");
}

// The same over legacy SSE: the stream is refused before it opens.
try {
  const c = await overSSE("mem", opts.echo);
  await c.close();
  fail("the echo token connected to the mem profile over SSE");
} catch (e) {
  if (e.code !== 403 && !String(e).includes("403")) fail(`echo token on mem over SSE: ${e}, want a 403`);
  console.log("ok a token for another profile gets 403 over SSE");
}
