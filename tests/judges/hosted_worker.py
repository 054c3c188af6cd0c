"""Runs inside the hosted-API judges' venv (rules cite docs/backend-rules.md by section): each stdin line is {"api": ..., "tools": [...]} (the tools as
toolfit sent them); each stdout line is {"errors": [...], "strict": n, "loose": n}. The judges are the
APIs' own SDKs from the registry, plus the documented rules they do not check (each rule names its line
in the backend notes, see hosted_judges.py)."""
import copy, json, re, sys

from agents.strict_schema import ensure_strict_json_schema
from anthropic.lib._parse._transform import transform_schema
from google.genai import types as gtypes
from google.genai import _transformers as gtrans
import cohere

OPENAI_STRICT_KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const", "$ref", "$defs",
                          "definitions", "description", "title", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
                          "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "minLength", "maxLength"}
OPENAI_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
ANTHROPIC_ROOT_UNIONS = ("anyOf", "oneOf", "allOf")
SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames")


def nodes(s, path="", depth=0):
    """(path, node) for every schema node."""
    if not isinstance(s, dict):
        return
    yield path, s, depth
    for k in SCHEMA_MAPS:
        for n, c in (s.get(k) or {}).items() if isinstance(s.get(k), dict) else []:
            yield from nodes(c, f"{path}/{k}/{n}", depth + 1)
    for k in SCHEMA_LISTS:
        for i, c in enumerate(s.get(k) or []) if isinstance(s.get(k), list) else []:
            yield from nodes(c, f"{path}/{k}/{i}", depth + 1)
    for k in SCHEMA_ONE:
        if isinstance(s.get(k), dict):
            yield from nodes(s[k], f"{path}/{k}", depth + 1)


def types_of(n):
    t = n.get("type")
    return set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()


def python_re_refuses(s):
    """§2.2: OpenAI compiles every `pattern` with Python's re, strict or not; one it refuses is a 400."""
    errs = []
    for p, n, _ in nodes(s):
        if isinstance(n.get("pattern"), str):
            try:
                re.compile(n["pattern"])
            except re.error as e:
                errs.append(f"{p}: pattern is not a 'regex' for Python's re ({e}) (§2.2)")
    return errs


def openai_structural(s, python_re=True):
    """§2.2: root an object schema; every array has `items`, every object `properties` (400 otherwise);
    every pattern one Python's re compiles (OpenAI's own, not a rule of the hosts that copy the rest)."""
    errs = python_re_refuses(s) if python_re else []
    if not isinstance(s, dict) or s.get("type") != "object":
        errs.append("root is not type: object (§2.2)")
    for p, n, _ in nodes(s):
        t = types_of(n)
        if "array" in t and "items" not in n and "prefixItems" not in n:
            errs.append(f"{p}: array schema missing items (§2.2)")
        if "object" in t and "properties" not in n:
            errs.append(f"{p}: object schema missing properties (§2.2)")
    return errs


def object_depth(s, depth=0):
    if not isinstance(s, dict):
        return depth
    here = depth + (1 if "object" in types_of(s) else 0)
    deepest = here
    for k in SCHEMA_MAPS:
        if k in ("$defs", "definitions"):
            continue
        for c in (s.get(k) or {}).values() if isinstance(s.get(k), dict) else []:
            deepest = max(deepest, object_depth(c, here))
    for k in SCHEMA_LISTS:
        for c in s.get(k) or [] if isinstance(s.get(k), list) else []:
            deepest = max(deepest, object_depth(c, here))
    for k in SCHEMA_ONE:
        if isinstance(s.get(k), dict):
            deepest = max(deepest, object_depth(s[k], here))
    return deepest


