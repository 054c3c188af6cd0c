#!/usr/bin/env python3
"""deploy/'s Istio overlays through Istio's own configuration generation: tests/istio/gen_test.go, built
against istio.io/istio at a pinned commit from the Go module proxy, starts Istio's test discovery server
(pilot/test/xds) with the controllers istiod runs (the Gateway API controller with the inference
extension on, WasmPlugin -> TrafficExtension, the Kubernetes registry over a fake API server) and writes
what pilot pushes to one proxy: listeners, routes, clusters and the extension configurations (ECDS) its
filters ask for. Each overlay goes in as `kubectl kustomize` renders it, with what the cluster adds
beside it: one Pod per Deployment and the EndpointSlices the endpoint controller writes; for a Gateway
API gateway the Service and Pod istiod's deployment controller creates; and the HTTPRoutes' status as
istiod's status writer sets it once it accepts them (Istio builds an InferencePool's shadow Service only
for routes accepted by its controller; that writer needs leader election, which the test server has not).

Checked, per overlay:
- EnvoyFilter overlays (sidecar: envoyfilter, mcp; ingress gateway: gateway, mcp-ingress): the inserted
  filters (toolfit, and the gzip decompressor before it) sit directly before the router in every HTTP
  chain the patch's context names, with the overlay's module path and plugin configuration; the LISTENER
  patch's buffer limit; each HTTP_ROUTE patch's metadata on its route; toolfit in no chain of the other
  direction. Controls: the other context, or a workloadSelector naming another workload, leaves toolfit
  out, and the check says so.
- WasmPlugin / TrafficExtension overlays (wasmplugin on a sidecar; inference-gateway and
  -traffic-extension on a Gateway API gateway with InferencePools): an ECDS filter in every HTTP chain of
  the proxy, before the router and (with pools) before the InferencePool's ext_proc, whose extension
  configuration is the overlay's module url, sha256, plugin configuration and fail strategy; the routes
  reach the pools' shadow Services. Controls: a selector or targetRef naming another workload leaves it
  out; the ordering check refuses a chain with ext_proc first.
- A Gateway API gateway's Deployment as Istio's gateway deployment controller renders it (the
  kube-gateway template from the same module): the proxy starts with toolfit's stats bootstrap
  (ISTIO_BOOTSTRAP_OVERRIDE in the mounted toolfit-bootstrap, merged in from the Gateway's parametersRef
  ConfigMap) and exports toolfit's counters. Control: the bootstrapOverride annotation alone, which
  that template ignores, gives no override, and the check says so.
- Run in Envoy: deploy/gateway's generated gateway listener with its route configuration, Istio-only
  filters (listed) swapped for pass-through ones and the clusters pointed at a local upstream, in Envoy
  1.40 with dist/toolfit.wasm: the README's request reaches each host's upstream rewritten by the
  profile its HTTP_ROUTE patch names. inference-gateway's (and -traffic-extension's) listener, routes
  and pool clusters with the real Endpoint Picker (epp.py) started from the overlay's llama-epp
  Deployment and two pods: the EPP schedules the request from toolfit's rewrite and the pod it names,
  alone, receives it (as JSON: the EPP re-encodes). Control: without the overlay's EPP DestinationRules
  the gateway speaks cleartext to the EPP's TLS port and the EPP schedules nothing.

Prints one line per check and 'N passed, M failed'."""
import copy, json, os, re, subprocess, tempfile, time

import yaml

import deploy
from harness import gotools, paths, runner
from harness.kubeapi import ready_pod
from harness.paths import ROOT
from harness.verdict import check, run

GW_LABEL = "gateway.networking.k8s.io/gateway-name"
# overlay -> (proxy type, namespace, the proxy's pod labels)
CASES = {
    "envoyfilter": ("sidecar", "llm", {"app": "llama-server"}),
    "mcp": ("sidecar", "mcp", {"app": "mcp-server"}),
    "wasmplugin": ("sidecar", "llm", {"app": "llama-server"}),
    "gateway": ("router", "llm", {"istio": "llm-gateway"}),
    "mcp-ingress": ("router", "mcp", {"istio": "mcp-gateway"}),
    "inference-gateway": ("router", "llm", {GW_LABEL: "inference-gateway"}),
    "inference-gateway-traffic-extension": ("router", "llm", {GW_LABEL: "inference-gateway"}),
}
ISTIO_GROUPS = ("networking.istio.io", "extensions.istio.io", "security.istio.io", "telemetry.istio.io")
KUBE_GROUPS = ("gateway.networking.k8s.io", "inference.networking.k8s.io")
# Envoy filters Istio's proxy has and upstream Envoy has not: swapped for a pass-through filter to run
ISTIO_ONLY = ("istio.metadata_exchange", "istio.alpn", "istio.stats")
ROUTER = "envoy.filters.http.router"
EXT_PROC = "envoy.filters.http.ext_proc"


def generator():
    return gotools.build(os.path.join("tests", "istio"), "istiogen", test=True)


