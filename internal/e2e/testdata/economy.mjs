// economy.mjs is the model's side of issue 17's end-to-end check: it drives
// mcproxy over stdio with the official MCP TypeScript SDK client and prints,
// as one JSON object, what a model would read of the session: the tools as
// tools/list returns them (name, description, inputSchema), the initialize
// instructions, the ref tag of the first call and the first two nudges. The
// Go test counts their tokens; this script only collects them.
//
// Usage: node economy.mjs < options.json, where the JSON is
//   {"command": "...", "args": [...], "fsDir": "...", "maxCalls": 60}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const opts = JSON.parse(readFileSync(0, "utf8"));
const refTag = /^\[m\d{5} · [0-9.,]+K? tok\]$/;

// A file of about n words, different for each i.
function bulky(i, n) {
  const vocab = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima retry timeout cache index".split(" ");
  const words = [];
  for (let k = 0; k < n; k++) words.push(vocab[(i * 7 + k * 13 + ((k * k) % 11)) % vocab.length]);
  return words.join(" ");
}

const transport = new StdioClientTransport({ command: opts.command, args: opts.args, stderr: "inherit" });
const client = new Client({ name: "mcproxy-economy", version: "0.0.0" });
const out = { tools: [], instructions: "", refTag: "", nudges: [], calls: 0 };
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  out.tools = tools.map((t) => ({ name: t.name, description: t.description ?? "", inputSchema: t.inputSchema }));
  out.instructions = client.getInstructions() ?? "";
  for (let i = 0; i < opts.maxCalls && out.nudges.length < 2; i++) {
    const path = join(opts.fsDir, `data-${String(i).padStart(3, "0")}.txt`);
    writeFileSync(path, bulky(i, 1100));
    const res = await client.callTool({ name: "call_tool", arguments: { name: "filesystem:read_text_file", arguments: { path } } });
    out.calls = i + 1;
    if (res.isError) throw new Error(`call ${i + 1}: ${JSON.stringify(res.content)}`);
    const texts = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
    const tag = texts.find((t) => refTag.test(t));
    if (!tag) throw new Error(`call ${i + 1}: no ref tag in ${JSON.stringify(texts)}`);
    if (!out.refTag) out.refTag = tag;
    const nudge = texts.find((t) => t.startsWith("[noa]"));
    if (nudge) out.nudges.push({ call: i + 1, text: nudge });
  }
  console.log(JSON.stringify(out));
} catch (err) {
  console.error(`FAIL ${err?.stack ?? err}`);
  process.exitCode = 1;
} finally {
  await client.close();
}
