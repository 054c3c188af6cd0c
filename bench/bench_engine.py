#!/usr/bin/env python3
"""`make bench-engine`: the engine on every catalog of tests/corpus/servers, cold (parse, rewrite,
serialise), beside serde_json's own parse+serialise of the same bytes and mcp-schema-normalize (PyPI),
schema-bridge (npm, openai and gemini targets), all in this one run. Prints per-catalog time and
MB/s, ratios and their geometric means, and the targets beside them.

Every tool gets the same bytes: each catalog becomes the OpenAI chat request an agent would send
(`tools[].function.parameters`, compact JSON as JavaScript clients write it), the one form all three
accept."""
import glob, json, math, os, shutil, subprocess, tempfile

from harness import npm_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
catalogs = sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "servers", "*.json")))
tmp = tempfile.mkdtemp(prefix="toolfit-bench-")
files = []
for c in catalogs:
    tools = [{"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                               "parameters": t.get("inputSchema") or {}}}
             for t in json.load(open(c))["tools"]]
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "tools": tools}
    files.append(os.path.join(tmp, os.path.basename(c)))
    with open(files[-1], "w") as f:
        json.dump(body, f, separators=(",", ":"))


def lines(cmd):
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return {os.path.basename(j["file"]): j for j in (json.loads(x) for x in out.split("\n") if x.startswith("{"))}


ours = lines(["cargo", "bench", "--quiet", "--bench", "engine", "--"] + files)
venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
theirs = lines([os.path.join(venv, "bin", "python"), os.path.join(ROOT, "tests", "support", "msn.py"), "bench"] + files)
modules = npm_cache.ensure(["@silupanda/schema-bridge@0.2.3"])
bridge = lines(["node", os.path.join(ROOT, "tests", "support", "schema_bridge.mjs"), modules] + files)

mbps = lambda b, s: b / s / 1e6
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f"{'catalog':28} {'KB':>7} {'toolfit ms':>10} {'MB/s':>7} {'warm MB/s':>9} {'serde MB/s':>10} {'msn MB/s':>8} "
      f"{'sb-oai MB/s':>11} {'sb-gem MB/s':>11} {'x msn':>6} {'x sb-oai':>8} {'x sb-gem':>8} {'/serde':>6}")
r = {"msn": [], "oai": [], "gem": [], "serde": [], "warm": []}
for f in files:
    name = os.path.basename(f)
    o, t, b = ours[name], theirs[name], bridge[name]
    s = o["toolfit_seconds"]
    r["msn"].append(t["seconds"] / s)
    r["oai"].append(b["openai_seconds"] / s)
    r["gem"].append(b["gemini_seconds"] / s)
    r["serde"].append(o["serde_seconds"] / s)
    r["warm"].append(mbps(o["bytes"], o["warm_seconds"]))
    print(f"{name:28} {o['bytes'] / 1024:7.1f} {s * 1e3:10.3f} {mbps(o['bytes'], s):7.1f} {r['warm'][-1]:9.0f} "
          f"{mbps(o['bytes'], o['serde_seconds']):10.1f} {mbps(t['bytes'], t['seconds']):8.1f} "
          f"{mbps(b['bytes'], b['openai_seconds']):11.1f} {mbps(b['bytes'], b['gemini_seconds']):11.1f} "
          f"{r['msn'][-1]:6.1f} {r['oai'][-1]:8.1f} {r['gem'][-1]:8.1f} {r['serde'][-1]:6.2f}")
total_b = sum(ours[os.path.basename(f)]["bytes"] for f in files)
total = lambda key, d=ours: sum(d[os.path.basename(f)][key] for f in files)
print(f"\n{len(files)} catalogs, {total_b / 1e6:.2f} MB, geometric means over catalogs (target in brackets):")
print(f"  cold: toolfit {mbps(total_b, total('toolfit_seconds')):.1f} MB/s overall; serde_json parse+serialise {mbps(total_b, total('serde_seconds')):.1f} MB/s")
print(f"  cold vs mcp-schema-normalize: {g(r['msn']):.2f}x  [>= 5x]")
print(f"  cold vs schema-bridge openai: {g(r['oai']):.2f}x  [>= 2.5x]")
print(f"  cold vs schema-bridge gemini: {g(r['gem']):.2f}x  [>= 2.5x]")
print(f"  cold vs serde_json parse+serialise: {g(r['serde']):.2f}x  [>= 0.6x]")
slow = sorted((r["serde"][i], os.path.basename(f)) for i, f in enumerate(files))[:4]
print(f"  slowest catalogs vs serde_json: {', '.join(f'{n} {x:.2f}x' for x, n in slow)}  [none below 0.35x]")
print(f"  warm (every schema from the rewrite cache): {mbps(total_b, total('warm_seconds')):.0f} MB/s overall, "
      f"geometric mean {g(r['warm']):.0f} MB/s  [>= 1000 MB/s]")
big = max(files, key=lambda f: ours[os.path.basename(f)]["bytes"])
ob = ours[os.path.basename(big)]
worst_f = max(files, key=lambda f: ours[os.path.basename(f)]["peak_bytes"] / ours[os.path.basename(f)]["bytes"])
wo = ours[os.path.basename(worst_f)]
worst = wo["peak_bytes"] / wo["bytes"]
print(f"  memory of one cold rewrite (peak heap beyond the body, native): largest catalog {os.path.basename(big)} "
      f"{ob['peak_bytes'] / 2**20:.1f} MiB for {ob['bytes'] / 2**20:.1f} MiB = {ob['peak_bytes'] / ob['bytes']:.1f}x the body; "
      f"worst catalog {os.path.basename(worst_f)} ({wo['bytes'] / 1024:.0f} KB) {worst:.1f}x  [< 4x]")
shutil.rmtree(tmp, ignore_errors=True)
