#!/usr/bin/env python3
"""A peer measured in the same run (part of `make bench-engine`): LiteLLM's own schema transform for
Gemini (PyPI `litellm`, in its own venv under ~/.cache/toolfit/litellm; `VertexGeminiConfig._map_function`,
what its Gemini and Vertex paths call on a request's `tools`) on every catalog of tests/corpus/servers,
beside toolfit's `gemini` profile on the same tools (`cargo bench --bench engine -- --profile gemini`,
cold: parse, rewrite, serialise). Then the hosted judges' Gemini verdict (google-genai's
FunctionDeclaration plus the documented rules, tests/judges/hosted_worker.py) on three requests per
catalog: the tools as sent, LiteLLM's output, toolfit's output. Prints one row per catalog, the totals,
and ratios; no assertions (a benchmark)."""
import glob, json, math, os, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from harness.paths import load
from harness.venv import venv

hosted = load("tests/judges/hosted_judges.py")
HOSTED_PINS, HOSTED_WORKER = hosted.PINS, hosted.WORKER

LITELLM = ["litellm==1.110.2"]
TOOLFIT = os.path.join(ROOT, "target", "release", "toolfit")


def gemini_request(decls):
    return {"contents": [{"role": "user", "parts": [{"text": "hello"}]}], "tools": [{"functionDeclarations": decls}]}


# constraint keywords: how many of them each side still states as schema (toolfit writes what it removes
# into the description instead, and counts it; LiteLLM leaves no trace)
CONSTRAINTS = ("pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
               "enum", "format", "required", "multipleOf", "const")


def constraints(node):
    if isinstance(node, dict):
        return sum(1 for k in CONSTRAINTS if k in node) + sum(constraints(v) for k, v in node.items() if k not in ("enum", "const", "default", "example", "examples"))
    if isinstance(node, list):
        return sum(constraints(v) for v in node)
    return 0


def refused_tools(verdict):
    """How many tools a verdict refuses: its errors name the tool first ('name: ...', or 'name' for a
    name the API refuses)."""
    return len({e.split(":", 1)[0].strip("'") for e in verdict["errors"]})


def main():
    catalogs = sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "servers", "*.json")))
    tmp = tempfile.mkdtemp(prefix="toolfit-litellm-")
    jobs, raw, files = [], {}, []
    for c in catalogs:
        name = os.path.basename(c)
        tools = json.load(open(c))["tools"]
        openai = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t.get("inputSchema") or {}}} for t in tools]
        jobs.append({"file": name, "tools": openai})
        raw[name] = gemini_request([{"name": t["name"], "description": t.get("description", ""), "parameters": t.get("inputSchema") or {}} for t in tools])
        files.append(os.path.join(tmp, name))
        with open(files[-1], "w") as f:
            json.dump(raw[name], f, separators=(",", ":"))

    py = venv("litellm", LITELLM)
    p = subprocess.run([py, os.path.join(ROOT, "bench", "litellm_worker.py")], input="".join(json.dumps(j) + "\n" for j in jobs),
                       capture_output=True, text=True, check=True)
    theirs = {j["file"]: j for j in map(json.loads, p.stdout.splitlines())}
    out = subprocess.run(["cargo", "bench", "--quiet", "--bench", "engine", "--", "--profile", "gemini", "--format", "gemini"] + files,
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    ours = {os.path.basename(j["file"]): j for j in (json.loads(x) for x in out.splitlines() if x.startswith("{"))}

    # the judge's verdicts: as sent, LiteLLM's, toolfit's
    sides = {}
    judge_jobs, meta = [], []
    for name, body in raw.items():
        rewritten = subprocess.run([TOOLFIT, "normalize", "--profile", "gemini", "--format", "gemini"], input=json.dumps(body).encode(), capture_output=True, check=True).stdout
        candidates = {"raw": body, "toolfit": json.loads(rewritten)}
        if "declarations" in theirs.get(name, {}):
            candidates["litellm"] = gemini_request(theirs[name]["declarations"])
        for side, b in candidates.items():
            judge_jobs.append({"api": "gemini", "body": b})
            meta.append((name, side))
    hosted = venv("hosted", HOSTED_PINS)
    p = subprocess.run([hosted, HOSTED_WORKER], input="".join(json.dumps(j) + "\n" for j in judge_jobs), capture_output=True, text=True, check=True)
    reasons, kept = {}, {"raw": 0, "litellm": 0, "toolfit": 0}
    for job, (name, side) in zip(judge_jobs, meta):
        kept[side] += constraints(job["body"]["tools"][0]["functionDeclarations"])
    for (name, side), v in zip(meta, map(json.loads, p.stdout.splitlines())):
        sides[(name, side)] = refused_tools(v)
        if side != "raw" and v["errors"]:
            reasons[(name, side)] = v["errors"][:2]

    print("LiteLLM 1.110.2 (VertexGeminiConfig._map_function) beside toolfit's gemini profile (cold), every catalog;")
    print("refused: tools the hosted judges' Gemini rules refuse in each request")
    print(f"{'catalog':28} {'tools':>5} {'KB':>6} | {'LiteLLM ms':>10} {'toolfit ms':>10} {'speedup':>7} | {'refused raw':>11} {'LiteLLM':>7} {'toolfit':>7}")
    ratios, totals = [], {"raw": 0, "litellm": 0, "toolfit": 0, "tools": 0}
    for job in jobs:
        name = job["file"]
        t = theirs.get(name, {})
        o = ours.get(name, {})
        lite = t.get("seconds")
        tf = o.get("toolfit_seconds")
        ratio = lite / tf if lite and tf else None
        if ratio:
            ratios.append(ratio)
        refused = [sides.get((name, s)) for s in ("raw", "litellm", "toolfit")]
        totals["tools"] += len(job["tools"])
        for s, r in zip(("raw", "litellm", "toolfit"), refused):
            totals[s] += r or 0
        lite_ms = f"{lite * 1e3:10.2f}" if lite else f"{'error':>10}"
        print(f"{name[:28]:28} {len(job['tools']):5} {o.get('bytes', 0) / 1e3:6.0f} | {lite_ms} {(tf or 0) * 1e3:10.2f} {(ratio or 0):6.1f}x |"
              f" {refused[0]:11} {refused[1] if refused[1] is not None else '-':>7} {refused[2]:7}")
        if "error" in t:
            print(f"    LiteLLM: {t['error']}")
        for side in ("litellm", "toolfit"):
            for r in reasons.get((name, side), []):
                print(f"    {side} refused: {r[:160]}")
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else 0
    print(f"\n{len(jobs)} catalogs, {totals['tools']} tools: toolfit {geo:.1f}x LiteLLM's speed (geometric mean over catalogs);"
          f" tools Gemini's rules refuse: {totals['raw']} as sent, {totals['litellm']} after LiteLLM, {totals['toolfit']} after toolfit")
    print(f"constraint keywords still stated as schema: {kept['raw']} as sent, {kept['litellm']} after LiteLLM, {kept['toolfit']} after toolfit"
          " (toolfit writes each one it removes into the node's description and counts it; LiteLLM leaves no trace)")


if __name__ == "__main__":
    main()
