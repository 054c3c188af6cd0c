//! The module tree's shape: imports between sibling modules go one way (no circle), through `use`
//! paths and re-exports alike. A circle is where two jobs were written into each other (the MCP leg into
//! the orchestrator, the descriptors into the converter); a leaf module breaks it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// Every module of a crate's `src/` (its path from the crate root) and its text without comments and
/// unit tests.
fn modules(src: &Path) -> BTreeMap<Module, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<Module, String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, src, out);
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Module = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            // binaries are crates of their own; the Wasm shim is a host, checked by the hosts' rule
            if p.extension().is_none_or(|x| x != "rs") || parts.first().is_some_and(|f| f == "bin") {
                continue;
            }
            if parts.last().is_some_and(|l| l == "mod" || l == "lib" || l == "main") {
                parts.pop();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            out.insert(parts, text);
        }
    }
    let mut files = BTreeMap::new();
    walk(src, src, &mut files);
    code_of(&files)
}

/// The modules' code without comments and test code.
fn code_of(files: &BTreeMap<Module, String>) -> BTreeMap<Module, String> {
    // test code is not the layout: an inline `#[cfg(test)] mod x { .. }` (always last) is cut off, and a
    // module declared under `#[cfg(test)]` (`mod tests;`, a test-only format) is left out with its own
    let (mut out, mut test_only) = (BTreeMap::new(), Vec::new());
    for (m, text) in files {
        let mut code = String::new();
        let mut lines = text.lines().map(|l| l.split("//").next().unwrap_or("")).peekable();
        while let Some(l) = lines.next() {
            if l.trim() == "#[cfg(test)]" {
                let next = lines.peek().map(|n| n.trim()).unwrap_or("");
                let visible = next.strip_prefix("pub(crate) ").or_else(|| next.strip_prefix("pub ")).unwrap_or(next);
                let decl = visible.strip_prefix("mod ").unwrap_or("");
                if let Some(child) = decl.strip_suffix(';') {
                    test_only.push([m.as_slice(), &[child.to_string()]].concat());
                    lines.next();
                    continue;
                }
                if decl.ends_with('{') {
                    break;
                }
            }
            code.push_str(l);
            code.push('\n');
        }
        out.insert(m.clone(), code);
    }
    out.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    out
}

/// `a::{b, c::{d, e}}` as its paths: `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let (Some(open), true) = (tree.find('{'), tree.ends_with('}')) else { return vec![tree.to_string()] };
    let (prefix, body) = (&tree[..open], &tree[open + 1..tree.len() - 1]);
    let (mut parts, mut depth, mut cur) = (Vec::new(), 0, String::new());
    for c in body.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts.iter().filter(|p| !p.trim().is_empty()).flat_map(|p| expand(p)).map(|p| format!("{prefix}{p}")).collect()
}

/// The `use` trees of `code` (each statement starts a line), and with `public`, only the re-exports
/// (`pub use`, `pub(crate) use`).
fn uses(code: &str, public: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in code.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let l = line.trim_start();
        let (is_pub, rest) = if let Some(r) = l.strip_prefix("pub ") {
            (true, r)
        } else if l.starts_with("pub(") {
            (true, l.split_once(')').map_or("", |(_, r)| r.trim_start()))
        } else {
            (false, l)
        };
        if !rest.starts_with("use ") || (public && !is_pub) {
            continue;
        }
        let from = start + (line.len() - rest.len()) + 4;
        let tree = code.get(from..).and_then(|t| t.split(';').next()).unwrap_or("");
        out.extend(expand(&tree.split_whitespace().collect::<Vec<_>>().join(" ")));
    }
    out
}

