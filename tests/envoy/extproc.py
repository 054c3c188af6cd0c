#!/usr/bin/env python3
"""toolfit as an Envoy external processor, its own checks: target/release/toolfit-extproc behind a real
Envoy 1.40 (envoy/extproc.yaml, ports substituted) in both request body modes (BUFFERED and
FULL_DUPLEX_STREAMED): a 16 MiB body, 1-byte chunks, a client gone mid-body, a dead processor, streams
past --max-streams, the processor killed and restarted under load, a message past its timeout, bad
configurations, TLS and mutual TLS with a rotated certificate. e2e.py, responses.py and faults.py run their checks through this delivery too
(delivery.py). Prints one line per check and 'N passed, M failed'."""
import json, os, re, sys, time

from harness import runner
from harness.delivery import EXTPROC, Processor, ExtprocEnvoy as Envoy
from harness.runner import FINE, NEEDS_FIX, chat_body, cli, echo_upstream, free_port, last
from harness.verdict import check, run


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
        # a body just under max_body_bytes (16 MiB), four times tonic's default message size: rewritten
        pad = {"role": "user", "content": "x" * ((16 << 20) - 4096)}
        big = json.dumps({"model": "m", "messages": [pad], "tools": [runner.tool("lookup", NEEDS_FIX)]}).encode()
        status, _, _ = e.request("POST", "/v1/chat/completions", big)
        check(f"{mode}: a 16 MiB body ({len(big)} bytes) is rewritten as the engine says", status == 200 and len(big) <= 16 << 20
              and last(rec).get("body") == cli(big, "openai-chat") != big, f"status {status}")
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
            # (envoyproxy/envoy#41276): when the dead processor is noticed at the headers, the request
            # goes on unchanged; when only after, it fails whole. Which one is Envoy's timing; either
            # way nothing half-sent or half-rewritten reaches the upstream. docs/extproc.md says to use
            # BUFFERED where fail-open matters.
            whole = status == 200 and len(rec) == n + 1 and last(rec).get("body") == body
            check(f"{mode}: processor down: the request goes on unchanged or fails whole (a 5xx, nothing upstream)",
                  whole or (status >= 500 and len(rec) == n), f"status {status}, {len(rec) - n} upstream requests")
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


def idle_stream_opener(port, n):
    """One HTTP/2 connection to the processor with `n` ext_proc streams opened and never written to
    (a client that takes permits and sends nothing); returns the socket (its streams live while it
    is open)."""
    import socket, struct

    def frame(kind, flags, stream, payload=b""):
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

    def literal(name, value):  # HPACK: literal without indexing, new name, no Huffman
        return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value
    block = b"".join(literal(k, v) for k, v in [(b":method", b"POST"), (b":scheme", b"http"), (b":authority", b"toolfit"),
                                                (b":path", b"/envoy.service.ext_proc.v3.ExternalProcessor/Process"),
                                                (b"content-type", b"application/grpc"), (b"te", b"trailers")])
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) + frame(4, 1, 0))
    for i in range(n):
        s.sendall(frame(1, 4, 1 + 2 * i, block))  # HEADERS, END_HEADERS, no END_STREAM
    return s


def idle_streams(rec, up_port):
    """Streams that send nothing: each frees its permit after --first-message-timeout-ms (counted), and
    one connection holds at most --max-streams-per-connection of them (issue 57: four idle streams held
    --max-streams 4 for good, and every later request went on unrewritten)."""
    p = Processor({"profile": "llama-cpp", "framing": "exact"},
                  ["--max-streams", "4", "--max-streams-per-connection", "2", "--first-message-timeout-ms", "1500"])
    e = Envoy(up_port, p.port)
    body = chat_body(NEEDS_FIX)
    want = cli(body, "openai-chat")
    conns = []
    try:
        # three streams on each of two connections: the third of each is refused by the connection's cap
        conns = [idle_stream_opener(p.port, 3) for _ in range(2)]
        time.sleep(0.5)
        _, text = p.get("/metrics")
        active = int(re.search(r"^toolfit_extproc_streams_active (\d+)", text, re.M).group(1))
        check("six idle streams over two connections: two per connection taken (--max-streams-per-connection 2)", active == 4, text[-400:])
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("while idle streams hold every permit a request still goes on (unchanged, refused, fail open)", status == 200 and last(rec).get("body") == body, str(status))
        time.sleep(2.0)
        _, text = p.get("/metrics")
        closed = int(re.search(r"^toolfit_extproc_streams_idle_closed (\d+)", text, re.M).group(1))
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("past --first-message-timeout-ms the idle streams are closed and counted; the next request is rewritten",
              closed == 4 and status == 200 and last(rec).get("body") == want, f"closed {closed} status {status}")
    finally:
        for c in conns:
            c.close()
        e.stop()
        p.stop()


