//! The native command line: the same engine as the Envoy filter, for CI pipelines and debugging, and
//! `toolfit mcp` (`mcp.rs`), the MCP leg's stdio host.

mod mcp;

use clap::{Arg, ArgAction, Command};
use std::io::{Read, Write};
use std::process::ExitCode;
use toolfit::api::{self, Format, Skip};
use toolfit::schema::{self, Context, Kind, Profile, Report};

/// Every profile's name and alias, from the code's lists.
fn profile_names() -> Vec<&'static str> {
    schema::profile::ALL.iter().map(|p| p.name).chain(schema::profile::ALIASES.iter().map(|(a, _)| *a)).collect()
}

/// Every body format's name, `auto` first, from the code's one list.
fn format_names() -> Vec<&'static str> {
    std::iter::once(Format::Auto.name()).chain(api::format::ALL.iter().map(|d| d.name)).collect()
}

fn cli() -> Command {
    Command::new("toolfit")
        .about("Rewrites tool and structured-output JSON Schemas into what a model server compiles")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true)
        .subcommand(
            Command::new("normalize")
                .about("Rewrite a request body, an MCP tools/list result, or one schema (--schema)")
                .arg(Arg::new("profile").long("profile").required(true).value_parser(profile_names()).help("target profile (`toolfit profiles` lists their passes)"))
                .arg(Arg::new("schema").long("schema").action(ArgAction::SetTrue).help("INPUT is one bare JSON Schema (structured-output context)"))
                .arg(Arg::new("strict").long("strict").action(ArgAction::SetTrue).help("refuse (exit 1) instead of making a lossy change"))
                .arg(Arg::new("report").long("report").value_name("FILE").help("write counters and records as JSON to FILE (- for stderr)"))
                .arg(Arg::new("format").long("format").default_value("auto").value_parser(format_names()).help("body format (auto: recognised by its members)"))
                .arg(Arg::new("no-promote").long("no-promote").action(ArgAction::SetTrue).help("do not write removed constraints into descriptions"))
                .arg(Arg::new("open-objects").long("open-objects").action(ArgAction::SetTrue).conflicts_with("closed-objects").help("allow undeclared properties where JSON Schema does (objects without additionalProperties); llama.cpp closes them, and so does toolfit by default"))
                .arg(Arg::new("declare-2020-12").long("declare-2020-12").action(ArgAction::SetTrue).help("stamp every schema declaring an older draft (draft-04 to 2019-09) 2020-12, its keywords translated, as the MCP leg does for clients that validate with 2020-12 only"))
                .arg(Arg::new("closed-objects").long("closed-objects").action(ArgAction::SetTrue).hide(true).help("the default: leave objects without additionalProperties closed"))
                .arg(Arg::new("llama-cpp-since").long("llama-cpp-since").value_name("YYYY-MM").default_value("2024-08").help("llama-cpp profile: the oldest llama.cpp release served; later months rely on what later releases fixed"))
                .arg(Arg::new("input").value_name("INPUT").help("file to read (default: stdin)")),
        )
        .subcommand(
            Command::new("convert")
                .about("Turn an MCP tools/list result into one API's tool list, each schema rewritten by that API's profile")
                .arg(Arg::new("to").long("to").required(true).value_parser(api::convert::To::names()).help("the API"))
                .arg(Arg::new("strict-tools").long("strict-tools").action(ArgAction::SetTrue).help(strict_help()))
                .arg(Arg::new("report").long("report").value_name("FILE").help("write counters and records as JSON to FILE (- for stderr)"))
                .arg(Arg::new("no-promote").long("no-promote").action(ArgAction::SetTrue).help("do not write removed constraints into descriptions"))
                .arg(Arg::new("input").value_name("INPUT").help("file to read (default: stdin)")),
        )
        .subcommand(Command::new("kinds").about("Print the transformation kinds as a Markdown table"))
        .subcommand(
            Command::new("check-config")
                .about("Validate an Envoy plugin configuration (JSON) exactly as the filter does at load; exit 1 if rejected")
                .arg(Arg::new("input").value_name("FILE").help("the configuration (default: stdin)")),
        )
        .subcommand(mcp::command())
        .subcommand(Command::new("stats").about("Print the Envoy filter's own counters as a Markdown table"))
        .subcommand(Command::new("profiles").about("List the profiles and their passes"))
}

