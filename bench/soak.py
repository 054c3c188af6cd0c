#!/usr/bin/env python3
"""make soak: toolfit under a steady mixed load for a long time, while faults are injected on a
schedule, through each delivery (the Wasm filter in envoy/envoy.yaml, toolfit-extproc beside
envoy/extproc.yaml). Not in `make test`: an hour per delivery by default.

The load: 8 clients sending the mixes of bench/load.py without pause to an upstream that answers after
0-200 ms. Every 20 s the next fault of the schedule runs for 10 s:
  upstream-reset   the upstream closes a third of its connections without an answer
  upstream-5xx     the upstream answers a third of the requests 503
  oversized        requests one byte past max_body_bytes (forwarded unread, skipped_too_large)
  malformed        truncated JSON bodies (forwarded as they came, skipped_not_json)
  flood            requests naming 200 KB tool names, as fast as they go (the log's byte budget)
  burst            20 requests of 14 MB at once, held by the slow upstream (max_held_bytes)
  restart          (ext_proc) the processor killed and started again on its port
Recorded: every request not answered 200 with Envoy's response flags (the ones the schedule's upstream
faults cause are expected; any other is not), every upstream body against what it must be (the
client's bytes, or exactly the engine's rewrite of them), VM traps and processor exits, and the memory
(Envoy's and the processor's resident size, the VM gauges) every 10 s: after the first quarter it must
not grow. Prints one table per delivery and exits 1 if any body was other than expected, anything
crashed, a non-200 was unexpected, or memory grew.
  python3 bench/soak.py [--seconds N] [--delivery wasm|ext_proc]..."""
import hashlib, http.client, json, os, random, re, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from harness import delivery, runner  # noqa: E402
from harness.paths import load as load_file  # noqa: E402
import load  # noqa: E402  (the mixes, the non-200 access log, rss_kb)

MAX_BODY = 16 << 20
SCHEDULE = ["upstream-reset", "upstream-5xx", "oversized", "malformed", "flood", "burst", "restart"]


class Upstream:
    """Answers after 0-200 ms; `fault` makes it reset or answer 503 for a third of the requests. Records
    each body's digest."""

    def __init__(self):
        self.fault, self.digests, self.lock = None, [], threading.Lock()
        rnd = random.Random(11)
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body, _ = runner.echo_upstream.Recorder.read_body(self)
                with outer.lock:
                    outer.digests.append(hashlib.sha256(body).hexdigest())
                    roll, delay = rnd.random(), rnd.random() * 0.2
                time.sleep(delay)
                if outer.fault == "upstream-reset" and roll < 0.33:
                    self.close_connection = True
                    self.connection.close()
                    return
                code = 503 if outer.fault == "upstream-5xx" and roll < 0.33 else 200
                data = b'{"ok": true}'
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.port = runner.free_port()
        self.srv = ThreadingHTTPServer(("127.0.0.1", self.port), H)
        self.srv.daemon_threads = True
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


def big(i):
    """A 14 MB request of tool schemas that need a rewrite: tests/envoy/hostile.py's."""
    return load_file("tests/envoy/hostile.py").big_body(i, 14 << 20)


