#!/usr/bin/env python3
"""Acceptance for the hosted-API profiles, judged by the APIs' own SDKs from the registry (in a venv of its
own under ~/.cache/toolfit/hosted, built on first use) and by the documented rules they do not check:

- openai / openai-strict: every corpus file's tools in one Chat Completions request. A tool sent
  `strict: true` passes every rule of backend-rules.md §2.1 (each check names its row) and openai-agents'
  `ensure_strict_json_schema` returns it unchanged; a tool sent non-strict passes §2.2's structural rules
  (sections of docs/backend-rules.md, a copy of the project's backend notes).
  Under openai-strict every tool says which it is, and every declined one has a `strict_declined` record.
- anthropic / anthropic-strict: the same as a Messages request: §2.3's root rules for every tool; for strict
  ones, additionalProperties: false everywhere and the `anthropic` SDK's `transform_schema` leaves them
  unchanged (§3.4), at most 20 strict tools per request.
- gemini: as `functionDeclarations[].parameters` (google-genai's `FunctionDeclaration` with extra fields
  forbidden, its Developer-API check on every node, no type lists, nothing beside anyOf, string enums) and
  as `parametersJsonSchema` (the same request read with gemini-json: `$ref` alone but for description).
- outputs: every corpus `outputSchema` (up to 5 per file) as an OpenAI strict `response_format` (openai-strict:
  strict where it can be, judged as tools are) and as Gemini's `generationConfig.responseSchema`
  (google-genai's `Schema`, no type lists, nothing beside anyOf).
- openai-responses: the same tools as a Responses API request (`tools[]` flat: name, parameters, strict),
  each taken by the `openai` package's own `FunctionTool` model and, when strict, judged as above; and
  every output schema as Responses' `text.format` (the package's `ResponseFormatTextJSONSchemaConfig`,
  strict ones by §2.1 and openai-agents' checker).
- gemini-json-output: every output schema as `generationConfig.responseJsonSchema` (google-genai's
  `GenerationConfig` takes it; the gemini-json rules hold on every node).
- cohere: a v2 chat request with `strict_tools: true`: no `strict` member, the `cohere` SDK's `ToolV2` takes
  every tool, and where `strict_tools` is still on, its limits hold (200 fields, a required parameter in
  every tool that has parameters, §2.7).

Raw (as the corpus has them) the same requests are judged too, to show what each API would refuse.
Prints per-profile counts and a closing 'N passed, M failed' line; exit 1 on any failure.
"""
import json, os, re, subprocess, sys

from harness import ecma
from harness.paths import ROOT, TOOLFIT
from harness.venv import venv
from harness.verdict import check, close, results
from llama_judges import by_file, corpus_tools

PINS = ["openai-agents==0.24.0", "google-genai==3.4.0", "anthropic==2.12.0", "cohere==7.3.1", "botocore==1.44.5", "mistralai==3.7.0"]
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hosted_worker.py")


def request(api, rows):
    """The corpus file's tools as one request of that API."""
    params = [(n, p if isinstance(p, dict) else {"type": "object"}) for _, n, p, _ in rows]
    if api == "openai-responses":
        return "openai-responses", {"model": "m", "input": "x", "tools": [{"type": "function", "name": n, "description": "d", "parameters": p} for n, p in params]}
    if api.startswith("openai") or api in ("azure-openai", "mistral", "groq", "groq-strict", "deepseek", "deepseek-strict", "xai"):
        return "openai-chat", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": n, "description": "d", "parameters": p}} for n, p in params]}
    if api.startswith("anthropic"):
        return "anthropic", {"model": "m", "messages": [], "tools": [{"name": n, "description": "d", "input_schema": p} for n, p in params]}
    if api == "gemini":
        return "gemini", {"contents": [], "tools": [{"functionDeclarations": [{"name": n, "description": "d", "parameters": p} for n, p in params]}]}
    if api == "gemini-json":
        return "gemini", {"contents": [], "tools": [{"functionDeclarations": [{"name": n, "description": "d", "parametersJsonSchema": p} for n, p in params]}]}
    if api.startswith("bedrock"):
        strict = {"strict": True} if api == "bedrock-strict" else {}
        return "bedrock-converse", {"messages": [{"role": "user", "content": [{"text": "x"}]}],
                                    "toolConfig": {"tools": [{"toolSpec": {"name": n, "description": "d", **strict, "inputSchema": {"json": p}}} for n, p in params]}}
    return "cohere", {"model": "m", "messages": [], "strict_tools": True, "tools": [{"type": "function", "function": {"name": n, "description": "d", "parameters": p}} for n, p in params]}


