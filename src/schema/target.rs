//! What a profile's backend does with a schema, for the passes to ask instead of assuming one backend.
//!
//! A pass that needs to know how the backend reads something asks the [`Target`] in its context
//! ([`crate::schema::Cx::target`]); what depends on the backend's version asks the oldest version the
//! route serves, through [`Target::release`].

use crate::schema::types::Types;
use crate::schema::Context;
use serde_json::{json, Map, Value};

/// A backend's reading of schemas, as far as passes depend on it: what it enforces, what it accepts
/// without enforcing, and what it refuses. A new backend is a pass list plus one of these.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Target {
    /// Whether "any value" must be written with every type: the backend reads a schema without `type`
    /// as something narrower (llama.cpp before 2026-10 reads `{}` as "an object", or rejects it).
    pub typed_any: bool,
    /// Whether function tools need `function.description` on the releases before
    /// [`LlamaCpp::tool_description_optional`] (llama-server reads it unconditionally there).
    pub tool_description: bool,
    /// Whether function tools need `function.parameters` on the releases before
    /// [`LlamaCpp::tool_parameters_optional`] (llama-server reads it unconditionally there).
    pub tool_parameters: bool,
    /// Whether the backend compiles schemas into a grammar: it then ignores or refuses every keyword
    /// of [`Target::RELATIONAL`], which no grammar can enforce.
    pub grammar: bool,
    /// Other validation keywords the backend ignores or refuses. `unsupported` removes these and the
    /// relational ones (lossy, said in the description); keywords in neither list and not core (types,
    /// enums, objects, arrays, unions, refs) are taken as enforced.
    pub unenforced: &'static [&'static str],
    /// String formats the backend compiles into its grammar; any other `format` is removed (lossy).
    /// `None`: every format passes as it is (a reader of JSON Schema takes it as an annotation).
    pub formats: Option<&'static [&'static str]>,
    /// Which `minimum`/`maximum`/`exclusive*` bounds the backend enforces.
    pub numbers: Numbers,
    /// What the backend enforces beside a `pattern` or a known `format` on the same string.
    pub beside_pattern: BesidePattern,
    /// Whether counts need room written beside them: the backend reads a missing `items` beside
    /// `minItems`/`maxItems`, or a missing `additionalProperties` beside `minProperties`, as "no more"
    /// (or ignores the counts), so `items: {}` / `additionalProperties: true` are written. Exact.
    pub counts_need_room: bool,
    /// Whether every `oneOf` is written as `anyOf`: the backend refuses a `oneOf` it cannot prove
    /// disjoint. Exact where toolfit finds the branches disjoint, lossy (as always) where they may overlap.
    pub one_of_as_any_of: bool,
    /// Whether the answers of [`LlamaCpp`] apply: the route's `llama_cpp_since` release says what
    /// the backend still breaks on.
    pub versioned: bool,
    /// Whether the tools of one request share one namespace of definitions, and only `$defs` is read:
    /// a server that constrains "call one of these tools" with one schema built from all of them hoists
    /// every tool's root `$defs` into it (refusing a name two tools define differently), and leaves
    /// `definitions` and every other pointer (`#`, `#/properties/..`) pointing into its wrapper. Refs
    /// are then written only as `#/$defs/Name`, and clashing names are renamed across tools.
    pub shared_defs: bool,
    /// The deepest nesting of JSON containers the backend accepts in a schema document, if it limits it.
    pub nesting: Option<Nesting>,
    /// Definition names the backend's converter uses for its own grammar rules: a definition so named
    /// is renamed (with its refs), or it would clash with the rule.
    pub reserved_names: &'static [&'static str],
    /// Whether the backend refuses `patternProperties` whose regexes may both match one name
    /// (llguidance): such `patternProperties` are removed unless toolfit can tell they are disjoint.
    pub disjoint_pattern_properties: bool,
    /// Whether the backend checks `multipleOf` with one automaton state per remainder, and how many
    /// states it can afford: a larger step is removed (see `passes::multiple_of`).
    pub multiple_of_states: Option<u64>,
    /// How the backend reads a schema no value matches, where one must stay (a `patternProperties`
    /// value, a `contains`, a whole schema).
    pub never: Never,
    /// Where the server reads a tool's parameters into fixed fields and drops every other keyword
    /// without a word (Ollama): those fields. Structured output is compiled as the rest says.
    pub tool_fields: Option<ToolFields>,
    /// The regex dialect the backend compiles `pattern` with (see [`Regex`]).
    pub regex: Regex,
    /// Every keyword the API accepts in a schema, where it answers 400 on any other (hosted APIs):
    /// the `keywords` pass removes the rest. `None`: the API takes unknown keywords.
    pub keywords: Option<&'static [&'static str]>,
    /// What may stand beside a `$ref` (`None`: anything); a ref with other siblings is wrapped as
    /// `{"anyOf": [{"$ref": ..}], ..siblings}`, which means the same.
    pub ref_siblings: Option<&'static [&'static str]>,
    /// How the API reads `$ref` and recursive definitions.
    pub refs: Refs,
    /// Whether the API reads OpenAPI 3.0 types (Gemini's `Schema`): one `type` with `nullable: true`
    /// instead of a type list, `enum` of strings only, no `const`, nothing beside `anyOf`.
    pub openapi: bool,
    /// Whether a tool's parameters may be a union at the root (Anthropic, and OpenAI strict, refuse
    /// `anyOf`/`oneOf`/`allOf` there).
    pub root_union: bool,
    /// What the API demands of arrays and objects beyond JSON Schema: `items` and `properties` written,
    /// or left out when empty, and their keywords only on nodes of their type.
    pub structure: Structure,
    /// The rules of a strict mode (constrained decoding of the whole schema), where the profile is one.
    pub strict: Option<Strict>,
    /// Whether the API refuses a tool's own `strict` member (Cohere answers 422): it is removed.
    pub no_strict_member: bool,
    /// The limits of a request-level strict switch (Cohere's `strict_tools`), where the API has one.
    pub strict_tools: Option<StrictTools>,
    /// The API's rule for function names, where it refuses some names MCP allows (`.`, `/`, long
    /// names): such a tool is sent under a valid name and the response gets the original back.
    pub names: Option<Names>,
    /// The API's rule for property names in a tool's parameters, where it refuses some JSON Schema
    /// allows (Gemini's `parameters`: no `-` or `.`): such a property is sent under a valid name and
    /// the call's arguments get the original key back.
    pub property_names: Option<Names>,
    /// Whether the server reads the tools inside a Responses API namespace (what Codex sends its MCP
    /// tools in), or skips them so they must be lifted to the top-level list (see `api::lift`).
    pub namespaces: Namespaces,
    /// Whether the backend's pre-check reads every root definition, referenced or not (SGLang's walks
    /// `$defs` and `definitions` whole): definitions no ref reaches are removed, which changes nothing
    /// a value must be.
    pub reads_unused_defs: bool,
}

