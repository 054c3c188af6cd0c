#!/usr/bin/env python3
"""make load: 20,000 mixed requests at concurrency 32 through Envoy 1.40 with toolfit in front of a
recording upstream, delivered as the Wasm filter (envoy/envoy.yaml) or as toolfit-extproc
(envoy/extproc.yaml, BUFFERED). Checks every upstream body (untouched bodies byte for byte, rewritten
ones equal to the engine's output for that input, by sha256), counts non-2xx, and samples the RSS of
Envoy (and of the processor) after warm-up and at the end. Prints the figures; exit 1 on any failure.
  python3 bench/load.py [REQUESTS] [CONCURRENCY] [--delivery wasm|ext_proc]"""
import hashlib, http.client, json, os, random, re, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from harness import delivery, runner


def catalog(name, n=None):
    tools = json.load(open(os.path.join(ROOT, "tests", "corpus", "servers", name)))["tools"][:n]
    return tools


def openai(tools, msg_bytes):
    msgs = [{"role": "user", "content": "m" * 1000}] * max(1, msg_bytes // 1030)
    return json.dumps({"model": "m", "messages": msgs, "tools": [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t["inputSchema"]}} for t in tools]}).encode()


def anthropic(tools):
    return json.dumps({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "tools": [{"name": t["name"], "input_schema": t["inputSchema"]} for t in tools]}).encode()


# every request not answered 200, as Envoy saw it: its response flags and details say whose the failure is
# (UF/UC/URX: the upstream's connection; an ext_proc detail: the processor's stream; a local reply: Envoy's)
NON_200 = """          access_log:
          - name: toolfit_load_non_200
            filter: {status_code_filter: {comparison: {op: GE, value: {default_value: 201, runtime_key: load_non_200}}}}
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
              path: LOG_FILE
              log_format:
                json_format:
                  code: "%RESPONSE_CODE%"
                  flags: "%RESPONSE_FLAGS%"
                  details: "%RESPONSE_CODE_DETAILS%"
                  upstream_failure: "%UPSTREAM_TRANSPORT_FAILURE_REASON%"
                  upstream_host: "%UPSTREAM_HOST%"
                  path: "%REQ(:PATH)%"
                  start: "%START_TIME%"
                  duration_ms: "%DURATION%"
                  bytes_received: "%BYTES_RECEIVED%"
                  connection_termination: "%CONNECTION_TERMINATION_DETAILS%"
"""


CONTROL = "/status/404"


def with_non_200_log(path):
    """An Envoy config edit: the access log above beside the listener's own."""
    def edit(text):
        block = NON_200.replace("LOG_FILE", path)
        if "          access_log:\n" in text:  # envoy/envoy.yaml has one: add ours to its list
            return text.replace("          access_log:\n", block, 1)
        # else beside the listener's stat_prefix (inference, mcp)
        return re.sub(r"^(          stat_prefix: \w+\n)", lambda m: m.group(1) + block, text, count=1, flags=re.M)
    return edit