/// The INPUT file's bytes (stdin when absent or `-`); exit status 2 when it cannot be read.
fn read_input(a: &clap::ArgMatches) -> Result<Vec<u8>, ExitCode> {
    let mut input = Vec::new();
    let read = match a.get_one::<String>("input") {
        Some(path) if path != "-" => std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut input)),
        _ => std::io::stdin().read_to_end(&mut input),
    };
    read.map(|_| input).map_err(|e| fail(2, &format!("cannot read input: {e}")))
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("toolfit: {msg}");
    ExitCode::from(code)
}

fn convert(a: &clap::ArgMatches) -> ExitCode {
    let to = a.get_one::<String>("to").and_then(|t| api::convert::To::by_name(t));
    let Some(to) = to else { return fail(2, "--to: unknown API") };
    let input = match read_input(a) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let opts = schema::Options { promote_to_description: !a.get_flag("no-promote"), ..schema::Options::default() };
    let (out, report) = match api::convert::convert(&input, to, a.get_flag("strict-tools"), &opts) {
        Ok(x) => x,
        Err(e) => return fail(2, &e),
    };
    if let Some(path) = a.get_one::<String>("report") {
        let text = report.to_json().to_string();
        let res = if path == "-" { writeln!(std::io::stderr(), "{text}") } else { std::fs::write(path, text + "\n") };
        if let Err(e) = res {
            return fail(2, &format!("cannot write report: {e}"));
        }
    }
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(&out).and_then(|_| stdout.flush()).is_err() {
        return fail(2, "cannot write output");
    }
    ExitCode::SUCCESS
}

/// `--strict-tools` help: the lists whose API has a strict mode, from the formats.
fn strict_help() -> String {
    let names: Vec<&str> = api::convert::To::all().filter(|t| t.shape.strict.is_some()).map(|t| t.shape.name).collect();
    format!("{}: every tool strict where it can be (the rest strict: false, recorded)", names.join(", "))
}

