#!/usr/bin/env python3
"""toolfit as an Envoy external processor: target/release/toolfit-extproc behind a real Envoy 1.40
(envoy/extproc.yaml, ports substituted) in front of the recording upstream, in both request body
modes (BUFFERED and FULL_DUPLEX_STREAMED). The same checks as the Wasm filter's where they apply: the
rewrite equals what the engine writes, exact Content-Length, untouched bodies byte for byte, counters
under the same Prometheus names; plus the processor's own: a request toolfit does not read never
reaches it past its headers, a dead processor lets requests through unchanged (failure_mode_allow),
a bad configuration refuses to start naming the key. Prints one line per check and 'N passed, M failed'."""
import http.client, json, os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (puts envoy/ on the path too)
from e2e import ROOT, check, free_port, summary, cli, chat_body, last, NEEDS_FIX, FINE  # noqa: E402
import echo_upstream  # noqa: E402

EXTPROC = os.path.join(ROOT, "target", "release", "toolfit-extproc")


class Processor(e2e.Process):
    def __init__(self, config, flags=(), ports=None):
        self.port, self.metrics_port = ports or (free_port(), free_port())
        self.dir = tempfile.mkdtemp(prefix="toolfit-extproc-")
        self.cfg = os.path.join(self.dir, "config.json")
        open(self.cfg, "w").write(json.dumps(config))
        self.log = open(os.path.join(self.dir, "extproc.log"), "w+")
        self.proc = subprocess.Popen([EXTPROC, "--config", self.cfg, "--listen", f"127.0.0.1:{self.port}",
                                      "--metrics-listen", f"127.0.0.1:{self.metrics_port}", *flags], stdout=self.log, stderr=subprocess.STDOUT)
        self.ready = self.wait("/readyz")

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode()

    def wait(self, path, seconds=20):
        end = time.time() + seconds
        while time.time() < end:
            if self.proc.poll() is not None:
                return False
            try:
                if self.get(path)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False



class Envoy(e2e.Envoy):
    """envoy/extproc.yaml with its ports and the request body mode substituted."""

    def __init__(self, upstream_port, processor_port, body_mode="BUFFERED"):
        self.port, self.admin = free_port(), free_port()
        text = open(os.path.join(ROOT, "envoy", "extproc.yaml")).read()
        text = text.replace("port_value: 9901", f"port_value: {self.admin}").replace("port_value: 10000", f"port_value: {self.port}")
        text = text.replace("port_value: 8080", f"port_value: {upstream_port}").replace("port_value: 50051", f"port_value: {processor_port}")
        text = text.replace("request_body_mode: BUFFERED", f"request_body_mode: {body_mode}")
        if body_mode == "FULL_DUPLEX_STREAMED":
            # Envoy requires it in this mode: a body that ends in trailers ends there
            text = text.replace("request_trailer_mode: SKIP", "request_trailer_mode: SEND")
        self.start(text)


def metric(text, name, route, profile="llama-cpp"):
    m = re.search(rf'^{name}\{{route="{route}",profile="{profile}"\}} (\d+)', text, re.M)
    return int(m.group(1)) if m else None


