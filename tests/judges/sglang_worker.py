#!/usr/bin/env python3
"""One judge process for SGLang's default grammar backend, run in the SGLang judges' venv (see
tests/judges/sglang_judges.py, which builds it). Reads JSON lines {"schema", "instances"?} and writes one
JSON line per item, flushed at once: {"ok", "error"?, "accepts"?}.

Each schema is judged the way SGLang 0.5.23 compiles a `json_schema` or a tool's parameters with
`--grammar-backend xgrammar` (sglang/srt/constrained/xgrammar_backend.py, `dispatch_json`): SGLang's own
`validate_xgrammar_json_schema` first (read out of the SGLang wheel: SGLANG_SRC is its extracted
json_schema_validation.py, run as it is), then xgrammar 0.2.7's `Grammar.from_json_schema` with
`any_whitespace=True` (SGLang's default). Either refusing is SGLang's `InvalidGrammarObject`: the
request fails.

xgrammar is loaded without torch, as for vLLM's judge (tests/judges/xgrammar_standin.py).
"""
import json, os, resource, sys

from xgrammar_standin import load_xgrammar

resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def sglang_validator():
    """SGLang's `validate_xgrammar_json_schema`, from its source file as the wheel ships it."""
    ns = {"__name__": "sglang_json_schema_validation"}
    path = os.environ["SGLANG_SRC"]
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns["validate_xgrammar_json_schema"], ns["UnsupportedJSONSchemaFeature"]


def main():
    xgr = load_xgrammar()
    validate, unsupported = sglang_validator()
    for line in sys.stdin:
        item = json.loads(line)
        schema = item["schema"]
        try:
            validate(schema)
            g = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=True)
            # each instance as a model writes it (non-ASCII as itself), matched by xgrammar's own matcher
            accepts = [xgr.testing._is_grammar_accept_string(g, json.dumps(i, ensure_ascii=False)) for i in item.get("instances", [])]
            out = {"ok": True, "accepts": accepts, "warnings": []}
        except (RuntimeError, ValueError, unsupported) as e:
            out = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
