#!/usr/bin/env python3
"""charts/toolfit with Helm built from its module on the Go module proxy (helm.sh/helm/v3, pinned HELM
below): `helm lint`, then `helm template` with each of the chart's ci/ values files, each rendering
checked equal, object for object, to toolfit's objects in the deploy/ overlay of the same name (every
object whose name starts with `toolfit`; the Gateways, routes, pools and model servers are the user's),
and every rendered object validated as the overlays are (published CRDs, structural and CEL; the npm
models for Kubernetes' own kinds). values.schema.json refuses an unknown key and a bad value. Prints
one line per check and 'N passed, M failed'."""
import copy, glob, json, os, re, subprocess

import yaml

import deploy
from harness.paths import ROOT
from harness.verdict import check, run

HELM = "helm.sh/helm/v3/cmd/helm@v3.22.0"
CHART = os.path.join(ROOT, "charts", "toolfit")
# the user's objects a gateway overlay names after toolfit (its GatewayClass)
NOT_OURS = {"GatewayClass"}


def template(helm, values=None, sets=()):
    args = [helm, "template", "toolfit", CHART, "--namespace", "llm"] + (["-f", values] if values else [])
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    return ([d for d in yaml.safe_load_all(p.stdout) if d] if p.returncode == 0 else None), p.stderr


def normal(o):
    """An object as compared: embedded configuration text read as what it says (JSON, YAML), so key order
    and spacing do not count."""
    o = copy.deepcopy(o)
    if o["kind"] == "ConfigMap" and "config.json" in o.get("data", {}):
        o["data"]["config.json"] = json.loads(o["data"]["config.json"])
    if o["kind"] == "ConfigMap" and "toolfit-dashboard.json" in o.get("data", {}):
        o["data"]["toolfit-dashboard.json"] = json.loads(o["data"]["toolfit-dashboard.json"])
    if o["kind"] == "EnvoyFilter":
        for patch in o["spec"].get("configPatches", []):
            conf = patch.get("patch", {}).get("value", {}).get("typed_config", {}).get("config", {}).get("configuration", {})
            if "value" in conf:
                conf["value"] = json.loads(conf["value"])
    if o["kind"] == "EnvoyProxy" and "bootstrap" in o.get("spec", {}):
        o["spec"]["bootstrap"]["value"] = yaml.safe_load(o["spec"]["bootstrap"]["value"])
    return o


def ours(objs):
    return {(o["kind"], o["metadata"]["name"]): normal(o) for o in objs if o["metadata"]["name"].startswith("toolfit") and o["kind"] not in NOT_OURS}


def differences(chart, overlay):
    """What differs between two {(kind, name): object}: missing, extra, and the first differing paths."""
    out = [f"only in the overlay: {k}" for k in sorted(set(overlay) - set(chart))] + [f"only in the chart: {k}" for k in sorted(set(chart) - set(overlay))]

    def walk(a, b, path):
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                walk(a.get(k), b.get(k), f"{path}/{k}")
        elif a != b:
            out.append(f"{path}: chart {json.dumps(a)[:120]} overlay {json.dumps(b)[:120]}")
    for k in sorted(set(chart) & set(overlay)):
        walk(chart[k], overlay[k], f"{k[0]}/{k[1]}")
    return out


