#!/usr/bin/env python3
"""Acceptance against vLLM's structured-output backends, each judged by its own compiler from PyPI
(xgrammar 0.2.8, llguidance 1.9.1, outlines-core 0.2.14) and vLLM 0.33.0's own pre-checks.

- Every corpus schema rewritten with a backend's profile compiles on that backend (0 refused), and for
  `vllm` passes vLLM's nesting check and xgrammar pre-check first.
- `tool_choice: "required"`: every corpus catalog as one OpenAI chat request, rewritten with each profile,
  becomes the one schema vLLM builds for it (vLLM's own `_get_json_schema_from_tools`: tools' `$defs`
  hoisted and merged, a clash refused, pointers left pointing into the wrapper) and compiles; a request made
  of the clashes (same `$defs` name, `#` and `#/properties/..` refs, draft-07 `definitions`) keeps every
  tool's meaning, shown by calls accepted and refused.
- Patterns by meaning: every corpus pattern, Claude Code's `Artifact` pattern and the Unicode-property ones,
  rewritten with each profile, are matched by the backend's own matcher on exactly the strings Node's
  RegExp accepts (a removed one needs a lossy record; a control class written a range short must disagree).
- The JSON-Schema-Test-Suite 2020-12 (outside optional/): valid/invalid instances matched by each backend's
  own matcher, raw and through toolfit. toolfit must have 0 schemas refused and 0 silent groups (a group
  accepting an invalid instance without a lossy record); xgrammar's own warnings that it ignored something
  count as silent unless toolfit recorded a loss for that group. Valid instances refused are printed, with
  the ones refused only for a key the schema does not declare (closed objects) told apart.
The judges run in a venv of their own under ~/.cache/toolfit/vllm (built on first use). Prints the matrices
and a closing 'N passed, M failed' line; exit 1 on any failure.
"""
import collections, concurrent.futures, json, os, select, shutil, subprocess, sys, zipfile

from harness import ecma, excuse
from harness.paths import ROOT, TOOLFIT
from harness.venv import cache_dir, venv
from harness.verdict import check, close, results
from llama_judges import by_file, corpus_schemas, corpus_tools, jsts_groups, spellings
from llama_judges import resolve as llama_resolve, toolfit as toolfit_body

WORKER = os.path.join(ROOT, "tests", "judges", "vllm_worker.py")
PINS = ["llguidance==1.9.1", "outlines-core==0.2.14", "apache-tvm-ffi==0.1.15.post2", "transformers==5.23.0",
        "pydantic==2.14.3", "numpy==2.4.6", "typing-extensions==4.16.0"]
XGRAMMAR = "xgrammar==0.2.8"  # without its torch/triton requirements: see tests/judges/vllm_worker.py
VLLM = "vllm==0.33.0"
VLLM_FILES = ["vllm/sampling_params.py", "vllm/v1/structured_output/backend_xgrammar.py",
              "vllm/v1/structured_output/backend_outlines.py", "vllm/tool_parsers/utils.py"]
# profile -> the backend its output must compile on
PROFILES = {"vllm": "vllm", "vllm-xgrammar": "xgrammar", "vllm-guidance": "guidance", "vllm-outlines": "outlines",
            # SGLang 0.5.23's --grammar-backend llguidance calls llguidance (its pin: >=1.7.6,<2; 1.9.1 here)
            # as vLLM does, whitespace-flexible, with no pre-check of its own
            "sglang-guidance": "guidance"}
# the profiles behind vLLM's own tool_choice=required wrapper
WRAPPED = [p for p in PROFILES if p.startswith("vllm")]
MATRIX_KEYS = ("rejected", "valid_accepted", "valid_rejected", "invalid_accepted", "invalid_rejected", "silent_groups")
ITEM_SECONDS = 60
# a 40-tool request's wrapper on outlines: firecrawl's 26 tools make a 5 MB regex that vLLM's own
# buildability check parses for 30-50 s on one core (raw and rewritten alike); a hang still fails
REQUEST_SECONDS = 240
# JSTS groups whose schema a backend refuses through toolfit too, with why: (backend, file, group) -> reason.
# None today; anything refused fails.
KNOWN_REFUSED = {}
# Valid JSTS instances a backend refuses through toolfit, beyond the rules in `refused_why` (keys a
# strict grammar does not declare, numbers spelled one way, object data in one order, formats a
# grammar asserts): (file, group) -> why. The same on every vLLM backend unless the entry names one.
_DYNAMIC = "toolfit resolves $dynamicRef as the static $ref it starts from (recorded): a dynamic scope that picks another target is refused"
_UNEVALUATED = ("toolfit spells unevaluatedProperties/unevaluatedItems false as additional* false (recorded): a member a subschema "
                "evaluates, such as a sibling's pattern or branch, is then refused")
