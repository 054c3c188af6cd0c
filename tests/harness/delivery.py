"""The two ways toolfit reaches Envoy, behind one face for the suites: `start(kind, plugin, upstream)`
gives an object with .ready, .port, .request(), .prom(), .logs() and .stop() whichever it is.

- "wasm": dist/toolfit.wasm in Envoy (envoy/envoy.yaml), counters in Envoy's /stats/prometheus.
- "ext_proc": target/release/toolfit-extproc beside Envoy (envoy/extproc.yaml, BUFFERED unless told),
  the same plugin JSON as its --config, counters on the processor's /metrics.

The suites (tests/envoy/e2e.py, responses.py, faults.py) run their checks through both; checks only one host can
make (the Wasm VM's trap policy, a dead processor) stay with that host."""
import http.client, json, os, subprocess, sys, tempfile, time

from harness import runner
from harness.paths import EXTPROC, ROOT  # noqa: F401
from harness.runner import free_port

DELIVERIES = ("wasm", "ext_proc")

# runner.TEST_ROUTES turns the Wasm filter off on one route by its per-filter config; ext_proc's own
WASM_OFF = """                  toolfit:
                    "@type": type.googleapis.com/envoy.config.route.v3.FilterConfig
                    disabled: true
"""
EXTPROC_OFF = """                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    disabled: true
"""


class Processor(runner.Process):
    """toolfit-extproc on loopback ports (or its gRPC service on the Unix socket `unix`), `config` written
    as its --config file."""

    def __init__(self, config, flags=(), ports=None, unix=None):
        self.port, self.metrics_port = ports or (free_port(), free_port())
        self.dir = tempfile.mkdtemp(prefix="toolfit-extproc-")
        self.cfg = os.path.join(self.dir, "config.json")
        open(self.cfg, "w").write(json.dumps(config))
        self.log = open(os.path.join(self.dir, "extproc.log"), "w+")
        listen = f"unix:{unix}" if unix else f"127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([EXTPROC, "--config", self.cfg, "--listen", listen,
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

    def messages(self):
        """Its JSON log lines as Envoy would print them ("[info] toolfit: ..."), so one pattern reads both."""
        out = []
        for line in self.logs().splitlines():
            try:
                j = json.loads(line)
                level = {"warn": "warning"}.get(j["level"], j["level"])
                out.append(f"[{level}] {j['msg']}")
            except (ValueError, KeyError, TypeError):
                out.append(line)
        return "\n".join(out)


class ExtprocEnvoy(runner.Envoy):
    """envoy/extproc.yaml with its ports, the request body mode and (optionally) routes substituted; a
    `processor_port` that is a path is the processor's Unix socket (a `pipe` address)."""

    def __init__(self, upstream_port, processor_port, body_mode="BUFFERED", routes=None, response_mode="STREAMED", tls=None, config_file=None):
        self.port, self.admin = free_port(), free_port()
        text = open(config_file or os.path.join(ROOT, "envoy", "extproc.yaml")).read()
        # the MCP leg's configs listen beside the inference leg's (10001, admin 9902, server 8081, processor 50052)
        for a, b in (("9902", "9901"), ("10001", "10000"), ("8081", "8080"), ("50052", "50051")):
            text = text.replace(f"port_value: {a}}}", f"port_value: {b}}}")
        text = text.replace("port_value: 9901", f"port_value: {self.admin}").replace("port_value: 10000", f"port_value: {self.port}")
        text = text.replace("port_value: 8080", f"port_value: {upstream_port}")
        if isinstance(processor_port, str):  # a path resolves by no DNS: the cluster is STATIC
            text = text.replace("  - name: toolfit_extproc\n    type: STRICT_DNS", "  - name: toolfit_extproc\n    type: STATIC")
            text = text.replace("{socket_address: {address: 127.0.0.1, port_value: 50051}}", f"{{pipe: {{path: {processor_port}}}}}")
        text = text.replace("port_value: 50051", f"port_value: {processor_port}")
        if tls:  # {"ca": server CA file, "sni": name, and "cert", "key" for mutual TLS}: Envoy originates TLS to the processor
            text = text.replace("  - name: toolfit_extproc\n", "  - name: toolfit_extproc\n" + tls_socket(tls), 1)
        text = text.replace("request_body_mode: BUFFERED", f"request_body_mode: {body_mode}")
        if body_mode == "FULL_DUPLEX_STREAMED":
            # Envoy requires it in this mode: a body that ends in trailers ends there
            text = text.replace("request_trailer_mode: SKIP", "request_trailer_mode: SEND")
        if response_mode != "STREAMED":
            text = text.replace("response_body_mode: STREAMED", f"response_body_mode: {response_mode}")
            if response_mode == "FULL_DUPLEX_STREAMED":
                text = text.replace("response_trailer_mode: SKIP", "response_trailer_mode: SEND")
        if routes:
            text = text.replace("              - name: chat\n", routes.replace(WASM_OFF, EXTPROC_OFF) + "              - name: chat\n", 1)
        self.start("stats_flush_interval: 1s\n" + text)


