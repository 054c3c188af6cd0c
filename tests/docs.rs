//! The README's tables are generated from the enums: every line `toolfit kinds` and `toolfit stats`
//! print must be in it, so a new or renamed counter cannot go undocumented.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::process::Command;

#[test]
fn readme_tables_match_the_enums() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for cmd in ["kinds", "stats"] {
        let out = Command::new(env!("CARGO_BIN_EXE_toolfit")).arg(cmd).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.lines().count() > 10);
        for line in text.lines() {
            assert!(readme.contains(line), "README lacks (run `toolfit {cmd}`): {line}");
        }
    }
}

/// The CLI's lists of profiles and formats are the code's: every profile and format is offered, and a
/// name that is neither is refused with the whole list.
#[test]
fn cli_lists_every_profile_and_format() {
    let help = Command::new(env!("CARGO_BIN_EXE_toolfit")).args(["normalize", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let profiles: Vec<&str> = toolfit::schema::profile::ALL.iter().map(|p| p.name).collect();
    let formats: Vec<&str> = toolfit::api::format::ALL.iter().map(|d| d.name).collect();
    assert!(profiles.len() >= 14 && formats.len() >= 8, "{profiles:?} {formats:?}");
    for name in profiles.iter().chain(&formats) {
        assert!(help.contains(&format!(" {name},")) || help.contains(&format!(" {name}]")), "--help lacks {name}:\n{help}");
    }
    let refused = Command::new(env!("CARGO_BIN_EXE_toolfit")).args(["normalize", "--profile", "no-such-profile"]).output().unwrap();
    let err = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(profiles.iter().all(|p| err.contains(p)), "the refusal names every profile: {err}");
}

/// Every file the README names (`name.rs`, `dir/name.py`, ...) exists in the tree: a layout map that
/// names a removed file fails here.
#[test]
fn readme_names_only_files_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut names = std::collections::BTreeSet::new();
    fn walk(dir: &std::path::Path, out: &mut std::collections::BTreeSet<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "node_modules" && name != "mutants.out" {
                    walk(&p, out);
                }
            } else {
                out.insert(p.to_string_lossy().into_owned());
            }
        }
    }
    walk(root, &mut names);
    let mut checked = 0;
    // inline code, line by line, outside fenced blocks (a fence's backticks would shift the pairs)
    let mut fenced = false;
    let prose = readme.lines().filter(|l| {
        fenced ^= l.trim_start().starts_with("```");
        !fenced && !l.trim_start().starts_with("```")
    });
    for quoted in prose.flat_map(|l| l.split('`').skip(1).step_by(2)) {
        let exts = [".rs", ".py", ".sh", ".yaml", ".md", ".toml"];
        if quoted.contains(' ') || !exts.iter().any(|e| quoted.ends_with(e)) || quoted.starts_with("~") || quoted.contains('*') {
            continue;
        }
        let want = format!("/{}", quoted.trim_start_matches("./"));
        assert!(names.iter().any(|n| n.ends_with(&want)), "README names {quoted}, which is not in the tree");
        checked += 1;
    }
    assert!(checked > 30, "only {checked} file names found in the README");
}
