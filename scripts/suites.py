#!/usr/bin/env python3
"""Runs the test suites of a tier (`test`: what `make test` and CI run; `check`: the developers' fast tier)
one after another, each to its end even when an earlier one failed, and closes with a table of every
suite and one total line, `total: N passed, M failed`.

A suite's count is read from its own closing line (`what: N passed, M failed`; for cargo, the sum of
its `test result:` lines). A suite fails when it exits non-zero, and also when it exits 0 having said
nothing: no closing line, or a closing line that counts no check. Either way it adds one failure to the
total, so a suite that stopped early or ran nothing shows in the total. A suite also fails when it ran
fewer checks than its floor (scripts/floors.json: the count it reached when the floor was last raised),
so checks that vanish (a branch no longer taken, a loop over nothing) show as a failure, not as a
smaller green number. Raise a floor in the same change that adds checks.

    scripts/suites.py test|check        the tier's suites
    scripts/suites.py --list test       their names and commands
    scripts/suites.py --self-test       the verdicts on suites made to pass, fail and say nothing
"""
import os, re, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOSING = re.compile(r"^(?:[\w .:-]*: )?(\d+) passed, (\d+) failed\b")
CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;")
FLOORS = os.path.join(ROOT, "scripts", "floors.json")


def floors():
    """suite name -> the fewest checks it may run."""
    import json
    with open(FLOORS) as f:
        return {k: v for k, v in json.load(f).items() if not k.startswith("_")}


def venv_python():
    out = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout
    return os.path.join(out.strip(), "bin", "python")


def tiers():
    """name -> [(suite, command)], in the order they run. `make test` runs `test`; `make check` runs `check`.
    The judges run in the project's venv: their reference validator (`jsonschema`) is pinned there."""
    py = venv_python()
    fast = [
        ("suite runner", [sys.executable, "scripts/suites.py", "--self-test"]),
        ("unit", ["cargo", "test", "--release", "--workspace"]),
    ]
    return {
        "test": fast + [
            ("llama judges", [py, "tests/judges/llama_judges.py"]),
            ("vllm judges", [py, "tests/judges/vllm_judges.py"]),
            ("sglang judges", [py, "tests/judges/sglang_judges.py"]),
            ("ollama judges", [py, "tests/judges/ollama_judges.py"]),
            ("hosted judges", [py, "tests/judges/hosted_judges.py"]),
            ("e2e", ["python3", "tests/envoy/e2e.py"]),
            ("responses", ["python3", "tests/envoy/responses.py"]),
            ("clients", ["python3", "tests/envoy/clients.py"]),
            ("bedrock", ["python3", "tests/envoy/bedrock.py"]),
            ("faults", ["python3", "tests/envoy/faults.py"]),
            ("hostile", ["python3", "tests/envoy/hostile.py"]),
            ("streaming", ["python3", "tests/envoy/streaming.py"]),
            ("duplex", ["python3", "tests/envoy/duplex.py"]),
            ("extproc", ["python3", "tests/envoy/extproc.py"]),
            ("llama-server", [py, "tests/envoy/llama_server.py"]),
            ("agents", [py, "tests/envoy/mcp_agents.py"]),
            ("agent CLIs", [py, "tests/envoy/agent_clis.py"]),
            ("mcp leg", [py, "tests/envoy/mcp_leg.py"]),
            ("mcp stdio", [py, "tests/envoy/mcp_stdio.py"]),
            ("mcp conformance", [py, "tests/envoy/mcp_conformance.py"]),
            ("deploy", [py, "tests/envoy/deploy.py"]),
            ("control planes", [py, "tests/envoy/controlplanes.py"]),
            ("istio", [py, "tests/envoy/istio.py"]),
            ("chart", [py, "tests/envoy/charts.py"]),
            ("oci", [py, "tests/envoy/oci.py"]),
            ("placement", ["sh", "-c", f"cargo build --release --workspace --example epp_standin && exec {py} tests/envoy/placement.py"]),
            ("fuzz", ["scripts/fuzz.sh", "20"]),
        ],
        "check": fast + [
            ("llama judges (2026-10)", [py, "tests/judges/llama_judges.py", "--quick"]),
            ("hosted judges", [py, "tests/judges/hosted_judges.py"]),
            ("e2e (wasm)", ["python3", "tests/envoy/e2e.py", "--delivery=wasm"]),
            ("streaming (wasm)", ["python3", "tests/envoy/streaming.py", "--delivery=wasm"]),
        ],
    }


def run(name, cmd, echo=True, floor=0):
    """Runs one suite, its output passed through as it comes (with `echo`); returns (passed, failed, verdict).
    Fewer checks than `floor` is one failure more."""
    passed, failed, verdict = run_one(name, cmd, echo)
    if passed + failed < floor:
        return passed, failed + 1, f"ran {passed + failed} checks, fewer than its floor of {floor} (scripts/floors.json); {verdict}"
    return passed, failed, verdict