def listen_overflows():
    """The kernel's count of connections dropped from a full accept queue (TcpExt ListenOverflows), or
    None where /proc/net/netstat does not say: a rise during a run puts a reset on a listener's backlog."""
    try:
        lines = [l.split() for l in open("/proc/net/netstat") if l.startswith("TcpExt:")]
        return int(dict(zip(lines[0], lines[1]))["ListenOverflows"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    kind = sys.argv[sys.argv.index("--delivery") + 1] if "--delivery" in sys.argv[1:-1] else "wasm"
    args = [a for a in args if a != kind]
    total = int(args[0]) if args else 20000
    conc = int(args[1]) if len(args) > 1 else 32
    runner.use_venv_envoy()
    non_200 = os.path.join(tempfile.mkdtemp(prefix="toolfit-load-"), "non-200.jsonl")
    runner.CONFIG_EDITS.append(with_non_200_log(non_200))
    up = runner.free_port()
    _, rec = runner.echo_upstream.serve(up, digest_only=True)
    e = delivery.start(kind, {"profile": "llama-cpp", "framing": "exact"}, up)
    if not e.ready:
        logs = e.logs()[-2000:]
        e.stop()
        sys.exit(logs)
    # the log's control: a request the upstream answers 404 must appear in it
    control = e.request("GET", CONTROL, None)[0]
    del rec[:]  # the upstream's count starts with the load
    # the processes whose memory must stay flat: Envoy, and the processor beside it
    pids = {"Envoy": e.proc.pid, **({"toolfit-extproc": e.processor.proc.pid} if kind == "ext_proc" else {})}
    mixes = [  # (weight, route, format, body)
        (40, "/v1/chat/completions", "openai-chat", openai(catalog("filesystem.json", 5), 2000)),
        (25, "/v1/chat/completions", "openai-chat", runner.chat_body(runner.FINE)),
        (15, "/v1/chat/completions", "openai-chat", openai(catalog("azure-all.json", 40), 200_000)),
        (10, "/v1/messages", "anthropic", anthropic(catalog("github.json" if os.path.exists(os.path.join(ROOT, "tests/corpus/servers/github.json")) else "stripe.json"))),
        (8, "/api/chat", "ollama", json.dumps({"model": "m", "messages": [], "format": runner.NEEDS_FIX}).encode()),
        (2, "/v1/chat/completions", "openai-chat", openai(catalog("twilio-all-services.json"), 0)),
    ]
    expected = {}
    for _, path, fmt, body in mixes:
        expected[hashlib.sha256(body).hexdigest()] = hashlib.sha256(runner.cli(body, fmt) or body).hexdigest()
    plan = random.Random(7).choices(range(len(mixes)), weights=[m[0] for m in mixes], k=total)
    statuses, lock, idx = {}, threading.Lock(), [0]
    sent = []
    rss_warm = {}
    series = []  # (requests sent, {process: RSS in KiB}) every 2,000 requests

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", e.port, timeout=120)
        while True:
            with lock:
                i = idx[0]
                idx[0] += 1
                if i == 2000:
                    rss_warm.update({n: rss_kb(p) for n, p in pids.items()})
                if i % 2000 == 0:
                    series.append((i, {n: rss_kb(p) for n, p in pids.items()}))
            if i >= total:
                break
            _, path, _, body = mixes[plan[i]]
            try:
                conn.request("POST", path, body=body, headers={"content-type": "application/json"})
                r = conn.getresponse()
                r.read()
                s = r.status
            except (OSError, http.client.HTTPException) as ex:
                s = type(ex).__name__
                conn = http.client.HTTPConnection("127.0.0.1", e.port, timeout=120)
            with lock:
                statuses[s] = statuses.get(s, 0) + 1
                sent.append(hashlib.sha256(body).hexdigest())

    overflows = listen_overflows()
    t0 = time.time()
    threads = [threading.Thread(target=worker) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    rss_end = {n: rss_kb(p) for n, p in pids.items()}
    time.sleep(1.2)
    prom = e.prom()
    e.stop()
    want = {}
    for h in sent:
        want[expected[h]] = want.get(expected[h], 0) + 1
    got = {}
    for r in rec:
        got[r["body"]] = got.get(r["body"], 0) + 1
    mismatched = sum(abs(want.get(k, 0) - got.get(k, 0)) for k in set(want) | set(got))
    non2xx = sum(n for s, n in statuses.items() if s != 200)
    errors = runner.metric(prom, "toolfit_internal_errors", "chat")
    hits = sum(int(x) for x in __import__("re").findall(r"^toolfit_cache_hits\{[^}]*\} (\d+)", prom, __import__("re").M))
    print(f"{kind}: {total} requests at concurrency {conc} in {took:.1f} s ({total / took:.0f} req/s): statuses {statuses}")
    print(f"upstream bodies checked: {len(rec)}, not as expected: {mismatched}; toolfit internal errors: {errors}; cache hits: {hits}")
    flat = True
    for n in pids:
        print(f"{n} RSS after 2,000 requests: {rss_warm.get(n, 0) / 1024:.1f} MiB, at the end: {rss_end[n] / 1024:.1f} MiB; "
              "every 2,000: " + " ".join(f"{r[n] / 1024:.0f}" for _, r in series))
        flat = flat and rss_end[n] <= rss_warm.get(n, 0) * 1.25 + 16 * 1024
    # what Envoy, the processor and the upstream saw of each request not answered 200
    logged = [json.loads(l) for l in open(non_200)] if os.path.exists(non_200) else []
    seen_control = [x for x in logged if x.get("path") == CONTROL]
    logged = [x for x in logged if x not in seen_control]
    print(f"the non-200 log's control (GET {CONTROL}, answered {control}): logged {len(seen_control)} time(s)")
    for entry in logged[:20]:
        print(f"not 200: {json.dumps(entry)}")
    if overflows is not None:
        print(f"the kernel's listen overflows during the run (any listener on this machine): {listen_overflows() - overflows}")
    if logged and kind == "ext_proc":
        # the processor's own warnings (a message declined, late or failed), not the lossy rewrites' lines
        said = [l for l in e.processor.messages().splitlines() if ("[warning]" in l or "[error]" in l) and "route=" not in l]
        print(f"processor warnings and errors ({len(said)}):" + "".join(f"\n  {l[:300]}" for l in said[:20]))
    print(f"upstream: {len(rec)} requests received for {total} sent; Envoy logged {len(logged)} not answered 200")
    ok = non2xx == 0 and mismatched == 0 and len(rec) == total and errors == 0 and flat and not logged and len(seen_control) == 1
    print(f"load ({kind}): ok" if ok else f"load ({kind}): FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