def cluster_world(objs, ns, proxy_labels):
    """(Istio objects, Kubernetes objects, proxy id, proxy ip): the overlay's objects split as istiod reads
    them, with what the cluster adds beside them (see the module's docstring)."""
    objs = copy.deepcopy(objs)
    for o in objs:
        o["metadata"].setdefault("namespace", ns)
    istio = [o for o in objs if o["apiVersion"].startswith(ISTIO_GROUPS)]
    kube = [o for o in objs if o["kind"] == "Service" or o["apiVersion"].startswith(KUBE_GROUPS)]
    workloads = [(o["metadata"]["name"], o["metadata"]["namespace"], o["spec"]["template"]) for o in objs if o["kind"] == "Deployment"]
    for g in [o for o in objs if o["kind"] == "Gateway" and o["apiVersion"].startswith("gateway.networking.k8s.io")]:
        # what istiod's deployment controller makes for a Gateway of class istio: <name>-istio
        gl = {GW_LABEL: g["metadata"]["name"]}
        ports = [{"name": lst["name"], "port": lst["port"], "targetPort": lst["port"]} for lst in g["spec"]["listeners"]]
        kube.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": g["metadata"]["name"] + "-istio", "namespace": g["metadata"]["namespace"], "labels": gl},
                     "spec": {"selector": gl, "ports": ports}})
        workloads.append((g["metadata"]["name"] + "-istio", g["metadata"]["namespace"],
                          {"metadata": {"labels": gl}, "spec": {"containers": [{"name": "istio-proxy", "ports": [{"containerPort": p["port"]} for p in ports]}]}}))
    pods, proxy = [], None
    for i, (name, pns, tpl) in enumerate(workloads):
        labels = tpl["metadata"].get("labels", {})
        ip = f"10.244.0.{10 + i}"
        pods.append(ready_pod(f"{name}-0", pns, labels, ip, [{"name": c["name"], "image": "x", "ports": c.get("ports", [])} for c in tpl["spec"]["containers"]]))
        if proxy is None and pns == ns and all(labels.get(k) == v for k, v in proxy_labels.items()):
            proxy = (f"{name}-0.{pns}", ip)
    kube += pods
    for svc in [o for o in kube if o["kind"] == "Service"]:
        sel = svc["spec"].get("selector") or {}
        mine = [p for p in pods if sel and p["metadata"]["namespace"] == svc["metadata"]["namespace"] and all(p["metadata"]["labels"].get(k) == v for k, v in sel.items())]
        if not mine:
            continue

        def target(sp, pod=mine[0]):
            tp = sp.get("targetPort", sp["port"])
            return tp if isinstance(tp, int) else next((cp["containerPort"] for c in pod["spec"]["containers"] for cp in c.get("ports", []) if cp.get("name") == tp), None)
        kube.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                     "metadata": {"name": svc["metadata"]["name"] + "-1", "namespace": svc["metadata"]["namespace"], "labels": {"kubernetes.io/service-name": svc["metadata"]["name"]}},
                     "addressType": "IPv4",
                     "ports": [{"name": sp.get("name", ""), "port": target(sp), "protocol": "TCP", **({"appProtocol": sp["appProtocol"]} if "appProtocol" in sp else {})} for sp in svc["spec"]["ports"]],
                     "endpoints": [{"addresses": [p["status"]["podIP"]], "conditions": {"ready": True},
                                    "targetRef": {"kind": "Pod", "name": p["metadata"]["name"], "namespace": p["metadata"]["namespace"]}} for p in mine]})
    for r in [o for o in kube if o["kind"] == "HTTPRoute"]:
        r["status"] = {"parents": [{"parentRef": pr, "controllerName": "istio.io/gateway-controller", "conditions": [
            {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]} for pr in r["spec"]["parentRefs"]]}
    return istio, kube, proxy


def generate(gen, objs, ptype, ns, labels):
    """What pilot pushes to the proxy (listeners, routes, clusters, ecds), or None and the generator's output."""
    istio, kube, proxy = cluster_world(objs, ns, labels)
    if proxy is None:
        return None, f"no workload in {ns} has the labels {labels}"
    d = tempfile.mkdtemp(prefix="toolfit-istio-")
    cfg, kobj, out = (os.path.join(d, f) for f in ("istio.yaml", "kube.yaml", "xds.json"))
    yaml.safe_dump_all(istio, open(cfg, "w"))
    open(kobj, "w").write("\n---\n".join(yaml.safe_dump(o) for o in kube))
    pools = sum(o["kind"] == "InferencePool" for o in kube)
    env = dict(os.environ, ISTIO_CONFIG=cfg, KUBE_OBJECTS=kobj, OUT=out, INFERENCE=str(pools) if pools else "",
               PROXY=json.dumps({"type": ptype, "namespace": ns, "labels": labels, "id": proxy[0], "ip": proxy[1]}))
    p = subprocess.run([gen, "-test.run", "^TestXDS$"], env=env, capture_output=True, text=True, cwd=d)
    ok = p.returncode == 0 and os.path.exists(out)
    return (json.load(open(out)) if ok else None), p.stdout[-1200:] + p.stderr[-400:]


def hcms(xds, direction):
    """(listener, chain name, HTTP connection manager) of every HTTP chain in listeners of `direction`."""
    for lst in xds["listeners"]:
        if lst.get("trafficDirection") != direction:
            continue
        for fc in lst.get("filterChains", []):
            for f in fc.get("filters", []):
                tc = f.get("typedConfig", {})
                if "httpFilters" in tc:
                    yield lst, fc.get("name", ""), tc


def names(h):
    return [f["name"] for f in h["httpFilters"]]


def inserted(ef):
    """The HTTP filters an EnvoyFilter inserts before the router, in the order they end up: each
    INSERT_BEFORE the router lands between the ones before it and the router."""
    return [p["patch"]["value"]["name"] for p in ef["spec"]["configPatches"]
            if p["applyTo"] == "HTTP_FILTER" and p["patch"]["operation"] == "INSERT_BEFORE"
            and p["match"].get("listener", {}).get("filterChain", {}).get("filter", {}).get("subFilter", {}).get("name") == ROUTER]


def placed(xds, direction, tail):
    """HTTP chains of `direction` that end with `tail` (the inserted filters, then the router); and all of them."""
    chains = list(hcms(xds, direction))
    return [c for c in chains if names(c[2])[-len(tail):] == tail], chains


def ecds_order(chain, ecds_name):
    """The ECDS filter is in the chain, before the router, and before an InferencePool's ext_proc if any."""
    if ecds_name not in chain or ROUTER not in chain:
        return False
    i = chain.index(ecds_name)
    return i < chain.index(ROUTER) and (EXT_PROC not in chain or i < chain.index(EXT_PROC))


def module(cfg):
    """(url, sha256) of a Wasm filter's code as Istio wrote it: a remote module (oci://, https://) keeps
    both; a file:// one becomes a local filename."""
    code = cfg["vmConfig"]["code"]
    if "remote" in code:
        return code["remote"]["httpUri"]["uri"], code["remote"].get("sha256")
    return "file://" + code.get("local", {}).get("filename", ""), None


def envoyfilter_checks(gen, overlay, objs, ptype, ns, labels, xds):
    ef = next(o for o in objs if o["kind"] == "EnvoyFilter")
    direction, other = ("INBOUND", "OUTBOUND") if ptype == "sidecar" else ("OUTBOUND", "INBOUND")
    tail = inserted(ef) + [ROUTER]
    good, chains = placed(xds, direction, tail)
    where = f"{labels}'s {'sidecar' if ptype == 'sidecar' else 'gateway'}"
    check(f"deploy/{overlay}: {', '.join(tail[:-1])} directly before the router in every {direction.lower()} HTTP chain ({len(chains)}) of {where}",
          "toolfit" in tail and chains and len(good) == len(chains), [(c[1], names(c[2])) for c in chains if c not in good][:3])
    want = next(p["patch"]["value"] for p in ef["spec"]["configPatches"] if p["applyTo"] == "HTTP_FILTER" and p["patch"]["value"]["name"] == "toolfit")
    wc = want["typed_config"]["config"]
    for _, _, h in good[:1]:
        got = next(f for f in h["httpFilters"] if f["name"] == "toolfit")["typedConfig"]["config"]
        check(f"deploy/{overlay}: with the overlay's module path, plugin configuration and failure policy ({wc.get('failure_policy')}, reloads {wc.get('reload_config')})",
              got["vmConfig"]["code"]["local"]["filename"] == wc["vm_config"]["code"]["local"]["filename"]
              and got["configuration"]["value"] == wc["configuration"]["value"] and got.get("failOpen", False) == wc.get("fail_open", False)
              and got.get("failurePolicy") == wc.get("failure_policy") and ("reloadConfig" in got) == ("reload_config" in wc), got)
    merge = next((p["patch"]["value"] for p in ef["spec"]["configPatches"] if p["applyTo"] == "LISTENER"), None)
    if merge:
        mine = {id(lst): lst for lst, _, _ in hcms(xds, direction)}.values()
        check(f"deploy/{overlay}: the {direction.lower()} listeners' buffer limit is the patch's {merge['per_connection_buffer_limit_bytes']}",
              mine and all(lst.get("perConnectionBufferLimitBytes") == merge["per_connection_buffer_limit_bytes"] for lst in mine),
              [lst.get("perConnectionBufferLimitBytes") for lst in mine])
    routes = {r.get("name"): r for rc in xds["routes"] for vh in rc.get("virtualHosts", []) for r in vh.get("routes", [])}
    for p in [p for p in ef["spec"]["configPatches"] if p["applyTo"] == "HTTP_ROUTE"]:
        name = p["match"]["routeConfiguration"]["vhost"]["route"]["name"]
        meta = p["patch"]["value"]["metadata"]["filter_metadata"]
        got = routes.get(name, {}).get("metadata", {}).get("filterMetadata", {})
        check(f"deploy/{overlay}: route {name} carries its HTTP_ROUTE patch's metadata {meta}", all(got.get(k) == v for k, v in meta.items()), (sorted(routes), got))
    out = [c[1] for c in hcms(xds, other) if "toolfit" in names(c[2])]
    check(f"deploy/{overlay}: no {other.lower()} chain runs toolfit", not out, out)
    # controls: a patch that matches nothing of this proxy's chains leaves toolfit out
    moved = "SIDECAR_OUTBOUND" if ptype == "sidecar" else "SIDECAR_INBOUND"
    for what, change in ((f"context {moved}", lambda e: [p["match"].__setitem__("context", moved) for p in e["spec"]["configPatches"]]),
                         ("a workloadSelector naming another workload", lambda e: e["spec"]["workloadSelector"]["labels"].update({k: "someone-else" for k in labels}))):
        wrong = copy.deepcopy(objs)
        change(next(o for o in wrong if o["kind"] == "EnvoyFilter"))
        wx, said = generate(gen, wrong, ptype, ns, labels)
        g, ch = placed(wx or {"listeners": []}, direction, tail)
        check(f"deploy/{overlay}: control: its EnvoyFilter with {what} leaves toolfit out of those chains, and the check says so",
              wx is not None and ch and not g, said if wx is None else [names(c[2]) for c in ch][:2])
        if what.startswith("context") and ptype == "sidecar":
            # and the no-outbound check can say no: with the outbound context toolfit is in outbound chains
            check(f"deploy/{overlay}: control: with the outbound context toolfit is in outbound chains, which the no-outbound check refuses",
                  any("toolfit" in names(c[2]) for c in hcms(wx or {"listeners": []}, "OUTBOUND")), [c[1] for c in hcms(wx or {"listeners": []}, "OUTBOUND")][:4])


def extension_checks(gen, overlay, objs, ptype, ns, labels, xds):
    ext = next(o for o in objs if o["kind"] in ("WasmPlugin", "TrafficExtension"))
    spec = ext["spec"]
    wasm = spec.get("wasm", spec)  # a TrafficExtension keeps the module fields under wasm:
    name = f"extensions.istio.io/trafficextension/{ns}.{ext['metadata']['name']}" + ("~istio-translated-wasmplugin" if ext["kind"] == "WasmPlugin" else "")
    direction = "INBOUND" if ptype == "sidecar" else "OUTBOUND"
    chains = list(hcms(xds, direction))
    pools = any(o["kind"] == "InferencePool" for o in objs)
    good = [c for c in chains if ecds_order(names(c[2]), name) and (not pools or EXT_PROC in names(c[2]))]
    check(f"deploy/{overlay}: Istio turns its {ext['kind']} into {name}, in every {direction.lower()} HTTP chain ({len(chains)}) before the router"
          + (" and after it the InferencePools' ext_proc (the EPP scores the rewritten body)" if pools else ""),
          chains and len(good) == len(chains), [(c[1], names(c[2])) for c in chains if c not in good][:3])
    cfg = next((e["typedConfig"]["config"] for e in xds["ecds"] if e["name"] == name), None)
    check(f"deploy/{overlay}: its extension configuration (ECDS) is the overlay's module ({wasm['url']}), plugin configuration and fail strategy",
          cfg is not None and module(cfg) == (wasm["url"], wasm.get("sha256")) and json.loads(cfg["configuration"]["value"]) == wasm["pluginConfig"] and cfg.get("failurePolicy") == wasm.get("failStrategy"), cfg)
    if pools:
        dests = sorted({r["route"].get("cluster", "") for rc in xds["routes"] for vh in rc.get("virtualHosts", []) for r in vh.get("routes", []) if "route" in r})
        want = sorted(f"outbound|54321||{o['metadata']['name']}-ip-" for o in objs if o["kind"] == "InferencePool")
        check(f"deploy/{overlay}: every route reaches an InferencePool's shadow Service (Istio found the pools)",
              len(dests) == len(want) and all(d.startswith(w) for d, w in zip(dests, want)), dests)
        check("control: the ordering check refuses a chain with the ext_proc before toolfit",
              not ecds_order([EXT_PROC, name, ROUTER], name) and ecds_order([name, EXT_PROC, ROUTER], name))
    # control: attached to another workload / Gateway, it is absent
    wrong = copy.deepcopy(objs)
    w = next(o for o in wrong if o["kind"] == ext["kind"])
    if "selector" in w["spec"]:
        w["spec"]["selector"]["matchLabels"] = {k: "someone-else" for k in w["spec"]["selector"]["matchLabels"]}
    for ref in w["spec"].get("targetRefs", []):
        ref["name"] = "someone-else"
    wx, said = generate(gen, wrong, ptype, ns, labels)
    ch = list(hcms(wx or {"listeners": []}, direction))
    check(f"deploy/{overlay}: control: its {ext['kind']} aimed at another workload is absent from every chain, and the check says so",
          wx is not None and ch and not any(ecds_order(names(c[2]), name) for c in ch), said if wx is None else [names(c[2]) for c in ch][:2])


def istio_src():
    version = next(line.split()[1] for line in open(os.path.join(ROOT, "tests", "istio", "go.mod")) if line.strip().startswith("istio.io/istio "))
    return gotools.module_dir("istio.io/istio", version)


def rendered_gateway(gen, objs, ns):
    """The objects Istio's gateway deployment controller applies for the overlay's Gateway API Gateways
    (with the ConfigMaps a parametersRef may name), or None and the generator's output."""
    kube = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "istio"}, "spec": {"controllerName": "istio.io/gateway-controller"}}]
    for o in copy.deepcopy(objs):
        if (o["kind"] == "Gateway" and o["apiVersion"].startswith("gateway.networking.k8s.io")) or o["kind"] == "ConfigMap":
            o["metadata"].setdefault("namespace", ns)
            kube.append(o)
    d = tempfile.mkdtemp(prefix="toolfit-istio-gw-")
    kobj, out = os.path.join(d, "kube.yaml"), os.path.join(d, "applied.yaml")
    open(kobj, "w").write("\n---\n".join(yaml.safe_dump(o) for o in kube))
    p = subprocess.run([gen, "-test.run", "^TestGatewayDeployment$"], env=dict(os.environ, KUBE_OBJECTS=kobj, OUT=out, ISTIO_SRC=istio_src()),
                       capture_output=True, text=True, cwd=d)
    ok = p.returncode == 0 and os.path.exists(out)
    return ([o for o in yaml.safe_load_all(open(out)) if o] if ok else None), p.stdout[-1200:] + p.stderr[-400:]