def openai_strict(s):
    """§2.1, rule by rule (and §2.2's patterns), then openai-agents' ensure_strict_json_schema must leave
    the schema as it is."""
    errs = python_re_refuses(s)
    if not isinstance(s, dict) or s.get("type") != "object" or "anyOf" in s:
        errs.append("root must be type: object, not anyOf (§2.1 root)")
    props_total, enums_total = 0, 0
    for p, n, _ in nodes(s):
        t = types_of(n)
        for k in n:
            if k not in OPENAI_STRICT_KEYWORDS:
                errs.append(f"{p}: keyword {k} is not supported in strict mode (§2.1 unsupported keywords, default, annotations)")
        if "$ref" in n and len(n) > 1:
            errs.append(f"{p}: $ref cannot have keywords (§2.1 $ref siblings)")
        if "oneOf" in n:
            errs.append(f"{p}: oneOf is not permitted (§2.1 oneOf)")
        if "object" in t or "properties" in n:
            if n.get("additionalProperties") is not False:
                errs.append(f"{p}: additionalProperties must be false (§2.1 objects)")
            if "properties" not in n:
                errs.append(f"{p}: properties missing (§2.1 objects)")
            if sorted(n.get("required", [])) != sorted(n.get("properties", {})):
                errs.append(f"{p}: required must list every property (§2.1 objects)")
            props_total += len(n.get("properties", {}))
        if "array" in t and not isinstance(n.get("items"), dict):
            errs.append(f"{p}: items must be a typed schema (§2.1 arrays)")
        if isinstance(n.get("format"), str) and n["format"] not in OPENAI_FORMATS:
            errs.append(f"{p}: '{n['format']}' is not a valid format (§2.1 strings)")
        if isinstance(n.get("pattern"), str) and re.search(r"\(\?<?[=!]", n["pattern"]):
            errs.append(f"{p}: look-around in pattern (§2.1 strings)")
        if isinstance(n.get("$ref"), str) and not re.fullmatch(r"#(/(\$defs|definitions)/[^/]+)?", n["$ref"]):
            errs.append(f"{p}: $ref {n['$ref']} is not # or #/$defs/X (§2.1 $ref)")
        enums_total += len(n.get("enum", [])) if isinstance(n.get("enum"), list) else 0
    if object_depth(s) > 10:
        errs.append("more than 10 levels of objects (§2.1 limits)")
    if props_total > 5000:
        errs.append("more than 5000 properties (§2.1 limits)")
    if enums_total > 1000:
        errs.append("more than 1000 enum values (§2.1 enum limits)")
    try:
        # `required` is a set: the SDK lists it in the properties' order, the API reads any order
        out = ensure_strict_json_schema(copy.deepcopy(s))
        if sort_required(out) != sort_required(s):
            errs.append("openai-agents ensure_strict_json_schema changes it")
    except Exception as e:  # noqa: BLE001 - the judge's refusal is the finding
        errs.append(f"openai-agents ensure_strict_json_schema refuses it: {str(e)[:160]}")
    return errs


def sort_required(s):
    if isinstance(s, dict):
        return {k: sorted(v) if k == "required" and isinstance(v, list) and all(isinstance(x, str) for x in v) else sort_required(v) for k, v in s.items()}
    if isinstance(s, list):
        return [sort_required(v) for v in s]
    return s


def anthropic_root(s):
    """§2.3: input_schema root type: object, no anyOf/oneOf/allOf at the top level."""
    errs = []
    if not isinstance(s, dict) or s.get("type") != "object":
        errs.append("input_schema root is not type: object (§2.3)")
    for k in ANTHROPIC_ROOT_UNIONS:
        if isinstance(s, dict) and k in s:
            errs.append(f"input_schema does not support {k} at the top level (§2.3)")
    return errs


def strip(s, keys):
    if isinstance(s, dict):
        return {k: strip(v, keys) for k, v in s.items() if k not in keys}
    if isinstance(s, list):
        return [strip(v, keys) for v in s]
    return s


def anthropic_strict(s):
    """§2.4 and §3.4: the SDK's transform_schema leaves a strict schema as it is. `pattern` and `default`
    are supported by strict mode (§2.4 "Supported") although the SDK writes them into descriptions
    (§3.4 "Bugs"), so they are compared without."""
    errs = anthropic_root(s)
    for p, n, _ in nodes(s):
        if ("object" in types_of(n) or "properties" in n) and n.get("additionalProperties") is not False:
            errs.append(f"{p}: additionalProperties: false is mandatory (§2.4)")
    try:
        bare = strip(s, {"pattern", "default"})
        if transform_schema(copy.deepcopy(bare)) != bare:
            errs.append("anthropic transform_schema changes it")
    except Exception as e:  # noqa: BLE001
        errs.append(f"anthropic transform_schema refuses it: {str(e)[:160]}")
    return errs


class MlDev:
    vertexai = False


OBJECT_ONLY = ("properties", "required", "minProperties", "maxProperties", "propertyOrdering")
ARRAY_ONLY = ("items", "minItems", "maxItems")


