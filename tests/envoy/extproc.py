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
    def __init__(self, config):
        self.port, self.metrics_port = free_port(), free_port()
        self.dir = tempfile.mkdtemp(prefix="toolfit-extproc-")
        self.cfg = os.path.join(self.dir, "config.json")
        open(self.cfg, "w").write(json.dumps(config))
        self.log = open(os.path.join(self.dir, "extproc.log"), "w+")
        self.proc = subprocess.Popen([EXTPROC, "--config", self.cfg, "--listen", f"127.0.0.1:{self.port}",
                                      "--metrics-listen", f"127.0.0.1:{self.metrics_port}"], stdout=self.log, stderr=subprocess.STDOUT)
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
        status, _, _ = e.request("GET", "/health")
        check(f"{mode}: GET /health passes", status == 200 and last(rec).get("path") == "/health")
        _, text = p.get("/metrics")
        check(f"{mode}: counters under the Wasm filter's Prometheus names",
              metric(text, "toolfit_requests_rewritten", "chat") == 1 and metric(text, "toolfit_requests_seen", "chat") == 2
              and metric(text, "toolfit_requests_unchanged", "chat") == 1 and "# TYPE toolfit_rewrite_us histogram" in text, text[:1500])
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
    bad_config()
    p = subprocess.run([e2e.ENVOY, "--mode", "validate", "-c", "envoy/extproc.yaml"], cwd=ROOT, capture_output=True, text=True)
    check("envoy --mode validate envoy/extproc.yaml", p.returncode == 0, p.stdout[-500:] + p.stderr[-500:])


if __name__ == "__main__":
    main()
    summary("extproc")
