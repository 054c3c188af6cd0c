#!/usr/bin/env python3
"""deploy/ without a cluster: render every overlay, validate every object against its schema, turn the
EnvoyFilters into the Envoy config Istio would build and run it with the wasm, check plugin configs,
dashboard and alert metric names, and follow deploy/README.md's walkthrough as far as no cluster is
needed. Run with the venv's python (PyYAML): make test does. Prints 'N passed, M failed'."""
import copy, glob, json, os, re, shutil, subprocess, sys, tempfile, time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "envoy"))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import e2e  # noqa: E402  (Envoy runner, recording upstream, check())
from e2e import check, results  # noqa: E402
import npm_cache  # noqa: E402

DEPLOY = os.path.join(ROOT, "deploy")
TOOLFIT = os.path.join(ROOT, "target", "release", "toolfit")
NPM = npm_cache.NPM
NPM_PACKAGES = ["kubernetes-models@5.1.0", "@kubernetes-models/istio@3.0.1", "@kubernetes-models/prometheus-operator@6.0.0"]


def render(overlay):
    p = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, overlay)], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d], ""


def validator():
    npm_cache.ensure(NPM_PACKAGES)
    shutil.copy(os.path.join(ROOT, "tests", "envoy", "k8s_validate.mjs"), NPM)


def validate(objs):
    p = subprocess.run(["node", "k8s_validate.mjs"], cwd=NPM, input=json.dumps(objs), capture_output=True, text=True)
    return p.returncode == 0, p.stdout + p.stderr


def deep_merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            deep_merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


def plugin_configs(objs):
    """(where, JSON text) of every toolfit plugin configuration in the objects."""
    out = []
    for o in objs:
        if o["kind"] == "EnvoyFilter":
            for i, p in enumerate(o["spec"]["configPatches"]):
                cfg = p.get("patch", {}).get("value", {}).get("typed_config", {}).get("config", {})
                if cfg.get("name") == "toolfit":
                    out.append((f"EnvoyFilter/{o['metadata']['name']} patch {i}", cfg["configuration"]["value"]))
        if o["kind"] == "WasmPlugin":
            out.append((f"WasmPlugin/{o['metadata']['name']}", json.dumps(o["spec"].get("pluginConfig", {}))))
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "toolfit-extproc-config":
            # toolfit-extproc reads the same JSON (and refuses what check-config refuses)
            out.append((f"ConfigMap/{o['metadata']['name']}", o["data"]["config.json"]))
    return out


def bootstrap_override(objs):
    cm = next(o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "toolfit-bootstrap")
    return json.loads(cm["data"]["custom_bootstrap.json"])


def assemble_and_validate(name, ef, objs, context, ports, routes, how):
    """The EnvoyFilter `ef` assembled as Istio would place it, checked with `envoy --mode validate`."""
    cfg, applied = assemble(ef, objs, context, ports, routes)
    check(f"{name} EnvoyFilter: every patch applies{how}", applied == len(ef["spec"]["configPatches"]))
    path = os.path.join(tempfile.mkdtemp(), f"{name}.json")
    json.dump(cfg, open(path, "w"))
    p = subprocess.run([e2e.ENVOY, "--mode", "validate", "-c", path], capture_output=True, text=True)
    check(f"{name} EnvoyFilter in an Envoy bootstrap: envoy --mode validate", p.returncode == 0, (p.stdout + p.stderr)[-800:])
    return cfg