# the profile each API's requests go through (gemini-json: the gemini profile's JSON Schema fields)
PROFILE = {"openai": "openai", "openai-strict": "openai-strict", "openai-responses": "openai-strict", "anthropic": "anthropic", "anthropic-strict": "anthropic-strict",
           "gemini": "gemini", "gemini-json": "gemini", "cohere": "cohere",
           "bedrock": "bedrock", "bedrock-anthropic": "bedrock-anthropic", "bedrock-strict": "bedrock-strict", "azure-openai": "azure-openai", "mistral": "mistral",
           "groq": "groq", "groq-strict": "groq-strict", "deepseek": "deepseek", "deepseek-strict": "deepseek-strict", "xai": "xai"}


def rewrite(body, fmt, profile):
    p = subprocess.run([TOOLFIT, "normalize", "--profile", profile, "--format", fmt, "--report", "-"], input=json.dumps(body).encode(), capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode()[:400])
    return json.loads(p.stdout), json.loads(p.stderr.decode().strip().split("\n")[-1])


def outputs(api, rows):
    """(format, body) for each of the file's output schemas (at most 5)."""
    out = []
    for _, n, _, o in rows:
        if isinstance(o, dict) and len(out) < 5:
            if api == "openai-output":
                out.append(("openai-chat", {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "out", "strict": True, "schema": o}}}))
            elif api in ("groq-output", "groq-strict-output", "xai-output"):
                strict = {"strict": True} if api == "groq-strict-output" else {}
                out.append(("openai-chat", {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "out", **strict, "schema": o}}}))
            elif api == "openai-responses-output":
                out.append(("openai-responses", {"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "out", "strict": True, "schema": o}}}))
            elif api == "bedrock-output":
                js = {"name": "out", "schema": json.dumps(o)}
                out.append(("bedrock-converse", {"messages": [{"role": "user", "content": [{"text": "x"}]}],
                                                 "outputConfig": {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": js}}}}))
            elif api == "gemini-json-output":
                out.append(("gemini", {"contents": [], "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": o}}))
            else:
                out.append(("gemini", {"contents": [], "generationConfig": {"responseMimeType": "application/json", "responseSchema": o}}))
    return out


# Shapes MCP servers send that Gemini's `parameters` refuse and JSON Schema allows (§2.5): one tool each,
# with the words of the refusal the judge must give for it raw.
GEMINI_SHAPES = [
    ("array_without_items", {"type": "object", "properties": {"paths": {"type": "array", "description": "files"}}}, "items: missing field"),
    ("no_arguments", {"type": "object", "properties": {}}, "should be non-empty for OBJECT type"),
    ("properties_on_string", {"type": "object", "properties": {"q": {"type": "string", "properties": {"x": {"type": "string"}}}}},
     "only allowed for OBJECT type"),
    ("items_on_string", {"type": "object", "properties": {"v": {"type": "string", "items": {"type": "string"}}}}, "$type == Type.ARRAY"),
]


# What judges each row: the SDK's own types or transforms that can refuse a schema, plus the documented
# rules (hosted_worker.py, by section of docs/backend-rules.md); "rules" where the SDK types the schema
# as any object, so only the written rules can say no.
JUDGED_BY = {
    "openai": "rules (the SDK types parameters as any object)",
    "openai-strict": "SDK (openai-agents ensure_strict_json_schema) + rules",
    "openai-responses": "SDK (openai FunctionTool) + rules",
    "anthropic": "rules (the SDK types input_schema as any object)",
    "anthropic-strict": "SDK (anthropic transform_schema) + rules",
    "gemini": "SDK (google-genai FunctionDeclaration, Schema) + rules",
    "gemini-json": "rules (google-genai types parametersJsonSchema as Any)",
    "cohere": "rules (cohere ToolV2Function types parameters as any object)",
    "openai-output": "SDK (openai-agents ensure_strict_json_schema) + rules",
    "openai-responses-output": "SDK (openai ResponseFormatTextJSONSchemaConfig) + rules",
    "gemini-output": "SDK (google-genai Schema) + rules",
    "gemini-json-output": "rules (google-genai types responseJsonSchema as Any)",
    "azure-openai": "rules (OpenAI's: Azure's 400s are its structural rules, §2.14)",
    "mistral": "SDK (mistralai Function) + rules (the 2020-12 metaschema, no $schema/$id, §2.15)",
    "bedrock": "SDK (botocore's ParamValidator, bedrock-runtime Converse) + rules",
    "bedrock-anthropic": "SDK (botocore's ParamValidator) + rules (Claude: no root union)",
    "bedrock-strict": "SDK (botocore's ParamValidator) + rules (anthropic transform_schema)",
    "bedrock-output": "SDK (botocore's ParamValidator) + rules (anthropic transform_schema)",
    "groq": "rules (§2.16: required beside properties, an object root)",
    "groq-strict": "rules (§2.16: the documented subset, closed objects, all required)",
    "groq-output": "rules (§2.16: the documented subset)",
    "groq-strict-output": "rules (§2.16: the documented subset, closed objects, all required)",
    "deepseek": "rules (§2.17: a type: object root)",
    "deepseek-strict": "rules (§2.17: the strict subset, all tools strict or none)",
    "xai": "rules (OpenAI's structural rules, §2.18)",
    "xai-output": "rules (§2.18: no length or item bounds, no allOf)",
}

# Each judged row's negative control: a request its judge must refuse, with the words of the refusal.
# Where the row has an SDK judge, the control is one the SDK itself refuses (its words); else a rule's.
NOT_OBJECT = {"type": "array", "items": {"type": "string"}}
OPEN = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
REF_SIBLINGS = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "minLength": 1}}, "$defs": {"A": {"type": "string"}}}
NEGATIVES = [
    ("openai", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "f", "parameters": NOT_OBJECT}}]},
     "root is not type: object"),
    ("openai-strict", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "f", "strict": True, "parameters": OPEN}}]},
     "ensure_strict_json_schema changes it"),
    ("openai-responses", {"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": "not a schema"}]},
     "FunctionTool refuses it"),
    ("anthropic", {"model": "m", "messages": [], "tools": [{"name": "f", "input_schema": NOT_OBJECT}]}, "input_schema root is not type: object"),
    ("anthropic-strict", {"model": "m", "messages": [], "tools": [{"name": "f", "strict": True, "input_schema": {**OPEN, "additionalProperties": False,
                                                                   "properties": {"a": {"type": "string", "minLength": 2}}}}]},
     "transform_schema changes it"),
    ("gemini", {"contents": [], "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "STRING", "bogus": 1}}}}]}]},
     "FunctionDeclaration refuses parameters"),
    ("gemini-json", {"contents": [], "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": REF_SIBLINGS}]}]},
     "$ref set alongside unsupported fields"),
    ("cohere", {"model": "m", "messages": [], "strict_tools": True, "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}}]}, "strict_tools needs a required parameter"),
    ("openai-output", {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "out", "strict": True, "schema": OPEN}}},
     "ensure_strict_json_schema changes it"),
    ("openai-responses-output", {"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "out", "strict": True, "schema": "not a schema"}}},
     "ResponseFormatTextJSONSchemaConfig refuses"),
    ("gemini-output", {"contents": [], "generationConfig": {"responseMimeType": "application/json", "responseSchema": {"type": "OBJECT", "bogus": 1}}},
     "Schema refuses responseSchema"),
    ("gemini-json-output", {"contents": [], "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": REF_SIBLINGS}},
     "$ref set alongside unsupported fields"),
    # Azure's "object schema missing properties" (Azure/azure-mcp#197)
    ("azure-openai", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]},
     "object schema missing properties"),
    # pdf-reader-mcp's tool as Mistral refused it (SylphxAI/pdf-reader-mcp#63): a draft-04 boolean exclusiveMinimum
    ("mistral", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "read_pdf", "parameters": {
        "type": "object", "properties": {"pages": {"anyOf": [{"type": "array", "items": {"type": "integer", "exclusiveMinimum": True, "minimum": 0}}]}}}}}]},
     "not valid JSON Schema"),
    # an empty description: botocore's validator refuses it (NonEmptyString), as the API does
    ("bedrock", {"messages": [], "toolConfig": {"tools": [{"toolSpec": {"name": "f", "description": "", "inputSchema": {"json": OPEN}}}]}},
     "botocore refuses the Converse request"),
    ("bedrock-anthropic", {"messages": [], "toolConfig": {"tools": [{"toolSpec": {"name": "f", "description": "d", "inputSchema": {"json": {"anyOf": [OPEN, NOT_OBJECT]}}}}]}},
     "does not support anyOf at the top level"),
    ("bedrock-strict", {"messages": [], "toolConfig": {"tools": [{"toolSpec": {"name": "f", "description": "d", "strict": True,
                                                                                 "inputSchema": {"json": {**OPEN, "additionalProperties": False, "properties": {"a": {"type": "array", "maxItems": 3}}}}}}]}},
     "transform_schema changes it"),
    ("bedrock-output", {"messages": [], "outputConfig": {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"name": "out", "schema": {"type": "object"}}}}}},
     "botocore refuses the Converse request"),
    # livekit/agents#5082: a tool without arguments, as Groq refused it
    ("groq", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}, "required": []}}}]},
     "'required' present but 'properties' is missing"),
    ("groq-strict", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "f", "strict": True, "parameters": OPEN}}]},
     "additionalProperties must be false"),
    # i-am-bee/beeai-framework#1215
    ("groq-output", {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {
        "type": "object", "properties": {"next_step": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}}}}, "minItems is not supported"),
    ("groq-strict-output", {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "out", "strict": True, "schema": OPEN}}},
     "additionalProperties must be false"),
    # Mars-Sea/dsh-commandcode-provider#35: a root $ref, no root type
    ("deepseek", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "dispatch_task", "parameters": {
        "$ref": "#/$defs/T", "$defs": {"T": OPEN}}}}]}, "got 'type: null'"),
    ("deepseek-strict", {"model": "m", "messages": [], "tools": [
        {"type": "function", "function": {"name": "f", "strict": True, "parameters": {**OPEN, "additionalProperties": False, "properties": {"a": {"type": "string", "minLength": 2}}}}},
        {"type": "function", "function": {"name": "g", "parameters": OPEN}}]}, "minLength is not supported in strict mode"),
    ("xai", {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "f", "parameters": NOT_OBJECT}}]}, "root is not type: object"),
    ("xai-output", {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"allOf": [OPEN]}}}},
     "allOf is not supported"),
]


