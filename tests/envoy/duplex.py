#!/usr/bin/env python3
"""toolfit-extproc in FULL_DUPLEX_STREAMED (agentgateway's mode, and the chart's), through a real Envoy:
Envoy forgets a body piece once it has sent it to the processor, so every byte it hands over must come
back in an answer, once and in order, whatever the processor decides. Each check has its control, the
same traffic where the processor does its usual work, which must say no where the check says yes.
Prints one line per check and 'duplex: N passed, M failed'.

- Given up (`--message-timeout-ms 1`: the rewrite of a 2 MB tool catalog is late or declined): the
  upstream gets the body as the client sent it, byte for byte, in `chunked` and in `exact` framing,
  counted `toolfit_extproc_streams_passed_on{reason}`; the control (the default timeout) gets the
  rewrite.
- Slow clients (a byte a second) on every permit (`--max-streams 2`): past the slowest rate they go on in
  pass-through and give their permits back, so the next request is rewritten, and the slow bodies still
  arrive whole. The control (no slowest rate): the next request passes unchanged with 200 (served in
  pass-through past --max-streams; before, Envoy answered it 500).
- The pieces a stream keeps count in `max_held_bytes`: in `exact` framing a client that pauses after
  2 MB under a 1 MiB budget sees the body go on unread while it pauses (the upstream reads it, the
  processor holds under its budget), then whole, counted `skipped_over_budget`; the control (a budget
  that fits) holds the 2 MB, counted in `toolfit_held_bytes`, and the upstream reads nothing before the end.
"""
import json, re, socket, threading, time

from harness import delivery, paths
from harness.runner import NEEDS_FIX, cli, metric, tool
from harness.verdict import check, run

streaming = paths.load("tests/envoy/streaming.py")  # its recording upstream

MB = 1 << 20
DUPLEX = {"body_mode": "FULL_DUPLEX_STREAMED", "response_mode": "FULL_DUPLEX_STREAMED"}


