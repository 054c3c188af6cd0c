#!/usr/bin/env python3
"""Builds every Go tool the deploy/ suites use (the control planes' own code, pinned in those suites and
in tests/istio, tests/epp, tests/oci) and downloads the CRD modules, so that from cold caches the builds
run while the earlier suites do: scripts/suites.py starts it at nice 19 when the `test` tier begins,
where the suites leave a core idle. Each build takes a lock on its binary, so a suite that needs a tool
still being built waits for it instead of building it twice; anything that fails here is built (and
its failure reported) by the suite itself. Prints what it built and how long it took."""
import os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[0:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "envoy")]

import charts, controlplanes, epp, istio, oci  # noqa: E402  (the suites pin the versions)
from harness import crds, gotools  # noqa: E402


def timed(what, fn):
    started = time.time()
    try:
        ok = fn()
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        ok = str(e)
    print(f"{what}: {'ok' if ok is True else ok or 'failed'}, {time.time() - started:.0f} s", flush=True)


def tool(spec):
    return subprocess.run([os.path.join(ROOT, "scripts", "go-tool.sh"), spec], capture_output=True).returncode == 0


timed("CRD modules", lambda: all(gotools.module_dir(m, v) for m, v, _ in crds.SOURCES))
for spec in (controlplanes.EGCTL, charts.HELM, oci.REGISTRY, oci.CRANE):
    timed(spec, lambda spec=spec: tool(spec))
timed("tests/oci/wasmfetch", lambda: oci.wasmfetch()[0] is not None)
timed("tests/istio", lambda: istio.generator()[0] is not None)
timed("tests/epp", lambda: epp.binary()[0] is not None)