def negatives(py):
    """Every judged row's control: its judge refuses the control request, for the reason given."""
    jobs = [{"api": api, "body": body} for api, body, _ in NEGATIVES]
    p = subprocess.run([py, WORKER], input="".join(json.dumps(j) + "\n" for j in jobs), capture_output=True, text=True)
    verdicts = [json.loads(x) for x in p.stdout.splitlines()]
    check("one verdict per control request", len(verdicts) == len(jobs), p.stderr[-500:])
    for (api, _, words), v in zip(NEGATIVES, verdicts):
        check(f"{api} ({JUDGED_BY[api]}): its negative control is refused ({words})", any(words in e for e in v["errors"]), "; ".join(v["errors"][:3]))
    check("every judged row has a negative control", set(JUDGED_BY) == {api for api, _, _ in NEGATIVES})
    # an API the worker has no rules for is refused, not passed (the agent CLI and MCP-leg doubles use it)
    p = subprocess.run([py, WORKER], input=json.dumps({"api": "no-such-api", "body": NEGATIVES[0][1]}) + "\n", capture_output=True, text=True)
    got = json.loads(p.stdout or '{"errors": []}')["errors"]
    check("an API the judges have no rules for is refused, not passed", any("no rules for the API" in e for e in got), got or p.stderr[-300:])