def assemble(ef, objs, context, ports, routes):
    """The Envoy config Istio builds for a workload the EnvoyFilter selects, reduced to what the patches
    touch: one HTTP listener whose HCM ends with the router, `routes` in its route table, the patches
    applied in order as Istio applies them, and the bootstrap override merged in. The wasm file the
    ConfigMap would mount is the built dist/toolfit.wasm."""
    listener_port, admin_port, upstream_port = ports
    hcm = {"name": "envoy.filters.network.http_connection_manager", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "inbound_0.0.0.0_8080" if context == "SIDECAR_INBOUND" else "outbound_0.0.0.0_8080",
        "route_config": {"name": "inbound|8080||" if context == "SIDECAR_INBOUND" else "http.8080", "virtual_hosts": routes},
        "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}
    listener = {"name": "virtualInbound" if context == "SIDECAR_INBOUND" else "0.0.0.0_8080",
                "address": {"socket_address": {"address": "127.0.0.1", "port_value": listener_port}}, "filter_chains": [{"filters": [hcm]}]}
    filters = hcm["typed_config"]["http_filters"]
    applied = 0
    for p in ef["spec"]["configPatches"]:
        m = p.get("match", {})
        if m.get("context") not in (context, None, "ANY"):
            continue
        op, value = p["patch"]["operation"], copy.deepcopy(p["patch"].get("value", {}))
        if p["applyTo"] == "LISTENER" and op == "MERGE":
            deep_merge(listener, value)
        elif p["applyTo"] == "HTTP_FILTER" and op == "INSERT_BEFORE":
            target = m["listener"]["filterChain"]["filter"]["subFilter"]["name"]
            i = next(i for i, f in enumerate(filters) if f["name"] == target)
            filters.insert(i, value)
        elif p["applyTo"] == "HTTP_ROUTE" and op == "MERGE":
            name = m["routeConfiguration"]["vhost"]["route"]["name"]
            hit = [r for vh in routes for r in vh["routes"] if r.get("name") == name]
            for r in hit:
                deep_merge(r, value)
            if not hit:
                continue
        else:
            raise ValueError(f"patch not modelled: {p['applyTo']} {op}")
        applied += 1
    for f in filters:
        code = f.get("typed_config", {}).get("config", {}).get("vm_config", {}).get("code", {}).get("local")
        if code:
            code["filename"] = e2e.WASM
    cfg = {"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin_port}}},
           "stats_flush_interval": "1s",
           "static_resources": {"listeners": [listener], "clusters": [
               {"name": c, "type": "STATIC", "connect_timeout": "2s", "load_assignment": {"cluster_name": c, "endpoints": [{"lb_endpoints": [
                   {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": upstream_port}}}}]}]}}
               for c in sorted({r["route"]["cluster"] for vh in routes for r in vh["routes"]})]}}
    deep_merge(cfg, bootstrap_override(objs))
    return cfg, applied


class BootstrapEnvoy(e2e.Envoy):
    def __init__(self, cfg, port, admin):
        self.port, self.admin = port, admin
        self.dir = tempfile.mkdtemp(prefix="toolfit-deploy-")
        self.cfg = os.path.join(self.dir, "envoy.json")
        json.dump(cfg, open(self.cfg, "w"))
        self.log = open(os.path.join(self.dir, "envoy.log"), "w+")
        self.proc = subprocess.Popen([e2e.ENVOY, "-c", self.cfg, "--concurrency", "1", "--base-id", str(port), "--log-format", "[%l] %v"],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.ready = self.wait_ready()


def readme_request():
    text = open(os.path.join(DEPLOY, "README.md")).read()
    m = re.search(r"-d @- <<'EOF'\n(.*?)\n\s*EOF", text, re.S)
    return text, json.loads(m.group(1))


def main():
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    e2e.ENVOY = os.path.join(venv, "bin", "envoy")
    validator()
    overlays = sorted(os.path.basename(os.path.dirname(k)) for k in glob.glob(os.path.join(DEPLOY, "*", "kustomization.yaml"))
                      if "kind: Kustomization" in open(k).read())
    rendered = {}
    for o in overlays:
        objs, err = render(o)
        check(f"kubectl kustomize deploy/{o}", objs is not None, err[-500:])
        if objs is None:
            continue
        rendered[o] = objs
        ok, out = validate(objs)
        check(f"deploy/{o}: {len(objs)} objects valid against their schemas", ok, "\n".join(l for l in out.splitlines() if not l.startswith("ok")))
    # the validator is not a rubber stamp
    broken = copy.deepcopy(rendered["envoyfilter"])
    for o in broken:
        if o["kind"] == "EnvoyFilter":
            o["spec"]["configPatches"][0]["applyTo"] = "HTTP_FILTR"
        if o["kind"] == "Deployment":
            o["spec"]["replicas"] = "two"
    ok, out = validate(broken)
    check("the validator rejects a misspelt applyTo and a string replica count", not ok and out.count("FAIL") == 2, out[-600:])

    for o, objs in rendered.items():
        for where, cfg in plugin_configs(objs):
            p = subprocess.run([TOOLFIT, "check-config"], input=cfg, capture_output=True, text=True)
            check(f"deploy/{o} {where}: plugin configuration accepted by the filter's validation", p.returncode == 0, p.stderr)
        wasm_files = [o2 for o2 in objs if o2["kind"] in ("Deployment",) and "userVolume" in json.dumps(o2)]
        for d in wasm_files:
            ann = d["spec"]["template"]["metadata"]["annotations"]
            vols, mounts = json.loads(ann["sidecar.istio.io/userVolume"]), json.loads(ann["sidecar.istio.io/userVolumeMount"])
            path = mounts[0]["mountPath"] + "/toolfit.wasm"
            refs = [x for x in objs if x["kind"] in ("EnvoyFilter", "WasmPlugin") and path in json.dumps(x)]
            check(f"deploy/{o}: the wasm path {path} is the one the ConfigMap volume mounts", vols[0]["configMap"]["name"] == "toolfit-wasm" and refs)

    # EnvoyFilters as Envoy config, validated and run
    upstream_port = e2e.free_port()
    _, rec = e2e.echo_upstream.serve(upstream_port)
    text, request = readme_request()
    body = json.dumps(request).encode()
    sidecar = next(x for x in rendered["envoyfilter"] if x["kind"] == "EnvoyFilter")
    routes = [{"name": "inbound|http|8080", "domains": ["*"], "routes": [{"name": "default", "match": {"prefix": "/"}, "route": {"cluster": "inbound|8080||", "timeout": "0s"}}]}]
    ports = (e2e.free_port(), e2e.free_port(), upstream_port)
    cfg = assemble_and_validate("sidecar", sidecar, rendered["envoyfilter"], "SIDECAR_INBOUND", ports, routes, "")
    e = BootstrapEnvoy(cfg, ports[0], ports[1])
    try:
        check("sidecar EnvoyFilter: Envoy runs it with dist/toolfit.wasm", e.ready, e.logs()[-1500:])
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        got = e2e.last(rec)
        want = e2e.cli(body)
        check("deploy/README.md's request through the sidecar config: schema rewritten, exact Content-Length", status == 200 and got.get("body") == want != body
              and got["headers"].get("content-length") == str(len(want)), f"{status} {got.get('framing')}")
        time.sleep(1.2)
        prom = e.prom()
        shown = re.findall(r"^\s*(toolfit_\w+\{route=\"default\",profile=\"llama-cpp\"\} \d+)$", text, re.M)
        check("the counters deploy/README.md shows are what the sidecar exports", shown and all(s in prom for s in shown), [s for s in shown if s not in prom])
    finally:
        e.stop()

    gw = next(x for x in rendered["gateway"] if x["kind"] == "EnvoyFilter")
    vs = [x for x in rendered["gateway"] if x["kind"] == "VirtualService"]
    routes = [{"name": f"{v['spec']['hosts'][0]}:8080", "domains": [v["spec"]["hosts"][0]], "routes": [
        {"name": h["name"], "match": {"prefix": "/"}, "route": {"cluster": f"outbound|{h['route'][0]['destination']['port']['number']}||{h['route'][0]['destination']['host']}.llm.svc.cluster.local", "timeout": "0s"}}
        for h in v["spec"]["http"]]} for v in vs]
    ports = (e2e.free_port(), e2e.free_port(), upstream_port)
    cfg = assemble_and_validate("gateway", gw, rendered["gateway"], "GATEWAY", ports, routes, " (route metadata by VirtualService route name)")
    e = BootstrapEnvoy(cfg, ports[0], ports[1])
    try:
        check("gateway EnvoyFilter: Envoy runs it", e.ready, e.logs()[-1500:])
        e.request("POST", "/v1/chat/completions", body, {"host": "llama.llm.example.com"})
        llama = e2e.last(rec).get("body")
        e.request("POST", "/v1/chat/completions", body, {"host": "vllm.llm.example.com"})
        vllm = e2e.last(rec).get("body")
        check("gateway: the llama route rewrites for llama.cpp, the vllm route's metadata picks the mcp profile", llama == e2e.cli(body) and vllm == body)
        time.sleep(1.2)
        prom = e.prom()
        check("gateway: counters labelled by VirtualService route and profile", e2e.metric(prom, "toolfit_requests_rewritten", "llama") == 1
              and e2e.metric(prom, "toolfit_requests_unchanged", "vllm", "mcp") == 1)
    finally:
        e.stop()

    # dashboard and alerts: only metric names a live Envoy with toolfit exported (tests/envoy/e2e.py saved them)
    seen_file = os.path.join(ROOT, "target", "e2e-metric-names.txt")
    seen = set(open(seen_file).read().split()) if os.path.exists(seen_file) else set()
    check("metric names from the e2e run are available", len(seen) > 50, "run tests/envoy/e2e.py first")
    kinds = {l.split("`")[1] for l in subprocess.run([TOOLFIT, "kinds"], capture_output=True, text=True).stdout.splitlines()[2:]}
    dash = open(os.path.join(DEPLOY, "monitoring", "toolfit-dashboard.json")).read()
    exprs = [t["expr"] for p in json.loads(dash)["panels"] for t in p["targets"]]
    rules = [r["expr"] for o in rendered["envoyfilter"] + rendered["gateway"] if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"] for r in g["rules"]]
    rules += [r["expr"] for g in yaml.safe_load(open(os.path.join(ROOT, "envoy", "alerts.yaml")))["groups"] for r in g["rules"]]
    for label, items in (("dashboard", exprs), ("alerts", rules)):
        names = {n for x in items for n in re.findall(r"\b((?:toolfit|envoy)_[a-z0-9_]+)\b(?!\s*[=~!])", x)}  # not label names
        # a regex over kinds (`toolfit_(refs_inlined|...)`) is checked against the engine's kinds
        alts = {a for x in items for grp in re.findall(r"toolfit_\(([a-z0-9_|]+)\)", x) for a in grp.split("|")}
        unknown = sorted(n for n in names if n not in seen) + sorted(a for a in alts if a not in kinds)
        check(f"{label}: every metric it uses was exported by the filter in Envoy ({len(names)} names, {len(alts)} kinds)", names and not unknown, unknown)
    # and the per-kind panel shows every kind (a kind added to the engine needs `make dashboard`)
    shown = {a for x in exprs for grp in re.findall(r"toolfit_\(([a-z0-9_|]+)\)", x) for a in grp.split("|")}
    check(f"dashboard: the per-kind panel covers all {len(kinds)} kinds", kinds and kinds <= shown, f"missing {sorted(kinds - shown)}: run make dashboard")

    # deploy/README.md, step by step
    check("walkthrough step 1: make wasm gives dist/toolfit.wasm under 1 MiB", "make wasm" in text and os.path.getsize(e2e.WASM) < 1 << 20)
    for cmd in re.findall(r"^\s*(kubectl -n llm create configmap .*)$", text, re.M):
        p = subprocess.run(cmd.split() + ["--dry-run=client", "-o", "json"], cwd=ROOT, capture_output=True, text=True)
        cm = json.loads(p.stdout) if p.returncode == 0 else {}
        size = len(json.dumps(cm))
        check(f"walkthrough step 2: `{cmd}` (dry run) makes a ConfigMap of {size} bytes, under 1 MiB", cm.get("binaryData", {}).get("toolfit.wasm") and size < 1 << 20, p.stderr)
    applied = re.findall(r"kubectl apply -k deploy/(\w+)", text)
    check("walkthrough step 3: every overlay it applies renders and validates", applied and all(a in rendered for a in applied), applied)
    docker = open(os.path.join(DEPLOY, "Dockerfile")).read()
    check("Dockerfile packages dist/toolfit.wasm as plugin.wasm (Istio's compat layout)", "COPY dist/toolfit.wasm ./plugin.wasm" in docker and "FROM scratch" in docker)


if __name__ == "__main__":
    main()
    passed = sum(results)
    print(f"deploy: {passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)
