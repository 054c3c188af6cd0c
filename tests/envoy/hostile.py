#!/usr/bin/env python3
"""Hostile load through a real Envoy with toolfit (both deliveries): what one client, or many at once,
can do to toolfit, and what toolfit must keep doing under it. Prints 'N passed, M failed'.

- Many large requests at once, held by a slow upstream: the requests in flight share `max_held_bytes`
  (the Wasm VM's, or the processor's). Every request is answered 200, each body reaches the upstream
  either rewritten exactly as the CLI rewrites it or byte for byte as it came (forwarded unread,
  `skipped_over_budget`), the held gauge never passes the budget, the VM never traps, and afterwards
  toolfit still rewrites. (Without the budget, 100 such requests trapped the VM on "memory allocation
  failed" and toolfit stayed off for that worker: issue 57.)
"""
import hashlib, json, os, re, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import delivery, verdict
from harness.runner import NEEDS_FIX, chat_body, cli, echo_upstream, free_port, metric
from harness.verdict import check, run

# the load: N requests of about MB megabytes each, all in flight at once
N = int(os.environ.get("HOSTILE_N", "100"))
MB = int(os.environ.get("HOSTILE_MB", "14"))
BUDGET = 256 << 20  # max_held_bytes' default
# what Envoy logs when the VM traps (seen with the module before max_held_bytes)
TRAP = re.compile(r"failed: Uncaught|memory allocation of \d+ bytes failed|RuntimeError")


def big_body(i, size):
    """A request that is mostly tool schemas needing a rewrite (`\\p{Lu}` patterns, which llama.cpp
    refuses), about `size` bytes, and unique by `i` (no cache hit makes it cheap)."""
    pad = "d" * 6000
    tools, n = [], 0
    while n < size:
        t = {"type": "function", "function": {"name": f"t{i}_{len(tools)}", "description": pad,
                                              "parameters": {"type": "object", "properties": {"k": {"type": "string", "pattern": "^\\p{Lu}[a-z]+$"}}}}}
        tools.append(t)
        n += len(pad) + 160
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": f"request {i}"}], "tools": tools}).encode()


class Held:
    """An upstream that records each body's digest and answers nobody until `release` is set (or
    `seconds` pass): every request stays in flight together."""

    def __init__(self, seconds=120):
        self.release = threading.Event()
        self.digests, self.lock, self.arrived = [], threading.Lock(), threading.Semaphore(0)
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body, _ = echo_upstream.Recorder.read_body(self)  # the demo upstream's reader: length or chunked
                with outer.lock:
                    outer.digests.append(hashlib.sha256(body).hexdigest())
                outer.arrived.release()
                outer.release.wait(seconds)
                data = b'{"ok": true}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.port = free_port()
        # a backlog for every request at once (the default 5 drops connections a burst opens)
        server = type("S", (ThreadingHTTPServer,), {"request_queue_size": 1024})
        self.srv = server(("127.0.0.1", self.port), H)
        self.srv.daemon_threads = True
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


def held_gauge(e, kind):
    """What toolfit's requests in flight hold now: the largest VM's (Wasm), the processor's (ext_proc)."""
    text = e.prom()
    found = [int(v) for v in re.findall(r"^toolfit_held_bytes(?:\{[^}]*\})? (\d+)", text, re.M)]
    return max(found) if found else None


