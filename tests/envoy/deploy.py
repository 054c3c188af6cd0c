#!/usr/bin/env python3
"""deploy/ without a cluster: render every overlay, validate every object against its schema, turn the
EnvoyFilters into the Envoy config Istio would build and run it with the wasm, check plugin configs,
dashboard and alert metric names, and follow deploy/README.md's walkthrough as far as no cluster is
needed. Run with the venv's python (PyYAML): make test does. Prints 'N passed, M failed'."""
import copy, glob, gzip, json, os, re, shutil, subprocess, sys, tempfile, time

import yaml

from harness import npm_cache, paths, runner
from harness.paths import ROOT
from harness.verdict import check, close, results

DEPLOY = os.path.join(ROOT, "deploy")
TOOLFIT = os.path.join(ROOT, "target", "release", "toolfit")
# dist/toolfit.wasm's size budget (bytes; see the check in the walkthrough)
WASM_BUDGET = 640_000
NPM = npm_cache.NPM
NPM_PACKAGES = ["kubernetes-models@5.1.0", "@kubernetes-models/istio@3.0.1", "@kubernetes-models/prometheus-operator@6.0.0",
                "@kubernetes-models/gateway-api@2.0.0"]
# custom resources whose projects publish no Go module (agentgateway, Envoy AI Gateway): closed structural
# schemas read from their API types, checked here with jsonschema. Every other custom resource is judged
# by its published CRD (tests/harness/crds.py: structural schema and CEL rules)
SUBSETS = json.load(open(os.path.join(ROOT, "tests", "deploy", "crd_subsets.json")))["kinds"]
PUBLISHED = {}
CEL_COUNTS = [0, 0]  # CEL rules run, not run (a Kubernetes CEL library or oldSelf)


# kinds without a namespace (the rest of what deploy/ renders is namespaced)
CLUSTER_SCOPED = {"Namespace", "GatewayClass", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}


def unplaced(objs):
    """(kind, name) of the namespaced objects that name no namespace."""
    return [(o["kind"], o["metadata"]["name"]) for o in objs if o["kind"] not in CLUSTER_SCOPED and not o["metadata"].get("namespace")]


def render(overlay):
    p = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, overlay)], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d], ""


def validator():
    from harness import crds
    PUBLISHED.update(crds.schemas())
    npm_cache.ensure(NPM_PACKAGES)
    shutil.copy(os.path.join(ROOT, "tests", "envoy", "k8s_validate.mjs"), NPM)


def subset_schema(o):
    return next((k["schema"] for k in SUBSETS if k["apiVersion"] == o.get("apiVersion") and k["kind"] == o.get("kind")), None)


def published(o):
    return PUBLISHED.get((o.get("apiVersion"), o.get("kind")))


