//! Profiles: an ordered list of passes per target backend, plus the options they run with.

use super::lookup::KeySet;
use super::passes::*;
use super::{Context, Options, Target};
use std::sync::OnceLock;

pub struct Profile {
    pub name: &'static str,
    pub passes: &'static [Pass],
    /// The passes for tools' parameters, where the backend reads them otherwise than it compiles
    /// structured output (Ollama does not compile tools at all); `None`: [`Profile::passes`].
    pub tool_passes: Option<&'static [Pass]>,
    /// What this profile is for, for `toolfit profiles` and the README.
    pub about: &'static str,
    /// What its backend does with a schema, for the passes to ask.
    pub target: Target,
    /// The options it runs with where neither the plugin nor the route sets them.
    pub defaults: Defaults,
    /// For an API with a strict mode: the profiles for strict and non-strict schemas, and whether
    /// every schema is made strict (else only those the request marks `strict: true`).
    pub modes: Option<Modes>,
    /// The profile for an API's JSON Schema fields (Gemini's `parametersJsonSchema`,
    /// `responseJsonSchema`), where this one is for its other schema fields.
    pub json_fields: Option<&'static Profile>,
    /// The profile for structured-output schemas (`response_format`), where the API compiles them
    /// otherwise than tools (Groq and xAI take fewer keywords there).
    pub outputs: Option<&'static Profile>,
    /// Its [`PassPlan`] for each context, made on the first schema that needs it.
    pub plans: [OnceLock<PassPlan>; 2],
}

/// What [`crate::schema::normalize`] reads from a profile's pass list and target for one context. It is
/// the same for every schema, so it is made once per profile and context and kept beside them.
pub struct PassPlan {
    /// Every keyword some pass is gated on, each once: what the census looks for.
    pub tracked: KeySet,
    /// The place in the pass list of each pass with a node test: a test's bit in the survey is its
    /// place here, and `tests` holds the tests in the same order.
    pub tested: Vec<usize>,
    pub tests: Vec<Acts>,
    /// The keywords the target does not enforce ([`Target::unenforced_keywords`]), for the node tests.
    pub unenforced: KeySet,
}

/// A profile's [`Profile::plans`] before any is made.
const fn unplanned() -> [OnceLock<PassPlan>; 2] {
    [OnceLock::new(), OnceLock::new()]
}

/// A strict mode and its fallback (see [`Profile::modes`]).
#[derive(Clone, Copy)]
pub struct Modes {
    pub strict: &'static Profile,
    pub loose: &'static Profile,
    /// Every tool and output format is sent strict where it can be (`strict: true` written).
    pub force: bool,
}

/// A profile's own settings of the options a plugin or a route may override.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    pub promote_to_description: bool,
    pub open_objects: bool,
}

impl Defaults {
    /// Removed constraints said in descriptions; objects closed where the backend closes them (see
    /// [`Options::open_objects`]). Every profile has these today; a backend whose users want otherwise
    /// gets its own.
    pub const STANDARD: Defaults = Defaults { promote_to_description: true, open_objects: false };
}

/// A profile's `about` line: for `toolfit profiles` and the README, so left out of the Wasm module
/// (2.5 KB of text no filter reads).
macro_rules! about {
    ($text:expr) => {
        if cfg!(target_family = "wasm") {
            ""
        } else {
            $text
        }
    };
}

macro_rules! pass {
    ($m:ident) => {
        Pass { name: stringify!($m), run: $m::run, wants: &[], after: $m::AFTER, acts: None }
    };
}

/// A pass that acts only where its module's `acts` says a node may need it ([`Pass::acts`]).
macro_rules! tested {
    ($m:ident) => {
        Pass { name: stringify!($m), run: $m::run, wants: &[], after: $m::AFTER, acts: Some($m::acts) }
    };
}