def gemini_shapes(s):
    """§2.5: the shapes Gemini's `Schema` refuses although JSON Schema allows them (cline/cline#7339,
    agno-agi/agno#2112, anomalyco/opencode#11888, NousResearch/hermes-agent#38972)."""
    errs = []
    for p, n, _ in nodes(s):
        t = n.get("type").lower() if isinstance(n.get("type"), str) else None
        if t == "array" and "items" not in n:
            errs.append(f"{p}: items: missing field (§2.5)")
        if t == "object" and n.get("properties") == {}:
            errs.append(f"{p}: properties: should be non-empty for OBJECT type (§2.5)")
        if t not in (None, "object") and any(k in n for k in OBJECT_ONLY):
            errs.append(f"{p}: properties: only allowed for OBJECT type (§2.5)")
        if t not in (None, "array") and any(k in n for k in ARRAY_ONLY):
            errs.append(f"{p}: items: field predicate failed: $type == Type.ARRAY (§2.5)")
    return errs


def gemini_schema(s, json_field):
    """§2.5: google-genai's FunctionDeclaration (extra fields forbidden) takes it, and its Developer-API
    check raises nothing on any node; §2.6 for the JSON Schema fields: a $ref alone but for description."""
    errs = []
    if json_field:
        for p, n, _ in nodes(s):
            if "$ref" in n and set(n) - {"$ref", "description", "default"}:
                errs.append(f"{p}: $ref set alongside unsupported fields (§2.6)")
        try:
            gtypes.FunctionDeclaration.model_validate({"name": "f", "parametersJsonSchema": s})
        except Exception as e:  # noqa: BLE001
            errs.append(f"FunctionDeclaration refuses parametersJsonSchema: {str(e)[:160]}")
        return errs
    try:
        gtypes.FunctionDeclaration.model_validate({"name": "f", "parameters": s})
    except Exception as e:  # noqa: BLE001
        errs.append(f"FunctionDeclaration refuses parameters: {str(e)[:200]}")
    errs += gemini_shapes(s)
    for p, n, _ in nodes(s):
        try:
            gtrans._raise_for_unsupported_mldev_properties(n, MlDev())
        except Exception as e:  # noqa: BLE001
            errs.append(f"{p}: {str(e)[:120]}")
        if isinstance(n.get("type"), list):
            errs.append(f"{p}: type list (Proto field is not repeating, §2.5)")
        if "anyOf" in n and len(n) > 1:
            errs.append(f"{p}: keywords beside anyOf (§2.5)")
        if isinstance(n.get("enum"), list) and any(not isinstance(v, str) or v == "" for v in n["enum"]):
            errs.append(f"{p}: enum values must be non-empty strings (§2.5)")
    return errs


def cohere_tool(name, s):
    """§2.7: the cohere SDK's v2 tool types take it."""
    try:
        cohere.ToolV2(type="function", function=cohere.ToolV2Function(name=name, description="d", parameters=s))
        return []
    except Exception as e:  # noqa: BLE001
        return [f"cohere ToolV2 refuses it: {str(e)[:160]}"]


def mistral_tool(t):
    """§2.15: mistralai's Function takes it; the parameters are valid against the 2020-12 metaschema (Mistral
    validates them against one), and carry no `$schema` or `$id`."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from mistralai.client.models import Function
    f, errs = t["function"], []
    try:
        Function.model_validate(f)
    except Exception as e:  # noqa: BLE001
        errs.append(f"mistralai Function refuses it: {str(e)[:160]}")
    s = f.get("parameters")
    try:
        Draft202012Validator.check_schema(s)
    except SchemaError as e:
        errs.append(f"parameters are not valid JSON Schema 2020-12 ({e.message[:120]} at {'/'.join(map(str, e.path))}) (§2.15)")
    for p, n, _ in nodes(s):
        for k in ("$schema", "$id"):
            if k in n:
                errs.append(f"{p}: {k} (§2.15)")
    return errs


GROQ_OUTPUT_KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "$ref", "$defs", "description", "title"}
DEEPSEEK_STRICT_KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const", "default", "$ref", "$defs",
                            "description", "title", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
DEEPSEEK_FORMATS = {"email", "hostname", "ipv4", "ipv6", "uuid"}
XAI_UNSUPPORTED = ("minLength", "maxLength", "minItems", "maxItems", "minContains", "maxContains", "allOf")


def closed_and_required(s, rule):
    """A strict mode's objects: closed, every property required."""
    errs = []
    for p, n, _ in nodes(s):
        if "object" in types_of(n) or "properties" in n:
            if n.get("additionalProperties") is not False:
                errs.append(f"{p}: additionalProperties must be false ({rule})")
            if sorted(n.get("required", [])) != sorted(n.get("properties", {})):
                errs.append(f"{p}: required must list every property ({rule})")
    return errs


