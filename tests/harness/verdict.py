"""How every Python suite closes: one 'what: N passed, M failed' line, and an exit status that is 0 only
when checks ran and none failed. A suite that ran no check has said nothing about toolfit: it fails."""
import sys


def close(what, results, suffix=""):
    """Prints the closing line for `results` (one truthy or falsy entry per check) and exits."""
    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print(f"{what}: {passed} passed, {failed} failed{suffix}", flush=True)
    if not results:
        print(f"{what}: ran no check, which fails the suite", flush=True)
    sys.exit(0 if results and not failed else 1)
