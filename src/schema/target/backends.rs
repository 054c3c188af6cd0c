//! Every backend's [`Target`]: what it shares with the others, then how it differs. The keyword
//! lists say where each comes from.

use super::*;

/// Names llama.cpp's converters give their own rules; a definition with one of these names is renamed.
const LLAMA_CPP_RULES: &[&str] = &[
    "root",
    "space",
    "dot",
    "boolean",
    "number",
    "integer",
    "value",
    "object",
    "array",
    "uuid",
    "char",
    "string",
    "null",
    "date",
    "time",
    "date-time",
    "date-string",
    "time-string",
    "date-time-string",
    "decimal-part",
    "integral-part",
    "uuid1",
    "uuid2",
    "uuid3",
    "uuid4",
    "uuid5",
];

/// What OpenAI strict mode accepts in a schema (its structured-outputs guide; `title` as its SDK's
/// pydantic schemas carry it).
const OPENAI_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
];

/// What Anthropic strict mode accepts (its structured-outputs documentation and SDK transform).
const ANTHROPIC_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "allOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "default",
    "pattern",
    "format",
    "minItems",
];

/// The fields of Gemini's `Schema` in the Developer API (google-genai's `types.Schema`, less `ref`,
/// `defs` and `additionalProperties`, which only Vertex takes, and `title`, which has caused 400s).
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minProperties",
    "maxProperties",
    "anyOf",
    "propertyOrdering",
    "default",
    "example",
];