def groq_tool(s):
    """§2.16: `required` (even empty) needs non-empty `properties`; the root an object."""
    errs = [] if isinstance(s, dict) and s.get("type") == "object" else ["root is not type: object (§2.16)"]
    for p, n, _ in nodes(s):
        if "required" in n and not (isinstance(n.get("properties"), dict) and n["properties"]):
            errs.append(f"{p or '/'}: 'required' present but 'properties' is missing (§2.16)")
    return errs


def groq_output(s, strict):
    """§2.16: the documented subset (a keyword beyond it is "not supported"); strict: closed, all required."""
    errs = [] if isinstance(s, dict) and s.get("type") == "object" else ["root is not type: object (§2.16)"]
    for p, n, _ in nodes(s):
        errs += [f"{p}: {k} is not supported (§2.16)" for k in n if k not in GROQ_OUTPUT_KEYWORDS]
    return errs + (closed_and_required(s, "§2.16 strict") if strict else [])


def deepseek_tool(s):
    """§2.17: the root says type: object."""
    t = s.get("type") if isinstance(s, dict) else None
    return [] if t == "object" else [f"schema must be a JSON Schema of 'type: \"object\"', got 'type: {t if t else 'null'}' (§2.17)"]


def deepseek_strict(s):
    """§2.17 strict mode: the documented keywords and five formats, closed objects with every property required,
    refs into `$defs`."""
    errs = deepseek_tool(s)
    for p, n, _ in nodes(s):
        errs += [f"{p}: {k} is not supported in strict mode (§2.17)" for k in n if k not in DEEPSEEK_STRICT_KEYWORDS]
        if isinstance(n.get("format"), str) and n["format"] not in DEEPSEEK_FORMATS:
            errs.append(f"{p}: format {n['format']} is not supported in strict mode (§2.17)")
        if isinstance(n.get("$ref"), str) and not re.fullmatch(r"#(/\$defs/[^/]+)?", n["$ref"]):
            errs.append(f"{p}: $ref {n['$ref']} does not point into $defs (§2.17)")
    return errs + closed_and_required(s, "§2.17 strict")


def xai_output(s):
    """§2.18: no length or item-count bounds, no allOf."""
    return [f"{p}: {k} is not supported (§2.18)" for p, n, _ in nodes(s) for k in XAI_UNSUPPORTED if k in n]


BEDROCK = {}


def converse_refused(body, model):
    """§2.13: botocore's own parameter validation of a Converse call (the body as its parameters, the model
    from the path), offline: the service model of bedrock-runtime in the botocore wheel."""
    if not BEDROCK:
        import botocore.session
        from botocore.validate import ParamValidator
        BEDROCK["shape"] = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape
        BEDROCK["validator"] = ParamValidator()
    report = BEDROCK["validator"].validate({"modelId": model, **body}, BEDROCK["shape"])
    return [f"botocore refuses the Converse request: {report.generate_report()[:200]}"] if report.has_errors() else []


def bedrock_root(s, claude):
    """§2.13: `inputSchema.json` an object for every model; Claude's: no union at the root either."""
    if claude:
        return anthropic_root(s)
    return [] if isinstance(s, dict) and s.get("type") == "object" else ["inputSchema.json root is not type: object (§2.13)"]


