#!/usr/bin/env python3
"""make soak: toolfit under a steady mixed load for a long time, while faults are injected on a
schedule, through each delivery (the Wasm filter in envoy/envoy.yaml, toolfit-extproc beside
envoy/extproc.yaml over mutual TLS) and the MCP leg (envoy/mcp.yaml). Not in `make test`: an hour per
delivery by default.

The load: 8 clients without pause. On the inference leg they send the mixes of bench/load.py to an
upstream that answers after 0-200 ms; on the MCP leg each runs whole sessions (McpLoad) against
tests/envoy/mcp_catalog_server.py. Every 20 s the next fault of the delivery's schedule runs for 10 s:
  upstream-reset   the upstream closes a third of its connections without an answer
  upstream-5xx     the upstream answers a third of the requests 503
  oversized        requests one byte past max_body_bytes (forwarded unread, skipped_too_large)
  malformed        truncated JSON bodies (forwarded as they came, skipped_not_json)
  flood            requests naming 200 KB tool names, as fast as they go (the log's byte budget)
  burst            20 requests of 14 MB at once, held by the slow upstream (max_held_bytes); on the
                   MCP leg 20 tools/list answers of 5 MB at once
  slow             4 clients sending their bodies 128 bytes every 100 ms, and 2 reading a big answer
                   64 KB every 50 ms (8 MB; the MCP leg's 5 MB tools/list page): each must arrive whole
                   and as it must
  reload           (Wasm) the listener's configuration changed on disk (Envoy's file-based LDS, the way
                   a control plane pushes one): the filter's vm_id changes, so a new VM is built and the old
                   one drains with its requests
  restart          (ext_proc) the processor killed and started again on its port
  rotate           (ext_proc) the processor's certificate rotated as the kubelet updates a Secret; a new
                   TLS connection must be served the new certificate, with no restart
  trickle          (duplex) 4 clients sending a byte a second for 8 s, then the rest: past the processor's
                   slowest rate they go on in pass-through; each body must arrive whole, as it came
The `duplex` delivery is toolfit-extproc with both bodies FULL_DUPLEX_STREAMED and `chunked` framing
(agentgateway's mode), where Envoy forgets each piece it sends: there the burst makes the processor
decline rewrites (every core busy), and each declined body must still reach the upstream whole. Its
schedule has no restart: a processor killed mid-body takes the pieces it held (docs/extproc.md).
Recorded: every request not answered 200 with Envoy's response flags (the ones the schedule's upstream
faults cause are expected; any other is not), every upstream body against what it must be (the
client's bytes, or exactly the engine's rewrite of them), VM traps and processor exits, the VMs Envoy
built and keeps, and the memory (Envoy's and the processor's resident size, the held-bytes gauges) every
10 s: judged over whole fault cycles after the first quarter, it must not grow. Prints one table per
delivery and exits 1 if any body or answer was other than expected, anything crashed, a non-200 was
unexpected, a reload or rotation did not take, or memory grew.
  python3 bench/soak.py [--seconds N] [--delivery wasm|ext_proc|mcp]..."""
import hashlib, http.client, json, os, random, re, socket, ssl, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from harness import certs, delivery, runner  # noqa: E402
from harness.paths import load as load_file  # noqa: E402
import load  # noqa: E402  (the mixes, the non-200 access log, rss_kb)

MAX_BODY = 16 << 20
SCHEDULES = {"wasm": ["upstream-reset", "upstream-5xx", "oversized", "malformed", "flood", "burst", "slow", "reload"],
             "ext_proc": ["upstream-reset", "upstream-5xx", "oversized", "malformed", "flood", "burst", "slow", "restart", "rotate"],
             "mcp": ["oversized", "malformed", "flood", "burst", "slow", "reload"],
             "duplex": ["upstream-reset", "upstream-5xx", "oversized", "malformed", "flood", "burst", "slow", "trickle", "rotate"]}
KINDS = tuple(SCHEDULES)
# the faults the clients themselves carry out while they last
CLIENT_FAULTS = ("upstream-reset", "upstream-5xx", "oversized", "malformed", "flood")
BIG_ANSWER = b'{"ok": true, "pad": "' + b"a" * (8 << 20) + b'"}'
SNI = "toolfit-extproc.toolfit.svc"