_IDS = "a $ref resolved through $id base URIs: toolfit resolves same-document pointers, and these targets are replaced (recorded)"
_PREFIX = "outlines-core writes prefixItems as a fixed sequence: an array with fewer items, or with items after them, cannot be written"
_DEPTH = "outlines-core writes a value of no type to a fixed nesting depth: deeper objects and arrays in it cannot be written"
VALID_REFUSED = {
    ("items.json", "prefixItems with no additional items allowed", "outlines"): _PREFIX,
    ("items.json", "prefixItems validation adjusts the starting index for items", "outlines"): _PREFIX,
    ("items.json", "items does not look in applicators, valid case", "outlines"): _PREFIX,
    ("prefixItems.json", "a schema given for prefixItems", "outlines"): _PREFIX,
    ("prefixItems.json", "prefixItems with boolean schemas", "outlines"): _PREFIX,
    ("items.json", "items and subitems", "outlines"): _DEPTH,
    ("uniqueItems.json", "uniqueItems validation", "outlines"): _DEPTH,
    ("uniqueItems.json", "uniqueItems=false validation", "outlines"): _DEPTH,
    ("dynamicRef.json", None): _DYNAMIC,
    ("unevaluatedItems.json", None): _UNEVALUATED,
    ("unevaluatedProperties.json", None): _UNEVALUATED,
    ("ref.json", "refs with relative uris and defs"): _IDS,
    ("ref.json", "relative refs with absolute uris and defs"): _IDS,
    ("refRemote.json", "remote ref with ref to defs"): _IDS,
    ("ref.json", "naive replacement of $ref with its destination is not correct"):
        "vLLM's backends resolve a `$ref` member inside enum/const data as a reference: that value cannot be spelled",
}
_CLOSED = "refused only for a key or item the schema does not declare, which xgrammar's strict mode (vLLM's) does not spell"
_NUM = "a number written with a zero fraction (1.0): the grammar spells integers and const/enum numbers one way"
_ORDER = "object data in a const/enum is spelled in the schema's member order"
_FORMAT = "format asserted on purpose: the backends compile date/time/uuid/email formats into the grammar"


def refused_why(g, rewritten, data, backend=None):
    """Why a valid instance of group `g` may be refused by `backend` given toolfit's `rewritten` schema;
    None: it may not (a failure). A listed entry that served is noted in `USED`."""
    for key in ((g["file"], g["description"], backend), (g["file"], g["description"]), (g["file"], None)):
        if key in VALID_REFUSED:
            USED.add(key)
            return VALID_REFUSED[key]
    if excuse.undeclared_key(rewritten, data, strict=True):
        return _CLOSED
    if excuse.zero_fraction(data) or excuse.number_data(rewritten):
        return _NUM
    if excuse.object_data(rewritten, data):
        return _ORDER
    if g["file"] == "format.json" and format_refused(rewritten, data):
        return _FORMAT
    return None


def format_refused(rewritten, data):
    """Whether `data` fails `rewritten` only by a `format` asserted (a grammar that compiles the format
    refuses it): a value the format says nothing of (not a string) must still be accepted. A format the
    reference checker cannot judge is taken as refusing every string (never a value of another type)."""
    import jsonschema
    cls = jsonschema.validators.validator_for(rewritten, default=jsonschema.Draft202012Validator)
    known = cls.FORMAT_CHECKER

    class Checker(jsonschema.FormatChecker):
        def check(self, instance, format):
            if format in known.checkers:
                return known.check(instance, format)
            if isinstance(instance, str):
                raise jsonschema.FormatError(f"{instance!r}: format {format} taken as asserted")

    def only_format(e):
        if e.validator == "format":
            return True
        if e.validator in ("anyOf", "oneOf") and e.context:
            return any(all(only_format(c) for c in b) for b in excuse.branches(e))
        return False
    errors = list(cls(rewritten, format_checker=Checker()).iter_errors(data))
    return bool(errors) and all(only_format(e) for e in errors)


