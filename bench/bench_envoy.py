#!/usr/bin/env python3
"""make bench-envoy: latency Envoy adds with toolfit vs the same Envoy without it, same run, interleaved.

One Envoy 1.40 (--concurrency 1) with two identical listeners, one with the toolfit filter (the
shipped plugin config, exact framing) and one without, both routing to a third listener that answers
200 itself (so no Python upstream sits in the measured path). wrk (Debian package; installed if
missing) sends the same POST body to each, one connection, in alternating rounds. Prints median and
p99 per case and the difference (the filter's added latency), and the VM memory gauge.
Cases: untouched (40 small tools, 200 KB of messages), conversation (the same tools, a 1 MiB conversation
of 400 turns), small (5 tools, 2 KB of messages), typical (40
tools, about 60 KB, plus 200 KB of messages), huge (the 1,409-tool catalog, 1.6 MB), rewritten (40
Atlassian tools whose Jira-key patterns need a rewrite, plus 200 KB of messages). With objects closed
(the default) small, typical and huge need no change: they measure the common, untouched path. `--quick` runs one short round (used to check the command works); `--only typical,small` runs those cases.
Two more listeners carry toolfit as an external processor (the ext_proc filter of envoy/extproc.yaml,
BUFFERED, to target/release/toolfit-extproc over HTTP/2 on loopback; one processor with the cache off,
one with it on): the same requests in the same rounds, their added latency beside the Wasm filter's,
and each processor's CPU time per request and resident memory. The peer: LiteLLM's proxy (PyPI `litellm`
in ~/.cache/toolfit/litellm-proxy, one worker, the sink as its OpenAI-compatible backend) gets the same
requests in the same rounds, its added latency beside toolfit's (`--no-peer` leaves it out).
Saturation: requests per second at `wrk -t2 -c64` for the untouched and typical requests through Envoy
alone, Envoy with the buffer filter, the Wasm floors (exact and chunked), toolfit Wasm (exact and chunked),
toolfit ext_proc and LiteLLM's proxy, on the same cores in the same run (`--no-saturation` leaves it out).
The MCP leg: a `tools/list` answer (typical: 26 tools; huge: the 1,409-tool catalog) rewritten for Codex's
profile on its way back, through Envoy without a filter and with toolfit cold and warm (`--no-mcp`
leaves it out).
"""
import json, os, re, shutil, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WASM = os.path.join(ROOT, "dist", "toolfit.wasm")
FLOOR = os.path.join(ROOT, "dist", "toolfit-floor.wasm")
EXTPROC = os.path.join(ROOT, "target", "release", "toolfit-extproc")
# the gRPC floor: an ext_proc server that answers every message unchanged (extproc/examples/extproc_floor.rs)
EXTPROC_FLOOR = os.path.join(ROOT, "target", "release", "examples", "extproc_floor")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vm_memory(prom):
    """The largest VM's linear memory in a Prometheus text: the gauge is per VM, `toolfit.vm.<n>.vm_memory_bytes`
    (`toolfit_vm_memory_bytes{vm="<n>"}` with the shipped stats tags, `toolfit_vm_<n>_vm_memory_bytes` without)."""
    found = [int(v) for v in re.findall(r"^toolfit_vm_memory_bytes(?:\{[^}]*\})? (\d+)", prom, re.M)]
    found += [int(v) for v in re.findall(r"^toolfit_vm_\d+_vm_memory_bytes(?:\{[^}]*\})? (\d+)", prom, re.M)]
    return max(found, default=0)


def vm_counters(admin):
    """The per-VM counters of toolfit's own time (src/wasm.rs's VM_COUNTERS), summed over the VMs of
    each build: {"toolfit": {name: n}, "floor": {name: n}}. Without the shipped stats_tags they read
    `toolfit_vm_<n>_vm_request_ns` (floor VMs: `toolfit_vm_floor<n>_...`), with them `toolfit_vm_request_ns{vm="<n>"}`."""
    import urllib.request
    prom = urllib.request.urlopen(f"http://127.0.0.1:{admin}/stats/prometheus", timeout=5).read().decode()
    got = {"toolfit": {}, "floor": {}}
    for vm, name, v in re.findall(r"^toolfit_vm_(\w+?)_vm_(request_ns|response_ns|streams)(?:\{[^}]*\})? (\d+)", prom, re.M):
        build = "floor" if vm.startswith("floor") else "toolfit"
        got[build][name] = got[build].get(name, 0) + int(v)
    for name, vm, v in re.findall(r'^toolfit_vm_(request_ns|response_ns|streams)\{[^}]*vm="(\w+)"[^}]*\} (\d+)', prom, re.M):
        build = "floor" if vm.startswith("floor") else "toolfit"
        got[build][name] = got[build].get(name, 0) + int(v)
    return got


def rounds_arg(default):
    """`--rounds N`: interleaved rounds per figure (default 3), for a spread narrow enough to judge."""
    argv = sys.argv[1:]
    return int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv[:-1] else default


def spread(xs):
    """`median (min-max)` of a figure's rounds."""
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def judged(xs, budget, tolerance=None, higher_is_better=False):
    """A figure's verdict against its budget from its rounds: `met` or `MISSED` only when the rounds
    agree. Too wide a spread (max - min over `tolerance`, by default the budget itself: a spread of 255
    us cannot tell 50 from 255), or rounds on both sides of the budget, says so instead."""
    width = max(xs) - min(xs)
    if width > (tolerance if tolerance is not None else abs(budget)):
        return f"spread {width:.3g} wider than {tolerance if tolerance is not None else abs(budget):g}: run more rounds (--rounds N)"
    if min(xs) <= budget <= max(xs):
        return "rounds on both sides of the budget: run more rounds (--rounds N)"
    m = statistics.median(xs)
    return "met" if (m >= budget if higher_is_better else m <= budget) else "MISSED"


