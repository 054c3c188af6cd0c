#!/usr/bin/env python3
"""Acceptance for the `ollama` profile, judged by the PyPI `ollama` client's own tool model (0.6.3).

Ollama reads a tool's parameters into typed structs and drops every other keyword without a word; the
Python client's `ollama._types.Tool` keeps the same fields (fewer: a property has no `properties` or
`anyOf`). So:
- every corpus tool, sent in an Ollama `/api/chat` request and rewritten with the `ollama` profile,
  comes out of `Tool.model_validate(...).model_dump(...)` unchanged: nothing is left for Ollama to drop;
- every tool the client would change as it came has a record in toolfit's report (nothing lost silently),
  and every constraint it would drop is still in the tool, written into a description;
- `format` (structured output) is rewritten exactly as the llama-cpp profile rewrites it: Ollama compiles it
  with the llama.cpp converter it vendors.
The client runs in a venv of its own under ~/.cache/toolfit/ollama (built on first use).
Prints a closing 'N passed, M failed' line; exit 1 on any failure.
"""
import json, os, subprocess, sys

from harness.paths import ROOT, TOOLFIT
from harness.venv import venv
from harness.verdict import check, close, results
from llama_judges import by_file, corpus_tools, toolfit

PINS = ["ollama==0.6.3", "pydantic==2.14.3"]
# the client's model, round trip: what the client (and Ollama's server) keeps of a tool
ROUND_TRIP = """
import json, sys
from ollama._types import Tool
for line in sys.stdin:
    t = json.loads(line)
    try:
        out = Tool.model_validate(t).model_dump(exclude_none=True, by_alias=True)
    except Exception as e:  # the client refuses the tool
        print(json.dumps({"refused": str(e).splitlines()[0]}), flush=True)
        continue
    p = out.get("function", {}).get("parameters")
    if isinstance(p, dict) and "defs" in p:  # what ChatRequest's serializer does
        p["$defs"] = p.pop("defs")
    print(json.dumps(out), flush=True)
"""
def round_trip(py, tools):
    p = subprocess.run([py, "-c", ROUND_TRIP], input="".join(json.dumps(t) + "\n" for t in tools),
                       capture_output=True, text=True, check=True)
    return [json.loads(l) for l in p.stdout.splitlines()]


def tool(name, params):
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": params}}


def constraint_words(params):
    """Constraint keywords a tool's parameters use below the root, that a description can repeat."""
    words = set()

    def walk(v, depth):
        if isinstance(v, dict):
            for k, c in v.items():
                if depth > 0 and k in ("pattern", "minimum", "maximum", "minLength", "maxLength", "format", "minItems", "maxItems"):
                    words.add(k)
                if k in ("properties", "patternProperties", "$defs", "definitions") and isinstance(c, dict):
                    for x in c.values():  # names there are the tool's, not keywords
                        walk(x, depth + 1)
                elif k not in ("enum", "const", "default", "examples"):
                    walk(c, depth + 1)
        elif isinstance(v, list):
            for c in v:
                walk(c, depth)
    walk(params, 0)
    return words


def descriptions(v):
    """Every description string in a tool."""
    if isinstance(v, dict):
        return [x for k, c in v.items() for x in ([c] if k == "description" and isinstance(c, str) else descriptions(c))]
    if isinstance(v, list):
        return [x for c in v for x in descriptions(c)]
    return []


def keys(v):
    """Every schema keyword (member name outside `properties` maps) in a tool as the client kept it."""
    out = set()
    if isinstance(v, dict):
        for k, c in v.items():
            if k == "properties" and isinstance(c, dict):
                for x in c.values():
                    out |= keys(x)
            else:
                out.add(k)
                out |= keys(c)
    elif isinstance(v, list):
        for c in v:
            out |= keys(c)
    return out


