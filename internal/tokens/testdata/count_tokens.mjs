// Counts tokens with gpt-tokenizer, an independent JavaScript implementation
// of OpenAI's encodings, for the cross-check in crosscheck_test.go.
//
// Protocol, one JSON object per line:
//   in:  {"id": N, "text": "..."}
//   out: {"id": N, "cl100k_base": count, "o200k_base": count}
// Special-token spellings are counted as plain text, as package tokens does.
import { encode as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { encode as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { createInterface } from 'node:readline';

const plain = { allowedSpecial: new Set(), disallowedSpecial: new Set() };
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.trim() === '') continue;
  const { id, text } = JSON.parse(line);
  const res = { id, cl100k_base: cl100k(text, plain).length, o200k_base: o200k(text, plain).length };
  process.stdout.write(JSON.stringify(res) + '\n');
}