USED = set()


def declared_order(inst, schema, root):
    """`inst` with each object's keys in its schema's declaration order (how vLLM's backends write an
    object, where llama.cpp writes the required ones first): one more spelling to try."""
    s = llama_resolve(schema, root)
    if isinstance(inst, list):
        items = s.get("items") if isinstance(s, dict) and isinstance(s.get("items"), dict) else {}
        prefix = s.get("prefixItems") if isinstance(s, dict) and isinstance(s.get("prefixItems"), list) else []
        return [declared_order(x, prefix[i] if i < len(prefix) else items, root) for i, x in enumerate(inst)]
    if not isinstance(inst, dict):
        return inst
    props = s.get("properties") if isinstance(s, dict) and isinstance(s.get("properties"), dict) else {}
    keys = [k for k in props if k in inst] + [k for k in inst if k not in props]
    return {k: declared_order(inst[k], props.get(k, {}), root) for k in keys}


# what xgrammar says when it compiles a oneOf as anyOf: a loss only if the branches overlap, which the
# instances show (toolfit leaves only disjoint oneOf to it)
ONE_OF_FALLBACK = "oneOf with overlapping or non-provably-disjoint branches"
def setup():
    """The judges' venv and vLLM's check functions, cached; returns (python, vllm source dir)."""
    d = cache_dir("vllm")
    py = venv("vllm", PINS, [XGRAMMAR])
    src = os.path.join(d, "vllm-src")
    if not all(os.path.exists(os.path.join(src, f)) for f in VLLM_FILES):
        wheels = os.path.join(d, "wheel")
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "--only-binary", ":all:", "-d", wheels, VLLM], check=True)
        whl = [f for f in os.listdir(wheels) if f.endswith(".whl")][0]
        with zipfile.ZipFile(os.path.join(wheels, whl)) as z:
            for f in VLLM_FILES:
                z.extract(f, src)
        shutil.rmtree(wheels)  # 330 MB of CUDA kernels; only the checks are kept
    return py, src


class Judge:
    """The worker process; an item that takes longer than ITEM_SECONDS or kills it counts as refused."""
    def __init__(self, py, src):
        self.cmd, self.env = [py, WORKER], {**os.environ, "VLLM_SRC": src, "TRANSFORMERS_VERBOSITY": "error"}
        self.p = None

    def start(self):
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=self.env, text=True, bufsize=1)

    def one(self, item, seconds=ITEM_SECONDS):
        if self.p is None or self.p.poll() is not None:
            self.start()
        try:
            self.p.stdin.write(json.dumps(item) + "\n")
            self.p.stdin.flush()
            ready, _, _ = select.select([self.p.stdout], [], [], seconds)
            line = self.p.stdout.readline() if ready else ""
        except BrokenPipeError:
            line = ""
        if line.strip():
            return json.loads(line)
        self.p.kill()
        self.p.wait()
        self.p = None
        return {"ok": False, "error": "judge crashed or timed out", "warnings": []}

    def run(self, items, seconds=ITEM_SECONDS):
        return [self.one(i, seconds) for i in items]

    def close(self):
        if self.p is not None:
            self.p.kill()
            self.p.wait()


def toolfit(profile, schema, extra=()):
    p = subprocess.run([TOOLFIT, "normalize", "--profile", profile, "--report", "-", "--schema", *extra],
                       input=json.dumps(schema).encode(), capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode()[:500])
    return json.loads(p.stdout), json.loads(p.stderr.decode().strip().split("\n")[-1])


def rewrite_all(profile, groups):
    """Each group's schema through toolfit: [(schema, records)], in parallel."""
    def one(g):
        s, rep = toolfit(profile, g["schema"])
        return s, rep["records"]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        return list(ex.map(one, groups))


def remote(g):
    """A group whose schema declares one of the suite's remote metaschemas: toolfit never fetches."""
    return isinstance(g["schema"], dict) and "localhost:1234" in str(g["schema"].get("$schema", ""))


REQUEST_TOOLS = 40  # tools per request, as agents send them (a whole 300-tool catalog is one grammar too large)


