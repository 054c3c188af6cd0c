"""How every Python suite records its checks and closes: one line per check, then one
'what: N passed, M failed' line, and an exit status that is 0 only when checks ran and none failed. A
suite that ran no check has said nothing about toolfit: it fails."""
import sys

# one entry per check of this process, whichever module made it
results = []
# what every check's name starts with while a suite runs through a delivery other than the Wasm filter
# (delivery.label)
LABEL = ""


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok    " if ok else "FAIL  ") + LABEL + name + ("" if ok or not detail else f": {detail}"), flush=True)


def close(what, results, suffix=""):
    """Prints the closing line for `results` (one truthy or falsy entry per check) and exits."""
    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print(f"{what}: {passed} passed, {failed} failed{suffix}", flush=True)
    if not results:
        print(f"{what}: ran no check, which fails the suite", flush=True)
    sys.exit(0 if results and not failed else 1)


def summary(what):
    """Closes the suite on this process's checks."""
    close(what, results)