def soak(kind, seconds):
    runner.use_venv_envoy()
    non_200 = os.path.join(tempfile.mkdtemp(prefix="toolfit-soak-"), "non-200.jsonl")
    runner.CONFIG_EDITS[:] = [load.with_non_200_log(non_200)]
    up = Upstream()
    cfg = {"profile": "llama-cpp", "framing": "exact", "max_body_bytes": MAX_BODY}
    e = delivery.start(kind, cfg, up.port)
    if not e.ready:
        print(e.logs()[-2000:])
        return False
    mixes = [(40, "/v1/chat/completions", "openai-chat", load.openai(load.catalog("filesystem.json", 5), 2000)),
             (25, "/v1/chat/completions", "openai-chat", runner.chat_body(runner.FINE)),
             (15, "/v1/chat/completions", "openai-chat", load.openai(load.catalog("azure-all.json", 40), 200_000)),
             (8, "/api/chat", "ollama", json.dumps({"model": "m", "messages": [], "format": runner.NEEDS_FIX}).encode())]
    bursts = [big(i) for i in range(20)]
    oversized = runner.chat_body(runner.NEEDS_FIX)[:-1] + b', "pad": "' + b"x" * MAX_BODY + b'"}'
    malformed = runner.chat_body(runner.NEEDS_FIX)[:-20]
    flood = json.dumps({"model": "m", "messages": [], "tools": [runner.tool("n" * 200_000, runner.NEEDS_FIX)]}).encode()
    # what each body must reach the upstream as: its own bytes, or the engine's rewrite of it
    allowed = {}
    for _, _, fmt, b in mixes:
        allowed[hashlib.sha256(b).hexdigest()] = {hashlib.sha256(b).hexdigest(), hashlib.sha256(runner.cli(b, fmt)).hexdigest()}
    for b in bursts:
        allowed[hashlib.sha256(b).hexdigest()] = {hashlib.sha256(b).hexdigest(), hashlib.sha256(runner.cli(b)).hexdigest()}
    for b in (oversized, malformed):
        allowed[hashlib.sha256(b).hexdigest()] = {hashlib.sha256(b).hexdigest()}
    allowed[hashlib.sha256(flood).hexdigest()] = {hashlib.sha256(flood).hexdigest(), hashlib.sha256(runner.cli(flood)).hexdigest()}
    pick = random.Random(7)
    weights = [m[0] for m in mixes]
    state = {"fault": None, "stop": False}
    counts, lock = {"sent": 0, "statuses": {}}, threading.Lock()

    def send(path, body, conn):
        try:
            conn.request("POST", path, body=body, headers={"content-type": "application/json"})
            r = conn.getresponse()
            r.read()
            return r.status, conn
        except (OSError, http.client.HTTPException) as ex:
            return type(ex).__name__, http.client.HTTPConnection("127.0.0.1", e.port, timeout=120)

    def note(status):
        with lock:
            counts["sent"] += 1
            counts["statuses"][status] = counts["statuses"].get(status, 0) + 1

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", e.port, timeout=120)
        while not state["stop"]:
            f = state["fault"]
            if f == "oversized":
                path, body = "/v1/chat/completions", oversized
            elif f == "malformed":
                path, body = "/v1/chat/completions", malformed
            elif f == "flood":
                path, body = "/v1/chat/completions", flood
            else:
                _, path, _, body = mixes[pick.choices(range(len(mixes)), weights=weights)[0]]
            status, conn = send(path, body, conn)
            note(status)

    pids = lambda: {"Envoy": e.proc.pid, **({"toolfit-extproc": e.processor.proc.pid} if kind == "ext_proc" else {})}
    memory, restarts, t0 = [], 0, time.time()
    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    step, next_fault, next_sample = 0, t0 + 10, t0
    try:
        while time.time() - t0 < seconds:
            now = time.time()
            if now >= next_sample:
                prom = e.prom()
                gauges = [int(v) for v in re.findall(r"^toolfit_held_bytes(?:\{[^}]*\})? (\d+)", prom, re.M)]
                memory.append((now - t0, {n: load.rss_kb(p) for n, p in pids().items()}, max(gauges, default=0)))
                next_sample = now + 10
            if now >= next_fault:
                fault = SCHEDULE[step % len(SCHEDULE)]
                step += 1
                next_fault = now + 20
                if fault == "restart" and kind != "ext_proc":
                    fault = None
                state["fault"] = up.fault = fault if fault in ("upstream-reset", "upstream-5xx", "oversized", "malformed", "flood") else None
                if fault == "burst":
                    conns = [http.client.HTTPConnection("127.0.0.1", e.port, timeout=120) for _ in bursts]
                    ts = [threading.Thread(target=lambda c=c, b=b: note(send("/v1/chat/completions", b, c)[0])) for c, b in zip(conns, bursts)]
                    for t in ts:
                        t.start()
                    for t in ts:
                        t.join()
                if fault == "restart":
                    p = e.processor
                    p.proc.kill()
                    time.sleep(1)
                    e.processor = delivery.Processor(cfg, ports=(p.port, p.metrics_port))
                    restarts += 1
                threading.Timer(10, lambda: (state.__setitem__("fault", None), setattr(up, "fault", None))).start()
            time.sleep(0.2)
    finally:
        state["stop"] = True
        for t in threads:
            t.join()
    time.sleep(1.5)
    logs = e.logs()
    e.stop()
    # the bodies
    sent_allowed = set().union(*allowed.values())
    other = [d for d in up.digests if d not in sent_allowed]
    traps = len(re.findall(r"failed: Uncaught|RuntimeError|panicked", logs))
    logged = [json.loads(l) for l in open(non_200)] if os.path.exists(non_200) else []
    # upstream faults explain their own non-200s: the upstream's 503 (via_upstream), a reset (UC, URX, UF, UR);
    # anything else (a VM trap's wasm_fail_stream, a local reply) is toolfit's
    unexplained = [x for x in logged if not (x.get("details") == "via_upstream" or set((x.get("flags") or "").split(",")) & {"UC", "URX", "UF", "UR"})]
    warm = [m for m in memory if m[0] >= seconds / 4]
    grew = {}
    for n in pids():
        first, last = [m[1].get(n, 0) for m in warm[: max(1, len(warm) // 4)]], [m[1].get(n, 0) for m in warm[-max(1, len(warm) // 4):]]
        grew[n] = (max(first, default=0), max(last, default=0))
    flat = all(b <= a * 1.25 + 32 * 1024 for a, b in grew.values())
    print(f"\n{kind}: {seconds:.0f} s, {counts['sent']} requests, statuses {counts['statuses']}, {restarts} processor restarts")
    print(f"  upstream bodies: {len(up.digests)}, other than expected: {len(other)}")
    print(f"  VM traps or panics in the logs: {traps}")
    print(f"  not 200: {len(logged)} ({len(logged) - len(unexplained)} from the upstream's injected faults, {len(unexplained)} other)")
    for x in unexplained[:10]:
        print(f"    {json.dumps(x)}")
    for n, (a, b) in grew.items():
        print(f"  {n} resident: {a / 1024:.0f} MiB after warm-up, {b / 1024:.0f} MiB at the end; every 10 s: " + " ".join(f"{m[1].get(n, 0) / 1024:.0f}" for m in memory))
    print("  held bytes (max over VMs) every 10 s, MiB: " + " ".join(f"{m[2] / 2**20:.0f}" for m in memory))
    ok = not other and not traps and not unexplained and flat
    print(f"soak ({kind}): {'ok' if ok else 'FAILED'}")
    return ok


def main():
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv[1:-1] else 3600
    kinds = [sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--delivery"] or list(delivery.DELIVERIES)
    results = [soak(k, seconds) for k in kinds]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
