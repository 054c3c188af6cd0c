#!/usr/bin/env python3
"""Real SDKs through Envoy and toolfit: openai (Chat Completions, Responses, response_format), anthropic,
google-genai (`parameters` and `parametersJsonSchema`), cohere (v2), ollama, mistralai and groq, each from PyPI in its own
venv under ~/.cache/toolfit/clients, with its own requests, headers (Accept-Encoding included: httpx asks
for br and zstd here, since those packages are installed) and parsers. Behind Envoy stands a test double
for each hosted API (there is no network here): it answers in that API's shape, plain or streamed, calls
every tool under the name toolfit sent, writes null wherever the schema it received allows null (what a
strict-mode model does for an optional parameter), and compresses its answer in the coding the test
names for the route, as far as the request's Accept-Encoding allows.

What the SDK hands to the program must carry the original tool names, no injected null, and arguments
valid against the schema the program sent, for every SDK x profile x plain/stream x gzip/deflate, with
`responses_unrepaired` 0. Prints one line per check, the client matrix, and 'N passed, M failed'."""
import gzip, http.client, json, os, re, subprocess, sys, tempfile, threading, time, zlib
from http.server import ThreadingHTTPServer

from harness import runner, verdict
from harness.runner import Envoy, echo_upstream, free_port
from harness.verdict import check
from harness.venv import venv

PINS = ["openai-agents==0.24.0", "google-genai==3.4.0", "anthropic==2.12.0", "cohere==7.3.1", "ollama==0.6.3", "mistralai==3.7.0", "groq==1.7.0",
        "brotli==1.2.1", "zstandard==0.25.0"]
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "client_worker.py")

# What programs declare: an MCP-style dotted name (OpenAI and Anthropic refuse the dot), a name past 64
# characters (OpenAI and Gemini refuse it), optional parameters (strict mode makes them nullable), a
# property name with `-` (Gemini's `parameters` refuse it).
TOOLS = [
    {"name": "github.search_issues", "description": "Search issues",
     "schema": {"type": "object", "properties": {"q": {"type": "string"}, "per-page": {"type": "integer", "minimum": 1},
                                                 "labels": {"type": "array", "items": {"type": "string"}}}, "required": ["q"]}},
    {"name": "workspace_" + "very_long_tool_name_" * 3 + "for_listing_files",
     "description": "List files", "schema": {"type": "object", "properties": {"path": {"type": "string"}, "recursive": {"type": "boolean"}}, "required": ["path"]}},
]
OUTPUT = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city", "days"], "additionalProperties": False}

# SDK -> the profiles its API is served with here, and the route format
SDKS = {
    "openai-chat": ("openai-chat", "/v1/chat/completions", ["openai-strict", "openai", "llama-cpp", "vllm"]),
    "openai-format": ("openai-chat", "/v1/chat/completions", ["openai-strict", "llama-cpp"]),
    "openai-responses": ("openai-responses", "/v1/responses", ["openai-strict", "openai"]),
    "anthropic": ("anthropic", "/v1/messages", ["anthropic", "anthropic-strict"]),
    "gemini": ("gemini", "/v1beta/models/", ["gemini"]),
    "cohere": ("cohere", "/v2/chat", ["cohere"]),
    "ollama": ("ollama", "/api/chat", ["ollama", "llama-cpp"]),
    "mistral": ("openai-chat", "/v1/chat/completions", ["mistral"]),
    "groq": ("openai-chat", "/openai/v1/chat/completions", ["groq", "groq-strict"]),
}
CODINGS = ["gzip", "deflate"]
# Envoy routes for the clients' paths (/CODING/PROFILE/...), with toolfit on and the inference body limit
ENVOY_ROUTES = "".join(f"""              - name: clients
                match: {{prefix: /{c}/}}
                route: {{cluster: llama, timeout: 0s}}
                request_body_buffer_limit: 17825792
""" for c in CODINGS)


# ---------------------------------------------------------------- the hosted-API double

