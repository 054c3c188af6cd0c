"""npm packages the tests and benchmarks use, installed once into ~/.cache/toolfit/npm."""
import hashlib, os, subprocess

NPM = os.path.expanduser("~/.cache/toolfit/npm")


def ensure(packages):
    """Installs `packages` (pinned `name@version`) unless this exact set is already there; returns
    the node_modules directory."""
    key = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:16]
    stamp = os.path.join(NPM, f".stamp-{key}")
    if not os.path.exists(stamp):
        os.makedirs(NPM, exist_ok=True)
        if not os.path.exists(os.path.join(NPM, "package.json")):
            open(os.path.join(NPM, "package.json"), "w").write('{"name": "toolfit-test-tools", "private": true}\n')
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", *packages], cwd=NPM, check=True, capture_output=True)
        open(stamp, "w").write(" ".join(packages))
    return os.path.join(NPM, "node_modules")