/// A pass that only acts on nodes holding one of its module's `WANTS` keywords.
macro_rules! gated {
    ($m:ident) => {
        Pass { name: stringify!($m), run: $m::run, wants: $m::WANTS, after: $m::AFTER, acts: None }
    };
}

/// The passes that make any schema plain (bounded, 2020-12, refs resolved, `allOf` merged, union
/// siblings in the branches, "never" dropped, a tool's root an object), followed by the given ones: the
/// start of every pass list but llama.cpp's (which puts exact tuples among them) and `mcp`'s.
macro_rules! plain_then {
    ($($p:expr),* $(,)?) => {
        &[
            tested!(bounds),
            gated!(unevaluated),
            tested!(dialect),
            tested!(boolean_schemas),
            gated!(refs),
            gated!(all_of),
            gated!(unions),
            tested!(never),
            pass!(tool_root),
            $($p),*
        ]
    };
}

/// llama.cpp's converter (llama-server, Ollama's `format`), every version from 2024-08 on.
pub static LLAMA_CPP: Profile = Profile {
    name: "llama-cpp",
    about: about!("llama.cpp's JSON-schema-to-grammar (llama-server, Ollama): every version from 2024-08 on"),
    target: Target::LLAMA_CPP,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: &[
        tested!(bounds),
        gated!(unevaluated),
        tested!(dialect),
        tested!(boolean_schemas),
        gated!(refs),
        gated!(all_of),
        gated!(prefix_items),
        gated!(unions),
        tested!(never),
        pass!(tool_root),
        tested!(unsupported),
        tested!(unspellable_names),
        tested!(open_objects),
        tested!(explicit_types),
        gated!(patterns),
        gated!(integer_bounds),
        gated!(repetition),
        gated!(item_counts),
        gated!(enums),
        tested!(never),
        // the bound holds for what reaches the backend: inlined refs and type splits can nest deeper
        tested!(bounds),
        pass!(refs_listed),
    ],
};

/// Ollama: `format` as llama.cpp compiles it; tools in the fields Ollama keeps ([`Target::OLLAMA`]).
pub static OLLAMA: Profile = Profile {
    name: "ollama",
    about: about!("Ollama: format compiled by its vendored llama.cpp; tools in the fields Ollama keeps, the rest in descriptions"),
    target: Target::OLLAMA,
    // tools are text in Ollama's prompt, never compiled: refs inlined (Ollama drops `$ref`), the
    // dialect and unions made plain, then the fixed fields; no grammar workaround
    defaults: Defaults::STANDARD,
    tool_passes: Some(plain_then![pass!(fixed_fields), tested!(bounds)]),
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    // `format` is compiled by the llama.cpp it vendors (`llama_cpp_since` names the release)
    passes: LLAMA_CPP.passes,
};

/// Bounds and dialect clean-up only, for MCP clients and backends that take 2020-12 as it is.
pub static MCP: Profile = Profile {
    name: "mcp",
    about: about!("MCP SEP-2106 bounds and dialect clean-up only; meaning unchanged"),
    target: Target::JSON_SCHEMA,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: &[tested!(bounds), tested!(dialect)],
};

/// The passes every grammar compiler other than llama.cpp needs; what each pass then does is read
/// from the profile's target. Left out, as llama.cpp's own: release workarounds (`enums`,
/// `unspellable_names`, `refs_listed`) and exact tuples (`prefix_items`), which these
/// compilers read as JSON Schema says. `explicit_types` stays: they too infer one type from the keywords
/// of an untyped schema (`{"maxLength": 2}` compiles as "a string").
macro_rules! grammar_passes {
    () => {
        plain_then![
            gated!(multiple_of),
            tested!(unsupported),
            tested!(open_objects),
            tested!(explicit_types),
            gated!(patterns),
            gated!(integer_bounds),
            gated!(repetition),
            gated!(item_counts),
            tested!(never),
            tested!(bounds),
        ]
    };
}