def unix_socket(rec, up_port):
    """--listen unix:PATH: Envoy reaches the processor over a Unix domain socket (a `pipe` cluster), as a
    processor beside Envoy in one pod does; a stale socket left at the path is replaced, anything else
    there is refused, never removed."""
    import socket as so, tempfile
    d = tempfile.mkdtemp(prefix="toolfit-uds-")
    path = os.path.join(d, "extproc.sock")
    stale = so.socket(so.AF_UNIX, so.SOCK_STREAM)
    stale.bind(path)  # what a processor that died leaves behind
    stale.close()
    # started with umask 000, as a container may be: the socket is still 0660 (issue 57: any local user
    # could connect)
    mask = os.umask(0)
    try:
        p = Processor({"profile": "llama-cpp", "framing": "exact"}, unix=path)
    finally:
        os.umask(mask)
    check("--listen unix:PATH: the processor starts on a path a stale socket held", p.ready, p.logs()[-500:])
    mode = oct(os.stat(path).st_mode & 0o777) if os.path.exists(path) else None
    check("the socket is mode 0660 whatever the umask: only the processor's user and group connect", mode == "0o660", mode)
    body = chat_body(NEEDS_FIX)
    e = Envoy(up_port, path)
    try:
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("over the Unix socket: a chat request is rewritten as the engine says", status == 200 and last(rec).get("body") == cli(body, "openai-chat") != body,
              f"status {status} {e.logs()[-300:]}")
    finally:
        e.stop()
        p.stop()
    # control: Envoy pointed at a socket no processor serves sends the request on unchanged
    e = Envoy(up_port, os.path.join(d, "nobody.sock"))
    try:
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("control: with no processor on the socket the request goes on unchanged (failure_mode_allow)", status == 200 and last(rec).get("body") == body, f"status {status}")
    finally:
        e.stop()
    kept = os.path.join(d, "notes.txt")
    open(kept, "w").write("not a socket")
    p = Processor({"profile": "llama-cpp"}, unix=kept)
    check("--listen unix:PATH on a file that is not a socket: refused, naming it, the file kept",
          not p.ready and p.proc.wait(10) != 0 and "other than a socket" in p.logs() and open(kept).read() == "not a socket", p.logs()[-300:])