GOLDEN = os.path.join(ROOT, "tests", "golden", "convert")
# `toolfit convert`'s golden files (tests/convert.rs holds the CLI to them) and the API judge each is for
GOLDEN_API = {"openai": "openai", "openai-strict": "openai-strict", "openai-responses": "openai-responses",
              "openai-responses-strict": "openai-responses", "anthropic": "anthropic", "anthropic-strict": "anthropic-strict",
              "gemini": "gemini", "gemini-json": "gemini-json", "cohere": "cohere"}


def golden(py):
    """Every golden file of `toolfit convert` as the request its API receives, judged like the corpus:
    a file blessed with a schema the API refuses fails here."""
    jobs = []
    for name, api in GOLDEN_API.items():
        tools = json.load(open(os.path.join(GOLDEN, f"{name}.json")))["tools"]
        body = {"contents": [], "tools": tools} if api.startswith("gemini") else {"model": "m", "input": "x", "tools": tools} \
            if api == "openai-responses" else {"model": "m", "messages": [], "tools": tools}
        jobs.append({"api": api, "body": body})
    p = subprocess.run([py, WORKER], input="".join(json.dumps(j) + "\n" for j in jobs), capture_output=True, text=True)
    verdicts = [json.loads(x) for x in p.stdout.splitlines()]
    check("one verdict per golden file", len(verdicts) == len(jobs), p.stderr[-500:])
    for (name, api), v in zip(GOLDEN_API.items(), verdicts):
        check(f"toolfit convert's golden {name}.json is accepted by the {api} judge", not v["errors"], "; ".join(v["errors"][:3]))
    # the MCP golden: a tools/list an MCP client takes (a name, an object inputSchema the 2020-12 metaschema
    # accepts); the ollama golden is judged by the ollama client's Tool model (tests/judges/ollama_judges.py)
    import jsonschema
    bad = []
    for t in json.load(open(os.path.join(GOLDEN, "mcp.json")))["tools"]:
        s = t.get("inputSchema")
        try:
            jsonschema.Draft202012Validator.check_schema(s)
        except jsonschema.SchemaError as e:
            bad.append(f"{t.get('name')}: {e.message[:100]}")
        if not isinstance(t.get("name"), str) or not isinstance(s, dict) or s.get("type") != "object":
            bad.append(f"{t.get('name')}: not an MCP tool (name, inputSchema of type object)")
    check("toolfit convert's golden mcp.json is a tools/list an MCP client takes", not bad, bad[:3])
    control = {"name": "x", "inputSchema": {"type": "object", "properties": {"a": {"type": "strin"}}}}
    try:
        jsonschema.Draft202012Validator.check_schema(control["inputSchema"])
        said = False
    except jsonschema.SchemaError:
        said = True
    check("control: the metaschema refuses an inputSchema with an unknown type", said)