/// How a server reads the tools inside an OpenAI Responses `namespace` tool.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Namespaces {
    /// As the API defines them (the hosted APIs; also where a server's reading is not known).
    Read,
    /// Not at all: llama-server 2026-10's `/v1/responses` keeps only `type: "function"` tools
    /// (tools/server/server-chat.cpp). Each is sent as a top-level function tool named
    /// `<namespace>__<name>`, and its calls come back as `name` beside `namespace`.
    Lift,
}

/// Which function names an API accepts: 1 to `max_len` ASCII letters, digits and `extra` characters,
/// starting with a letter or `_` where `letter_first`.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Names {
    pub max_len: usize,
    pub extra: &'static str,
    pub letter_first: bool,
}

impl Names {
    /// OpenAI: `^[a-zA-Z0-9_-]{1,64}$`.
    pub const OPENAI: Names = Names { max_len: 64, extra: "_-", letter_first: false };
    /// Anthropic: `^[a-zA-Z0-9_-]{1,128}$`.
    pub const ANTHROPIC: Names = Names { max_len: 128, extra: "_-", letter_first: false };
    /// Bedrock Converse (its `ToolName` shape): `[a-zA-Z0-9_-]+`, 1 to 64, as OpenAI's.
    pub const BEDROCK: Names = Names::OPENAI;
    /// Gemini: a letter or `_` first, then `[a-zA-Z0-9_.:-]`; 64 at most (the documented 128 is not
    /// what every client and model version takes; 64 is).
    pub const GEMINI: Names = Names { max_len: 64, extra: "_.:-", letter_first: true };

