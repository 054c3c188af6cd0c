//! The one list of everything the engine can do to a schema.
//!
//! Each kind names its counter (the same name in the CLI report, in Envoy stats and in docs/stats.md's table),
//! says whether the change loses meaning (the schema accepts values it did not, or rejects values it
//! accepted), and documents itself. Nothing else in the crate spells a counter name.

macro_rules! kinds {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, lossy = $lossy:literal; )*) => {
        /// A transformation kind: one counter, one row of docs/stats.md's table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind { $( $(#[doc = $doc])* $variant, )* }

        impl Kind {
            /// Every kind, in documentation order.
            pub const ALL: &'static [Kind] = &[ $( Kind::$variant, )* ];

            /// The counter name (snake_case), used everywhere a kind is named.
            pub const fn name(self) -> &'static str {
                match self { $( Kind::$variant => $name, )* }
            }

            /// Whether the change alters which values the schema accepts.
            pub const fn lossy(self) -> bool {
                match self { $( Kind::$variant => $lossy, )* }
            }

            /// One paragraph for operators: what triggers it and what the output means.
            pub fn doc(self) -> &'static str {
                match self { $( Kind::$variant => concat!($($doc, " "),*).trim_ascii(), )* }
            }

            /// Whether no pass of any profile reacts to this change, so a round of the pipeline that made
            /// only such changes is already a fixed point and needs no verification round. Opening an
            /// object is the one such kind: it is what almost every real tool gets, and only passes that
            /// ran after it in the same round look at `additionalProperties: true`; and it adds no keyword
            /// a pass is gated on, so the census of gated keywords stays valid. The idempotence tests,
            /// `skipping_gated_passes_changes_nothing` and both fuzz targets check the claim.
            pub const fn settles(self) -> bool {
                matches!(self, Kind::ObjectOpened)
            }

            /// The kind with this counter name.
            pub fn from_name(name: &str) -> Option<Kind> {
                Kind::ALL.iter().copied().find(|k| k.name() == name)
            }
        }
    };
}