def bootstrap_mounted(applied, objs):
    """Whether the gateway Deployment Istio rendered starts pilot-agent with toolfit's bootstrap: the
    ISTIO_BOOTSTRAP_OVERRIDE file lies in a mounted volume of the toolfit-bootstrap ConfigMap, which has
    that key. Returns (yes, what was found)."""
    dep = next((o for o in applied or [] if o["kind"] == "Deployment"), None)
    if dep is None:
        return False, "no Deployment"
    pod = dep["spec"]["template"]["spec"]
    proxy = next((c for c in pod["containers"] if c["name"] == "istio-proxy"), {})
    path = next((e.get("value", "") for e in proxy.get("env", []) if e["name"] == "ISTIO_BOOTSTRAP_OVERRIDE"), "")
    vols = {v["name"]: v.get("configMap", {}).get("name") for v in pod.get("volumes", [])}
    mount = next((m for m in proxy.get("volumeMounts", []) if path.startswith(m["mountPath"].rstrip("/") + "/")), None)
    cm = next((o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "toolfit-bootstrap"), {})
    key = path[len(mount["mountPath"].rstrip("/")) + 1:] if mount else ""
    return bool(mount and vols.get(mount["name"]) == "toolfit-bootstrap" and key in cm.get("data", {})), (path, mount, vols)


