// Shim between mcproxy's tscg encoding arm (internal/arms) and the TSCG
// compiler, @tscg/core.
//
// Protocol, one JSON object per line:
//   stdin:  {"tool_id": "server:tool", "tool": {"name", "description", "input_schema"}}
//   stdout: {"tool_id": "server:tool", "encoded": "<compiled text>"}
//       or  {"tool_id": "server:tool", "error": "<why it failed>"}
// Every input line gets exactly one output line, in input order. A line that
// is not valid JSON, or has no tool_id, is answered with tool_id null.
// Nothing but protocol lines goes to stdout.
//
// The compiler options are pinned here so the same input always compiles to
// the same text; change them only together with the golden expectations of
// whoever measures this arm.

import { createInterface } from 'node:readline';

const OPTIONS = Object.freeze({
  profile: 'balanced',
  model: 'claude-sonnet',
  preserveToolNames: true,
});

function write(record) {
  process.stdout.write(JSON.stringify(record) + '\n');
}

function message(err) {
  return String((err && err.message) || err);
}

async function loadCompiler() {
  const core = await import('@tscg/core');
  const compress = core.compress ?? core.default?.compress;
  if (typeof compress !== 'function') {
    throw new Error('@tscg/core does not export a compress function');
  }
  return compress;
}

async function main() {
  let compress;
  try {
    compress = await loadCompiler();
  } catch (err) {
    write({ tool_id: null, error: `loading @tscg/core: ${message(err)}` });
    process.exitCode = 2;
    return;
  }

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    let req;
    try {
      req = JSON.parse(line);
    } catch (err) {
      write({ tool_id: null, error: `input is not JSON: ${message(err)}` });
      continue;
    }
    const id = req && typeof req.tool_id === 'string' ? req.tool_id : null;
    if (id === null || !req.tool || typeof req.tool !== 'object') {
      write({ tool_id: id, error: 'each input line needs a string "tool_id" and an object "tool"' });
      continue;
    }
    try {
      const result = await compress([req.tool], OPTIONS);
      const encoded = typeof result === 'string' ? result : result?.compressed;
      if (typeof encoded !== 'string' || encoded === '') {
        throw new Error('@tscg/core returned no compiled text');
      }
      write({ tool_id: id, encoded });
    } catch (err) {
      write({ tool_id: id, error: message(err) });
    }
  }
}

await main();
