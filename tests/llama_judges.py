#!/usr/bin/env python3
"""Acceptance against llama.cpp's own converter and grammar engine, five versions (2024-08 .. 2026-10).

- Every corpus schema (real MCP servers, issue reports, generator output) rewritten by the llama-cpp
  profile must convert and its grammar must parse on every version: no rejection, no crash.
- JSON-Schema-Test-Suite 2020-12 (outside optional/): the matrix of valid/invalid instances accepted by
  the grammar, for raw llama.cpp and for toolfit's output, in the same run; toolfit must not crash any
  version and must do better than raw llama.cpp on rejections, valid instances refused and silent loss.
Prints the matrices and a closing 'N passed, M failed' line; exit 1 on any failure.
"""
import collections, json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "corpus")
TOOLFIT = os.path.join(ROOT, "target", "release", "toolfit")
VERSIONS = ["0.3.36", "0.3.16", "0.3.9", "0.3.4", "0.2.90"]  # llama.cpp 2026-10, 2025-08, 2025-05, 2024-12, 2024-08
CURRENT = VERSIONS[0]
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok    " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""), flush=True)


def judge(version):
    return subprocess.run([os.path.join(ROOT, "tests", "judge", "build.sh"), version], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]


def run_judge(binary, items):
    """items: list of {"schema", "instances"?}. Returns one result per item; a crash costs one item."""
    lines = [json.dumps(i) for i in items]
    out, i = [], 0
    while i < len(lines):
        p = subprocess.run([binary], input=("\n".join(lines[i:]) + "\n").encode(), capture_output=True, timeout=1800)
        # split on "\n" only: str.splitlines() also splits on U+2028/U+2029, which JSON strings may hold raw
        got = [json.loads(x) for x in p.stdout.decode().split("\n") if x.strip()]
        out += got
        i += len(got)
        if p.returncode != 0 and i < len(lines):
            out.append({"ok": False, "stage": "crash", "error": f"exit {p.returncode}"})
            i += 1
    return out


def toolfit(doc, schema_mode=False):
    args = [TOOLFIT, "normalize", "--profile", "llama-cpp", "--report", "-"]
    if schema_mode:
        args.append("--schema")
    p = subprocess.run(args, input=json.dumps(doc).encode(), capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode()[:500])
    return json.loads(p.stdout), json.loads(p.stderr.decode().strip().split("\n")[-1])


def corpus_schemas():
    """(label, rewritten schema) for every schema in the corpus, rewritten in its own context."""
    out = []
    for kind in ("servers", "issues", "synthetic"):
        for f in sorted(os.listdir(os.path.join(CORPUS, kind))):
            d = json.load(open(os.path.join(CORPUS, kind, f)))
            if kind == "servers":
                tools = d["tools"]
            elif kind == "issues":
                tools = [{"name": f, "inputSchema": d["schema"]}]
            else:
                tools = [{"name": e["name"], "inputSchema": e["schema"],
                          **({"outputSchema": e["outputSchema"]} if e.get("outputSchema") is not None else {})}
                         for e in d["entries"]]
            rewritten, _ = toolfit({"tools": tools})
            for t in rewritten["tools"]:
                for key in ("inputSchema", "outputSchema"):
                    if isinstance(t.get(key), (dict, bool)):
                        out.append((f"{kind}/{f}:{t['name']}:{key}", t[key]))
    return out


def llama_order(inst, schema):
    """Instances spelled the way llama.cpp's grammar orders keys: required, then optional, then others."""
    if isinstance(inst, list):
        items = schema.get("items") if isinstance(schema, dict) and isinstance(schema.get("items"), dict) else {}
        return [llama_order(x, items) for x in inst]
    if not isinstance(inst, dict):
        return inst
    s = schema if isinstance(schema, dict) else {}
    props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
    req = [p for p in props if p in (s.get("required") or [])]
    opt = [p for p in props if p not in req]
    keys = [k for k in req + opt if k in inst] + [k for k in inst if k not in props]
    return {k: llama_order(inst[k], props.get(k, {})) for k in keys}


def jsts_matrix(binary, groups, rewrite):
    items, lossy = [], []
    for g in groups:
        if rewrite:
            s, rep = toolfit(g["schema"], schema_mode=True)
            lossy.append(any(r["lossy"] for r in rep["records"]))
        else:
            s = g["schema"]
            lossy.append(False)
        items.append({"schema": s, "instances": [llama_order(t["data"], s) for t in g["tests"]]})
    m = collections.Counter()
    silent = []
    for g, l, r in zip(groups, lossy, run_judge(binary, items)):
        if not r["ok"]:
            m["crashed" if r["stage"] == "crash" else "rejected"] += 1
            continue
        invalid_accepted = False
        for t, a in zip(g["tests"], r["accepts"]):
            m[("valid" if t["valid"] else "invalid") + ("_accepted" if a else "_rejected")] += 1
            invalid_accepted |= (not t["valid"]) and a
        if invalid_accepted and not l:
            silent.append(f"{g['file']}: {g['description']}")
    m["silent_groups"] = len(silent)
    return m, silent


def main():
    if not os.path.exists(TOOLFIT):
        sys.exit("build first: cargo build --release")
    judges = {v: judge(v) for v in VERSIONS}
    schemas = corpus_schemas()
    print(f"corpus: {len(schemas)} rewritten schemas")
    for v in VERSIONS:
        res = run_judge(judges[v], [{"schema": s} for _, s in schemas])
        bad = [(label, r.get("stage"), r.get("error", "")[:160]) for (label, _), r in zip(schemas, res) if not r["ok"]]
        check(f"llama.cpp via llama-cpp-python {v}: corpus converts and parses", not bad, f"{len(bad)} refused: {bad[:3]}" if bad else f"{len(schemas)} schemas")
    groups = [json.loads(l) for l in open(os.path.join(CORPUS, "jsts-2020-12.jsonl"))]
    groups = [g for g in groups if not g["file"].startswith("optional/")]
    print(f"JSON-Schema-Test-Suite 2020-12: {len(groups)} groups outside optional/")
    for v in VERSIONS:
        raw, _ = jsts_matrix(judges[v], groups, rewrite=False)
        ours, silent = jsts_matrix(judges[v], groups, rewrite=True)
        print(f"  {v} raw llama.cpp: {dict(sorted(raw.items()))}")
        print(f"  {v} toolfit:       {dict(sorted(ours.items()))}")
        check(f"{v}: JSTS no crash", ours["crashed"] == 0, str(ours["crashed"]))
        check(f"{v}: JSTS fewer schemas refused than raw llama.cpp", ours["rejected"] < raw["rejected"] + raw["crashed"],
              f"{ours['rejected']} vs {raw['rejected']}")
        if v == CURRENT:
            check(f"{v}: fewer valid instances refused than raw", ours["valid_rejected"] < raw["valid_rejected"],
                  f"{ours['valid_rejected']} vs {raw['valid_rejected']}")
            check(f"{v}: fewer silently lossy groups than raw", ours["silent_groups"] < raw["silent_groups"],
                  f"{ours['silent_groups']} vs {raw['silent_groups']}")
            for s in silent:
                print(f"    silent (known gap): {s}")
    passed = sum(results)
    print(f"judges: {passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