def delivery(mode, rec, up_port):
    p = Processor({"profile": "llama-cpp", "framing": "exact", "max_body_bytes": 16777216})
    check(f"{mode}: toolfit-extproc starts and is ready", p.ready, p.logs()[-2000:])
    e = Envoy(up_port, p.port, mode)
    check(f"{mode}: envoy starts with envoy/extproc.yaml", e.ready, e.logs()[-2000:])
    if not (p.ready and e.ready):
        p.stop()
        e.stop()
        return
    try:
        body = chat_body(NEEDS_FIX)
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        r = last(rec)
        want = cli(body, "openai-chat")
        # BUFFERED: Envoy holds the headers for the body, which leaves with its exact length;
        # FULL_DUPLEX_STREAMED: Envoy streams the body on and drops Content-Length itself (chunked)
        exact_or_absent = lambda r, n: r["headers"].get("content-length") == str(n) if mode == "BUFFERED" else r["headers"].get("content-length") in (None, str(n))
        check(f"{mode}: a chat request is rewritten as the engine says, Content-Length exact or absent",
              status == 200 and r.get("body") == want and want != body and exact_or_absent(r, len(want)),
              f"status {status} framing {r.get('framing')} cl {r.get('headers', {}).get('content-length')} len {len(want)} got {r.get('body', b'')[:200]!r}")
        for path, b in [("/v1/chat/completions", chat_body(FINE)), ("/v1/embeddings", b'{"input": "x",  "tools": [1]}')]:
            status, _, _ = e.request("POST", path, b)
            r = last(rec)
            check(f"{mode}: untouched POST {path} byte-identical", status == 200 and r.get("body") == b and exact_or_absent(r, len(b)))
        # a body past tonic's default 4 MiB message size, rewritten all the same
        pad = {"role": "user", "content": "x" * (6 << 20)}
        big = json.dumps({"model": "m", "messages": [pad], "tools": [e2e.tool("lookup", NEEDS_FIX)]}).encode()
        status, _, _ = e.request("POST", "/v1/chat/completions", big)
        check(f"{mode}: a 6 MiB body is rewritten as the engine says", status == 200 and last(rec).get("body") == cli(big, "openai-chat") != big, f"status {status}")
        # a client body in 1-byte chunks
        status, _, _ = e.request("POST", "/v1/chat/completions", chunks=[bytes([c]) for c in body])
        check(f"{mode}: a body sent in 1-byte chunks is rewritten", status == 200 and last(rec).get("body") == want, f"status {status}")
        status, _, _ = e.request("GET", "/health")
        check(f"{mode}: GET /health passes", status == 200 and last(rec).get("path") == "/health")
        _, text = p.get("/metrics")
        check(f"{mode}: counters under the Wasm filter's Prometheus names",
              metric(text, "toolfit_requests_rewritten", "chat") == 3 and metric(text, "toolfit_requests_seen", "chat") == 4
              and metric(text, "toolfit_requests_unchanged", "chat") == 1 and "# TYPE toolfit_rewrite_us histogram" in text, text[:1500])
        # a client that goes away mid-body: the stream ends, the processor goes on
        import socket
        with socket.create_connection(("127.0.0.1", e.port), timeout=5) as sk:
            sk.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n" + body[:50])
        time.sleep(0.5)
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        end, active = time.time() + 5, None
        while time.time() < end and active != "0":  # streams close just after their response
            m = re.search(r"^toolfit_extproc_streams_active (\d+)", p.get("/metrics")[1], re.M)
            active = m and m.group(1)
            time.sleep(0.1)
        check(f"{mode}: a client gone mid-body: no stream left open, the next request rewritten",
              status == 200 and last(rec).get("body") == want and active == "0", f"status {status}, active {active}")
        # a dead processor: requests go on unchanged (failure_mode_allow: true)
        p.stop()
        body = chat_body(NEEDS_FIX)
        n = len(rec)
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        if mode == "BUFFERED":
            check(f"{mode}: processor down: the request goes on unchanged", status == 200 and last(rec).get("body") == body, f"status {status}")
        else:
            # Envoy fails open in this mode only until the first body piece went to the processor
            # (envoyproxy/envoy#41276): the request fails whole, nothing half-sent reaches the upstream.
            # The README says to use BUFFERED where fail-open matters.
            check(f"{mode}: processor down: a 5xx, and nothing reaches the upstream", status >= 500 and len(rec) == n, f"status {status}, {len(rec) - n} upstream requests")
    finally:
        p.stop()
        e.stop()


class SlowUpstream(echo_upstream.Recorder):
    """The recording upstream, answering after 0.3 s: each request keeps its ext_proc stream open."""

    def handle_any(self):
        time.sleep(0.3)
        super().handle_any()

    do_GET = do_POST = handle_any


