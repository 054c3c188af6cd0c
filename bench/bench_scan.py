#!/usr/bin/env python3
"""make bench-scan: the untouched request's cost, natively and as wasm in V8 with and without SIMD.

Runs `benches/scan.rs` (a 200 KB request and a 1 MiB conversation that need no change: the copy,
core's UTF-8 check and serde_json skimming the body as floors; toolfit's scan alone and its whole
request path with the cache warm) natively, then built for wasm32-wasip1 with `simd128` (as
`make wasm` ships it) and without, each run in Node's V8 (the engine Envoy embeds) through
bench/wasi_run.mjs. Node comes with the system packages; without it only the native figures print.
"""
import glob, os, shutil, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(label, cmd):
    print(f"-- {label}", flush=True)
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(out.stdout.strip() or out.stderr.strip()[-2000:], flush=True)


def wasm_bench(simd):
    env = dict(os.environ)
    tdir = os.path.join(ROOT, "target", "bench-scan-" + ("simd" if simd else "plain"))
    env["CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS"] = "-C target-feature=+simd128" if simd else ""
    subprocess.run(["rustup", "target", "add", "wasm32-wasip1"], capture_output=True)
    subprocess.run(["cargo", "bench", "--bench", "scan", "--target", "wasm32-wasip1", "--no-default-features", "--no-run", "--target-dir", tdir],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    files = sorted(glob.glob(os.path.join(tdir, "wasm32-wasip1", "release", "deps", "scan-*.wasm")), key=os.path.getmtime)
    return files[-1]


def main():
    run("native", ["cargo", "bench", "--quiet", "--bench", "scan"])
    if not shutil.which("node"):
        print("node not found: the wasm figures need Node's V8")
        return
    for simd in (True, False):
        run(f"wasm in V8 (node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}), " + ("simd128, as shipped" if simd else "without simd128"),
            ["node", "--no-warnings", os.path.join(ROOT, "bench", "wasi_run.mjs"), wasm_bench(simd)])


if __name__ == "__main__":
    sys.exit(main())
