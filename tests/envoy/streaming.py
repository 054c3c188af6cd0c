#!/usr/bin/env python3
"""Request bodies streamed past toolfit (src/filter/incoming.rs), through a real Envoy in both deliveries:
the Wasm filter in `chunked` framing, and toolfit-extproc in FULL_DUPLEX_STREAMED with `chunked` framing.
An agent's request is mostly its conversation, sent before its tools: toolfit lets the conversation go on
as it arrives and holds only from the tools on. Each check has its control, the same request where the
body must be held whole (`exact` framing; ext_proc's BUFFERED mode), which must say no where streaming
says yes. Prints one line per check and 'streaming: N passed, M failed'.

- A 4 MB conversation with its tools after it, sent in two parts by a client that holds the second part
  back until the upstream has read some of the body (or 5 s have passed): the upstream reads the
  conversation while the client is still sending; the control's upstream reads nothing before the end.
- What the upstream gets is the whole body's rewrite as the CLI makes it, byte for byte: tools after the
  conversation, tools before it (held from them to the end), a body in 1-byte pieces, a gzip body the
  decompressor ends with trailers, and a body that is not JSON past its first megabyte (forwarded as it
  came, counted `skipped_not_json`).
- Memory (the Wasm filter): a 12 MB conversation grows the VM's linear memory by less than 1 MiB; the
  control, a 6 MB tool catalog, grows it by more than its size (its tools are what toolfit holds).
"""
import gzip, json, socket, sys, threading, time

from harness import delivery, verdict
from harness.runner import NEEDS_FIX, cli, echo_upstream, free_port, metric, tool
from harness.verdict import check, run

MB = 1 << 20


class Progress(echo_upstream.Recorder):
    """The recording upstream, counting the body bytes it has read of the request in progress."""

    progress = 0

    def read_body(self):
        Progress.progress = 0
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            out = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(out), "chunked"
                out.append(self.rfile.read(size))
                Progress.progress += size
                self.rfile.readline()
        n = int(self.headers.get("content-length") or 0)
        out = []
        while n > 0:
            part = self.rfile.read(min(n, 65536))
            if not part:
                break
            out.append(part)
            Progress.progress += len(part)
            n -= len(part)
        return b"".join(out), "content-length"


def upstream():
    port = free_port()
    cls = type("P", (Progress,), {"records": []})
    srv = echo_upstream.Server(("127.0.0.1", port), cls)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return port, cls.records