def run_one(name, cmd, echo=True):
    if echo:
        print(f"\n=== {name}: {' '.join(cmd)}", flush=True)
    cargo = [0, 0, False]
    closing = None
    started = time.time()
    try:
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as e:
        return 0, 1, f"did not start: {e}"
    for line in p.stdout:
        if echo:
            sys.stdout.write(line)
            sys.stdout.flush()
        if m := CARGO.match(line):
            cargo = [cargo[0] + int(m[1]), cargo[1] + int(m[2]), True]
        elif m := CLOSING.match(line.strip()):
            closing = (int(m[1]), int(m[2]))
    code = p.wait()
    took = f"{time.time() - started:.0f} s"
    passed, failed = (cargo[0], cargo[1]) if cargo[2] else closing or (0, 0)
    if code != 0:
        return passed, failed + 1 if failed == 0 else failed, f"exit {code}, {took}"
    if not cargo[2] and closing is None:
        return passed, 1, f"exit 0 without a closing 'N passed, M failed' line, {took}"
    if passed + failed == 0:
        return 0, 1, f"ran no check, {took}"
    if failed:
        return passed, failed, f"exit 0 yet {failed} failed, {took}"
    return passed, 0, f"ok, {took}"


def report(rows):
    """The table and the total line; returns the exit status."""
    print("\n=== suites")
    for name, passed, failed, verdict in rows:
        print(f"{name:24} {passed:6} passed {failed:4} failed   {verdict}")
    print(f"total: {sum(r[1] for r in rows)} passed, {sum(r[2] for r in rows)} failed", flush=True)
    return status(rows)


def status(rows):
    """0 when suites ran and none failed."""
    return 0 if rows and sum(r[2] for r in rows) == 0 else 1