class Upstream:
    """Answers after 0-200 ms; `fault` makes it reset or answer 503 for a third of the requests; a request
    with `x-soak-answer: big` gets BIG_ANSWER. Records each body's digest."""

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
                data = BIG_ANSWER if self.headers.get("x-soak-answer") == "big" else b'{"ok": true}'
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.port = runner.free_port()
        self.srv = runner.echo_upstream.Server(("127.0.0.1", self.port), H)  # a listen backlog of 128
        self.srv.daemon_threads = True
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


def big(i):
    """A 14 MB request of tool schemas that need a rewrite: tests/envoy/hostile.py's."""
    return load_file("tests/envoy/hostile.py").big_body(i, 14 << 20)


class Listeners:
    """A config edit that moves envoy/envoy.yaml's listeners into a file Envoy watches (file-based LDS:
    what a control plane's push is to a static file), and `reload()`, which writes them again with the
    filter's vm_id changed: Envoy builds a new VM for the new listener and drains the old one."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="toolfit-soak-lds-")
        self.path, self.text, self.reloads = os.path.join(self.dir, "lds.yaml"), None, 0

    def edit(self, text):
        a, b = text.index("  listeners:\n"), text.index("\n  clusters:\n")
        block = re.sub(r"^  - name: ", '  - "@type": type.googleapis.com/envoy.config.listener.v3.Listener\n    name: ', text[a + len("  listeners:\n"):b + 1], flags=re.M)
        self.text = "resources:\n" + block
        self.write(self.text)
        return (text[:a] + text[b + 1:] + "\nnode: {id: soak, cluster: soak}\ndynamic_resources:\n  lds_config:\n    resource_api_version: V3\n"
                f"    path_config_source: {{path: {self.path}, watched_directory: {{path: {self.dir}}}}}\n")

    def write(self, text):
        tmp = os.path.join(self.dir, "lds.tmp")
        open(tmp, "w").write(text)
        os.replace(tmp, self.path)  # a move into the watched directory: Envoy reads it again

    def reload(self):
        self.reloads += 1
        self.write(self.text.replace("vm_id: toolfit\n", f"vm_id: toolfit-{self.reloads}\n"))


class Drain:
    """An Envoy with the drain time a deployment would set: the old listener of a reload, and its VM, gone
    15 s after the change instead of Envoy's default 10 minutes."""

    def start(self, text, flags=()):
        super().start(text, [*flags, "--drain-time-s", "15"])


class SoakEnvoy(Drain, runner.Envoy):
    """envoy/envoy.yaml as the suites run it."""


class Tls:
    """The processor's certificate as a mounted Secret, Envoy's client certificate, and `rotate()`."""

    def __init__(self):
        pki = certs.Pki(prefix="toolfit-soak-pki-")
        self.server_ca, gateway_ca = pki.ca("server-ca"), pki.ca("gateway-ca")
        self.leaves = [pki.leaf(f"extproc-{i}", self.server_ca, dns=[SNI]) for i in range(2)]
        self.client = pki.leaf("gateway", gateway_ca, client=True)
        self.mount, self.version = tempfile.mkdtemp(prefix="toolfit-soak-secret-"), 0
        self.rotate_files()
        crt, key = os.path.join(self.mount, "tls.crt"), os.path.join(self.mount, "tls.key")
        self.flags = ["--tls-cert", crt, "--tls-key", key, "--client-ca", gateway_ca[0]]
        self.envoy = {"ca": self.server_ca[0], "sni": SNI, "cert": self.client[0], "key": self.client[1]}

    def rotate_files(self):
        self.version += 1
        certs.mount_secret(self.mount, f"v{self.version}", *self.leaves[self.version % 2])
        return ssl.PEM_cert_to_DER_cert(open(self.leaves[self.version % 2][0]).read())

    def rotate(self, port):
        """Rotates, then waits (up to 10 s: the processor looks again at most every few seconds) for a new
        connection to be served the new certificate. True if it was."""
        want, end = self.rotate_files(), time.time() + 10
        while time.time() < end:
            if certs.handshake(port, self.server_ca[0], SNI, self.client) == ("served", want):
                return True
            time.sleep(0.5)
        return False