/// The module a path names from module `at` (following re-exports), or `None` outside the crate.
fn resolve(mods: &BTreeMap<Module, String>, at: &Module, path: &str, depth: usize) -> Option<Module> {
    let segs: Vec<&str> = path.split("::").map(|s| s.split(" as ").next().unwrap_or("").trim()).filter(|s| !s.is_empty()).collect();
    let first = *segs.first()?;
    let (mut base, rest): (Module, &[&str]) = match first {
        "crate" => (Vec::new(), &segs[1..]),
        "self" => (at.clone(), &segs[1..]),
        "super" => {
            let ups = segs.iter().take_while(|s| **s == "super").count();
            (at[..at.len().saturating_sub(ups)].to_vec(), &segs[ups..])
        }
        child if mods.contains_key(&[at.as_slice(), &[child.to_string()]].concat()) => (at.clone(), &segs[..]),
        _ => return None,
    };
    base.extend(rest.iter().map(|s| s.to_string()));
    for k in (0..=base.len()).rev() {
        let m = base[..k].to_vec();
        let Some(code) = mods.get(&m) else { continue };
        if let (Some(name), true) = (base.get(k), depth < 5) {
            let again = uses(code, true).into_iter().find(|u| u.rsplit("::").next().and_then(|l| l.split(" as ").last()).map(str::trim) == Some(name.as_str()));
            if let Some(t) = again.and_then(|u| resolve(mods, &m, &u, depth + 1)) {
                return Some(t);
            }
        }
        return Some(m);
    }
    None
}

/// The import edges between siblings: (the child of the common parent that imports, the one imported,
/// the files).
fn sibling_edges(mods: &BTreeMap<Module, String>) -> BTreeSet<(Module, Module, String)> {
    let mut edges = BTreeSet::new();
    for (m, code) in mods {
        let mut paths = uses(code, false);
        // paths written inline (`super::raw::tools(..)`, `crate::api::Format`)
        for w in code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
            if w.starts_with("crate::") || w.starts_with("super::") {
                paths.push(w.trim_end_matches(':').to_string());
            }
        }
        for p in paths {
            let Some(t) = resolve(mods, m, &p, 0) else { continue };
            let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
            // a module and its own ancestors or descendants are one unit
            if common == m.len() || common == t.len() {
                continue;
            }
            edges.insert((m[..=common].to_vec(), t[..=common].to_vec(), format!("{} -> {}", m.join("/"), t.join("/"))));
        }
    }
    edges
}

/// The circles among siblings (each as its members, sorted).
fn circles(edges: &BTreeSet<(Module, Module, String)>) -> Vec<Vec<Module>> {
    let mut next: BTreeMap<&Module, BTreeSet<&Module>> = BTreeMap::new();
    for (a, b, _) in edges {
        next.entry(a).or_default().insert(b);
    }
    let reach = |from: &Module| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from]);
        while let Some(v) = todo.pop() {
            for w in next.get(v).into_iter().flatten() {
                if seen.insert(*w) {
                    todo.push(w);
                }
            }
        }
        seen
    };
    let mut out: Vec<Vec<Module>> = Vec::new();
    for v in next.keys() {
        let from_v = reach(v);
        if !from_v.contains(v) {
            continue;
        }
        let mut circle: Vec<Module> = from_v.into_iter().filter(|w| reach(w).contains(v)).cloned().collect();
        circle.sort();
        if !out.contains(&circle) {
            out.push(circle);
        }
    }
    out
}

#[test]
fn sibling_modules_import_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in ["src", "extproc/src"] {
        let mods = modules(&root.join(src));
        let edges = sibling_edges(&mods);
        assert!(edges.len() > 30 || src != "src", "only {} import edges found in {src}: the reader is broken", edges.len());
        let found = circles(&edges);
        let said: Vec<String> = found
            .iter()
            .map(|c| {
                let why: Vec<&str> = edges.iter().filter(|(a, b, _)| c.contains(a) && c.contains(b)).map(|(_, _, w)| w.as_str()).collect();
                format!("{:?} through {why:?}", c.iter().map(|m| m.join("/")).collect::<Vec<_>>())
            })
            .collect();
        assert!(found.is_empty(), "{src}: import circles: {said:#?}");
    }
}