def tls_socket(tls):
    """The toolfit_extproc cluster's transport socket: TLS to the processor, checking its certificate
    against `ca` and `sni`, with the client certificate `cert`/`key` where given (mutual TLS)."""
    pair = (f"\n          tls_certificates: [{{certificate_chain: {{filename: {tls['cert']}}}, private_key: {{filename: {tls['key']}}}}}]"
            if tls.get("cert") else "")
    return f"""    transport_socket:
      name: envoy.transport_sockets.tls
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
        sni: {tls['sni']}
        common_tls_context:
          alpn_protocols: [h2]{pair}
          validation_context:
            trusted_ca: {{filename: {tls['ca']}}}
            match_typed_subject_alt_names: [{{san_type: DNS, matcher: {{exact: {tls['sni']}}}}}]
"""


class ExtProc:
    """The processor and its Envoy (envoy/extproc.yaml, or `config_file`: envoy/mcp-extproc.yaml for the
    MCP leg), seen as one Envoy with toolfit in it; `tls` as ExtprocEnvoy's (the processor's --tls-*
    flags then go in `flags`)."""

    def __init__(self, plugin, upstream_port, test_routes=True, routes=None, body_mode="BUFFERED", flags=(), response_mode="STREAMED", config_file=None, tls=None):
        self.processor = Processor(plugin, flags)
        self.envoy = ExtprocEnvoy(upstream_port, self.processor.port, body_mode, (routes or runner.TEST_ROUTES) if (test_routes or routes) else None, response_mode,
                                  tls=tls, config_file=config_file)
        self.port, self.admin, self.proc = self.envoy.port, self.envoy.admin, self.envoy.proc
        self.ready = self.processor.ready and self.envoy.ready

    def request(self, *a, **kw):
        return self.envoy.request(*a, **kw)

    def get_admin(self, path):
        return self.envoy.get_admin(path)

    def prom(self):
        return self.processor.get("/metrics")[1]

    def logs(self):
        return self.envoy.logs() + "\n" + self.processor.messages()

    def stop(self):
        self.envoy.stop()
        self.processor.stop()


def start(kind, plugin, upstream_port, **kw):
    """toolfit in front of `upstream_port`, delivered as `kind` (one of DELIVERIES)."""
    if kind == "wasm":
        return runner.Envoy(plugin, upstream_port, **kw)
    if not os.path.exists(EXTPROC):
        sys.exit(f"missing {EXTPROC}: run cargo build --release --workspace")
    return ExtProc(plugin, upstream_port, **kw)


def label(kind):
    """What a check's name starts with: nothing for the Wasm filter (the names the suites always had)."""
    return "" if kind == "wasm" else f"{kind}: "