def slow_sender(port, path, body, note):
    """Sends `body` 128 bytes every 100 ms, then reads the answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nhost: soak\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n"
                      f"content-length: {len(body)}\r\n\r\n".encode())
            for i in range(0, len(body), 128):
                s.sendall(body[i:i + 128])
                time.sleep(0.1)
            note(answer_status(s))
    except (OSError, http.client.HTTPException) as ex:
        note(type(ex).__name__)


def answer_status(s):
    """Reads the whole answer on socket `s`: its status."""
    r = http.client.HTTPResponse(s)
    r.begin()
    r.read()
    return r.status


def trickler(port, path, body, note):
    """Sends `body` chunked, a byte a second for 8 s, then the rest at once; reads the answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nhost: soak\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".encode())
            for b in body[:8]:
                s.sendall(b"1\r\n" + bytes([b]) + b"\r\n")
                time.sleep(1)
            rest = body[8:]
            s.sendall(f"{len(rest):x}\r\n".encode() + rest + b"\r\n0\r\n\r\n")
            note(answer_status(s))
    except (OSError, http.client.HTTPException) as ex:
        note(type(ex).__name__)


def slow_reader(port, work):
    """Asks for the work's big answer and reads it 64 KB every 50 ms; work.answers gets whether it came
    whole and as it must."""
    path, body, headers = work.slow_read()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", path, body=body, headers=headers)
        r, got = conn.getresponse(), []
        while chunk := r.read(64 << 10):
            got.append(chunk)
            time.sleep(0.05)
        work.note(r.status)
        if r.status == 200:
            work.answers.append(work.answer_ok(b"".join(got)))
        conn.close()
    except (OSError, http.client.HTTPException) as ex:
        work.note(type(ex).__name__)


def send(port, path, body, conn, headers=None):
    """One POST on `conn` (a new connection after an error): (status or the error's name, headers, body, conn)."""
    try:
        conn.request("POST", path, body=body, headers={"content-type": "application/json", **(headers or {})})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read(), conn
    except (OSError, http.client.HTTPException) as ex:
        conn.close()
        return type(ex).__name__, {}, b"", http.client.HTTPConnection("127.0.0.1", port, timeout=120)


class Counts:
    """The answers the clients got, by status, and the slow readers' verdicts."""

    def __init__(self):
        self.sent, self.statuses, self.lock, self.answers = 0, {}, threading.Lock(), []

    def note(self, status):
        with self.lock:
            self.sent += 1
            self.statuses[status] = self.statuses.get(status, 0) + 1


class Load(Counts):
    """The inference leg: the bodies the clients send, and what each may reach the upstream as."""

    def __init__(self):
        super().__init__()
        self.mixes = [(40, "/v1/chat/completions", "openai-chat", load.openai(load.catalog("filesystem.json", 5), 2000)),
                      (25, "/v1/chat/completions", "openai-chat", runner.chat_body(runner.FINE)),
                      (15, "/v1/chat/completions", "openai-chat", load.openai(load.catalog("azure-all.json", 40), 200_000)),
                      (8, "/api/chat", "ollama", json.dumps({"model": "m", "messages": [], "format": runner.NEEDS_FIX}).encode())]
        self.bursts = [big(i) for i in range(20)]
        self.fault_bodies = {"oversized": runner.chat_body(runner.NEEDS_FIX)[:-1] + b', "pad": "' + b"x" * MAX_BODY + b'"}',
                             "malformed": runner.chat_body(runner.NEEDS_FIX)[:-20],
                             "flood": json.dumps({"model": "m", "messages": [], "tools": [runner.tool("n" * 200_000, runner.NEEDS_FIX)]}).encode()}
        digest = lambda b: hashlib.sha256(b).hexdigest()
        # what each body must reach the upstream as: its own bytes, or the engine's rewrite of it
        self.allowed = set()
        for _, _, fmt, b in self.mixes:
            self.allowed |= {digest(b), digest(runner.cli(b, fmt))}
        for b in self.bursts + [self.fault_bodies["flood"]]:
            self.allowed |= {digest(b), digest(runner.cli(b))}
        self.allowed |= {digest(self.fault_bodies["oversized"]), digest(self.fault_bodies["malformed"])}
        self.pick, self.weights = random.Random(7), [m[0] for m in self.mixes]

    def step(self, port, fault, conn):
        if fault in self.fault_bodies:
            path, body = "/v1/chat/completions", self.fault_bodies[fault]
        else:
            _, path, _, body = self.mixes[self.pick.choices(range(len(self.mixes)), weights=self.weights)[0]]
        status, _, _, conn = send(port, path, body, conn)
        self.note(status)
        return conn

    def burst(self):
        return [("/v1/chat/completions", b, {}) for b in self.bursts]

    def slow_send(self):
        return "/v1/chat/completions", self.mixes[0][3]

    def slow_read(self):
        return "/v1/chat/completions", self.mixes[0][3], {"content-type": "application/json", "x-soak-answer": "big"}

    def answer_ok(self, data):
        return data == BIG_ANSWER

    def problems(self, up):
        return [f"an upstream body {d[:12]} other than the client's or the engine's rewrite of it" for d in up.digests if d not in self.allowed]