/// vLLM with the xgrammar backend ([`Target::XGRAMMAR`]).
pub static VLLM_XGRAMMAR: Profile = Profile {
    name: "vllm-xgrammar",
    about: about!("vLLM with --structured-outputs-backend xgrammar (xgrammar 0.2.8 in strict mode, behind vLLM's pre-check)"),
    target: Target::XGRAMMAR,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: grammar_passes!(),
};

/// SGLang with its default grammar backend ([`Target::SGLANG`]).
pub static SGLANG: Profile = Profile {
    name: "sglang",
    about: about!("SGLang with --grammar-backend xgrammar, its default (xgrammar 0.2.7 behind SGLang 0.5.23's own pre-check)"),
    target: Target::SGLANG,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: grammar_passes!(),
};

/// SGLang with the llguidance backend ([`Target::SGLANG_GUIDANCE`]).
pub static SGLANG_GUIDANCE: Profile = Profile {
    name: "sglang-guidance",
    about: about!("SGLang with --grammar-backend llguidance (llguidance 1.9.1, within SGLang 0.5.23's pin; no pre-check)"),
    target: Target::SGLANG_GUIDANCE,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: grammar_passes!(),
};

/// vLLM with the guidance backend ([`Target::GUIDANCE`]).
pub static VLLM_GUIDANCE: Profile = Profile {
    name: "vllm-guidance",
    about: about!("vLLM with --structured-outputs-backend guidance (llguidance 1.9.1)"),
    target: Target::GUIDANCE,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: grammar_passes!(),
};

/// vLLM with the outlines backend ([`Target::OUTLINES`]).
pub static VLLM_OUTLINES: Profile = Profile {
    name: "vllm-outlines",
    about: about!("vLLM with --structured-outputs-backend outlines (outlines-core 0.2.14)"),
    target: Target::OUTLINES,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: grammar_passes!(),
};

/// vLLM's default backend choice ([`Target::VLLM`]).
pub static VLLM: Profile = Profile {
    name: "vllm",
    about: about!("vLLM's default structured-output backend (auto: xgrammar after vLLM's pre-check, llguidance as fallback)"),
    target: Target::VLLM,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: grammar_passes!(),
};

/// [`plain_then!`] for a hosted API that refuses a union at a tool's root: a tool's root is an object
/// before refs are resolved (a `$ref: "#"` copies the root, which must then be the object it becomes),
/// and a root union is made one object before unions are distributed (which would copy the root's
/// keywords into every branch).
macro_rules! hosted_then {
    ($($p:expr),* $(,)?) => {
        &[
            tested!(bounds),
            gated!(unevaluated),
            tested!(dialect),
            tested!(boolean_schemas),
            pass!(tool_root),
            gated!(refs),
            pass!(root_union),
            gated!(all_of),
            gated!(unions),
            tested!(never),
            pass!(tool_root),
            $($p),*
        ]
    };
}

/// The passes of a strict mode (OpenAI, Anthropic): plain, one object at the root, every value typed,
/// then [`strict_objects`] closes objects (or declines), and what the mode refuses goes.
macro_rules! strict_passes {
    ($($p:expr),* $(,)?) => {
        hosted_then![tested!(explicit_types), pass!(strict_objects), tested!(unsupported), pass!(keywords), gated!(patterns), tested!(never), $($p,)* tested!(bounds),]
    };
}

/// OpenAI without strict mode: the structural 400s only.
pub static OPENAI: Profile = Profile {
    name: "openai",
    about: about!("OpenAI Chat Completions and Responses: non-strict schemas get only what the API requires (items, properties, an object root); strict: true ones the openai-strict rewrite"),
    target: Target::OPENAI,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &OPENAI_STRICT, loose: &OPENAI, force: false }),
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    // `regex_dialect`: OpenAI compiles every pattern with Python's re, strict or not
    passes: &[tested!(bounds), pass!(tool_root), pass!(structure), gated!(regex_dialect)],
};