def gateway_deployment_checks(gen, overlay, objs, ns):
    applied, said = rendered_gateway(gen, objs, ns)
    check(f"deploy/{overlay}: Istio's gateway deployment controller (kube-gateway template) renders the Gateway's Deployment", applied is not None, said)
    if applied is None:
        return
    yes, found = bootstrap_mounted(applied, objs)
    check(f"deploy/{overlay}: that Deployment starts the proxy with toolfit's stats bootstrap (ISTIO_BOOTSTRAP_OVERRIDE in the mounted toolfit-bootstrap)", yes, found)
    dep = next(o for o in applied if o["kind"] == "Deployment")
    pc = yaml.safe_load(dep["spec"]["template"]["metadata"].get("annotations", {}).get("proxy.istio.io/config", "") or "{}")
    check(f"deploy/{overlay}: and with proxy.istio.io/config exporting toolfit's counters (pilot-agent reads it from the pod's annotations)",
          "wasmcustom.toolfit" in pc.get("proxyStatsMatcher", {}).get("inclusionPrefixes", []), pc)
    # control: the annotation alone (the overlay's earlier form) is not honoured by this template
    old = copy.deepcopy(objs)
    g = next(o for o in old if o["kind"] == "Gateway")
    g["spec"]["infrastructure"].pop("parametersRef")
    g["spec"]["infrastructure"]["annotations"]["sidecar.istio.io/bootstrapOverride"] = "toolfit-bootstrap"
    applied, said = rendered_gateway(gen, old, ns)
    no, found = bootstrap_mounted(applied, objs)
    check(f"deploy/{overlay}: control: with sidecar.istio.io/bootstrapOverride alone (no parametersRef) Istio's Deployment has no bootstrap override, and the check says so",
          applied is not None and not no, said if applied is None else found)