class McpLoad(Counts):
    """The MCP leg: each client runs a session (initialize as one of the four CLIs, every page of
    tools/list, one tools/call of a listed tool) against tests/envoy/mcp_catalog_server.py serving 200
    catalog tools, every 7th renamed with a dot (a name OpenAI's and Gemini's APIs refuse, so the leg lists
    it encoded). Each page must be what `toolfit normalize --format mcp` makes of the server's page for the
    client's profile, and each call must reach the server under the tool's own name."""

    PAGE = 50

    def __init__(self):
        super().__init__()
        self.leg = load_file("tests/envoy/mcp_leg.py")
        tools = json.load(open(self.leg.CATALOG))["tools"][:200]
        for i in range(0, len(tools), 7):
            tools[i] = {**tools[i], "name": tools[i]["name"].replace("--", ".")}
        self.catalog = os.path.join(tempfile.mkdtemp(prefix="toolfit-soak-mcp-"), "catalog.json")
        json.dump({"tools": tools}, open(self.catalog, "w"))
        self.pages = [tools[i:i + self.PAGE] for i in range(0, len(tools), self.PAGE)]
        self.expected = {(p, i): self.leg.expected(page, p) for p in set(self.leg.CLIENTS.values()) for i, page in enumerate(self.pages)}
        self.wrong, self.pick = [], random.Random(7)
        rpc = self.rpc
        self.fault_bodies = {"oversized": rpc("tools/call", {"name": "x", "arguments": {"pad": "x" * MAX_BODY}}),
                             "malformed": rpc("tools/list", {})[:-9],
                             "flood": rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "n" * 200_000, "version": "1"}})}

    @staticmethod
    def rpc(method, params):
        """A JSON-RPC request's bytes."""
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()

    def step(self, port, fault, conn):
        if fault in self.fault_bodies:
            status, _, _, conn = send(port, "/mcp", self.fault_bodies[fault], conn, self.leg.ACCEPT)
            self.note(status)
            return conn
        return self.session(port, conn)

    def post(self, port, conn, method, params, headers=None):
        status, h, body, conn = send(port, "/mcp", self.rpc(method, params), conn, {**self.leg.ACCEPT, **(headers or {})})
        self.note(status)
        try:
            return status, h, json.loads(body) if status == 200 else None, conn
        except ValueError:
            self.wrong.append(f"{method}: an answer that is not JSON: {body[:100]!r}")
            return status, h, None, conn

    def session(self, port, conn):
        name = self.pick.choice(sorted(self.leg.CLIENTS))
        profile = self.leg.CLIENTS[name]
        _, h, _, conn = self.post(port, conn, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}})
        head = {"mcp-session-id": h.get("mcp-session-id", ""), "mcp-protocol-version": "2025-06-18"}
        listed, cursor = [], None
        for i, page in enumerate(self.pages):
            _, _, answer, conn = self.post(port, conn, "tools/list", {"cursor": cursor} if cursor else {}, head)
            result = (answer or {}).get("result")
            if result is None:
                return conn
            if [t.get("inputSchema") for t in result.get("tools", [])] != self.expected[(profile, i)]:
                self.wrong.append(f"{name}: page {i} of tools/list other than the engine's rewrite for {profile}")
            listed += [(t.get("name"), own["name"]) for t, own in zip(result.get("tools", []), page)]
            cursor = result.get("nextCursor")
        shown, own = self.pick.choice(listed)
        _, _, answer, conn = self.post(port, conn, "tools/call", {"name": shown, "arguments": {}}, head)
        if answer is not None:
            try:
                called = json.loads(answer["result"]["content"][0]["text"])["called"]
            except (KeyError, IndexError, TypeError, ValueError):
                called = answer
            if called != own:
                self.wrong.append(f"{name}: a call of {shown!r} reached the server as {str(called)[:100]!r}, not {own!r}")
        return conn

    def burst(self):
        return [("/mcp", self.rpc("tools/list", {"cursor": "huge"}), self.leg.ACCEPT) for _ in range(20)]

    def slow_send(self):
        return "/mcp", self.rpc("tools/list", {})

    def slow_read(self):
        return "/mcp", self.rpc("tools/list", {"cursor": "huge"}), self.leg.ACCEPT

    def answer_ok(self, data):
        """The 5 MB page (three tools beside a 5 MB string) whole, its tools rewritten for the route's profile."""
        try:
            result = json.loads(data)["result"]
        except (ValueError, KeyError, TypeError):
            return False
        return len(result["_meta"]["padding"]) == 5_100_000 and [t.get("inputSchema") for t in result["tools"]] == self.leg.expected(self.pages[0][:3], "mcp")

    def problems(self, up):
        return self.wrong