def catalog(name, n=None):
    tools = json.load(open(os.path.join(ROOT, "tests", "corpus", "servers", name)))["tools"]
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t["inputSchema"]}} for t in tools[:n]]


def body(tools, message_bytes):
    msgs = [{"role": "user", "content": "x" * 1000}] * max(1, message_bytes // 1030)
    return json.dumps({"model": "m", "messages": msgs, "tools": tools}).encode()


def listener(name, port, filters, cluster):
    return {"name": name, "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
            "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": name,
                "route_config": {"virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
                    {"name": "chat", "match": {"prefix": "/"}, "route": {"cluster": cluster, "timeout": "0s"}, "request_body_buffer_limit": 17825792}]}]},
                "http_filters": filters + [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}]}


def toolfit_filter(plugin, wasm=None):
    return {"name": "toolfit", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm", "config": {
        "name": "toolfit", "root_id": "toolfit", "allow_on_headers_stop_iteration": True, "fail_open": True,
        "vm_config": {"vm_id": "floor" if wasm else "toolfit", "runtime": "envoy.wasm.runtime.v8", "code": {"local": {"filename": wasm or WASM}}},
        "configuration": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": json.dumps(plugin)}}}}


def extproc_filter(cluster):
    """The ext_proc filter as envoy/extproc.yaml ships it, pointed at `cluster`."""
    text = open(os.path.join(ROOT, "envoy", "extproc.yaml")).read()
    f = next(f for f in yaml_filters(text) if f["name"] == "envoy.filters.http.ext_proc")
    f["typed_config"]["grpc_service"]["envoy_grpc"]["cluster_name"] = cluster
    return f


def yaml_filters(text):
    import yaml
    doc = yaml.safe_load(text)
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return hcm["http_filters"]


def grpc_cluster(name, port):
    return {"name": name, "type": "STATIC", "connect_timeout": "1s",
            "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "explicit_http_config": {"http2_protocol_options": {}}}},
            "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": port}}}}]}]}}


# one turn of the conversation case: about 2.6 KB of prose with quotes, newlines and non-ASCII
CONVERSATION_TURN = 'The build failed in "make test": 3 of 412 checks.\nSee the log \u2014 line 88. Caf\u00e9 na\u00efve r\u00e9sum\u00e9. ' + "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 45
BUFFER = {"name": "envoy.filters.http.buffer", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer", "max_request_bytes": 17825792}}


# The peer (LiteLLM's proxy): litellm with its proxy extra's requirements, less three the registry here
# does not serve (litellm-proxy, litellm-enterprise, httpx2: the proxy server itself ships in litellm)
LITELLM_PROXY_PINS = ["litellm==1.110.2", "gunicorn>=23.0.0,<24.0", "uvicorn>=0.33.0,<1.0", "granian>=2.7.4,<3.0", "uvloop>=0.22.1,<1.0",
                      "fastapi>=0.136.3,<1.0", "starlette>=1.0.1,<2.0", "backoff>=2.2.1,<3.0", "pyyaml>=6.0.3,<7.0", "rq>=2.7.0,<3.0",
                      "orjson>=3.11.6,<4.0", "hiredis>=3.0.0,<4.0", "apscheduler>=3.11.2,<4.0", "fastapi-sso>=0.19.0,<1.0", "pyjwt>=2.13.0,<3.0",
                      "python-multipart>=0.0.27,<1.0", "cryptography>=49.0.0,<51.0", "pynacl>=1.6.2,<2.0", "websockets>=15.0.1,<16.0",
                      "boto3>=1.43.117,<2.0", "azure-identity>=1.25.2,<2.0", "azure-storage-blob>=12.28.0,<13.0", "mcp>=2.3.0,<3",
                      "pydantic>=2.12.0,<3", "restrictedpython>=8.5,<9.0", "rich>=13.9.4,<14.0", "inquirerpy>=0.3.4,<1.0", "tomlkit>=0.13.3,<1.0",
                      "polars>=1.38.1,<2.0", "soundfile>=0.12.1,<1.0", "expression>=5.6.0,<6.0", "backports-zstd>=1.0.0,<2.0", "semver>=3.0.4,<4"]
LITELLM_KEY = "sk-toolfit-bench-0123456789abcdef"
# what the sink answers LiteLLM (under /litellm/): a chat completion, which its OpenAI client parses
COMPLETION = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


def litellm_proxy(d, p_sink, port):
    """LiteLLM's proxy (its own venv under ~/.cache/toolfit/litellm-proxy) on loopback, one worker, model `m`
    sent to the sink as an OpenAI-compatible backend; None if it cannot start here."""
    try:
        from harness.venv import venv as judge_venv
        py = judge_venv("litellm-proxy", LITELLM_PROXY_PINS)
    except Exception as e:  # noqa: BLE001  (a peer that cannot be installed is reported, not fatal)
        print(f"LiteLLM proxy not measured: its venv could not be built ({e})")
        return None
    cfg = os.path.join(d, "litellm.yaml")
    open(cfg, "w").write(f"model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/m\n"
                         f"      api_base: http://127.0.0.1:{p_sink}/litellm/v1\n      api_key: none\n")
    env = {**os.environ, "LITELLM_MASTER_KEY": LITELLM_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen([os.path.join(os.path.dirname(py), "litellm"), "--config", cfg, "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import urllib.request
    for _ in range(600):
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=1).status == 200:
                return proc
        except OSError:
            time.sleep(0.1)
        if proc.poll() is not None:
            break
    print("LiteLLM proxy not measured: it did not start")
    proc.terminate()
    return None


def bootstrap(admin, p_sink, listeners, clusters=()):
    """An Envoy bootstrap: the given listeners, all routing to cluster `sink`, a listener that answers 200
    itself (and a chat completion under /litellm/, for the peer)."""
    sink = {"name": "sink", "address": {"socket_address": {"address": "127.0.0.1", "port_value": p_sink}},
            "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": "sink",
                "route_config": {"virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
                    {"match": {"prefix": "/litellm/"}, "direct_response": {"status": 200, "body": {"inline_string": COMPLETION}},
                     "response_headers_to_add": [{"header": {"key": "content-type", "value": "application/json"}}]},
                    {"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": "ok"}}}]}]},
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}],
            "per_connection_buffer_limit_bytes": 33554432}
    cluster = {"name": "sink", "type": "STATIC", "connect_timeout": "1s", "per_connection_buffer_limit_bytes": 33554432,
               "load_assignment": {"cluster_name": "sink", "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": p_sink}}}}]}]}}
    return {"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin}}},
            "static_resources": {"listeners": listeners + [sink], "clusters": [cluster, *clusters]}}


