#!/usr/bin/env python3
"""deploy/ through the control planes' own code: what Envoy Gateway generates from the overlays, checked
and run in Envoy with toolfit.

Envoy Gateway's translator is built from its module on the Go module proxy (`egctl`, pinned
EGCTL below, scripts/go-tool.sh) and run on each Envoy Gateway overlay as rendered:

- its own validation (the CRD schemas it embeds) accepts every Gateway API and Envoy Gateway object,
  and refuses a misplaced field (the control);
- every policy and route is Accepted, save what egctl cannot do without a cluster (a Wasm module comes
  through Envoy Gateway's download cache, which only a running Envoy Gateway has);
- in the xDS it generates, toolfit's ext_proc filter is in the gateway listener's HTTP filter chain
  before the router, with the overlay's settings, enabled on every route, and its cluster speaks HTTP/2
  (TLS as the BackendTLSPolicy and EnvoyProxy say, in the mutual-TLS overlay); a policy that targets
  another Gateway leaves it absent, and the check says so (the control);
- that listener, its routes and clusters run in Envoy 1.40 with toolfit-extproc started from the
  overlay's ConfigMap: the README's request reaches the upstream rewritten as the engine says.

Envoy Gateway 1.9.1 has no InferencePool code: an extension server (Envoy AI Gateway's) adds each pool's
EPP. The HTTPRoute rules whose backends are InferencePools are left out of egctl's input and listed.
Prints one line per check and 'N passed, M failed'."""
import base64, copy, json, os, re, subprocess, tempfile

import yaml

import deploy
from harness import runner
from harness.certs import Pki
from harness.delivery import Processor
from harness.paths import ROOT, readme_request
from harness.verdict import check, run

EGCTL = "github.com/envoyproxy/gateway/cmd/egctl@v1.9.1"
OVERLAYS = ("envoy-gateway", "envoy-gateway-extproc", "envoy-gateway-extproc-mtls")
# what egctl's translate reads (the rest of an overlay is the workloads and monitoring)
EG_KINDS = {"GatewayClass", "Gateway", "HTTPRoute", "Service", "EnvoyProxy", "EnvoyExtensionPolicy", "ClientTrafficPolicy",
            "BackendTLSPolicy", "Namespace", "Secret", "ConfigMap"}
LISTENER = "llm/inference-gateway/http"


def egctl_input(objs, extra=()):
    """The overlay's objects egctl reads; InferencePool rules left out (returned); each Service a cluster IP."""
    out, pooled, n = [], [], 10
    for o in copy.deepcopy(objs):
        if o["kind"] not in EG_KINDS:
            continue
        if o["kind"] == "HTTPRoute":
            keep = [r for r in o["spec"]["rules"] if not any(b.get("kind") == "InferencePool" for b in r.get("backendRefs", []))]
            pooled += [o["metadata"]["name"]] * (len(o["spec"]["rules"]) - len(keep))
            o["spec"]["rules"] = keep
            if not keep:
                continue
        if o["kind"] == "Service":
            n += 1
            o["spec"]["clusterIP"] = f"10.96.0.{n}"
        out.append(o)
    return out + list(extra), pooled


def translate(egctl, objs, to="xds"):
    """egctl x translate on these objects: (exit code, parsed output or None, stderr)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(objs, f)
    p = subprocess.run([egctl, "x", "translate", "--from", "gateway-api", "--to", to, "-t", "all", "-o", "json", "-f", f.name, "-n", "llm"],
                       capture_output=True, text=True)
    os.unlink(f.name)
    try:
        return p.returncode, json.loads(p.stdout) if p.returncode == 0 else None, p.stderr
    except ValueError:
        return p.returncode, None, p.stderr


def statuses(out):
    """(kind/name, condition type, status, message) of every condition egctl's status output carries."""
    rows = []
    for key, items in out.items():
        for o in items if isinstance(items, list) else [items]:
            if not isinstance(o, dict) or "status" not in o:
                continue
            name = f"{o.get('kind')}/{o['metadata']['name']}"
            st = o["status"] or {}
            conds = list(st.get("conditions") or [])
            for a in (st.get("ancestors") or []) + (st.get("parents") or []):
                conds += a.get("conditions") or []
            rows += [(name, c["type"], c["status"], c.get("message", "")) for c in conds]
    return rows


