// The official TypeScript SDK client against mcproxy (streamable HTTP),
// with server-everything behind it: a long-running tool's progress, a
// sampling request and an elicitation, each answered by this client.
// Reads {"url": ...} on stdin; prints what it saw as JSON on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

let stdin = "";
for await (const chunk of process.stdin) stdin += chunk;
const { url } = JSON.parse(stdin);

const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const out = { errors: [] };

const client = new Client({ name: "ts-relay-e2e", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: { form: {} } } });
client.onerror = (e) => out.errors.push(String(e));
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  out.samplingPrompt = req.params.messages.map((m) => m.content.text).join(" ");
  return { role: "assistant", content: { type: "text", text: "the TS client's model answers" }, model: "ts-model" };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.elicitationMessage = req.params.message;
  return { action: "accept", content: { name: "Ada Lovelace", check: true } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
// In direct mode tools/list waits for the upstreams' first connection.
await client.listTools();

// onprogress is keyed on the request's own progress token: it fires only
// for notifications that carry it back.
out.progress = [];
const long = await client.callTool(
  { name: "everything__trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
  undefined,
  { onprogress: (p) => out.progress.push(p) },
);
out.longText = text(long);

const sampled = await client.callTool({ name: "everything__trigger-sampling-request", arguments: { prompt: "say hi", maxTokens: 20 } });
out.samplingText = text(sampled);

const elicited = await client.callTool({ name: "everything__trigger-elicitation-request", arguments: {} });
out.elicitationText = text(elicited);
client.onerror = () => {}; // closing aborts the GET stream, which the SDK reports
await client.close();

// A client that declared no sampling: the upstream is told why.
const bare = new Client({ name: "ts-relay-e2e-bare", version: "1.0.0" }, { capabilities: {} });
await bare.connect(new StreamableHTTPClientTransport(new URL(url)));
const refused = await bare.callTool({ name: "everything__trigger-sampling-request", arguments: { prompt: "say hi", maxTokens: 20 } });
out.bareSampling = { isError: !!refused.isError, text: text(refused) };
await bare.close();

process.stdout.write(JSON.stringify(out));
