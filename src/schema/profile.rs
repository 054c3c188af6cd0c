//! Profiles: an ordered list of passes per target backend, plus the options they run with.

use super::passes::*;
use super::target::{BesidePattern, Numbers};
use super::{Options, Target};

pub struct Profile {
    pub name: &'static str,
    pub passes: &'static [Pass],
    /// What this profile is for, for `toolfit profiles` and the README.
    pub about: &'static str,
    /// What its backend does with a schema, for the passes to ask.
    pub target: Target,
}

macro_rules! pass {
    ($m:ident) => {
        Pass { name: stringify!($m), run: $m::run, wants: &[] }
    };
}

/// A pass that only acts on nodes holding one of its module's `WANTS` keywords.
macro_rules! gated {
    ($m:ident) => {
        Pass { name: stringify!($m), run: $m::run, wants: $m::WANTS }
    };
}

/// llama.cpp's converter (llama-server, Ollama's `format`), every version from 2024-08 on.
pub static LLAMA_CPP: Profile = Profile {
    name: "llama-cpp",
    about: "llama.cpp's JSON-schema-to-grammar (llama-server, Ollama): every version from 2024-08 on",
    target: Target::LLAMA_CPP,
    passes: &[
        pass!(bounds),
        gated!(unevaluated),
        pass!(dialect),
        pass!(boolean_schemas),
        pass!(refs),
        gated!(all_of),
        gated!(prefix_items),
        gated!(unions),
        pass!(never),
        pass!(tool_root),
        pass!(unsupported),
        pass!(unspellable_names),
        pass!(open_objects),
        pass!(explicit_types),
        gated!(patterns),
        gated!(integer_bounds),
        gated!(repetition),
        gated!(item_counts),
        gated!(enums),
        pass!(never),
        // the bound holds for what reaches the backend: inlined refs and type splits can nest deeper
        pass!(bounds),
        pass!(refs_listed),
    ],
};

/// Bounds and dialect clean-up only, for MCP clients and backends that take 2020-12 as it is.
pub static MCP: Profile = Profile {
    name: "mcp",
    about: "MCP SEP-2106 bounds and dialect clean-up only; meaning unchanged",
    target: Target::JSON_SCHEMA,
    passes: &[pass!(bounds), pass!(dialect)],
};

/// The passes every grammar compiler other than llama.cpp needs; what each pass then does is read
/// from the profile's target. Left out, as llama.cpp's own: release workarounds (`enums`,
/// `unspellable_names`, `refs_listed`) and exact tuples (`prefix_items`), which these
/// compilers read as JSON Schema says. `explicit_types` stays: they too infer one type from the keywords
/// of an untyped schema (`{"maxLength": 2}` compiles as "a string").
macro_rules! grammar_passes {
    () => {
        &[
            pass!(bounds),
            gated!(unevaluated),
            pass!(dialect),
            pass!(boolean_schemas),
            pass!(refs),
            gated!(all_of),
            gated!(unions),
            pass!(never),
            pass!(tool_root),
            pass!(unsupported),
            pass!(open_objects),
            pass!(explicit_types),
            gated!(patterns),
            gated!(integer_bounds),
            gated!(repetition),
            gated!(item_counts),
            pass!(never),
            pass!(bounds),
        ]
    };
}

/// xgrammar as vLLM runs it (`strict_mode`, the formats vLLM's pre-check lets through). It ignores
/// `allOf` of two or more branches (merged here), `not`, `if`/`then`/`else`, `uniqueItems`, `contains`,
/// and lengths beside a `pattern` or `format`; vLLM's pre-check refuses `multipleOf`, `uniqueItems`,
/// `contains`, unknown formats and most uses of `propertyNames`/`patternProperties`.
pub static VLLM_XGRAMMAR: Profile = Profile {
    name: "vllm-xgrammar",
    about: "vLLM with --structured-outputs-backend xgrammar (xgrammar 0.2.8 in strict mode, behind vLLM's pre-check)",
    target: Target {
        typed_any: false,
        tool_description: false,
        unenforced: &[
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
            "multipleOf",
            "propertyNames",
            "patternProperties",
        ],
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
        numbers: Numbers::All,
        beside_pattern: BesidePattern::NoLengths,
        counts_need_room: true,
        one_of_as_any_of: false,
        versioned: false,
    },
    passes: grammar_passes!(),
};

