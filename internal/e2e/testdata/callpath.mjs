// callpath.mjs times tools/call from the official MCP TypeScript SDK
// client over stdio, sent straight to a server and through mcproxy's
// call_tool, alternating call by call in one run (issue 28). The Go
// benchmark BenchmarkTypeScriptCallPath runs it; it is not part of
// mcproxy.
//
// Usage: node callpath.mjs '<json>' where json is
//   {"mode": "echo",  "n": N, "server": {command, args}, "proxy": {command, args}}
//   {"mode": "write", "n": N, "size": BYTES, "dir": "...", "server": {...}, "proxy": {...}}
//   {"mode": "rss",   "n": N, "size": BYTES, "dir": "...", "proxy": {...}}
// echo and write print {"straight_ns": mean, "proxied_ns": mean} (after one
// warm-up call of each); rss prints the proxy's VmRSS in kB at rest (after
// connecting and one small call) and after n write_file calls of size
// bytes: {"rest_kb": ..., "after_kb": ...}. It exits non-zero on a failure.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const opts = JSON.parse(process.argv[2]);

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exit(1);
}

function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// connect starts spec's process over stdio and initializes a client on it.
// Its stderr is kept (the last 64 KiB) for a failure's message.
async function connect(name, spec) {
  const transport = new StdioClientTransport({ command: spec.command, args: spec.args ?? [], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-65536);
  });
  const client = new Client({ name: `callpath-${name}`, version: "0.0.0" });
  try {
    await client.connect(transport);
  } catch (err) {
    fail(`connecting to ${name}: ${err}\n${stderr}`);
  }
  return { client, transport, stderr: () => stderr };
}

async function call(peer, name, args) {
  let result;
  try {
    result = await peer.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  } catch (err) {
    fail(`${name}: ${err}\n${peer.stderr()}`);
  }
  if (result.isError) fail(`${name} returned a tool error: ${text(result).slice(0, 2000)}`);
  return result;
}

// timed is one call's wall time in nanoseconds.
async function timed(peer, name, args) {
  const start = process.hrtime.bigint();
  await call(peer, name, args);
  return Number(process.hrtime.bigint() - start);
}

// alternate calls a and b in turn n times after one warm-up call of each
// and prints their mean times.
async function alternate(n, a, b) {
  await a(-1);
  await b(-1);
  let ta = 0, tb = 0;
  for (let i = 0; i < n; i++) {
    ta += await a(i);
    tb += await b(i);
  }
  return { straight_ns: ta / n, proxied_ns: tb / n };
}

function residentKB(pid) {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) fail(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]);
}

function content(size) {
  const line = "line of a file written through write_file by callpath.mjs, 0123456789.\n";
  return line.repeat(Math.ceil(size / line.length)).slice(0, size);
}

const peers = [];
try {
  let out;
  switch (opts.mode) {
    case "echo": {
      const straight = await connect("straight", opts.server);
      const proxied = await connect("mcproxy", opts.proxy);
      peers.push(straight, proxied);
      const message = "benchmark payload";
      out = await alternate(
        opts.n,
        () => timed(straight, "echo", { message }),
        () => timed(proxied, "call_tool", { name: "everything:echo", arguments: { message } }),
      );
      break;
    }
    case "write": {
      const straight = await connect("straight", opts.server);
      const proxied = await connect("mcproxy", opts.proxy);
      peers.push(straight, proxied);
      const data = content(opts.size);
      const path = (who, i) => `${opts.dir}/${who}${((i % 4) + 4) % 4}.txt`;
      out = await alternate(
        opts.n,
        (i) => timed(straight, "write_file", { path: path("s", i), content: data }),
        (i) => timed(proxied, "call_tool", { name: "filesystem:write_file", arguments: { path: path("p", i), content: data } }),
      );
      break;
    }
    case "rss": {
      const proxied = await connect("mcproxy", opts.proxy);
      peers.push(proxied);
      const pid = proxied.transport.pid;
      await call(proxied, "call_tool", { name: "filesystem:list_allowed_directories", arguments: {} });
      const rest = residentKB(pid);
      const data = content(opts.size);
      for (let i = 0; i < opts.n; i++) {
        await call(proxied, "call_tool", { name: "filesystem:write_file", arguments: { path: `${opts.dir}/rss${i}.txt`, content: data } });
      }
      out = { rest_kb: rest, after_kb: residentKB(pid) };
      break;
    }
    default:
      fail(`unknown mode ${opts.mode}`);
  }
  console.log(JSON.stringify(out));
} finally {
  for (const p of peers) await p.client.close();
}
