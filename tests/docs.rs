//! The README and `docs/` are held to the code: lists of counters, kinds, profiles, formats, default
//! routes, configuration keys and make targets come from the code (or the Makefile), so a new or renamed
//! one cannot go undocumented, and a page cannot name a file or link that is gone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The README and every page of `docs/` (path relative to the root, text).
fn pages() -> Vec<(String, String)> {
    let mut out = vec![("README.md".to_string(), read("README.md"))];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    docs.sort();
    for n in docs {
        let rel = format!("docs/{n}");
        let text = read(&rel);
        out.push((rel, text));
    }
    assert!(out.len() > 10, "docs/ holds {} pages", out.len() - 1);
    out
}

/// Lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            let fence = l.trim_start().starts_with("```");
            fenced ^= fence;
            !fenced && !fence
        })
        .collect()
}

#[test]
fn stats_page_tables_match_the_enums() {
    let stats = read("docs/stats.md");
    for cmd in ["kinds", "stats"] {
        let out = Command::new(env!("CARGO_BIN_EXE_toolfit")).arg(cmd).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.lines().count() > 10);
        for line in text.lines() {
            assert!(stats.contains(line), "docs/stats.md lacks (run `toolfit {cmd}`): {line}");
        }
    }
}

/// The README's profile table is `toolfit profiles`' list: one row per profile, with its `about`.
#[test]
fn readme_lists_every_profile_as_the_code_describes_it() {
    let readme = read("README.md");
    let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `")).collect();
    for p in toolfit::schema::profile::ALL {
        let row = format!("| `{}` | {} |", p.name, p.about);
        assert!(rows.contains(&row.as_str()), "README's profile table lacks: {row}");
        assert!(read("docs/profiles.md").contains(&format!("`{}`", p.name)), "docs/profiles.md never names {}", p.name);
    }
    // control: a profile the code does not have is not in the table
    assert!(!rows.iter().any(|r| r.starts_with("| `fireworks` |")));
    // the backends table names every profile and alias in its profiles column, and nothing else
    let backends: Vec<&str> =
        readme.lines().skip_while(|l| !l.starts_with("| backend | profiles | judged by |")).skip(2).take_while(|l| l.starts_with('|')).collect();
    assert!(backends.len() > 10, "README has no backends table");
    assert_eq!(backends_table_problems(&backends), Vec::<String>::new());
    // control: a row naming what is no profile, and a table that lost a row, are both caught
    let mut broken: Vec<&str> = backends.iter().copied().filter(|r| !r.contains("`groq`")).collect();
    broken.push("| Fireworks | `fireworks` | nothing |");
    let problems = backends_table_problems(&broken);
    assert!(problems.iter().any(|p| p.contains("fireworks")) && problems.iter().any(|p| p.contains("never names profile groq")), "{problems:?}");
}

/// What is wrong with the README's backends table rows: a profile or alias its profiles column never
/// names, or a name there that is no profile.
fn backends_table_problems(rows: &[&str]) -> Vec<String> {
    let named: Vec<&str> = rows.iter().filter_map(|r| r.split('|').nth(2)).flat_map(|c| c.split('`').skip(1).step_by(2)).collect();
    let profiles = toolfit::schema::profile::ALL.iter().map(|p| p.name).chain(toolfit::schema::profile::ALIASES.iter().map(|(a, _)| *a));
    let missing = profiles.filter(|p| !named.contains(p)).map(|p| format!("README's backends table never names profile {p}"));
    let unknown = named
        .iter()
        .filter(|n| toolfit::schema::profile::Profile::by_name(n).is_none())
        .map(|n| format!("README's backends table names {n}, which is no profile"));
    missing.chain(unknown).collect()
}