/// OpenAI strict mode, for every tool and output format that can be made strict.
pub static OPENAI_STRICT: Profile = Profile {
    name: "openai-strict",
    about: about!("OpenAI strict mode for every tool and json_schema format that can be made strict (closed objects, all required, optional as nullable); the rest sent strict: false"),
    target: Target::OPENAI_STRICT,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &OPENAI_STRICT, loose: &OPENAI, force: true }),
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    // `structure` for what strict mode leaves as it was: an object it declined to close
    passes: strict_passes![pass!(structure), gated!(regex_dialect)],
};

/// Anthropic without strict mode: a tool's root is an object and not a union.
pub static ANTHROPIC: Profile = Profile {
    name: "anthropic",
    about: about!("Anthropic Messages: a tool's input_schema an object without a root union; strict: true tools the anthropic-strict rewrite"),
    target: Target::ANTHROPIC,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &ANTHROPIC_STRICT, loose: &ANTHROPIC, force: false }),
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: &[tested!(bounds), pass!(root_union), pass!(tool_root)],
};

/// Anthropic strict tool use, for every tool that can be made strict within the request limits.
pub static ANTHROPIC_STRICT: Profile = Profile {
    name: "anthropic-strict",
    about: about!("Anthropic strict tool use for every tool that can be (closed objects, supported keywords, no recursion), within 20 strict tools, 24 optional and 16 union parameters per request; the rest non-strict"),
    target: Target::ANTHROPIC_STRICT,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &ANTHROPIC_STRICT, loose: &ANTHROPIC, force: true }),
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: strict_passes!(),
};

/// Bedrock Converse for any model but Claude (the route's own model map sends Claude to
/// [`BEDROCK_ANTHROPIC`]).
pub static BEDROCK: Profile = Profile {
    name: "bedrock",
    about: about!("Bedrock Converse: a tool's inputSchema.json an object, names [a-zA-Z0-9_-]{1,64}; strict: true tools and outputConfig schemas the bedrock-strict rewrite"),
    target: Target::BEDROCK,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &BEDROCK_STRICT, loose: &BEDROCK, force: false }),
    // structured output is always constrained
    json_fields: Some(&BEDROCK_STRICT),
    outputs: None,
    plans: unplanned(),
    passes: &[tested!(bounds), pass!(tool_root)],
};

/// Claude on Bedrock (`anthropic.claude-*`, `us.anthropic.claude-*`).
pub static BEDROCK_ANTHROPIC: Profile = Profile {
    name: "bedrock-anthropic",
    about: about!("Claude on Bedrock Converse: as bedrock, and no anyOf/oneOf/allOf at a tool's root"),
    target: Target::BEDROCK_ANTHROPIC,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &BEDROCK_STRICT, loose: &BEDROCK_ANTHROPIC, force: false }),
    json_fields: Some(&BEDROCK_STRICT),
    outputs: None,
    plans: unplanned(),
    passes: &[tested!(bounds), pass!(root_union), pass!(tool_root)],
};

/// Bedrock's strict tools and structured output, for every tool that can be made strict.
pub static BEDROCK_STRICT: Profile = Profile {
    name: "bedrock-strict",
    about: about!("Bedrock strict tools and outputConfig schemas: Anthropic's strict rules (closed objects, no number or length bounds, no recursion), Bedrock's names; the rest non-strict"),
    target: Target::BEDROCK_STRICT,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &BEDROCK_STRICT, loose: &BEDROCK, force: true }),
    json_fields: Some(&BEDROCK_STRICT),
    outputs: None,
    plans: unplanned(),
    passes: strict_passes!(),
};

/// Mistral's chat completions (OpenAI's request shape).
pub static MISTRAL: Profile = Profile {
    name: "mistral",
    about: about!("Mistral chat tools: valid JSON Schema 2020-12 (draft-04 and draft-07 spellings rewritten), no $schema or $id, an object root"),
    target: Target::MISTRAL,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: &[
        tested!(bounds),
        tested!(dialect),
        tested!(boolean_schemas),
        gated!(refs),
        tested!(never),
        pass!(tool_root),
        pass!(keywords),
        gated!(regex_dialect),
    ],
};