def static_listener(xds, port, admin, where, inbound_port=None):
    """A listener Istio generated, with its route configuration inline, as a static Envoy bootstrap on
    `port`: the gateway's listener, or with `inbound_port` the sidecar's inbound listener cut to that
    port's cleartext filter chain (matched on `port` here: no iptables redirect, so no original
    destination either). Istio-only filters swapped for pass-through ones or left out, an ECDS filter
    given its extension configuration with the module from dist/ (what pilot-agent does once it has
    fetched it), the module path of an EnvoyFilter's toolfit pointed at dist/; every cluster the routes
    name (and their per-route ext_proc services) kept as Istio made it but with static endpoints
    `where(cluster name)` (a list of (host, port)), without the mesh's own mTLS and upstream filters (a
    DestinationRule's TLS stays). Returns (bootstrap, what was swapped)."""
    swapped, clusters = set(), set()
    if inbound_port is None:
        lst = copy.deepcopy(next(lst for lst, _, _ in hcms(xds, "OUTBOUND")))
    else:
        lst = copy.deepcopy(next(lst for lst in xds["listeners"] if lst["name"] == "virtualInbound"))
        lst["filterChains"] = [fc for fc in lst["filterChains"] if fc.get("filterChainMatch", {}).get("destinationPort") == inbound_port
                               and fc["filterChainMatch"].get("transportProtocol") == "raw_buffer"]
        for fc in lst["filterChains"]:
            fc["filterChainMatch"]["destinationPort"] = port
        swapped |= {f"listener filter {f['name']}" for f in lst.get("listenerFilters", []) if f["name"].endswith("original_dst")}
        lst["listenerFilters"] = [f for f in lst.get("listenerFilters", []) if not f["name"].endswith("original_dst")]
    lst["address"] = {"socketAddress": {"address": "127.0.0.1", "portValue": port}}
    wasm = os.path.join(ROOT, "dist", "toolfit.wasm")
    for fc in lst["filterChains"]:
        swapped |= {f"network filter {f['name']}" for f in fc["filters"] if f["name"] in ISTIO_ONLY}
        fc["filters"] = [f for f in fc["filters"] if f["name"] not in ISTIO_ONLY]
        for f in fc["filters"]:
            h = f.get("typedConfig", {})
            if "httpFilters" not in h:
                continue
            if "rds" in h:
                rds = h.pop("rds")
                h["routeConfig"] = next(copy.deepcopy(r) for r in xds["routes"] if r["name"] == rds["routeConfigName"])
            for r in (r for vh in h["routeConfig"]["virtualHosts"] for r in vh.get("routes", []) if "route" in r):
                clusters.add(r["route"]["cluster"])
                for per in r.get("typedPerFilterConfig", {}).values():
                    grpc = per.get("overrides", {}).get("grpcService", {}).get("envoyGrpc", {})
                    if grpc.get("clusterName"):
                        clusters.add(grpc["clusterName"])
            for i, hf in enumerate(h["httpFilters"]):
                if hf["name"] in ISTIO_ONLY:
                    swapped.add(hf["name"])
                    h["httpFilters"][i] = {"name": hf["name"], "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation", "mutations": {}}}
                elif "configDiscovery" in hf:
                    tc = copy.deepcopy(next(e["typedConfig"] for e in xds["ecds"] if e["name"] == hf["name"]))
                    tc["config"]["vmConfig"]["code"] = {"local": {"filename": wasm}}
                    h["httpFilters"][i] = {"name": hf["name"], "typedConfig": tc}
                    swapped.add(f"ECDS {hf['name']} (module from dist/)")
                elif hf["name"] == "toolfit":
                    hf["typedConfig"]["config"]["vmConfig"]["code"]["local"]["filename"] = wasm
    static = []
    for c in [copy.deepcopy(c) for c in xds["clusters"] if c["name"] in clusters]:
        c.pop("edsClusterConfig", None)
        # the mesh's own mTLS (SDS from istio-agent) and upstream metadata exchange are Istio's; a
        # DestinationRule's TLS (no SDS) stays as generated
        for k in ("transportSocketMatches", "filters") + (("transportSocket",) if "sdsConfig" in json.dumps(c.get("transportSocket", {})) else ()):
            if c.pop(k, None) is not None:
                swapped.add(f"cluster {k}")
        c["type"] = "STATIC"
        if c.get("lbPolicy") == "CLUSTER_PROVIDED" and "loadBalancingPolicy" not in c:
            c.pop("lbPolicy")  # an inbound cluster's original destination, here a static one
        c["loadAssignment"] = {"clusterName": c["name"], "endpoints": [{"lbEndpoints": [
            {"endpoint": {"address": {"socketAddress": {"address": host, "portValue": p}}}} for host, p in where(c["name"])]}]}
        static.append(c)
    return {"admin": {"address": {"socketAddress": {"address": "127.0.0.1", "portValue": admin}}},
            "staticResources": {"listeners": [lst], "clusters": static}}, sorted(swapped)


