#!/usr/bin/env python3
"""mcp-schema-normalize (the Python library people use today), run the same way as toolfit for comparison.
Run with the venv's python (scripts/venv.sh).
  msn.py normalize     stdin: JSON lines, one schema each; stdout: {"schema": out, "lossy": bool} per line
  msn.py bench F...    per OpenAI chat body with `tools`: seconds for JSON parse + normalize_tools + serialise (best of runs)
"""
import json, sys, time

from mcp_schema_normalize import is_lossy_telemetry, normalize_schema, normalize_tools
import logging

logging.disable(logging.CRITICAL)  # its per-ref warnings would dominate the timing


def normalize():
    for line in sys.stdin:
        if line.strip():
            out, tel = normalize_schema(json.loads(line))
            sys.stdout.write(json.dumps({"schema": out, "lossy": is_lossy_telemetry(tel)}) + "\n")


def bench(files, min_seconds=0.3):
    for f in files:
        body = open(f, "rb").read()  # an OpenAI chat body with `tools`, the form its API takes
        best, n, start = float("inf"), 0, time.perf_counter()
        while n < 3 or time.perf_counter() - start < min_seconds:
            t0 = time.perf_counter()
            req = json.loads(body)
            req["tools"], _ = normalize_tools(req["tools"])
            json.dumps(req)
            best = min(best, time.perf_counter() - t0)
            n += 1
        print(json.dumps({"file": f, "bytes": len(body), "seconds": best}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["normalize"]:
        normalize()
    elif sys.argv[1:2] == ["bench"]:
        bench(sys.argv[2:])
    else:
        sys.exit(__doc__)