def config(p_filter, p_plain, p_sink, admin, p_cold, p_buffer, p_xcold, p_xwarm, g_cold, g_warm, p_floor, p_xfloor, g_floor, p_streamed, p_sfloor):
    return bootstrap(admin, p_sink, [listener("with_toolfit", p_filter, [toolfit_filter({"profile": "llama-cpp", "framing": "exact"})], "sink"),
                                     # chunked framing: the body streams on, toolfit holds it from the tools on
                                     listener("streamed", p_streamed, [toolfit_filter({"profile": "llama-cpp", "framing": "chunked"})], "sink"),
                                     listener("streamed_floor", p_sfloor, [toolfit_filter({"profile": "llama-cpp", "framing": "chunked"}, FLOOR)], "sink"),
                                     listener("without", p_plain, [], "sink"),
                                     listener("cold", p_cold, [toolfit_filter({"profile": "llama-cpp", "framing": "exact", "cache_bytes": 0})], "sink"),
                                     listener("buffer_only", p_buffer, [BUFFER], "sink"),
                                     listener("floor", p_floor, [toolfit_filter({"profile": "llama-cpp", "framing": "exact"}, FLOOR)], "sink"),
                                     listener("extproc_cold", p_xcold, [extproc_filter("xp_cold")], "sink"),
                                     listener("extproc_warm", p_xwarm, [extproc_filter("xp_warm")], "sink"),
                                     listener("extproc_floor", p_xfloor, [extproc_filter("xp_floor")], "sink")],
                     [grpc_cluster("xp_cold", g_cold), grpc_cluster("xp_warm", g_warm), grpc_cluster("xp_floor", g_floor)])


def processor(config, port, metrics_port, d):
    """toolfit-extproc with `config` on loopback; (process, its CPU seconds so far as a function)."""
    path = os.path.join(d, f"extproc-{port}.json")
    json.dump(config, open(path, "w"))
    p = subprocess.Popen([EXTPROC, "--config", path, "--listen", f"127.0.0.1:{port}", "--metrics-listen", f"127.0.0.1:{metrics_port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p


def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc/PID/stat, in clock ticks)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    return next((int(x.split()[1]) for x in open(f"/proc/{pid}/status") if x.startswith("VmRSS:")), 0) / 1024


def wrk(port, path_lua, seconds):
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{seconds}s", "--latency", "-s", path_lua, f"http://127.0.0.1:{port}/v1/chat/completions"],
                         capture_output=True, text=True).stdout
    def ms(label):
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]
    reqs = re.search(r"^\s+(\d+) requests in", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return ms("50"), ms("99"), int(reqs.group(1)) if reqs else 0, int(non2xx.group(1)) if non2xx else 0


def rps(port, path_lua, seconds, connections=64):
    """Requests per second wrk completes at `connections` connections (2 threads), and its non-2xx count."""
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", path_lua, f"http://127.0.0.1:{port}/v1/chat/completions"],
                         capture_output=True, text=True).stdout
    m = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return float(m.group(1)) if m else 0.0, int(non2xx.group(1)) if non2xx else 0