/// What Gemini documents for `parametersJsonSchema`/`responseJsonSchema`.
const GEMINI_JSON_KEYWORDS: &[&str] = &[
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

/// JSON Schema 2020-12's keywords (core but `$schema`/`$id`, applicators, validation, format, content,
/// meta-data): what Mistral takes. Its 400s are the document failing a JSON Schema metaschema
/// ("... is not valid under any of the given schemas", SylphxAI/pdf-reader-mcp#63: a draft-04 boolean
/// `exclusiveMinimum`) and the two identifiers (BerriAI/litellm#13389).
const MISTRAL_KEYWORDS: &[&str] = &[
    "$ref",
    "$defs",
    "definitions",
    "$anchor",
    "$comment",
    "$dynamicRef",
    "$dynamicAnchor",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

/// What DeepSeek's strict mode documents (its Tool Calls guide, "strict Mode (Beta)"): object, string,
/// number, integer, boolean, array, enum, anyOf, `$ref`/`$defs`; strings' `pattern` and five formats;
/// numbers' `const`, `default`, bounds and `multipleOf`. `minLength`, `maxLength`, `minItems`,
/// `maxItems` are named unsupported; nothing else is named at all.
const DEEPSEEK_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "default",
    "$ref",
    "$defs",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// What Groq's structured outputs document ("Schema Requirements": primitives, object, array, enum,
/// anyOf, `$defs`/`$ref`, `#` recursion); it answers 400 "minItems is not supported" on a keyword
/// beyond them (i-am-bee/beeai-framework#1215).
const GROQ_OUTPUT_KEYWORDS: &[&str] =
    &["type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "$ref", "$defs", "description", "title"];

/// OpenAI's strict rules, for the strict modes that copy them.
const OPENAI_LIKE_STRICT: Strict = Strict {
    all_required: true,
    recursion: true,
    max_object_depth: Some(10),
    max_properties: Some(5_000),
    max_enum_values: Some(1_000),
    max_min_items: None,
    per_request: None,
    single_types: false,
    all_tools: false,
};

/// What Cohere's tool-use documentation names.
const COHERE_KEYWORDS: &[&str] = &["type", "description", "properties", "required", "items", "enum", "anyOf", "additionalProperties", "format", "title"];

impl Target {
    /// What every grammar compiler shares; each backend below states how it differs.
    const GRAMMAR: Target = Target {
        typed_any: false,
        tool_description: false,
        tool_parameters: false,
        grammar: true,
        unenforced: &[],
        formats: Some(&[]),
        numbers: Numbers::All,
        beside_pattern: BesidePattern::Everything,
        counts_need_room: false,
        one_of_as_any_of: false,
        versioned: false,
        shared_defs: false,
        nesting: None,
        never: Never::Not,
        disjoint_pattern_properties: false,
        reserved_names: &[],
        multiple_of_states: None,
        tool_fields: None,
        keywords: None,
        regex: Regex::Ecma,
        ref_siblings: None,
        refs: Refs::Defs,
        openapi: false,
        root_union: true,
        structure: Structure::AS_SENT,
        strict: None,
        no_strict_member: false,
        strict_tools: None,
        names: None,
        property_names: None,
        namespaces: Namespaces::Read,
        reads_unused_defs: false,
    };

    /// What every vLLM backend shares: vLLM's nesting check, and its `tool_choice: "required"` wrapper.
    const VLLM_SERVER: Target = Target { shared_defs: true, nesting: Some(Nesting::VLLM), never: Never::EmptyAnyOf, ..Target::GRAMMAR };

    /// llama.cpp's converter (json-schema-to-grammar), every release from 2024-08 on.
    pub const LLAMA_CPP: Target = Target {
        typed_any: true,
        tool_description: true,
        tool_parameters: true,
        unenforced: &["patternProperties", "propertyNames", "minProperties", "maxProperties", "multipleOf"],
        formats: Some(&["date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"]),
        numbers: Numbers::Integers,
        beside_pattern: BesidePattern::Nothing,
        counts_need_room: true,
        versioned: true,
        reserved_names: LLAMA_CPP_RULES,
        namespaces: Namespaces::Lift,
        ..Target::GRAMMAR
    };

    /// Ollama: `format` is compiled by the llama.cpp converter it vendors (the route's `llama_cpp_since`
    /// names that release); tools are never compiled, only read into fixed fields.
    pub const OLLAMA: Target =
        Target { tool_description: false, tool_parameters: false, tool_fields: Some(ToolFields::OLLAMA), namespaces: Namespaces::Read, ..Target::LLAMA_CPP };

    /// xgrammar as vLLM runs it (`strict_mode`, the formats vLLM's pre-check lets through). It ignores
    /// `allOf` of two or more branches (merged by `all_of`), the relational keywords, and lengths beside
    /// a `pattern` or `format`; vLLM's pre-check refuses `multipleOf`, `uniqueItems`, `contains`,
    /// unknown formats and most uses of `propertyNames`/`patternProperties`. A missing `items` or
    /// `additionalProperties` beside a count reads as "no more".
    pub const XGRAMMAR: Target = Target {
        unenforced: &["multipleOf", "propertyNames", "patternProperties"],
        formats: Some(&[
            "email",
            "date",
            "time",
            "date-time",
            "duration",
            "ipv4",
            "ipv6",
            "hostname",
            "uuid",
            "uri",
            "uri-reference",
            "uri-template",
            "json-pointer",
            "relative-json-pointer",
        ]),
        beside_pattern: BesidePattern::NoLengths,
        counts_need_room: true,
        ..Target::VLLM_SERVER
    };

    /// xgrammar 0.2.7 as SGLang 0.5.23 runs it (`--grammar-backend xgrammar`, its default), behind
    /// SGLang's own pre-check (its `sglang/srt/constrained/json_schema_validation.py`): a schema with
    /// `multipleOf`, `not`, `uniqueItems`, `contains`, `if`/`then`/`else`, `dependent*`,
    /// `min`/`maxContains`, a string format outside xgrammar's 14, or more than one of `format`,
    /// `pattern` and the lengths on one string is refused for the whole request. Neither vLLM's nesting
    /// check nor its tool wrapper's shared definitions apply.
    pub const SGLANG: Target =
        Target { beside_pattern: BesidePattern::Nothing, shared_defs: false, nesting: None, reads_unused_defs: true, ..Target::XGRAMMAR };

    /// llguidance as vLLM runs it (`whitespace_flexible`). It refuses (400) the relational keywords,
    /// `propertyNames`, `$dynamicAnchor`, unknown formats, look-around and a `oneOf` it cannot prove
    /// disjoint; it enforces `patternProperties` and `multipleOf`. Lengths beside a pattern are removed:
    /// llguidance intersects the two and gives up ("Unable to determine if regex is empty") on real
    /// patterns such as a host name's.
    pub const GUIDANCE: Target = Target {
        unenforced: &["propertyNames", "$dynamicAnchor"],
        formats: Some(&["date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uuid"]),
        beside_pattern: BesidePattern::NoLengths,
        one_of_as_any_of: true,
        disjoint_pattern_properties: true,
        // 0.07 s for a 31-digit number at 9,973 states, 1.5 s at 99,991
        multiple_of_states: Some(10_000),
        ..Target::VLLM_SERVER
    };

    /// llguidance as SGLang runs it (`--grammar-backend llguidance`: whitespace-flexible, no pre-check,
    /// tools' definitions not shared across a wrapper): what llguidance refuses, as [`Target::GUIDANCE`].
    pub const SGLANG_GUIDANCE: Target = Target { shared_defs: false, nesting: None, ..Target::GUIDANCE };

    /// outlines-core as vLLM runs it (a regex built from the schema). It ignores number bounds,
    /// `multipleOf` and `minProperties`/`maxProperties`, refuses `patternProperties`, unknown formats and
    /// `$anchor` refs, and closes objects without `additionalProperties`.
    pub const OUTLINES: Target = Target {
        unenforced: &["propertyNames", "patternProperties", "multipleOf", "minProperties", "maxProperties"],
        formats: Some(&["date", "time", "date-time", "email", "uri", "uuid"]),
        numbers: Numbers::Unenforced,
        ..Target::VLLM_SERVER
    };

    /// vLLM's `auto`: xgrammar after vLLM's pre-check, else llguidance. The output passes the pre-check
    /// and compiles on xgrammar, and means the same on llguidance: what either refuses or ignores is
    /// removed, only formats both compile are kept.
    pub const VLLM: Target = Target {
        unenforced: &["multipleOf", "propertyNames", "patternProperties", "$dynamicAnchor"],
        formats: Target::GUIDANCE.formats,
        beside_pattern: BesidePattern::NoLengths,
        counts_need_room: true,
        one_of_as_any_of: true,
        ..Target::VLLM_SERVER
    };

    /// No compiler: the schema goes to a reader of JSON Schema 2020-12 (an MCP client) as it means.
    pub const JSON_SCHEMA: Target = Target { grammar: false, formats: None, ..Target::GRAMMAR };

    /// A hosted API that reads a schema as a prompt hint and enforces nothing: only what it refuses
    /// outright is rewritten. Each hosted target below states how it differs.
    const HOSTED: Target = Target { grammar: false, formats: None, ..Target::GRAMMAR };

    /// OpenAI function tools and structured outputs without `strict` (Chat Completions, Responses):
    /// nothing enforced, but a tool's root must be an object, an array must say `items` and an object
    /// `properties` (400 `invalid_function_parameters` otherwise).
    pub const OPENAI: Target =
        Target { structure: Structure::SPELLED, names: Some(Names::OPENAI), regex: Regex::Python { look_around: true }, ..Target::HOSTED };

    /// OpenAI strict mode (`strict: true` tools, `json_schema` response formats): every object closed
    /// with every property required (optional ones nullable), the documented keywords and formats only,
    /// `$ref` alone, no union at the root, no map objects or untyped values, at most 10 levels of
    /// objects, 5,000 properties and 1,000 enum values.
    pub const OPENAI_STRICT: Target = Target {
        unenforced: &["patternProperties", "propertyNames", "minProperties", "maxProperties"],
        formats: Some(&["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]),
        keywords: Some(OPENAI_STRICT_KEYWORDS),
        regex: Regex::Python { look_around: false },
        ref_siblings: Some(&[]),
        root_union: false,
        structure: Structure::SPELLED,
        never: Never::EmptyAnyOf,
        names: Some(Names::OPENAI),
        strict: Some(OPENAI_LIKE_STRICT),
        ..Target::GRAMMAR
    };

    /// Anthropic tools without `strict`: nothing enforced; the root must be an object, not a union.
    pub const ANTHROPIC: Target = Target { root_union: false, names: Some(Names::ANTHROPIC), ..Target::HOSTED };

    /// Anthropic strict tool use and JSON outputs: closed objects, the documented keywords and ten
    /// formats, `minItems` 0 or 1, no number or length bounds, no recursion. Optional properties stay
    /// optional (the per-request limits on them are checked over the whole request).
    pub const ANTHROPIC_STRICT: Target = Target {
        unenforced: &[
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "maxItems",
        ],
        // number bounds are in `unenforced` (removed by `unsupported` with the other keywords strict
        // mode refuses), not `numbers: Unenforced`, which only `integer_bounds` reads
        formats: Some(&["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"]),
        keywords: Some(ANTHROPIC_STRICT_KEYWORDS),
        // definitions only under `$defs` (the SDK reads no other)
        shared_defs: true,
        ref_siblings: Some(&[]),
        root_union: false,
        never: Never::EmptyAnyOf,
        names: Some(Names::ANTHROPIC),
        strict: Some(Strict {
            all_required: false,
            recursion: false,
            max_object_depth: None,
            max_properties: None,
            max_enum_values: None,
            max_min_items: Some(1),
            per_request: Some(RequestLimits { tools: 20, optional: 24, unions: 16 }),
            single_types: true,
            all_tools: false,
        }),
        ..Target::GRAMMAR
    };

    /// Bedrock Converse tools (`toolSpec.inputSchema.json`) for any model but Claude: nothing enforced,
    /// but the root must be `type: object` ("The value at toolConfig.tools.N.toolSpec.inputSchema.json.type
    /// must be one of the following: object"), names as its `ToolName` shape says.
    pub const BEDROCK: Target = Target { names: Some(Names::BEDROCK), ..Target::HOSTED };

    /// Claude on Bedrock: what Anthropic's own API refuses too, no union at the root.
    pub const BEDROCK_ANTHROPIC: Target = Target { root_union: false, ..Target::BEDROCK };

    /// Bedrock's strict tools (`toolSpec.strict`) and structured output (`outputConfig`, always
    /// constrained): Anthropic's strict rules (closed objects, no number or length bounds, `minItems` 0
    /// or 1, no recursion, the per-request limits), Bedrock's names.
    pub const BEDROCK_STRICT: Target = Target { names: Some(Names::BEDROCK), ..Target::ANTHROPIC_STRICT };

    /// Mistral's function tools: the document must be valid JSON Schema (draft-04 booleans are refused)
    /// without `$schema` or `$id`; nothing is enforced.
    /// Its validator may check `pattern` as a regex the way Python's jsonschema does (with `re`), so
    /// patterns are written in what ECMA-262 and `re` read alike, as for OpenAI.
    pub const MISTRAL: Target = Target { keywords: Some(MISTRAL_KEYWORDS), regex: Regex::Python { look_around: true }, ..Target::HOSTED };

    /// Groq's function tools (OpenAI's request shape): nothing enforced, but `required` needs
    /// `properties` declaring it (400 "'required' present but 'properties' is missing":
    /// usestrix/strix#1088, livekit/agents#5082), OpenAI's names.
    pub const GROQ: Target = Target { structure: Structure::GROQ, names: Some(Names::OPENAI), ..Target::HOSTED };

    /// Groq's `json_schema` response formats without `strict`: its documented subset only (other
    /// keywords are a 400), as `GROQ` otherwise.
    pub const GROQ_OUTPUT: Target = Target { keywords: Some(GROQ_OUTPUT_KEYWORDS), ..Target::GROQ };

    /// Groq's strict mode (`strict: true` response formats, on the models that have it): its subset,
    /// every property required (optional ones nullable), every object closed, recursion allowed.
    pub const GROQ_STRICT: Target = Target {
        unenforced: &["patternProperties", "propertyNames", "minProperties", "maxProperties"],
        formats: Some(&[]),
        keywords: Some(GROQ_OUTPUT_KEYWORDS),
        regex: Regex::Ecma,
        structure: Structure::GROQ,
        strict: Some(Strict { max_object_depth: None, max_properties: None, max_enum_values: None, ..OPENAI_LIKE_STRICT }),
        ..Target::OPENAI_STRICT
    };

    /// DeepSeek's function tools without `strict`: the root must say `type: object` (400 "schema must be
    /// a JSON Schema of 'type: \"object\"', got 'type: null'": farion1231/cc-switch#2848), OpenAI's names.
    pub const DEEPSEEK: Target = Target { names: Some(Names::OPENAI), ..Target::HOSTED };

    /// DeepSeek's strict mode (beta): its documented subset (no length or item-count bounds, five
    /// formats), every property required and every object closed, recursion through `$ref`, and every
    /// tool of the request strict or none.
    pub const DEEPSEEK_STRICT: Target = Target {
        unenforced: &["patternProperties", "propertyNames", "minProperties", "maxProperties", "minLength", "maxLength", "minItems", "maxItems"],
        formats: Some(&["email", "hostname", "ipv4", "ipv6", "uuid"]),
        keywords: Some(DEEPSEEK_STRICT_KEYWORDS),
        regex: Regex::Ecma,
        structure: Structure::AS_SENT,
        strict: Some(Strict { max_object_depth: None, max_properties: None, max_enum_values: None, all_tools: true, ..OPENAI_LIKE_STRICT }),
        ..Target::OPENAI_STRICT
    };

    /// xAI's function tools (OpenAI's request shape): OpenAI's structural rules and names.
    pub const XAI: Target = Target { structure: Structure::SPELLED, names: Some(Names::OPENAI), ..Target::HOSTED };

    /// xAI's structured outputs (always constrained): no `minLength`/`maxLength`, no
    /// `minItems`/`maxItems`/`minContains`/`maxContains`, no `allOf` (its structured-outputs guide).
    pub const XAI_OUTPUT: Target = Target { unenforced: &["minLength", "maxLength", "minItems", "maxItems", "minContains", "maxContains"], ..Target::XAI };

    /// Gemini's `parameters` and `responseSchema`: the OpenAPI 3.0 `Schema` of the Developer API. Any
    /// other field is a 400 (`additionalProperties`, `$ref`, `const`, type lists included), so refs are
    /// inlined and recursion unrolled three times, types written the OpenAPI way.
    pub const GEMINI: Target = Target {
        formats: Some(&["date-time", "enum", "float", "double", "int32", "int64"]),
        keywords: Some(GEMINI_KEYWORDS),
        refs: Refs::Unrolled(3),
        openapi: true,
        names: Some(Names::GEMINI),
        property_names: Some(Names::GEMINI_PROPERTY),
        root_union: false,
        structure: Structure::GEMINI,
        ..Target::HOSTED
    };

    /// Gemini's `parametersJsonSchema` and `responseJsonSchema`: the documented JSON Schema subset;
    /// a `$ref` with only `description`/`default` beside it, and recursion only inside optional
    /// properties.
    pub const GEMINI_JSON: Target = Target {
        keywords: Some(GEMINI_JSON_KEYWORDS),
        ref_siblings: Some(&["description", "default"]),
        refs: Refs::OptionalCycles,
        root_union: false,
        names: Some(Names::GEMINI),
        ..Target::HOSTED
    };

    /// Cohere v2 chat tools: its supported keywords are not documented beyond the basics, so only those
    /// are sent (the rest said in descriptions) and refs are inlined.
    pub const COHERE: Target = Target {
        keywords: Some(COHERE_KEYWORDS),
        no_strict_member: true,
        strict_tools: Some(StrictTools { max_fields: 200 }),
        refs: Refs::Unrolled(3),
        root_union: false,
        structure: Structure::SPELLED,
        ..Target::HOSTED
    };
}
