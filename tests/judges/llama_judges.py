#!/usr/bin/env python3
"""Acceptance against llama.cpp's own converter and grammar engine, five versions (2024-08 .. 2026-10).

- Every corpus schema (real MCP servers, issue reports, generator output) and every schema of llama.cpp's
  own converter tests (from the sdist) rewritten by the llama-cpp profile must convert and its grammar
  must parse on every version: no rejection, no crash.
- A schema nested 10,000 levels: raw it crashes every version; rewritten (cut to the nesting bound) it
  compiles on all of them.
- The JSON-Schema-Test-Suite, drafts 2020-12, 2019-09, 7, 6 and 4 (outside optional/; the other drafts
  from the `jsonschema` sdist, which vendors the suite): the matrix of valid/invalid instances accepted by
  the grammar, raw and through toolfit with objects closed (the default) and open, on every version.
  toolfit must have 0 schemas refused, 0 crashes and 0 silent groups (a group accepting an invalid
  instance without a lossy record) on every version and draft, and refuse no valid instance beyond the
  listed unspellable ones and (objects closed) those refused only for a key the schema does not declare.
Prints the matrices and a closing 'N passed, M failed' line; exit 1 on any failure.
"""
import collections, concurrent.futures, glob, json, os, re, subprocess, sys, tarfile

from harness import ecma, excuse
from harness.paths import CORPUS, ROOT, TOOLFIT  # noqa: F401  (the other judges read them here)
from harness.venv import cache_dir
from harness.verdict import check, close, results  # noqa: F401

VERSIONS = ["0.3.36", "0.3.16", "0.3.9", "0.3.4", "0.2.90"]  # llama.cpp 2026-10, 2025-08, 2025-05, 2024-12, 2024-08
CURRENT = VERSIONS[0]


