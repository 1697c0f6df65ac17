// oneshot.mjs is a one-shot stdio client, as the MCP Inspector's --cli mode
// is: it launches mcproxy, initializes, makes one prompts/get, one
// resources/read and one completion/complete at once, and a prompts/get of
// a prompt no server has (which must still be refused as not found), prints
// what it got and exits. The Go end-to-end test runs it right after a warm start; it is
// not part of mcproxy.
//
// Usage: node oneshot.mjs '{"command": "...", "args": [...], "prompt": "...", "uri": "...", "complete": "...", "missing": "..."}'
// It prints one line per check and exits non-zero on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const opts = JSON.parse(process.argv[2]);

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exit(1);
}

const client = new Client({ name: "mcproxy-oneshot", version: "0.0.0" });
await client.connect(new StdioClientTransport({ command: opts.command, args: opts.args, stderr: "inherit" }));
try {
  const [prompt, read, done, missing] = await Promise.allSettled([
    client.getPrompt({ name: opts.prompt }),
    client.readResource({ uri: opts.uri }),
    client.complete({ ref: { type: "ref/prompt", name: opts.complete }, argument: { name: "department", value: "E" } }),
    client.getPrompt({ name: opts.missing }),
  ]);
  if (prompt.status !== "fulfilled") fail(`prompts/get ${opts.prompt}: ${prompt.reason}`);
  if (!prompt.value.messages?.length) fail(`prompts/get ${opts.prompt}: no messages: ${JSON.stringify(prompt.value)}`);
  console.log(`ok prompts/get ${opts.prompt}`);
  if (read.status !== "fulfilled") fail(`resources/read ${opts.uri}: ${read.reason}`);
  if (read.value.contents?.[0]?.uri !== opts.uri) fail(`resources/read ${opts.uri}: got ${JSON.stringify(read.value).slice(0, 300)}`);
  console.log(`ok resources/read ${opts.uri}`);
  if (done.status !== "fulfilled") fail(`completion/complete ${opts.complete}: ${done.reason}`);
  if (!done.value.completion?.values?.length) fail(`completion/complete ${opts.complete}: no values: ${JSON.stringify(done.value)}`);
  console.log(`ok completion/complete ${opts.complete} -> ${done.value.completion.values.join(",")}`);
  if (missing.status !== "rejected" || !/not found/.test(String(missing.reason))) fail(`prompts/get ${opts.missing}: got ${missing.status} ${missing.reason ?? JSON.stringify(missing.value)}, want it refused as not found`);
  console.log(`ok prompts/get ${opts.missing} refused: ${missing.reason}`);
} finally {
  await client.close();
}