    fn char_ok(&self, c: char) -> bool {
        c.is_ascii_alphanumeric() || self.extra.contains(c)
    }

    /// Whether the API takes `name` as it is.
    pub fn allows(&self, name: &str) -> bool {
        let first_ok = name.chars().next().is_some_and(|c| !self.letter_first || c.is_ascii_alphabetic() || c == '_');
        first_ok && name.len() <= self.max_len && name.chars().all(|c| self.char_ok(c))
    }

    /// Gemini's property names in `parameters`: a letter or `_` first, then `[a-zA-Z0-9_]`, 64 at most.
    pub const GEMINI_PROPERTY: Names = Names { max_len: 64, extra: "_", letter_first: true };

    /// A valid name for `original`, unique among `taken`: the spelled name when it fits and is free,
    /// else a cut of it and `_` and eight hex digits of the original's hash (then a counter, should
    /// even that be taken). Deterministic: the same inputs give the same name in every request.
    pub fn assign(&self, original: &str, taken: &std::collections::HashSet<String>) -> String {
        let spelled = self.spell(original);
        if spelled.len() <= self.max_len && !taken.contains(&spelled) {
            return spelled;
        }
        let hash = format!("{:08x}", xxhash_rust::xxh3::xxh3_64(original.as_bytes()) as u32);
        let keep = self.max_len.saturating_sub(hash.len() + 1);
        // spelled is ASCII, so any byte index is a character boundary
        let head = spelled.get(..keep.min(spelled.len())).unwrap_or("");
        let mut name = format!("{head}_{hash}");
        let mut n = 0u32;
        while taken.contains(&name) {
            n += 1;
            let tail = format!("_{hash}{n}");
            let head = spelled.get(..self.max_len.saturating_sub(tail.len()).min(spelled.len())).unwrap_or("");
            name = format!("{head}{tail}");
        }
        name
    }

    /// `name` with every refused character as `_` (and a `_` in front where the first character may
    /// not start a name); the length is not cut here.
    pub fn spell(&self, name: &str) -> String {
        let mut out: String = name.chars().map(|c| if self.char_ok(c) { c } else { '_' }).collect();
        if out.is_empty() || (self.letter_first && !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')) {
            out.insert(0, '_');
        }
        out
    }
}

/// What an API demands of the shape of arrays and objects, where JSON Schema lets a schema leave
/// things out or say things that cannot apply (see `passes::structure`). Every demand is met by an
/// exact rewrite: what is written or removed changes no value's validity.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Structure {
    /// Every array says `items` (OpenAI: 400 "array schema missing items"; Gemini: 400
    /// "items: missing field").
    pub items: bool,
    /// What an object's `properties` must be.
    pub properties: ObjectProperties,
    /// Object keywords stand only on objects and array keywords only on arrays: Gemini answers 400
    /// "properties: only allowed for OBJECT type" and "items: field predicate failed: $type ==
    /// Type.ARRAY" for `{"type": "string", "properties": ..}` or `{"type": "string", "items": ..}`.
    pub own_type_only: bool,
}

/// What an API demands of an object's `properties`.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum ObjectProperties {
    /// Nothing: present or not, empty or not.
    AsSent,
    /// Written on every object (OpenAI: 400 "object schema missing properties").
    Written,
    /// Not empty where present (Gemini: 400 "properties: should be non-empty for OBJECT type").
    NonEmpty,
    /// Declaring what `required` names (Groq: 400 "'required' present but 'properties' is missing",
    /// for a `required`, even an empty one, beside missing or empty `properties`).
    BesideRequired,
}

impl Structure {
    /// No demand: JSON Schema as it is.
    pub const AS_SENT: Structure = Structure { items: false, properties: ObjectProperties::AsSent, own_type_only: false };
    /// OpenAI (and Cohere's OpenAI-style tools): `items` and `properties` always written.
    pub const SPELLED: Structure = Structure { items: true, properties: ObjectProperties::Written, own_type_only: false };
    /// Gemini's OpenAPI `Schema`: `items` written, `properties` never empty, keywords on their own type.
    pub const GEMINI: Structure = Structure { items: true, properties: ObjectProperties::NonEmpty, own_type_only: true };
    /// Groq: `properties` declaring what `required` names.
    pub const GROQ: Structure = Structure { items: false, properties: ObjectProperties::BesideRequired, own_type_only: false };
}

