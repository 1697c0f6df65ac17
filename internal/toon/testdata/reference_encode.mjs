// Encodes JSON values with the reference TOON encoder (@toon-format/toon) for
// the cross-check test in crosscheck_test.go.
//
// Protocol, one JSON object per line:
//   in:  {"id": N, "json": "<JSON text>", "options": {indent?, delimiter?, keyFolding?, flattenDepth?}}
//   out: {"id": N, "toon": "<TOON text>"}  or  {"id": N, "error": "<message>"}
// The package resolves from the repository's node_modules (npm ci).
import { encode } from '@toon-format/toon';
import { createInterface } from 'node:readline';

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.trim() === '') continue;
  const req = JSON.parse(line);
  let res;
  try {
    res = { id: req.id, toon: encode(JSON.parse(req.json), req.options ?? {}) };
  } catch (err) {
    res = { id: req.id, error: String(err) };
  }
  process.stdout.write(JSON.stringify(res) + '\n');
}