class McpServer:
    """tests/envoy/mcp_catalog_server.py on the soak's catalog, as the upstream of the MCP leg."""

    def __init__(self, work):
        # its stderr kept: the first hour's run saw 7 resets from it (UC) in its first burst, unexplained
        self.errors = os.path.join(os.path.dirname(work.catalog), "server.err")
        self.server = work.leg.Server([sys.executable, os.path.join(ROOT, "tests", "envoy", "mcp_catalog_server.py"), "{port}", work.catalog, "{log}",
                                       "--page", str(work.PAGE)], "/mcp", errors=self.errors)
        self.port, self.fault, self.digests = self.server.port, None, []


def start(kind, cfg, upstream, work):
    """The delivery, and what its faults act on: the LDS file (Wasm, the MCP leg) or the processor's
    Secret (ext_proc)."""
    if kind in ("wasm", "mcp"):
        lds = Listeners()
        runner.CONFIG_EDITS.append(lds.edit)
        if kind == "mcp":
            return type("SoakMcp", (Drain, work.leg.WasmGateway), {})(work.leg.plugin(), upstream), lds
        return SoakEnvoy(cfg, upstream), lds
    tls = Tls()
    duplex = {"body_mode": "FULL_DUPLEX_STREAMED", "response_mode": "FULL_DUPLEX_STREAMED"} if kind == "duplex" else {}
    return delivery.ExtProc(cfg, upstream, flags=tls.flags, tls=tls.envoy, **duplex), tls


def sample(e, kind, pids):
    """One memory sample: resident KiB per process, the held-bytes gauge (max over VMs), Envoy's live VMs."""
    prom = e.prom()
    held = [int(v) for v in re.findall(r"^toolfit_held_bytes(?:\{[^}]*\})? (\d+)", prom, re.M)]
    vms = envoy_stat(e, "envoy_wasm_envoy_wasm_runtime_v8_active") if kind not in ("ext_proc", "duplex") else 0
    return {n: load.rss_kb(p) for n, p in pids.items()}, max(held, default=0), vms


