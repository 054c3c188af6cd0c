#!/usr/bin/env python3
"""deploy/'s sidecar EnvoyFilters through Istio's own configuration generation: tests/istio/gen_test.go,
built against istio.io/istio at a pinned commit from the Go module proxy, runs pilot's listener builder
(pilot/pkg/networking/core) for a sidecar in front of the overlay's workload with the overlay's Istio
objects, and writes the listeners pilot would push. Checked here:

- toolfit (and the gzip decompressor before it) sits directly before the router in every inbound HTTP
  filter chain of the workload's sidecar, with the module path and plugin configuration the overlay wrote;
- the LISTENER patch raised the inbound listener's buffer limit above max_body_bytes;
- no outbound chain has it;
- controls: the same EnvoyFilter with a SIDECAR_OUTBOUND context, or a workloadSelector naming another
  app, leaves toolfit out, and the check says so.

Prints one line per check and 'N passed, M failed'."""
import copy, hashlib, json, os, subprocess, tempfile

import yaml

import deploy
from harness.paths import ROOT
from harness.verdict import check, summary

GO = os.path.expanduser("~/.cache/toolfit/go")
SRC = os.path.join(ROOT, "tests", "istio")
# overlay -> (namespace, app label, port) of the workload its EnvoyFilter selects
OVERLAYS = {"envoyfilter": ("llm", "llama-server", 8080), "mcp": ("mcp", "mcp-server", 8080)}