def saturation(cases, targets, d, rounds, secs):
    """Requests per second at wrk -c64 through each listener, untouched and typical requests, rounds
    interleaved: what toolfit costs a saturated Envoy worker, beside the buffer filter and the peer."""
    keep = [(n, b) for n, b in cases if n in ("untouched", "typical")]
    # the floors: a Wasm filter that holds (exact) or reads each piece (chunked) and decides nothing, the
    # most a Wasm filter's share can be on this host, whatever toolfit does
    names = {"without": "Envoy alone", "buffer": "buffer filter", "floor": "Wasm floor", "warm": "toolfit Wasm", "streamed floor": "chunked floor",
             "streamed": "Wasm, chunked", "ext warm": "toolfit ext_proc", "litellm": "LiteLLM proxy"}
    chosen = [(t, p) for t, p in targets if t in names]
    if not keep:
        return
    got = {(n, t): [] for n, _ in keep for t, _ in chosen}
    for r in range(rounds):
        for name, _ in keep:
            lua = os.path.join(d, f"{name}.lua")
            for target, port in (chosen if r % 2 == 0 else chosen[::-1]):
                got[(name, target)].append(rps(port, lua, secs))
    print("\nsaturation: requests per second at wrk -t2 -c64, Envoy --concurrency 1 (one worker), the same 2 cores for every listener;")
    print(f"{rounds} interleaved rounds of {secs} s, the median; in brackets the share of Envoy alone")
    print(f"{'case':10} | " + " ".join(f"{names[t]:>18}" for t, _ in chosen) + " | non-2xx")
    goals = {"untouched": 90, "typical": 85}
    for name, _ in keep:
        base = statistics.median(x[0] for x in got[(name, "without")]) or 1.0
        cells = []
        for t, _ in chosen:
            v = statistics.median(x[0] for x in got[(name, t)])
            cells.append(f"{v:9.0f} ({v / base * 100:4.0f}%)".rjust(18))
        bad = sum(x[1] for t, _ in chosen for x in got[(name, t)])
        print(f"{name:10} | " + " ".join(cells) + f" | {bad:7}")
    # each round's share against the same round's Envoy alone, with its spread and the goal
    for name, _ in keep:
        for t, _ in chosen:
            shares = [w[0] / max(b[0], 1.0) * 100 for w, b in zip(got[(name, t)], got[(name, "without")])]
            if t in ("warm", "streamed", "ext warm"):
                print(f"  {name}, {names[t]} share of Envoy alone per round: {spread(shares)}%  [goal >= {goals[name]}%: {judged(shares, goals[name], 10, True)}]")
            elif t in ("floor", "streamed floor"):
                print(f"  {name}, {names[t]} share of Envoy alone per round: {spread(shares)}% (no goal: what any Wasm filter that reads the body keeps)")