/// Cohere's `strict_tools: true`: at most `max_fields` parameters over all tools (every level counted),
/// and every tool with parameters needs a required one. A request past them is sent with
/// `strict_tools: false` and a `strict_declined` record.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct StrictTools {
    pub max_fields: usize,
}

impl StrictTools {
    /// Why these rewritten tool schemas cannot go strict together, if they cannot.
    pub fn refuses(&self, tools: &[(String, Value)]) -> Option<String> {
        let mut fields = 0;
        for (name, s) in tools {
            fields += Properties::of(s).all;
            let props = s.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
            let required = s.get("required").and_then(Value::as_array).is_some_and(|r| !r.is_empty());
            if props && !required {
                return Some(format!("tool {name:?} has parameters but none required, which strict_tools refuses"));
            }
        }
        (fields > self.max_fields).then(|| format!("{fields} parameters over all tools, more than the {} strict_tools allows", self.max_fields))
    }
}

/// How an API reads references.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Refs {
    /// `#/$defs/Name` (and `#/definitions/Name`) refs, recursion included.
    Defs,
    /// Refs as [`Refs::Defs`], but a recursive one only inside a property that is not required
    /// (Gemini's `parametersJsonSchema`).
    OptionalCycles,
    /// No refs at all: definitions are inlined and a recursive one unrolled this many times, then cut
    /// to its type (Gemini's `parameters`, Cohere).
    Unrolled(usize),
}

/// What a strict mode compiles, beyond the keyword list: the conditions under which a schema cannot be
/// made strict without changing what a caller can send (the tool is then sent non-strict), and the
/// limits per schema.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Strict {
    /// Whether every property must be listed in `required` (optional ones then accept `null`).
    pub all_required: bool,
    /// Whether a recursive definition compiles.
    pub recursion: bool,
    /// Deepest object nesting (the root object is level 1).
    pub max_object_depth: Option<usize>,
    /// Most properties in one schema, all objects counted.
    pub max_properties: Option<usize>,
    /// Most `enum` values in one schema.
    pub max_enum_values: Option<usize>,
    /// Largest `minItems` compiled (Anthropic: 0 or 1); a larger one is removed (lossy, said).
    pub max_min_items: Option<u64>,
    /// Limits over all strict tools of one request, where the API has them.
    pub per_request: Option<RequestLimits>,
    /// Whether each node has one `type` (a type list becomes an `anyOf` of one type each) and a literal
    /// (`enum`, `const`) none beside it: how Anthropic's SDK writes strict schemas (it fails on a type
    /// list and drops the type beside literals).
    pub single_types: bool,
    /// Whether strict mode is all the request's tools or none (DeepSeek: "all `function` need to set
    /// the `strict` property to `true`"): one tool declined sends every tool non-strict.
    pub all_tools: bool,
}

/// Limits a strict mode sets over all strict tools of one request (Anthropic: 20 tools, 24 optional
/// parameters, 16 parameters with a union, each counted through every level of every strict tool).
/// Tools are counted in request order; one that would pass a limit is sent non-strict.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct RequestLimits {
    pub tools: usize,
    pub optional: usize,
    pub unions: usize,
}

/// The properties of a schema at every level, as the per-request limits count them: all of them, the
/// optional ones, and those that are unions (`anyOf` or a type list).
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct Properties {
    pub all: usize,
    pub optional: usize,
    pub unions: usize,
}

impl Properties {
    pub fn of(v: &Value) -> Properties {
        let mut p = Properties::default();
        p.add(v, 0);
        p
    }

    fn add(&mut self, v: &Value, depth: usize) {
        let Value::Object(m) = v else { return };
        if depth > crate::schema::walk::HARD_DEPTH {
            return;
        }
        if let Some(Value::Object(props)) = m.get("properties") {
            let required: Vec<&str> = m.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            for (name, p) in props {
                self.all += 1;
                if !required.contains(&name.as_str()) {
                    self.optional += 1;
                }
                if p.get("anyOf").is_some() || p.get("type").is_some_and(Value::is_array) {
                    self.unions += 1;
                }
            }
        }
        crate::schema::walk::children(m, |_, c| self.add(c, depth + 1));
    }
}