/// Groq (OpenAI's request shape): tools as sent but `required` declared; response formats its subset.
pub static GROQ: Profile = Profile {
    name: "groq",
    about: about!("Groq chat completions: a tool's root an object, properties declaring what required names; json_schema response formats groq-output, strict: true schemas the groq-strict rewrite"),
    target: Target::GROQ,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &GROQ_STRICT, loose: &GROQ, force: false }),
    json_fields: None,
    outputs: Some(&GROQ_OUTPUT),
    plans: unplanned(),
    passes: &[tested!(bounds), pass!(tool_root), pass!(structure)],
};

/// Groq's non-strict `json_schema` response formats.
pub static GROQ_OUTPUT: Profile = Profile {
    name: "groq-output",
    about: about!(
        "Groq json_schema response formats without strict: the documented subset (types, enum, anyOf, $defs/$ref), other keywords said in descriptions"
    ),
    target: Target::GROQ_OUTPUT,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: hosted_then![tested!(unsupported), pass!(keywords), pass!(structure), tested!(never), tested!(bounds)],
};

/// Groq's strict mode, for every tool and response format that can be made strict.
pub static GROQ_STRICT: Profile = Profile {
    name: "groq-strict",
    about: about!("Groq strict mode for every tool and json_schema format that can be (closed objects, all required, optional as nullable, the documented subset); the rest non-strict"),
    target: Target::GROQ_STRICT,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &GROQ_STRICT, loose: &GROQ, force: true }),
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: strict_passes![pass!(structure)],
};

/// DeepSeek's chat completions (OpenAI's request shape).
pub static DEEPSEEK: Profile = Profile {
    name: "deepseek",
    about: about!(
        "DeepSeek chat completions: a tool's root type: object; strict: true tools (beta) the deepseek-strict rewrite, all of a request's tools or none"
    ),
    target: Target::DEEPSEEK,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &DEEPSEEK_STRICT, loose: &DEEPSEEK, force: false }),
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: &[tested!(bounds), pass!(tool_root)],
};

/// DeepSeek's strict mode (beta), for all of a request's tools when every one can be made strict.
pub static DEEPSEEK_STRICT: Profile = Profile {
    name: "deepseek-strict",
    about: about!("DeepSeek strict mode (beta) for a request's tools when all can be (closed objects, all required, no length or item bounds, five formats); else all non-strict"),
    target: Target::DEEPSEEK_STRICT,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: Some(Modes { strict: &DEEPSEEK_STRICT, loose: &DEEPSEEK, force: true }),
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: strict_passes!(),
};

/// xAI's chat completions (OpenAI's request shape).
pub static XAI: Profile = Profile {
    name: "xai",
    about: about!("xAI chat completions: tools as openai (items, properties, an object root); response formats xai-output"),
    target: Target::XAI,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: Some(&XAI_OUTPUT),
    plans: unplanned(),
    passes: &[tested!(bounds), pass!(tool_root), pass!(structure)],
};

/// xAI's structured outputs.
pub static XAI_OUTPUT: Profile = Profile {
    name: "xai-output",
    about: about!("xAI structured outputs: no length or item-count bounds, no allOf (merged), the rest as xai"),
    target: Target::XAI_OUTPUT,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    // no `unions`: xAI takes keywords beside `anyOf`, and `structure` writes some there
    passes: &[
        tested!(bounds),
        tested!(dialect),
        tested!(boolean_schemas),
        gated!(refs),
        gated!(all_of),
        tested!(unsupported),
        pass!(structure),
        tested!(never),
        tested!(bounds),
    ],
};

