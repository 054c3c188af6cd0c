//! Tool names on the MCP leg: a name the client's profile refuses is listed under a readable name
//! that says how to get the original back, so no replica needs to have seen the list.
//!
//! Each character outside `[A-Za-z0-9_-]` becomes `_`, and `__` then four lower-case hex digits
//! per such character (its position, then its code) are appended: `github.create_issue` is listed as
//! `github_create_issue__062e`. A server's own name that is spelled like that (`get_weather__032e`
//! beside `get.weather`) is listed with the pair `ff00` appended (`get_weather__032e__ff00`: position
//! 255 is past any name), so no two tools are ever listed under one name and a listed name reads back
//! to the one tool it came from, on every replica, on every page. A name is read back only if it is
//! exactly what its original would be listed as, and only to printable ASCII. Names with other than
//! printable ASCII, or whose listed form would be past the profile's length, are listed as they are
//! (the clients prefix and cut names for their model themselves; a cut here could not be undone); a
//! server's name spelled like a listed one that cannot be listed apart is left out of the list
//! (`McpToolsDropped`).

use crate::schema::target::Names;
use crate::schema::Profile;

fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The pair that marks a server's own name spelled like a listed one.
const LITERAL: &str = "ff00";

/// Whether a name is one toolfit may spell and read back: printable ASCII, at most 255 bytes.
fn spellable(name: &str) -> bool {
    name.len() <= 255 && name.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// The name listed for `name` under `rule` (`None`: listed as it is). A name spelled like a listed
/// one is never listed as it is.
pub fn encode(name: &str, rule: &Names) -> Option<String> {
    if rule.allows(name) && decode(name).is_none() {
        return None;
    }
    let sent = spell(name)?;
    rule.allows(&sent).then_some(sent)
}

/// Whether the server's `name` would read back as another tool's and cannot be listed apart under
/// `rule`: it must be left out of the list.
pub fn ambiguous(name: &str, rule: &Names) -> bool {
    decode(name).is_some() && encode(name, rule).is_none()
}

/// The rule-free spelling: `None` when nothing needs it or it cannot be spelled.
fn spell(name: &str) -> Option<String> {
    if !spellable(name) {
        return None;
    }
    if name.chars().all(plain) {
        // a plain name needs spelling only when it reads as another's
        return decode(name).is_some().then(|| format!("{name}__{LITERAL}"));
    }
    let mut head = String::with_capacity(name.len());
    let mut tail = String::from("__");
    for (i, c) in name.char_indices() {
        if plain(c) {
            head.push(c);
        } else {
            head.push('_');
            tail.push_str(&format!("{i:02x}{:02x}", c as u32));
        }
    }
    Some(head + &tail)
}

/// The original of a listed name, if it is one.
pub fn decode(sent: &str) -> Option<String> {
    let cut = sent.rfind("__")?;
    let (head, tail) = (sent.get(..cut)?, sent.get(cut + 2..)?);
    if tail.is_empty() || tail.len() % 4 != 0 || !tail.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    if tail == LITERAL {
        // a server's own name spelled like a listed one
        return (spell(head).as_deref() == Some(sent)).then(|| head.to_string());
    }
    let mut bytes = head.as_bytes().to_vec();
    for k in 0..tail.len() / 4 {
        let pos = usize::from_str_radix(tail.get(k * 4..k * 4 + 2)?, 16).ok()?;
        let code = u8::from_str_radix(tail.get(k * 4 + 2..k * 4 + 4)?, 16).ok()?;
        *bytes.get_mut(pos)? = code;
    }
    let original = String::from_utf8(bytes).ok()?;
    (spellable(&original) && spell(&original).as_deref() == Some(sent)).then_some(original)
}

/// Whether a called name is one toolfit never listed under `profile`: one its rule refuses that
/// toolfit would have listed under another name.
pub fn unlisted(sent: &str, profile: &Profile) -> bool {
    profile.target.names.is_some_and(|rule| encode(sent, &rule).is_some())
}