/// The members a server's tool structs keep.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct ToolFields {
    /// At the root of a tool's parameters.
    pub root: &'static [&'static str],
    /// In each of its `properties` (a property's `items` is kept whole where listed).
    pub property: &'static [&'static str],
}

impl ToolFields {
    /// Ollama's `api.ToolFunction` parameters as both the server (Go) and the `ollama` Python client
    /// (`_types.Tool`, 0.6.3) keep them: the client's property has no `properties` or `anyOf`, and older
    /// servers dropped those too.
    pub const OLLAMA: ToolFields =
        ToolFields { root: &["type", "$defs", "items", "required", "properties"], property: &["type", "items", "description", "enum"] };
}

/// The spelling of "no value" a backend compiles.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Never {
    /// `{"not": {}}` (and `additionalProperties: false` anywhere).
    Not,
    /// `{"anyOf": []}`: the backend refuses `not` and a `false` subschema (llguidance, outlines-core),
    /// and reads `additionalProperties: false` only beside `properties` (outlines-core), so `properties: {}`
    /// is written beside it.
    EmptyAnyOf,
}

/// A limit on how deep a schema document's JSON containers (objects and arrays, data included) nest.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Nesting {
    /// Containers below the root, at most (the root object is level 0).
    pub max: usize,
    /// Levels the server's own wrapper adds above a tool's parameters (a "call one of these tools"
    /// schema), taken off `max` for tools.
    pub tool_wrapper: usize,
}

impl Nesting {
    /// vLLM refuses a structured-output schema whose containers reach level 64
    /// (`MAX_STRUCTURED_OUTPUT_JSON_NESTING`); `tool_choice: "required"` places each tool's parameters
    /// at level 5 of its wrapper (`items`, `anyOf`, a branch, `properties`, `parameters`).
    pub const VLLM: Nesting = Nesting { max: 63, tool_wrapper: 5 };

    /// The most levels below a schema's root for this context.
    pub fn levels(&self, context: Context) -> usize {
        match context {
            Context::Tool => self.max.saturating_sub(self.tool_wrapper),
            _ => self.max,
        }
    }
}

/// Number bounds a backend enforces.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Numbers {
    /// On integers only, whole and inclusive, within a range that depends on the release
    /// ([`LlamaCpp::wide_integer_bounds`]); bounds on other numbers are removed.
    Integers,
    /// On every number, as JSON Schema says.
    All,
    /// None: every bound is removed (lossy, said in the description).
    Unenforced,
}

/// What a backend enforces beside a `pattern` (or a known `format`) on one string.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum BesidePattern {
    /// Nothing: one of `pattern`, `format`, the lengths is compiled, in that order; the rest goes.
    Nothing,
    /// `format` and `pattern` together, but no `minLength`/`maxLength` beside either.
    NoLengths,
    /// Everything.
    Everything,
}

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

/// Keywords no grammar a JSON-schema compiler writes enforces (they relate values to each other, or
/// exclude values).
const RELATIONAL: &[&str] = &[
    "if",
    "then",
    "else",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
    "contentSchema",
    "not",
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

/// The regex dialect a backend compiles `pattern` with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regex {
    /// ECMA-262, as JSON Schema writes patterns (hosted APIs that take them as written; the grammar
    /// compilers, whose subset the `patterns` pass writes).
    Ecma,
    /// Python's `re`: OpenAI compiles every `pattern` with it, strict or not, and answers 400 for the
    /// whole request on one it refuses (`\p{..}`, `(?<name>`); `regex_dialect` translates them into what
    /// both read alike. Strict mode also refuses look-around.
    Python { look_around: bool },
}