def many_large_at_once(kind):
    up = Held()
    e = delivery.start(kind, {"profile": "llama-cpp", "max_body_bytes": 16 << 20}, up.port)
    try:
        if not e.ready:
            check("toolfit starts for the load", False, e.logs()[-1500:])
            return
        t0 = time.time()
        bodies = [big_body(i, MB << 20) for i in range(N)]
        statuses, peak = [], [0]

        def send(b):
            try:
                return e.request("POST", "/v1/chat/completions", b)[0]
            except OSError as x:
                return repr(x)

        sampling = threading.Event()

        def sample():  # the held gauge, all through the load
            while not sampling.is_set():
                peak[0] = max(peak[0], held_gauge(e, kind) or 0)
                time.sleep(0.25)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        with ThreadPoolExecutor(N) as pool:
            futures = [pool.submit(send, b) for b in bodies]
            # every request reaches the upstream (rewritten or unread) while the others are held
            deadline, arrived = time.time() + 180, 0
            while arrived < N and up.arrived.acquire(timeout=max(0.1, deadline - time.time())):
                arrived += 1
            time.sleep(6)  # the Wasm gauge is written every 5 s
            gauge_during = held_gauge(e, kind)
            up.release.set()
            statuses = [f.result() for f in futures]
        sampling.set()
        sampler.join()
        took = time.time() - t0
        check(f"{N} requests of {MB} MB in flight at once all reach the upstream ({took:.0f} s)", arrived == N, f"{arrived} of {N}")
        check("every one is answered 200", statuses == [200] * N, str(sorted(set(map(str, statuses)))))
        logs = e.logs()
        check("the VM never traps, nothing fails an allocation", not TRAP.search(logs),
              "\n".join(l for l in logs.splitlines() if "failed" in l)[:800])
        p = e.prom()
        rewritten, over = metric(p, "toolfit_requests_rewritten", "chat"), metric(p, "toolfit_skipped_over_budget", "chat")
        if kind == "wasm":
            check(f"each was rewritten or went on unread past the budget ({rewritten} rewritten, {over} over budget)",
                  rewritten >= 1 and over >= 1 and rewritten + over == N, f"rewritten {rewritten} over {over} of {N}")
        else:
            # the processor may also let a message go past its --message-timeout-ms (Envoy then fails
            # open: the body goes on as it came)
            check(f"each was rewritten, went on unread past the budget, or past the message timeout ({rewritten} rewritten, {over} over budget)",
                  rewritten >= 1 and rewritten + over <= N, f"rewritten {rewritten} over {over} of {N}")
        # each body as the upstream got it: byte for byte as sent, or exactly the CLI's rewrite
        original = {hashlib.sha256(b).hexdigest(): i for i, b in enumerate(bodies)}
        unread = [d for d in up.digests if d in original]
        changed = [d for d in up.digests if d not in original]
        sent = {original[d] for d in unread}
        expected = {hashlib.sha256(cli(bodies[i])).hexdigest() for i in range(N) if i not in sent}
        # through ext_proc a rewrite that comes after Envoy's message_timeout is counted but not used
        # (Envoy sent the request on as it came); toolfit_extproc_answers_late counts those whose
        # answer could not be sent at all, a lower bound
        late = int((re.search(r"^toolfit_extproc_answers_late (\d+)", p, re.M) or [0, 0])[1]) if kind == "ext_proc" else 0
        # and one that could not start on a core within half its time is declined before any work
        declined = int((re.search(r"^toolfit_extproc_declined_busy (\d+)", p, re.M) or [0, 0])[1]) if kind == "ext_proc" else 0
        counted = len(changed) == rewritten if kind == "wasm" else len(changed) <= rewritten
        check(f"the bodies forwarded unread are the client's bytes, the others exactly the engine's rewrite ({len(changed)} rewritten upstream, "
              f"{rewritten - len(changed)} rewrites unused, {late} answers late, {declined} declined busy)",
              len(unread) + len(changed) == N and counted and set(changed) <= expected, f"unread {len(unread)} changed {len(changed)} late {late}")
        # controls: the body check says no to a body one byte off, the trap check to the line a trap leaves
        tampered = hashlib.sha256(bodies[0] + b" ").hexdigest()
        check("control: a body one byte off is neither the client's nor the engine's", tampered not in original and tampered not in expected)
        check("control: the trap check matches what Envoy logged for the old module's trap",
              TRAP.search("[error] Function: proxy_on_request_body failed: Uncaught RuntimeError: unreachable") is not None)
        check(f"the held gauge stays within max_held_bytes (peak seen {peak[0] >> 20} MiB of {BUDGET >> 20})",
              peak[0] is not None and 0 < peak[0] <= BUDGET and gauge_during is not None, str(peak[0]))
        # after the load: everything given back, and toolfit still rewrites
        del bodies
        time.sleep(6)  # the Wasm gauge is written every 5 s
        check("the held gauge is back to 0 once the responses are done", held_gauge(e, kind) == 0, str(held_gauge(e, kind)))
        status, _, _ = e.request("POST", "/v1/chat/completions", chat_body(NEEDS_FIX))
        check("after the load a request is still rewritten (toolfit is on)", status == 200 and up.digests[-1] == hashlib.sha256(cli(chat_body(NEEDS_FIX))).hexdigest(), str(status))
        seen = metric(e.prom(), "toolfit_requests_seen", "chat")
        check("requests_seen counts every request, the load's and the one after", seen == N + 1, str(seen))
    finally:
        up.release.set()
        e.stop()
        up.srv.shutdown()


def main():
    kinds = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--delivery=")] or list(delivery.DELIVERIES)
    for kind in kinds:
        verdict.LABEL = delivery.label(kind)
        many_large_at_once(kind)
    verdict.LABEL = ""


if __name__ == "__main__":
    run("hostile", main)