kinds! {
    /// A subtree was deeper than `max_depth` (or than the backend's own nesting limit) or the schema had
    /// more than `max_nodes` object nodes; the offending subtrees were replaced by the loosest schema
    /// (any value).
    BoundsExceeded = "bounds_exceeded", lossy = true;
    /// A `$ref` to another document (URL or file) was replaced by "any value"; toolfit never fetches.
    RefExternal = "ref_external", lossy = true;
    /// A same-document `$ref` pointed at nothing and was replaced by "any value".
    RefsUnresolved = "refs_unresolved", lossy = true;
    /// A `$ref` in a form the backend cannot resolve (`#`, an `$anchor`, escaped or array pointers,
    /// siblings that constrain; for llama.cpp and vLLM anything but a plain root definition) was replaced
    /// by a copy of its target, merged with its siblings. Exact.
    RefsInlined = "refs_inlined", lossy = false;
    /// A `$ref` was pointed at a root `$defs` entry with a plain name the backend resolves (recursive
    /// targets, targets past the inlining budget). Exact.
    RefsRetargeted = "refs_retargeted", lossy = false;
    /// The root got a last member `x-toolfit-refs` that refers to every definition: llama.cpp 2024-08 and
    /// 2024-12 read a definition as the document stood at the last `$ref` to it, so a recursive one
    /// compiled as "any object" one level down. Only for routes whose `llama_cpp_since` is before 2025-05.
    /// An annotation: no value's validity changes. Exact.
    RefsListed = "refs_listed", lossy = false;
    /// A `$ref` with constraining siblings could not be merged (recursive target): the siblings were
    /// dropped.
    RefSiblingsDropped = "ref_siblings_dropped", lossy = true;
    /// A root `$defs` entry that an earlier tool of the same request defines differently was renamed,
    /// with the refs to it: for servers that merge every tool's definitions into one schema (vLLM's
    /// `tool_choice: "required"` answers 400 on such a clash). Changes names only. Exact.
    DefinitionRenamed = "definition_renamed", lossy = false;
    /// A `$ref` with keywords beside it that the API refuses there became `{"anyOf": [{"$ref": ..}]}`
    /// with those keywords beside the `anyOf`. Exact.
    RefWrapped = "ref_wrapped", lossy = false;
    /// `allOf` was merged into one schema (intersection). Exact.
    AllofMerged = "allof_merged", lossy = false;
    /// Keywords beside `anyOf`/`oneOf` (or a second union on the same node) were distributed into every
    /// branch as an intersection, so a backend that compiles only the union (llama.cpp) no longer ignores
    /// them. Exact.
    AnyofDistributed = "anyof_distributed", lossy = false;
    /// `oneOf` became `anyOf`: a grammar cannot enforce "exactly one". Counted as lossy only when the
    /// branches may overlap.
    OneofAsAnyof = "oneof_as_anyof", lossy = true;
    /// A `oneOf` whose branches no value can match twice became `anyOf`, which then means the same:
    /// for backends that refuse a `oneOf` they cannot prove disjoint themselves (llguidance). Exact.
    OneofDisjoint = "oneof_disjoint", lossy = false;
    /// A union branch or optional property that no value can satisfy (`not: {}`, `false`, an empty
    /// `enum`, contradictory types) was removed. Exact.
    NeverDropped = "never_dropped", lossy = false;
    /// A `not` the backend cannot express was removed: the schema now also accepts what it excluded.
    NotDropped = "not_dropped", lossy = true;
    /// A keyword the backend ignores or refuses (for a grammar: `if`/`then`/`else`, `uniqueItems`,
    /// `contains`, `dependent*`, `unevaluated*`; per backend: `patternProperties`, `propertyNames`,
    /// `min/maxProperties`, `multipleOf`, number bounds, formats it does not compile, ...) was removed
    /// and, by default, described in `description`.
    KeywordRemoved = "keyword_removed", lossy = true;
    /// A keyword that has no effect on validation here (`$schema`/`$id`/`$comment` below the root,
    /// `nullable: false`, a duplicate type) was removed. Exact.
    KeywordNormalized = "keyword_normalized", lossy = false;
    /// A schema without `type` got explicit types (a backend that infers one type from the keywords, as
    /// llama.cpp does, or rejects the schema), split per type where keywords apply to one type. Exact.
    TypesExplicit = "types_explicit", lossy = false;
    /// Draft-04/07 or OpenAPI 3.0 spelling (`items` arrays, `additionalItems`, boolean
    /// `exclusiveMinimum`, `nullable: true`, upper-case types, `dependencies`) became 2020-12. Exact.
    DialectNormalized = "dialect_normalized", lossy = false;
    /// A boolean subschema became its object form (`true` is any value; `false` never matches). Exact.
    BooleanSchema = "boolean_schema", lossy = false;
    /// A regex was rewritten into the subset the backend compiles (`\d`, `\w`, `\s`, `(?:`, anchors,
    /// escapes, `\p{..}` written out as its ranges). Exact.
    PatternRewritten = "pattern_rewritten", lossy = false;
    /// A regex the backend cannot express (look-around, back-references, a Unicode property past 2 KB
    /// written out, invalid syntax) was removed, or it was kept while `minLength`/`maxLength`/`format` beside it, which the
    /// backend does not enforce together with it, were removed.
    PatternRemoved = "pattern_removed", lossy = true;
    /// A repetition count (`minLength`, `maxLength`, `minItems`, `maxItems`, a regex `{n,m}`) past
    /// `max_repetition` (what a grammar can unroll) was clamped.
    RepetitionClamped = "repetition_clamped", lossy = true;
    /// Integer bounds were rewritten into the form the backend reads the same way on every release
    /// (whole numbers, inclusive), or an integer's fractional `multipleOf` into the whole step it means.
    /// Exact.
    BoundsNormalized = "bounds_normalized", lossy = false;
    /// With `open_objects: true` (the profile's default or the route's), object properties not listed
    /// in `properties` were allowed (`additionalProperties: true`) where JSON Schema allows them and the
    /// backend would forbid them. Exact.
    ObjectOpened = "object_opened", lossy = false;
    /// A name listed in `required` but not in `properties` was declared (as any value): a grammar
    /// enforces `required` only for declared properties. Exact.
    RequiredDeclared = "required_declared", lossy = false;
    /// `minItems`/`maxItems` were written so the backend applies them: `items` spelled out where
    /// missing (llama.cpp up to 2025-08 and xgrammar apply the counts only beside it), and `maxItems: 0`
    /// as `const: []` (llama.cpp 2024-08 and 2024-12 cannot parse their own grammar for it). Exact.
    ItemCountsSpelled = "item_counts_spelled", lossy = false;
    /// An `enum`/`const` string value that the backend escapes wrongly (older llama.cpp) was rewritten
    /// as an anchored pattern. Exact.
    EnumRewritten = "enum_rewritten", lossy = false;
    /// `prefixItems` allowing arrays of several lengths became one fixed-length tuple per allowed
    /// length (and a branch for the other types the node allows), for a backend that only writes a tuple
    /// of exactly `prefixItems` items (llama.cpp). Arrays longer than the tuple, where allowed, lose their
    /// positional constraints (also recorded as `keyword_removed`).
    TupleExpanded = "tuple_expanded", lossy = false;
    /// A property whose name the backend cannot write into a grammar (a quote, backslash or control
    /// character, or the name `$ref`, on some llama.cpp releases) was removed from `properties` and
    /// `required`; its value is then allowed only as any other property is.
    PropertyUnspellable = "property_unspellable", lossy = true;
    /// A tool's parameters did not end with `type: object` at the root and were made to.
    ToolRootFixed = "tool_root_fixed", lossy = false;
    /// A function tool without `function.description` (optional in the OpenAI API and in MCP) got an
    /// empty one, for a server that reads it unconditionally (llama-server up to 2025-08 answers 500
    /// `key 'description' not found`; routes whose `llama_cpp_since` is before 2026-10). Changes the body,
    /// not the schema.
    DescriptionAdded = "description_added", lossy = false;
    /// A function tool without `function.parameters` (a function without arguments, as the OpenAI API
    /// allows) got `{"type":"object","properties":{}}`, for a server that reads it unconditionally
    /// (llama-server up to 2025-08 answers 500 `key 'parameters' not found`; routes whose
    /// `llama_cpp_since` is before 2026-10). Changes the body; means what the missing member meant.
    ParametersAdded = "parameters_added", lossy = false;
    /// A function name the API refuses (MCP allows `.`, `/` and long names; OpenAI takes
    /// `[a-zA-Z0-9_-]{1,64}`, Gemini a letter or `_` first) was sent under a valid, unique name,
    /// everywhere the request names it (tool choice, earlier calls); the response gets the original
    /// name back (`names_restored`). Changes the body, not the schema.
    NameMapped = "name_mapped", lossy = false;
    /// A tool the client declared inside a Responses API namespace (Codex's MCP tools) was sent as a
    /// top-level function tool named `<namespace>__<name>`, for a server that reads no tool inside a
    /// namespace (llama-server's `/v1/responses`); earlier calls in `input` follow, and the response's
    /// calls get `name` and `namespace` back (`names_restored`). Changes the body, not the schema.
    NamespaceLifted = "namespace_lifted", lossy = false;
    /// A property name the API refuses in a tool's parameters (Gemini's `parameters` take
    /// `[A-Za-z0-9_]`, a letter or `_` first, 64 at most; MCP tools use `-` and `.`) was sent under a
    /// valid name unique in the tool, everywhere the schema names it (`properties`, `required`,
    /// `propertyOrdering`); the call's arguments get the original key back (`properties_restored`).
    /// Exact.
    PropertyMapped = "property_mapped", lossy = false;
    /// An object without `additionalProperties: false` got it, for a strict mode that requires it on
    /// every object (OpenAI, Anthropic). It only narrows what the model may write: every call allowed
    /// is valid for the original schema, as on grammar backends that close objects themselves. Objects
    /// that are maps (`additionalProperties` a schema, `patternProperties`, no `properties`) are never
    /// closed: their tool is sent non-strict (`strict_declined`). Counted as exact for that reason.
    ObjectClosed = "object_closed", lossy = false;
    /// An optional property was listed in `required` and made to accept `null` (its type list, its
    /// `enum`, or a union with `{"type": "null"}`), for OpenAI strict mode, which requires every property.
    /// The model then sends `null` where it would have left the property out.
    OptionalNullable = "optional_nullable", lossy = true;
    /// A schema could not be made strict without changing what a caller can send (a map object, a
    /// value of any type, a tuple, recursion where the API refuses it, a limit exceeded, the API's
    /// per-request limits): the tool (or output format) was sent with `strict: false`, rewritten only
    /// as far as the non-strict API needs. The detail names the reason and the place.
    StrictDeclined = "strict_declined", lossy = false;
    /// A union at the root of a tool's parameters, which the API refuses, became one object: every
    /// branch's properties, required only where every branch requires them; the alternatives are said
    /// in the description.
    RootUnionMerged = "root_union_merged", lossy = true;
    /// An array or object in the shape the API demands: `items: {}` or `properties: {}` written (they
    /// mean what the missing keyword meant), an empty `properties` removed, or an object or array
    /// keyword removed from a node whose `type` excludes that type. Exact.
    StructureSpelled = "structure_spelled", lossy = false;
    /// An annotation the API refuses (`default`, `examples`, `title`, `$comment`, vendor `x-` keys, ...)
    /// was removed; a `default` or `examples` value is said in the description. No value's validity
    /// changes. Exact.
    AnnotationMoved = "annotation_moved", lossy = false;
    /// A recursive definition the API cannot reference was unrolled a fixed number of times and cut
    /// to its type below that, or (Gemini's JSON Schema fields) a required property holding one was
    /// made optional.
    RecursionCut = "recursion_cut", lossy = true;
    /// Types as OpenAPI 3.0 spells them (Gemini's `Schema`): a type list with `null` became one type
    /// with `nullable: true`, several types an `anyOf` of one per type, a `const` a one-value `enum`,
    /// keywords beside `anyOf` moved into its branches. Exact.
    OpenapiTypes = "openapi_types", lossy = false;
    /// A whole schema could not be satisfied, or could not be parsed, and was replaced by the loosest
    /// schema for its context.
    SchemaReplaced = "schema_replaced", lossy = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for k in Kind::ALL {
            assert!(seen.insert(k.name()), "duplicate counter name {}", k.name());
            assert!(k.name().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{}", k.name());
            assert!(k.doc().len() > 20, "{} lacks documentation", k.name());
            assert_eq!(Kind::from_name(k.name()), Some(*k));
        }
    }
}