def shapes(py):
    """The judge refuses each shape raw, with its reason; after the gemini profile it accepts each, as
    `parameters` and as `responseSchema`."""
    jobs = []
    for name, p, _ in GEMINI_SHAPES:
        body = {"contents": [], "tools": [{"functionDeclarations": [{"name": name, "description": "d", "parameters": p}]}]}
        out = {"contents": [], "generationConfig": {"responseMimeType": "application/json", "responseSchema": p}}
        jobs += [{"api": "gemini", "body": body}, {"api": "gemini", "body": rewrite(body, "gemini", "gemini")[0]},
                 {"api": "gemini-output", "body": out}, {"api": "gemini-output", "body": rewrite(out, "gemini", "gemini")[0]}]
    p = subprocess.run([py, WORKER], input="".join(json.dumps(j) + "\n" for j in jobs), capture_output=True, text=True)
    verdicts = [json.loads(x) for x in p.stdout.splitlines()]
    check("one verdict per shape request", len(verdicts) == len(jobs), p.stderr[-500:])
    for i, (name, _, words) in enumerate(GEMINI_SHAPES):
        for j, field in ((0, "parameters"), (2, "responseSchema")):
            raw, fixed = verdicts[4 * i + j:4 * i + j + 2] if len(verdicts) == len(jobs) else ({"errors": []}, {"errors": ["no verdict"]})
            check(f"gemini shape {name} as {field}: refused raw ({words})", any(words in e for e in raw["errors"]), "; ".join(raw["errors"][:2]))
            check(f"gemini shape {name} as {field}: accepted after the gemini profile", not fixed["errors"], "; ".join(fixed["errors"][:2]))


