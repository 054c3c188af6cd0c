#!/usr/bin/env python3
"""The placement contract in front of an inference pool: toolfit runs before the Endpoint Picker (EPP).
Each chain below is built in a real Envoy 1.40 the way the gateway builds it, with an EPP stand-in
(`extproc/examples/epp_standin.rs`: an ext_proc server in FULL_DUPLEX_STREAMED mode, as Istio and Envoy
Gateway run the EPP, that reads the whole body, records it and names the pod in
`x-gateway-destination-endpoint`) and an original-destination cluster that follows that header to a
recording upstream, as GIE gateways route to the picked pod.

Checked per chain: the EPP read the rewritten tools (the bytes the model server then receives, so its
prefix-cache scoring sees the real prompt), `model` and routing headers untouched, `content-length`
exact or absent, the same input twice gives the same bytes, an untouched body goes on byte for byte.
The order without Envoy Gateway's `filterOrder` (ext_proc before Wasm) is run too, to show the wrong
order is caught: there the EPP scores the body the client sent, not the one the pod receives.

toolfit's configuration in each chain is the one the overlay deploys (deploy/inference-gateway's
WasmPlugin, deploy/envoy-gateway's EnvoyExtensionPolicy, deploy/envoy-gateway-extproc's and
deploy/agentgateway's ConfigMaps; agentgateway's processing modes from its AgentgatewayPolicy: Envoy
stands in for agentgateway's proxy here, which this machine cannot run).
Run with the venv's python (PyYAML): make test does. Prints 'placement: N passed, M failed'."""
import json, os, subprocess, sys, tempfile, time

import yaml

from harness import delivery, runner, verdict
from harness.paths import ROOT
from harness.runner import free_port
from harness.verdict import check

STANDIN = os.path.join(ROOT, "target", "release", "examples", "epp_standin")
DESTINATION = "x-gateway-destination-endpoint"


class Standin(runner.Process):
    """The EPP stand-in on a loopback port; `records()` is what it read, one dict per request."""

    def __init__(self, upstream_port):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="toolfit-epp-")
        self.record = os.path.join(self.dir, "record.jsonl")
        self.log = open(os.path.join(self.dir, "epp.log"), "w+")
        self.proc = subprocess.Popen([STANDIN, "--listen", f"127.0.0.1:{self.port}", "--record", self.record,
                                      "--destination", f"127.0.0.1:{upstream_port}"], stdout=self.log, stderr=subprocess.STDOUT)
        end = time.time() + 10
        while time.time() < end and "listening" not in self.logs():
            time.sleep(0.05)

    def records(self):
        if not os.path.exists(self.record):
            return []
        out = []
        for line in open(self.record):
            r = json.loads(line)
            out.append({"headers": r["headers"], "body": bytes.fromhex(r["body_hex"])})
        return out