def main():
    quick = "--quick" in sys.argv
    if not shutil.which("wrk"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], capture_output=True)
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    ports = [free_port() for _ in range(18)]
    # the floor: a Wasm filter that holds the request and copies its body into the VM once, deciding
    # and reading nothing (scripts/wasm.sh --floor)
    subprocess.run([os.path.join(ROOT, "scripts", "wasm.sh"), "--floor"], check=True, capture_output=True)
    d = tempfile.mkdtemp(prefix="toolfit-bench-")
    cfg = os.path.join(d, "envoy.json")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "toolfit-extproc", "--example", "extproc_floor"], check=True, cwd=ROOT)
    json.dump(config(*ports[:10], ports[13], ports[14], ports[15], ports[16], ports[17]), open(cfg, "w"))
    # the two processors: cache off (cold) and on (warm), as the Wasm listeners
    procs = {"ext cold": processor({"profile": "llama-cpp", "framing": "exact", "cache_bytes": 0}, ports[8], ports[10], d),
             "ext warm": processor({"profile": "llama-cpp", "framing": "exact"}, ports[9], ports[11], d)}
    xfloor = subprocess.Popen([EXTPROC_FLOOR, "--listen", f"127.0.0.1:{ports[15]}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    envoy = subprocess.Popen([os.path.join(venv, "bin", "envoy"), "-c", cfg, "--concurrency", "1", "--base-id", str(ports[0]), "-l", "error"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # the peer, in front of the same sink ("--no-peer" leaves it out)
    peer = None if "--no-peer" in sys.argv else litellm_proxy(d, ports[2], ports[12])
    try:
        import urllib.request
        for _ in range(100):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{ports[3]}/ready", timeout=1).read().strip() == b"LIVE":
                    break
            except OSError:
                time.sleep(0.1)
        cases = [("untouched", json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 200_000}], "tools": [{"type": "function", "function": {"name": "q", "description": "d", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False}}}] * 40}).encode()),
                 # a long agent conversation: 400 turns of prose (quotes, escapes, non-ASCII), the same 40 tools
                 ("conversation", json.dumps({"model": "m", "messages": [{"role": "assistant", "content": CONVERSATION_TURN}] * 400, "tools": [{"type": "function", "function": {"name": "q", "description": "d", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False}}}] * 40}).encode()),
                 ("small", body(catalog("filesystem.json", 5), 2000)),
                 ("typical", body(catalog("github.json" if os.path.exists(os.path.join(ROOT, "tests/corpus/servers/github.json")) else "azure-all.json", 40), 200_000)),
                 ("huge", body(catalog("twilio-all-services.json"), 0)),
                 # small, typical and huge need no change with objects closed (the common case); this one does
                 ("rewritten", body(catalog("atlassian.json", 40), 200_000))]
        if "--only" in sys.argv[1:-1]:  # --only typical,small: those cases alone
            keep = sys.argv[sys.argv.index("--only") + 1].split(",")
            cases = [c for c in cases if c[0] in keep]
        rounds, secs = (1, 2) if quick else (rounds_arg(3), 4)
        targets = [("without", ports[1]), ("buffer", ports[5]), ("cold", ports[4]), ("warm", ports[0]), ("ext cold", ports[6]), ("ext warm", ports[7]), ("floor", ports[13]), ("ext floor", ports[14]),
                   ("streamed", ports[16]), ("streamed floor", ports[17])]
        if peer:
            targets.append(("litellm", ports[12]))
        res = {(c, t): [] for c, _ in cases for t, _ in targets}
        # toolfit's own time inside the VM, per request, each round: (request path us, response path us, requests)
        vm_targets = ("cold", "warm", "floor", "streamed", "streamed floor")
        inside = {(c, t): [] for c, _ in cases for t in vm_targets}
        # the processors' CPU per request: their CPU time over the requests wrk completed against them
        cpu = {t: [0.0, 0] for t in procs}
        for r in range(rounds):
            for name, b in cases:
                bf = os.path.join(d, f"{name}.json")
                open(bf, "wb").write(b)
                lua = os.path.join(d, f"{name}.lua")
                # the bearer key is what LiteLLM's proxy asks for; Envoy's listeners pass it on unread
                open(lua, "w").write(f'wrk.method = "POST"\nwrk.headers["content-type"] = "application/json"\nwrk.headers["authorization"] = "Bearer {LITELLM_KEY}"\n'
                                     f'local f = io.open("{bf}", "rb")\nwrk.body = f:read("*a")\nf:close()\n')
                for target, port in (targets if r % 2 == 0 else targets[::-1]):
                    before = cpu_seconds(procs[target].pid) if target in procs else 0
                    vm_before = vm_counters(ports[3]) if target in vm_targets else None
                    res[(name, target)].append(wrk(port, lua, secs))
                    if vm_before is not None:
                        build = "floor" if target.endswith("floor") else "toolfit"
                        after = vm_counters(ports[3])[build]
                        n = after.get("streams", 0) - vm_before[build].get("streams", 0)
                        if n > 0:
                            inside[(name, target)].append(((after.get("request_ns", 0) - vm_before[build].get("request_ns", 0)) / n / 1000,
                                                           (after.get("response_ns", 0) - vm_before[build].get("response_ns", 0)) / n / 1000, n))
                    if target in procs:
                        cpu[target][0] += cpu_seconds(procs[target].pid) - before
                        cpu[target][1] += res[(name, target)][-1][2]
        print(f"Envoy 1.40, --concurrency 1, wrk -c1; {rounds} interleaved rounds of {secs} s per case and listener; latency in ms")
        print("listeners: without (no filter), buffer (Envoy's buffer filter only), cold (toolfit, cache off), warm (toolfit, cache on), exact framing;")
        print("streamed: toolfit warm in chunked framing (the body goes on as it comes, held from the tools on)\n")
        print(f"{'case':10} {'KB':>6} | {'p50 without':>11} {'buffer':>7} {'cold':>8} {'warm':>7} {'streamed':>8} | {'added cold':>10} {'added warm':>10} {'streamed':>8} | {'p99 without':>11} {'cold':>8} {'warm':>7} | {'non-2xx':>7}")
        med = lambda xs, i: statistics.median(x[i] for x in xs)
        for name, b in cases:
            r0, rb, rc, rw, rs = (res[(name, t)] for t in ("without", "buffer", "cold", "warm", "streamed"))
            bad = sum(x[3] for x in r0 + rb + rc + rw + rs)
            print(f"{name:10} {len(b) / 1024:6.0f} | {med(r0, 0):11.3f} {med(rb, 0):7.3f} {med(rc, 0):8.3f} {med(rw, 0):7.3f} {med(rs, 0):8.3f} | {med(rc, 0) - med(r0, 0):10.3f} {med(rw, 0) - med(r0, 0):10.3f} {med(rs, 0) - med(r0, 0):8.3f} | "
                  f"{med(r0, 1):11.3f} {med(rc, 1):8.3f} {med(rw, 1):7.3f} | {bad:7}")
        print("\ninside the VM: microseconds per request spent in the filter's callbacks (the per-VM counters vm_request_ns,")
        print("vm_response_ns over vm_streams; Envoy's clock read on entry and exit, the body's copy into the VM included),")
        print(f"median of {rounds} rounds (min-max), thousands of requests each; own work = toolfit warm - the floor")
        print(f"{'case':12} {'framing':8} | {'floor':>22} {'cold':>24} {'warm':>22} | {'own work (warm)':>24} | {'response warm':>13} | {'requests':>8}")
        for name, _ in cases:
            # exact framing (the headers wait for the body) and chunked (the body streams on, held from the tools)
            for framing, (f_t, w_t, c_t) in (("exact", ("floor", "warm", "cold")), ("chunked", ("streamed floor", "streamed", None))):
                got = {t: inside[(name, t)] for t in (f_t, w_t, c_t) if t}
                if not all(got.values()) or len({len(v) for v in got.values()}) != 1:
                    print(f"{name:12} {framing:8} | not measured (the per-VM counters did not move)")
                    continue
                own = [w[0] - f[0] for w, f in zip(got[w_t], got[f_t])]
                budget = {"untouched": 50, "conversation": 150}.get(name)
                verdict = f"  [budget <= {budget} us: {judged(own, budget)}]" if budget else ""
                cold = spread([x[0] for x in got[c_t]]) if c_t else "-"
                print(f"{name:12} {framing:8} | {spread([x[0] for x in got[f_t]]):>22} {cold:>24} {spread([x[0] for x in got[w_t]]):>22} | "
                      f"{spread(own):>24} | {statistics.median(x[1] for x in got[w_t]):13.3f} | {sum(x[2] for x in got[w_t]):8}{verdict}")
        for case in ("untouched", "conversation"):
            u = [res[(case, t)] for t, _ in targets] if (case, "warm") in res and res[(case, "warm")] else None
            if u:
                warm, buf, floor = med(u[3], 0), med(u[1], 0), med(u[6], 0)
                print(f"\n{case} request, toolfit (warm) vs Envoy buffering only: p50 {warm:.3f} vs {buf:.3f} ms ({(warm / buf - 1) * 100:+.0f}%)")
                own = [(w[0] - f[0]) * 1000 for w, f in zip(u[3], u[6])]
                budget = {"untouched": 50, "conversation": 150}[case]
                print(f"  the floor, a Wasm filter holding the request and copying its body into the VM once (dist/toolfit-floor.wasm): {floor:.3f} ms "
                      f"({(floor / buf - 1) * 100:+.0f}% over the buffer filter); toolfit's own work from outside (p50 warm - p50 floor, per round): "
                      f"{statistics.median(own):.0f} us ({min(own):.0f} to {max(own):.0f})  [budget <= {budget} us: {judged(own, budget)}]")
        print("\next_proc (toolfit-extproc, envoy/extproc.yaml's filter, BUFFERED) beside the Wasm filter and beside the gRPC floor")
        print("(extproc_floor: an ext_proc server answering every message unchanged, same mode), added p50 in ms:")
        print(f"{'case':10} | {'wasm cold':>9} {'ext cold':>9} {'ratio':>6} | {'wasm warm':>9} {'ext warm':>9} {'ratio':>6} | {'ext floor':>9} {'warm / floor':>12} | {'p99 ext warm':>12}")
        for name, _ in cases:
            base = med(res[(name, "without")], 0)
            a = {t: med(res[(name, t)], 0) - base for t in ("cold", "warm", "ext cold", "ext warm", "ext floor")}
            ratio = lambda x, y: f"{x / y:6.2f}" if y > 0.001 else "     -"
            print(f"{name:10} | {a['cold']:9.3f} {a['ext cold']:9.3f} {ratio(a['ext cold'], a['cold'])} | {a['warm']:9.3f} {a['ext warm']:9.3f} {ratio(a['ext warm'], a['warm'])} | "
                  f"{a['ext floor']:9.3f} {ratio(a['ext warm'], a['ext floor']):>12} | {med(res[(name, 'ext warm')], 1):12.3f}")
        if ("typical", "ext floor") in res and res[("typical", "ext floor")]:
            per = [(w[0] - b[0]) / max(f[0] - b[0], 1e-6) for w, f, b in zip(res[("typical", "ext warm")], res[("typical", "ext floor")], res[("typical", "without")])]
            print(f"typical, ext_proc warm over the gRPC floor (added p50, per round): {spread(per)}x  [budget <= 1.3x: {judged(per, 1.3, 0.3)}]")
        if peer:
            print("\nthe peer: LiteLLM's proxy 1.110.2 (one worker, the sink as an OpenAI-compatible backend) beside Envoy with toolfit, added p50 in ms")
            print("over Envoy without a filter (LiteLLM: its whole hop, client to backend, in place of Envoy's):")
            print(f"{'case':10} | {'toolfit warm':>12} {'ext_proc warm':>13} {'LiteLLM':>9} {'LiteLLM / toolfit':>17} | {'LiteLLM p99':>11} {'non-2xx':>7}")
            for name, _ in cases:
                base = med(res[(name, "without")], 0)
                lite, warm, xwarm = med(res[(name, "litellm")], 0) - base, med(res[(name, "warm")], 0) - base, med(res[(name, "ext warm")], 0) - base
                ratio = f"{lite / warm:16.0f}x" if warm > 0.001 else f"{'-':>17}"
                print(f"{name:10} | {warm:12.3f} {xwarm:13.3f} {lite:9.3f} {ratio} | {med(res[(name, 'litellm')], 1):11.3f} {sum(x[3] for x in res[(name, 'litellm')]):7}")
            print(f"LiteLLM proxy: {rss_mib(peer.pid):.0f} MiB resident")
        if "--no-saturation" not in sys.argv:
            saturation(cases, targets, d, rounds, secs)
        for t, p in procs.items():
            secs_cpu, n = cpu[t]
            print(f"toolfit-extproc ({t.split()[1]}): {1000 * secs_cpu / max(n, 1):.3f} ms CPU per request over {n} requests, resident memory {rss_mib(p.pid):.1f} MiB")
        time.sleep(5.5)
        prom = urllib.request.urlopen(f"http://127.0.0.1:{ports[3]}/stats/prometheus").read().decode()
        mem = vm_memory(prom)
        print(f"\nVM linear memory after the run (high-water mark, both toolfit VMs' caches filled): {mem / 2**20:.1f} MiB" if mem else "\nVM memory gauge not reported")
        rss = next((int(x.split()[1]) for x in open(f"/proc/{envoy.pid}/status") if x.startswith("VmRSS:")), 0)
        print(f"Envoy resident memory after the run (all four listeners, one worker): {rss / 1024:.1f} MiB")
    finally:
        xfloor.terminate()
        envoy.terminate()
        envoy.wait()
        if peer:
            peer.terminate()
            peer.wait()
        for p in procs.values():
            p.terminate()
            p.wait()
    if "huge" in dict(cases):  # --only without it: no huge body to measure with
        one_request_memory(venv, dict(cases)["huge"], d)
    vm_start(venv, d)
    if "--no-mcp" not in sys.argv:
        mcp_lists(venv, d, quick)
    size = os.path.getsize(WASM)
    # the budget make test holds the module to (tests/envoy/deploy.py), read from there: one number
    budget = int(re.search(r"^WASM_BUDGET = ([\d_]+)", open(os.path.join(ROOT, "tests", "envoy", "deploy.py")).read(), re.M).group(1))
    print(f"dist/toolfit.wasm: {size:,} bytes  [budget <= {budget:,}: {'met' if size <= budget else 'MISSED'}; make test holds it too]")