def validate(objs):
    """Every object against its schema: its published CRD (structural schema and CEL) where its project
    publishes one, SUBSETS for the two that do not, the npm models for Kubernetes' own kinds and the
    Prometheus Operator's."""
    import jsonschema
    from harness import crds
    lines, ok = [], True
    for o in objs:
        crd = published(o)
        if crd is not None:
            found, run, skipped = crds.problems(crd[0], o)
            CEL_COUNTS[0] += run
            CEL_COUNTS[1] += skipped
            name = f"{o['kind']}/{o.get('metadata', {}).get('name')} ({o['apiVersion']}, {crd[1]})"
            lines.append(f"ok   {name}" if not found else f"FAIL {name}: " + "; ".join(found[:3]))
            ok = ok and not found
            continue
        schema = subset_schema(o)
        if schema is None:
            continue
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(o), key=lambda e: list(e.path))
        name = f"{o['kind']}/{o.get('metadata', {}).get('name')} ({o['apiVersion']})"
        lines.append(f"ok   {name}" if not errors else f"FAIL {name}: " + "; ".join(f"{'/'.join(map(str, e.path))}: {e.message}"[:200] for e in errors[:3]))
        ok = ok and not errors
    rest = [o for o in objs if subset_schema(o) is None and published(o) is None]
    p = subprocess.run(["node", "k8s_validate.mjs"], cwd=NPM, input=json.dumps(rest), capture_output=True, text=True)
    return ok and p.returncode == 0, "\n".join(lines) + "\n" + p.stdout + p.stderr


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
        if o["kind"] == "TrafficExtension" and "wasm" in o["spec"]:
            out.append((f"TrafficExtension/{o['metadata']['name']}", json.dumps(o["spec"]["wasm"].get("pluginConfig", {}))))
        if o["kind"] == "EnvoyExtensionPolicy":
            for i, w in enumerate(o["spec"].get("wasm", [])):
                out.append((f"EnvoyExtensionPolicy/{o['metadata']['name']} wasm {i}", json.dumps(w.get("config", {}))))
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
    p = subprocess.run([runner.ENVOY, "--mode", "validate", "-c", path], capture_output=True, text=True)
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
            code["filename"] = runner.WASM
    cfg = {"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin_port}}},
           "stats_flush_interval": "1s",
           "static_resources": {"listeners": [listener], "clusters": [
               {"name": c, "type": "STATIC", "connect_timeout": "2s", "load_assignment": {"cluster_name": c, "endpoints": [{"lb_endpoints": [
                   {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": upstream_port}}}}]}]}}
               for c in sorted({r["route"]["cluster"] for vh in routes for r in vh["routes"]})]}}
    deep_merge(cfg, bootstrap_override(objs))
    return cfg, applied


class BootstrapEnvoy(runner.Envoy):
    def __init__(self, cfg, port, admin):
        self.port, self.admin = port, admin
        self.dir = tempfile.mkdtemp(prefix="toolfit-deploy-")
        self.cfg = os.path.join(self.dir, "envoy.json")
        json.dump(cfg, open(self.cfg, "w"))
        self.log = open(os.path.join(self.dir, "envoy.log"), "w+")
        self.proc = subprocess.Popen([runner.ENVOY, "-c", self.cfg, "--concurrency", "1", "--base-id", str(port), "--log-format", "[%l] %v"],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.ready = self.wait_ready()


def mcp_overlay(name, objs, context, routes, host, route):
    """An MCP overlay's EnvoyFilter assembled as Istio places it (deploy/mcp: the MCP server pod's inbound
    listener; deploy/mcp-ingress: the ingress gateway's listener and its VirtualService route), run in
    Envoy before an MCP server (tests/envoy/mcp_catalog_server.py): a client naming itself Codex gets the
    list rewritten for OpenAI and a tagged session id; the server never sees the tag."""
    ef = next(x for x in objs if x["kind"] == "EnvoyFilter")
    catalog = MCP_CATALOG
    server, server_port, log = mcp_server(catalog)
    ports = (runner.free_port(), runner.free_port(), server_port)
    cfg = assemble_and_validate(name, ef, objs, context, ports, routes, "")
    e = BootstrapEnvoy(cfg, ports[0], ports[1])
    try:
        time.sleep(0.5)
        check(f"{name} EnvoyFilter: Envoy runs it with dist/toolfit.wasm", e.ready, e.logs()[-1500:])
        mcp_session(name, e, catalog, log, host, route)
    finally:
        e.stop()
        server.terminate()


def mcp_server(catalog):
    """tests/envoy/mcp_catalog_server.py serving `catalog` on a free port: (process, port, its log of sessions)."""
    port = runner.free_port()
    log = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "envoy", "mcp_catalog_server.py"), str(port), catalog, log], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return server, port, log


MCP_CATALOG = os.path.join(ROOT, "tests", "corpus", "servers", "desktop-commander.json")  # two of its tools change for OpenAI


def mcp_session(name, e, catalog, log, host, route):
    """Through Envoy `e` to the catalog server: a client naming itself Codex gets the list rewritten for
    OpenAI and a tagged session id, the server never sees the tag, and the counter carries its labels."""
    head = {"accept": "application/json, text/event-stream", **host}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex-mcp-client", "version": "0.169.0"}}}
    _, _, h = e.request("POST", "/mcp", json.dumps(init).encode(), head)
    sid = h.get("mcp-session-id", "")
    _, body, _ = e.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode(), {**head, "mcp-session-id": sid})
    tools = json.load(open(catalog))["tools"]
    want = json.loads(runner.cli(json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}}).encode(), "mcp", "openai"))["result"]["tools"]
    try:
        got = json.loads(body)["result"]["tools"]
    except (ValueError, KeyError, TypeError):
        got = None
    seen = [json.loads(line).get("session") for line in open(log) if line.strip()]
    check(f"{name}: tools/list rewritten for the client's profile (codex-mcp-client: openai), its session tagged, the server never sees the tag",
          got is not None and [t["inputSchema"] for t in got] == [t["inputSchema"] for t in want] and got != tools and sid.endswith(".tf.openai.codex-mcp-client")
          and seen and not any(x and ".tf." in x for x in seen), (sid, seen, body[:300]))
    time.sleep(1.2)
    check(f"{name}: toolfit_mcp_tools_listed labelled by route, profile and MCP client (the bootstrap's stats tags)",
          re.search(r'^toolfit_mcp_tools_listed\{route="' + route + r'",profile="openai",mcp_client="codex-mcp-client"\} ' + str(len(tools)) + "$", e.prom(), re.M), "")


def pods_of(objs):
    """(labels, container ports) of every Deployment's pods."""
    return [(d["spec"]["template"]["metadata"].get("labels", {}), {p["containerPort"] for c in d["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])})
            for d in objs if d["kind"] == "Deployment"]


def inference_overlays(rendered):
    """What a cluster would only show after applying: the routes, pools, EPPs and toolfit of each
    inference overlay refer to objects that exist, and toolfit sits before the EPP."""
    for name in ("inference-gateway", "inference-gateway-traffic-extension", "envoy-gateway", "envoy-gateway-extproc", "agentgateway"):
        objs = rendered.get(name)
        if objs is None:
            check(f"deploy/{name} rendered", False)
            continue
        by = lambda kind: [o for o in objs if o["kind"] == kind]  # noqa: E731
        pools = {p["metadata"]["name"]: p for p in by("InferencePool")}
        services = {s["metadata"]["name"]: {p["port"] for p in s["spec"]["ports"]} for s in by("Service")}
        gateways = {g["metadata"]["name"] for g in by("Gateway")}
        refs = [(r["metadata"]["name"], b) for r in by("HTTPRoute") for rule in r["spec"]["rules"] for b in rule["backendRefs"]]
        pool_refs = [b["name"] for _, b in refs if b.get("kind") == "InferencePool"]
        check(f"deploy/{name}: every HTTPRoute attaches to its Gateway and every backend exists",
              all(p["name"] in gateways for r in by("HTTPRoute") for p in r["spec"]["parentRefs"])
              and all(b["name"] in (pools if b.get("kind") == "InferencePool" else services) for _, b in refs) and sorted(set(pool_refs)) == sorted(pools), refs)
        pods = pods_of(objs)
        for pname, pool in pools.items():
            sel, port = pool["spec"]["selector"]["matchLabels"], pool["spec"]["targetPorts"][0]["number"]
            epp = pool["spec"]["endpointPickerRef"]
            members = [ports for labels, ports in pods if all(labels.get(k) == v for k, v in sel.items())]
            check(f"deploy/{name}: pool {pname} selects pods serving port {port}, and its EPP Service {epp['name']}:{epp.get('port', {}).get('number')} exists",
                  members and all(port in ports for ports in members) and epp.get("port", {}).get("number") in services.get(epp["name"], ()), (members, services.get(epp["name"])))
        targets = [t for o in objs if o["kind"] in ("WasmPlugin", "TrafficExtension", "EnvoyExtensionPolicy", "AgentgatewayPolicy") for t in o["spec"].get("targetRefs", [])]
        check(f"deploy/{name}: toolfit is attached to the Gateway", targets and all(t["kind"] == "Gateway" and t["name"] in gateways for t in targets), targets)
        proxies = by("EnvoyProxy")
        if any("wasm" in o["spec"] for o in by("EnvoyExtensionPolicy")):
            order = [(f["name"], f.get("before")) for p in proxies for f in p["spec"].get("filterOrder", [])]
            classes = [c for c in by("GatewayClass") if c["spec"].get("parametersRef", {}).get("name") in {p["metadata"]["name"] for p in proxies}]
            check(f"deploy/{name}: the GatewayClass's EnvoyProxy puts the Wasm filter before every ext_proc (the EPP's)",
                  ("envoy.filters.http.wasm", "envoy.filters.http.ext_proc") in order and classes, order)
        for p in by("AgentgatewayPolicy"):
            opts = p["spec"]["traffic"]["extProc"]["processingOptions"]
            backend = p["spec"]["traffic"]["extProc"]["backendRef"]
            # agentgateway's Buffered refuses bodies over 8 KB: the whole body must come streamed
            check(f"deploy/{name}: the ext_proc policy streams the request body to toolfit-extproc's Service",
                  opts.get("requestBodyMode") == "FullDuplexStreamed" and backend["port"] in services.get(backend["name"], ()), (opts, backend))
        for p in by("ClientTrafficPolicy"):
            limit = p["spec"]["connection"]["bufferLimit"]
            size = int(limit.rstrip("KMGi")) << {"Ki": 10, "Mi": 20, "Gi": 30}.get(limit[-2:], 0)
            maxes = [json.loads(c).get("max_body_bytes", 16 << 20) for _, c in plugin_configs(objs)]
            check(f"deploy/{name}: the gateway's buffer limit ({limit}) is above toolfit's max_body_bytes", maxes and all(size > m for m in maxes), maxes)
        if proxies:
            boot = yaml.safe_load(proxies[0]["spec"]["bootstrap"]["value"])
            ours = bootstrap_override(rendered["envoyfilter"])
            check(f"deploy/{name}: the EnvoyProxy bootstrap carries the same stats tags as the sidecars'", boot["stats_config"] == ours["stats_config"])


def mcp_agentgateway(objs):
    """deploy/mcp-agentgateway: agentgateway runs nowhere here (no build of it is published on the
    registries), so what a cluster would show first is checked: the route reaches the MCP backend, the
    backend's target is the server's Service, and its guardrail is toolfit-extproc's gRPC port on the two
    methods toolfit changes, failing open, with only metadata keys toolfit-extproc reads."""
    by = lambda kind: [o for o in objs if o["kind"] == kind]  # noqa: E731
    services = {s["metadata"]["name"]: {p["port"]: p for p in s["spec"]["ports"]} for s in by("Service")}
    backends = {b["metadata"]["name"]: b["spec"] for b in by("AgentgatewayBackend")}
    refs = [b for r in by("HTTPRoute") for rule in r["spec"]["rules"] for b in rule["backendRefs"]]
    check("deploy/mcp-agentgateway: the HTTPRoute sends MCP to an AgentgatewayBackend that exists",
          refs and all(b.get("kind") == "AgentgatewayBackend" and b["name"] in backends for b in refs), refs)
    targets = [t["static"] for b in backends.values() for t in b.get("mcp", {}).get("targets", [])]
    check("deploy/mcp-agentgateway: the backend's target is the MCP server's Service, its port and /mcp",
          targets and all(t["port"] in services.get(t["backendRef"]["name"], {}) and t.get("path") == "/mcp" for t in targets), targets)
    procs = [p for b in backends.values() for p in b.get("policies", {}).get("mcp", {}).get("guardrails", {}).get("processors", [])]
    # the metadata keys extmcp.rs reads, from its source
    src = open(os.path.join(ROOT, "extproc", "src", "extmcp.rs")).read()
    read = set(re.findall(r'meta\(m, "(\w+)"\)', src))
    for p in procs:
        ref = p["remote"]["backendRef"]
        port = services.get(ref["name"], {}).get(ref.get("port"), {})
        check("deploy/mcp-agentgateway: the guardrail is toolfit-extproc's gRPC (h2c) port, failing open",
              port.get("appProtocol") == "kubernetes.io/h2c" and p["remote"].get("failureMode") == "FailOpen", (ref, port))
        check("deploy/mcp-agentgateway: tools/list answers and tools/call requests go through it, nothing else",
              p["methods"] == {"tools/list": "Response", "tools/call": "Request"}, p["methods"])
        keys = set(p["remote"].get("metadata", {}))
        check(f"deploy/mcp-agentgateway: its metadata keys {sorted(keys)} are ones toolfit-extproc reads {sorted(read)}",
              keys and read and keys <= read, keys - read)
    check("deploy/mcp-agentgateway: one guardrail processor", len(procs) == 1, procs)
    # the subset is not a rubber stamp: a misspelt phase and a URL with a path
    broken = copy.deepcopy(by("AgentgatewayBackend"))
    for b in broken:
        proc = b["spec"]["policies"]["mcp"]["guardrails"]["processors"][0]
        proc["methods"]["tools/list"] = "Responses"
        proc["remote"] = {"url": "http://toolfit-extproc:50051/x"}
    ok, out = validate(broken)
    check("the AgentgatewayBackend subset rejects a misspelt method phase and a guardrail URL with a path", not ok and out.count("FAIL") == 1 and "Responses" in out and "/x" in out, out[-600:])


# Envoy AI Gateway's controller names an MCPRoute's client-facing HTTPRoute this prefix + the MCPRoute's
# name (envoyproxy/ai-gateway internal/internalapi/internalapi.go, MCPMainHTTPRoutePrefix); its
# per-backend routes `ai-eg-mcp-br-` + route + backend carry the proxy's own traffic.
AIGW_MAIN_ROUTE = "ai-eg-mcp-main-"


def mcp_ai_gateway(objs, sidecars):
    """deploy/mcp-ai-gateway: AI Gateway runs nowhere here (no build of it is published on the registries),
    so what its controller would make of the overlay is checked: toolfit's policy names the MCPRoute's
    main HTTPRoute, toolfit's MCP route is the MCPRoute's path, every backend is a Service and port of
    the overlay, and the gateway's Envoy tags toolfit's stats as the sidecars do."""
    by = lambda kind: [o for o in objs if o["kind"] == kind]  # noqa: E731
    routes = by("MCPRoute")
    services = {s["metadata"]["name"]: {p["port"] for p in s["spec"]["ports"]} for s in by("Service")}
    gateways = {g["metadata"]["name"] for g in by("Gateway")}
    check("deploy/mcp-ai-gateway: every MCPRoute attaches to its Gateway and reaches a Service port of the overlay",
          routes and all(p["name"] in gateways for r in routes for p in r["spec"]["parentRefs"])
          and all(b.get("kind", "Service") == "Service" and b["port"] in services.get(b["name"], ()) for r in routes for b in r["spec"]["backendRefs"]), routes)
    mains = {AIGW_MAIN_ROUTE + r["metadata"]["name"]: r["spec"].get("path", "/mcp") for r in routes}
    for pol in by("EnvoyExtensionPolicy"):
        targets = pol["spec"]["targetRefs"]
        check(f"deploy/mcp-ai-gateway: {pol['metadata']['name']} is attached to the MCPRoutes' main HTTPRoutes only ({sorted(mains)})",
              targets and all(t["kind"] == "HTTPRoute" and t["name"] in mains for t in targets), targets)
        for w in pol["spec"]["wasm"]:
            paths = {r.get("path") for r in w["config"].get("routes", []) if r.get("format") == "mcp"}
            want = {mains[t["name"]] for t in targets if t["name"] in mains}
            check(f"deploy/mcp-ai-gateway: toolfit's MCP routes {sorted(paths)} are the MCPRoutes' paths {sorted(want)}", paths and paths == want, (paths, want))
    proxies = by("EnvoyProxy")
    check("deploy/mcp-ai-gateway: the gateway's Envoy tags toolfit's stats as the sidecars do (mcp_client included)",
          proxies and all(yaml.safe_load(p["spec"]["bootstrap"]["value"])["stats_config"] == bootstrap_override(sidecars)["stats_config"] for p in proxies))
    # the subset is not a rubber stamp: an HTTPRoute as the MCPRoute's parent, a misspelt toolSelector
    broken = copy.deepcopy(routes)
    for r in broken:
        r["spec"]["parentRefs"][0]["kind"] = "HTTPRoute"
        r["spec"]["backendRefs"][0]["toolSelector"] = {"includes": ["x"]}
    ok, out = validate(broken)
    check("the MCPRoute subset rejects a non-Gateway parent and a misspelt toolSelector", not ok and "parentRefs/0/kind" in out and "includes" in out, out[-600:])


def strict_flag(strict):
    """The `strict` member a strict tool carries (OpenAI, Anthropic)."""
    return {"strict": True} if strict else {}


# per API host: (profile, toolfit's format, path, the request for a tool schema (strict or not), the calls
# (name, arguments) an answer in that API's shape carries). Each request names its tool jira.get_issue, a
# dotted name OpenAI and Anthropic refuse; the routing test sends deploy/README.md's schema (a `(?:`
# pattern, a `not: {}` branch), the reply test STRICT_TOOL.
EGRESS_CALLS = {
    "api.openai.com": ("openai", "openai-chat", "/v1/chat/completions",
                       lambda t, strict=False: {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}],
                                                "tools": [{"type": "function", "function": {"name": "jira.get_issue", **strict_flag(strict), "parameters": t}}]},
                       lambda r: [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in r["choices"][0]["message"]["tool_calls"]]),
    "api.anthropic.com": ("anthropic", "anthropic", "/v1/messages",
                          lambda t, strict=False: {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}],
                                                   "tools": [{"name": "jira.get_issue", **strict_flag(strict), "input_schema": t}]},
                          lambda r: [(b["name"], b["input"]) for b in r["content"] if b["type"] == "tool_use"]),
    "generativelanguage.googleapis.com": ("gemini", "gemini", "/v1beta/models/gemini-2.5-flash:generateContent",
                                          lambda t, strict=False: {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                                                                   "tools": [{"functionDeclarations": [{"name": "jira.get_issue", "parameters": t}]}]},
                                          lambda r: [(p["functionCall"]["name"], p["functionCall"]["args"]) for p in r["candidates"][0]["content"]["parts"]]),
    "api.mistral.ai": ("mistral", "openai-chat", "/v1/chat/completions",
                       lambda t, strict=False: {"model": "mistral-large-latest", "messages": [{"role": "user", "content": "hi"}],
                                                "tools": [{"type": "function", "function": {"name": "jira.get_issue", "parameters": t}}]},
                       lambda r: [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in r["choices"][0]["message"]["tool_calls"]]),
    "api.groq.com": ("groq", "openai-chat", "/openai/v1/chat/completions",
                     lambda t, strict=False: {"model": "openai/gpt-oss-120b", "messages": [{"role": "user", "content": "hi"}],
                                              "tools": [{"type": "function", "function": {"name": "jira.get_issue", **strict_flag(strict), "parameters": t}}]},
                     lambda r: [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in r["choices"][0]["message"]["tool_calls"]]),
    # the beta base URL, where DeepSeek's strict mode is
    "api.deepseek.com": ("deepseek", "openai-chat", "/beta/chat/completions",
                         lambda t, strict=False: {"model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}],
                                                  "tools": [{"type": "function", "function": {"name": "jira.get_issue", **strict_flag(strict), "parameters": t}}]},
                         lambda r: [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in r["choices"][0]["message"]["tool_calls"]]),
    "api.x.ai": ("xai", "openai-chat", "/v1/chat/completions",
                 lambda t, strict=False: {"model": "grok-4", "messages": [{"role": "user", "content": "hi"}],
                                          "tools": [{"type": "function", "function": {"name": "jira.get_issue", "parameters": t}}]},
                 lambda r: [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in r["choices"][0]["message"]["tool_calls"]]),
    "example-resource.openai.azure.com": ("azure-openai", "openai-chat", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
                                          lambda t, strict=False: {"messages": [{"role": "user", "content": "hi"}],
                                                                   "tools": [{"type": "function", "function": {"name": "jira.get_issue", **strict_flag(strict), "parameters": t}}]},
                                          lambda r: [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in r["choices"][0]["message"]["tool_calls"]]),
    "api.cohere.com": ("cohere", "cohere", "/v2/chat",
                       lambda t, strict=False: {"model": "command-a", "messages": [{"role": "user", "content": "hi"}],
                                                "tools": [{"type": "function", "function": {"name": "jira.get_issue", "parameters": t}}]},
                       lambda r: [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in r["message"]["tool_calls"]]),
}


