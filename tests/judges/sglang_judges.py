#!/usr/bin/env python3
"""Acceptance for the `sglang` profile: every corpus schema (tools' parameters and output schemas), raw and
through toolfit, judged the way SGLang 0.5.23 compiles it with its default `--grammar-backend xgrammar`:
SGLang's own pre-check (`validate_xgrammar_json_schema`, read out of the SGLang wheel from the registry)
and xgrammar 0.2.7, the version SGLang pins (tests/judges/sglang_worker.py). SGLang answers a schema
either refuses with an invalid-grammar error for the whole request. Every check has its control: the
pre-check and xgrammar each refuse a schema they are shown, and the raw corpus is refused somewhere.
Prints per-kind counts and 'N passed, M failed'; exit 1 on any failure."""
import concurrent.futures, json, os, shutil, subprocess, sys, zipfile

from harness.venv import cache_dir, venv
from harness.verdict import check, close, results
from llama_judges import by_file, corpus_schemas, corpus_tools, jsts_groups
from harness.paths import TOOLFIT

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_worker.py")
PINS = ["apache-tvm-ffi==0.1.15.post2", "transformers==5.23.0", "pydantic==2.14.3", "numpy==2.4.6", "typing-extensions==4.16.0"]
XGRAMMAR = "xgrammar==0.2.7"  # the version sglang==0.5.23 pins; without its torch/triton requirements
SGLANG = "sglang==0.5.23"
CHECKS = "sglang/srt/constrained/json_schema_validation.py"


def setup():
    """The judges' venv and SGLang's pre-check, cached; returns (python, the pre-check's file)."""
    d = cache_dir("sglang")
    py = venv("sglang", PINS, [XGRAMMAR])
    src = os.path.join(d, "sglang-src", CHECKS)
    if not os.path.exists(src):
        wheels = os.path.join(d, "wheel")
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "--only-binary", ":all:", "-d", wheels, SGLANG], check=True)
        whl = [f for f in os.listdir(wheels) if f.endswith(".whl")][0]
        with zipfile.ZipFile(os.path.join(wheels, whl)) as z:
            z.extract(CHECKS, os.path.join(d, "sglang-src"))
        shutil.rmtree(wheels)  # 39 MB; only the pre-check is kept
    return py, src


def judge(py, src, schemas, key="schema"):
    """One verdict per schema (with `key` None: per item {"schema", "instances"})."""
    p = subprocess.run([py, WORKER], input="".join(json.dumps({key: s} if key else s) + "\n" for s in schemas), capture_output=True, text=True,
                       env={**os.environ, "SGLANG_SRC": src, "TRANSFORMERS_VERBOSITY": "error"}, timeout=1800)
    out = [json.loads(x) for x in p.stdout.splitlines()]
    if len(out) != len(schemas):
        check("the SGLang judge answered every schema", False, p.stderr[-800:])
    return out