def envoy_for(xds, where, what, inbound_port=None, bootstrap=None):
    """Envoy 1.40 running static_listener's bootstrap (with `bootstrap` merged in: what pilot-agent merges
    from a bootstrap override), checked to start; returns it (stop it when done)."""
    runner.use_venv_envoy()
    listen, admin = runner.free_port(), runner.free_port()
    cfg, swapped = static_listener(xds, listen, admin, where, inbound_port)
    if bootstrap:
        deploy.deep_merge(cfg, bootstrap)
    e = deploy.BootstrapEnvoy(cfg, listen, admin)
    check(f"{what} (swapped: {', '.join(swapped) or 'none'})", e.ready, e.logs()[-1500:])
    return e


def readme_body():
    return paths.readme_request()


def run_inference_gateway(overlay, xds, objs, control=None):
    """inference-gateway's generated listener in Envoy with the real EPP (tests/envoy/epp.py) behind the
    llama pool's ext_proc and two pods: the EPP reads the body toolfit rewrote and names a pod, which
    gets it. `control`: what Istio generates without the overlay's EPP DestinationRules, run the same
    way: the gateway speaks cleartext to the EPP's TLS port and the EPP schedules nothing."""
    import epp as gie
    port = runner.free_port()
    pods = [("127.0.0.2", port), ("127.0.0.3", port)]
    recs = {ip: runner.echo_upstream.serve(p, host=ip)[1] for ip, p in pods}
    picker = gie.Epp(objs, "llama-epp", pods)
    check(f"deploy/{overlay}: the Endpoint Picker ({gie.PACKAGE}, tests/epp/go.mod) runs from the llama-epp Deployment's args and plugins, "
          f"its pool and {len(pods)} pods read from a Kubernetes API", picker.ready, (picker.build_error or picker.logs())[-1500:])
    if not picker.ready:
        picker.stop()
        return

    def where(name):
        return [("127.0.0.1", picker.port)] if "-epp." in name else pods
    e = envoy_for(xds, where, f"deploy/{overlay}: Envoy 1.40 runs the gateway listener, routes and pool clusters Istio generated, toolfit and the EPP's ext_proc in Istio's order")
    try:
        if not e.ready:
            return
        body = readme_body()
        ext = next(o for o in objs if o["kind"] in ("WasmPlugin", "TrafficExtension"))
        want = runner.cli(body, "auto", ext["spec"].get("wasm", ext["spec"])["pluginConfig"]["profile"])
        host = next(h for o in objs if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "llama" for h in o["spec"]["hostnames"])
        mark = len(picker.logs())
        status, _, _ = e.request("POST", "/v1/chat/completions", body, {"host": host})
        # (the EPP's metrics scrapes GET each pod's /metrics; the request is the one POST)
        got = {ip: posts[-1] for ip, r in recs.items() for posts in [[x for x in r if x["method"] == "POST"]] if posts}
        said = picker.logs()[mark:]
        picked = re.findall(r'Request handled.*?"endpoint": "([\d.]+):\d+"', said)
        check(f"deploy/{overlay}: {host}: the EPP schedules the request (its log: the LLM request assembled from the body, a pod picked)",
              status == 200 and "LLM request assembled" in said and len(picked) == 1, f"status {status} {said[-800:]} {e.logs()[-1500:]} {picker.logs()[-1500:]}")
        sent = got[picked[0]].get("body") if picked and list(got) == picked else None
        # GIE's EPP decodes the body and sends its own encoding on (keys sorted, no spaces): the pod
        # gets toolfit's rewrite as the same JSON, not the same bytes
        check(f"deploy/{overlay}: the pod the EPP named ({picked[0] if picked else None}), and only it, receives the JSON toolfit rewrote (re-encoded by the EPP)",
              sent is not None and json.loads(sent) == json.loads(want) != json.loads(body),
              f"pods that got it: {sorted(got)} {[(g.get('body') or b'')[:300] for g in got.values()]} want {want[:300]}")
        if overlay == "inference-gateway":
            # the control must exist: an Istio that failed to generate it would otherwise skip it
            check(f"deploy/{overlay}: control: Istio generated the listener without epp-tls.yaml", control is not None)
        if control is not None:
            e.stop()
            e = envoy_for(control, where, f"deploy/{overlay}: control: Envoy runs what Istio generates without epp-tls.yaml")
            mark = len(picker.logs())
            status, _, _ = e.request("POST", "/v1/chat/completions", body, {"host": host}) if e.ready else (None, None, None)
            said = picker.logs()[mark:]
            # the EPP's gRPC server (its log at info, epp.py) says why: the gateway's cleartext HTTP/2
            # preface is not a TLS handshake
            tls = re.search(r"ServerHandshake\(.*?first record does not look like a TLS handshake", said)
            check(f"deploy/{overlay}: control: without epp-tls.yaml's DestinationRules Istio's EPP cluster is cleartext: the EPP refuses the TLS handshake, schedules nothing, and the check says so",
                  e.ready and tls is not None and "Request handled" not in said, f"status {status} {said[-600:]}")
    finally:
        e.stop()
        picker.stop()