def dumps(xds):
    """{'listeners': [...], 'routes': [...], 'clusters': [...], 'endpoints': [...]} of the gateway's xDS."""
    configs = next(iter(xds["xds"].values()))["configs"]
    got = {"listeners": [], "routes": [], "clusters": [], "endpoints": []}
    for c in configs:
        t = c["@type"].rsplit(".", 1)[-1]
        if t == "ListenersConfigDump":
            got["listeners"] += [l["activeState"]["listener"] for l in c.get("dynamicListeners", [])]
        elif t == "RoutesConfigDump":
            got["routes"] += [r["routeConfig"] for r in c.get("dynamicRouteConfigs", [])]
        elif t == "ClustersConfigDump":
            got["clusters"] += [x["cluster"] for x in c.get("dynamicActiveClusters", [])]
        elif t == "EndpointsConfigDump":
            got["endpoints"] += [e["endpointConfig"] for e in c.get("dynamicEndpointConfigs", [])]
    return got


def hcm(listener):
    chains = listener.get("filterChains", []) + ([listener["defaultFilterChain"]] if "defaultFilterChain" in listener else [])
    return next((f["typedConfig"] for fc in chains for f in fc["filters"] if "httpFilters" in f.get("typedConfig", {})), None)


def toolfit_filter(got, policy):
    """(index, filter, names of the chain) of the ext_proc filter Envoy Gateway made for `policy` in the
    gateway listener, or (None, None, names)."""
    listener = next((l for l in got["listeners"] if l["name"] == LISTENER), None)
    h = hcm(listener) if listener else None
    names = [f["name"] for f in (h or {}).get("httpFilters", [])]
    want = f"envoy.filters.http.ext_proc/envoyextensionpolicy/llm/{policy}/"
    i = next((i for i, n in enumerate(names) if n.startswith(want)), None)
    return i, (h["httpFilters"][i] if i is not None else None), names


def static_bootstrap(got, admin, port, addresses, secrets):
    """Envoy Gateway's gateway listener, its route configuration, clusters and endpoints as one static
    bootstrap: the listener on `port`, each endpoint's address swapped by `addresses` (cluster IP ->
    local port), SDS secrets from `secrets` (name -> Secret resource) in place of Envoy Gateway's ADS."""
    bare = lambda r: {k: v for k, v in copy.deepcopy(r).items() if k != "@type"}  # noqa: E731  (a dump's resources are Any)
    listener = bare(next(l for l in got["listeners"] if l["name"] == LISTENER))
    listener["address"] = {"socketAddress": {"address": "127.0.0.1", "portValue": port}}
    h = hcm(listener)
    rds = h.pop("rds")
    h["routeConfig"] = bare(next(r for r in got["routes"] if r["name"] == rds["routeConfigName"]))
    clusters = []
    for c in map(bare, got["clusters"]):
        eps = bare(next(e for e in got["endpoints"] if e["clusterName"] == c["edsClusterConfig"]["serviceName"]))
        for loc in eps["endpoints"]:
            for lb in loc["lbEndpoints"]:
                sa = lb["endpoint"]["address"]["socketAddress"]
                sa["address"], sa["portValue"] = "127.0.0.1", addresses[sa["address"]]
        c.pop("edsClusterConfig")
        c["type"], c["loadAssignment"] = "STATIC", eps
        clusters.append(c)
    text = json.dumps({"listeners": [listener], "clusters": clusters})
    # static secrets are found by name when no sds_config is given
    text = re.sub(r',\s*"sdsConfig":\s*\{"ads":\s*\{\},\s*"resourceApiVersion":\s*"V3"\}', "", text)
    static = json.loads(text)
    static["secrets"] = [dict(v, name=k) for k, v in secrets.items()]
    return {"admin": {"address": {"socketAddress": {"address": "127.0.0.1", "portValue": admin}}}, "staticResources": static}