/// docs/configuration.md names every key the configuration reader accepts, every format by name with
/// each of its default routes, and the profile a path always gets.
#[test]
fn configuration_page_matches_the_reader_and_the_formats() {
    let page = read("docs/configuration.md");
    for key in toolfit::filter::config::Config::keys() {
        assert!(page.contains(&format!("| `{key}` |")), "docs/configuration.md has no row for `{key}`");
    }
    let routes_row = page.lines().find(|l| l.starts_with("| `routes` |")).unwrap();
    for key in toolfit::filter::config::Route::keys() {
        assert!(routes_row.contains(&format!("`{key}`")), "the `routes` row does not name `{key}`: {routes_row}");
    }
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| `")).collect();
    for d in toolfit::api::format::ALL {
        let row = rows.iter().find(|r| r.starts_with(&format!("| `{}` |", d.name)));
        let row = row.unwrap_or_else(|| panic!("docs/configuration.md has no row for format {}", d.name));
        for p in d.routes.paths.iter().chain(d.routes.prefixes) {
            assert!(row.contains(&format!("`{p}`")), "format {}'s row lacks its route {p}: {row}", d.name);
        }
        for end in d.routes.prefix_ends.unwrap_or_default() {
            assert!(row.contains(&format!("`{end}`")), "format {}'s row lacks {end}: {row}", d.name);
        }
        if let Some(p) = d.routes.profile {
            assert!(row.contains(&format!("| `{}`", p.name)), "format {}'s row does not say its profile {}: {row}", d.name, p.name);
        }
    }
}

/// docs/testing.md has a row for every target the Makefile declares phony.
#[test]
fn testing_page_lists_every_make_target() {
    let makefile = read("Makefile");
    let phony = makefile.lines().find_map(|l| l.strip_prefix(".PHONY:")).unwrap();
    let targets: Vec<&str> = phony.split_whitespace().collect();
    assert!(targets.len() > 20, "{targets:?}");
    let page = read("docs/testing.md");
    for t in &targets {
        assert!(makefile.lines().any(|l| l.starts_with(&format!("{t}:"))), "phony {t} has no rule");
        assert!(page.contains(&format!("| `make {t}` |")), "docs/testing.md has no row for make {t}");
    }
}

/// The README is an entry point: short, and every page of docs/ is reachable from it.
#[test]
fn readme_is_short_and_links_every_page() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines < 400, "README.md has {lines} lines; reference belongs in docs/");
    for (rel, _) in pages().iter().skip(1) {
        assert!(readme.contains(&format!("]({rel})")), "README.md does not link {rel}");
    }
}

/// Every relative link of the README and docs/ points at a file or directory that exists.
#[test]
fn links_resolve() {
    let mut checked = 0;
    for (rel, text) in pages() {
        let dir = root().join(&rel).parent().unwrap().to_path_buf();
        for line in prose(&text) {
            for (i, _) in line.match_indices("](") {
                let target = line[i + 2..].split(')').next().unwrap_or_default();
                let target = target.split('#').next().unwrap_or_default();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                assert!(dir.join(target).exists(), "{rel} links {target}, which does not exist");
                checked += 1;
            }
        }
    }
    assert!(checked > 25, "only {checked} links found");
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

/// Every file the README and docs/ name (`name.rs`, `dir/name.py`, ...) exists in the tree: a layout
/// map that names a removed file fails here.
#[test]
fn pages_name_only_files_that_exist() {
    let mut names = std::collections::BTreeSet::new();
    fn walk(dir: &Path, out: &mut std::collections::BTreeSet<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                // cargo's target/ at the root only: src/schema/target/ is source
                if !name.starts_with('.') && p != root().join("target") && name != "node_modules" && name != "mutants.out" {
                    walk(&p, out);
                }
            } else {
                out.insert(p.to_string_lossy().into_owned());
            }
        }
    }
    walk(root(), &mut names);
    let mut checked = 0;
    for (rel, text) in pages() {
        // the notes on the backends quote other projects' files
        if rel == "docs/backend-rules.md" {
            continue;
        }
        // inline code, line by line, outside fenced blocks (a fence's backticks would shift the pairs)
        for quoted in prose(&text).into_iter().flat_map(|l| l.split('`').skip(1).step_by(2)) {
            let exts = [".rs", ".py", ".sh", ".yaml", ".md", ".toml", ".mjs"];
            if quoted.contains(' ') || !exts.iter().any(|e| quoted.ends_with(e)) || quoted.starts_with('~') || quoted.contains('*') {
                continue;
            }
            let want = format!("/{}", quoted.trim_start_matches("./"));
            assert!(names.iter().any(|n| n.ends_with(&want)), "{rel} names {quoted}, which is not in the tree");
            checked += 1;
        }
    }
    assert!(checked > 60, "only {checked} file names found in the pages");
}

