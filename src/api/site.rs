//! What the format descriptors find in a body and the engine rewrites: a schema's site (with its
//! `strict` switch) and a function tool's missing member. A leaf: the descriptors (`format/`) write
//! these, `locate` and `edit` read them, and it imports neither.

use super::raw::{self, Raw};
use crate::schema::Context;

/// One schema inside a body.
pub struct Site<'a> {
    pub raw: Raw<'a>,
    pub tool: String,
    pub context: Context,
    /// The `strict` member beside it, for APIs with a strict mode.
    pub strict: StrictAt<'a>,
    /// Whether it is an API's JSON Schema field (Gemini's `parametersJsonSchema`) rather than its
    /// other schema field, or its always-constrained one (Bedrock's structured output): the profile's
    /// [`crate::schema::Profile::json_fields`] rewrites it.
    pub json_field: bool,
    /// Whether the value is a JSON string holding the schema's text (Bedrock's `jsonSchema.schema`):
    /// read decoded, written back encoded.
    pub encoded: bool,
}

/// Where a schema's `strict` switch is.
#[derive(Clone, Copy)]
pub enum StrictAt<'a> {
    /// The format has none.
    NoSwitch,
    /// The member is absent; the API's default is `default`.
    Absent { default: bool },
    /// The member's value.
    Member(Raw<'a>),
}

impl StrictAt<'_> {
    /// Whether the request asks for strict mode.
    pub(crate) fn on(&self) -> bool {
        match self {
            StrictAt::NoSwitch => false,
            StrictAt::Absent { default } => *default,
            StrictAt::Member(v) => v.get() == "true",
        }
    }
}

impl<'a> Site<'a> {
    pub(crate) fn new(raw: Raw<'a>, tool: String, context: Context) -> Self {
        Site { raw, tool, context, strict: StrictAt::NoSwitch, json_field: false, encoded: false }
    }

    /// The site with the `strict` member of `o` (the object holding the schema or its switch), and
    /// what the API reads when `o` has none.
    pub(crate) fn switch(mut self, o: &raw::RawObject<'a>, unset: Unset) -> Self {
        self.strict = match o.get("strict") {
            Some(v) => StrictAt::Member(v),
            None => StrictAt::Absent { default: unset == Unset::Strict },
        };
        self
    }
}

/// What an API reads when a schema's `strict` member is absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unset {
    /// Strict (the Responses API's function tools).
    Strict,
    /// Not strict (the others).
    Loose,
}

/// A function tool without a member some server reads unconditionally (a usable `description`, or
/// `parameters`): where one goes, and whose it is.
pub struct Missing<'a> {
    /// The member's value when it is `null` (replaced), else the `name` value (the member is inserted
    /// after it).
    pub anchor: Raw<'a>,
    pub null: bool,
    /// Whether the `description` is there but empty (an API that refuses `""`): the member is removed.
    pub empty: bool,
    pub tool: String,
    pub member: Member,
}

/// Which member a [`Missing`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member {
    Description,
    /// The function's `parameters` (optional in the OpenAI API: a function without arguments).
    Parameters,
}