# an alias's requests are counted under the profile it names
COUNTED_AS = {"azure-openai": "openai"}


def signing_envoy(cfg, ports, key, secret):
    """BootstrapEnvoy with AWS credentials in its environment (what the overlay's Secret gives the
    gateway's aws_request_signing)."""
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update({"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret})
    try:
        return BootstrapEnvoy(cfg, ports[0], ports[1])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def egress(objs, upstream_port, rec):
    """deploy/egress's EnvoyFilter as Istio builds the egress gateway's Envoy: the gateway's routes
    from the VirtualServices (the routes bound to the egress gateway, one virtual host per API host),
    each API's request rewritten by its own profile through the route metadata."""
    ef = next(x for x in objs if x["kind"] == "EnvoyFilter")
    vhosts = []
    for v in (x for x in objs if x["kind"] == "VirtualService"):
        host = v["spec"]["hosts"][0]
        routes = [{"name": h["name"], "match": {"prefix": "/"}, "route": {"cluster": f"outbound|443||{host}", "timeout": "0s"}}
                  for h in v["spec"]["http"] if any("llm-egress" in m.get("gateways", []) for m in h.get("match", []))]
        vhosts.append({"name": f"{host}:80", "domains": [host], "routes": routes})
    ports = (runner.free_port(), runner.free_port(), upstream_port)
    cfg = assemble_and_validate("egress", ef, objs, "GATEWAY", ports, vhosts, " (a route per API host)")
    e = signing_envoy(cfg, ports, "AKIDTOOLFITTEST00001", "toolfit/test/secret/key/0000000000000000")
    try:
        check("egress EnvoyFilter: Envoy runs it", e.ready, e.logs()[-1500:])
        _, request = readme_request()
        schema = request["tools"][0]["function"]["parameters"]
        got = {}
        for host, (profile, fmt, path, make, _) in EGRESS_CALLS.items():
            body = json.dumps(make(schema)).encode()
            e.request("POST", path, body, {"host": host})
            got[host] = (runner.last(rec).get("body"), runner.cli(body, fmt=fmt, profile=profile), body)
        # Bedrock (a Llama model: the bedrock profile), signed by the gateway on its route alone
        conv = {"messages": [{"role": "user", "content": [{"text": "hi"}]}], "toolConfig": {"tools": [{"toolSpec": {"name": "jira.get_issue", "inputSchema": {"json": schema}}}]}}
        body = json.dumps(conv).encode()
        e.request("POST", "/model/meta.llama3-70b-instruct-v1%3A0/converse", body, {"host": BEDROCK})
        signed = runner.last(rec)
        check("egress: Bedrock rewritten with the bedrock profile, then signed by the gateway (SigV4, service bedrock)",
              signed.get("body") == runner.cli(body, fmt="bedrock-converse", profile="bedrock") != body
              and signed["headers"].get("authorization", "").startswith("AWS4-HMAC-SHA256 Credential=AKIDTOOLFITTEST00001/") and "/bedrock/aws4_request" in signed["headers"]["authorization"],
              signed.get("headers", {}).get("authorization"))
        check("egress: no other API's request carries an AWS signature (the signer is the Bedrock route's)",
              not any("authorization" in r["headers"] or "x-amz-date" in r["headers"] for r in rec[-1 - len(EGRESS_CALLS):-1]),
              [r["headers"].get("authorization") for r in rec[-1 - len(EGRESS_CALLS):-1]])
        check("egress: each API's host rewrites with its own profile (the route's metadata); the dotted name mapped for OpenAI, Anthropic, Groq, DeepSeek, xAI and Azure, kept for Gemini, Cohere and Mistral",
              all(sent == want != body for sent, want, body in got.values())
              and all((b"jira.get_issue" in sent) == (host in ("generativelanguage.googleapis.com", "api.cohere.com", "api.mistral.ai")) for host, (sent, _, _) in got.items()),
              {h: (sent == want, want != body) for h, (sent, want, body) in got.items()})
        time.sleep(1.2)
        prom = e.prom()
        check("egress: counters labelled by API route and profile", all(runner.metric(prom, "toolfit_requests_rewritten", p, COUNTED_AS.get(p, p)) == 1 for p, *_ in EGRESS_CALLS.values()))
    finally:
        e.stop()
    egress_replies(ef, objs, vhosts)


# a strict tool the reply test sends (an optional parameter becomes nullable under the APIs' strict
# mode, so their double writes a null toolfit must take out again)
STRICT_TOOL = {"type": "object", "properties": {"key": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["key"], "additionalProperties": False}



def tls_api(objs):
    """The hosted APIs' double (tests/envoy/clients.py's Api: each API's reply shape, a call to every tool
    under the name it received, null wherever the received schema allows it) over TLS with a certificate
    for every API host, answering gzip when the request accepts it. Returns (port, CA file)."""
    import ssl, threading
    from http.server import ThreadingHTTPServer
    import clients
    tmp = tempfile.mkdtemp(prefix="toolfit-egress-")
    key, cert = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    hosts = [h for d in objs if d["kind"] == "DestinationRule" for h in [d["spec"]["host"]]]
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=toolfit-test-api",
                    "-addext", "subjectAltName=" + ",".join(f"DNS:{h}" for h in hosts)], check=True, capture_output=True)

    class GzipApi(clients.Api):
        def coding(self, path, accept):
            return "gzip" if "gzip" in accept else "identity"

    port = runner.free_port()
    srv = ThreadingHTTPServer(("127.0.0.1", port), GzipApi)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return port, cert, GzipApi, (cert, key)


BEDROCK = "bedrock-runtime.us-east-1.amazonaws.com"


def bedrock_double(tls):
    """tests/envoy/bedrock_worker.py's Bedrock Runtime double over TLS (the egress's certificate): it
    judges each Converse request with botocore and verifies its SigV4 signature with botocore's code and
    the worker's credentials. Returns (process, port, log file, the worker's credentials)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bedrock
    py = bedrock.venv("bedrock", bedrock.PINS)
    port, log = runner.free_port(), tempfile.mktemp(prefix="egress-bedrock-", suffix=".jsonl")
    open(log, "w").close()
    proc = subprocess.Popen([py, bedrock.WORKER, "double", str(port), log, *tls], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = proc.stdout.readline().strip() == "ready"
    return proc if ready else None, port, log, (bedrock.KEY, bedrock.SECRET)


def originate_tls(cfg, objs, ca):
    """Each API cluster as the overlay's DestinationRule makes Istio build it: TLS to the API (mode SIMPLE,
    its SNI), the API's certificate checked against `ca` for the API's host name."""
    rules = {d["spec"]["host"]: d["spec"]["trafficPolicy"]["portLevelSettings"][0]["tls"] for d in objs if d["kind"] == "DestinationRule"}
    done = 0
    for c in cfg["static_resources"]["clusters"]:
        host = c["name"].split("||")[-1]
        tls = rules.get(host)
        if tls and tls.get("mode") == "SIMPLE":
            c["transport_socket"] = {"name": "envoy.transport_sockets.tls", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext", "sni": tls["sni"],
                "common_tls_context": {"validation_context": {"trusted_ca": {"filename": ca},
                                                             "match_typed_subject_alt_names": [{"san_type": "DNS", "matcher": {"exact": host}}]}}}}
            done += 1
    return done


def egress_replies(ef, objs, vhosts):
    """The egress chain against TLS doubles of the APIs that answer compressed: what the agent gets back
    carries its own tool name and no null toolfit's strict rewrite made possible."""
    port, ca, api, pair = tls_api(objs)
    ports = (runner.free_port(), runner.free_port(), port)
    cfg, _ = assemble(ef, objs, "GATEWAY", ports, vhosts)
    tls = originate_tls(cfg, objs, ca)
    check("egress: every API cluster originates TLS as its DestinationRule says", tls == len(EGRESS_CALLS) + 1, tls)
    # Bedrock's cluster goes to its own double, which verifies the gateway's signature; the gateway's
    # signer reads its credentials from the environment (the Secret's, in the overlay)
    double, bport, blog, (key, secret) = bedrock_double(pair)
    check("egress: the Bedrock double starts (botocore, TLS)", double is not None)
    for c in cfg["static_resources"]["clusters"]:
        if c["name"].endswith("||" + BEDROCK):
            c["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]["port_value"] = bport
    e = signing_envoy(cfg, ports, key, secret)
    try:
        check("egress with TLS origination: Envoy runs it", e.ready, e.logs()[-1500:])
        got, codings = {}, {}
        for host, (_, _, path, make, calls) in EGRESS_CALLS.items():
            status, raw, headers = e.request("POST", path, json.dumps(make(STRICT_TOOL, strict=True)).encode(), {"host": host, "accept-encoding": "gzip"})
            codings[host] = (headers.get("content-encoding"), api.seen[-1][2] if api.seen else None)
            try:
                got[host] = calls(json.loads(gzip.decompress(raw) if headers.get("content-encoding") == "gzip" else raw))
            except (ValueError, KeyError, IndexError, TypeError, OSError) as err:
                got[host] = f"{status}: {err}: {raw[:200]!r}"
        check("egress: the APIs answered gzip and the agents got gzip", all(c == ("gzip", "gzip") for c in codings.values()), codings)
        check("egress: every call the agent gets names its own tool (jira.get_issue, mapped where the API refuses it)",
              all(isinstance(v, list) and v and all(n == "jira.get_issue" for n, _ in v) for v in got.values()), got)
        # OpenAI's strict mode wants every property required, so toolfit made `limit` nullable and the
        # double wrote null (Anthropic's strict mode keeps optional properties optional: no null there)
        nulls_written = sum(1 for seen in api.seen if seen[4])
        check("egress: the OpenAI double wrote a null for the optional parameter toolfit made nullable, and the agent got none",
              isinstance(got["api.openai.com"], list) and all(None not in a.values() for _, a in got["api.openai.com"]) and nulls_written >= 1, (got, nulls_written))
        time.sleep(1.2)
        prom = e.prom()
        unrepaired = sum(int(x) for x in re.findall(r"^toolfit_responses_unrepaired\{[^}]*\} (\d+)", prom, re.M))
        # Bedrock: the agent calls it unsigned; toolfit rewrites (a dotted name, Claude's root union),
        # the gateway signs after it, TLS to the double, which verifies and judges; the name comes back
        conv = {"messages": [{"role": "user", "content": [{"text": "hi"}]}],
                "toolConfig": {"tools": [{"toolSpec": {"name": "jira.get_issue", "description": "Get an issue",
                                                       "inputSchema": {"json": {"anyOf": [STRICT_TOOL, {"type": "object", "properties": {"id": {"type": "integer"}}}]}}}}]}}
        status, raw, _ = e.request("POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse", json.dumps(conv).encode(), {"host": BEDROCK})
        seen = [json.loads(x) for x in open(blog).read().splitlines()] if double else []
        last = seen[-1] if seen else {}
        check("egress: Bedrock: the gateway's signature, made after toolfit, verifies at the API double (botocore's SigV4), which takes the request",
              last.get("signature") == "valid" and not last.get("errors"), (last.get("signature"), last.get("errors")))
        try:
            names = [c["toolUse"]["name"] for c in json.loads(raw)["output"]["message"]["content"] if "toolUse" in c]
        except (ValueError, KeyError, TypeError):
            names = f"{status}: {raw[:200]!r}"
        check("egress: Bedrock: the agent's call names its own tool (jira.get_issue)", names == ["jira.get_issue"], names)
        check("egress: names restored and nulls removed counted, no reply left unrepaired",
              runner.metric(prom, "toolfit_names_restored", "openai", "openai") >= 1 and runner.metric(prom, "toolfit_names_restored", "anthropic", "anthropic") >= 1
              and runner.metric(prom, "toolfit_nulls_removed", "openai", "openai") >= 1 and unrepaired == 0,
              [l for l in prom.splitlines() if re.match(r"toolfit_(names_restored|nulls_removed|responses_unrepaired)", l)])
    finally:
        e.stop()
        if double:
            double.kill()


def extproc_mtls(rendered, upstream_port, rec):
    """deploy/envoy-gateway-extproc-mtls and deploy/agentgateway-mtls: the processor's side (the rendered
    Deployment's flags and Secret mount) and the gateway's (Envoy Gateway's BackendTLSPolicy and
    EnvoyProxy client certificate; agentgateway's backend TLS policy) are made from one issuer and run: the
    processor from the Deployment's own arguments, with the Secret's files where it mounts them, and Envoy
    originating TLS as the gateway's objects say. Served when both sides are as written; refused (the
    request goes on unchanged) when the gateway presents no client certificate."""
    from harness.certs import Pki
    from harness.delivery import ExtprocEnvoy, Processor
    for name in ("envoy-gateway-extproc-mtls", "agentgateway-mtls"):
        objs = rendered.get(name)
        if objs is None:
            check(f"deploy/{name} rendered", False)
            continue
        by = lambda kind: [o for o in objs if o["kind"] == kind]  # noqa: E731
        dep = next(d for d in by("Deployment") if d["metadata"]["name"] == "toolfit-extproc")
        pod = dep["spec"]["template"]["spec"]
        args = pod["containers"][0]["args"]
        svc = next(s for s in by("Service") if s["metadata"]["name"] == "toolfit-extproc")
        if name.startswith("envoy-gateway"):
            pol = next(iter(by("BackendTLSPolicy")), {"spec": {"targetRefs": [{}], "validation": {}}})
            target, v = pol["spec"]["targetRefs"][0], pol["spec"]["validation"]
            sni, ca_ref = v.get("hostname"), (v.get("caCertificateRefs") or [{}])[0].get("name")
            client_ref = next((p["spec"].get("backendTLS", {}).get("clientCertificateRef", {}).get("name") for p in by("EnvoyProxy")), None)
            ext = next(e["spec"]["extProc"][0]["backendRefs"][0] for e in by("EnvoyExtensionPolicy") if "extProc" in e["spec"])
        else:
            pol = next((p for p in by("AgentgatewayPolicy") if "backend" in p["spec"]), {"spec": {"targetRefs": [{}], "backend": {"tls": {}}}})
            target, t = pol["spec"]["targetRefs"][0], pol["spec"]["backend"]["tls"]
            sni, ca_ref = t.get("sni"), (t.get("caCertificateRefs") or [{}])[0].get("name")
            client_ref = (t.get("mtlsCertificateRef") or [{}])[0].get("name")
            check(f"deploy/{name}: the backend TLS policy checks the name it sends and offers h2 (gRPC)",
                  t.get("verifySubjectAltNames") == [sni] and t.get("alpnProtocols") == ["h2"], t)
            ext = next(p["spec"]["traffic"]["extProc"]["backendRef"] for p in by("AgentgatewayPolicy") if "traffic" in p["spec"])
        check(f"deploy/{name}: the gateway's TLS policy targets the Service its ext_proc calls, which no longer says h2c",
              target.get("kind") == "Service" and target.get("name") == ext["name"] == svc["metadata"]["name"]
              and all("appProtocol" not in p for p in svc["spec"]["ports"]), (target, ext, svc["spec"]["ports"]))
        # the Secret's files where the Deployment mounts them
        mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        secrets = {v["secret"]["secretName"]: mounts.get(v["name"]) for v in pod["volumes"] if "secret" in v}
        pki = Pki(prefix=f"toolfit-{name}-")
        issuer = pki.ca("issuer")
        served = pki.leaf("toolfit-extproc", issuer, dns=[sni] if sni else ["unnamed"])
        client = pki.leaf("gateway", issuer, client=True)
        secret_dir = tempfile.mkdtemp(prefix="toolfit-secret-")
        for f, src in (("tls.crt", served[0]), ("tls.key", served[1]), ("ca.crt", issuer[0])):
            shutil.copy(src, os.path.join(secret_dir, f))
        mount = secrets.get("toolfit-extproc-tls")
        check(f"deploy/{name}: the processor mounts the Secret toolfit-extproc-tls and its flags name files in it",
              mount and all(any(a.startswith(f"--{f}={mount}/") for a in args) for f in ("tls-cert", "tls-key", "client-ca")), (secrets, args))
        if not mount or not sni or not ca_ref or not client_ref:
            check(f"deploy/{name}: the gateway side names a CA, a server name and a client certificate", False, (sni, ca_ref, client_ref))
            continue
        # the container's own arguments, each mounted volume's files at a local path, loopback ports
        cm = next(c for c in by("ConfigMap") if c["metadata"]["name"] == "toolfit-extproc-config")
        cfg = json.loads(cm["data"]["config.json"])
        config_dir = tempfile.mkdtemp(prefix="toolfit-configmap-")
        for f, text in cm["data"].items():
            open(os.path.join(config_dir, f), "w").write(text)
        cm_mount = next(mounts.get(v["name"]) for v in pod["volumes"] if v.get("configMap", {}).get("name") == "toolfit-extproc-config")
        ports = (runner.free_port(), runner.free_port())
        local = lambda a: re.sub(r"^(--listen=).*", rf"\g<1>127.0.0.1:{ports[0]}", re.sub(r"^(--metrics-listen=).*", rf"\g<1>127.0.0.1:{ports[1]}",
                                                                                                   a.replace(mount, secret_dir).replace(cm_mount, config_dir)))  # noqa: E731
        proc = Processor(cfg, flags=[local(a) for a in args], ports=ports)
        check(f"deploy/{name}: toolfit-extproc starts with the Deployment's own arguments (--flag=value) and the Secret's files",
              proc.ready and "(mutual TLS)" in proc.logs() and any(a.startswith("--config=") for a in args), proc.logs()[-500:])
        if not proc.ready:
            continue
        # the gateway's side: the CA ConfigMap and the client certificate Secret it names
        tls = {"ca": issuer[0], "sni": sni, "cert": client[0], "key": client[1]}
        body = json.dumps({"model": "m-vllm", "messages": [{"role": "user", "content": "hi"}],
                           "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string", "format": "email", "pattern": "\\p{L}+"}}}}}]}).encode()
        want = runner.cli(body, "openai-chat", profile="vllm")
        try:
            for how, t, expect in ((f"with the client certificate from Secret {client_ref} and the CA from ConfigMap {ca_ref}", tls, want),
                                   ("control: with no client certificate", {k: v for k, v in tls.items() if k in ("ca", "sni")}, body)):
                e = ExtprocEnvoy(upstream_port, proc.port, tls=t)
                try:
                    status, _, _ = e.request("POST", "/v1/chat/completions", body)
                    got = runner.last(rec).get("body")
                    check(f"deploy/{name}: the gateway {how}: " + ("served, the request rewritten as the engine says" if expect == want else "refused, the request goes on unchanged"),
                          status == 200 and got == expect and want != body, f"status {status} {e.logs()[-300:]}")
                finally:
                    e.stop()
            failed = re.search(r"^toolfit_extproc_tls_handshakes_failed (\d+)", proc.get("/metrics")[1], re.M)
            check(f"deploy/{name}: the refused handshake is counted", failed and int(failed.group(1)) >= 1)
        finally:
            proc.stop()