def main():
    runner.use_venv_envoy()
    p = subprocess.run([os.path.join(ROOT, "scripts", "go-tool.sh"), EGCTL], capture_output=True, text=True)
    egctl = p.stdout.strip()
    check(f"egctl built from {EGCTL} (Go module proxy)", p.returncode == 0 and os.access(egctl, os.X_OK), p.stderr[-1500:])
    if p.returncode != 0:
        return
    up = runner.free_port()
    _, rec = runner.echo_upstream.serve(up)
    body = readme_request()
    want = runner.cli(body)
    for overlay in OVERLAYS:
        objs, _ = deploy.render(overlay)
        check(f"deploy/{overlay} renders", objs is not None)
        if objs is None:
            continue
        extra, pki = [], None
        if overlay.endswith("-mtls"):
            # what the overlay says must exist beside it: the gateway's client certificate Secret and the CA ConfigMap
            pki = Pki(prefix="toolfit-eg-mtls-")
            issuer = pki.ca("issuer")
            client = pki.leaf("gateway", issuer, client=True)
            b64 = lambda f: base64.b64encode(open(f, "rb").read()).decode()  # noqa: E731
            extra = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "toolfit-gateway-client", "namespace": "llm"}, "type": "kubernetes.io/tls",
                      "data": {"tls.crt": b64(client[0]), "tls.key": b64(client[1])}},
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "toolfit-extproc-ca", "namespace": "llm"}, "data": {"ca.crt": open(issuer[0]).read()}}]
        inp, pooled = egctl_input(objs, extra)
        code, out, err = translate(egctl, inp, "gateway-api")
        check(f"deploy/{overlay}: Envoy Gateway's own validation accepts every Gateway API and Envoy Gateway object", code == 0 and out is not None, err[-800:])
        if out is None:
            continue
        if any(o["kind"] == "EnvoyExtensionPolicy" and "wasm" in o["spec"] for o in inp):
            # the control: the module's sha256 beside `image:` instead of in it (as this overlay once had it)
            moved = copy.deepcopy(inp)
            for o in moved:
                for w in o["spec"].get("wasm", []) if o["kind"] == "EnvoyExtensionPolicy" else []:
                    w["code"]["sha256"] = w["code"]["image"].pop("sha256")
            code, _, err = translate(egctl, moved, "gateway-api")
            check(f"deploy/{overlay}: control: Envoy Gateway's validation refuses the module's sha256 beside image:, naming it",
                  code != 0 and "spec.wasm[0].code.sha256" in err, err[-400:])
        bad = [r for r in statuses(out) if r[1] in ("Accepted", "ResolvedRefs", "Programmed") and r[2] != "True"]
        # a Wasm module is fetched through Envoy Gateway's cache, which egctl has not: the only refusal allowed
        wasm_only = [r for r in bad if "wasm cache is not initialized" not in r[3]]
        wasm = any(o["kind"] == "EnvoyExtensionPolicy" and "wasm" in o["spec"] for o in objs)
        check(f"deploy/{overlay}: every policy, route and listener Accepted by Envoy Gateway's translator"
              + (" (the Wasm policy waits only for the module download cache a running Envoy Gateway has)" if wasm else "")
              + (f"; {len(pooled)} InferencePool rules left to the extension server" if pooled else ""),
              not wasm_only and (bool(bad) == wasm), bad)
        if wasm:
            continue
        code, xds, err = translate(egctl, inp)
        check(f"deploy/{overlay}: egctl translates it to xDS", code == 0 and xds is not None, err[-800:])
        if xds is None:
            continue
        got = dumps(xds)
        policy = next(o for o in objs if o["kind"] == "EnvoyExtensionPolicy" and "extProc" in o["spec"])
        spec = policy["spec"]["extProc"][0]
        i, f, names = toolfit_filter(got, policy["metadata"]["name"])
        check(f"deploy/{overlay}: toolfit's ext_proc is in the gateway's HTTP filter chain before the router", i is not None and names[-1] == "envoy.filters.http.router" and i < len(names) - 1, names)
        if f is None:
            continue
        cfg = f["typedConfig"]

        def as_written(cfg):
            mode = cfg.get("processingMode", {})
            return (mode.get("requestBodyMode") == "BUFFERED" and mode.get("responseBodyMode") == "STREAMED" and cfg.get("allowModeOverride") is True
                    and cfg.get("failureModeAllow") is True and cfg.get("messageTimeout") == spec["messageTimeout"] and cfg.get("requestAttributes") == ["xds.route_name"])
        check(f"deploy/{overlay}: with the policy's settings (request body BUFFERED, response STREAMED, mode override, fail open, {spec['messageTimeout']} timeout, xds.route_name)",
              as_written(cfg), cfg)
        # control: the same policy with a streamed request body and another timeout is not "as written"
        other = copy.deepcopy(inp)
        for o in other:
            if o["kind"] == "EnvoyExtensionPolicy":
                o["spec"]["extProc"][0]["processingMode"]["request"]["body"] = "Streamed"
                o["spec"]["extProc"][0]["messageTimeout"] = "5s"
        _, oxds, _ = translate(egctl, other)
        of = toolfit_filter(dumps(oxds), policy["metadata"]["name"])[1] if oxds else None
        check(f"deploy/{overlay}: control: a policy with a streamed body and a 5s timeout fails the settings check", of is not None and not as_written(of["typedConfig"]), of)
        routes = [r for rc in got["routes"] for vh in rc["virtualHosts"] for r in vh["routes"]]
        on = [r["name"] for r in routes if f["name"] in r.get("typedPerFilterConfig", {})]
        check(f"deploy/{overlay}: enabled on every route of the gateway ({len(routes)})", routes and len(on) == len(routes) and (not f.get("disabled") or on), (f.get("disabled"), on))
        cluster = next((c for c in got["clusters"] if c["name"] == cfg["grpcService"]["envoyGrpc"]["clusterName"]), {})
        check(f"deploy/{overlay}: its cluster speaks HTTP/2 to the processor's Service",
              "http2ProtocolOptions" in json.dumps(cluster.get("typedExtensionProtocolOptions", {})), cluster.get("typedExtensionProtocolOptions"))
        secrets = {}
        if pki:
            tls = next((m["transportSocket"]["typedConfig"] for m in cluster.get("transportSocketMatches", [])), {})
            common = tls.get("commonTlsContext", {})
            ca_name = common.get("combinedValidationContext", {}).get("validationContextSdsSecretConfig", {}).get("name")
            cert_names = [s["name"] for s in common.get("tlsCertificateSdsSecretConfigs", [])]
            btp = next(o for o in objs if o["kind"] == "BackendTLSPolicy")
            check(f"deploy/{overlay}: TLS to the processor as the BackendTLSPolicy and EnvoyProxy say (SNI and SAN {btp['spec']['validation']['hostname']}, the CA, the gateway's client certificate)",
                  tls.get("sni") == btp["spec"]["validation"]["hostname"] and ca_name and cert_names == ["llm/toolfit-gateway-client"]
                  and btp["spec"]["validation"]["hostname"] in json.dumps(common.get("combinedValidationContext", {})), tls)
            secrets = {ca_name: {"validationContext": {"trustedCa": {"filename": issuer[0]}}},
                       cert_names[0] if cert_names else "none": {"tlsCertificate": {"certificateChain": {"filename": client[0]}, "privateKey": {"filename": client[1]}}}}
        # the control: a policy aimed at another Gateway is not in the chain
        wrong = copy.deepcopy(inp)
        for o in wrong:
            if o["kind"] == "EnvoyExtensionPolicy":
                o["spec"]["targetRefs"][0]["name"] = "another-gateway"
        _, wxds, _ = translate(egctl, wrong)
        wi = toolfit_filter(dumps(wxds), policy["metadata"]["name"])[0] if wxds else "untranslated"
        check(f"deploy/{overlay}: control: the policy aimed at another Gateway leaves toolfit out of the chain, and the check says so", wi is None, wi)

        # run what Envoy Gateway generated: the processor from the overlay's Deployment and ConfigMap
        cm = next(o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "toolfit-extproc-config")
        dep = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "toolfit-extproc")
        args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
        flags = []
        if pki:
            served = pki.leaf("toolfit-extproc", issuer, dns=[btp["spec"]["validation"]["hostname"]])
            files = {"tls.crt": served[0], "tls.key": served[1], "ca.crt": issuer[0]}
            flags = [re.sub(r"=/etc/toolfit/tls/(.+)$", lambda m: "=" + files[m.group(1)], a) for a in args if a.startswith(("--tls-", "--client-ca"))]
        proc = Processor(json.loads(cm["data"]["config.json"]), flags=flags)
        ips = {s["metadata"]["name"]: s["spec"]["clusterIP"] for s in inp if s["kind"] == "Service"}
        addresses = {ips["llama-server"]: up, ips["toolfit-extproc"]: proc.port}
        port, admin = runner.free_port(), runner.free_port()
        e = deploy.BootstrapEnvoy(static_bootstrap(got, admin, port, addresses, secrets), port, admin)
        try:
            check(f"deploy/{overlay}: Envoy 1.40 runs the listener, routes and clusters Envoy Gateway generated", e.ready and proc.ready, (e.logs()[-1500:], proc.logs()[-300:]))
            if not e.ready:
                continue
            host = next(h for o in objs if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "llama-direct" for h in o["spec"]["hostnames"])
            status, _, _ = e.request("POST", "/v1/chat/completions", body, {"host": host})
            check(f"deploy/{overlay}: deploy/README.md's request through it reaches llama-server rewritten as the engine says" + (" (over mutual TLS)" if pki else ""),
                  status == 200 and runner.last(rec).get("body") == want != body, f"status {status} {e.logs()[-600:]}")
        finally:
            e.stop()
            proc.stop()


if __name__ == "__main__":
    run("controlplanes", main)
