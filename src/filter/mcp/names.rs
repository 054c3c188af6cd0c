//! Tool names on the MCP leg: a name the client's profile refuses is listed under a readable name
//! that says how to get the original back, so no replica needs to have seen the list.
//!
//! Each character outside `[A-Za-z0-9_-]` becomes `_`, and `__` then four lower-case hex digits
//! per such character (its position, then its code) are appended: `github.create_issue` is listed as
//! `github_create_issue__062e`. A name is read back only if it is exactly what its original would be
//! listed as, so a server's own name that merely looks like one is left alone. Names with other
//! than ASCII, or whose listed form would be past the profile's length, are listed as they are (the
//! clients prefix and cut names for their model themselves; a cut here could not be undone).

use crate::schema::target::Names;
use crate::schema::Profile;

fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The name listed for `name` under `rule` (`None`: listed as it is).
pub fn encode(name: &str, rule: &Names) -> Option<String> {
    if rule.allows(name) {
        return None;
    }
    let sent = spell(name)?;
    rule.allows(&sent).then_some(sent)
}

/// The rule-free spelling: `None` when nothing needs it or it cannot be spelled.
fn spell(name: &str) -> Option<String> {
    if !name.is_ascii() || name.len() > 255 || name.chars().all(plain) {
        return None;
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
    let mut bytes = head.as_bytes().to_vec();
    for k in 0..tail.len() / 4 {
        let pos = usize::from_str_radix(tail.get(k * 4..k * 4 + 2)?, 16).ok()?;
        let code = u8::from_str_radix(tail.get(k * 4 + 2..k * 4 + 4)?, 16).ok()?;
        *bytes.get_mut(pos)? = code;
    }
    let original = String::from_utf8(bytes).ok()?;
    (spell(&original).as_deref() == Some(sent)).then_some(original)
}

/// Whether a called name is one toolfit never listed under `profile`: one its rule refuses that
/// toolfit would have listed under another name.
pub fn unlisted(sent: &str, profile: &Profile) -> bool {
    profile.target.names.is_some_and(|rule| encode(sent, &rule).is_some())
}