/// The control: the reader finds a circle through a re-export and an inline path, and none where
/// a child imports its parent.
#[test]
fn the_circle_check_can_say_no() {
    let mut mods = BTreeMap::new();
    let m = |p: &str| -> Module { p.split('/').filter(|s| !s.is_empty()).map(String::from).collect() };
    mods.insert(m(""), "mod a;\nmod b;\nmod c;\npub use c::Thing;".to_string());
    mods.insert(m("a"), "use crate::Thing;".to_string());
    mods.insert(m("b"), "fn f() { super::a::g() }".to_string());
    mods.insert(m("c"), "use super::b::{x, y::{z}};".to_string());
    mods.insert(m("c/d"), "use super::super::c::Thing;".to_string());
    // test code is left out: a test-only module importing its parent's sibling makes no circle
    mods.insert(m("b"), "fn f() { super::a::g() }\n#[cfg(test)]\nmod tests;\n".to_string());
    mods.insert(m("b/tests"), "use crate::c::Thing;".to_string());
    let mut mods = code_of(&mods);
    let edges = sibling_edges(&mods);
    assert_eq!(circles(&edges), vec![vec![m("a"), m("b"), m("c")]], "{edges:?}");
    mods.insert(m("a"), "pub fn g() {}".to_string());
    assert!(circles(&sibling_edges(&mods)).is_empty());
}

/// Functions (outside tests) and their lengths in lines, as (file, first line, name, lines).
fn functions(root: &Path, src: &Path) -> Vec<(String, usize, String, usize)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().take_while(|l| l.trim() != "#[cfg(test)]").collect();
        for (i, l) in lines.iter().enumerate() {
            let indent = l.len() - l.trim_start().len();
            let t = l.trim_start();
            let t = t.strip_prefix("pub(crate) ").or_else(|| t.strip_prefix("pub(super) ")).or_else(|| t.strip_prefix("pub ")).unwrap_or(t);
            let t = t.strip_prefix("const ").unwrap_or(t);
            let Some(rest) = t.strip_prefix("fn ") else { continue };
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let close = format!("{}}}", " ".repeat(indent));
            // the signature ends at its body's `{`, or at `;` (a trait's declaration, no body)
            let Some(sig) = lines.iter().skip(i).position(|x| x.contains('{') || x.trim_end().ends_with(';')) else { continue };
            if lines.get(i + sig).is_some_and(|x| !x.contains('{')) {
                continue;
            }
            // a body on one line with its signature
            if lines.get(i + sig).is_some_and(|x| x.trim_end().ends_with('}')) {
                continue;
            }
            if let Some(end) = lines.iter().skip(i).position(|x| *x == close) {
                out.push((f.strip_prefix(root).unwrap().display().to_string(), i + 1, name, end + 1));
            }
        }
    }
    out
}

/// No function outside tests is longer than 80 lines: a longer one has more than one job.
#[test]
fn no_function_over_80_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = functions(root, &root.join("src"));
    all.extend(functions(root, &root.join("extproc/src")));
    assert!(all.len() > 250, "only {} functions found: the reader is broken", all.len());
    assert!(all.iter().any(|f| f.3 > 40), "no function over 40 lines found: the reader is broken");
    let long: Vec<String> = all.iter().filter(|f| f.3 > 80).map(|f| format!("{}:{} {} ({} lines)", f.0, f.1, f.2, f.3)).collect();
    assert!(long.is_empty(), "functions over 80 lines: {long:?}");
}