/// Gemini's OpenAPI `Schema` fields.
pub static GEMINI: Profile = Profile {
    name: "gemini",
    about: about!("Gemini functionDeclarations[].parameters and responseSchema: the OpenAPI 3.0 subset (no refs, nullable, string enums); its JSON Schema fields get gemini-json"),
    target: Target::GEMINI,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: Some(&GEMINI_JSON),
    outputs: None,
    plans: unplanned(),
    passes: hosted_then![
        pass!(unroll),
        pass!(openapi),
        tested!(unsupported),
        tested!(never),
        pass!(keywords),
        // after `unroll` (a cut recursion is `{"type": "array"}`) and `openapi` (one type per node)
        pass!(structure),
        pass!(property_names),
        tested!(bounds),
    ],
};

/// Gemini's JSON Schema fields.
pub static GEMINI_JSON: Profile = Profile {
    name: "gemini-json",
    about: about!("Gemini parametersJsonSchema and responseJsonSchema: the documented JSON Schema subset, $ref with only description beside it, recursion only in optional properties"),
    target: Target::GEMINI_JSON,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: Some(&GEMINI_JSON),
    outputs: None,
    plans: unplanned(),
    passes: hosted_then![pass!(unroll), tested!(unsupported), tested!(never), pass!(keywords), tested!(bounds)],
};

/// Cohere v2 chat.
pub static COHERE: Profile = Profile {
    name: "cohere",
    about: about!("Cohere v2 chat tools: documented keywords only, refs inlined, no per-tool strict; strict_tools limits checked"),
    target: Target::COHERE,
    defaults: Defaults::STANDARD,
    tool_passes: None,
    modes: None,
    json_fields: None,
    outputs: None,
    plans: unplanned(),
    passes: hosted_then![pass!(unroll), tested!(unsupported), pass!(structure), tested!(never), pass!(keywords), tested!(bounds),],
};

pub static ALL: &[&Profile] = &[
    &LLAMA_CPP,
    &OLLAMA,
    &VLLM,
    &VLLM_XGRAMMAR,
    &VLLM_GUIDANCE,
    &VLLM_OUTLINES,
    &SGLANG,
    &SGLANG_GUIDANCE,
    &OPENAI,
    &OPENAI_STRICT,
    &ANTHROPIC,
    &ANTHROPIC_STRICT,
    &GEMINI,
    &GEMINI_JSON,
    &COHERE,
    &MISTRAL,
    &GROQ,
    &GROQ_OUTPUT,
    &GROQ_STRICT,
    &DEEPSEEK,
    &DEEPSEEK_STRICT,
    &XAI,
    &XAI_OUTPUT,
    &BEDROCK,
    &BEDROCK_ANTHROPIC,
    &BEDROCK_STRICT,
    &MCP,
];

/// Other names a profile answers to, for hosts that refuse exactly what another profile's API refuses
/// (their counters carry the profile's own name). Azure OpenAI: its 400s are OpenAI's own rules ("object
/// schema missing properties" is the `properties` rule, "[] is not of type 'object'" the root rule;
/// docs/backend-rules.md §2.14).
pub static ALIASES: &[(&str, &Profile)] = &[("azure-openai", &OPENAI), ("azure-openai-strict", &OPENAI_STRICT)];