def readme_request():
    return open(os.path.join(DEPLOY, "README.md")).read(), json.loads(paths.readme_request())


def wasm_policies(objs):
    """Each toolfit Wasm filter of an overlay and what it does when its VM traps: (where, policy, reload
    backoff's base interval in seconds or None). EnvoyFilter patches carry Envoy's own fields; Istio's
    WasmPlugin and TrafficExtension their failStrategy."""
    out = []
    for o in objs:
        if o.get("kind") == "EnvoyFilter":
            for p in o["spec"].get("configPatches", []):
                v = (p.get("patch") or {}).get("value") or {}
                if v.get("name") == "toolfit":
                    c = v["typed_config"]["config"]
                    base = ((c.get("reload_config") or {}).get("backoff") or {}).get("base_interval")
                    out.append((f"EnvoyFilter {o['metadata']['name']}", c.get("failure_policy") or ("fail_open" if c.get("fail_open") else "unset"),
                                float(base.rstrip("s")) if base else None))
        elif o.get("kind") in ("WasmPlugin", "TrafficExtension"):
            spec = o["spec"].get("wasm", o["spec"])
            out.append((f"{o['kind']} {o['metadata']['name']}", spec.get("failStrategy", "unset"), None))
    return out


def trap_policies(rendered):
    """Every overlay that runs the Wasm filter under Envoy's own configuration or Istio's replaces a
    trapped VM (issue 57: under fail_open a trap left the worker without toolfit until a restart): Envoy's
    FAIL_RELOAD with a backoff of 100 ms or more (1 ms crashed Envoy 1.40), Istio's FAIL_RELOAD. Envoy
    Gateway's Wasm has no reload (its overlays stay open, said beside the field)."""
    def bad(objs):
        return [(w, p, b) for w, p, b in wasm_policies(objs) if p != "FAIL_RELOAD" or (w.startswith("EnvoyFilter") and (b or 0) < 0.1)]
    found = {n: wasm_policies(objs) for n, objs in rendered.items() if wasm_policies(objs)}
    check(f"deploy/: every overlay's Wasm filter under Envoy's or Istio's configuration replaces a trapped VM (FAIL_RELOAD, backoff >= 100 ms): {len(found)} overlays",
          len(found) >= 6 and not any(bad(objs) for objs in rendered.values()), {n: bad(o) for n, o in rendered.items() if bad(o)} or sorted(found))
    old = copy.deepcopy(rendered["envoyfilter"])
    for o in old:
        for p in o.get("spec", {}).get("configPatches", []) if o.get("kind") == "EnvoyFilter" else []:
            c = ((p.get("patch") or {}).get("value") or {}).get("typed_config", {}).get("config")
            if ((p.get("patch") or {}).get("value") or {}).get("name") == "toolfit" and c is not None:
                c.pop("failure_policy", None)
                c.pop("reload_config", None)
                c["fail_open"] = True
    check("control: the policy check refuses the overlay as it was (fail_open: true)", bool(bad(old)), wasm_policies(old))