def nullable(s):
    t = s.get("type")
    return (isinstance(t, list) and "null" in t) or s.get("nullable") is True or \
        any(isinstance(x, dict) and x.get("type") == "null" for x in s.get("anyOf", []) + s.get("oneOf", []))


def sample(s):
    """A value for schema `s` as received, null wherever it allows null."""
    if not isinstance(s, dict) or nullable(s):
        return None
    if "enum" in s:
        return s["enum"][0]
    t = s.get("type")
    t = next((x for x in t if x != "null"), "string") if isinstance(t, list) else (t or ("object" if "properties" in s else "string"))
    t = t.lower()
    if t == "object":
        return {k: sample(v) for k, v in (s.get("properties") or {}).items()}
    if t == "array":
        return [sample(s.get("items") or {"type": "string"})]
    return {"string": "x", "integer": 3, "number": 1.5, "boolean": True}.get(t, "x")


def received_tools(fmt, req):
    """(name as sent, schema as sent) of every tool the upstream received."""
    out = []
    for t in req.get("tools") or []:
        if fmt in ("chat", "cohere", "ollama"):
            out.append((t["function"]["name"], t["function"].get("parameters") or {}))
        elif fmt == "responses":
            out.append((t["name"], t.get("parameters") or {}))
        elif fmt == "anthropic":
            out.append((t["name"], t.get("input_schema") or {}))
        elif fmt == "gemini":
            for d in t.get("functionDeclarations") or []:
                out.append((d["name"], d.get("parametersJsonSchema") or d.get("parameters_json_schema") or d.get("parameters") or {}))
    return out


def sse(events, named=False):
    return [((f"event: {e['type']}\n" if named and isinstance(e, dict) else "") + "data: " + (e if isinstance(e, str) else json.dumps(e)) + "\n\n").encode() for e in events]