/// Where in a document a schema sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The document itself (a tool's parameters).
    Root,
    /// Anywhere below it.
    Inside,
}

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

    /// The oldest llama.cpp release the route serves, where the target is one whose behaviour depends on
    /// it ([`Target::versioned`]); `None` for every other backend. Every release check goes through
    /// here, so a workaround for one llama.cpp release cannot leak into another backend's output.
    pub fn release(&self, opts: &crate::schema::Options) -> Option<LlamaCpp> {
        self.versioned.then_some(opts.llama_cpp)
    }

    /// The fields this target sets away from [`Target::JSON_SCHEMA`] (JSON Schema as it means, no
    /// demand): each must have a reader among the passes of every profile with this target (checked in
    /// `profile`'s tests). The destructuring names every field, so a new one cannot be forgotten here.
    #[cfg(test)]
    pub fn settings(&self) -> Vec<&'static str> {
        let Target {
            typed_any,
            tool_description,
            tool_parameters,
            grammar,
            unenforced,
            formats,
            numbers,
            beside_pattern,
            counts_need_room,
            one_of_as_any_of,
            versioned,
            shared_defs,
            nesting,
            reserved_names,
            disjoint_pattern_properties,
            multiple_of_states,
            never,
            tool_fields,
            keywords,
            regex,
            ref_siblings,
            refs,
            openapi,
            root_union,
            structure,
            strict,
            no_strict_member,
            strict_tools,
            names,
            property_names,
            namespaces,
            reads_unused_defs,
        } = *self;
        let n = Target::JSON_SCHEMA;
        let set = [
            ("typed_any", typed_any != n.typed_any),
            ("tool_description", tool_description != n.tool_description),
            ("tool_parameters", tool_parameters != n.tool_parameters),
            ("grammar", grammar != n.grammar),
            ("unenforced", unenforced != n.unenforced),
            ("formats", formats != n.formats),
            ("numbers", numbers != n.numbers),
            ("beside_pattern", beside_pattern != n.beside_pattern),
            ("counts_need_room", counts_need_room != n.counts_need_room),
            ("one_of_as_any_of", one_of_as_any_of != n.one_of_as_any_of),
            ("versioned", versioned != n.versioned),
            ("shared_defs", shared_defs != n.shared_defs),
            ("nesting", nesting != n.nesting),
            ("reserved_names", reserved_names != n.reserved_names),
            ("disjoint_pattern_properties", disjoint_pattern_properties != n.disjoint_pattern_properties),
            ("multiple_of_states", multiple_of_states != n.multiple_of_states),
            ("never", never != n.never),
            ("tool_fields", tool_fields != n.tool_fields),
            ("keywords", keywords != n.keywords),
            ("regex", regex != n.regex),
            ("ref_siblings", ref_siblings != n.ref_siblings),
            ("refs", refs != n.refs),
            ("openapi", openapi != n.openapi),
            ("root_union", root_union != n.root_union),
            ("structure", structure != n.structure),
            ("strict", strict != n.strict),
            ("no_strict_member", no_strict_member != n.no_strict_member),
            ("strict_tools", strict_tools != n.strict_tools),
            ("names", names != n.names),
            ("property_names", property_names != n.property_names),
            ("namespaces", namespaces != n.namespaces),
            ("reads_unused_defs", reads_unused_defs != n.reads_unused_defs),
        ];
        set.iter().filter(|(_, on)| *on).map(|(f, _)| *f).collect()
    }

    /// Every keyword the backend ignores or refuses.
    pub fn unenforced_keywords(&self) -> impl Iterator<Item = &'static str> {
        let relational: &'static [&'static str] = if self.grammar { RELATIONAL } else { &[] };
        relational.iter().chain(self.unenforced).copied()
    }

    /// Whether `format: f` reaches the backend as it is.
    pub fn keeps_format(&self, f: &str) -> bool {
        self.formats.is_none_or(|l| l.contains(&f))
    }

    /// Whether `keyword` is ignored or refused.
    pub fn unenforced(&self, keyword: &str) -> bool {
        self.unenforced_keywords().any(|k| k == keyword)
    }

    /// The loosest schema for a place: what a cut or a dropped schema becomes. A tool's parameters
    /// stay an object.
    pub fn any(&self, context: Context, place: Place) -> Map<String, Value> {
        let v = if place == Place::Root && context == Context::Tool {
            json!({"type": "object"})
        } else if self.typed_any {
            json!({"type": Types::ALL.to_json()})
        } else {
            json!({})
        };
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// llama.cpp releases toolfit is judged against (each vendored by a llama-cpp-python sdist), oldest
/// first. A route declares the oldest it serves; what a later release fixed is then relied on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LlamaCpp {
    /// 2024-08 (llama-cpp-python 0.2.90); the default: every judged release is served
    #[default]
    V2024_08,
    /// 2024-12 (0.3.4)
    V2024_12,
    /// 2025-05 (0.3.9)
    V2025_05,
    /// 2025-08 (0.3.16)
    V2025_08,
    /// 2026-10 (0.3.36)
    V2026_10,
}