def main():
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    runner.ENVOY = os.path.join(venv, "bin", "envoy")
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
    # a namespaced object without a namespace lands in kubectl's current one, where a policy's targetRef
    # names no Gateway: toolfit silently absent (Envoy Gateway's own translator showed it, controlplanes.py)
    for o, objs in rendered.items():
        loose = unplaced(objs)
        check(f"deploy/{o}: every namespaced object names its namespace", not loose, loose)
    check("control: an object with no namespace is caught", unplaced([{"kind": "EnvoyExtensionPolicy", "metadata": {"name": "x"}}]) == [("EnvoyExtensionPolicy", "x")])
    # the validator is not a rubber stamp
    broken = copy.deepcopy(rendered["envoyfilter"])
    for o in broken:
        if o["kind"] == "EnvoyFilter":
            o["spec"]["configPatches"][0]["applyTo"] = "HTTP_FILTR"
        if o["kind"] == "Deployment":
            o["spec"]["replicas"] = "two"
    ok, out = validate(broken)
    check("the validator rejects a misspelt applyTo and a string replica count", not ok and out.count("FAIL") == 2, out[-600:])
    if "inference-gateway" in rendered and "envoy-gateway" in rendered:
        # and the structural schemas are not either: the EPP's port under the Service's field name, a
        # filterOrder entry that names no neighbour
        broken = copy.deepcopy([o for o in rendered["inference-gateway"] if o["kind"] == "InferencePool"][:1]
                               + [o for o in rendered["envoy-gateway"] if o["kind"] == "EnvoyProxy"])
        broken[0]["spec"]["endpointPickerRef"]["portNumber"] = broken[0]["spec"]["endpointPickerRef"].pop("port")["number"]
        broken[1]["spec"]["filterOrder"][0].pop("before")
        ok, out = validate(broken)
        check("the published CRDs refuse endpointPickerRef.portNumber (the field this overlay once had: unknown, and its CEL rule wants port) "
              "and a filterOrder entry without before/after (CEL)", not ok and out.count("FAIL") == 2 and "port is required" in out
              and "one of before or after" in out, out[-600:])
        # the npm models let a misspelt field through; the published CRD does not
        btp = copy.deepcopy(next(o for o in rendered.get("envoy-gateway-extproc-mtls", []) if o["kind"] == "BackendTLSPolicy"))
        btp["spec"]["validation"]["caCertificateRef"] = btp["spec"]["validation"].pop("caCertificateRefs")
        ok, out = validate([btp])
        check("the published Gateway API CRD refuses a BackendTLSPolicy with caCertificateRef for caCertificateRefs", not ok and "caCertificateRef" in out, out[-400:])
        # Istio's CRDs run their CEL rules: a route timeout of 0s (this repository's VirtualServices once had it)
        vs = copy.deepcopy(next(o for o in rendered.get("gateway", []) if o["kind"] == "VirtualService"))
        vs["spec"]["http"][0]["timeout"] = "0s"
        ok, out = validate([vs])
        check("Istio's published CRD refuses a VirtualService route timeout of 0s (its CEL rule: at least 1ms)", not ok and "greater than 1ms" in out, out[-400:])
        check(f"CEL rules of the published CRDs run on deploy/'s objects: {CEL_COUNTS[0]} run, {CEL_COUNTS[1]} not run (oldSelf or a Kubernetes-only CEL library)",
              CEL_COUNTS[0] > 100, CEL_COUNTS)
        inference_overlays(rendered)
        # the TrafficExtension variant attaches the same module, the same way, with the same settings
        wp = next(o["spec"] for o in rendered["inference-gateway"] if o["kind"] == "WasmPlugin")
        te = [o["spec"] for o in rendered.get("inference-gateway-traffic-extension", []) if o["kind"] == "TrafficExtension"]
        same = lambda a, b: all(a.get(k) == b.get(k) for k in ("url", "sha256", "imagePullPolicy", "failStrategy", "pluginName", "pluginConfig"))  # noqa: E731
        check("deploy/inference-gateway-traffic-extension: a TrafficExtension in place of the WasmPlugin, with its target, phase, priority and module settings",
              len(te) == 1 and not any(o["kind"] == "WasmPlugin" for o in rendered["inference-gateway-traffic-extension"])
              and all(te[0].get(k) == wp.get(k) for k in ("targetRefs", "phase", "priority")) and same(te[0]["wasm"], wp), te)

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
    upstream_port = runner.free_port()
    _, rec = runner.echo_upstream.serve(upstream_port)
    text, request = readme_request()
    body = json.dumps(request).encode()
    sidecar = next(x for x in rendered["envoyfilter"] if x["kind"] == "EnvoyFilter")
    routes = [{"name": "inbound|http|8080", "domains": ["*"], "routes": [{"name": "default", "match": {"prefix": "/"}, "route": {"cluster": "inbound|8080||", "timeout": "0s"}}]}]
    ports = (runner.free_port(), runner.free_port(), upstream_port)
    cfg = assemble_and_validate("sidecar", sidecar, rendered["envoyfilter"], "SIDECAR_INBOUND", ports, routes, "")
    e = BootstrapEnvoy(cfg, ports[0], ports[1])
    try:
        check("sidecar EnvoyFilter: Envoy runs it with dist/toolfit.wasm", e.ready, e.logs()[-1500:])
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        got = runner.last(rec)
        want = runner.cli(body)
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
    ports = (runner.free_port(), runner.free_port(), upstream_port)
    cfg = assemble_and_validate("gateway", gw, rendered["gateway"], "GATEWAY", ports, routes, " (route metadata by VirtualService route name)")
    e = BootstrapEnvoy(cfg, ports[0], ports[1])
    try:
        check("gateway EnvoyFilter: Envoy runs it", e.ready, e.logs()[-1500:])
        e.request("POST", "/v1/chat/completions", body, {"host": "llama.llm.example.com"})
        llama = runner.last(rec).get("body")
        e.request("POST", "/v1/chat/completions", body, {"host": "vllm.llm.example.com"})
        vllm = runner.last(rec).get("body")
        check("gateway: the llama route rewrites for llama.cpp, the vllm route's metadata picks the mcp profile", llama == runner.cli(body) and vllm == body)
        time.sleep(1.2)
        prom = e.prom()
        check("gateway: counters labelled by VirtualService route and profile", runner.metric(prom, "toolfit_requests_rewritten", "llama") == 1
              and runner.metric(prom, "toolfit_requests_unchanged", "vllm", "mcp") == 1)
    finally:
        e.stop()

    # each overlay these checks are for must be there: a renamed or missing one is a failed check, not a
    # smaller count
    for name in ("egress", "mcp", "mcp-ingress"):
        check(f"deploy/{name} rendered, so its checks below run", name in rendered, sorted(rendered))
    if "egress" in rendered:
        egress(rendered["egress"], upstream_port, rec)
    if "mcp" in rendered:
        # the MCP server keeps sessions in memory: two replicas answered a session one did not start
        # with 400 (issue 57); toolfit's tag is replica-safe, the server is not
        servers = [o for o in rendered["mcp"] if o["kind"] == "Deployment" and o["metadata"]["name"] == "mcp-server"]
        check("deploy/mcp: the MCP server (sessions in its memory) runs one replica, as its comment says",
              len(servers) == 1 and servers[0]["spec"].get("replicas") == 1, [o["spec"].get("replicas") for o in servers])
        routes = [{"name": "inbound|http|8080", "domains": ["*"], "routes": [{"name": "default", "match": {"prefix": "/"}, "route": {"cluster": "inbound|8080||", "timeout": "0s"}}]}]
        mcp_overlay("mcp sidecar", rendered["mcp"], "SIDECAR_INBOUND", routes, {}, "default")
    if "mcp-ingress" in rendered:
        vs = next(x for x in rendered["mcp-ingress"] if x["kind"] == "VirtualService")
        h = vs["spec"]["http"][0]
        dest = h["route"][0]["destination"]
        routes = [{"name": f"{vs['spec']['hosts'][0]}:8080", "domains": vs["spec"]["hosts"], "routes": [
            {"name": h["name"], "match": {"prefix": "/"}, "route": {"cluster": f"outbound|{dest['port']['number']}||{dest['host']}.mcp.svc.cluster.local", "timeout": "0s"}}]}]
        mcp_overlay("mcp ingress", rendered["mcp-ingress"], "GATEWAY", routes, {"host": vs["spec"]["hosts"][0]}, h["name"])
    trap_policies(rendered)
    extproc_mtls(rendered, upstream_port, rec)
    mcp_agentgateway(rendered.get("mcp-agentgateway", []))
    mcp_ai_gateway(rendered.get("mcp-ai-gateway", []), rendered["envoyfilter"])

    # dashboard and alerts: only metric names a live Envoy with toolfit exported (tests/envoy/e2e.py saved them)
    seen, why = runner.read_metric_names()
    check("metric names from this module's e2e run are available", seen is not None and len(seen) > 50, why or f"{len(seen or ())} names")
    seen = seen or set()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as stale:  # the control: another module's file
        stale.write("# module 0000 run -\n" + "\n".join(sorted(seen)) + "\n")
    check("a metric names file from another module is refused", runner.read_metric_names(stale.name)[0] is None)
    os.unlink(stale.name)
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
    check("walkthrough step 1: make wasm gives dist/toolfit.wasm under 1 MiB", "make wasm" in text and os.path.getsize(runner.WASM) < 1 << 20)
    # The module's size budget: a ConfigMap holds 1 MiB and carries the module base64-encoded (4/3 of
    # it), so about 786 KB is the hard limit; the budget keeps growth in sight well before it (530 KB on
    # 2026-11-26; docs/performance.md has the figure and what each part costs).
    size = os.path.getsize(runner.WASM)
    check(f"dist/toolfit.wasm is {size:,} bytes, within its budget of {WASM_BUDGET:,}", size <= WASM_BUDGET)
    for cmd in re.findall(r"^\s*(kubectl -n llm create configmap .*)$", text, re.M):
        p = subprocess.run(cmd.split() + ["--dry-run=client", "-o", "json"], cwd=ROOT, capture_output=True, text=True)
        cm = json.loads(p.stdout) if p.returncode == 0 else {}
        size = len(json.dumps(cm))
        check(f"walkthrough step 2: `{cmd}` (dry run) makes a ConfigMap of {size} bytes, under 1 MiB", cm.get("binaryData", {}).get("toolfit.wasm") and size < 1 << 20, p.stderr)
    applied = re.findall(r"kubectl apply -k deploy/([\w-]+)", text)
    check("walkthrough step 3: every overlay it applies renders and validates", applied and all(a in rendered for a in applied), applied)
    docker = open(os.path.join(DEPLOY, "Dockerfile")).read()
    check("Dockerfile packages dist/toolfit.wasm as plugin.wasm (Istio's compat layout)", "COPY dist/toolfit.wasm ./plugin.wasm" in docker and "FROM scratch" in docker)


if __name__ == "__main__":
    main()
    close("deploy", results)