/// The files below `dir` whose extension is `ext`.
fn files_below(dir: &Path, ext: &str, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_below(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// Every shipped configuration that serves llama-server (`envoy/`, `deploy/`, the chart's values and its
/// per-overlay values) names the release it serves (`llama_cpp_since`): left out, the default applies
/// every older release's workarounds and counts them as lossy on healthy traffic, and nothing in the
/// file says so. Route metadata (`filter_metadata: {toolfit: {profile: ...}}`) picks a profile only.
#[test]
fn shipped_configs_name_the_llama_cpp_release() {
    let mut files = Vec::new();
    for d in ["envoy", "deploy", "charts/toolfit/ci"] {
        files_below(&root().join(d), "yaml", &mut files);
    }
    files.push(root().join("charts/toolfit/values.yaml"));
    let serves = |l: &str| {
        let l = l.trim();
        !l.starts_with('#') && !l.contains("filter_metadata") && (l.contains(r#""profile": "llama-cpp""#) || l == "profile: llama-cpp")
    };
    let mut named = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if text.lines().any(serves) {
            assert!(text.contains("llama_cpp_since"), "{} serves llama-server without naming llama_cpp_since", f.display());
            named += 1;
        }
    }
    assert!(named >= 15, "only {named} shipped configurations serve llama-server");
    // the control: the rule refuses a config that leaves the release out
    assert!(serves(r#"    {"profile": "llama-cpp", "framing": "exact"}"#) && serves("  profile: llama-cpp"));
}

/// The README's Layout names every source file of both crates (by its file name; a pass by its
/// directory, `passes/`, which holds one file per transformation): a new module is placed on the map
/// in the change that adds it.
#[test]
fn readme_layout_names_every_source_file() {
    let readme = read("README.md");
    let layout = readme.split("## Layout").nth(1).and_then(|t| t.split("\n## ").next()).unwrap_or("");
    let named: Vec<&str> = layout.split('`').skip(1).step_by(2).collect();
    let mut files = Vec::new();
    files_below(&root().join("src"), "rs", &mut files);
    files_below(&root().join("extproc/src"), "rs", &mut files);
    let is_named = |f: &Path| {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let dir = f.parent().and_then(|d| d.file_name()).map(|d| format!("{}/", d.to_string_lossy())).unwrap_or_default();
        named.iter().any(|n| n.ends_with(&name) || (dir == "passes/" && *n == dir))
    };
    let unnamed: Vec<String> = files.iter().filter(|f| !is_named(f)).map(|f| f.strip_prefix(root()).unwrap().display().to_string()).collect();
    assert!(files.len() > 80, "only {} source files found", files.len());
    // the control: a file the Layout does not name is reported, one it names (or a pass) is not
    assert!(!is_named(Path::new("src/filter/no_such_module.rs")) && is_named(Path::new("src/filter/host.rs")));
    assert!(is_named(Path::new("src/schema/passes/any_pass.rs")) && !is_named(Path::new("src/schema/other/any_pass.rs")));
    assert!(unnamed.is_empty(), "README's Layout does not name: {unnamed:?}");
}