def run_fault(fault, e, aux, work, cfg, events):
    """Runs `fault` (the clients carry out theirs while state["fault"] says so)."""
    if fault == "burst":
        conns = [http.client.HTTPConnection("127.0.0.1", e.port, timeout=120) for _ in work.burst()]
        ts = [threading.Thread(target=lambda c=c, r=r: work.note(send(e.port, r[0], r[1], c, r[2])[0])) for c, r in zip(conns, work.burst())]
    elif fault == "trickle":
        events["trickles"] = events.get("trickles", 0) + 1
        ts = [threading.Thread(target=trickler, args=(e.port, *work.slow_send(), work.note)) for _ in range(4)]
    elif fault == "slow":
        ts = [threading.Thread(target=slow_sender, args=(e.port, *work.slow_send(), work.note)) for _ in range(4)]
        ts += [threading.Thread(target=slow_reader, args=(e.port, work)) for _ in range(2)]
    else:
        ts = []
    for t in ts:
        t.start()
    if fault == "reload":
        aux.reload()
        events["reloads"] += 1
    if fault == "restart":
        p = e.processor
        p.proc.kill()
        time.sleep(1)
        e.processor = delivery.Processor(cfg, flags=aux.flags, ports=(p.port, p.metrics_port))
        events["restarts"] += 1
    if fault == "rotate":
        events["rotations"] += 1
        events["rotations_served"] += aux.rotate(e.processor.port)
    for t in ts:
        t.join()


