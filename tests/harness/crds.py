"""The custom resources deploy/ uses, judged by their published CRDs: the YAML each project ships in its
Go module (downloaded from the Go module proxy at a pinned version into ~/.cache/toolfit/go/mod), as the
Kubernetes API server would take them with strict field validation (`kubectl apply`'s default):

- the structural schema (`openAPIV3Schema`) as JSON Schema, every object with `properties` closed unless
  it says `x-kubernetes-preserve-unknown-fields` (an unknown field is refused, not pruned), int-or-string
  and nullable as Kubernetes reads them;
- the CEL rules (`x-kubernetes-validations`) with cel-python, each on the node it sits on (`self`), after
  the schema's defaults are filled in (as the API server does); a rule
  that needs the object's old state (`oldSelf`) or a Kubernetes-only CEL library cel-python lacks is
  counted as not run, never as passed.

    schemas()                   -> {(apiVersion, kind): (openAPIV3Schema, "module@version path")}
    problems(schema, obj)       -> (list of "path: message", CEL rules run, CEL rules not run)
"""
import copy, glob, os, re

import yaml

from harness.gotools import module_dir

# (module, version, CRD files in it): what the control planes install
SOURCES = [
    # Envoy Gateway's chart: its own CRDs and the Gateway API CRDs it installs (v1.6, experimental channel)
    ("github.com/envoyproxy/gateway", "v1.9.1", ["charts/gateway-helm/charts/crds/crds/generated/*.yaml", "charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml"]),
    ("sigs.k8s.io/gateway-api-inference-extension", "v1.3.0", ["config/crd/bases/inference.networking.k8s.io_inferencepools.yaml"]),
    ("istio.io/api", "v1.32.0", ["kubernetes/customresourcedefinitions.gen.yaml"]),
]


def schemas():
    out = {}
    for module, version, patterns in SOURCES:
        root = module_dir(module, version)
        for pattern in patterns:
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                for doc in yaml.safe_load_all(open(path)):
                    if not doc or doc.get("kind") != "CustomResourceDefinition":
                        continue
                    spec = doc["spec"]
                    for v in spec["versions"]:
                        if v.get("served") and "schema" in v:
                            where = f"{module}@{version} {os.path.relpath(path, root)}"
                            out[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = (v["schema"]["openAPIV3Schema"], where)
    return out


def to_jsonschema(node, root=True):
    """An openAPIV3Schema node as a JSON Schema (draft 4, OpenAPI 3.0's basis), closed as Kubernetes' strict
    field validation is."""
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k.startswith("x-kubernetes-") or k in ("description", "nullable", "format", "default", "example"):
            continue
        if k == "properties":
            out[k] = {name: to_jsonschema(s, False) for name, s in v.items()}
        elif k in ("items", "not") or (k == "additionalProperties" and isinstance(v, dict)):
            out[k] = to_jsonschema(v, False)
        elif k in ("allOf", "anyOf", "oneOf"):
            out[k] = [to_jsonschema(s, False) for s in v]
        else:
            out[k] = v
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out = {"anyOf": [{"type": "integer"}, {"type": "string"}], **{k: v for k, v in out.items() if k != "anyOf"}}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if "properties" in out and "additionalProperties" not in out and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if root:
        # metadata is the API server's own (ObjectMeta), validated apart from the CRD's schema
        props = out.setdefault("properties", {})
        props["metadata"] = {"type": "object"}
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
    return out


_PROGRAMS = {}


def _program(rule):
    import celpy
    if rule not in _PROGRAMS:
        env = celpy.Environment()
        _PROGRAMS[rule] = env.program(env.compile(rule))
    return _PROGRAMS[rule]


def cel(node, value, path="", found=None):
    """Runs the CEL rules of `node` and below on `value`: (errors, run, not run)."""
    import celpy
    found = found if found is not None else [[], 0, 0]
    if not isinstance(node, dict):
        return found
    for r in node.get("x-kubernetes-validations", []):
        if "oldSelf" in r["rule"]:
            found[2] += 1  # a transition rule: nothing to compare with at creation
            continue
        try:
            ok = _program(r["rule"]).evaluate({"self": celpy.json_to_cel(value)})
        except Exception:  # noqa: BLE001  a Kubernetes CEL library cel-python lacks: not run
            found[2] += 1
            continue
        if isinstance(ok, celpy.CELEvalError):
            # a function cel-python lacks (Kubernetes' CEL libraries): not run. Any other error at
            # evaluation (a missing field, a type mismatch) makes Kubernetes refuse the object
            if re.search(r"(?i)no such overload|unknown function|undeclared reference|not found.*function|NameError", str(ok.args)):
                found[2] += 1
            else:
                found[0].append(f"{path or '/'}: the rule errors at evaluation, which Kubernetes refuses: {r['rule']} ({str(ok.args)[:200]})")
                found[1] += 1
            continue
        found[1] += 1
        if not bool(ok):
            found[0].append(f"{path or '/'}: {r.get('message') or r['rule']}")
    props = node.get("properties", {})
    if isinstance(value, dict):
        for k, v in value.items():
            if k in props:
                cel(props[k], v, f"{path}/{k}", found)
            elif isinstance(node.get("additionalProperties"), dict):
                cel(node["additionalProperties"], v, f"{path}/{k}", found)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, v in enumerate(value):
            cel(node["items"], v, f"{path}/{i}", found)
    return found


def defaulted(node, value):
    """`value` with the schema's `default`s filled in where a field is absent, as the API server does before
    it runs the CEL rules."""
    if not isinstance(node, dict):
        return value
    if isinstance(value, dict):
        out = dict(value)
        for k, sub in node.get("properties", {}).items():
            if k not in out and isinstance(sub, dict) and "default" in sub:
                out[k] = copy.deepcopy(sub["default"])
            if k in out:
                out[k] = defaulted(sub, out[k])
        return out
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [defaulted(node["items"], v) for v in value]
    return value


def problems(schema, obj):
    """What the API server would refuse in `obj`: (messages, CEL rules run, CEL rules not run)."""
    import jsonschema
    structural = sorted(jsonschema.Draft4Validator(to_jsonschema(schema)).iter_errors(obj), key=lambda e: list(e.path))
    msgs = [f"/{'/'.join(map(str, e.path))}: {e.message}"[:240] for e in structural]
    errors, run, skipped = cel(schema, defaulted(schema, {k: v for k, v in obj.items() if k != "metadata"}))
    return msgs + errors, run, skipped
