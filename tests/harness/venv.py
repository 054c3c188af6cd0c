"""The suites' own Python environments: one venv per pinned set of packages under ~/.cache/toolfit,
rebuilt when the pins change (judges, SDK clients, agents, peers in the benchmarks)."""
import os, shutil, subprocess, sys


def cache_dir(name):
    d = os.path.join(os.environ.get("TOOLFIT_CACHE", os.path.expanduser("~/.cache/toolfit")), name)
    os.makedirs(d, exist_ok=True)
    return d


def venv(name, pins, no_deps=()):
    """A venv under ~/.cache/toolfit/NAME holding exactly `pins` (and `no_deps`, installed without their
    requirements), rebuilt when they change; returns its python."""
    d = cache_dir(name)
    py = os.path.join(d, "venv", "bin", "python")
    stamp = os.path.join(d, "venv", "pins")
    want = "\n".join(list(pins) + list(no_deps))
    if not (os.path.exists(stamp) and open(stamp).read() == want):
        shutil.rmtree(os.path.join(d, "venv"), ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", os.path.join(d, "venv")], check=True)
        pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run(pip + list(pins), check=True)
        if no_deps:
            subprocess.run(pip + ["--no-deps", *no_deps], check=True)
        open(stamp, "w").write(want)
    return py
