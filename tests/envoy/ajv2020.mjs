// A 2020-12-only validator (Ajv2020, as MCP clients built on the TypeScript SDK validate): reads a JSON
// array of {schema, data: [...]} on stdin, writes a JSON array of {compiled, error, valid: [...]}.
//   node ajv2020.mjs NODE_MODULES < cases.json
import { createRequire } from "module";
const require = createRequire(process.argv[2] + "/");
const Ajv2020 = require("ajv/dist/2020").default;
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(({ schema, data }) => {
    // strict off: unknown keywords are annotations in 2020-12, as the specification says
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    try {
      const v = ajv.compile(schema);
      return { compiled: true, valid: (data || []).map((d) => v(d)) };
    } catch (e) {
      return { compiled: false, error: String(e.message).slice(0, 200), valid: [] };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
