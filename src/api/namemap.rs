//! The names a request was sent under, against the ones its client used: what `names` (renames the API
//! needs) and `lift` (tools lifted out of a namespace) plan, and what the response path reads to say
//! the originals again. A leaf: both planners and the engine import it.

/// A tool sent at the top level that the client declared inside a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifted {
    /// The name it was sent under.
    pub sent: String,
    /// Its name in the namespace, as the request had it.
    pub name: String,
    pub namespace: String,
}

/// Names sent in place of the originals: `renamed` as `(sent, original)`, and the tools lifted out of
/// a namespace (see `lift`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    pub renamed: Vec<(String, String)>,
    pub lifted: Vec<Lifted>,
}

impl NameMap {
    pub fn original<'s>(&'s self, sent: &str) -> Option<&'s str> {
        self.renamed.iter().find(|(s, _)| s == sent).map(|(_, o)| o.as_str())
    }
    pub fn sent<'s>(&'s self, original: &str) -> Option<&'s str> {
        self.renamed.iter().find(|(_, o)| o == original).map(|(s, _)| s.as_str())
    }
    pub fn is_empty(&self) -> bool {
        self.renamed.is_empty() && self.lifted.is_empty()
    }
}