def generator():
    key = hashlib.sha256(b"".join(open(os.path.join(SRC, f), "rb").read() for f in ("go.mod", "go.sum", "gen_test.go"))).hexdigest()[:16]
    out = os.path.join(GO, "bin", f"istiogen-{key}.test")
    if not os.path.exists(out):
        env = dict(os.environ, GOMODCACHE=os.path.join(GO, "mod"), GOCACHE=os.path.join(GO, "build"), GOTOOLCHAIN="local", GOFLAGS="-mod=mod -buildvcs=false")
        p = subprocess.run(["go", "test", "-c", "-o", out + ".tmp", "."], cwd=SRC, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr[-800:]
        os.replace(out + ".tmp", out)
    return out, ""


def listeners(gen, objs, ns, app, port):
    d = tempfile.mkdtemp(prefix="toolfit-istio-")
    cfg, out = os.path.join(d, "config.yaml"), os.path.join(d, "listeners.json")
    yaml.safe_dump_all(objs, open(cfg, "w"))
    env = dict(os.environ, ISTIO_CONFIG=cfg, OUT=out, NS=ns, APP=app, PORT=str(port))
    p = subprocess.run([gen, "-test.run", "TestSidecarListeners"], env=env, capture_output=True, text=True, cwd=d)
    return (json.load(open(out)) if p.returncode == 0 and os.path.exists(out) else None), p.stdout[-800:] + p.stderr[-400:]


def http_chains(ls, direction):
    """(listener, chain name, [http filter]) of every HTTP connection manager in listeners of `direction`."""
    for l in ls:
        if l.get("trafficDirection") != direction:
            continue
        for fc in l.get("filterChains", []):
            for f in fc.get("filters", []):
                hf = f.get("typedConfig", {}).get("httpFilters")
                if hf is not None:
                    yield l, fc.get("name", ""), hf


def inserted(ef):
    """The HTTP filters an EnvoyFilter inserts before the router, in the order they end up: each
    INSERT_BEFORE the router lands between the ones before it and the router."""
    return [p["patch"]["value"]["name"] for p in ef["spec"]["configPatches"]
            if p["applyTo"] == "HTTP_FILTER" and p["patch"]["operation"] == "INSERT_BEFORE"
            and p["match"].get("listener", {}).get("filterChain", {}).get("filter", {}).get("subFilter", {}).get("name") == "envoy.filters.http.router"]


def placed(ls, tail):
    """Inbound HTTP chains that end with `tail` (the inserted filters, then the router); and all of them."""
    chains = list(http_chains(ls, "INBOUND"))
    good = [c for c in chains if [h["name"] for h in c[2]][-len(tail):] == tail and "toolfit" in tail]
    return good, chains


def main():
    gen, err = generator()
    check("tests/istio built against istio.io/istio (pilot's listener builder) from the Go module proxy", gen is not None, err)
    if gen is None:
        return
    for overlay, (ns, app, port) in OVERLAYS.items():
        objs, err = deploy.render(overlay)
        if objs is None:
            check(f"kubectl kustomize deploy/{overlay}", False, err)
            continue
        istio = [o for o in objs if o["apiVersion"].startswith(("networking.istio.io", "extensions.istio.io"))]
        ef = next(o for o in istio if o["kind"] == "EnvoyFilter")
        ls, said = listeners(gen, istio, ns, app, port)
        check(f"deploy/{overlay}: Istio generates the sidecar's listeners with its EnvoyFilter", ls is not None, said)
        if ls is None:
            continue
        tail = inserted(ef) + ["envoy.filters.http.router"]
        good, chains = placed(ls, tail)
        check(f"deploy/{overlay}: {', '.join(tail[:-1])} directly before the router in every inbound HTTP chain ({len(chains)}) of {app}'s sidecar",
              chains and len(good) == len(chains), [(c[1], [h['name'] for h in c[2]]) for c in chains if c not in good][:3])
        want = next(p["patch"]["value"] for p in ef["spec"]["configPatches"] if p["applyTo"] == "HTTP_FILTER" and p["patch"]["value"]["name"] == "toolfit")
        wc = want["typed_config"]["config"]
        for _, name, hf in good[:1]:
            got = next(h for h in hf if h["name"] == "toolfit")["typedConfig"]["config"]
            check(f"deploy/{overlay}: with the overlay's module path and plugin configuration",
                  got["vmConfig"]["code"]["local"]["filename"] == wc["vm_config"]["code"]["local"]["filename"]
                  and got["configuration"]["value"] == wc["configuration"]["value"] and got.get("failOpen", False) == wc.get("fail_open", False), got)
        merge = next((p["patch"]["value"] for p in ef["spec"]["configPatches"] if p["applyTo"] == "LISTENER"), None)
        if merge:
            inbound = [l for l in ls if l.get("trafficDirection") == "INBOUND"]
            check(f"deploy/{overlay}: the inbound listener's buffer limit is the patch's {merge['per_connection_buffer_limit_bytes']}",
                  inbound and all(l.get("perConnectionBufferLimitBytes") == merge["per_connection_buffer_limit_bytes"] for l in inbound), [l.get("perConnectionBufferLimitBytes") for l in inbound])
        out = [c for c in http_chains(ls, "OUTBOUND") if any(h["name"] == "toolfit" for h in c[2])]
        check(f"deploy/{overlay}: no outbound chain runs toolfit", not out, [c[1] for c in out])
        # controls: a patch that matches nothing of this sidecar's inbound side leaves toolfit out
        for what, change in (("context SIDECAR_OUTBOUND", lambda e: [p["match"].__setitem__("context", "SIDECAR_OUTBOUND") for p in e["spec"]["configPatches"]]),
                             ("a workloadSelector naming another app", lambda e: e["spec"]["workloadSelector"]["labels"].__setitem__("app", "someone-else"))):
            wrong = copy.deepcopy(istio)
            change(next(o for o in wrong if o["kind"] == "EnvoyFilter"))
            wls, said = listeners(gen, wrong, ns, app, port)
            g, ch = placed(wls or [], tail)
            check(f"deploy/{overlay}: control: its EnvoyFilter with {what} leaves toolfit out of the inbound chains, and the check says so",
                  wls is not None and ch and not g, said if wls is None else [[h['name'] for h in c[2]] for c in ch][:2])
            if what.startswith("context"):
                # and the no-outbound check can say no: with the outbound context toolfit is in outbound chains
                moved = [c for c in http_chains(wls or [], "OUTBOUND") if any(h["name"] == "toolfit" for h in c[2])]
                check(f"deploy/{overlay}: control: with the outbound context toolfit is in outbound chains, which the no-outbound check refuses", bool(moved),
                      [c[1] for c in http_chains(wls or [], "OUTBOUND")][:4])


if __name__ == "__main__":
    main()
    summary("istio")
