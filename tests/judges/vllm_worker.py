#!/usr/bin/env python3
"""One judge process for vLLM's structured-output backends, run in the judges' venv (see
tests/judges/vllm_judges.py, which builds it). Reads JSON lines {"backend", "schema", "instances"?} and writes one
JSON line per item, flushed at once: {"ok", "error"?, "accepts"?, "warnings"}.

Each backend is compiled the way vLLM 0.33.0 compiles it (vllm/v1/structured_output/backend_*.py):
- xgrammar: `Grammar.from_json_schema(any_whitespace=True, strict_mode=True)`; xgrammar's warnings on
  stderr (a keyword it ignores) are returned, so the caller can count silent loosening;
- guidance: `LLMatcher.grammar_from_json_schema(whitespace_flexible=True)` then `validate_grammar`;
- outlines: `build_regex_from_schema` and vLLM's own `validate_regex_is_buildable`; instances are matched
  against that regex;
- vllm: what `auto` does first: vLLM's own `check_json_nesting` and `has_xgrammar_unsupported_json_features`,
  then xgrammar.
An item with "tools" (OpenAI chat function tools) instead of "schema" is first turned into the one schema
vLLM compiles for `tool_choice: "required"`, by vLLM's own `_get_json_schema_from_tools` (which hoists and
merges the tools' `$defs`, and refuses a clash), then checked for nesting as vLLM does for every backend.
vLLM's check functions are read out of the vLLM wheel (VLLM_SRC: its extracted .py files) by name and run
as they are; the rest of vLLM (CUDA, torch) is not needed for them.

xgrammar's package imports torch for its GPU bitmask helpers, which compiling and matching strings do not
use: a stand-in module named torch is installed after tvm_ffi and transformers have looked for the real one
and found none.
"""
import ast, json, os, re, resource, sys, tempfile

from xgrammar_standin import load_xgrammar

VLLM_SRC = os.environ["VLLM_SRC"]
# an outlines-core DFA or an llguidance grammar can grow without bound on a large schema
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


class VLLMValidationError(ValueError):
    def __init__(self, message, parameter=None):
        super().__init__(message)


def vllm_functions():
    """vLLM's own check functions, by name, from its source files."""
    wanted = {
        "vllm/sampling_params.py": ["MAX_STRUCTURED_OUTPUT_JSON_NESTING", "STRUCTURAL_TAG_WRAPPER_NESTING", "_exceeds_json_nesting", "check_json_nesting"],
        "vllm/v1/structured_output/backend_xgrammar.py": ["STRING_SUPPORTED_FORMATS", "_has_pattern_and_length_bounds", "_schema_types",
                                                           "has_xgrammar_unsupported_json_features"],
        "vllm/v1/structured_output/backend_outlines.py": ["_prefix_needs_context", "_check_unsupported", "validate_regex_is_buildable"],
        "vllm/tool_parsers/utils.py": ["_params_or_empty_object", "_get_tool_schema_from_name_and_params", "_get_tool_schema_from_tool",
                                       "_get_tool_schema_defs", "_get_json_schema_from_tools"],
    }
    from re import _constants, _parser  # noqa: F401  (what backend_outlines.py uses)
    ns = {"Any": object, "json": json, "_constants": _constants, "_parser": _parser, "VLLMValidationError": VLLMValidationError,
          # vLLM's request models stand in as the plain JSON tools they are parsed from
          "Tool": dict, "require_function_tools": lambda tools: [t for t in tools if t.get("type") == "function"],
          "_extract_tool_info": lambda t: (t["function"]["name"], t["function"].get("parameters"))}
    for path, names in wanted.items():
        tree = ast.parse(open(os.path.join(VLLM_SRC, path)).read())
        body, got = [], set()
        for n in tree.body:
            if isinstance(n, ast.FunctionDef):
                found = {n.name}
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                found = {t.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
            else:
                continue
            if found & set(names):
                body.append(n)
                got |= found
        if set(names) - got:
            raise SystemExit(f"{path}: {sorted(set(names) - got)} not found (vLLM changed?)")
        exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), ns)
    return ns