# Claude Code 2.1.265's `Artifact` tool: every request routed to OpenAI failed with 400 "is not a 'regex'"
# (anthropics/claude-code#92969)
ARTIFACT = "^(?!__.*__$)[^\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\"\\\\./[\\]]{1,200}$"
# strings every pattern is tried on besides its own tests: ASCII, Latin-1, other scripts, separators,
# format characters, emoji (astral, joined), a trailing newline
SAMPLES = ["", "a", "abc", "ABC", "abc\n", "__x__", "__x", "a b", "a/b", "a.b", 'a"b', "a\\b", "[x]", "123", "1999-12-31", "123-abc", "é", "Ünïcödé",
           "Привет", "漢字", "x\u2028y", "x\u2029y", "\u00ad", "zero\u200bwidth", "\t\x0b\x0c\r", "\u00a0", "\u0085", "😀", "😀👍🏽", "👨‍👩‍👧", "#️⃣", "9",
           "١٢٣", "x" * 201, "_", "foo bar", "foobar"]


def corpus_patterns():
    """Every distinct `pattern` string in the corpus's tools."""
    found = set()

    def walk(n):
        if isinstance(n, dict):
            if isinstance(n.get("pattern"), str):
                found.add(n["pattern"])
            for k, v in n.items():
                if k not in ("enum", "const", "default", "examples"):
                    walk(v)
        elif isinstance(n, (list, tuple)):  # a corpus row is a tuple (label, name, parameters, output)
            for v in n:
                walk(v)
    for _, rows in by_file(corpus_tools()):
        for row in rows:
            walk(row)
    return sorted(found)


