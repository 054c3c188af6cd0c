"""The Go side of the harness: the control planes' own code, built from modules on the Go module proxy
at the versions a test directory's go.mod pins, cached under ~/.cache/toolfit/go (modules, build
cache, binaries). scripts/go-tool.sh does the same for a `go install`-able command.

    exe, err = build("tests/epp", "epp", ["sigs.k8s.io/gateway-api-inference-extension/cmd/epp"])
    exe, err = build("tests/istio", "istiogen", test=True)     # a package's test binary
    root = module_dir("istio.io/api", "v1.32.0")               # a module's files
"""
import fcntl, glob, hashlib, json, os, subprocess

from harness.paths import ROOT

GO = os.path.expanduser(os.environ.get("TOOLFIT_GO", "~/.cache/toolfit/go"))


def env():
    """The environment every Go command here runs in: the shared caches, the machine's own Go (no
    toolchain download), dependencies resolved from go.mod and go.sum."""
    return dict(os.environ, GOMODCACHE=os.path.join(GO, "mod"), GOCACHE=os.path.join(GO, "build"), GOTOOLCHAIN="local",
                GOFLAGS="-mod=mod -buildvcs=false")


def build(src, name, packages=(".",), test=False):
    """Builds `packages` of the module in `src` (relative to the repository) once per content of its
    go.mod, go.sum and Go files; returns (path of the binary, "") or (None, the compiler's words)."""
    src = os.path.join(ROOT, src)
    files = ["go.mod", "go.sum"] + sorted(os.path.basename(f) for f in glob.glob(os.path.join(src, "*.go")))
    key = hashlib.sha256(b"".join(open(os.path.join(src, f), "rb").read() for f in files)).hexdigest()[:16]
    out = os.path.join(GO, "bin", f"{name}-{key}" + (".test" if test else ""))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    # one build at a time per binary: scripts/go-prefetch.py may be building it already
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(out):
            tmp = f"{out}.{os.getpid()}.tmp"
            cmd = ["go", "test", "-c", "-o", tmp] if test else ["go", "build", "-o", tmp]
            p = subprocess.run(cmd + list(packages), cwd=src, env=env(), capture_output=True, text=True)
            if p.returncode != 0:
                return None, p.stderr[-800:]
            os.replace(tmp, out)
    return out, ""


def module_dir(module, version):
    """The module's directory in the cache, downloaded from the Go module proxy when missing."""
    p = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], capture_output=True, text=True, env=env(), cwd=os.path.expanduser("~"))
    info = json.loads(p.stdout or "{}")
    if p.returncode != 0 or "Dir" not in info:
        raise RuntimeError(f"go mod download {module}@{version}: {info.get('Error') or p.stderr[-300:]}")
    return info["Dir"]