impl Profile {
    pub fn by_name(name: &str) -> Option<&'static Profile> {
        ALL.iter().copied().find(|p| p.name == name).or_else(|| ALIASES.iter().find(|(a, _)| *a == name).map(|(_, p)| *p))
    }

    /// The passes a schema in `context` goes through.
    pub fn passes_for(&self, context: Context) -> &'static [Pass] {
        match (context, self.tool_passes) {
            (Context::Tool, Some(p)) => p,
            _ => self.passes,
        }
    }

    /// Every pass of the profile, for either context (each list in order; a pass may appear twice).
    pub fn all_passes(&self) -> impl Iterator<Item = &'static Pass> {
        self.passes.iter().chain(self.tool_passes.unwrap_or(&[]))
    }

    /// The profile's [`PassPlan`] for `context`, made the first time it is asked for.
    pub fn plan(&self, context: Context) -> &PassPlan {
        let [tool, output] = &self.plans;
        let slot = match context {
            Context::Tool => tool,
            Context::Output => output,
        };
        slot.get_or_init(|| {
            let passes = self.passes_for(context);
            let mut tracked: Vec<&'static str> = Vec::new();
            for w in passes.iter().flat_map(|p| p.wants) {
                if !tracked.contains(w) {
                    tracked.push(w);
                }
            }
            PassPlan {
                tracked: KeySet::new(tracked),
                tested: passes.iter().enumerate().filter(|(_, p)| p.acts.is_some()).map(|(i, _)| i).collect(),
                tests: passes.iter().filter_map(|p| p.acts).collect(),
                unenforced: KeySet::new(self.target.unenforced_keywords()),
            }
        })
    }

    /// The options a profile runs with unless the plugin or a route overrides them.
    pub fn default_options(&self) -> Options {
        Options { promote_to_description: self.defaults.promote_to_description, open_objects: self.defaults.open_objects, ..Options::default() }
    }
}

/// Whether a schema is in strict mode (where the API has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strictness {
    Strict,
    Loose,
}

impl Strictness {
    pub fn of(strict: bool) -> Strictness {
        if strict {
            Strictness::Strict
        } else {
            Strictness::Loose
        }
    }
}

/// Which of an API's schema fields a schema is in: its JSON Schema one (Gemini's
/// `parametersJsonSchema`, Bedrock's structured output), or its other one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    JsonSchema,
    Other,
}

impl Field {
    pub fn of(json_field: bool) -> Field {
        if json_field {
            Field::JsonSchema
        } else {
            Field::Other
        }
    }
}