def soak(kind, seconds):
    runner.use_venv_envoy()
    non_200 = os.path.join(tempfile.mkdtemp(prefix="toolfit-soak-"), "non-200.jsonl")
    runner.CONFIG_EDITS[:] = [load.with_non_200_log(non_200)]
    work = McpLoad() if kind == "mcp" else Load()
    up = McpServer(work) if kind == "mcp" else Upstream()
    cfg = {"profile": "llama-cpp", "framing": "chunked" if kind == "duplex" else "exact", "max_body_bytes": MAX_BODY}
    e, aux = start(kind, cfg, up.port, work)
    if not e.ready:
        print(e.logs()[-2000:])
        return False
    state = {"fault": None, "stop": False}
    events = {"reloads": 0, "restarts": 0, "rotations": 0, "rotations_served": 0}

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", e.port, timeout=120)
        while not state["stop"]:
            conn = work.step(e.port, state["fault"], conn)

    def fault_window(fault):
        state["fault"] = up.fault = fault if fault in CLIENT_FAULTS else None
        run_fault(fault, e, aux, work, cfg, events)
        time.sleep(max(0.0, 10 - (time.time() - started[0])))
        state["fault"] = up.fault = None

    pids = lambda: {"Envoy": e.proc.pid, **({"toolfit-extproc": e.processor.proc.pid} if kind in ("ext_proc", "duplex") else {})}
    memory, t0, started = [], time.time(), [0.0]
    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    step, next_fault, next_sample, faults = 0, t0 + 10, t0, None
    schedule = SCHEDULES[kind]
    try:
        while time.time() - t0 < seconds:
            now = time.time()
            if now >= next_sample:
                rss, held, vms = sample(e, kind, pids())
                memory.append((now - t0, rss, held, vms, step // len(schedule)))
                next_sample = now + 10
            if now >= next_fault and (faults is None or not faults.is_alive()):
                started[0] = now
                faults = threading.Thread(target=fault_window, args=(schedule[step % len(schedule)],))
                faults.start()
                step, next_fault = step + 1, now + 20
            time.sleep(0.2)
    finally:
        if faults is not None:
            faults.join()
        state["stop"] = True
        for t in threads:
            t.join()
    time.sleep(1.5)
    vm_created = envoy_stat(e, "envoy_wasm_envoy_wasm_runtime_v8_created") if kind not in ("ext_proc", "duplex") else 0
    if kind == "duplex":
        # the streams the processor gave up and answered in pass-through, by why (each body still judged above)
        events["passed_on"] = {r: int(v) for r, v in re.findall(r'^toolfit_extproc_streams_passed_on\{reason="(\w+)"\} (\d+)', e.prom(), re.M) if v != "0"}
    logs = e.logs()
    e.stop()
    if kind == "mcp":
        up.server.stop()
        said = open(up.errors).read()
        if said.strip():
            print(f"the MCP server's stderr ({up.errors}), its end:\n{said[-1500:]}")
    return report(kind, seconds, work.problems(up), work, non_200, logs, memory, pids(), events, vm_created, len(schedule))


def envoy_stat(e, name):
    """One of Envoy's own series (-1: absent)."""
    m = re.search(rf"^{name}(?:\{{[^}}]*\}})? (\d+)", e.get_admin("/stats/prometheus")[1], re.M)
    return int(m.group(1)) if m else -1


def grown(memory, names):
    """Per process: the peak resident size over the first whole fault cycles after the first quarter, and
    over the last ones (as many, at least one). A cycle holds every fault once, the 14 MB burst included:
    peaks compare with peaks."""
    done = list(range(memory[-1][4] if memory else 0))  # the cycles that finished
    warm = [c for c in done if c >= len(done) // 4] or done
    k = max(1, len(warm) // 4)
    first, last = set(warm[:k]), set(warm[-k:])
    return {n: (max((m[1].get(n, 0) for m in memory if m[4] in first), default=0), max((m[1].get(n, 0) for m in memory if m[4] in last), default=0)) for n in names}


def report(kind, seconds, other, work, non_200, logs, memory, pids, events, vm_created, cycle):
    traps = len(re.findall(r"failed: Uncaught|RuntimeError|panicked", logs))
    logged = [json.loads(line) for line in open(non_200)] if os.path.exists(non_200) else []
    # upstream faults explain their own non-200s: the upstream's 503 (via_upstream), a reset (UC, URX, UF, UR);
    # anything else (a VM trap's wasm_fail_stream, a local reply) is toolfit's
    # (the MCP leg's schedule has no upstream fault: there a reset is unexplained too)
    resets = {"UC", "URX", "UF", "UR"} if kind != "mcp" else set()
    unexplained = [x for x in logged if not (x.get("details") == "via_upstream" or set((x.get("flags") or "").split(",")) & resets)]
    grew = grown(memory, pids)
    flat = all(b <= a * 1.25 + 32 * 1024 for a, b in grew.values())
    broken_answers = work.answers.count(False)
    took = (events["reloads"] == 0 or vm_created > events["reloads"]) and events["rotations_served"] == events["rotations"]
    # the duplex delivery exists to show given-up streams lose nothing: once the trickle fault has run,
    # its byte-a-second clients must have been given up (else the run showed nothing of that path)
    trickled = kind == "duplex" and events.get("trickles", 0) > 0
    exercised = not trickled or events.get("passed_on", {}).get("slow", 0) > 0
    print(f"\n{kind}: {seconds:.0f} s, {work.sent} requests, statuses {work.statuses}")
    print(f"  faults: {memory[-1][4] if memory else 0} whole cycles of {cycle}; {events}" + (f"; VMs created {vm_created}" if kind not in ("ext_proc", "duplex") else ""))
    print(f"  bodies and answers other than expected: {len(other)}" + "".join(f"\n    {x}" for x in other[:10]))
    print(f"  big answers read slowly: {len(work.answers)}, other than they must be: {broken_answers}")
    print(f"  VM traps or panics in the logs: {traps}")
    print(f"  not 200: {len(logged)} ({len(logged) - len(unexplained)} the upstream's own answers or its injected faults, {len(unexplained)} other)")
    for x in unexplained[:10]:
        print(f"    {json.dumps(x)}")
    for n, (a, b) in grew.items():
        print(f"  {n} resident, peak of a fault cycle: {a / 1024:.0f} MiB after warm-up, {b / 1024:.0f} MiB at the end; every 10 s: " + " ".join(f"{m[1].get(n, 0) / 1024:.0f}" for m in memory))
    print("  held bytes (max over VMs) every 10 s, MiB: " + " ".join(f"{m[2] / 2**20:.0f}" for m in memory))
    if kind not in ("ext_proc", "duplex"):
        print("  live VMs every 10 s: " + " ".join(str(m[3]) for m in memory))
    if not exercised:
        print("  the trickle fault ran, yet no stream was given up as slow: the pass-through path went unexercised")
    ok = not other and not traps and not unexplained and flat and not broken_answers and took and exercised
    print(f"soak ({kind}): {'ok' if ok else 'FAILED'}")
    return ok


def main():
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv[1:-1] else 3600
    kinds = [sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--delivery"] or list(KINDS)
    if any(k not in KINDS for k in kinds):
        sys.exit(f"--delivery: one of {', '.join(KINDS)}")
    results = [soak(k, seconds) for k in kinds]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