def self_test():
    """The runner's own controls: each way a suite can say nothing or fail must count as a failure."""
    cases = [  # (script, exit status, expected (passed, failed))
        ("print('x: 3 passed, 0 failed')", 0, (3, 0)),
        ("print('x: 0 passed, 0 failed')", 0, (0, 1)),            # ran nothing
        ("print('no closing line')", 0, (0, 1)),                  # said nothing
        ("print('x: 2 passed, 1 failed'); raise SystemExit(1)", 1, (2, 1)),
        ("print('x: 5 passed, 0 failed'); raise SystemExit(3)", 3, (5, 1)),   # stopped after its line
        ("print('test result: ok. 4 passed; 0 failed; 0 ignored;')\nprint('test result: ok. 0 passed; 0 failed; 0 ignored;')", 0, (4, 0)),
        ("print('test result: ok. 0 passed; 0 failed; 0 ignored;')", 0, (0, 1)),
        # a suite stopped half-way by an exit or ^C counts a failure, whatever it had passed (verdict.run)
        ("from harness import verdict\ndef main():\n    verdict.check('a', True)\n    raise SystemExit(0)\nverdict.run('x', main)", 1, (1, 1)),
        ("from harness import verdict\ndef main():\n    verdict.check('a', True)\n    raise KeyboardInterrupt\nverdict.run('x', main)", 1, (1, 1)),
        ("from harness import verdict\nverdict.run('x', lambda: verdict.check('a', True))", 0, (1, 0)),
    ]
    results = []
    with tempfile.TemporaryDirectory() as d:
        for i, (script, _, want) in enumerate(cases):
            f = os.path.join(d, f"s{i}.py")
            open(f, "w").write(script + "\n")
            got = run(f"case {i}", [sys.executable, f], echo=False)[:2]
            ok = got == want
            results.append(ok)
            print(("ok    " if ok else "FAIL  ") + f"runner case {i}: {script[:50]!r} counted {got}, want {want}")
        ok = status([]) == 1 and status([("a", 3, 0, "ok"), ("b", 0, 1, "ran no check")]) == 1
        results.append(ok)
        print(("ok    " if ok else "FAIL  ") + "a tier with no suite, or with one that ran nothing, fails")
        f = os.path.join(d, "three.py")
        open(f, "w").write("print('x: 3 passed, 0 failed')\n")
        got = [run("floor", [sys.executable, f], echo=False, floor=n)[:2] for n in (4, 3)]
        ok = got == [(3, 1), (3, 0)]
        results.append(ok)
        print(("ok    " if ok else "FAIL  ") + f"a suite under its floor fails, at its floor passes: {got}")
        have, named = floors(), {n for t in tiers().values() for n, _ in t}
        ok = named <= set(have) and all(isinstance(v, int) and v > 0 for v in have.values())
        results.append(ok)
        print(("ok    " if ok else "FAIL  ") + f"every suite of every tier has a floor (missing: {sorted(named - set(have))})")
    # the estimate reads which caches are there: an empty one names every cold step and a larger figure
    with tempfile.TemporaryDirectory() as empty:
        saved = os.environ.get("TOOLFIT_CACHE")
        os.environ["TOOLFIT_CACHE"] = empty
        cold = estimate()
        if saved is None:
            del os.environ["TOOLFIT_CACHE"]
        else:
            os.environ["TOOLFIT_CACHE"] = saved
        minutes = int(re.search(r"about (\d+) minutes", cold).group(1))
        ok = cold.startswith("cold caches") and all(what in cold for _, what, _ in COLD) and minutes >= WARM_MINUTES + sum(m for *_, m in COLD)
        results.append(ok)
        print(("ok    " if ok else "FAIL  ") + f"an empty cache makes the estimate name every cold step ({minutes} minutes)")
    print(f"suite runner: {sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


# What a cold cache costs `make test` on 2 cores (minutes, measured 2026-11-28 on a new machine): each
# part's cache, and what building it adds to the warm run
COLD = [("server/llama-server-0.3.36", "llama-server 2026-10 built from its sdist", 11),
        ("server/llama-server-0.3.16", "llama-server 2025-08 built from its sdist", 10),
        ("judges", "llama.cpp's converters of five releases built as judges", 6),
        ("venv/bin/envoy", "Envoy and the judges' Python packages", 3),
        ("clis", "the coding agents' CLIs and their MCP servers", 3),
        ("go/bin", "the control planes' Go tools (built at nice 19 beside the first suites)", 5),
        ("vllm", "vLLM's, SGLang's and the hosted APIs' compilers and SDKs", 4),
        ("conformance", "the MCP conformance suite and the Node 22 it runs on", 1)]
# the stdio host's suite and the conformance suite added about 7 minutes on 2026-11-29
WARM_MINUTES = 34


def estimate():
    """A line saying roughly how long this run will take, from which caches are missing."""
    home = os.environ.get("TOOLFIT_CACHE", os.path.expanduser("~/.cache/toolfit"))
    missing = [(what, m) for path, what, m in COLD if not os.path.exists(os.path.join(home, path))]
    cargo = not os.path.isdir(os.path.join(os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo")), "registry", "cache"))
    # a fresh clone builds the workspace, its tests and the Wasm module from nothing (7 min 7 s and
    # 1 min 25 s on 2026-11-28)
    built = os.path.isdir(os.path.join(ROOT, "target", "release"))
    minutes = WARM_MINUTES + sum(m for _, m in missing) + (4 if cargo else 0) + (0 if built else 9)
    build = "" if built else ", the workspace built from nothing"
    if not missing and not cargo:
        return f"caches warm ({home}{build}): about {minutes} minutes on 2 cores"
    parts = [w for w, _ in missing] + (["the crates from crates.io"] if cargo else [])
    return f"cold caches: this run installs and builds {'; '.join(parts)}{build} (cached in {home} for the next run): about {minutes} minutes on 2 cores"

def main(argv):
    # the suites import their shared harness (tests/harness/) from tests/, as the Makefile sets it
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "tests"), os.environ.get("PYTHONPATH", "")) if p)
    if argv[1:] == ["--self-test"]:
        return self_test()
    if argv[1:] == ["--estimate"]:
        print(estimate(), flush=True)
        return 0
    listing = argv[1:2] == ["--list"]
    tier = argv[2] if listing and len(argv) > 2 else argv[1] if len(argv) > 1 else ""
    suites = tiers().get(tier)
    if suites is None:
        sys.exit(f"usage: {argv[0]} [--list] test|check | --self-test")
    if listing:
        for name, cmd in suites:
            print(f"{name:24} {' '.join(cmd)}")
        return 0
    # one run's mark: a suite reading what an earlier suite wrote (the e2e run's metric names) checks it
    os.environ["TOOLFIT_RUN_ID"] = f"{int(time.time())}-{os.getpid()}"
    prefetch = None
    if tier == "test":
        print(estimate(), flush=True)
        # the Go tools of the last suites, built meanwhile on the core the suites leave idle (cold caches)
        log = open(os.path.join(tempfile.gettempdir(), f"toolfit-go-prefetch-{os.getpid()}.log"), "w")
        prefetch = subprocess.Popen(["nice", "-n", "19", venv_python(), os.path.join(ROOT, "scripts", "go-prefetch.py")], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    have = floors()
    rows = [(name, *run(name, cmd, floor=have.get(name, 1))) for name, cmd in suites]
    if prefetch is not None:
        prefetch.wait()
        print(f"\n=== go prefetch ({log.name})\n" + open(log.name).read().strip(), flush=True)
    return report(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
