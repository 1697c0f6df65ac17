// catalog.mjs drives mcproxy with the official MCP TypeScript SDK client to
// check that what server-everything offers besides tools reaches a client
// through mcproxy (issue #15): prompts listed and fetched, argument
// completion, resources and templates listed and read (including the
// resource_links one of its tools returns), and a subscription's update
// delivered to the subscribing session only. The Go end-to-end test runs it;
// it is not part of mcproxy.
//
// Usage: node catalog.mjs '{"url": "http://127.0.0.1:PORT/mcp", "server": "everything"}'
// It prints one line per check and exits non-zero on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const opts = JSON.parse(process.argv[2]);
const server = opts.server;
const prefix = `${server}__`;

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exit(1);
}

function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function connect(name) {
  const client = new Client({ name, version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)));
  return client;
}

async function call(client, tool, args) {
  const result = await client.callTool({ name: "call_tool", arguments: { name: `${server}:${tool}`, arguments: args } });
  if (result.isError) fail(`call_tool ${tool} returned a tool error: ${text(result)}`);
  return result;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const a = await connect("mcproxy-catalog-a");
const b = await connect("mcproxy-catalog-b");
try {
  const caps = a.getServerCapabilities() ?? {};
  if (!caps.prompts || !caps.resources?.subscribe || !caps.completions) fail(`initialize capabilities: got ${JSON.stringify(caps)}, want prompts, resources with subscribe, completions`);
  console.log(`ok capabilities ${JSON.stringify(caps)}`);
  // The upstream's own instructions follow mcproxy's, under its name.
  const instructions = a.getInstructions() ?? "";
  if (!instructions.startsWith("mcproxy") || !instructions.includes(`\n## ${server}\n`)) fail(`instructions: got ${JSON.stringify(instructions.slice(0, 400))}, want mcproxy's, then the upstream's under "## ${server}"`);
  console.log(`ok instructions carry ${server}'s under its name`);

  // Prompts: listed under the server's prefix, fetched with arguments.
  const { prompts } = await a.listPrompts();
  const names = prompts.map((p) => p.name).sort();
  for (const want of ["simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"]) {
    if (!names.includes(prefix + want)) fail(`prompts/list: got ${names}, want ${prefix + want}`);
  }
  console.log(`ok prompts/list ${names.join(",")}`);
  const simple = await a.getPrompt({ name: prefix + "simple-prompt" });
  if (!simple.messages?.length) fail(`prompts/get simple-prompt: no messages: ${JSON.stringify(simple)}`);
  const withArgs = await a.getPrompt({ name: prefix + "args-prompt", arguments: { city: "Lisbon" } });
  if (!JSON.stringify(withArgs.messages).includes("Lisbon")) fail(`prompts/get args-prompt: the argument did not reach the server: ${JSON.stringify(withArgs)}`);
  console.log(`ok prompts/get simple-prompt, args-prompt(city=Lisbon)`);

  // Completion of a prompt argument, routed under the prompt's own name.
  const done = await a.complete({ ref: { type: "ref/prompt", name: prefix + "completable-prompt" }, argument: { name: "department", value: "E" } });
  if (!done.completion?.values?.length) fail(`completion/complete: got ${JSON.stringify(done)}`);
  console.log(`ok completion/complete department=E -> ${done.completion.values.join(",")}`);

  // Resources and templates, URIs as the server sends them.
  const { resources } = await a.listResources();
  const doc = resources.find((r) => r.uri.startsWith("demo://resource/static/document/"));
  if (!doc) fail(`resources/list: no demo://resource/static/document/ in ${resources.map((r) => r.uri)}`);
  const read = await a.readResource({ uri: doc.uri });
  if (read.contents?.[0]?.uri !== doc.uri) fail(`resources/read ${doc.uri}: got ${JSON.stringify(read).slice(0, 300)}`);
  console.log(`ok resources/list (${resources.length}) and read ${doc.uri}`);
  const { resourceTemplates } = await a.listResourceTemplates();
  const tmpls = resourceTemplates.map((t) => t.uriTemplate);
  if (!tmpls.includes("demo://resource/dynamic/text/{resourceId}")) fail(`resources/templates/list: got ${tmpls}`);
  if (tmpls.some((t) => !t.startsWith("demo://"))) fail(`resources/templates/list shows a template no server offers: ${tmpls}`);
  console.log(`ok resources/templates/list ${tmpls.join(",")}`);
  const tdone = await a.complete({ ref: { type: "ref/resource", uri: "demo://resource/dynamic/text/{resourceId}" }, argument: { name: "resourceId", value: "7" } });
  if (tdone.completion?.values?.[0] !== "7") fail(`completion/complete of a template argument: got ${JSON.stringify(tdone)}, want ["7"]`);
  console.log(`ok completion/complete resourceId=7 -> ${tdone.completion.values.join(",")}`);

  // resource_links returned by a tool are readable through mcproxy.
  const links = (await call(a, "get-resource-links", { count: 2 })).content.filter((c) => c.type === "resource_link");
  if (links.length !== 2) fail(`get-resource-links: got ${links.length} resource_link blocks, want 2`);
  for (const link of links) {
    const got = await a.readResource({ uri: link.uri });
    if (got.contents?.[0]?.uri !== link.uri) fail(`resources/read ${link.uri} (a resource_link): got ${JSON.stringify(got).slice(0, 300)}`);
  }
  console.log(`ok resource_links read: ${links.map((l) => l.uri).join(", ")}`);

  // A subscription's updates reach the session that subscribed, not the other.
  const updates = { a: [], b: [] };
  a.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.a.push(n.params.uri));
  b.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.b.push(n.params.uri));
  await a.subscribeResource({ uri: doc.uri });
  // server-everything sends updates for its subscriptions every 5s once this
  // tool is called; b calls it, so the caller is not what decides.
  await call(b, "toggle-subscriber-updates", {});
  for (let i = 0; i < 150 && !updates.a.includes(doc.uri); i++) await sleep(100);
  if (!updates.a.includes(doc.uri)) fail(`no notifications/resources/updated for ${doc.uri} reached the subscribed session within 15s`);
  // One more period, for an update to b to have shown up if it were sent.
  await sleep(6000);
  if (updates.b.length) fail(`the session that did not subscribe got updates: ${updates.b}`);
  console.log(`ok subscription: session a got ${updates.a.length} update(s) for ${doc.uri}, session b none`);
  await a.unsubscribeResource({ uri: doc.uri });
  await call(b, "toggle-subscriber-updates", {});
  console.log("ok unsubscribe");
} catch (err) {
  fail(err?.stack ?? String(err));
} finally {
  await a.close();
  await b.close();
}