def main():
    p = subprocess.run([os.path.join(ROOT, "scripts", "go-tool.sh"), HELM], capture_output=True, text=True)
    helm = p.stdout.strip()
    check(f"helm built from {HELM} (Go module proxy)", p.returncode == 0 and os.access(helm, os.X_OK), p.stderr[-1500:])
    if p.returncode != 0:
        return
    deploy.validator()
    values = sorted(glob.glob(os.path.join(CHART, "ci", "*.yaml")))
    p = subprocess.run([helm, "lint", CHART, "--strict"] + [a for v in values for a in ("-f", v)][:0], capture_output=True, text=True)
    check("helm lint --strict charts/toolfit", p.returncode == 0, (p.stdout + p.stderr)[-800:])
    check("every ci/ values file names a deploy/ overlay", values and all(os.path.isdir(os.path.join(ROOT, "deploy", os.path.basename(v)[:-5])) for v in values), values)
    for v in values:
        name = os.path.basename(v)[:-5]
        p = subprocess.run([helm, "lint", CHART, "--strict", "-f", v], capture_output=True, text=True)
        check(f"helm lint --strict -f ci/{name}.yaml", p.returncode == 0, (p.stdout + p.stderr)[-600:])
        objs, err = template(helm, v)
        check(f"helm template -f ci/{name}.yaml", objs is not None, err[-600:])
        if objs is None:
            continue
        overlay, err = deploy.render(name)
        if overlay is None:
            check(f"kubectl kustomize deploy/{name}", False, err[-300:])
            continue
        diff = differences(ours(objs), ours(overlay))
        check(f"charts/toolfit with ci/{name}.yaml renders deploy/{name}'s {len(ours(overlay))} toolfit objects, object for object", not diff and len(objs) == len(ours(objs)), diff[:8])
        ok, out = deploy.validate(objs)
        check(f"ci/{name}.yaml: its {len(objs)} objects valid against their schemas", ok, "\n".join(l for l in out.splitlines() if not l.startswith("ok")))
    # the typed configuration block names exactly the filter's configuration keys (src/filter/config.rs)
    src = open(os.path.join(ROOT, "src", "filter", "config.rs")).read()
    # the key table: one row `("key", reader)` per key
    m = re.search(r"\nconst CONFIG_KEYS: [^=]*= &\[(.*?)\n\];", src, re.S)
    keys = re.findall(r'^\s*\("(\w+)",', m.group(1), re.M) if m else []
    schema = json.load(open(os.path.join(CHART, "values.schema.json")))
    typed = sorted(schema["properties"]["config"]["properties"])
    check(f"values.schema.json types toolfit's {len(keys)} configuration keys, no more, no fewer (CONFIG_KEYS)", keys and typed == sorted(keys), (typed, keys))
    toolfit = os.path.join(ROOT, "target", "release", "toolfit")
    for v in values:
        cfg = (yaml.safe_load(open(v)) or {}).get("config")
        if cfg is None:
            cfg = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))["config"]
        p = subprocess.run([toolfit, "check-config"], input=json.dumps(cfg), capture_output=True, text=True)
        check(f"ci/{os.path.basename(v)}: its configuration passes the filter's own validation (toolfit check-config)", p.returncode == 0, p.stderr)
    # controls: the comparison says no to one changed setting; the values schema refuses what is not a value
    if values:
        v = values[0]
        name = os.path.basename(v)[:-5]
        objs, _ = template(helm, v, ["config.profile=vllm"])
        overlay, _ = deploy.render(name)
        check(f"control: ci/{name}.yaml with config.profile=vllm no longer equals deploy/{name} (the comparison can say no)",
              objs is not None and overlay is not None and differences(ours(objs), ours(overlay)), "equal")
    # an image pinned by digest runs exactly that image
    digest = "sha256:" + "ab" * 32
    pinned = next((v for v in values if os.path.basename(v).startswith("envoy-gateway-extproc")), None)
    if pinned:
        objs, err = template(helm, pinned, [f"extproc.image.digest={digest}"])
        images = [c["image"] for o in objs or [] if o["kind"] == "Deployment" for c in o["spec"]["template"]["spec"]["containers"]]
        check("extproc.image.digest: the processor's Deployment runs repository:tag@digest", images and all(i.endswith("@" + digest) for i in images), (images, err[-300:]))
    # wasm.failurePolicy: the shipped overlays replace a trapped VM (reload, what the comparison above
    # held them to); open and closed reach Envoy's and Istio's fields, the reload backoff only with reload
    for ci, want in (("envoyfilter", {"open": ("FAIL_OPEN", None), "closed": ("FAIL_CLOSED", None), "reload": ("FAIL_RELOAD", 0.1)}),
                     ("wasmplugin", {"open": ("FAIL_OPEN", None), "closed": ("FAIL_CLOSE", None), "reload": ("FAIL_RELOAD", None)})):
        for policy, (field, backoff) in want.items():
            objs, err = template(helm, os.path.join(CHART, "ci", f"{ci}.yaml"), [f"wasm.failurePolicy={policy}"])
            got = [(p, b) for _, p, b in deploy.wasm_policies(objs or [])]
            check(f"wasm.failurePolicy={policy}: ci/{ci}.yaml renders toolfit's filter with {field}" + (f" and a {backoff * 1000:.0f} ms reload backoff" if backoff else ", no reload backoff"),
                  got == [(field, backoff)], (got, err[-300:]))
    for sets, says in ((["bogus=1"], "bogus"), (["attach=ambient"], "attach"), (["extproc.replicas=two"], "replicas"), (["config.max_body_bytes=-1"], "max_body_bytes"),
                       # a module fetched over the network must be pinned (issue 57)
                       (["wasm.url=oci://registry.example/toolfit:0.1.0"], "sha256"), (["wasm.failurePolicy=restart"], "failurePolicy")):
        objs, err = template(helm, None, sets)
        check(f"values.schema.json refuses --set {sets[0]}, naming it", objs is None and says in err, err[-300:])


if __name__ == "__main__":
    run("charts", main)