def main():
    if not os.path.exists(TOOLFIT):
        sys.exit("build first: cargo build --release")
    py = venv("ollama", PINS)
    tools = corpus_tools()
    raw = [tool(n, p) for _, n, p, _ in tools if isinstance(p, dict)]
    labels = [(l, n) for l, n, p, _ in tools if isinstance(p, dict)]
    raw_kept = round_trip(py, raw)
    dropped_raw = sum(a != b for a, b in zip(raw, raw_kept))
    refused_raw = sum("refused" in b for b in raw_kept)
    print(f"{len(raw)} corpus tools; as they come, the ollama client refuses {refused_raw} and drops something from "
          f"{dropped_raw - refused_raw}")
    # the controls: the client's model says no, on the corpus as it comes and on one tool made to lose a keyword
    check(f"control: the ollama client changes corpus tools as they come ({dropped_raw} of {len(raw)})", dropped_raw > 0)
    union = tool("u", {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}})
    check("control: a property's anyOf does not survive ollama's Tool model", round_trip(py, [union])[0] != union)

    # one request per corpus file, as an agent sends one server's catalog
    out, recorded = [], set()
    for l, rows in by_file([(l, t) for (l, _), t in zip(labels, raw)]):
        body, report = toolfit({"model": "m", "messages": [], "tools": [t for _, t in rows]}, profile="ollama")
        out += body["tools"]
        recorded |= {(l, r["tool"]) for r in report["records"]}
        assert not report["records_not_kept"], l
    kept = round_trip(py, out)
    changed = [f"{l}:{n}" for (l, n), a, b in zip(labels, out, kept) if a != b]
    check("every corpus tool rewritten keeps every keyword through ollama's Tool model", not changed,
          f"{len(out)} tools" if not changed else f"{len(changed)} lose something: {changed[:4]}")

    silent = [f"{l}:{n}" for (l, n), a, b in zip(labels, raw, raw_kept) if a != b and (l, n) not in recorded]
    check("every tool ollama would change has a record", not silent, "; ".join(silent[:5]) or f"{dropped_raw} tools")

    # constraints the client drops below the root survive as text the model reads: each keyword is still
    # a keyword after the client's round trip, or named in a description (not anywhere in the tool: a
    # property may be called `pattern`)
    lost = []
    for (l, n), r, o, k in zip(labels, raw, out, kept):
        text = " ".join(descriptions(o)).lower()  # `exclusiveMaximum` is how 2020-12 spells a draft-04 `maximum`
        gone = [w for w in constraint_words(r["function"]["parameters"]) if w not in keys(k) and w.lower() not in text]
        if gone:
            lost.append(f"{l}:{n}: {gone}")
    check("constraints Ollama drops are written into descriptions", not lost, "; ".join(lost[:4]))
    # the control: a property named `pattern` whose own pattern the client drops, sent without toolfit:
    # the name is no description, so the check says no
    bare = tool("b", {"type": "object", "properties": {"pattern": {"type": "string", "pattern": "^a"}}})
    kept_bare = round_trip(py, [bare])[0]
    gone = [w for w in constraint_words(bare["function"]["parameters"]) if w not in keys(kept_bare) and w not in " ".join(descriptions(kept_bare)).lower()]
    check("control: a dropped pattern on a property named `pattern`, sent as it came, counts as lost", gone == ["pattern"], (gone, kept_bare))

    # toolfit convert's golden for Ollama: nothing in it for the client (and Ollama) to drop
    golden = json.load(open(os.path.join(ROOT, "tests", "golden", "convert", "ollama.json")))["tools"]
    changed = [a["function"]["name"] for a, b in zip(golden, round_trip(py, golden)) if a != b]
    check(f"toolfit convert's golden ollama.json keeps every keyword through ollama's Tool model ({len(golden)} tools)", golden and not changed, changed)

    outputs = [o for _, _, _, o in tools if isinstance(o, dict)][:200]
    differ = []
    for s in outputs:
        a, _ = toolfit({"model": "m", "messages": [], "format": s}, profile="ollama")
        b, _ = toolfit({"model": "m", "messages": [], "format": s}, profile="llama-cpp")
        if a["format"] != b["format"]:
            differ.append(json.dumps(s)[:80])
    check("format is rewritten as llama.cpp's converter needs it", outputs and not differ,
          f"{len(outputs)} output schemas" if not differ else f"{len(differ)} differ: {differ[:2]}")

    close("ollama judges", results)


if __name__ == "__main__":
    main()