def corpus_requests():
    """(label, OpenAI chat function tools) per REQUEST_TOOLS of each corpus file (a catalog, a generator's
    entries), and the issues' schemas as one request."""
    out, issues = [], []
    for label, rows in by_file(corpus_tools()):
        tools = [(n, p) for _, n, p, _ in rows]
        if label.startswith("issues/"):
            issues += tools
            continue
        for i in range(0, len(tools), REQUEST_TOOLS):
            out.append((f"{label}[{i}:]", tools[i:i + REQUEST_TOOLS]))
    out.append(("issues", issues))
    return [(label, [{"type": "function", "function": {"name": n, "description": "", "parameters": p}} for n, p in tools])
            for label, tools in out]


# Tools that clash in vLLM's wrapper: two `Config` definitions, a recursive root (`#`), a pointer into the
# tool's own properties, draft-07 `definitions`. Calls: (tool, arguments, valid)
CLASH_TOOLS = [
    ("set_a", {"type": "object", "properties": {"c": {"$ref": "#/$defs/Config"}}, "required": ["c"],
               "$defs": {"Config": {"type": "string"}}}),
    ("set_b", {"type": "object", "properties": {"c": {"$ref": "#/$defs/Config"}, "d": {"$ref": "#/properties/c"}},
               "required": ["c"], "$defs": {"Config": {"type": "integer"}}}),
    ("tree", {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["kids"]}),
    ("user", {"type": "object", "properties": {"u": {"$ref": "#/definitions/User"}}, "required": ["u"],
              "definitions": {"User": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}}}),
]
CLASH_CALLS = [
    ("set_a", {"c": "x"}, True), ("set_a", {"c": 1}, False),
    ("set_b", {"c": 1, "d": 2}, True), ("set_b", {"c": "x"}, False), ("set_b", {"c": 1, "d": "x"}, False),
    ("tree", {"kids": [{"kids": []}, {"kids": [{"kids": []}]}]}, True), ("tree", {"kids": [{"kids": [1]}]}, False),
    ("user", {"u": {"n": "ann"}}, True), ("user", {"u": {"n": 1}}, False),
]


def deep_tool(levels):
    """A tool whose parameters nest `levels` objects: 2 JSON levels each (`properties`, the property)."""
    s = {"type": "string"}
    for _ in range(levels):
        s = {"type": "object", "properties": {"a": s}, "required": ["a"]}
    return {"type": "function", "function": {"name": "deep", "description": "", "parameters": s}}


def required_request(tools):
    return {"model": "m", "tool_choice": "required", "tools": tools}


def required_checks(judge):
    requests = corpus_requests()
    clash = [{"type": "function", "function": {"name": n, "description": "", "parameters": p}} for n, p in CLASH_TOOLS]
    calls = [[{"name": n, "parameters": a}] for n, a, _ in CLASH_CALLS]
    want = [v for _, _, v in CLASH_CALLS]
    raw = judge.run([{"backend": "vllm", "tools": t} for _, t in requests], REQUEST_SECONDS)
    raw_clash = judge.one({"backend": "vllm", "tools": clash, "instances": calls})
    print(f"tool_choice required: raw, {sum(not r['ok'] for r in raw)} of {len(raw)} corpus requests refused by vLLM; "
          f"the clash request: {raw_clash.get('error', 'accepted')[:80]}")
    for profile, backend in ((p, PROFILES[p]) for p in WRAPPED):
        def one(item):
            label, tools = item
            return label, toolfit_request(profile, required_request(tools))["tools"]
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
            rewritten = list(ex.map(one, requests))
        res = judge.run([{"backend": backend, "tools": t} for _, t in rewritten], REQUEST_SECONDS)
        bad = [(label, r["error"][:140]) for (label, _), r in zip(rewritten, res) if not r["ok"]]
        check(f"{profile}: every corpus request compiles in vLLM's tool_choice=required wrapper on {backend}", not bad,
              f"{len(res)} requests" if not bad else f"{len(bad)} refused: {bad[:3]}")
        deep = [deep_tool(30)]
        raw_deep, r = judge.one({"backend": backend, "tools": deep}), judge.one({"backend": backend, "tools": toolfit_request(profile, required_request(deep))["tools"]})
        check(f"{profile}: a tool nested past vLLM's limit in the wrapper is cut to fit on {backend}", not raw_deep["ok"] and r["ok"],
              f"raw: {raw_deep.get('error', 'accepted')[:60]}; toolfit: {r.get('error', 'accepted')[:80]}")
        r = judge.one({"backend": backend, "tools": toolfit_request(profile, required_request(clash))["tools"], "instances": calls})
        wrong = [c for c, a, w in zip(CLASH_CALLS, r.get("accepts", []), want) if a != w]
        check(f"{profile}: clashing tools keep their meaning in the wrapper on {backend}", r["ok"] and not wrong,
              r.get("error", "") or f"wrong answers: {wrong}")


