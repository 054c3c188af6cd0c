//! The keywords a hosted API accepts ([`crate::schema::Target::keywords`]) and what may stand beside a
//! `$ref` ([`crate::schema::Target::ref_siblings`]). Such an API answers 400 on any other keyword, so
//! the rest goes: a `const` the API lacks becomes a one-value `enum` (exact); another constraint is
//! removed and said in the description (lossy); a `default` or `examples` value is said in the
//! description and other annotations and vendor keys are dropped (no value's validity changes). A
//! `$ref` with siblings the API refuses is wrapped as `{"anyOf": [{"$ref": ..}], ..siblings}`, which
//! means the same.

use crate::schema::lookup::Lookup;
use crate::schema::walk::{is_constraint, post_order_cx};
use crate::schema::{compact, note, removed_text, Cx, Kind};
use serde_json::{json, Value};

/// Passes that must run before this one in a profile's list: keywords are in their 2020-12 spelling, and refs in their final form.
pub const AFTER: &[&str] = &["dialect", "refs"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let (allowed, ref_ok) = (cx.target.keywords, cx.target.ref_siblings);
    if allowed.is_none() && ref_ok.is_none() {
        return;
    }
    post_order_cx(root, cx, &mut |node, path, cx| {
        if let Some(ok) = allowed {
            // a literal the API cannot spell as `const` is the same as a one-value enum
            if !ok.contains(&"const") && ok.contains(&"enum") {
                if let Some(c) = node.remove("const") {
                    let kept = match node.at("enum").and_then(Value::as_array) {
                        Some(e) => e.contains(&c),
                        None => true,
                    };
                    let values = if kept { vec![c.clone()] } else { Vec::new() };
                    node.insert("enum".into(), Value::Array(values));
                    cx.record(path, Kind::DialectNormalized, format!("const {} as a one-value enum", compact(&c, 60)));
                }
            }
            let refused: Vec<String> = node.keys().filter(|k| !ok.contains(&k.as_str())).cloned().collect();
            let mut removed = Vec::new();
            let mut moved = Vec::new();
            for k in refused {
                let Some(v) = node.remove(&k) else { continue };
                if is_constraint(&k) {
                    removed.push((k, v));
                } else {
                    moved.push((k, v));
                }
            }
            for (k, v) in &moved {
                match k.as_str() {
                    "default" => note(node, &format!("(Default: {}.)", compact(v, 120))),
                    "examples" => note(node, &format!("(Examples: {}.)", compact(v, 120))),
                    _ => {}
                }
            }
            if !moved.is_empty() {
                let names: Vec<&str> = moved.iter().map(|(k, _)| k.as_str()).collect();
                cx.record(path, Kind::AnnotationMoved, format!("removed {} (refused by the API)", names.join(", ")));
            }
            if !removed.is_empty() {
                let text = removed_text(&removed, 120);
                cx.lost(node, path, Kind::KeywordRemoved, &text, format!("removed {text} (refused by the API)"));
            }
        }
        if let Some(ok) = ref_ok {
            let wrap = node.at("$ref").is_some_and(Value::is_string) && !node.has("anyOf");
            if wrap && node.keys().any(|k| k != "$ref" && !ok.contains(&k.as_str())) {
                if let Some(r) = node.remove("$ref") {
                    let rest = std::mem::take(node);
                    node.insert("anyOf".into(), json!([{ "$ref": r }]));
                    node.extend(rest);
                    cx.record(path, Kind::RefWrapped, "keywords beside $ref moved beside a one-branch anyOf around it");
                }
            }
        }
    });
}