def halves(s):
    return [s[:len(s) // 2], s[len(s) // 2:]]


def answer(fmt, req, path):
    """(content type, chunks) of the API's answer calling every received tool."""
    calls = [(n, sample(s)) for n, s in received_tools(fmt, req)]
    stream = req.get("stream", fmt == "ollama") or ":streamGenerateContent" in path
    if fmt == "chat" and "response_format" in req:
        text = json.dumps(sample(req["response_format"]["json_schema"]["schema"]))
        if not stream:
            return "application/json", [json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).encode()]
        ev = [{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in halves(text)]
        return "text/event-stream", sse(ev + [{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"])
    if fmt == "chat":
        if not stream:
            tcs = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]
            return "application/json", [json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": tcs}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}}).encode()]
        base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        ev = []
        if "/mistral/" in path:  # Mistral streams each call whole, its arguments in one piece
            ev = [{**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": f"call{i:05d}", "type": "function",
                                                                              "function": {"name": n, "arguments": json.dumps(a)}}]}, "finish_reason": None}]}
                  for i, (n, a) in enumerate(calls)]
            calls = []
        for i, (n, a) in enumerate(calls):
            ev.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": ""}}]}, "finish_reason": None}]})
            ev += [{**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": p}}]}, "finish_reason": None}]} for p in halves(json.dumps(a))]
        return "text/event-stream", sse(ev + [{**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}, "[DONE]"])
    if fmt == "responses":
        items = [{"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": n, "arguments": json.dumps(a), "status": "completed"} for i, (n, a) in enumerate(calls)]
        resp = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": "completed", "output": items, "parallel_tool_calls": True,
                "tool_choice": "auto", "tools": []}
        if not stream:
            return "application/json", [json.dumps(resp).encode()]
        ev, seq = [{"type": "response.created", "sequence_number": 0, "response": {**resp, "status": "in_progress", "output": []}}], 1
        for i, it in enumerate(items):
            ev.append({"type": "response.output_item.added", "sequence_number": seq, "output_index": i, "item": {**it, "arguments": "", "status": "in_progress"}})
            ev += [{"type": "response.function_call_arguments.delta", "sequence_number": seq + 1 + k, "output_index": i, "item_id": it["id"], "delta": p} for k, p in enumerate(halves(it["arguments"]))]
            ev.append({"type": "response.function_call_arguments.done", "sequence_number": seq + 3, "output_index": i, "item_id": it["id"], "name": it["name"], "arguments": it["arguments"]})
            ev.append({"type": "response.output_item.done", "sequence_number": seq + 4, "output_index": i, "item": it})
            seq += 5
        ev.append({"type": "response.completed", "sequence_number": seq, "response": resp})
        return "text/event-stream", sse(ev, named=True)
    if fmt == "anthropic":
        blocks = [{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)]
        usage = {"input_tokens": 1, "output_tokens": 1}
        msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": blocks, "stop_reason": "tool_use", "stop_sequence": None, "usage": usage}
        if not stream:
            return "application/json", [json.dumps(msg).encode()]
        ev = [{"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}}]
        for i, b in enumerate(blocks):
            ev.append({"type": "content_block_start", "index": i, "content_block": {**b, "input": {}}})
            ev += [{"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": p}} for p in halves(json.dumps(b["input"]))]
            ev.append({"type": "content_block_stop", "index": i})
        ev += [{"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 1}}, {"type": "message_stop"}]
        return "text/event-stream", sse(ev, named=True)
    if fmt == "gemini":
        parts = [{"functionCall": {"name": n, "args": a}} for n, a in calls]
        if not stream:
            return "application/json", [json.dumps({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}).encode()]
        return "text/event-stream", sse([{"candidates": [{"content": {"role": "model", "parts": [p]}}]} for p in parts]
                                         + [{"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]}])
    if fmt == "cohere":
        tcs = [{"id": f"t{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]
        if not stream:
            return "application/json", [json.dumps({"id": "x", "finish_reason": "TOOL_CALL", "message": {"role": "assistant", "tool_calls": tcs}}).encode()]
        ev = [{"type": "message-start", "id": "x", "delta": {"message": {"role": "assistant"}}}]
        for i, tc in enumerate(tcs):
            ev.append({"type": "tool-call-start", "index": i, "delta": {"message": {"tool_calls": {**tc, "function": {"name": tc["function"]["name"], "arguments": ""}}}}})
            ev += [{"type": "tool-call-delta", "index": i, "delta": {"message": {"tool_calls": {"function": {"arguments": p}}}}} for p in halves(tc["function"]["arguments"])]
            ev.append({"type": "tool-call-end", "index": i})
        ev.append({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}})
        return "text/event-stream", sse(ev, named=True)
    # ollama: NDJSON, one call per line, then the closing line
    line = lambda o: (json.dumps(o) + "\n").encode()
    msgs = [{"model": "m", "created_at": "2026-01-01T00:00:00Z", "message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": n, "arguments": a}}]}, "done": False} for n, a in calls]
    done = {"model": "m", "created_at": "2026-01-01T00:00:00Z", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}
    if not stream:
        tcs = [m["message"]["tool_calls"][0] for m in msgs]
        return "application/json", [json.dumps({**done, "message": {"role": "assistant", "content": "", "tool_calls": tcs}}).encode()]
    return "application/x-ndjson", [line(m) for m in msgs] + [line(done)]


class Api(echo_upstream.Recorder):
    """The hosted API's double. The path's first segment names the coding it answers in."""
    seen = []  # (path, accept-encoding received, coding sent, names received, whether it wrote a null)
    cut = []  # paths whose answer the other side stopped reading

    def do_POST(self):
        try:
            self.answer_post()
        except (BrokenPipeError, ConnectionResetError):
            Api.cut.append(self.path)

    def coding(self, path, accept):
        """The coding of the answer: the one the path's first segment names, if the request accepts it."""
        want = path.split("/")[1]
        return want if re.search(rf"(^|[\s,]){want}(\s*(;|,|$))", accept) else "identity"

    def answer_post(self):
        body, _ = self.read_body()
        path = self.path
        fmt = next(f for suffix, f in [("/chat/completions", "chat"), ("/responses", "responses"), ("/messages", "anthropic"),
                                       ("Content", "gemini"), ("/v2/chat", "cohere"), ("/api/chat", "ollama")] if suffix in path.split("?")[0])
        ctype, chunks = answer(fmt, json.loads(body), path)
        accept = self.headers.get("accept-encoding", "")
        # paced: an uncompressed stream, one chunk every `pace` seconds (llama-server streams so)
        pace = float(self.headers.get("x-test-pace") or 0)
        coding = self.coding(path, accept) if not pace else "identity"
        calls = [(n, sample(x)) for n, x in received_tools(fmt, json.loads(body))]
        Api.seen.append((path, accept, coding, [n for n, _ in calls], any(v is None for _, a in calls if isinstance(a, dict) for v in a.values()), body.decode()))
        self.send_response(200)
        self.send_header("content-type", ctype)
        if coding != "identity":
            self.send_header("content-encoding", coding)
        # gzip (RFC 1952) or zlib-wrapped deflate (RFC 1950), flushed after every chunk like a server
        # that streams compressed events
        z = zlib.compressobj(wbits=31 if coding == "gzip" else 15)
        enc = (lambda c: z.compress(c) + z.flush(zlib.Z_SYNC_FLUSH)) if coding != "identity" else (lambda c: c)
        if ctype == "application/json":
            data = chunks[0] if coding == "identity" else z.compress(chunks[0]) + z.flush()
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for c in [enc(c) for c in chunks]:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
            self.wfile.flush()
            time.sleep(pace or 0.005)
        # every event is out; a client may stop reading now (the openai SDK closes at [DONE])
        try:
            tail = z.flush() if coding != "identity" else b""
            self.wfile.write((b"%x\r\n%s\r\n" % (len(tail), tail) if tail else b"") + b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


# ---------------------------------------------------------------- checks

def valid(value, s, at="$"):
    """Problems of `value` against the simple schemas above (types, required, items, minimum, no extra keys)."""
    t = s.get("type")
    ok = {"object": dict, "array": list, "string": str, "boolean": bool}.get(t)
    if t == "integer":
        if not (isinstance(value, int) and not isinstance(value, bool)) or value < s.get("minimum", value):
            return [f"{at}: {value!r} is not an integer >= {s.get('minimum')}"]
        return []
    if ok and not isinstance(value, ok):
        return [f"{at}: {value!r} is not {t}"]
    out = []
    if t == "object":
        props = s.get("properties", {})
        out += [f"{at}: {k} missing" for k in s.get("required", []) if k not in value]
        out += [f"{at}.{k}: not declared" for k in value if k not in props]
        for k, v in value.items():
            if k in props:
                out += valid(v, props[k], f"{at}.{k}")
    if t == "array":
        for i, v in enumerate(value):
            out += valid(v, s.get("items", {}), f"{at}[{i}]")
    return out


# A tool no grammar can enforce as it is (a look-around pattern): on a strict route toolfit refuses it
# with a 400 in the API's own error shape, which each SDK must read as its API's error (REFUSED: the
# class, and the status each SDK reads from the body; Gemini's `status` string).
LOSSY = {"name": "lookup", "description": "Look up", "schema": {"type": "object", "properties": {"k": {"type": "string", "pattern": "^(?!x)"}}, "required": ["k"]}}
REFUSED = {"openai-chat": ("BadRequestError", 400), "openai-format": ("BadRequestError", 400), "openai-responses": ("BadRequestError", 400),
           "anthropic": ("BadRequestError", 400), "gemini": ("ClientError", 400), "cohere": ("BadRequestError", 400), "ollama": ("ResponseError", 400),
           "mistral": ("SDKError", 400), "groq": ("BadRequestError", 400)}
# The ollama client drops `pattern` (its Tool model has no field for it) before the request leaves; a
# property name with a quote, which llama.cpp before 2025-05 cannot write into a grammar, gets through.
LOSSY_OLLAMA = {"name": "lookup", "description": "Look up", "schema": {"type": "object", "properties": {'k"': {"type": "string"}}, "required": ['k"']}}
STRICT = "llama-cpp-strict"  # the path segment of the strict routes (profile llama-cpp, strict: true)


def routes():
    out = []
    for sdk, (fmt, path, _) in SDKS.items():
        r = {"prefix": f"/gzip/{STRICT}" + path} if path.endswith("/") else {"path": f"/gzip/{STRICT}" + path}
        if not any(all(x.get(k) == v for k, v in r.items()) for x in out):
            out.append({**r, "format": fmt, "profile": "llama-cpp", "strict": True})
    for sdk, (fmt, path, profiles) in SDKS.items():
        for prof in profiles:
            for coding in CODINGS:
                base = f"/{coding}/{prof}"
                r = {"prefix": base + path} if path.endswith("/") else {"path": base + path}
                if not any(all(x.get(k) == v for k, v in r.items()) for x in out):
                    out.append({**r, "format": fmt, "profile": prof})
    return out


PACE = 0.4


def arrivals(port, path, body, accept):
    """(Content-Encoding, [seconds after the request at which each SSE event reached the client])."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.time()
    c.request("POST", path, body=body, headers={"content-type": "application/json", "accept-encoding": accept, "x-test-pace": str(PACE)})
    r = c.getresponse()
    times, buf = [], b""
    while chunk := r.read1(65536):
        buf += chunk
        while b"\n\n" in buf:
            _, buf = buf.split(b"\n\n", 1)
            times.append(time.time() - t0)
    return r.getheader("content-encoding"), times


def streaming(e, up_port):
    """Streaming stays streaming: an event stream the upstream sent uncompressed reaches a client that
    accepts gzip uncompressed, each event as it comes (the shipped compressor compressed it, and a gzip
    stream reaches the client in lumps: an agent CLI gave up on it), at the times it reaches the client
    direct."""
    req = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": t["name"], "parameters": t["schema"]}} for t in TOOLS]}
    path, body = "/gzip/llama-cpp/v1/chat/completions", json.dumps(req).encode()
    direct = arrivals(up_port, path, body, "gzip")
    through = arrivals(e.port, path, body, "gzip")
    late = [round(b - a, 2) for a, b in zip(direct[1], through[1])]
    check(f"an uncompressed event stream reaches a gzip-accepting client through Envoy uncompressed, each of its {len(direct[1])} events "
          f"as direct (one every {PACE} s; later by {late} s)",
          through[0] is None and direct[0] is None and len(through[1]) == len(direct[1]) >= 3 and all(d < 0.25 for d in late),
          (through[0], direct[1], through[1]))
    # the control: the events really were spread out, so lumping them would have shown
    check("the control: the paced events reach the client direct at least a pace apart",
          len(direct[1]) >= 3 and all(b - a >= PACE * 0.8 for a, b in zip(direct[1], direct[1][1:-1])), direct[1])


def main():
    env = subprocess.run([os.path.join(runner.ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    runner.ENVOY = os.path.join(env, "bin", "envoy")
    if not os.path.exists(runner.WASM):
        sys.exit(f"missing {runner.WASM}: run make wasm")
    print("building the clients' venv (cached)", flush=True)
    py = venv("clients", PINS)
    up = ThreadingHTTPServer(("127.0.0.1", free_port()), Api)
    up.daemon_threads = True
    threading.Thread(target=up.serve_forever, daemon=True).start()
    plugin = {"profile": "llama-cpp", "framing": "exact", "max_body_bytes": 16777216, "routes": routes()}
    e = Envoy(plugin, up.server_address[1], routes=ENVOY_ROUTES)
    check("envoy starts with envoy/envoy.yaml (its compressor included) and the wasm", e.ready, e.logs()[-1500:])
    if not e.ready:
        return
    streaming(e, up.server_address[1])
    jobs = []
    for sdk, (_, _, profiles) in SDKS.items():
        for prof in profiles:
            for coding in CODINGS:
                for stream in (False, True):
                    fields = ["parameters", "parameters_json_schema"] if sdk == "gemini" else [None]
                    for field in fields:
                        jobs.append({"id": len(jobs), "sdk": sdk, "profile": prof, "coding": coding, "stream": stream, "field": field,
                                     "base": f"http://127.0.0.1:{e.port}/{coding}/{prof}", "tools": TOOLS, "output": OUTPUT,
                                     "strict": prof in ("openai", "anthropic-strict", "groq")})
    first_refused = len(jobs)
    for sdk in SDKS:
        jobs.append({"id": len(jobs), "sdk": sdk, "profile": STRICT, "coding": "gzip", "stream": False, "field": None, "refused": True,
                     "base": f"http://127.0.0.1:{e.port}/gzip/{STRICT}", "tools": [LOSSY_OLLAMA if sdk == "ollama" else LOSSY],
                     "output": LOSSY["schema"], "strict": False, **({"field": "parameters_json_schema"} if sdk == "gemini" else {})})
    jf = os.path.join(tempfile.mkdtemp(prefix="toolfit-clients-"), "jobs.json")
    json.dump(jobs, open(jf, "w"))
    t0 = time.time()
    p = subprocess.run([py, WORKER, jf], capture_output=True, text=True, timeout=900)
    got = {}
    for line in p.stdout.splitlines():
        try:
            r = json.loads(line)
            got[r["id"]] = r
        except ValueError:
            pass
    check(f"the worker answered every job ({len(got)}/{len(jobs)}, {time.time() - t0:.0f} s)", len(got) == len(jobs), p.stderr[-1500:])

    # strict mode's 400, read by each SDK as its own API's error: its error class and status, and the
    # message naming the tool and the place where that SDK looks for a message
    for j in jobs[first_refused:]:
        r = got.get(j["id"], {"error": "no answer"})
        want_class, want_status = REFUSED[j["sdk"]]
        ref = r.get("refused") or {}
        msg = ref.get("message") or ""
        tool = "answer" if j["sdk"] == "openai-format" else "lookup"  # a structured output is named by its format
        ok = ref.get("class") == want_class and ref.get("status") == want_status and f'tool "{tool}"' in msg and "/properties/k" in msg
        if j["sdk"] == "gemini":
            ok = ok and msg.startswith("INVALID_ARGUMENT: ")
        check(f"{j['sdk']}: strict mode's 400 reaches the program as the SDK's {want_class} ({want_status}) with toolfit's message", ok, r)
    jobs = jobs[:first_refused]
    names = {t["name"]: t["schema"] for t in TOOLS}
    matrix = {}
    for j in jobs:
        r = got.get(j["id"], {"error": "no answer"})
        label = f"{j['sdk']}{'/' + j['field'] if j['field'] else ''} {j['profile']} {'stream' if j['stream'] else 'plain'} {j['coding']}"
        if j["sdk"] == "openai-format":
            probs = ["error: " + r["error"]] if "error" in r else valid(r.get("output"), OUTPUT)
        else:
            calls = r.get("calls") or []
            probs = ["error: " + r["error"] + r.get("trace", "")[-300:]] if "error" in r else []
            if not probs and sorted(n for n, _ in calls) != sorted(names):
                probs.append(f"names {[n for n, _ in calls]} are not the declared {sorted(names)}")
            for n, a in calls:
                if n in names:
                    probs += valid(a, names[n], n)
        matrix[(j["sdk"] + ("/" + j["field"] if j["field"] else ""), j["profile"], j["stream"], j["coding"])] = not probs
        check(f"{label}: original names, no null, arguments valid against the schema sent", not probs, probs[:3])

    # what reached the upstream and the client
    asked = [x[1] for x in Api.seen]
    check("the upstream was never offered br or zstd (the SDKs asked for them; toolfit reads only gzip and deflate)",
          asked and not any(re.search(r"\b(br|zstd)\b", a) for a in asked), sorted(set(asked))[:5])
    sdk_accept = subprocess.run([py, "-c", "import httpx; print(httpx.Client().headers['accept-encoding'])"], capture_output=True, text=True).stdout.strip()
    check(f"the SDKs' own Accept-Encoding offers codings toolfit cannot read ({sdk_accept!r}), so narrowing is exercised",
          re.search(r"\b(br|zstd)\b", sdk_accept), sdk_accept)
    sent = {x[2] for x in Api.seen}
    check("the upstream answered compressed, gzip and deflate", {"gzip", "deflate"} <= sent, sent)
    # the repairs were due: what the upstream received had mapped names and, on strict routes, nulls
    refused = [(x[0], n) for x in Api.seen if re.search(r"/(openai|anthropic)", x[0])
               for n in x[3] if not re.fullmatch(r"[a-zA-Z0-9_-]{1,%d}" % (128 if "/anthropic" in x[0] else 64), n)]
    check("the upstream received only names OpenAI and Anthropic accept (toolfit mapped the dotted and the long one)",
          not refused and any("/openai" in x[0] for x in Api.seen), refused[:3])
    strict = [x for x in Api.seen if "/openai-strict/" in x[0] and "/chat/completions" in x[0]]
    check("on openai-strict the double wrote the nulls the strict schemas allow (so nulls_removed had work)", strict and all(x[4] for x in strict if x[3]), strict[:2])
    c = http.client.HTTPConnection("127.0.0.1", e.port, timeout=30)
    req = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": t["name"], "parameters": t["schema"]}} for t in TOOLS]}
    c.request("POST", "/deflate/openai-strict/v1/chat/completions", body=json.dumps(req), headers={"content-type": "application/json", "accept-encoding": "gzip"})
    r = c.getresponse()
    raw, enc = r.read(), r.getheader("content-encoding")
    try:
        reply = json.loads(gzip.decompress(raw)) if enc == "gzip" else {}
        fns = [tc["function"] for tc in reply["choices"][0]["message"]["tool_calls"]]
        ok = sorted(f["name"] for f in fns) == sorted(names) and all(not valid(json.loads(f["arguments"]), names[f["name"]]) for f in fns)
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        ok = False
    check("a repaired reply reaches a gzip client gzip-compressed by Envoy's compressor, original names, no null",
          enc == "gzip" and ok, (enc, raw[:200]))
    time.sleep(1.2)  # stats_flush_interval
    prom = e.prom()
    unrepaired = sum(int(v) for v in re.findall(r"^toolfit_responses_unrepaired\{[^}]*\} (\d+)", prom, re.M))
    restored = sum(int(v) for v in re.findall(r"^toolfit_names_restored\{[^}]*\} (\d+)", prom, re.M))
    nulls = sum(int(v) for v in re.findall(r"^toolfit_nulls_removed\{[^}]*\} (\d+)", prom, re.M))
    keys = sum(int(v) for v in re.findall(r"^toolfit_properties_restored\{[^}]*\} (\d+)", prom, re.M))
    gem = [json.loads(x[5])["tools"][0]["functionDeclarations"][0] for x in Api.seen if "/gemini/" in x[0]]
    in_params = [d["parameters"]["properties"] for d in gem if "parameters" in d]
    in_json = [d["parameters_json_schema"]["properties"] for d in gem if "parameters_json_schema" in d]
    check("Gemini: `parameters` reached the API with per_page for per-page, `parametersJsonSchema` as sent; the SDK got per-page back (properties_restored)",
          in_params and in_json and all("per_page" in p and "per-page" not in p for p in in_params) and all("per-page" in p for p in in_json) and keys >= len(in_params),
          (keys, in_params[:1], in_json[:1]))
    check(f"responses_unrepaired is 0 over every client (names_restored {restored}, nulls_removed {nulls})", unrepaired == 0 and restored > 0 and nulls > 0,
          [l for l in prom.splitlines() if "unrepaired" in l and not l.endswith(" 0")])
    check("every answer was read to its end (no stream cut short by Envoy or the client)", not Api.cut, Api.cut[:4])
    e.stop()
    up.shutdown()

    print("\nclient matrix (ok / FAIL per plain and stream, gzip and deflate):")
    rows = sorted({(s, p) for s, p, _, _ in matrix})
    for s, p in rows:
        cells = [("ok" if matrix.get((s, p, st, cd)) else "FAIL") for st in (False, True) for cd in CODINGS]
        print(f"| {s} | {p} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    verdict.run("clients", main)