def toolfit_request(profile, body):
    return toolfit_body(body, profile=profile)[0]


def matrix(judge, backend, groups, rewritten):
    """The matrix of one backend over the groups; valid instances refused come back as (group, data)."""
    items, counts = [], []
    for g, (s, _) in zip(groups, rewritten):
        spelled = [spellings(t["data"], s, s) for t in g["tests"]]
        for sp, t in zip(spelled, g["tests"]):
            d = declared_order(t["data"], s, s)
            if json.dumps(d) not in {json.dumps(x) for x in sp}:
                sp.append(d)
        items.append({"backend": backend, "schema": s, "instances": [v for sp in spelled for v in sp]})
        counts.append([len(sp) for sp in spelled])
    m = collections.Counter()
    silent, refused, valid_refused, ignored = [], [], [], []
    for g, (_, records), r, c in zip(groups, rewritten, judge.run(items), counts):
        if not r["ok"]:
            m["rejected"] += 1
            if (backend, g["file"], g["description"]) not in KNOWN_REFUSED:
                refused.append(f"{g['file']}: {g['description']}: {r['error'][:100]}")
            continue
        accepts, i = [], 0
        for n in c:  # a test is accepted when any of its spellings is
            accepts.append(any(r["accepts"][i:i + n]))
            i += n
        unexplained = []
        for t, a in zip(g["tests"], accepts):
            m[("valid" if t["valid"] else "invalid") + ("_accepted" if a else "_rejected")] += 1
            # an invalid instance through is silent loss unless a record stands at what it violates
            if not t["valid"] and a and excuse.excused(records, g["schema"], t["data"]) is None:
                unexplained.append(json.dumps(t["data"])[:40])
            if t["valid"] and not a:
                valid_refused.append((g, t["data"]))
        if unexplained:
            silent.append(f"{g['file']}: {g['description']}: {'; '.join(unexplained[:2])}")
        # a keyword the backend says it ignored must be one toolfit recorded as lost
        recorded = {k for x in records if x["lossy"] for k in excuse.record_keywords(x)}
        for w in r["warnings"]:
            named = set(excuse.KEYWORD.findall(w))
            if ONE_OF_FALLBACK not in w and not (named & recorded if named else recorded):
                ignored.append(f"{g['file']}: {g['description']}: {w[:100]}")
    m["silent_groups"] = len(silent)
    return m, silent, refused, valid_refused, ignored


def patterns_by_meaning(judge):
    """Every corpus pattern, Claude Code's `Artifact` pattern and the Unicode-property ones the llama judges
    use, rewritten with each profile: each kept one is accepted by the backend's own matcher on exactly the
    strings Node's RegExp (`u`) accepts; each removed one has a lossy record. Strings JSON writes with an
    escape are left out, as for llama.cpp."""
    import re
    import hosted_judges
    from llama_judges import PROPERTY_PATTERNS, PROPERTY_SAMPLES
    pats = PROPERTY_PATTERNS + [hosted_judges.ARTIFACT] + hosted_judges.corpus_patterns()
    samples = [x for x in dict.fromkeys(PROPERTY_SAMPLES + hosted_judges.SAMPLES) if not re.search(r'["\\\x00-\x1f]', x)]
    want = ecma.matrix(pats, samples)
    for profile, backend in PROFILES.items():
        done = [toolfit(profile, {"type": "string", "pattern": p}) for p in pats]
        kept = [i for i, (s, _) in enumerate(done) if "pattern" in s]
        res = judge.run([{"backend": backend, "schema": done[i][0], "instances": samples} for i in kept])
        wrong = [(pats[i][:50], r.get("error", "")[:120] if not r["ok"] else [x for x, a, b in zip(samples, r["accepts"], want[i]) if a != b][:3])
                 for i, r in zip(kept, res) if not r["ok"] or r["accepts"] != want[i]]
        unexplained = [pats[i][:50] for i, (s, rep) in enumerate(done)
                       if "pattern" not in s and not any(r["kind"] == "pattern_removed" and r["lossy"] for r in rep["records"])]
        check(f"{profile}: every pattern kept is matched by {backend} on {len(samples)} strings as Node's RegExp does ({len(kept)} kept of {len(pats)})",
              not wrong and len(kept) >= len(PROPERTY_PATTERNS) - 1, wrong[:3])
        check(f"{profile}: every pattern removed has a lossy record ({len(pats) - len(kept)})", not unexplained, unexplained[:3])
    # the control: a class written a range short of \p{Zs} must disagree with Node on some string
    bad = judge.run([{"backend": "xgrammar", "schema": {"type": "string", "pattern": "^[ \u00a0x]+$"}, "instances": samples}])[0]
    check("control: xgrammar on a class missing ranges of \\p{Zs} disagrees with Node's verdicts", bad["ok"] and bad["accepts"] != want[4], bad)