xg = load_xgrammar()
import llguidance as llg  # noqa: E402
import outlines_core as oc  # noqa: E402

VLLM = vllm_functions()


class ByteTokenizer:
    """One token per byte, and an end token: instances are matched byte by byte."""
    def __init__(self):
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.eos_token_id = 256
        self.bos_token_id = None

    def __call__(self, s):
        return list(s)


LLTOK = llg.LLTokenizer(llg.TokenizerWrapper(ByteTokenizer()))


class Stderr:
    """Collects what native code writes to fd 2 while it runs (xgrammar's warnings)."""
    def __enter__(self):
        sys.stderr.flush()
        self.f = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.f.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.f.seek(0)
        self.text = self.f.read().decode(errors="replace")
        self.f.close()


def text(instance):
    # as a model writes it: non-ASCII characters as themselves (an escape, `\u03bc`, is another
    # spelling, which a grammar that writes a const's characters does not take)
    return json.dumps(instance, ensure_ascii=False)


def xgrammar(schema, instances, warnings):
    with Stderr() as err:
        g = xg.Grammar.from_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=True)
        accepts = [xg.testing._is_grammar_accept_string(g, text(i)) for i in instances]
    warnings += [l.split("Warning: ", 1)[1] for l in err.text.splitlines() if "Warning: " in l]
    return accepts


def guidance(schema, instances, warnings):
    grammar = llg.LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults={"whitespace_flexible": True})
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar, LLTOK)
    if is_error:
        raise ValueError(messages[0] if messages else "invalid grammar")
    warnings += messages
    out = []
    for i in instances:
        m = llg.LLMatcher(LLTOK, grammar, log_level=0)
        ok = m.consume_tokens(list(text(i).encode())) and not m.is_error()
        out.append(bool(ok and m.is_accepting()))
    return out


def outlines(schema, instances, warnings):
    regex = oc.json_schema.build_regex_from_schema(json.dumps(schema))
    VLLM["validate_regex_is_buildable"](regex)
    # Instances are matched against outlines-core's own regex with Python's `re`, not with its Index and
    # Guide: over a vocabulary of one token per character the Index does not take what its regex takes
    # (outlines-core 0.2.14: for `2(\.5)?` it offers only EOS after "2", so "2.5" cannot be written), and
    # over a model's real vocabulary it takes minutes and gigabytes for one untyped value. The regexes it
    # writes for JSON stay in the subset both engines read alike (classes, groups, counted repeats); a
    # user's `pattern` inside one is where they could differ (tests/README.md, "Judges' limits").
    if not instances:
        return []
    compiled = re.compile(regex)
    return [compiled.fullmatch(text(i)) is not None for i in instances]


def vllm(schema, instances, warnings):
    VLLM["check_json_nesting"](schema)
    if VLLM["has_xgrammar_unsupported_json_features"](schema):
        raise ValueError("The provided JSON schema contains features not supported by xgrammar.")
    return xgrammar(schema, instances, warnings)


BACKENDS = {"xgrammar": xgrammar, "guidance": guidance, "outlines": outlines, "vllm": vllm}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        item = json.loads(line)
        warnings = []
        try:
            if "tools" in item:
                item["schema"] = VLLM["_get_json_schema_from_tools"](item["tools"])
                VLLM["check_json_nesting"](item["schema"])
            accepts = BACKENDS[item["backend"]](item["schema"], item.get("instances", []), warnings)
            out = {"ok": True, "accepts": accepts, "warnings": warnings}
        except Exception as e:  # the backend refused the schema: what vLLM answers 400 for
            out = {"ok": False, "error": str(e).split("\n")[0][:300], "warnings": warnings}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
