#!/usr/bin/env python3
"""`make bench-engine`: the engine on every catalog of tests/corpus/servers, cold (parse, rewrite,
serialise), beside serde_json's own parse+serialise of the same bytes and mcp-schema-normalize (PyPI),
all in this one run. Prints per-catalog time and MB/s, ratios and their geometric means."""
import glob, json, math, os, subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
files = sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "servers", "*.json")))


def lines(cmd):
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return {os.path.basename(j["file"]): j for j in (json.loads(x) for x in out.split("\n") if x.startswith("{"))}


ours = lines(["cargo", "bench", "--quiet", "--bench", "engine", "--"] + files)
venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
theirs = lines([os.path.join(venv, "bin", "python"), os.path.join(ROOT, "tests", "msn.py"), "bench"] + files)

mbps = lambda b, s: b / s / 1e6
print(f"{'catalog':28} {'KB':>7} {'toolfit ms':>10} {'MB/s':>7} {'warm MB/s':>9} {'serde MB/s':>10} {'msn ms':>9} {'msn MB/s':>8} {'x msn':>7} {'/serde':>7}")
r_msn, r_serde, warm = [], [], []
for f in files:
    name = os.path.basename(f)
    o, t = ours[name], theirs[name]
    vs_msn = t["seconds"] / o["toolfit_seconds"]
    vs_serde = o["serde_seconds"] / o["toolfit_seconds"]
    r_msn.append(vs_msn)
    r_serde.append(vs_serde)
    warm.append(mbps(o["bytes"], o["warm_seconds"]))
    print(f"{name:28} {o['bytes'] / 1024:7.1f} {o['toolfit_seconds'] * 1e3:10.3f} {mbps(o['bytes'], o['toolfit_seconds']):7.1f} {warm[-1]:9.0f} "
          f"{mbps(o['bytes'], o['serde_seconds']):10.1f} {t['seconds'] * 1e3:9.2f} {mbps(t['bytes'], t['seconds']):8.1f} "
          f"{vs_msn:7.1f} {vs_serde:7.2f}")
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
total_b = sum(ours[os.path.basename(f)]["bytes"] for f in files)
total_s = sum(ours[os.path.basename(f)]["toolfit_seconds"] for f in files)
print(f"\n{len(files)} catalogs, {total_b / 1e6:.2f} MB: toolfit {mbps(total_b, total_s):.1f} MB/s overall")
total_w = sum(ours[os.path.basename(f)]["warm_seconds"] for f in files)
print(f"warm (catalog seen before, from the rewrite cache): {mbps(total_b, total_w):.0f} MB/s overall, geometric mean {g(warm):.0f} MB/s")
print(f"geometric mean: toolfit is {g(r_msn):.1f}x mcp-schema-normalize; {g(r_serde):.2f}x serde_json parse+serialise throughput")