impl LlamaCpp {
    pub const ALL: &'static [LlamaCpp] = &[LlamaCpp::V2024_08, LlamaCpp::V2024_12, LlamaCpp::V2025_05, LlamaCpp::V2025_08, LlamaCpp::V2026_10];

    /// The release's month, as the configuration spells it.
    pub const fn name(self) -> &'static str {
        match self {
            LlamaCpp::V2024_08 => "2024-08",
            LlamaCpp::V2024_12 => "2024-12",
            LlamaCpp::V2025_05 => "2025-05",
            LlamaCpp::V2025_08 => "2025-08",
            LlamaCpp::V2026_10 => "2026-10",
        }
    }

    /// The llama-cpp-python release that vendors it.
    pub const fn python_package(self) -> &'static str {
        match self {
            LlamaCpp::V2024_08 => "0.2.90",
            LlamaCpp::V2024_12 => "0.3.4",
            LlamaCpp::V2025_05 => "0.3.9",
            LlamaCpp::V2025_08 => "0.3.16",
            LlamaCpp::V2026_10 => "0.3.36",
        }
    }

    /// The oldest release a route serves, from a `YYYY-MM` month: the newest judged release out by
    /// then (a build between two judged releases is treated as the older one, whose bugs it may
    /// still have). `None` for a malformed month or one before 2024-08.
    pub fn since(month: &str) -> Option<LlamaCpp> {
        let (y, m) = month.split_once('-')?;
        if y.len() != 4 || m.len() != 2 {
            return None;
        }
        let key = y.parse::<u32>().ok()? * 100 + m.parse::<u32>().ok().filter(|m| (1..=12).contains(m))?;
        LlamaCpp::ALL.iter().rev().copied().find(|v| {
            let (vy, vm) = v.name().split_once('-').unwrap_or(("0", "0"));
            vy.parse::<u32>().unwrap_or(0) * 100 + vm.parse::<u32>().unwrap_or(0) <= key
        })
    }

    // What each release enforces or breaks on, as the passes ask it. Each answer names the first judged
    // release that has it; a route whose oldest release is at least that one relies on it.

    /// Integer `minimum`/`maximum` past 32 bits are enforced exactly (older releases overflow them).
    pub fn wide_integer_bounds(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// A tool may come without `function.description` (up to 2025-08, llama-server answers 500
    /// `key 'description' not found`).
    pub fn tool_description_optional(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// A tool may come without `function.parameters` (up to 2025-08, llama-server answers 500
    /// `key 'parameters' not found`; 2026-10 reads a missing one as `{}`).
    pub fn tool_parameters_optional(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// `minItems`/`maxItems` apply without `items` (older releases apply them only beside `items`).
    pub fn item_counts_without_items(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// `maxItems: 0` beside `items` compiles (2024-08 and 2024-12 write a grammar they cannot parse).
    pub fn empty_arrays_beside_items(self) -> bool {
        self >= LlamaCpp::V2025_05
    }

    /// A definition is resolved whole wherever its refs stand (2024-08 and 2024-12 read a copy taken at
    /// the last ref to it, see `passes::refs_listed`).
    pub fn refs_read_whole(self) -> bool {
        self >= LlamaCpp::V2025_05
    }

    /// A definition that is itself a `$ref` compiles as its target (up to 2025-08 it compiles as any
    /// object).
    pub fn ref_chains(self) -> bool {
        self >= LlamaCpp::V2026_10
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_map_to_the_release_out_by_then() {
        assert_eq!(LlamaCpp::since("2024-08"), Some(LlamaCpp::V2024_08));
        assert_eq!(LlamaCpp::since("2025-01"), Some(LlamaCpp::V2024_12));
        assert_eq!(LlamaCpp::since("2026-09"), Some(LlamaCpp::V2025_08));
        assert_eq!(LlamaCpp::since("2026-10"), Some(LlamaCpp::V2026_10));
        assert_eq!(LlamaCpp::since("2031-01"), Some(LlamaCpp::V2026_10));
        for bad in ["2024-07", "2024-8", "2025-13", "latest", "", "2025-00"] {
            assert_eq!(LlamaCpp::since(bad), None, "{bad}");
        }
        for v in LlamaCpp::ALL {
            assert_eq!(LlamaCpp::since(v.name()), Some(*v));
        }
    }
}