def judge(version):
    return subprocess.run([os.path.join(ROOT, "tests", "judges", "build.sh"), version], check=True,
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


def toolfit(doc, schema_mode=False, extra=(), text=None, profile="llama-cpp"):
    args = [TOOLFIT, "normalize", "--profile", profile, "--report", "-", *extra]
    if schema_mode:
        args.append("--schema")
    p = subprocess.run(args, input=(text if text is not None else json.dumps(doc)).encode(), capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode()[:500])
    return json.loads(p.stdout), json.loads(p.stderr.decode().strip().split("\n")[-1])


def corpus_tools():
    """(label, name, parameters, outputSchema or None) for every corpus tool, in file order; the label is the
    file (`servers/x.json`), an issue's tool is named after its file."""
    out = []
    for kind in ("servers", "issues", "synthetic"):
        for f in sorted(os.listdir(os.path.join(CORPUS, kind))):
            d = json.load(open(os.path.join(CORPUS, kind, f)))
            if kind == "servers":
                out += [(f"{kind}/{f}", t["name"], t.get("inputSchema"), t.get("outputSchema")) for t in d["tools"]]
            elif kind == "issues":
                out.append((f"{kind}/{f}", f.replace(".json", ""), d["schema"], None))
            else:
                out += [(f"{kind}/{f}", e["name"], e["schema"], e.get("outputSchema")) for e in d["entries"]]
    return out


def by_file(tools):
    """[(label, [tool, ...])] in file order, from `corpus_tools()` rows."""
    files = {}
    for row in tools:
        files.setdefault(row[0], []).append(row)
    return list(files.items())


def corpus_schemas(profile="llama-cpp"):
    """(label, rewritten schema) for every schema in the corpus, rewritten in its own context."""
    out = []
    for label, rows in by_file(corpus_tools()):
        tools = [{"name": n, "inputSchema": p, **({"outputSchema": o} if o is not None else {})} for _, n, p, o in rows]
        rewritten, _ = toolfit({"tools": tools}, profile=profile)
        for t in rewritten["tools"]:
            for key in ("inputSchema", "outputSchema"):
                if isinstance(t.get(key), (dict, bool)):
                    out.append((f"{label}:{t['name']}:{key}", t[key]))
    return out


MAX_SPELLINGS = 16
MATRIX_KEYS = ("rejected", "crashed", "valid_accepted", "valid_rejected", "invalid_accepted", "invalid_rejected", "silent_groups")

# Valid instances the grammar of the rewritten schema refuses on purpose or cannot spell, with why.
# (file, group description, instance as compact JSON) -> reason
_NUM = "llama.cpp writes an enum/const number with one spelling; the same number spelled otherwise cannot match"
_INT = "llama.cpp's integer grammar has no fraction: 1.0 cannot be spelled where an integer is expected"
_ORDER = "llama.cpp writes an object const with its members in the schema's order; other orders cannot be spelled"
_FORMAT = ("format asserted on purpose: llama.cpp compiles date/time/uuid formats into grammars (the model writes "
           "real dates); 2020-12 treats format as an annotation, so these malformed strings count as valid there")
UNSPELLABLE = {
    ("const.json", "const with object", '{"baz":"bax","foo":"bar"}'): _ORDER,
    ("const.json", "const with 0 does not match other zero-like types", "0.0"): _NUM,
    ("const.json", "const with 1 does not match true", "1.0"): _NUM,
    ("const.json", "const with -2.0 matches integer and float types", "-2"): _NUM,
    ("const.json", "float and integers are equal up to 64-bit representation limits", "9007199254740992.0"): _NUM,
    ("enum.json", "enum with 0 does not match false", "0.0"): _NUM,
    ("enum.json", "enum with [0] does not match [false]", "[0.0]"): _NUM,
    ("enum.json", "enum with 1 does not match true", "1.0"): _NUM,
    ("enum.json", "enum with [1] does not match [true]", "[1.0]"): _NUM,
    ("type.json", "integer type matches integers", "1.0"): _INT,
    ("format.json", "date format", '"06/19/1963"'): _FORMAT,
    ("format.json", "date-time format", '"1990-02-31T15:59:60.123-08:00"'): _FORMAT,
    ("format.json", "time format", '"08:30:06 PST"'): _FORMAT,
    ("format.json", "uuid format", '"2eb8aa08-aa98-11ea-b4aa-73b441d1638"'): _FORMAT,
}

# Only on llama.cpp 2024-08 and 2024-12: their ref resolver rewrites every `$ref` member of the document,
# data included, so an enum/const value holding a `$ref` member is spelled wrongly; and a property
# named `$ref` breaks that resolver, so no other spelling exists.
_REF_DATA = "llama.cpp 2024-08/2024-12 rewrite `$ref` members inside enum/const data; such a value cannot be spelled there"
OLD_UNSPELLABLE = {
    ("ref.json", "naive replacement of $ref with its destination is not correct", '{"$ref":"#/$defs/a_string"}'): _REF_DATA,
    ("ref.json", "naive replacement of $ref with its destination is not correct", '{"$ref":"#/definitions/a_string"}'): _REF_DATA,
}


def listed(version):
    """The valid instances toolfit's output may refuse on this llama.cpp version, with why."""
    return {**UNSPELLABLE, **(OLD_UNSPELLABLE if version in ("0.3.4", "0.2.90") else {})}


def resolve(s, root):
    """Follows same-document `$ref`s (JSON pointers) so instances are spelled after their target."""
    for _ in range(16):
        if not (isinstance(s, dict) and isinstance(s.get("$ref"), str) and s["$ref"].startswith("#")):
            return s
        t = root
        for seg in [x for x in s["$ref"][1:].split("/") if x]:
            seg = seg.replace("~1", "/").replace("~0", "~")
            t = t[int(seg)] if isinstance(t, list) and seg.isdigit() and int(seg) < len(t) else t.get(seg) if isinstance(t, dict) else None
        s = t
    return s


def spellings(inst, schema, root):
    """The ways llama.cpp's grammar for `schema` could order the keys of `inst`: required properties in
    declaration order, then optional ones, then others, recursively; one way per union branch."""
    s = resolve(schema, root)
    if not isinstance(s, dict):
        s = {}
    alts = [b for k in ("anyOf", "oneOf") for b in (s.get(k) or []) if isinstance(s.get(k), list)]
    if alts:
        out = {}  # keyed by the spelling: dicts that differ only in key order compare equal
        for b in alts:
            for v in spellings(inst, b, root):
                out.setdefault(json.dumps(v, separators=(",", ":")), v)
        return list(out.values())[:MAX_SPELLINGS]
    if isinstance(inst, list):
        prefix = s.get("prefixItems") if isinstance(s.get("prefixItems"), list) else []
        items = s.get("items") if isinstance(s.get("items"), dict) else {}
        combos = [[]]
        for i, x in enumerate(inst):
            sub = prefix[i] if i < len(prefix) else items
            combos = [c + [v] for c in combos for v in spellings(x, sub, root)][:MAX_SPELLINGS]
        return combos
    if not isinstance(inst, dict):
        return [inst]
    props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
    req = [p for p in props if p in (s.get("required") or [])]
    opt = [p for p in props if p not in req]
    keys = [k for k in req + opt if k in inst] + [k for k in inst if k not in props]
    extra = s.get("additionalProperties") if isinstance(s.get("additionalProperties"), dict) else {}
    combos = [{}]
    for k in keys:
        combos = [{**c, k: v} for c in combos for v in spellings(inst[k], props.get(k, extra), root)][:MAX_SPELLINGS]
    return combos


# what stands for mcp-schema-normalize's one "lossy" flag: a loss anywhere (it says no more)
MSN_LOSSY = [{"kind": "schema_replaced", "path": "", "lossy": True, "detail": "mcp-schema-normalize: lossy"}]


def msn(schemas):
    """Each schema through mcp-schema-normalize: [(schema, records)]."""
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    p = subprocess.run([os.path.join(venv, "bin", "python"), os.path.join(ROOT, "tests", "support", "msn.py"), "normalize"],
                       input="".join(json.dumps(x) + "\n" for x in schemas), capture_output=True, text=True, check=True)
    return [(o["schema"], MSN_LOSSY if o["lossy"] else []) for o in (json.loads(x) for x in p.stdout.split("\n") if x.strip())]


def jsts_matrix(binary, groups, rewritten):
    """rewritten: [(schema, records)] per group, from the tool under test (or the raw schema, no record).
    A group is silent when it accepts an invalid instance that no record explains (harness.excuse)."""
    items, lossy, counts = [], [], []
    for g, (s, l) in zip(groups, rewritten):
        lossy.append(l)
        spelled = [spellings(t["data"], s, s) for t in g["tests"]]
        items.append({"schema": s, "instances": [v for sp in spelled for v in sp]})
        counts.append([len(sp) for sp in spelled])
    m = collections.Counter()
    silent, valid_refused = [], []
    for g, l, r, c in zip(groups, lossy, run_judge(binary, items), counts):
        if not r["ok"]:
            m["crashed" if r["stage"] == "crash" else "rejected"] += 1
            continue
        unexplained = []
        accepts, i = [], 0
        for n in c:  # a test is accepted when any of its spellings is
            accepts.append(any(r["accepts"][i:i + n]))
            i += n
        for t, a in zip(g["tests"], accepts):
            m[("valid" if t["valid"] else "invalid") + ("_accepted" if a else "_rejected")] += 1
            if not t["valid"] and a and excuse.excused(l, g["schema"], t["data"]) is None:
                unexplained.append(json.dumps(t["data"])[:40])
            if t["valid"] and not a:
                valid_refused.append((g["file"], g["description"], json.dumps(t["data"], separators=(",", ":"))))
        if unexplained:
            silent.append(f"{g['file']}: {g['description']}: {'; '.join(unexplained[:2])}")
    m["silent_groups"] = len(silent)
    return m, silent, valid_refused


JSTS_SDIST = "jsonschema==4.26.0"  # vendors the JSON-Schema-Test-Suite for every draft
DRAFTS = {  # suite folder -> the `$schema` a user's document declares
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
    "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft6": "http://json-schema.org/draft-06/schema#",
    "draft4": "http://json-schema.org/draft-04/schema#",
}


def jsts_groups(draft):
    """The suite's groups outside optional/ for one draft, each schema declaring its draft."""
    if draft == "draft2020-12":  # the copy in the repo (what the rest of the tests use)
        groups = [json.loads(l) for l in open(os.path.join(CORPUS, "jsts-2020-12.jsonl"))]
        return [g for g in groups if not g["file"].startswith("optional/")]
    d = cache_dir("jsts")
    root = glob.glob(os.path.join(d, "jsonschema-*", "json", "tests"))
    if not root:
        if not glob.glob(os.path.join(d, "jsonschema-*.tar.gz")):
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", "-d", d, JSTS_SDIST], check=True)
        with tarfile.open(glob.glob(os.path.join(d, "jsonschema-*.tar.gz"))[0]) as t:
            t.extractall(d, members=[m for m in t.getmembers() if "/json/tests/" in m.name and m.name.endswith(".json")])
        root = glob.glob(os.path.join(d, "jsonschema-*", "json", "tests"))
    out = []
    for f in sorted(glob.glob(os.path.join(root[0], draft, "*.json"))):
        for g in json.load(open(f)):
            s = g["schema"]
            if isinstance(s, dict) and "$schema" not in s:
                s = {"$schema": DRAFTS[draft], **s}
            out.append({"file": os.path.basename(f), "description": g["description"], "schema": s, "tests": g["tests"]})
    return out


def llama_cpp_test_schemas():
    """Every JSON schema in llama.cpp's own converter tests (tests/test-json-schema-to-grammar.cpp)."""
    sdist = os.path.join(os.path.dirname(judge(CURRENT)), f"llama_cpp_python-{CURRENT}.tar.gz")
    with tarfile.open(sdist) as t:
        src = t.extractfile(f"llama_cpp_python-{CURRENT}/vendor/llama.cpp/tests/test-json-schema-to-grammar.cpp").read().decode()
    out = []
    for raw in re.findall(r'R"""\((.*?)\)"""', src, re.S):
        try:
            v = json.loads(raw)
        except ValueError:
            continue  # an expected grammar, not a schema
        if isinstance(v, (dict, bool)):
            out.append(v)
    return out


def deep_schema(levels):
    return '{"type":"object","properties":{"a":' * levels + '{"type":"string"}' + "}}" * levels


def rewrite_all(groups, extra):
    """Each group's schema through toolfit: [(schema, records)], in parallel."""
    def one(g):
        s, rep = toolfit(g["schema"], schema_mode=True, extra=extra)
        return s, rep["records"]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        return list(ex.map(one, groups))


# Patterns with Unicode properties (`\p{..}`), as MCP servers and Claude Code write them: toolfit writes
# each out as class ranges the converters compile (checked on every release), unless past the 2 KB budget
# (`\p{Letter}`), where it is removed with a record. The strings: what each means, judged by Node.
PROPERTY_PATTERNS = ["^\\p{Zl}\\P{Cc}$", "^[^\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\"\\\\./[\\]]{1,20}$", "^\\p{Nd}+$", "^\\p{Extended_Pictographic}$",
                     "^[\\p{Zs}x]+$", "^\\p{Letter}+$"]
PROPERTY_SAMPLES = ["a", "x", "\u2028A", "\u2028\u0001", "abc", "a\u200bb", "a.b", "\u0661\u0662", "123", "\U0001F600", "\u3000x ", "\u0085", "\u00e9", ""]
SINCE = {"0.3.36": "2026-10", "0.3.16": "2025-08", "0.3.9": "2025-05", "0.3.4": "2024-12", "0.2.90": "2024-08"}


def unicode_properties(judges):
    """Every pattern of the corpus, Claude Code's `Artifact` pattern and PROPERTY_PATTERNS, rewritten for each
    release: each kept one compiles and accepts exactly the strings Node's RegExp (`u`) accepts; each
    removed one has a lossy record. Strings JSON writes with an escape (`"`, `\\`, control characters) are
    left out: a pattern's grammar is written over the raw characters."""
    import hosted_judges  # its samples, the Artifact pattern and the corpus's patterns (the same as OpenAI's)
    pats = PROPERTY_PATTERNS + [hosted_judges.ARTIFACT] + hosted_judges.corpus_patterns()
    samples = [x for x in dict.fromkeys(PROPERTY_SAMPLES + hosted_judges.SAMPLES) if not re.search(r'["\\\x00-\x1f]', x)]
    want = ecma.matrix(pats, samples)
    for v in VERSIONS:
        tools = [{"type": "function", "function": {"name": f"p{i}", "description": "d", "parameters": {"type": "object", "properties": {"v": {"type": "string", "pattern": p}}}}}
                 for i, p in enumerate(pats)]
        out, rep = toolfit({"model": "m", "messages": [], "tools": tools}, extra=("--llama-cpp-since", SINCE[v]))
        lossy = {r["tool"] for r in rep["records"] if r["kind"] == "pattern_removed" and r["lossy"]}
        got = [t["function"]["parameters"]["properties"]["v"].get("pattern") for t in out["tools"]]
        kept = [i for i, g in enumerate(got) if g is not None]
        res = run_judge(judges[v], [{"schema": {"type": "string", "pattern": got[i]}, "instances": samples} for i in kept])
        wrong = [(pats[i], got[i][:60], r if not r.get("ok") else [x for x, a, b in zip(samples, r["accepts"], want[i]) if a != b][:3])
                 for i, r in zip(kept, res) if not r.get("ok") or r["accepts"] != want[i]]
        unexplained = [pats[i] for i, g in enumerate(got) if g is None and f"p{i}" not in lossy]
        check(f"{v}: every pattern kept compiles and matches {len(samples)} strings as Node's RegExp does ({len(kept)} kept of {len(pats)}, Unicode properties written out)",
              not wrong and len(kept) >= len(PROPERTY_PATTERNS) - 1, wrong[:2])
        check(f"{v}: every pattern removed has a lossy record ({len(pats) - len(kept)}: the Artifact's look-ahead, \\p{{Letter}} past the budget, ...)",
              not unexplained and got[len(PROPERTY_PATTERNS) - 1] is None and got[len(PROPERTY_PATTERNS)] is None, unexplained[:3])
    # the control: the same strings against a pattern written out wrong (a range short) must disagree somewhere
    bad = run_judge(judges[CURRENT], [{"schema": {"type": "string", "pattern": "^[ \u00a0x]+$"}, "instances": samples}])[0]
    check("control: a class missing ranges of \\p{Zs} disagrees with Node's verdicts", bad.get("ok") and bad["accepts"] != want[4], bad)


def main():
    global VERSIONS, DRAFTS
    if not os.path.exists(TOOLFIT):
        sys.exit("build first: cargo build --release")
    if "--quick" in sys.argv[1:]:  # make check: the current release, 2020-12 only
        VERSIONS, DRAFTS = [CURRENT], {"draft2020-12": DRAFTS["draft2020-12"]}
    for name, ok in excuse.self_test():  # the excuse rules' own controls
        check(f"excuse rule: {name}", ok)
    judges = {v: judge(v) for v in VERSIONS}
    schemas = corpus_schemas()
    print(f"corpus: {len(schemas)} rewritten schemas")
    for v in VERSIONS:
        res = run_judge(judges[v], [{"schema": s} for _, s in schemas])
        bad = [(label, r.get("stage"), r.get("error", "")[:160]) for (label, _), r in zip(schemas, res) if not r["ok"]]
        check(f"llama.cpp via llama-cpp-python {v}: corpus converts and parses", not bad, f"{len(bad)} refused: {bad[:3]}" if bad else f"{len(schemas)} schemas")

    own = llama_cpp_test_schemas()
    # llama.cpp's test file held 90-odd schemas in 2024-2026: fewer means the extraction broke
    check("llama.cpp's own converter test schemas extracted", len(own) >= 60, f"{len(own)} schemas")
    rewritten = [toolfit(s, schema_mode=True)[0] for s in own]
    for v in VERSIONS:
        raw = run_judge(judges[v], [{"schema": s} for s in own])
        res = run_judge(judges[v], [{"schema": s} for s in rewritten])
        bad = [(json.dumps(s)[:120], r.get("stage"), r.get("error", "")[:120]) for s, r in zip(own, res) if not r["ok"]]
        check(f"{v}: llama.cpp's own converter test schemas rewritten compile", not bad,
              f"{len(own)} schemas (raw: {sum(not r['ok'] for r in raw)} refused)" if not bad else f"{len(bad)} refused: {bad[:3]}")

    deep = deep_schema(10_000)
    cut, rep = toolfit(None, schema_mode=True, text=deep)
    check("a schema nested 10,000 levels is cut to the nesting bound", any(r["kind"] == "bounds_exceeded" for r in rep["records"]),
          next((r["detail"] for r in rep["records"] if r["kind"] == "bounds_exceeded"), "no bounds_exceeded record"))
    for v in VERSIONS:
        raw = subprocess.run([judges[v]], input=('{"schema":' + deep + "}\n").encode(), capture_output=True)
        crashed = raw.returncode < 0 or raw.returncode > 128
        # the control: raw, the same schema crashes the converter (a stack overflow), so the cut matters
        check(f"{v}: the 10,000-deep schema crashes llama.cpp raw", crashed, f"exit {raw.returncode}")
        ours = run_judge(judges[v], [{"schema": cut}])[0]
        check(f"{v}: the 10,000-deep schema cut compiles", ours["ok"], str(ours)[:160])

    unicode_properties(judges)

    for draft in DRAFTS:
        groups = jsts_groups(draft)
        print(f"JSON-Schema-Test-Suite {draft}: {len(groups)} groups outside optional/")
        variants = {
            "raw llama.cpp": [(g["schema"], []) for g in groups],
            "toolfit": rewrite_all(groups, ()),
            "toolfit, open objects": rewrite_all(groups, ("--open-objects",)),
        }
        if draft == "draft2020-12":
            variants["mcp-schema-normalize"] = msn([g["schema"] for g in groups])
        closed_schemas = {(g["file"], g["description"]): s for g, (s, _) in zip(groups, variants["toolfit"])}
        for v in VERSIONS:
            runs = {name: jsts_matrix(judges[v], groups, rw) for name, rw in variants.items()}
            for name, (m, _, _) in runs.items():
                print(f"  {draft} {v} {name + ':':24} " + "  ".join(f"{k} {m[k]}" for k in MATRIX_KEYS))
            raw = runs["raw llama.cpp"][0]
            (closed, silent_c, refused_c), (opened, silent_o, refused_o) = runs["toolfit"], runs["toolfit, open objects"]
            check(f"{draft} {v}: no schema refused, no crash (both object settings)",
                  closed["rejected"] + closed["crashed"] + opened["rejected"] + opened["crashed"] == 0,
                  f"raw: {raw['rejected']} refused, {raw['crashed']} crashed")
            check(f"{draft} {v}: no silent loss (both object settings)", not silent_c and not silent_o, "; ".join((silent_c + silent_o)[:10]))
            ok_refused = listed(v)
            unexpected_o = [r for r in refused_o if r not in ok_refused]
            # refused with objects closed only: excused where the instance has a key its schema does not declare
            undeclared = [r for r in refused_c if r not in ok_refused and r not in refused_o
                          and excuse.undeclared_key(closed_schemas[r[:2]], json.loads(r[2]))]
            unexpected_c = [r for r in refused_c if r not in ok_refused and r not in undeclared]
            n_listed = len([r for r in refused_c if r in ok_refused])
            check(f"{draft} {v}: valid instances refused only where listed", not unexpected_o and not unexpected_c,
                  f"closed: {n_listed} unspellable, {len(undeclared)} only for an undeclared key; open: {len(refused_o)} unspellable"
                  if not (unexpected_o or unexpected_c) else "; ".join(" | ".join(r) for r in (unexpected_c + unexpected_o)[:20]))
    close("judges", results)


if __name__ == "__main__":
    main()
