//! The words a [`Target`](super::Target) is written in: each says one thing a backend demands of a
//! schema or reads in it, with the constants several backends share.

use crate::schema::Context;
use serde_json::Value;

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