def run_sidecar(overlay, xds, objs, labels):
    """The sidecar's inbound listener Istio generated for the workload's port, in Envoy with toolfit:
    the README's request reaches the model server as toolfit's engine makes it (deploy/envoyfilter,
    deploy/wasmplugin), or an MCP client's tools/list is rewritten for it (deploy/mcp)."""
    app_port = next(int(fc["filterChainMatch"]["destinationPort"]) for lst in xds["listeners"] if lst["name"] == "virtualInbound"
                    for fc in lst["filterChains"] if "destinationPort" in fc.get("filterChainMatch", {}) and fc["filterChainMatch"]["destinationPort"] != 15006)
    mcp = overlay == "mcp"
    if mcp:
        server, up, log = deploy.mcp_server(deploy.MCP_CATALOG)
    else:
        up = runner.free_port()
        _, rec = runner.echo_upstream.serve(up)
    e = envoy_for(xds, lambda name: [("127.0.0.1", up)], f"deploy/{overlay}: Envoy 1.40 runs the inbound listener Istio generated for {labels}'s port {app_port}, with dist/toolfit.wasm",
                  inbound_port=app_port, bootstrap=deploy.bootstrap_override(objs))
    try:
        time.sleep(0.5 if mcp else 0)
        if not e.ready:
            return
        if mcp:
            deploy.mcp_session(f"deploy/{overlay} through Istio's generated inbound listener", e, deploy.MCP_CATALOG, log, {}, "default")
            return
        body = readme_body()
        ext = next((o for o in objs if o["kind"] in ("WasmPlugin", "EnvoyFilter")), None)
        conf = ext["spec"]["pluginConfig"] if ext["kind"] == "WasmPlugin" else json.loads(next(
            p["patch"]["value"]["typed_config"]["config"]["configuration"]["value"] for p in ext["spec"]["configPatches"] if p["patch"].get("value", {}).get("name") == "toolfit"))
        want = runner.cli(body, "auto", conf["profile"])
        status, _, _ = e.request("POST", "/v1/chat/completions", body, {})
        got = runner.last(rec)
        check(f"deploy/{overlay}: the README's request reaches the model server as the {conf['profile']} profile makes it ({conf.get('framing', 'exact')} framing)",
              status == 200 and got.get("body") == want != body and got.get("framing") == ("chunked" if conf.get("framing") == "chunked" else "content-length"),
              f"status {status} framing {got.get('framing')} {e.logs()[-600:]}")
    finally:
        e.stop()
        if mcp:
            server.terminate()


