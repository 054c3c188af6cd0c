#!/usr/bin/env bash
# Runs the cargo-fuzz targets (engine, body, response, extproc) for SECONDS each (default 30), seeded from tests/corpus.
# Needs cargo-fuzz (installed here if missing). cargo-fuzz wants nightly flags; the stable toolchain
# accepts them with RUSTC_BOOTSTRAP=1. Findings land in fuzz/artifacts/<target>/ and fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz >&2
export RUSTC_BOOTSTRAP=1
python3 - <<'PY'
import json, os, glob
root = "fuzz/corpus"
for t in ("engine", "body", "response", "extproc"):
    os.makedirs(f"{root}/{t}", exist_ok=True)
# responses: the shapes tests/envoy/responses.py sends, with a cut byte in front
for i, f in enumerate(sorted(glob.glob("tests/corpus/responses/*"))):
    open(f"{root}/response/{os.path.basename(f)}", "wb").write(bytes([i * 37 % 256]) + open(f, "rb").read())
n = 0
for f in sorted(glob.glob("tests/corpus/servers/*.json")):
    raw = open(f, "rb").read()
    if len(raw) < 200_000:
        open(f"{root}/body/{os.path.basename(f)}", "wb").write(raw)
    for i, t in enumerate(json.loads(raw)["tools"][:40]):
        open(f"{root}/engine/{os.path.basename(f)}.{i}.json", "w").write(json.dumps(t["inputSchema"]))
        n += 1
for f in sorted(glob.glob("tests/corpus/issues/*.json")):
    open(f"{root}/engine/issue.{os.path.basename(f)}", "w").write(json.dumps(json.load(open(f))["schema"]))
# body: a sequence (cut at 0xFF) whose first body has two tools members that read each other, then one
# of those members alone (issue 71: the cache served the first's rewrite to the second)
def fn(name, schema):
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": schema}}
ap = fn("ap", {"type": "object", "properties": {"c": {"$ref": "#/$defs/Config"}}, "$defs": {"Config": {"type": "string"}}, "required": ["c"], "additionalProperties": False})
cl = fn("cl", {"type": "object", "properties": {"c": {"$ref": "#/$defs/Config"}}, "$defs": {"Config": {"type": "integer"}}})
pair = '{"model":"m","tools":[%s],"tools":[%s]}' % (json.dumps(cl), json.dumps(ap))
alone = '{"model":"m","tools":[%s]}' % json.dumps(ap)
open(f"{root}/body/sequence.pair-then-alone", "wb").write(pair.encode() + b"\xff" + alone.encode())
# extproc: programs (fuzz/fuzz_targets/extproc.rs) of a request with a catalog's first tools, whole
# or in two pieces, in both body modes, then a reply in the matching format
import struct
replies = {0: "chat.json", 2: "anthropic.sse", 3: "ollama.ndjson"}
for i, f in enumerate(sorted(glob.glob("tests/corpus/servers/*.json"))[:12]):
    tools = json.load(open(f))["tools"][:5]
    chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": t["name"].replace("_", "."), "description": t.get("description", ""), "parameters": t["inputSchema"]}} for t in tools]}).encode()[:30000]
    for path, reply in replies.items():
        flags = (i % 3) | (4 if i % 2 else 0) | 64 | (128 if i % 3 == 1 else 0)
        half = len(chat) // 2
        pieces = [chat] if i % 4 else [chat[:half], chat[half:]]
        prog = bytes([flags, path, 0])
        for k, p in enumerate(pieces):
            prog += bytes([8 if k == len(pieces) - 1 else 0]) + struct.pack("<H", len(p)) + p
        r = open(f"tests/corpus/responses/{reply}", "rb").read()[:30000]
        ct = {"chat.json": 0, "anthropic.sse": 1, "ollama.ndjson": 2}[reply]
        prog += bytes([2, ct << 2]) + bytes([3 | 8]) + struct.pack("<H", len(r)) + r
        open(f"{root}/extproc/{os.path.basename(f)}.{path}", "wb").write(prog)
for i, line in enumerate(open("tests/corpus/jsts-2020-12.jsonl")):
    open(f"{root}/engine/jsts.{i}.json", "w").write(json.dumps(json.loads(line)["schema"]))
PY
rm -rf fuzz/artifacts
# the targets fuzz/Cargo.toml declares (a [[bin]] each), not a list kept by hand: a new target is fuzzed
mapfile -t targets < <(awk '/^\[\[bin\]\]/{b=1; next} b && /^name *=/{gsub(/[" ]/, "", $0); sub(/^name=/, "", $0); print; b=0}' fuzz/Cargo.toml)
if [ "${#targets[@]}" -lt 1 ]; then echo "fuzz: no target found in fuzz/Cargo.toml" >&2; exit 1; fi
# Every target is built first, its exit status checked: fuzz/ is a workspace of its own, so neither
# cargo test nor clippy compiles it, and a target that no longer builds must fail here, not pass.
for t in "${targets[@]}"; do
  cargo fuzz build --release "$t" >&2 || { echo "fuzz: target $t does not build" >&2; exit 1; }
done
logs=$(mktemp -d)
summary=()
for t in "${targets[@]}"; do
  echo "fuzzing $t for ${secs}s" >&2
  status=0
  cargo fuzz run --release "$t" -- -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=4096 >"$logs/$t" 2>&1 || status=$?
  grep -E "^(Done|==|SUMMARY|.*panicked|.*Test unit written)" "$logs/$t" >&2 || true
  if [ -n "$(find "fuzz/artifacts/$t" -type f 2>/dev/null)" ]; then
    echo "fuzz target $t found failures: fuzz/artifacts/$t" >&2
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    tail -n 20 "$logs/$t" >&2
    echo "fuzz target $t exited $status" >&2
    exit 1
  fi
  # libFuzzer's own last word: "Done N runs in S second(s)", with N > 0, or the target did not run
  read -r runs took < <(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1 \2/p' "$logs/$t" | tail -n 1) || true
  if [ -z "${runs:-}" ] || [ "$runs" -eq 0 ]; then
    tail -n 20 "$logs/$t" >&2
    echo "fuzz target $t ran no input (no 'Done N runs' line with N > 0)" >&2
    exit 1
  fi
  summary+=("$t $runs runs, $(( runs / (took > 0 ? took : 1) )) exec/s")
  runs=
done
rm -rf "$logs"
printf 'fuzz: %s\n' "${summary[@]}" >&2
echo "fuzz: ${#summary[@]} passed, 0 failed (${secs}s each, no failures)"