def main():
    if not os.path.exists(TOOLFIT):
        sys.exit("build first: cargo build --release")
    py, src = setup()
    judge = Judge(py, src)
    try:
        for profile, backend in PROFILES.items():
            schemas = corpus_schemas(profile)
            res = judge.run([{"backend": backend, "schema": s} for _, s in schemas])
            bad = [(label, r["error"][:140]) for (label, _), r in zip(schemas, res) if not r["ok"]]
            check(f"{profile}: every corpus schema rewritten compiles on {backend}", not bad,
                  f"{len(schemas)} schemas" if not bad else f"{len(bad)} refused: {bad[:3]}")
        required_checks(judge)
        patterns_by_meaning(judge)

        groups = [g for g in jsts_groups("draft2020-12") if not remote(g)]
        print(f"JSON-Schema-Test-Suite 2020-12: {len(groups)} groups outside optional/ (without the remote metaschemas)")
        raw = [(g["schema"], []) for g in groups]
        for profile, backend in PROFILES.items():
            m_raw, *_ = matrix(judge, backend, groups, raw)
            rewritten = rewrite_all(profile, groups)
            m, silent, refused, valid_refused, ignored = matrix(judge, backend, groups, rewritten)
            print(f"  {backend:9} raw:     " + "  ".join(f"{k} {m_raw[k]}" for k in MATRIX_KEYS))
            print(f"  {backend:9} toolfit: " + "  ".join(f"{k} {m[k]}" for k in MATRIX_KEYS))
            known = m["rejected"] - len(refused)
            check(f"{profile}: no JSTS schema refused by {backend} beyond the {known} listed", not refused,
                  "; ".join(refused[:5]) or f"raw: {m_raw['rejected']} refused")
            check(f"{profile}: no silent loss on {backend}", not silent and not ignored, "; ".join((silent + ignored)[:8]))
            schema_of = {id(g): s for g, (s, _) in zip(groups, rewritten)}
            why = collections.Counter()
            unlisted = []
            for g, data in valid_refused:
                reason = refused_why(g, schema_of[id(g)], data, backend)
                why[reason] += 1
                if reason is None:
                    unlisted.append(f"{g['file']} | {g['description']} | {json.dumps(data)[:60]}")
            check(f"{profile}: valid instances refused on {backend} only where a rule or the list says why", not unlisted,
                  "; ".join(f"{n} {r[:40]}" for r, n in why.items() if r) if not unlisted else "; ".join(unlisted[:12]))
        email = {"anyOf": [{"type": "string", "format": "email"}, {"type": ["number", "boolean", "object", "array", "null"]}]}
        check("control: format.json's reason covers a string the asserted format refuses, never a number",
              format_refused(email, "2962") and not format_refused(email, 12))
        stale = [k for k in VALID_REFUSED if k not in USED]
        check("every listed valid refusal still happens on some backend", not stale, stale)
        for name, ok in excuse.self_test():
            check(f"excuse rule: {name}", ok)
    finally:
        judge.close()
    close("vllm judges", results)


if __name__ == "__main__":
    main()