def mcp_lists(venv, d, quick=False):
    """The MCP leg: a `tools/list` answer rewritten for Codex's profile (openai) on its way back, typical
    (desktop-commander's 26 tools) and huge (the 1,409-tool catalog), through Envoy without a filter, with toolfit cache off
    (cold) and on (warm), interleaved rounds in one run. The answers come from Envoy itself
    (direct_response), so no Python server sits in the measured path."""
    import urllib.request
    # typical: a server whose list changes for OpenAI (two of its 26 tools); huge: the catalog
    pages = {"typical": json.load(open(os.path.join(ROOT, "tests", "corpus", "servers", "desktop-commander.json")))["tools"],
             "huge": json.load(open(os.path.join(ROOT, "tests", "corpus", "servers", "twilio-all-services.json")))["tools"]}
    answers = {k: json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": v}}) for k, v in pages.items()}
    admin, p_sink = free_port(), free_port()
    ports = {"without": free_port(), "cold": free_port(), "warm": free_port()}
    plugin = {"profile": "mcp", "framing": "chunked", "routes": [{"prefix": "/", "format": "mcp"}]}
    sink = {"name": "sink", "address": {"socket_address": {"address": "127.0.0.1", "port_value": p_sink}},
            "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager", "stat_prefix": "sink",
                "route_config": {"max_direct_response_body_size_bytes": 4 << 20, "virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
                    {"match": {"path": f"/{k}"}, "direct_response": {"status": 200, "body": {"inline_string": a}},
                     "response_headers_to_add": [{"header": {"key": "content-type", "value": "application/json"}}]} for k, a in answers.items()]}]},
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}],
            "per_connection_buffer_limit_bytes": 33554432}
    fronts = [listener(n, port, [] if n == "without" else [toolfit_filter({**plugin, "cache_bytes": 0 if n == "cold" else 8 << 20})], "sink") for n, port in ports.items()]
    for f in fronts:
        f["per_connection_buffer_limit_bytes"] = 33554432
    cfg = {"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin}}},
           "static_resources": {"listeners": fronts + [sink], "clusters": [{"name": "sink", "type": "STATIC", "connect_timeout": "1s", "per_connection_buffer_limit_bytes": 33554432,
                                "load_assignment": {"cluster_name": "sink", "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": p_sink}}}}]}]}}]}}
    path = os.path.join(d, "mcp.json")
    json.dump(cfg, open(path, "w"))
    envoy = subprocess.Popen([os.path.join(venv, "bin", "envoy"), "-c", path, "--concurrency", "1", "--base-id", str(admin), "-l", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lua = os.path.join(d, "mcp.lua")
    open(lua, "w").write('wrk.method = "POST"\nwrk.headers["content-type"] = "application/json"\nwrk.headers["accept"] = "application/json, text/event-stream"\n'
                         'wrk.headers["mcp-session-id"] = "s.tf.openai.codex-mcp-client"\nwrk.body = \'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\'\n')
    try:
        for _ in range(100):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{admin}/ready", timeout=1).read().strip() == b"LIVE":
                    break
            except OSError:
                time.sleep(0.1)
        # the control: the answer through toolfit is the rewritten one, not the sink's bytes
        req = urllib.request.Request(f"http://127.0.0.1:{ports['warm']}/typical", data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                                     headers={"content-type": "application/json", "mcp-session-id": "s.tf.openai.codex-mcp-client"})
        changed = urllib.request.urlopen(req).read().decode() != answers["typical"]
        rounds, secs = (1, 2) if quick else (rounds_arg(3), 4)
        res = {(c, t): [] for c in pages for t in ports}
        for r in range(rounds):
            for case in pages:
                for t, port in (list(ports.items()) if r % 2 == 0 else list(ports.items())[::-1]):
                    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{secs}s", "--latency", "-s", lua, f"http://127.0.0.1:{port}/{case}"], capture_output=True, text=True).stdout
                    m = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
                    res[(case, t)].append(float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)] if m else float("nan"))
        print(f"\nMCP leg: a tools/list answer rewritten for codex-mcp-client (openai) on its way back; p50 in ms, {rounds} interleaved rounds of {secs} s"
              f" (through toolfit the answer changed: {'yes' if changed else 'NO'})")
        print(f"{'case':8} {'KB':>6} | {'without':>8} {'cold':>8} {'warm':>8} | {'added cold':>10} {'added warm':>10} | {'warm / without':>14}")
        for case in pages:
            w, c, h = (statistics.median(res[(case, t)]) for t in ("without", "cold", "warm"))
            print(f"{case:8} {len(answers[case]) / 1024:6.0f} | {w:8.3f} {c:8.3f} {h:8.3f} | {c - w:10.3f} {h - w:10.3f} | {h / w:13.1f}x")
        added = [h - w for h, w in zip(res[("huge", "warm")], res[("huge", "without")])]
        print(f"huge list warm (answered from the list's memo), added per round: {spread(added)} ms  [budget <= 2 ms: {judged(added, 2.0)}]")
    finally:
        envoy.terminate()
        envoy.wait()


