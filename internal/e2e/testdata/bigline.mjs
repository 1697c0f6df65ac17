// bigline.mjs is a minimal stdio MCP server, written by hand so that it can
// stream one enormous line: its tool "flood" answers with a single JSON-RPC
// line of opts.bytes bytes (written in pieces, never held whole), and
// "echo" answers normally. The Go end-to-end test runs it as an upstream;
// it is not part of mcproxy.
//
// Usage: node bigline.mjs BYTES
import { createInterface } from "node:readline";

const size = Number(process.argv[2]);
const out = process.stdout;

function send(msg) {
  out.write(JSON.stringify(msg) + "\n");
}

function write(chunk) {
  return new Promise((resolve) => {
    if (out.write(chunk)) resolve();
    else out.once("drain", resolve);
  });
}

async function flood(id) {
  await write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`);
  const piece = "x".repeat(1 << 20);
  for (let n = 0; n < size; n += piece.length) {
    await write(piece);
  }
  await write(`"}]}}\n`);
}

const tools = [
  { name: "flood", description: "Answer with one enormous line.", inputSchema: { type: "object", properties: {} } },
  { name: "echo", description: "Echo the text back.", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
];

for await (const line of createInterface({ input: process.stdin })) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    continue;
  }
  if (msg.id === undefined) continue;
  switch (msg.method) {
    case "initialize":
      send({ jsonrpc: "2.0", id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "bigline", version: "1" } } });
      break;
    case "tools/list":
      send({ jsonrpc: "2.0", id: msg.id, result: { tools } });
      break;
    case "ping":
      send({ jsonrpc: "2.0", id: msg.id, result: {} });
      break;
    case "tools/call":
      if (msg.params.name === "flood") {
        flood(msg.id).catch(() => process.exit(0)); // the reader went away
      } else {
        send({ jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "echo: " + (msg.params.arguments?.text ?? "") }] } });
      }
      break;
    default:
      send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } });
  }
}