for line in sys.stdin:
    req = json.loads(line)
    api, body = req["api"], req["body"]
    errors, strict, loose = [], 0, 0
    if api in ("openai", "openai-strict", "azure-openai"):
        for t in body["tools"]:
            f = t["function"]
            name, s = f["name"], f.get("parameters")
            if f.get("strict") is True:
                strict += 1
                errors += [f"{name}: {e}" for e in openai_strict(s)]
            else:
                loose += 1
                errors += [f"{name}: {e}" for e in openai_structural(s)]
            if api == "openai-strict" and "strict" not in f:
                errors.append(f"{name}: openai-strict left the strict switch unset")
    elif api in ("anthropic", "anthropic-strict"):
        for t in body["tools"]:
            s = t["input_schema"]
            if t.get("strict") is True:
                strict += 1
                errors += [f"{t['name']}: {e}" for e in anthropic_strict(s)]
            else:
                loose += 1
                errors += [f"{t['name']}: {e}" for e in anthropic_root(s)]
        if strict > 20:
            errors.append(f"{strict} strict tools in one request (§2.4 limits: 20)")
        optional = unions = 0
        for t in body["tools"]:
            if t.get("strict") is True:
                for _, n, _ in nodes(t["input_schema"]):
                    props = n.get("properties") if isinstance(n.get("properties"), dict) else {}
                    optional += sum(1 for k in props if k not in (n.get("required") or []))
                    unions += sum(1 for p in props.values() if isinstance(p, dict) and ("anyOf" in p or isinstance(p.get("type"), list)))
        if optional > 24 or unions > 16:
            errors.append(f"strict tools hold {optional} optional and {unions} union parameters (§2.4 limits: 24, 16)")
    elif api == "openai-responses":
        from openai.types.responses import FunctionTool
        for t in body["tools"]:
            name, s = t["name"], t.get("parameters")
            try:
                FunctionTool.model_validate({**t, "strict": t.get("strict")}, strict=False)
            except Exception as e:  # noqa: BLE001
                errors.append(f"{name}: the openai package's FunctionTool refuses it: {str(e)[:160]}")
            if t.get("strict") is True:
                strict += 1
                errors += [f"{name}: {e}" for e in openai_strict(s)]
            else:
                loose += 1
                errors += [f"{name}: {e}" for e in openai_structural(s)]
            if "strict" not in t:
                errors.append(f"{name}: openai-strict left the strict switch unset")
    elif api == "openai-responses-output":
        from openai.types.responses import ResponseFormatTextJSONSchemaConfig
        f = body["text"]["format"]
        try:
            ResponseFormatTextJSONSchemaConfig.model_validate(f)
        except Exception as e:  # noqa: BLE001
            errors.append(f"the openai package's ResponseFormatTextJSONSchemaConfig refuses text.format: {str(e)[:160]}")
        if f.get("strict") is True:
            strict += 1
            errors += [f"{f['name']}: {e}" for e in openai_strict(f["schema"])]
        else:
            loose += 1
    elif api == "gemini-json-output":
        s = body["generationConfig"]["responseJsonSchema"]
        try:
            gtypes.GenerationConfig.model_validate(body["generationConfig"])
        except Exception as e:  # noqa: BLE001
            errors.append(f"GenerationConfig refuses it: {str(e)[:200]}")
        errors += gemini_schema(s, True)
        loose += 1
    elif api == "openai-output":
        js = body["response_format"]["json_schema"]
        if js.get("strict") is True:
            strict += 1
            errors += [f"{js['name']}: {e}" for e in openai_strict(js["schema"])]
        else:
            loose += 1
    elif api == "gemini-output":
        s = body["generationConfig"]["responseSchema"]
        try:
            gtypes.Schema.model_validate(s)
        except Exception as e:  # noqa: BLE001
            errors.append(f"Schema refuses responseSchema: {str(e)[:200]}")
        errors += gemini_shapes(s)
        for p, n, _ in nodes(s):
            if isinstance(n.get("type"), list) or ("anyOf" in n and len(n) > 1):
                errors.append(f"{p}: type list or keywords beside anyOf (§2.5)")
        loose += 1
    elif api in ("gemini", "gemini-json"):
        for d in body["tools"][0]["functionDeclarations"]:
            json_field = "parametersJsonSchema" in d
            errors += [f"{d['name']}: {e}" for e in gemini_schema(d.get("parametersJsonSchema", d.get("parameters")), json_field)]
            loose += 1
    elif api == "cohere":
        if body.get("strict_tools") is True:
            fields = sum(1 for t in body["tools"] for _, n, _ in nodes(t["function"]["parameters"]) for _ in (n.get("properties") or {}))
            if fields > 200:
                errors.append(f"strict_tools with {fields} fields (§2.7: at most 200)")
            for t in body["tools"]:
                p = t["function"]["parameters"]
                if p.get("properties") and not p.get("required"):
                    errors.append(f"{t['function']['name']}: strict_tools needs a required parameter (§2.7)")
            strict += 1
        for t in body["tools"]:
            f = t["function"]
            if "strict" in f or "strict" in t:
                errors.append(f"{f['name']}: a strict member (422, §2.7)")
            errors += [f"{f['name']}: {e}" for e in cohere_tool(f["name"], f["parameters"])]
            loose += 1
    elif api == "mistral":
        for t in body["tools"]:
            errors += [f"{t['function']['name']}: {e}" for e in mistral_tool(t)]
            loose += 1
    elif api in ("groq", "groq-strict", "deepseek", "deepseek-strict", "xai"):
        host = api.split("-")[0]
        for t in body["tools"]:
            f = t["function"]
            name, s = f["name"], f.get("parameters")
            if f.get("strict") is True and host != "xai":
                strict += 1
                errors += [f"{name}: {e}" for e in (groq_output(s, True) if host == "groq" else deepseek_strict(s))]
            else:
                loose += 1
                errors += [f"{name}: {e}" for e in {"groq": groq_tool, "deepseek": deepseek_tool, "xai": lambda s: openai_structural(s, False)}[host](s)]
            if api.endswith("-strict") and "strict" not in f:
                errors.append(f"{name}: {api} left the strict switch unset")
        if host == "deepseek" and 0 < strict < len(body["tools"]):
            errors.append(f"{strict} of {len(body['tools'])} functions strict: strict mode needs all of them (§2.17)")
    elif api in ("groq-output", "groq-strict-output", "xai-output"):
        js = body["response_format"]["json_schema"]
        on = js.get("strict") is True
        strict, loose = int(on), int(not on)
        errors += [f"{js['name']}: {e}" for e in (xai_output(js["schema"]) if api == "xai-output" else groq_output(js["schema"], on))]
    elif api in ("bedrock", "bedrock-anthropic", "bedrock-strict"):
        claude = api == "bedrock-anthropic"
        errors += converse_refused(body, "anthropic.claude-sonnet-4-5-20250929-v1:0" if claude else "meta.llama3-70b-instruct-v1:0")
        for t in body["toolConfig"]["tools"]:
            spec = t["toolSpec"]
            s = spec["inputSchema"]["json"]
            if spec.get("strict") is True:
                strict += 1
                errors += [f"{spec['name']}: {e}" for e in bedrock_root(s, claude) + anthropic_strict(s)]
            else:
                loose += 1
                errors += [f"{spec['name']}: {e}" for e in bedrock_root(s, claude)]
            if api == "bedrock-strict" and "strict" not in spec:
                errors.append(f"{spec['name']}: bedrock-strict left the strict switch unset")
    elif api == "bedrock-output":
        errors += converse_refused(body, "meta.llama3-70b-instruct-v1:0")
        js = body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
        try:
            s = json.loads(js["schema"]) if isinstance(js["schema"], str) else None
        except ValueError as e:
            s, _ = None, errors.append(f"jsonSchema.schema is not JSON: {e}")
        if s is not None:
            errors += [f"outputConfig: {e}" for e in anthropic_strict(s)]
        strict += 1
    else:  # a judge that does not know the API has judged nothing: that is an error, never a pass
        errors.append(f"no rules for the API {api!r}: nothing judged")
    # function names: each API's pattern (§2.1 tool name, §2.3 tool name, §2.5 function name), unique
    names = {"openai": (r"[a-zA-Z0-9_-]{1,64}", "§2.1 tool name"), "azure-openai": (r"[a-zA-Z0-9_-]{1,64}", "§2.1 tool name"), "openai-strict": (r"[a-zA-Z0-9_-]{1,64}", "§2.1 tool name"),
             "openai-responses": (r"[a-zA-Z0-9_-]{1,64}", "§2.1 tool name"),
             "anthropic": (r"[a-zA-Z0-9_-]{1,128}", "§2.3 tool name"), "anthropic-strict": (r"[a-zA-Z0-9_-]{1,128}", "§2.3 tool name"),
             "gemini": (r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}", "§2.5 function name"), "gemini-json": (r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}", "§2.5 function name"),
             "bedrock": (r"[a-zA-Z0-9_-]{1,64}", "§2.13 ToolName"), "bedrock-anthropic": (r"[a-zA-Z0-9_-]{1,64}", "§2.13 ToolName"),
             "bedrock-strict": (r"[a-zA-Z0-9_-]{1,64}", "§2.13 ToolName"),
             **{h: (r"[a-zA-Z0-9_-]{1,64}", "§2.1 tool name, OpenAI's") for h in ("groq", "groq-strict", "deepseek", "deepseek-strict", "xai")}}
    if api in names:
        pattern, rule = names[api]
        if api.startswith("gemini"):
            declared = [d["name"] for d in body["tools"][0]["functionDeclarations"]]
        elif api.startswith("bedrock"):
            declared = [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]]
        else:
            declared = [t["function"]["name"] if "function" in t else t["name"] for t in body["tools"]]
        errors += [f"{n!r}: name the API refuses ({rule})" for n in declared if not re.fullmatch(pattern, n)]
        if len(set(declared)) != len(declared):
            errors.append(f"tool names not unique ({rule})")
    print(json.dumps({"errors": errors, "strict": strict, "loose": loose}), flush=True)