def conversation(size, tools_first=False, varied=False):
    """A chat request: `size` bytes of conversation (turns of prose with quotes and non-ASCII; `varied`:
    each turn its own, so it does not compress a hundredfold, which Envoy's decompressor refuses to
    inflate) and two tools, one of them needing a rewrite, after it (or before it)."""
    import random
    rng = random.Random(7)
    turn = 'The build failed in "make test": 3 of 412 checks.\nCaf\u00e9 r\u00e9sum\u00e9. ' + "Lorem ipsum dolor sit amet. " * 60
    n = max(1, size // (len(turn) + 40))
    say = (lambda i: turn[:60] + "".join(rng.choice("abcdefghij klmnopqrstuvwxyz.,\n\"") for _ in range(len(turn) - 60))) if varied else (lambda i: turn)
    msgs = [{"role": "user" if i % 2 else "assistant", "content": say(i)} for i in range(n)]
    tools = [tool("lookup", NEEDS_FIX), tool("plain", {"type": "object", "properties": {"q": {"type": "string"}}})]
    members = [("model", "m"), ("messages", msgs), ("tools", tools), ("stream", False)]
    if tools_first:
        members = [members[0], members[2], members[1], members[3]]
    return json.dumps(dict(members)).encode()


def send(port, body, split, encoding=None):
    """POSTs `body` in chunked encoding: its first `split` bytes, then (once the upstream has read some
    of the body, or after 5 s) the rest. The status, and whether the upstream had read any of it before
    the rest was sent."""
    Progress.progress = 0
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        extra = f"content-encoding: {encoding}\r\n" if encoding else ""
        s.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n{extra}transfer-encoding: chunked\r\n\r\n".encode())

        def chunk(b):
            s.sendall(f"{len(b):x}\r\n".encode() + b + b"\r\n")

        chunk(body[:split])
        end = time.time() + 5
        while time.time() < end and Progress.progress == 0:
            time.sleep(0.02)
        early = Progress.progress
        chunk(body[split:])
        s.sendall(b"0\r\n\r\n")
        status = status_line(s)
    return status, early


def status_line(s):
    """The status of the answer on socket `s` (0 if it closed without one)."""
    head = b""
    while b"\r\n" not in head:
        got = s.recv(4096)
        if not got:
            break
        head += got
    return int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1 ") else 0


def streams(kind, plugin, up_port, records, streamed, **kw):
    """One delivery's checks: `streamed` says whether this configuration streams (else it is the control)."""
    t = delivery.start(kind, plugin, up_port, **kw)
    name = f"{delivery.label(kind)}{'streamed' if streamed else 'control (held whole)'}"
    check(f"{name}: Envoy and toolfit start", t.ready, t.logs()[-2000:])
    if not t.ready:
        t.stop()
        return
    try:
        body = conversation(4 * MB)
        want = cli(body, "openai-chat")
        status, early = send(t.port, body, 2 * MB)
        got = records[-1]["body"] if records else b""
        check(f"{name}: a 4 MB conversation with its tools after it reaches the upstream as the CLI rewrites it",
              status == 200 and got == want and want != body, f"status {status}, {len(got)} bytes, want {len(want)}")
        if streamed:
            check(f"{name}: the upstream reads the conversation while the client is still sending ({early} bytes before the last part)",
                  early > 0, f"read {early} bytes before the rest was sent")
        else:
            check(f"{name}: the upstream reads nothing before the body's end (the body is held whole)", early == 0, f"read {early} bytes early")
        # tools first: held from them to the end, rewritten alike
        first = conversation(MB, tools_first=True)
        status, early = send(t.port, first, 1024)
        check(f"{name}: tools before the conversation: the body is held from them ({early} bytes before) and rewritten as the CLI rewrites it",
              status == 200 and records[-1]["body"] == cli(first, "openai-chat") and early <= first.index(b'"tools"'), f"status {status}, early {early}")
        # 1-byte pieces
        small = conversation(20_000)
        status, _, _ = t.request("POST", "/v1/chat/completions", chunks=[bytes([c]) for c in small])
        check(f"{name}: a body in 1-byte pieces is rewritten", status == 200 and records[-1]["body"] == cli(small, "openai-chat"), f"status {status}")
        if kind == "wasm":
            # gzip: the decompressor hands the body on in pieces and ends it with trailers
            varied = conversation(2 * MB, varied=True)
            status, _ = send(t.port, gzip.compress(varied), 4096, encoding="gzip")
            check(f"{name}: a gzip body (ended in trailers by the decompressor) is rewritten",
                  status == 200 and records[-1]["body"] == cli(varied, "openai-chat"), f"status {status}, {len(records[-1]['body'])} bytes")
        # not JSON past its first megabyte: forwarded as it came, counted
        broken = body[:MB] + b"\x00" + body[MB + 1:]
        before = metric(t.prom(), "toolfit_skipped_not_json", "chat") or 0
        status, _ = send(t.port, broken, 2 * MB)
        after = metric(t.prom(), "toolfit_skipped_not_json", "chat") or 0
        check(f"{name}: a body that is not JSON past its first megabyte reaches the upstream as it came, counted skipped_not_json",
              status == 200 and records[-1]["body"] == broken and after == before + 1, f"status {status}, counter {before} -> {after}")
    finally:
        t.stop()


def vm_memory(prom):
    import re
    found = [int(v) for v in re.findall(r"^toolfit_vm_memory_bytes(?:\{[^}]*\})? (\d+)", prom, re.M)]
    return max(found, default=0)


def memory(up_port, records):
    """The Wasm VM's linear memory for one 12 MB conversation, then for one 6 MB tool catalog."""
    t = delivery.start("wasm", {"profile": "llama-cpp", "framing": "chunked", "cache_bytes": 0}, up_port)
    check("memory: Envoy starts", t.ready, t.logs()[-2000:])
    if not t.ready:
        t.stop()
        return

    def settled(before):
        # the gauge is refreshed on the VM's 5 s tick
        end = time.time() + 12
        now = vm_memory(t.prom())
        while time.time() < end and now == before:
            time.sleep(0.5)
            now = vm_memory(t.prom())
        return now

    try:
        # a first request grows the VM to what any request needs (its allocator, counters, one piece)
        time.sleep(5.5)
        status, _ = send(t.port, conversation(MB), 64 * 1024)
        base = settled(vm_memory(t.prom()))
        body = conversation(12 * MB)
        status, _ = send(t.port, body, 64 * 1024)
        after = settled(base)
        ok = status == 200 and records[-1]["body"] == cli(body, "openai-chat")
        check(f"memory: a 12 MB conversation then grows the VM by less than 1 MiB ({(after - base) / MB:.2f} MiB)", ok and base > 0 and after - base < MB,
              f"status {status}, {base} -> {after}")
        catalog = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                              "tools": [tool(f"t{i}", {"type": "object", "description": "d" * 3000, "properties": {"k": {"type": "string", "pattern": "^\\p{Lu}+$"}}})
                                        for i in range(6 * MB // 3200)]}).encode()
        status, _ = send(t.port, catalog, 64 * 1024)
        grown = settled(after)
        check(f"memory: control: a 6 MB tool catalog, which toolfit holds, grows it by more than its size ({(grown - after) / MB:.1f} MiB)",
              status == 200 and grown - after > len(catalog), f"status {status}, {after} -> {grown}")
    finally:
        t.stop()


def main():
    only = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--delivery=")), None)
    up_port, records = upstream()
    chunked = {"profile": "llama-cpp", "framing": "chunked"}
    exact = {"profile": "llama-cpp", "framing": "exact"}
    if only in (None, "wasm"):
        streams("wasm", chunked, up_port, records, True)
        streams("wasm", exact, up_port, records, False)
        memory(up_port, records)
    if only in (None, "ext_proc"):
        streams("ext_proc", chunked, up_port, records, True, body_mode="FULL_DUPLEX_STREAMED")
        streams("ext_proc", chunked, up_port, records, False, body_mode="BUFFERED")


if __name__ == "__main__":
    run("streaming", main)