def one_request_memory(venv, b, d):
    """The VM's memory for one request: a fresh Envoy with one toolfit listener (cache off), its linear
    memory read before and after one huge request. Wasm memory never shrinks, so the growth is the
    request's peak (body copied in, schemas parsed one at a time, rewritten body), to 64 KiB pages."""
    import urllib.request
    p_filter, p_sink, admin = free_port(), free_port(), free_port()
    cfg = bootstrap(admin, p_sink, [listener("mem", p_filter, [toolfit_filter({"profile": "llama-cpp", "framing": "exact", "cache_bytes": 0})], "sink")])
    path = os.path.join(d, "mem.json")
    json.dump(cfg, open(path, "w"))
    envoy = subprocess.Popen([os.path.join(venv, "bin", "envoy"), "-c", path, "--concurrency", "1", "--base-id", str(admin), "-l", "error"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def gauge():
        for _ in range(100):
            try:
                prom = urllib.request.urlopen(f"http://127.0.0.1:{admin}/stats/prometheus", timeout=1).read().decode()
                m = vm_memory(prom)
                if m:
                    return m
            except OSError:
                pass
            time.sleep(0.1)
        return None

    try:
        before = gauge()
        req = urllib.request.Request(f"http://127.0.0.1:{p_filter}/v1/chat/completions", data=b, headers={"content-type": "application/json"})
        status = urllib.request.urlopen(req, timeout=30).status
        after = before
        for _ in range(30):  # the gauge is refreshed on the VM's 5 s tick
            time.sleep(0.5)
            after = gauge()
            if after is None or before is None or after != before:
                break
        if before is None or after is None:
            print("VM memory for one request: gauge not reported")
            return
        grown = after - before
        print(f"VM memory for one huge request ({len(b) / 2**20:.2f} MiB body, status {status}, cache off): "
              f"{before / 2**20:.2f} MiB before, {after / 2**20:.2f} MiB after: {grown / 2**20:.2f} MiB = {grown / len(b):.1f}x the body  [< 2x]")
    finally:
        envoy.terminate()
        envoy.wait()


def vm_start(venv, d, runs=5):
    """What the module's size costs at run time: Envoy's start, from exec to `/ready` answering LIVE,
    with one toolfit listener against the same bootstrap without it (V8 compiling the module and
    instantiating a VM for the main thread and each worker), median of `runs` starts each, at one and
    two workers."""
    import urllib.request

    def start(filters, workers):
        p_listener, p_sink, admin = free_port(), free_port(), free_port()
        path = os.path.join(d, f"start-{admin}.json")
        json.dump(bootstrap(admin, p_sink, [listener("start", p_listener, filters, "sink")]), open(path, "w"))
        t0 = time.monotonic()
        envoy = subprocess.Popen([os.path.join(venv, "bin", "envoy"), "-c", path, "--concurrency", str(workers), "--base-id", str(admin), "-l", "error"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while time.monotonic() - t0 < 30:
                try:
                    if urllib.request.urlopen(f"http://127.0.0.1:{admin}/ready", timeout=1).read().strip() == b"LIVE":
                        return time.monotonic() - t0
                except OSError:
                    time.sleep(0.005)
            return float("nan")
        finally:
            envoy.terminate()
            envoy.wait()

    for workers in (1, 2):
        plain = statistics.median(start([], workers) for _ in range(runs))
        wasm = statistics.median(start([toolfit_filter({"profile": "llama-cpp"})], workers) for _ in range(runs))
        print(f"Envoy start to ready, --concurrency {workers}: {plain * 1000:.0f} ms without a filter, {wasm * 1000:.0f} ms with toolfit.wasm: "
              f"the VMs' start {(wasm - plain) * 1000:.0f} ms (median of {runs})")
    compile_times(runs)


def compile_times(runs=5):
    """Why the VMs' start costs what it does: Envoy's V8 turns Liftoff off (proxy-wasm-cpp-host), so the
    whole module is compiled by TurboFan when it loads, once per module (each worker's VM is an instance
    of that compilation). Node's V8 does the same with the same flags: the first compile of the module in
    a fresh process, single-threaded and with its compile threads, beside Liftoff's."""
    node = shutil.which("node")
    if not node:
        print("V8's compile of the module not measured: no node here")
        return
    js = ("const b = require('fs').readFileSync(process.argv[1]); const t = performance.now();"
          "WebAssembly.compile(b).then(() => console.log(performance.now() - t));")
    got = {}
    for label, flags in (("TurboFan, one thread", ["--no-liftoff", "--no-wasm-lazy-compilation", "--single-threaded"]),
                         ("TurboFan, V8's compile threads", ["--no-liftoff", "--no-wasm-lazy-compilation"]),
                         ("Liftoff (not Envoy's)", ["--no-wasm-lazy-compilation"])):
        ms = []
        for _ in range(runs):
            out = subprocess.run([node, *flags, "-e", js, WASM], capture_output=True, text=True).stdout.strip()
            try:
                ms.append(float(out))
            except ValueError:
                pass
        got[label] = statistics.median(ms) if ms else float("nan")
    print(f"V8 ({subprocess.run([node, '--version'], capture_output=True, text=True).stdout.strip()}) compiling dist/toolfit.wasm "
          f"({os.path.getsize(WASM):,} bytes) in a fresh process, median of {runs}: " + ", ".join(f"{k} {v:.0f} ms" for k, v in got.items()))


if __name__ == "__main__":
    main()