def h2_cluster(name, port):
    return {"name": name, "type": "STATIC", "connect_timeout": "2s",
            "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}}}},
            "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [
                {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": port}}}}]}]}}


def epp_filter():
    """The InferencePool's ext_proc as Istio builds it: FULL_DUPLEX_STREAMED both ways, trailers sent
    (Envoy requires it in that mode), fail-open as the pool's `failureMode: FailOpen`."""
    return {"name": "envoy.filters.http.ext_proc.epp", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
        "grpc_service": {"envoy_grpc": {"cluster_name": "epp"}, "timeout": "10s"},
        "failure_mode_allow": True, "message_timeout": "5s",
        "processing_mode": {"request_header_mode": "SEND", "response_header_mode": "SEND",
                            "request_body_mode": "FULL_DUPLEX_STREAMED", "response_body_mode": "FULL_DUPLEX_STREAMED",
                            "request_trailer_mode": "SEND", "response_trailer_mode": "SEND"}}}


def wasm_filter(plugin):
    """toolfit as Istio's WasmPlugin (and Envoy Gateway's `wasm[]`) builds it: a Wasm filter without
    allow_on_headers_stop_iteration (neither API can set it), so chunked framing, fail-open."""
    return {"name": "toolfit", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
        "config": {"name": "toolfit", "root_id": "toolfit", "fail_open": True,
                   "vm_config": {"vm_id": "toolfit", "runtime": "envoy.wasm.runtime.v8", "code": {"local": {"filename": runner.WASM}}},
                   "configuration": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": json.dumps(plugin)}}}}


def extproc_filter(modes=None):
    """toolfit-extproc's filter as envoy/extproc.yaml attaches it (BUFFERED request body), its processing
    modes replaced by `modes` if given, pointed at this chain's `toolfit_extproc` cluster."""
    cfg = yaml.safe_load(open(os.path.join(ROOT, "envoy", "extproc.yaml")))
    hcm = cfg["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    f = next(x for x in hcm["http_filters"] if x["name"] == "envoy.filters.http.ext_proc")
    f["typed_config"]["grpc_service"]["envoy_grpc"]["cluster_name"] = "toolfit_extproc"
    if modes:
        f["typed_config"]["processing_mode"] = modes
    return f


def agentgateway_modes(policy):
    """The AgentgatewayPolicy's processingOptions in Envoy's spelling."""
    o = policy["spec"]["traffic"]["extProc"]["processingOptions"]
    word = lambda v: {"FullDuplexStreamed": "FULL_DUPLEX_STREAMED", "BufferedPartial": "BUFFERED_PARTIAL"}.get(v, v.upper())  # noqa: E731
    return {"request_header_mode": word(o["requestHeaderMode"]), "request_body_mode": word(o["requestBodyMode"]),
            "request_trailer_mode": word(o["requestTrailerMode"]), "response_header_mode": word(o["responseHeaderMode"]),
            "response_body_mode": word(o["responseBodyMode"]), "response_trailer_mode": word(o["responseTrailerMode"])}


class Chain(runner.Envoy):
    """An Envoy whose HTTP filters are `filters` then the router, routing every request to the pod the
    EPP names (an original-destination cluster on its header)."""

    def __init__(self, filters, epp_port, extproc_port=None):
        self.port, self.admin = free_port(), free_port()
        router = {"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}
        hcm = {"name": "envoy.filters.network.http_connection_manager", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "gateway", "http_filters": filters + [router],
            "route_config": {"name": "pool", "virtual_hosts": [{"name": "pool", "domains": ["*"], "routes": [
                {"name": "chat", "match": {"prefix": "/"}, "route": {"cluster": "pool", "timeout": "0s"}}]}]}}}
        clusters = [{"name": "pool", "type": "ORIGINAL_DST", "lb_policy": "CLUSTER_PROVIDED", "connect_timeout": "2s",
                     "original_dst_lb_config": {"use_http_header": True, "http_header_name": DESTINATION}},
                    h2_cluster("epp", epp_port)]
        if extproc_port:
            clusters.append(h2_cluster("toolfit_extproc", extproc_port))
        cfg = {"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": self.admin}}},
               "static_resources": {"listeners": [{"name": "gateway", "address": {"socket_address": {"address": "127.0.0.1", "port_value": self.port}},
                                                   "per_connection_buffer_limit_bytes": 17825792,
                                                   "filter_chains": [{"filters": [hcm]}]}], "clusters": clusters}}
        self.start(json.dumps(cfg))


def overlay(name):
    p = subprocess.run(["kubectl", "kustomize", os.path.join(ROOT, "deploy", name)], capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def deployed_configs():
    """toolfit's configuration as each overlay deploys it."""
    istio = next(o["spec"]["pluginConfig"] for o in overlay("inference-gateway") if o["kind"] == "WasmPlugin")
    eg = next(o["spec"]["wasm"][0]["config"] for o in overlay("envoy-gateway") if o["kind"] == "EnvoyExtensionPolicy")
    ext = next(json.loads(o["data"]["config.json"]) for o in overlay("envoy-gateway-extproc") if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "toolfit-extproc-config")
    agw = overlay("agentgateway")
    agw_config = next(json.loads(o["data"]["config.json"]) for o in agw if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "toolfit-extproc-config")
    agw_modes = agentgateway_modes(next(o for o in agw if o["kind"] == "AgentgatewayPolicy"))
    return istio, eg, ext, (agw_config, agw_modes)


def body_of(request_text):
    return json.dumps(request_text).encode()


REWRITE = {"model": "qwen2.5-7b", "messages": [{"role": "user", "content": "Get issue PROJ-7"}],
           "tools": [runner.tool("get_issue", runner.NEEDS_FIX)]}
UNTOUCHED = b'{"model": "qwen2.5-7b",  "messages": [{"role": "user", "content": "hi"}], "stream": false}'


def contract(name, envoy, epp, rec, want_rewrite=True):
    """The placement contract through `envoy`; `want_rewrite`: toolfit runs before the EPP."""
    body = body_of(REWRITE)
    want = runner.cli(body)
    status, _, _ = envoy.request("POST", "/v1/chat/completions", body, {"x-gateway-model-name": "qwen2.5-7b"})
    scored = epp.records()[-1] if epp.records() else {}
    got = runner.last(rec)
    pod = got.get("body")
    if not want_rewrite:
        # the wrong order: the EPP read what the client sent, the pod received toolfit's rewrite
        check(f"{name}: the EPP scores the client's body while the pod receives the rewrite (the wrong order shows)",
              status == 200 and scored.get("body") == body and pod == want != body, status)
        return
    check(f"{name}: the EPP read toolfit's rewrite, and the pod received the bytes the EPP read",
          status == 200 and scored.get("body") == want != body and pod == want, f"{status} epp={len(scored.get('body', b''))} pod={len(pod or b'')} want={len(want)}")
    model = lambda b: json.loads(b).get("model") if b else None  # noqa: E731
    check(f"{name}: `model` and the routing header untouched", model(scored.get("body")) == model(pod) == "qwen2.5-7b"
          and scored.get("headers", {}).get("x-gateway-model-name") == "qwen2.5-7b" and got.get("headers", {}).get("x-gateway-model-name") == "qwen2.5-7b")
    cl = [scored.get("headers", {}).get("content-length"), got.get("headers", {}).get("content-length")]
    check(f"{name}: content-length exact or absent before and after the EPP", all(c is None or c == str(len(want)) for c in cl), cl)
    envoy.request("POST", "/v1/chat/completions", body)
    again = epp.records()[-1]["body"]
    check(f"{name}: the same input gives the same bytes (prefix-cache scoring repeats)", again == scored.get("body"))
    vllm = body_of({**REWRITE, "model": "qwen2.5-7b-vllm"})
    envoy.request("POST", "/v1/chat/completions", vllm)
    check(f"{name}: the vLLM pool's model gets the vllm profile (the overlay's models map)", epp.records()[-1]["body"] == runner.cli(vllm, profile="vllm") != vllm)
    envoy.request("POST", "/v1/chat/completions", UNTOUCHED)
    check(f"{name}: a body toolfit does not rewrite reaches the EPP and the pod byte for byte",
          epp.records()[-1]["body"] == UNTOUCHED == runner.last(rec).get("body"))


def main():
    runner.use_venv_envoy()
    for f in (runner.WASM, runner.TOOLFIT, delivery.EXTPROC, STANDIN):
        if not os.path.exists(f):
            sys.exit(f"missing {f}: run make build wasm (and cargo build --release --workspace --example epp_standin)")
    upstream_port = free_port()
    _, rec = runner.echo_upstream.serve(upstream_port)
    istio, eg, ext, (agw_config, agw_modes) = deployed_configs()

    epp = Standin(upstream_port)
    check("the EPP stand-in listens", "listening" in epp.logs(), epp.logs()[-500:])
    try:
        # Istio with an InferencePool: every WasmPlugin phase sits before the pool's ext_proc
        # (deploy/inference-gateway); Envoy Gateway with EnvoyProxy.spec.filterOrder putting the Wasm
        # filter first builds the same chain (deploy/envoy-gateway), each with its overlay's config
        for gateway, plugin in (("Istio", istio), ("Envoy Gateway with filterOrder", eg)):
            envoy = Chain([wasm_filter(plugin), epp_filter()], epp.port)
            try:
                check(f"{gateway}: Envoy runs toolfit (Wasm) before the EPP", envoy.ready, envoy.logs()[-1500:])
                contract(f"{gateway}, Wasm before the EPP", envoy, epp, rec)
            finally:
                envoy.stop()
        # Envoy Gateway's default order: ext_proc filters before Wasm ones
        envoy = Chain([epp_filter(), wasm_filter(eg)], epp.port)
        try:
            check("Envoy Gateway without filterOrder: Envoy runs the EPP first", envoy.ready, envoy.logs()[-1500:])
            contract("EPP before Wasm", envoy, epp, rec, want_rewrite=False)
        finally:
            envoy.stop()
        # agentgateway, GKE, Envoy Gateway's extProc: toolfit-extproc as the first ext_proc
        # and the modes agentgateway's policy names (a streamed request body), with its overlay's config
        for label, config, modes in (("Envoy Gateway extProc", ext, None), ("agentgateway's modes", agw_config, agw_modes)):
            processor = delivery.Processor(config)
            envoy = Chain([extproc_filter(modes), epp_filter()], epp.port, processor.port)
            try:
                check(f"{label}: toolfit-extproc before the EPP, Envoy and the processor run", envoy.ready and processor.ready, envoy.logs()[-1500:] + processor.logs()[-500:])
                contract(f"{label}, ext_proc before the EPP", envoy, epp, rec)
            finally:
                envoy.stop()
                processor.stop()
        llama_pod(istio)
    finally:
        epp.stop()


def llama_pod(plugin):
    """Istio's chain with a real model server as the pod the EPP names: llama-server 2026-10 (built and
    cached by tests/envoy/llama_server.py) with the tiny generated model. It answers the request whose
    rewritten body the EPP read, with a tool call its grammar (from toolfit's schema) allowed."""
    import llama_server
    server = llama_server.Server(llama_server.server_binary("0.3.36"), llama_server.model("0.3.36", "qwen2.5"), 1)
    epp = Standin(server.port)
    envoy = Chain([wasm_filter(plugin), epp_filter()], epp.port)
    try:
        body = body_of({**REWRITE, "max_tokens": 48, "tool_choice": "required"})
        status, out, _ = envoy.request("POST", "/v1/chat/completions", body)
        try:
            answer = json.loads(out)
        except ValueError:
            answer = {}
        check("Istio's chain to a real llama-server pod: the EPP read toolfit's rewrite and llama-server answered that request",
              status == 200 and epp.records() and epp.records()[-1]["body"] == runner.cli(body) != body and "choices" in answer, (status, out[:300]))
    finally:
        envoy.stop()
        epp.stop()
        server.stop()


if __name__ == "__main__":
    verdict.run("placement", main)