def patterns():
    """§2.2: every pattern reaches OpenAI as one Python's re compiles, meaning what the original means
    (ECMA-262 with the u flag): each JSON-Schema-Test-Suite 2020-12 `pattern` group with the suite's own
    verdicts, the Artifact pattern and every corpus pattern with SAMPLES judged by Node's RegExp; through
    `openai` (look-around kept) and `openai-strict` (compiled only: strict mode has its own matcher)."""
    cases = []  # (label, pattern, [(string, expected or None: ask Node)])
    for line in open(os.path.join(ROOT, "tests", "corpus", "jsts-2020-12.jsonl")):
        g = json.loads(line)
        sch = g["schema"]
        if isinstance(sch, dict) and isinstance(sch.get("pattern"), str) and set(sch) <= {"$schema", "type", "pattern"}:
            cases.append((f"JSTS {g['description']}", sch["pattern"], [(t["data"], t["valid"]) for t in g["tests"] if isinstance(t["data"], str)]))
    found = corpus_patterns()
    check(f"the corpus's tools hold patterns to judge ({len(found)})", len(found) >= 10)
    for i, pat in enumerate([ARTIFACT] + found):
        cases.append(("the Artifact pattern" if i == 0 else f"corpus pattern {pat[:40]!r}", pat, [(x, None) for x in SAMPLES]))
    asks = [(pat, [x for x, want in tests if want is None]) for _, pat, tests in cases]
    said, err = ecma.regexp_u(asks)
    check("Node judged every pattern as ECMA-262 (the u flag)", len(said) == len(cases) and all(x is not None for x in said), err[-300:])
    if len(said) != len(cases):
        return
    tools = [{"type": "function", "function": {"name": f"p{i}", "parameters": {"type": "object", "properties": {"s": {"type": "string", "pattern": pat}}}}}
             for i, (_, pat, _) in enumerate(cases)]
    # the controls: raw, Python's re refuses the Artifact pattern and reads `$` otherwise than ECMA-262
    try:
        re.compile(ARTIFACT)
        refused = False
    except re.error:
        refused = True
    check("control: Python's re refuses the Artifact pattern as sent", refused)
    check("control: Python's re matches '^abc$' on 'abc\\n', which ECMA-262 does not", re.search("^abc$", "abc\n") is not None)
    for profile in ("openai", "openai-strict"):
        out, report = rewrite({"model": "m", "messages": [], "tools": tools}, "openai-chat", profile)
        removed = {r["tool"] for r in report["records"] if r["kind"] == "pattern_removed" and r["lossy"]}
        # removed because its written-out classes would pass the size cap (said in the description)
        capped = {r["tool"] for r in report["records"] if r["kind"] == "pattern_removed" and "written out" in r["detail"]}
        kept = compiled = agree = 0
        for i, (label, pat, tests) in enumerate(cases):
            got = out["tools"][i]["function"]["parameters"]["properties"]["s"].get("pattern")
            if got is None:
                check(f"{profile}: {label}: removed only with a lossy record", f"p{i}" in removed)
                continue
            kept += 1
            try:
                r = re.compile(got)
            except re.error as e:
                check(f"{profile}: {label}: compiles with Python's re", False, f"{got[:80]!r}: {e}")
                continue
            compiled += 1
            if profile != "openai":
                continue
            answers = iter(said[i])
            wrong = [x for x, want in tests if bool(r.search(x)) != (want if want is not None else next(answers))]
            agree += not wrong
            check(f"{profile}: {label}: Python's re matches as ECMA-262 does", not wrong, f"{got[:60]!r} differs on {wrong[:3]!r}")
        check(f"{profile}: every pattern kept compiles with Python's re ({compiled} of {kept}, {len(cases) - kept} removed)", compiled == kept and kept > 0)
        if profile == "openai":
            lost = [label for i, (label, _, _) in enumerate(cases) if f"p{i}" in removed and f"p{i}" not in capped]
            artifact = next(i for i, c in enumerate(cases) if c[0] == "the Artifact pattern")
            check(f"openai: every pattern kept ({kept} of {len(cases)}) but those past the size cap written out ({len(capped)}: "
                  f"JSTS \\p{{Letter}}-style ones, a corpus emoji pattern of three properties), the Artifact's kept",
                  not lost and kept + len(capped) == len(cases) and f"p{artifact}" not in removed, f"lost: {lost[:3]}")


