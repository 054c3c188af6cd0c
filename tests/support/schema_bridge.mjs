// `make bench-engine` helper: schema-bridge (npm @silupanda/schema-bridge) on OpenAI chat bodies with `tools`.
// Per catalog and target (openai, gemini): seconds for JSON.parse + convert of every tool's schema +
// JSON.stringify of the result (best of runs, at least 0.3 s of runs), one JSON line each.
// Usage: node tests/support/schema_bridge.mjs NODE_MODULES_DIR FILE...
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const [modules, ...files] = process.argv.slice(2);
const require = createRequire(join(modules, "noop.js"));
const { convert } = require("@silupanda/schema-bridge");

function once(raw, target) {
  const cat = JSON.parse(raw);
  const out = [];
  for (const t of cat.tools || []) {
    const f = t.function || {};
    let s;
    try {
      s = convert(f.parameters || {}, target).schema;
    } catch (e) {
      s = null; // it throws on some schemas; the time spent until then still counts
    }
    out.push({ type: "function", function: { ...f, parameters: s } });
  }
  return JSON.stringify({ ...cat, tools: out });
}

for (const f of files) {
  const raw = readFileSync(f, "utf8");
  const line = { file: f, bytes: Buffer.byteLength(raw) };
  for (const target of ["openai", "gemini"]) {
    let best = Infinity;
    const start = performance.now();
    for (let n = 0; n < 3 || performance.now() - start < 300; n++) {
      const t0 = performance.now();
      once(raw, target);
      best = Math.min(best, performance.now() - t0);
    }
    line[`${target}_seconds`] = best / 1000;
  }
  console.log(JSON.stringify(line));
}
