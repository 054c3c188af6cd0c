//! What a profile's backend does with a schema, for the passes to ask instead of assuming one backend.
//!
//! A pass that needs to know how the backend reads something asks the [`Target`] in its context
//! ([`crate::schema::Cx::target`]); what depends on the backend's version asks the oldest version the
//! route serves, through [`Target::release`].

mod backends;
mod llama_cpp;
mod names;
mod vocabulary;

pub use llama_cpp::LlamaCpp;
pub use names::Names;
pub use vocabulary::*;

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
    /// of [`RELATIONAL`], which no grammar can enforce.
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

impl Target {
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
