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