impl Profile {
    /// The profile for one schema: the strict or the non-strict one where the API has both, the
    /// JSON Schema one for an API's JSON Schema fields.
    pub fn for_site(&'static self, mode: Strictness, field: Field, context: Context) -> &'static Profile {
        let p = match self.modes {
            Some(m) if mode == Strictness::Strict => m.strict,
            Some(m) => m.loose,
            None => self,
        };
        match (field, p.json_fields, context, p.outputs) {
            (Field::JsonSchema, Some(j), _, _) => j,
            (_, _, Context::Output, Some(o)) => o,
            _ => p,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pass_runs_after_what_it_needs_in_every_profile() {
        for p in ALL {
            for list in [Some(p.passes), p.tool_passes].into_iter().flatten() {
                for (i, pass) in list.iter().enumerate() {
                    let before: Vec<&str> = list.iter().take(i).map(|x| x.name).collect();
                    for need in pass.after {
                        assert!(before.contains(need), "{}: {} runs before {need}, which it needs", p.name, pass.name);
                    }
                    // the grammar subset's parser reads ECMA-262: a dialect's translation comes after it
                    if pass.name == "patterns" {
                        assert!(!before.contains(&"regex_dialect"), "{}: patterns runs after regex_dialect", p.name);
                    }
                }
            }
        }
    }

    /// The target fields a source file reads: `target.<field>`, or a method of [`Target`] that reads
    /// fields for it.
    fn fields_read(src: &str, fields: &[&'static str]) -> Vec<&'static str> {
        let mut read: Vec<&'static str> = fields
            .iter()
            .copied()
            .filter(|f| {
                let needle = format!("target.{f}");
                src.match_indices(&needle).any(|(i, _)| !src[i + needle.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
            })
            .collect();
        for (method, reads) in [
            ("target.any(", &["typed_any"][..]),
            ("target.unenforced_keywords(", &["grammar", "unenforced"]),
            ("target.unenforced(", &["grammar", "unenforced"]),
            ("target.keeps_format(", &["formats"]),
            (".release(", &["versioned"]),
        ] {
            if src.contains(method) {
                read.extend_from_slice(reads);
            }
        }
        read
    }

    fn source(path: &str) -> String {
        // a file that moved must fail here, not be read as empty (then nothing in it would be checked)
        let file = format!("{}/src/{path}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
    }

    /// The Rust files under `src/{dir}`, every level, as paths under `src`.
    fn rust_files(dir: &str) -> Vec<String> {
        let root = format!("{}/src/", env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        let mut todo = vec![format!("{root}{dir}")];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{d}: {e}")).flatten() {
                let path = e.path();
                if path.is_dir() {
                    todo.push(path.display().to_string());
                } else if path.extension().is_some_and(|x| x == "rs") {
                    out.push(path.display().to_string().trim_start_matches(&root).to_string());
                }
            }
        }
        out.sort();
        out
    }

    /// Every field of every target, by name.
    fn all_fields() -> Vec<&'static str> {
        let all = Target { typed_any: true, ..Target::JSON_SCHEMA };
        let mut f = all.settings();
        // the rest by setting each away from JSON_SCHEMA as some target does
        for p in ALL {
            f.extend(p.target.settings());
        }
        f.sort_unstable();
        f.dedup();
        f
    }

    #[test]
    fn every_setting_of_a_target_has_a_reader_in_its_profiles_lists() {
        let fields = all_fields();
        // the engine: every file of the request and response paths (the API layer and the filter),
        // and the schema module's entry; a file that moves is still read
        let mut files = vec!["schema/mod.rs".to_string()];
        for dir in ["api", "filter"] {
            files.extend(rust_files(dir));
        }
        assert!(files.len() > 20, "{files:?}");
        let engine: Vec<&str> = files.iter().flat_map(|f| fields_read(&source(f), &fields)).collect();
        let pass_reads = |name: &str| fields_read(&source(&format!("schema/passes/{name}.rs")), &fields);
        for p in ALL {
            for f in p.target.settings() {
                let readers: Vec<&str> = p.all_passes().filter(|x| pass_reads(x.name).contains(&f)).map(|x| x.name).collect();
                assert!(
                    engine.contains(&f) || !readers.is_empty(),
                    "profile {}: its target sets {f}, but no pass in its lists reads it (and the engine does not)",
                    p.name
                );
            }
        }
        // and the reverse: a pass that reads target fields is listed by some profile that sets one
        let mut names: Vec<&str> = ALL.iter().flat_map(|p| p.all_passes()).map(|x| x.name).collect();
        names.dedup();
        for name in names {
            let reads = pass_reads(name);
            if reads.is_empty() {
                continue;
            }
            let useful = ALL.iter().filter(|p| p.all_passes().any(|x| x.name == name)).any(|p| p.target.settings().iter().any(|f| reads.contains(f)));
            assert!(useful, "pass {name} reads {reads:?}, which no profile that lists it sets");
        }
    }

    #[test]
    fn release_workarounds_ask_the_target() {
        // a pass reading the route's release directly would apply a llama.cpp workaround to any backend
        let dir = format!("{}/src/schema/passes", env!("CARGO_MANIFEST_DIR"));
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let src = std::fs::read_to_string(e.path()).unwrap_or_default();
            let code = src.split("#[cfg(test)]").next().unwrap_or("");
            assert!(!code.contains("opts.llama_cpp"), "{}: reads opts.llama_cpp instead of cx.release()", e.path().display());
        }
    }

    #[test]
    fn pass_names_are_their_modules() {
        // `after` names passes by their module name: a typo would make the check above vacuous
        let names: Vec<&str> = ALL.iter().flat_map(|p| p.all_passes()).map(|x| x.name).collect();
        for p in ALL.iter().flat_map(|p| p.all_passes()) {
            for need in p.after {
                assert!(names.contains(need), "{} needs unknown pass {need}", p.name);
            }
        }
    }
}