def under_load():
    """Streams past --max-streams, and the processor killed and restarted while requests go on
    (BUFFERED): every request answered 200, every upstream body the rewrite or the original."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from http.server import ThreadingHTTPServer
    port = free_port()
    cls = type("S", (SlowUpstream,), {"records": []})
    srv = ThreadingHTTPServer(("127.0.0.1", port), cls)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    cfg = {"profile": "llama-cpp", "framing": "exact", "max_body_bytes": 16777216}
    p = Processor(cfg, ["--max-streams", "2"])
    e = Envoy(port, p.port)
    body = chat_body(NEEDS_FIX)
    want = cli(body, "openai-chat")
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda _: e.request("POST", "/v1/chat/completions", body)[0], range(16)))
        bodies = [r["body"] for r in cls.records]
        _, text = p.get("/metrics")
        refused = int(re.search(r"^toolfit_extproc_streams_refused (\d+)", text, re.M).group(1))
        check("16 concurrent requests over --max-streams 2: all answered, each rewritten or passed unchanged, the excess refused and counted",
              got == [200] * 16 and all(b in (want, body) for b in bodies) and len(bodies) == 16 and refused > 0 and bodies.count(want) >= 2,
              f"statuses {sorted(set(got))}, {bodies.count(want)} rewritten, {refused} refused")
        # killed and restarted on the same ports while a client keeps sending
        statuses, stop = [], threading.Event()

        def client():
            while not stop.is_set():
                statuses.append(e.request("POST", "/v1/chat/completions", body)[0])
        n = len(cls.records)
        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        p.proc.kill()
        time.sleep(1.0)
        p2 = Processor(cfg, ["--max-streams", "64"], ports=(p.port, p.metrics_port))
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join()
        later = [r["body"] for r in cls.records[n:]]
        check("processor killed and restarted under load: 0 requests lost, every body rewritten or unchanged, rewrites again after the restart",
              p2.ready and statuses and all(s == 200 for s in statuses) and all(b in (want, body) for b in later) and later[-1] == want,
              f"{len(statuses)} requests, statuses {sorted(set(statuses))}, last rewritten {later[-1:] == [want]}")
        p2.stop()
    finally:
        e.stop()
        p.stop()
        srv.shutdown()


def too_slow(rec, up_port):
    """A processor slower than its message timeout: the stream closes, the request goes on unchanged."""
    p = Processor({"profile": "llama-cpp", "framing": "exact"}, ["--message-timeout-ms", "1"])
    e = Envoy(up_port, p.port)
    try:
        body = chat_body(NEEDS_FIX) + b" " * (8 << 20)  # takes well over 1 ms to read
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("a message over --message-timeout-ms: stream closed, the request goes on unchanged, said in the log",
              status == 200 and last(rec).get("body") == body and "over --message-timeout-ms" in p.logs(), f"status {status} {p.logs()[-300:]}")
    finally:
        e.stop()
        p.stop()


def bad_config():
    p = Processor({"profile": "llama-cpp", "max_body_bytez": 5})
    check("an unknown configuration key refuses to start, naming it", not p.ready and p.proc.wait(10) == 2 and "max_body_bytez" in p.logs(), p.logs()[-500:])
    p = Processor({"profile": "llama-cpp", "limits": {"max_depth": "deep"}})
    check("a bad value refuses to start, naming its place", not p.ready and p.proc.wait(10) == 2 and "limits.max_depth" in p.logs(), p.logs()[-500:])
    p = Processor({"profile": "openai-strict", "framing": "exact", "on_invalid_tool_call": "reject"})
    check("what this host cannot do (reject) refuses to start, saying so", not p.ready and p.proc.wait(10) == 2 and "not supported by toolfit-extproc" in p.logs(), p.logs()[-500:])


class Delivered:
    """An ext_proc Envoy as the response suite sees an Envoy: its listener, and the counters (the
    processor's /metrics instead of Envoy's stats)."""

    def __init__(self, envoy, processor):
        self.envoy, self.processor, self.port, self.ready = envoy, processor, envoy.port, envoy.ready

    def prom(self):
        return self.processor.get("/metrics")[1]

    def logs(self):
        """Envoy's log and the messages of the processor's JSON log lines."""
        msgs = []
        for line in self.processor.logs().splitlines():
            try:
                msgs.append(json.loads(line)["msg"])
            except (ValueError, KeyError, TypeError):
                msgs.append(line)
        return self.envoy.logs() + "\n".join(msgs)


def response_suite():
    """tests/envoy/responses.py's parts, every one that applies, through ext_proc."""
    import threading
    from http.server import ThreadingHTTPServer
    import responses
    port = free_port()
    srv = ThreadingHTTPServer(("127.0.0.1", port), responses.Upstream)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    p = Processor({"profile": "llama-cpp", "routes": responses.ROUTES})
    e = Envoy(port, p.port)
    d = Delivered(e, p)
    check("responses via ext_proc: processor and envoy start", p.ready and e.ready, d.logs()[-1500:])
    try:
        responses.run_parts(d, responses.PARTS, "ext_proc: ")
    finally:
        e.stop()
        p.stop()
        srv.shutdown()


def main():
    e2e.use_venv_envoy()
    if not os.path.exists(EXTPROC):
        sys.exit(f"missing {EXTPROC}: run cargo build --release --workspace")
    up_port = free_port()
    _, rec = echo_upstream.serve(up_port)
    for mode in ("BUFFERED", "FULL_DUPLEX_STREAMED"):
        delivery(mode, rec, up_port)
    response_suite()
    under_load()
    too_slow(rec, up_port)
    bad_config()
    p = subprocess.run([e2e.ENVOY, "--mode", "validate", "-c", "envoy/extproc.yaml"], cwd=ROOT, capture_output=True, text=True)
    check("envoy --mode validate envoy/extproc.yaml", p.returncode == 0, p.stdout[-500:] + p.stderr[-500:])


if __name__ == "__main__":
    main()
    summary("extproc")
