"""Where the built artefacts are, and the repository's Python modules outside the harness (the demo's
upstream in envoy/, the tiny-model writer in scripts/, a suite's pins), loaded by file: no suite edits
`sys.path` (the harness itself is found on PYTHONPATH, which the Makefile and scripts/suites.py set)."""
import importlib.util, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLFIT = os.path.join(ROOT, "target", "release", "toolfit")
WASM = os.path.join(ROOT, "dist", "toolfit.wasm")
# the same filter with the test-trap feature (test_trap_header): for the failure-policy test only
TEST_WASM = os.path.join(ROOT, "dist", "toolfit-test.wasm")
EXTPROC = os.path.join(ROOT, "target", "release", "toolfit-extproc")
CORPUS = os.path.join(ROOT, "tests", "corpus")


def load(path):
    """The module at `path` (relative to the repository), loaded once, as it would be run: its own
    directory importable while it loads (a suite imports its siblings so)."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        return sys.modules[name]
    file = os.path.join(ROOT, path)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    own = os.path.dirname(file)
    sys.path.insert(0, own)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(own)
    return module


def readme_request():
    """deploy/README.md's example request (the body of its `curl ... -d @- <<'EOF'`), as bytes: the
    request every deploy/ suite sends through what it runs."""
    text = open(os.path.join(ROOT, "deploy", "README.md")).read()
    return re.search(r"-d @- <<'EOF'\n(.*?)\n\s*EOF", text, re.S).group(1).encode()