def tls_listener(rec, up_port):
    """--tls-cert/--tls-key/--client-ca: the processor reached across the network, as a platform team
    secures it. Mutual TLS: Envoy with the gateway's client certificate is served (the request rewritten);
    a client with no certificate, one another CA signed, and Envoy speaking cleartext are refused at the
    handshake (the requests go on unchanged: failure_mode_allow), each counted. The certificate rotated the
    way the kubelet updates a mounted Secret (a new directory, the `..data` link swapped) serves the next
    connection; a rotation whose key does not match keeps the old one, counted."""
    import ssl, tempfile
    from harness.certs import Pki, handshake, mount_secret
    pki = Pki()
    server_ca, gateway_ca, other_ca = pki.ca("server-ca"), pki.ca("gateway-ca"), pki.ca("other-ca")
    sni = "toolfit-extproc.toolfit.svc"
    first, second = pki.leaf("extproc-1", server_ca, dns=[sni]), pki.leaf("extproc-2", server_ca, dns=[sni])
    envoy_pair, rogue = pki.leaf("gateway", gateway_ca, client=True), pki.leaf("rogue", other_ca, client=True)
    der = lambda pair: ssl.PEM_cert_to_DER_cert(open(pair[0]).read())
    mount = tempfile.mkdtemp(prefix="toolfit-secret-")
    mount_secret(mount, "v1", *first)
    crt, key = os.path.join(mount, "tls.crt"), os.path.join(mount, "tls.key")
    cfg = {"profile": "llama-cpp", "framing": "exact"}
    p = Processor(cfg, flags=["--tls-cert", crt, "--tls-key", key, "--client-ca", gateway_ca[0]])
    check("mutual TLS: the processor starts, saying so", p.ready and "(mutual TLS)" in p.logs(), p.logs()[-500:])
    if not p.ready:
        return
    tls = {"ca": server_ca[0], "sni": sni, "cert": envoy_pair[0], "key": envoy_pair[1]}
    body = chat_body(NEEDS_FIX)
    want = cli(body, "openai-chat")
    e = Envoy(up_port, p.port, tls=tls)
    try:
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("mutual TLS: Envoy with the gateway's client certificate is served, the request rewritten as the engine says",
              status == 200 and last(rec).get("body") == want != body, f"status {status} {e.logs()[-500:]}")
        got = {what: handshake(p.port, server_ca[0], sni, pair) for what, pair in [("the gateway's certificate", envoy_pair), ("no certificate", None), ("another CA's certificate", rogue)]}
        check("control: a client with the gateway's certificate completes the handshake and gets HTTP/2 SETTINGS",
              got["the gateway's certificate"] == ("served", der(first)), str(got["the gateway's certificate"])[:300])
        for what in ("no certificate", "another CA's certificate"):
            check(f"mutual TLS: a client with {what} is refused", got[what][0] == "refused", str(got[what])[:300])
    finally:
        e.stop()
    # Envoy without TLS to the processor: refused at the handshake, the request goes on unchanged
    e = Envoy(up_port, p.port)
    try:
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("mutual TLS: Envoy speaking cleartext to it is refused; the request goes on unchanged (failure_mode_allow)",
              status == 200 and last(rec).get("body") == body, f"status {status}")
    finally:
        e.stop()
    text = p.get("/metrics")[1]
    failed = re.search(r"^toolfit_extproc_tls_handshakes_failed (\d+)", text, re.M)
    check("the refused handshakes are counted (toolfit_extproc_tls_handshakes_failed >= 3) and logged",
          failed and int(failed.group(1)) >= 3 and "TLS handshake with" in p.logs(), text[-600:])
    # 300 connections that never say hello: 256 wait out their handshake, the rest are closed at once;
    # once they go, a real client is served again
    import socket as so
    before = int(failed.group(1)) if failed else 0
    idle = [so.create_connection(("127.0.0.1", p.port), timeout=5) for _ in range(300)]
    time.sleep(0.5)
    now = re.search(r"^toolfit_extproc_tls_handshakes_failed (\d+)", p.get("/metrics")[1], re.M)
    for sk in idle:
        sk.close()
    time.sleep(0.5)
    got = handshake(p.port, server_ca[0], sni, envoy_pair)
    check("300 connections that never send a ClientHello: past 256 handshakes at once the rest are closed, counted; then a client is served",
          now and int(now.group(1)) - before >= 44 and got[0] == "served", (before, now and now.group(1), got[0]))
    # a rotation whose key is not its certificate's: the old pair goes on serving, counted
    mount_secret(mount, "v2", second[0], first[1])
    time.sleep(1.2)
    got = handshake(p.port, server_ca[0], sni, envoy_pair)
    text = p.get("/metrics")[1]
    check("a rotation whose key does not match: the previous certificate still serves, counted refused",
          got == ("served", der(first)) and 'toolfit_extproc_tls_reloads{result="refused"} 1' in text, f"{str(got)[:200]} {text[-300:]}")
    mount_secret(mount, "v3", *second)
    time.sleep(1.2)
    got = handshake(p.port, server_ca[0], sni, envoy_pair)
    text = p.get("/metrics")[1]
    check("the Secret rotated (the ..data link swapped): the next connection gets the new certificate, no restart",
          got == ("served", der(second)) and 'toolfit_extproc_tls_reloads{result="ok"} 1' in text, f"{str(got)[:200]} {text[-300:]}")
    e = Envoy(up_port, p.port, tls=tls)
    try:
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("after the rotation Envoy is served, the request rewritten", status == 200 and last(rec).get("body") == want, f"status {status}")
    finally:
        e.stop()
        p.stop()
    # TLS without a client CA: any client that trusts the server is served
    p = Processor(cfg, flags=["--tls-cert", crt, "--tls-key", key])
    try:
        got = handshake(p.port, server_ca[0], sni) if p.ready else ("not started", p.logs()[-300:])
        check("TLS without --client-ca: a client with no certificate is served", got == ("served", der(second)), str(got)[:300])
        # control: a client that trusts another CA refuses the processor
        got = handshake(p.port, other_ca[0], sni)
        check("control: a client trusting another CA refuses the processor's certificate", got[0] == "refused" and "CERTIFICATE_VERIFY_FAILED" in got[1], str(got)[:300])
    finally:
        p.stop()
    # --client-san: of two clients the gateway's CA signed, only the one named the gateway's identity is
    # served (issue 57: mTLS took any certificate from the CA)
    named = pki.leaf("gateway-named", gateway_ca, dns=["gateway.toolfit.svc"], client=True)
    sibling = pki.leaf("sibling", gateway_ca, dns=["batch-job.toolfit.svc"], client=True)
    p = Processor(cfg, flags=["--tls-cert", crt, "--tls-key", key, "--client-ca", gateway_ca[0], "--client-san", "gateway.toolfit.svc"])
    try:
        got = {w: handshake(p.port, server_ca[0], sni, pair) if p.ready else ("not started", p.logs()[-300:]) for w, pair in (("named", named), ("sibling", sibling))}
        check("--client-san: the certificate named as the gateway is served", got["named"][0] == "served", str(got["named"])[:300])
        check("--client-san: another certificate from the same CA is refused at the handshake", got["sibling"][0] == "refused", str(got["sibling"])[:300])
    finally:
        p.stop()
    # refused starts, naming what is wrong
    for flags, says, why in [
        (["--tls-cert", crt], "--tls-key go together", "--tls-cert without --tls-key"),
        ([f"--tls-cert={crt}", "--client-ca=" + gateway_ca[0]], "--tls-key go together", "--tls-cert=FILE --client-ca=FILE (the = form) without --tls-key"),
        (["--max-streams=many"], "--max-streams many", "--max-streams=many"),
        (["--tls-cert", crt, "--tls-key", os.path.join(mount, "nope.key")], "nope.key", "a key file that is not there"),
        (["--tls-cert", crt, "--tls-key", first[1]], "tls.crt and", "a key that is not the certificate's"),
    ]:
        q = Processor(cfg, flags=flags)
        check(f"{why}: the start is refused, naming it", not q.ready and q.proc.wait(10) != 0 and says in q.logs(), q.logs()[-300:])


def bad_config():
    p = Processor({"profile": "llama-cpp", "max_body_bytez": 5})
    check("an unknown configuration key refuses to start, naming it", not p.ready and p.proc.wait(10) == 2 and "max_body_bytez" in p.logs(), p.logs()[-500:])
    p = Processor({"profile": "llama-cpp", "limits": {"max_depth": "deep"}})
    check("a bad value refuses to start, naming its place", not p.ready and p.proc.wait(10) == 2 and "limits.max_depth" in p.logs(), p.logs()[-500:])


def main():
    runner.use_venv_envoy()
    if not os.path.exists(EXTPROC):
        sys.exit(f"missing {EXTPROC}: run cargo build --release --workspace")
    up_port = free_port()
    _, rec = echo_upstream.serve(up_port)
    for mode in ("BUFFERED", "FULL_DUPLEX_STREAMED"):
        delivery(mode, rec, up_port)
    under_load()
    too_slow(rec, up_port)
    idle_streams(rec, up_port)
    unix_socket(rec, up_port)
    tls_listener(rec, up_port)
    bad_config()


if __name__ == "__main__":
    run("extproc", main)
