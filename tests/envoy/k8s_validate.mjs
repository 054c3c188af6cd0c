// Validates Kubernetes objects (a JSON array on stdin) against their schemas: core kinds with
// kubernetes-models, Istio, Prometheus Operator and Gateway API kinds with models generated from their CRDs.
// Run from the directory where those packages are installed (tests/deploy.py does). Prints one line
// per object; exit 1 if any object is invalid or of a kind no model covers.
const packages = ["kubernetes-models", "@kubernetes-models/istio", "@kubernetes-models/prometheus-operator", "@kubernetes-models/gateway-api"];

async function modelFor(apiVersion, kind) {
  for (const p of packages) {
    try {
      const m = await import(`${p}/${apiVersion}`);
      if (typeof m[kind] === "function") return m[kind];
    } catch (e) {
      if (e.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED" && e.code !== "ERR_MODULE_NOT_FOUND") throw e;
    }
  }
  return null;
}

const text = await new Promise((ok) => { let s = ""; process.stdin.on("data", (d) => (s += d)); process.stdin.on("end", () => ok(s)); });
let bad = 0;
for (const obj of JSON.parse(text)) {
  const name = `${obj.kind}/${obj.metadata?.name} (${obj.apiVersion})`;
  const Model = await modelFor(obj.apiVersion, obj.kind);
  if (!Model) { console.log(`FAIL ${name}: no schema for this kind`); bad++; continue; }
  try { new Model(obj).validate(); console.log(`ok   ${name}`); }
  catch (e) { console.log(`FAIL ${name}: ${String(e.message).slice(0, 400)}`); bad++; }
}
process.exit(bad ? 1 : 0);