def main():
    py, src = setup()
    # the controls: SGLang's pre-check refuses what xgrammar would silently drop; xgrammar refuses a
    # dangling reference; a plain schema passes both
    controls = [({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}, "multipleOf would be ignored"),
                ({"type": "string", "format": "email", "maxLength": 9}, "cannot be enforced together"),
                ({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}, "RuntimeError"),
                ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, None)]
    got = judge(py, src, [s for s, _ in controls])
    for (s, words), v in zip(controls, got):
        if words is None:
            check("control: a plain schema compiles on SGLang's xgrammar", v["ok"], v)
        else:
            check(f"control: refused ({words})", not v["ok"] and words in v.get("error", ""), v)
    raw = [(f"{label}:{n}:{key}", s) for label, rows in by_file(corpus_tools()) for _, n, p, o in rows
           for key, s in (("inputSchema", p), ("outputSchema", o)) if isinstance(s, (dict, bool))]
    fixed = corpus_schemas("sglang")
    v_raw = judge(py, src, [s for _, s in raw])
    v_fixed = judge(py, src, [s for _, s in fixed])
    refused_raw = sum(not v["ok"] for v in v_raw)
    print(f"sglang (xgrammar 0.2.7 behind SGLang 0.5.23's pre-check): {len(raw)} corpus schemas, {refused_raw} refused raw, "
          f"{sum(not v['ok'] for v in v_fixed)} refused after toolfit")
    check(f"the raw corpus is refused somewhere ({refused_raw} of {len(raw)}): the judge can say no", refused_raw > 0)
    check(f"every corpus schema is rewritten ({len(fixed)} of {len(raw)})", len(fixed) == len(raw), (len(fixed), len(raw)))
    for (label, _), v in zip(fixed, v_fixed):
        check(f"sglang: {label} compiles after toolfit", v["ok"], v.get("error"))
    # the JSON-Schema-Test-Suite 2020-12 (outside optional/): every group's schema, raw and through toolfit
    groups = [g for g in jsts_groups("draft2020-12") if "localhost:1234" not in json.dumps(g["schema"])]

    def one(s):
        p = subprocess.run([TOOLFIT, "normalize", "--profile", "sglang", "--schema"], input=json.dumps(s).encode(), capture_output=True)
        return json.loads(p.stdout) if p.returncode == 0 else None
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        rewritten = list(ex.map(one, [g["schema"] for g in groups]))
    v_jraw = judge(py, src, [g["schema"] for g in groups])
    # toolfit failing on a schema is a failure of its own, not a schema to judge
    failed = [f"{g['file']}: {g['description']}" for g, s in zip(groups, rewritten) if s is None]
    check(f"JSTS 2020-12: toolfit rewrites every group's schema ({len(groups)})", not failed, failed[:5])
    done = [(g, s) for g, s in zip(groups, rewritten) if s is not None]
    v_jfix = judge(py, src, [s for _, s in done])
    jraw = sum(not v["ok"] for v in v_jraw)
    bad = [f"{g['file']}: {g['description']}: {v.get('error')}" for (g, _), v in zip(done, v_jfix) if not v["ok"]]
    print(f"sglang: JSON-Schema-Test-Suite 2020-12: {len(groups)} groups, {jraw} refused raw, {len(bad)} refused after toolfit")
    check(f"JSTS 2020-12: raw, SGLang refuses some groups ({jraw} of {len(groups)})", jraw > 0)
    check(f"JSTS 2020-12: every group's schema compiles after toolfit ({len(groups)})", groups and not bad, bad[:5])
    instance_matrix(py, src, groups)
    return close("sglang judges", results)


class Judge:
    """vllm_judges.matrix's judge: items {"schema", "instances"} through one worker run."""

    def __init__(self, py, src):
        self.py, self.src = py, src

    def run(self, items):
        return judge(self.py, self.src, items, key=None)


def instance_matrix(py, src, groups):
    """The JSTS instances matched by SGLang's own xgrammar, raw and through the `sglang` profile (its
    target is not xgrammar-as-vLLM-runs-it): no silent loss (an invalid instance accepted without a lossy
    record at its keyword and place), no group refused, and a valid instance refused only where a rule or
    the vLLM judges' list says why."""
    import collections
    import vllm_judges
    groups = [g for g in groups if not vllm_judges.remote(g)]
    m_raw, *_ = vllm_judges.matrix(Judge(py, src), "sglang", groups, [(g["schema"], []) for g in groups])
    rewritten = vllm_judges.rewrite_all("sglang", groups)
    m, silent, refused, valid_refused, _ = vllm_judges.matrix(Judge(py, src), "sglang", groups, rewritten)
    print("  sglang raw:     " + "  ".join(f"{k} {m_raw[k]}" for k in vllm_judges.MATRIX_KEYS))
    print("  sglang toolfit: " + "  ".join(f"{k} {m[k]}" for k in vllm_judges.MATRIX_KEYS))
    check(f"sglang: JSTS instances: the raw matrix accepts an invalid instance somewhere (the matrix can say no: {m_raw['invalid_accepted']})",
          m_raw["invalid_accepted"] > 0)
    check("sglang: JSTS instances: no group refused through toolfit", not refused, refused[:5])
    check(f"sglang: JSTS instances: no silent loss ({m['valid_accepted'] + m['invalid_rejected']} answered as JSON Schema means)", not silent, silent[:8])
    schema_of = {id(g): s for g, (s, _) in zip(groups, rewritten)}
    why, unlisted = collections.Counter(), []
    for g, data in valid_refused:
        reason = vllm_judges.refused_why(g, schema_of[id(g)], data, "sglang")
        why[reason] += 1
        if reason is None:
            unlisted.append(f"{g['file']} | {g['description']} | {json.dumps(data)[:60]}")
    check("sglang: JSTS instances: a valid instance refused only where a rule or the list says why", not unlisted,
          "; ".join(unlisted[:12]) or "; ".join(f"{n} {r[:40]}" for r, n in why.items() if r))


if __name__ == "__main__":
    sys.exit(main())