def run_mcp_ingress(xds, objs):
    """deploy/mcp-ingress's generated gateway listener and route in Envoy (with the stats bootstrap the
    gateway pod is given) before an MCP server: tools/list rewritten per MCP client."""
    server, port, log = deploy.mcp_server(deploy.MCP_CATALOG)
    e = envoy_for(xds, lambda name: [("127.0.0.1", port)], "deploy/mcp-ingress: Envoy 1.40 runs the gateway listener and route Istio generated, with dist/toolfit.wasm and the stats bootstrap",
                  bootstrap=deploy.bootstrap_override(objs))
    try:
        time.sleep(0.5)
        if e.ready:
            vs = next(o for o in objs if o["kind"] == "VirtualService")
            deploy.mcp_session("deploy/mcp-ingress through Istio's generated listener", e, deploy.MCP_CATALOG, log, {"host": vs["spec"]["hosts"][0]}, vs["spec"]["http"][0]["name"])
    finally:
        e.stop()
        server.terminate()


def run_gateway(xds, objs):
    """deploy/gateway's generated listener in Envoy: each host's request rewritten by its route's profile."""
    up = runner.free_port()
    _, rec = runner.echo_upstream.serve(up)
    e = envoy_for(xds, lambda name: [("127.0.0.1", up)], "deploy/gateway: Envoy 1.40 runs the gateway listener and routes Istio generated, with dist/toolfit.wasm")
    try:
        if not e.ready:
            return
        body = readme_body()
        ef = next(o for o in objs if o["kind"] == "EnvoyFilter")
        profiles = {p["match"]["routeConfiguration"]["vhost"]["route"]["name"]: p["patch"]["value"]["metadata"]["filter_metadata"]["toolfit"]["profile"]
                    for p in ef["spec"]["configPatches"] if p["applyTo"] == "HTTP_ROUTE"}
        hosts = {h["name"]: vs["spec"]["hosts"][0] for vs in objs if vs["kind"] == "VirtualService" for h in vs["spec"]["http"]}
        wants = {route: runner.cli(body, "auto", profile) for route, profile in profiles.items()}
        check("deploy/gateway: its routes' profiles rewrite the README's request differently (so the next checks tell them apart)", len(set(wants.values())) == len(wants) > 1)
        for route, want in wants.items():
            status, _, _ = e.request("POST", "/v1/chat/completions", body, {"host": hosts[route]})
            check(f"deploy/gateway: {hosts[route]} (route {route}, profile {profiles[route]}): the request reaches the upstream as that profile makes it",
                  status == 200 and runner.last(rec).get("body") == want, f"status {status} {e.logs()[-600:]}")
    finally:
        e.stop()


def main():
    gen, err = generator()
    check("tests/istio built against istio.io/istio (its test discovery server) from the Go module proxy", gen is not None, err)
    if gen is None:
        return
    for overlay, (ptype, ns, labels) in CASES.items():
        objs, err = deploy.render(overlay)
        if objs is None:
            check(f"kubectl kustomize deploy/{overlay}", False, err)
            continue
        xds, said = generate(gen, objs, ptype, ns, labels)
        check(f"deploy/{overlay}: Istio generates the {'sidecar' if ptype == 'sidecar' else 'gateway'}'s configuration from the overlay", xds is not None, said)
        if xds is None:
            continue
        if any(o["kind"] == "EnvoyFilter" for o in objs):
            envoyfilter_checks(gen, overlay, objs, ptype, ns, labels, xds)
        else:
            extension_checks(gen, overlay, objs, ptype, ns, labels, xds)
        if overlay == "gateway":
            run_gateway(xds, objs)
        if overlay == "mcp-ingress":
            run_mcp_ingress(xds, objs)
        if ptype == "sidecar":
            run_sidecar(overlay, xds, objs, labels)
        if overlay.startswith("inference-gateway"):
            control = None
            if overlay == "inference-gateway":
                control, said = generate(gen, [o for o in objs if o["kind"] != "DestinationRule"], ptype, ns, labels)
            run_inference_gateway(overlay, xds, objs, control)
        if any(o["kind"] == "Gateway" and o["apiVersion"].startswith("gateway.networking.k8s.io") for o in objs):
            gateway_deployment_checks(gen, overlay, objs, ns)


if __name__ == "__main__":
    run("istio", main)