/// llguidance as vLLM runs it (`whitespace_flexible`). It refuses (400) `not`, `if`/`then`/`else`,
/// `dependent*`, `uniqueItems`, `contains`, `propertyNames`, unknown formats and look-around; it
/// enforces `patternProperties` and `multipleOf`. Lengths beside a pattern are removed: llguidance
/// intersects the two and gives up ("Unable to determine if regex is empty") on real patterns such as
/// a host name's.
pub static VLLM_GUIDANCE: Profile = Profile {
    name: "vllm-guidance",
    about: "vLLM with --structured-outputs-backend guidance (llguidance 1.9.1)",
    target: Target {
        typed_any: false,
        tool_description: false,
        unenforced: &[
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
            "propertyNames",
            "$dynamicAnchor",
        ],
        formats: Some(&["date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uuid"]),
        numbers: Numbers::All,
        beside_pattern: BesidePattern::NoLengths,
        counts_need_room: false,
        one_of_as_any_of: true,
        versioned: false,
    },
    passes: grammar_passes!(),
};

/// outlines-core as vLLM runs it (a regex built from the schema). It ignores number bounds,
/// `multipleOf` and `minProperties`/`maxProperties`, refuses `patternProperties`, unknown formats and `$anchor` refs, and closes objects
/// without `additionalProperties`.
pub static VLLM_OUTLINES: Profile = Profile {
    name: "vllm-outlines",
    about: "vLLM with --structured-outputs-backend outlines (outlines-core 0.2.14)",
    target: Target {
        typed_any: false,
        tool_description: false,
        unenforced: &[
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
            "propertyNames",
            "patternProperties",
            "multipleOf",
            "minProperties",
            "maxProperties",
        ],
        formats: Some(&["date", "time", "date-time", "email", "uri", "uuid"]),
        numbers: Numbers::Unenforced,
        beside_pattern: BesidePattern::Everything,
        counts_need_room: false,
        one_of_as_any_of: false,
        versioned: false,
    },
    passes: grammar_passes!(),
};

/// vLLM's default (`auto`): xgrammar after vLLM's pre-check, else llguidance. The output passes the
/// pre-check and compiles on xgrammar, and means the same on llguidance: what either refuses or
/// ignores is removed, only formats both compile are kept.
pub static VLLM: Profile = Profile {
    name: "vllm",
    about: "vLLM's default structured-output backend (auto: xgrammar after vLLM's pre-check, llguidance as fallback)",
    target: Target {
        typed_any: false,
        tool_description: false,
        unenforced: &[
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
            "multipleOf",
            "propertyNames",
            "patternProperties",
            "$dynamicAnchor",
        ],
        formats: Some(&["date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uuid"]),
        numbers: Numbers::All,
        beside_pattern: BesidePattern::NoLengths,
        counts_need_room: true,
        one_of_as_any_of: true,
        versioned: false,
    },
    passes: grammar_passes!(),
};

pub static ALL: &[&Profile] = &[&LLAMA_CPP, &VLLM, &VLLM_XGRAMMAR, &VLLM_GUIDANCE, &VLLM_OUTLINES, &MCP];

impl Profile {
    pub fn by_name(name: &str) -> Option<&'static Profile> {
        ALL.iter().copied().find(|p| p.name == name)
    }

    /// Every keyword some pass of this profile is gated on, each once: what the census looks for.
    pub fn tracked(&self) -> Vec<&'static str> {
        let mut t: Vec<&'static str> = Vec::new();
        for w in self.passes.iter().flat_map(|p| p.wants) {
            if !t.contains(w) {
                t.push(w);
            }
        }
        t
    }

    /// The options a profile runs with unless a route overrides them.
    pub fn default_options(&self) -> Options {
        Options::default()
    }
}

impl PartialEq for Profile {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}