def main():
    py = venv("hosted", PINS)
    negatives(py)
    patterns()
    golden(py)
    shapes(py)
    files = by_file(corpus_tools())
    jobs, meta = [], []
    for api in PROFILE:
        for label, rows in files:
            fmt, body = request(api, rows)
            out, report = rewrite(body, fmt, PROFILE[api])
            jobs += [{"api": api, "body": body}, {"api": api, "body": out}]
            meta += [(api, label, "raw", report), (api, label, "toolfit", report)]
    for api, profile in (("openai-output", "openai-strict"), ("openai-responses-output", "openai-strict"), ("gemini-output", "gemini"), ("gemini-json-output", "gemini"),
                         ("bedrock-output", "bedrock"), ("groq-output", "groq"), ("groq-strict-output", "groq-strict"), ("xai-output", "xai")):
        for label, rows in files:
            for i, (fmt, body) in enumerate(outputs(api, rows)):
                out, report = rewrite(body, fmt, profile)
                jobs += [{"api": api, "body": body}, {"api": api, "body": out}]
                meta += [(api, f"{label}#{i}", "raw", report), (api, f"{label}#{i}", "toolfit", report)]
    p = subprocess.run([py, WORKER], input="".join(json.dumps(j) + "\n" for j in jobs), capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-2000:])
        check("hosted worker ran", False)
        return finish()
    verdicts = [json.loads(x) for x in p.stdout.splitlines()]
    check("one verdict per request", len(verdicts) == len(jobs), f"{len(verdicts)} of {len(jobs)}")
    table = {}
    for (api, label, side, report), v in zip(meta, verdicts):
        t = table.setdefault(api, {"raw_refused": 0, "toolfit_refused": 0, "strict": 0, "declined": 0, "records": 0, "lossy": 0, "files": 0})
        if side == "raw":
            t["raw_refused"] += bool(v["errors"])
            continue
        t["files"] += 1
        t["toolfit_refused"] += bool(v["errors"])
        t["strict"] += v["strict"]
        t["declined"] += report["counters"].get("strict_declined", 0)
        t["records"] += sum(report["counters"].values())
        t["lossy"] += sum(1 for r in report["records"] if r["lossy"])
        if api == "bedrock-output" and v["errors"] and report["counters"].get("strict_declined"):
            # Bedrock has no unconstrained structured output to fall back to: a schema strict mode cannot
            # say (recursion, a map object, a value of any type) goes as it came, declined and counted
            t["kept_declined"] = t.get("kept_declined", 0) + 1
            check(f"{api}: {label} declined with its reason recorded (strict_declined), sent as it came",
                  any(r["kind"] == "strict_declined" and r["detail"] for r in report["records"]))
            continue
        check(f"{api}: {label} accepted after toolfit", not v["errors"], "; ".join(v["errors"][:3]))
    print(f"{'api':24} {'files':>5} {'raw refused':>11} {'toolfit refused':>15} {'strict tools':>12} {'declined':>8} {'records':>8} {'lossy':>6}  judged by")
    for api, t in table.items():
        print(f"{api:24} {t['files']:5} {t['raw_refused']:11} {t['toolfit_refused']:15} {t['strict']:12} {t['declined']:8} {t['records']:8} {t['lossy']:6}  {JUDGED_BY[api]}")
    check("openai-strict sends some tools strict", table["openai-strict"]["strict"] > 0)
    check("anthropic-strict sends some tools strict", table["anthropic-strict"]["strict"] > 0)
    check("raw corpus is refused somewhere (the judges can fail)", all(table[a]["raw_refused"] > 0 for a in ("openai-strict", "gemini", "gemini-output")))
    check("output schemas judged", all(table.get(a, {}).get("files", 0) > 10 for a in ("openai-output", "openai-responses-output", "gemini-output", "gemini-json-output", "bedrock-output")))
    kept = table["bedrock-output"].get("kept_declined", 0)
    print(f"bedrock-output: {kept} of {table['bedrock-output']['files']} schemas declined by strict mode and sent as they came (Bedrock refuses them)")
    check(f"bedrock-output: the schemas strict mode declines are a minority ({kept})", kept * 2 < table["bedrock-output"]["files"])
    check("bedrock-strict sends some tools strict, and the raw corpus is refused by Bedrock's judges",
          table["bedrock-strict"]["strict"] > 0 and all(table[a]["raw_refused"] > 0 for a in ("bedrock", "bedrock-anthropic", "bedrock-strict", "bedrock-output")))
    check("openai-responses sends some tools strict", table["openai-responses"]["strict"] > 0)
    check("groq-strict and deepseek-strict send some tools strict, and the raw corpus is refused by their judges",
          table["groq-strict"]["strict"] > 0 and table["deepseek-strict"]["strict"] > 0
          and all(table[a]["raw_refused"] > 0 for a in ("groq", "groq-strict", "groq-output", "deepseek", "deepseek-strict", "xai-output")))
    return finish()


def finish():
    close("hosted judges", results)


if __name__ == "__main__":
    sys.exit(main())