fn main() -> ExitCode {
    let m = cli().get_matches();
    match m.subcommand() {
        Some(("convert", a)) => convert(a),
        Some(("mcp", a)) => mcp::run(a),
        Some(("kinds", _)) => {
            println!("| counter | lossy | meaning |\n|---|---|---|");
            for k in Kind::ALL {
                println!("| `{}` | {} | {} |", k.name(), if k.lossy() { "yes" } else { "no" }, k.doc());
            }
            ExitCode::SUCCESS
        }
        Some(("check-config", a)) => {
            let input = match read_input(a) {
                Ok(i) => i,
                Err(code) => return code,
            };
            match toolfit::filter::config::Config::parse(&input) {
                Ok(c) => {
                    println!(
                        "ok: profile={} models={} routes={} framing={:?} max_body_bytes={} strict={} open_objects={} llama_cpp_since={}",
                        c.profile.name,
                        c.models.len(),
                        c.routes.len(),
                        c.framing,
                        c.max_body_bytes,
                        c.strict,
                        c.open_objects.map_or_else(|| "profile".to_string(), |b| b.to_string()),
                        c.llama_cpp_since.name()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(1, &e),
            }
        }
        Some(("stats", _)) => {
            println!("| metric (Prometheus) | meaning |\n|---|---|");
            for s in toolfit::filter::stats::Stat::ALL {
                let kind = if *s == toolfit::filter::stats::Stat::RewriteUs { "histogram" } else { "counter" };
                println!("| `toolfit_{}` ({kind}) | {} |", s.name(), s.doc());
            }
            ExitCode::SUCCESS
        }
        Some(("profiles", _)) => {
            for p in toolfit::schema::profile::ALL {
                let names: Vec<&str> = p.passes.iter().map(|x| x.name).collect();
                println!("{}: {}\n  passes: {}", p.name, p.about, names.join(", "));
                if let Some(t) = p.tool_passes {
                    let names: Vec<&str> = t.iter().map(|x| x.name).collect();
                    println!("  tool passes: {}", names.join(", "));
                }
            }
            ExitCode::SUCCESS
        }
        Some(("normalize", a)) => normalize(a),
        _ => fail(2, "unknown command"),
    }
}

fn normalize(a: &clap::ArgMatches) -> ExitCode {
    let pname = a.get_one::<String>("profile").map(String::as_str).unwrap_or("");
    let Some(profile) = Profile::by_name(pname) else {
        return fail(2, &format!("unknown profile {pname:?} (known: {})", profile_names().join(", ")));
    };
    let fname = a.get_one::<String>("format").map(String::as_str).unwrap_or("auto");
    let Some(format) = Format::by_name(fname) else {
        return fail(2, &format!("unknown format {fname:?} (known: {})", format_names().join(", ")));
    };
    let mut opts = profile.default_options();
    opts.promote_to_description = !a.get_flag("no-promote");
    opts.open_objects = a.get_flag("open-objects");
    opts.declare_2020_12 = a.get_flag("declare-2020-12");
    // the MCP leg's lists keep property names (its clients call with the keys they read), as the filter
    opts.rename_properties = format.descriptor().is_none_or(|d| d.argument_keys.renamable());
    opts.keep_keywords = format.descriptor().map_or(&[], |d| d.client_keywords);
    let since = a.get_one::<String>("llama-cpp-since").map(String::as_str).unwrap_or("2024-08");
    let Some(v) = schema::LlamaCpp::since(since) else {
        return fail(2, &format!("--llama-cpp-since {since:?}: not a month from 2024-08 on, as YYYY-MM"));
    };
    opts.llama_cpp = v;
    let input = match read_input(a) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let (output, report, unparsed) = if a.get_flag("schema") {
        let Ok(text) = std::str::from_utf8(&input) else { return fail(2, "input is not JSON: not UTF-8") };
        let mut report = Report::default();
        let mut v = match schema::parse(text, &opts, Context::Output, "schema", &mut report) {
            Ok(v) => v,
            Err(e) => return fail(2, &format!("input is not JSON: {e}")),
        };
        let out = schema::normalize_or_loose(&mut v, profile, &opts, Context::Output, "schema");
        let changed = out.changed || !report.is_empty();
        report.extend(out.report);
        let bytes = if changed { serde_json::to_vec(&v).unwrap_or(input.clone()) } else { input.clone() };
        (bytes, report, vec![])
    } else {
        match api::rewrite_body(&input, format, profile, &opts) {
            Ok(o) => (o.body.unwrap_or_else(|| input.clone()), o.report, o.unparsed),
            Err(Skip::NotJson) => return fail(2, "input is not JSON"),
            Err(Skip::UnknownShape) => return fail(2, "input is neither a tools/list result nor a known request body (use --schema for a bare schema)"),
            Err(Skip::Misplaced) => return fail(3, "internal error: an edit could not be placed in the input; nothing written"),
        }
    };
    if let Some(path) = a.get_one::<String>("report") {
        let text = report.to_json().to_string();
        let res = if path == "-" { writeln!(std::io::stderr(), "{text}") } else { std::fs::write(path, text + "\n") };
        if let Err(e) = res {
            return fail(2, &format!("cannot write report: {e}"));
        }
    }
    if a.get_flag("strict") {
        if let Some(u) = unparsed.first() {
            return fail(1, &format!("strict: tool {:?}: schema not usable: {}", u.tool, u.reason));
        }
        if let Some(r) = first_refusal(&report) {
            return fail(1, &format!("strict: tool {:?} at {:?}: {}: {}", r.tool, if r.path.is_empty() { "/" } else { &r.path }, r.kind.name(), r.detail));
        }
    }
    let mut out = std::io::stdout().lock();
    if out.write_all(&output).and_then(|_| out.flush()).is_err() {
        return fail(2, "cannot write output");
    }
    ExitCode::SUCCESS
}

fn first_refusal(r: &Report) -> Option<&schema::Record> {
    r.first_lossy()
}