/// The control: the reader measures a 90-line function as such (and a one-line one and a trait's
/// declaration not at all), so the check above can say no.
#[test]
fn the_length_check_can_say_no() {
    let dir = std::env::temp_dir().join(format!("toolfit-layout-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let body: String = (0..88).map(|i| format!("    let _x{i} = {i};\n")).collect();
    let text = format!("pub fn long() {{\n{body}}}\n\nfn short() {{ }}\n\ntrait T {{\n    fn f(&self);\n}}\n");
    std::fs::write(src.join("m.rs"), text).unwrap();
    let found = functions(&dir, &src);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(found.iter().map(|f| (f.2.as_str(), f.3)).collect::<Vec<_>>(), vec![("long", 90)], "{found:?}");
}

/// Calls outside tests that pass a bare `true` or `false` to a function: `(callee, line)`. A call to
/// another library's API whose parameter is a bool (`Some`, `Value::Bool`, Envoy's `ClearBody`, an
/// atomic's `store`) is not ours to change; a line that says what its bool means in a comment is read.
fn bare_bools(text: &str) -> Vec<(String, String)> {
    const THEIRS: &[&str] = &["Some", "Ok", "Err", "Bool", "ClearBody", "new", "store", "set_nodelay", "then_some", "unwrap_or"];
    let mut out = Vec::new();
    for line in text.lines().take_while(|l| l.trim() != "#[cfg(test)]") {
        if line.trim_start().starts_with("//") || line.contains("/*") || line.contains(" // ") {
            continue;
        }
        let b = line.as_bytes();
        for word in ["true", "false"] {
            for (at, _) in line.match_indices(word) {
                let before = line.get(..at).unwrap_or("").trim_end();
                let after = line.get(at + word.len()..).unwrap_or("").trim_start();
                if !(before.ends_with('(') || before.ends_with(',')) || !(after.starts_with(')') || after.starts_with(',')) {
                    continue;
                }
                // the call's `(`: the nearest unclosed one before the word
                let mut depth = 0i32;
                let open = (0..at).rev().find(|&i| {
                    match b.get(i) {
                        Some(b')') => depth += 1,
                        Some(b'(') if depth == 0 => return true,
                        Some(b'(') => depth -= 1,
                        _ => {}
                    }
                    false
                });
                let Some(open) = open else { continue };
                let head = line.get(..open).unwrap_or("");
                let callee: String = head.chars().rev().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<Vec<_>>().into_iter().rev().collect();
                if callee.is_empty() || THEIRS.contains(&callee.as_str()) {
                    continue;
                }
                out.push((callee, line.trim().to_string()));
            }
        }
    }
    out
}

/// The `.rs` files below `dir`, but the unit tests' `tests.rs`.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && p.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(p);
        }
    }
}

/// No call outside tests passes a bool its reader cannot read (`traverse(root, path, false, f)`): a
/// two-way choice is an enum with named variants, or the argument is a named value. `src/bin` is
/// left out: clap's builder takes its switches as bools (`.required(true)`).
#[test]
fn no_bare_bool_arguments() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("extproc/src"), &mut files);
    files.retain(|f| !f.starts_with(root.join("src/bin")));
    assert!(files.len() > 100, "only {} files found", files.len());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        found.extend(bare_bools(&text).into_iter().map(|(c, l)| format!("{}: {c}: {l}", f.strip_prefix(root).unwrap().display())));
    }
    assert!(found.is_empty(), "bare bool arguments: {found:#?}");
}

/// The control: the reader finds the bare bools of the examples, and not a tuple pattern, a
/// `Some(true)`, a macro's or a commented one.
#[test]
fn the_bare_bool_check_can_say_no() {
    let text = "fn f() {\n    traverse(root, path, false, f);\n    x.for_site(true, y);\n    if let (true, Some(a)) = (c, d) {}\n    let v = Some(true);\n    json!(true);\n    g(&[], true); // the body is complete\n}\n#[cfg(test)]\nmod tests {\n    h(true);\n}\n";
    let callees: Vec<String> = bare_bools(text).into_iter().map(|(c, _)| c).collect();
    assert_eq!(callees, vec!["traverse".to_string(), "for_site".to_string()]);
}