def with_catalog(conversation_bytes, catalog_bytes, marker="x"):
    """A chat request: a conversation, then a tool catalog that needs rewriting (about `catalog_bytes`)."""
    msgs = [{"role": "user", "content": f"{marker} " + "The build failed in \"make test\". Caf\u00e9. " * 50} for _ in range(max(1, conversation_bytes // 2100))]
    tools = [tool(f"t{i}", {"type": "object", "description": "d" * 1500, "properties": {"k": {"type": "string", "pattern": "^\\p{Lu}+$"}}})
             for i in range(max(1, catalog_bytes // 1650))]
    tools.append(tool("lookup", NEEDS_FIX))
    return json.dumps({"model": "m", "messages": msgs, "tools": tools, "stream": False}).encode()


def post(port, body, piece=64 * 1024, pause_at=None, pause=0.0, every=0.0, timeout=120, probe=None):
    """POSTs `body` chunked in pieces of `piece` bytes (`every` seconds apart; a pause of `pause` after
    `pause_at` bytes, `probe()` called half-way through it). Returns (status, the upstream's progress at
    the pause's end)."""
    seen = None
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
        sent = 0
        streaming.Progress.progress = 0
        while sent < len(body):
            part = body[sent:sent + piece]
            s.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            sent += len(part)
            if pause_at is not None and sent >= pause_at and seen is None:
                time.sleep(pause / 2)
                if probe:
                    probe()
                time.sleep(pause / 2)
                seen = streaming.Progress.progress
            if every:
                time.sleep(every)
        s.sendall(b"0\r\n\r\n")
        return streaming.status_line(s), seen


def passed_on(prom, reasons):
    return sum(int(v) for r, v in re.findall(r'^toolfit_extproc_streams_passed_on\{reason="(\w+)"\} (\d+)', prom, re.M) if r in reasons)


def received(records, marker):
    """The upstream's last record of the body carrying `marker`."""
    for r in reversed(records):
        if f'"{marker} '.encode() in r["body"][:4096]:
            return r["body"]
    return b""


def given_up(up_port, records):
    body = with_catalog(MB, 2 * MB)
    want = cli(body, "openai-chat")
    for framing in ("chunked", "exact"):
        plugin = {"profile": "llama-cpp", "framing": framing}
        for late in (True, False):
            name = f"{framing}, {'--message-timeout-ms 1' if late else 'control: the default timeout'}"
            t = delivery.start("ext_proc", plugin, up_port, flags=["--message-timeout-ms", "1"] if late else [], **DUPLEX)
            check(f"{name}: Envoy and toolfit-extproc start", t.ready, t.logs()[-2000:])
            if not t.ready:
                t.stop()
                continue
            try:
                before = passed_on(t.prom(), ("late", "declined"))
                status, _ = post(t.port, body)
                got = records[-1]["body"] if records else b""
                after = passed_on(t.prom(), ("late", "declined"))
                if late:
                    check(f"{name}: a rewrite given up: the upstream gets the {len(body)} bytes as the client sent them, counted passed_on",
                          status == 200 and got == body and after > before, f"status {status}, {len(got)} bytes, passed_on {before} -> {after}")
                else:
                    check(f"{name}: the upstream gets the rewrite, nothing given up",
                          status == 200 and got == want and want != body and after == before, f"status {status}, {len(got)} bytes, passed_on {before} -> {after}")
            finally:
                t.stop()


def slow_clients(up_port, records):
    quick = with_catalog(20_000, 20_000, marker="quick")
    want = cli(quick, "openai-chat")
    for judged in (True, False):
        name = "slow clients" if judged else "slow clients, control: no slowest rate"
        flags = ["--max-streams", "2", "--min-request-bytes-per-s", "1024" if judged else "0"]
        t = delivery.start("ext_proc", {"profile": "llama-cpp", "framing": "chunked"}, up_port, flags=flags, **DUPLEX)
        check(f"{name}: Envoy and toolfit-extproc start", t.ready, t.logs()[-2000:])
        if not t.ready:
            t.stop()
            continue
        try:
            slow = [with_catalog(3000, 3000, marker=f"slow{i}") for i in range(2)]
            results = [None, None]

            def client(i):
                # a byte a second for 8 s (past the 5 s grace), then the rest at once
                head, rest = slow[i][:8], slow[i][8:]
                with socket.create_connection(("127.0.0.1", t.port), timeout=60) as s:
                    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                    for b in head:
                        s.sendall(b"1\r\n" + bytes([b]) + b"\r\n")
                        time.sleep(1)
                    s.sendall(f"{len(rest):x}\r\n".encode() + rest + b"\r\n0\r\n\r\n")
                    results[i] = streaming.status_line(s)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
            for th in threads:
                th.start()
            time.sleep(6.5)
            status, _ = post(t.port, quick)
            got = received(records, "quick")
            for th in threads:
                th.join(60)
            # given up, a slow body goes on as it came; kept (the control), it is rewritten
            whole = all(received(records, f"slow{i}") == (slow[i] if judged else cli(slow[i], "openai-chat")) for i in range(2)) and results == [200, 200]
            n = passed_on(t.prom(), ("slow",))
            if judged:
                check(f"{name}: two slow streams on both permits go on in pass-through (passed_on slow {n}); the next request is rewritten",
                      status == 200 and got == want and n >= 2, f"status {status}, rewritten {got == want}, passed_on {n}")
            else:
                check(f"{name}: the next request, past --max-streams, passes unchanged with 200 (served in pass-through)",
                      status == 200 and got == quick and n == 0, f"status {status}, unchanged {got == quick}, passed_on slow {n}")
            check(f"{name}: the slow bodies reach the upstream whole ({'as they came' if judged else 'rewritten'}), answered 200", whole, f"statuses {results}")
        finally:
            t.stop()


def held_gauge(prom):
    m = re.search(r"^toolfit_held_bytes (\d+)", prom, re.M)
    return int(m[1]) if m else -1


def budget(up_port, records):
    body = with_catalog(3 * MB, 100_000)
    for limit in (MB, 64 * MB):
        over = limit == MB
        name = f"max_held_bytes {limit}" + ("" if over else " (control: it fits)")
        plugin = {"profile": "llama-cpp", "framing": "exact", "max_held_bytes": limit}
        t = delivery.start("ext_proc", plugin, up_port, **DUPLEX)
        check(f"{name}: Envoy and toolfit-extproc start", t.ready, t.logs()[-2000:])
        if not t.ready:
            t.stop()
            continue
        try:
            before = metric(t.prom(), "toolfit_skipped_over_budget", "chat") or 0
            held = []
            status, seen = post(t.port, body, pause_at=2 * MB, pause=3, probe=lambda: held.append(held_gauge(t.prom())))
            peak = held[0] if held else -1
            after = metric(t.prom(), "toolfit_skipped_over_budget", "chat") or 0
            got = records[-1]["body"] if records else b""
            if over:
                check(f"{name}: past the budget the body goes on unread while the client pauses ({seen} bytes read upstream), whole at the end, counted skipped_over_budget",
                      status == 200 and seen and seen > 0 and got == body and after == before + 1, f"status {status}, seen {seen}, counter {before} -> {after}")
            else:
                check(f"{name}: the 2 MB kept are counted in toolfit_held_bytes ({peak}), the upstream reads nothing before the end, and the body is rewritten",
                      status == 200 and seen == 0 and peak >= 2 * MB and got == cli(body, "openai-chat") and after == before,
                      f"status {status}, seen {seen}, held {peak}, counter {before} -> {after}")
        finally:
            t.stop()


def main():
    up_port, records = streaming.upstream()
    given_up(up_port, records)
    slow_clients(up_port, records)
    budget(up_port, records)


if __name__ == "__main__":
    run("duplex", main)
