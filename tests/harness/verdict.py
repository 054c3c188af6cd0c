"""How every Python suite records its checks and closes: one line per check, then one
'what: N passed, M failed' line, and an exit status that is 0 only when checks ran and none failed. A
suite that ran no check has said nothing about toolfit: it fails."""
import sys, traceback

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


def run(what, main):
    """Runs a suite's `main` and closes on its checks. Whatever ends `main` early (an exception, an exit
    however it was asked for, ^C) is a failed check: a suite stopped half-way has not passed."""
    try:
        main()
    except BaseException as e:  # noqa: B036 (SystemExit and KeyboardInterrupt too, by design)
        why = f"exit {e.code!r}" if isinstance(e, SystemExit) else traceback.format_exc()[-2000:]
        check(f"the {what} suite ran to the end", False, why)
    summary(what)
