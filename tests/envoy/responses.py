#!/usr/bin/env python3
"""End-to-end, the response path: the built dist/toolfit.wasm in a real Envoy in front of a scripted
upstream that answers in each API's format, plain and streamed (its chunks cut where the test says, so
a name or an argument string is split at every position). The client must get the original tool names
and none of the nulls toolfit's strict rewrite made the model write, every other byte as the upstream
sent it; a response to a request that needs no repair must reach the client before the upstream has
finished it; invalid calls are counted against the schema the client sent. Prints one line per check
and 'N passed, M failed'."""
import http.client, json, os, re, sys, threading, time
from http.server import ThreadingHTTPServer

from harness import runner, verdict
from harness.runner import WASM, echo_upstream, free_port
from harness.verdict import check


class Script:
    """What the upstream answers next: (content type, list of chunks); each chunk is written and
    flushed on its own, `gap` seconds apart, so Envoy sees it as its own piece of the body."""
    def __init__(self):
        self.ctype, self.chunks, self.gap, self.requests = "application/json", [b"{}"], 0.0, []
        self.encoding = None  # a Content-Encoding the chunks are already in
        self.wait = None  # a threading.Event the upstream waits on after the first chunk


SCRIPT = Script()


class Upstream(echo_upstream.Recorder):
    """Reads a request as the recording upstream does, then answers what SCRIPT says."""

    def do_POST(self):
        body, _ = self.read_body()
        SCRIPT.requests.append(body)
        self.send_response(200)
        self.send_header("content-type", SCRIPT.ctype)
        if SCRIPT.encoding:
            self.send_header("content-encoding", SCRIPT.encoding)
        if SCRIPT.ctype == "application/json" and len(SCRIPT.chunks) == 1:
            self.send_header("content-length", str(len(SCRIPT.chunks[0])))
            self.end_headers()
            self.wfile.write(SCRIPT.chunks[0])
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for n, c in enumerate(SCRIPT.chunks):
            if c:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
                self.wfile.flush()
            if n == 0 and SCRIPT.wait is not None:
                SCRIPT.wait.wait(10)
            time.sleep(SCRIPT.gap)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def answer(ctype, chunks, gap=0.0, encoding=None):
    SCRIPT.ctype, SCRIPT.chunks, SCRIPT.gap, SCRIPT.wait = ctype, [c.encode() if isinstance(c, str) else c for c in chunks], gap, None
    SCRIPT.encoding = encoding


def post(e, path, body, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", e.port, timeout=30)
    c.request("POST", path, body=json.dumps(body).encode(), headers={"content-type": "application/json", **(headers or {})})
    r = c.getresponse()
    return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}


def counter(prom, name, route, profile):
    m = re.search(rf'^toolfit_{name}\{{route="{route}",profile="{profile}"\}} (\d+)', prom, re.M)
    return int(m.group(1)) if m else 0


def tool_counter(prom, name, route, profile, tool):
    m = re.search(rf'^toolfit_{name}\{{route="{route}",profile="{profile}",tool="{tool}"\}} (\d+)', prom, re.M)
    return int(m.group(1)) if m else 0


def stats(e):
    time.sleep(1.2)  # stats_flush_interval
    return e.prom()


# A tool an MCP server publishes: a name OpenAI and Anthropic refuse, and an optional property that
# OpenAI strict makes required-and-nullable.
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer", "minimum": 1}}, "required": ["q"]}
ROUTES = [
    {"path": "/v1/chat/completions", "format": "openai-chat", "profile": "openai-strict"},
    {"path": "/v1/responses", "format": "openai-responses", "profile": "openai-strict"},
    {"path": "/v1/messages", "format": "anthropic", "profile": "anthropic"},
    {"prefix": "/v1beta/models/", "format": "gemini", "profile": "gemini"},
    {"path": "/api/chat", "format": "ollama", "profile": "ollama"},
    {"path": "/v2/chat", "format": "cohere", "profile": "cohere"},
    # a route that lists Bedrock names its profile and model map (the default route has both)
    {"prefix": "/model/", "format": "bedrock-converse", "profile": "bedrock", "models": {"anthropic.claude-*": "bedrock-anthropic", "*.anthropic.claude-*": "bedrock-anthropic"}},
    {"path": "/llama/v1/chat/completions", "format": "openai-chat", "profile": "llama-cpp"},
]


def sse(events, named=False):
    out = []
    for ev in events:
        data = ev if isinstance(ev, str) else json.dumps(ev, separators=(",", ":"))
        head = f"event: {ev['type']}\n" if named and isinstance(ev, dict) else ""
        out.append(f"{head}data: {data}\n\n")
    return "".join(out)


def cuts(text, needle):
    """Every two-chunk cut of `text` at each position of `needle` in it (and around it)."""
    at = text.index(needle)
    return [[text[:k], text[k:]] for k in range(max(at - 1, 1), at + len(needle) + 2)]


def chat_stream(name_parts, arg_parts):
    ev = [{"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "héllo"}, "finish_reason": None}]}]
    for i, n in enumerate(name_parts):
        f = {"name": n, "arguments": ""}
        tc = {"index": 0, "function": f} if i else {"index": 0, "id": "call_1", "type": "function", "function": f}
        ev.append({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]})
    for a in arg_parts:
        ev.append({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}, "finish_reason": None}]})
    ev.append({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return sse(ev + ["[DONE]"])


def assemble_chat(text):
    name, args, others = "", "", []
    for block in text.split("\n\n"):
        if not block.startswith("data: ") or block == "data: [DONE]":
            others.append(block)
            continue
        v = json.loads(block[6:])
        tcs = v["choices"][0]["delta"].get("tool_calls")
        if not tcs:
            others.append(block)
            continue
        f = tcs[0].get("function", {})
        name += f.get("name") or ""
        args += f.get("arguments") or ""
    return name, args, others


def openai(e):
    req = {"model": "gpt-4o", "messages": [{"role": "user", "content": "find"},
                                           {"role": "assistant", "tool_calls": [{"id": "old", "type": "function", "function": {"name": "gh.search", "arguments": "{}"}}]},
                                           {"role": "tool", "tool_call_id": "old", "content": "[]"}],
           "tools": [{"type": "function", "function": {"name": "gh.search", "description": "search", "parameters": SCHEMA}}],
           "tool_choice": {"type": "function", "function": {"name": "gh.search"}}}
    plain = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "gh_search", "arguments": "{\"q\":\"a\",\"n\":null}"}}]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3}}
    up = json.dumps(plain, indent=1)
    answer("application/json", [up])
    status, body, headers = post(e, "/v1/chat/completions", req)
    sent = json.loads(SCRIPT.requests[-1])
    check("openai: the upstream sees a valid name in tools, tool_choice and earlier calls",
          sent["tools"][0]["function"]["name"] == "gh_search" and sent["tool_choice"]["function"]["name"] == "gh_search"
          and sent["messages"][1]["tool_calls"][0]["function"]["name"] == "gh_search" and "gh.search" not in SCRIPT.requests[-1].decode(), SCRIPT.requests[-1][:300])
    want = up.replace('"gh_search"', '"gh.search"').replace('{\\"q\\":\\"a\\",\\"n\\":null}', '{\\"q\\":\\"a\\"}')
    check("openai plain: original name, injected null gone, every other byte as sent", status == 200 and body.decode() == want, body[:400])
    check("openai plain: a body that changed length has no stale Content-Length", headers.get("content-length") in (None, str(len(body))), headers)
    # 3 MiB in 64 KiB chunks, past Envoy's default 1 MiB buffer limit: toolfit holds it itself, no 500
    big = up[:-1] + ', "pad": "' + "z" * (3 << 20) + '"}'
    answer("application/json", [big[i:i + 65536] for i in range(0, len(big), 65536)])
    status, body, _ = post(e, "/v1/chat/completions", req)
    check("openai plain: a 3 MiB response held for repair arrives whole and repaired", status == 200 and body.decode() == want[:-1] + big[len(up) - 1:], (status, len(body)))

    # streamed: the name split over two deltas, the arguments over three; then every cut of the chunk
    # that carries the name and of the one that carries the null
    text = chat_stream(["gh_", "search"], ["{\"q\":", "\"a\",\"n\"", ":null}"])
    bad = []
    for chunks in [[text]] + cuts(text, '"gh_"') + cuts(text, '"search"') + cuts(text, ':null}'):
        answer("text/event-stream", chunks, gap=0.02)
        status, body, _ = post(e, "/v1/chat/completions", {**req, "stream": True})
        name, args, others = assemble_chat(body.decode())
        _, _, want_others = assemble_chat(text)
        if not (status == 200 and name == "gh.search" and json.loads(args) == {"q": "a"} and others == want_others):
            bad.append((len(chunks[0]), name, args, body.decode()[:200]))
    check("openai stream: name and arguments repaired at every cut, other events byte for byte", not bad, bad[:2])
    p = stats(e)
    check("openai: names_restored and nulls_removed counted", counter(p, "names_restored", "chat", "openai-strict") >= 2
          and counter(p, "nulls_removed", "chat", "openai-strict") >= 2, [l for l in p.splitlines() if "restored" in l or "nulls" in l][:4])


def responses(e):
    req = {"model": "gpt-4o", "input": "find", "tools": [{"type": "function", "name": "gh.search", "parameters": SCHEMA}]}
    item = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "gh_search", "arguments": "{\"q\":\"a\",\"n\":null}", "status": "completed"}
    up = json.dumps({"id": "r", "object": "response", "output": [{"type": "message", "content": []}, item]})
    answer("application/json", [up])
    status, body, _ = post(e, "/v1/responses", req)
    out = json.loads(body)["output"][1] if status == 200 else {}
    check("responses plain: function_call item repaired", out.get("name") == "gh.search" and json.loads(out.get("arguments", "null")) == {"q": "a"}, body[:300])
    events = [
        {"type": "response.output_item.added", "output_index": 1, "item": {**item, "arguments": "", "status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{\"q\":\"a\","},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "\"n\":null}"},
        {"type": "response.function_call_arguments.done", "output_index": 1, "item_id": "fc_1", "arguments": item["arguments"]},
        {"type": "response.output_item.done", "output_index": 1, "item": item},
        {"type": "response.completed", "response": {"id": "r", "output": [item]}},
    ]
    text = sse(events, named=True)
    answer("text/event-stream", [text[:90], text[90:400], text[400:]], gap=0.02)
    status, body, _ = post(e, "/v1/responses", {**req, "stream": True})
    evs = [json.loads(b.split("data: ", 1)[1]) for b in body.decode().split("\n\n") if "data: " in b]
    deltas = "".join(x.get("delta", "") for x in evs if x["type"].endswith("arguments.delta"))
    done = [x for x in evs if x["type"] == "response.output_item.done"]
    check("responses stream: deltas, done events and the summary all say the original name, no null",
          len(evs) == len(events) and json.loads(deltas) == {"q": "a"} and "gh_search" not in body.decode() and "null" not in body.decode()
          and done and done[0]["item"]["name"] == "gh.search", body[:500])


def anthropic(e):
    req = {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}],
           "tools": [{"name": "gh.search", "input_schema": SCHEMA}], "tool_choice": {"type": "tool", "name": "gh.search"}}
    up = json.dumps({"id": "m", "type": "message", "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t", "name": "gh_search", "input": {"q": "a"}}]})
    answer("application/json", [up])
    status, body, _ = post(e, "/v1/messages", req)
    sent = json.loads(SCRIPT.requests[-1])
    check("anthropic: request names mapped (tools, tool_choice), response name restored",
          sent["tools"][0]["name"] == "gh_search" and sent["tool_choice"]["name"] == "gh_search" and body.decode() == up.replace("gh_search", "gh.search"), body[:300])
    events = [{"type": "message_start", "message": {"id": "m"}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "gh_search", "input": {}}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"q\": \"a\"}"}},
              {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
    text = sse(events, named=True)
    bad = []
    for chunks in cuts(text, '"gh_search"'):
        answer("text/event-stream", chunks, gap=0.02)
        status, body, _ = post(e, "/v1/messages", {**req, "stream": True})
        if body.decode() != text.replace('"gh_search"', '"gh.search"'):
            bad.append((len(chunks[0]), body[:200]))
    check("anthropic stream: tool_use name restored at every cut of it, the rest byte for byte", not bad, bad[:2])


def gemini(e):
    req = {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": [{"name": "9lives.search", "parameters": SCHEMA}]}]}
    part = {"functionCall": {"name": "_9lives.search", "args": {"q": "a", "n": 0}}}
    up = json.dumps({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
    answer("application/json", [up])
    status, body, _ = post(e, "/v1beta/models/gemini-2.5-flash:generateContent", req)
    sent = json.loads(SCRIPT.requests[-1])
    check("gemini: a name that starts with a digit sent with '_' in front, restored in the response",
          sent["tools"][0]["functionDeclarations"][0]["name"] == "_9lives.search" and body.decode() == up.replace("_9lives", "9lives"), body[:300])
    text = sse([{"candidates": [{"content": {"role": "model", "parts": [part]}}]}])
    answer("text/event-stream", cuts(text, '"_9lives.search"')[3], gap=0.02)
    status, body, _ = post(e, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", req)
    check("gemini stream: restored", body.decode() == text.replace("_9lives", "9lives"), body[:300])
    p = stats(e)
    check("gemini: the call with n=0 counted invalid against the client's schema (minimum 1), per tool",
          counter(p, "tool_calls_invalid", "gemini", "gemini") >= 2 and tool_counter(p, "calls_invalid", "gemini", "gemini", "9lives_search") >= 2,
          [l for l in p.splitlines() if "invalid" in l and "gemini" in l][:6])


def cohere(e):
    req = {"model": "command-a", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "search", "description": "d", "parameters": SCHEMA}}]}
    up = json.dumps({"id": "x", "message": {"role": "assistant", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"a\"}"}}]}, "finish_reason": "TOOL_CALL"})
    answer("application/json", [up])
    status, body, _ = post(e, "/v2/chat", req)
    events = [{"type": "message-start", "id": "x"},
              {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {"id": "1", "type": "function", "function": {"name": "search", "arguments": ""}}}}},
              {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": "{\"n\": 5}"}}}}},
              {"type": "tool-call-end", "index": 0}, {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}]
    text = sse(events, named=True)
    answer("text/event-stream", [text[:200], text[200:]], gap=0.02)
    status2, body2, _ = post(e, "/v2/chat", {**req, "stream": True})
    p = stats(e)
    check("cohere: plain and streamed calls pass byte for byte; the streamed one without q counted invalid",
          body.decode() == up and body2.decode() == text and counter(p, "tool_calls_seen", "cohere", "cohere") == 2
          and counter(p, "tool_calls_invalid", "cohere", "cohere") == 1, [l for l in p.splitlines() if "tool_calls" in l and "cohere" in l])


def ollama_and_untouched(e):
    req = {"model": "qwen", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "search", "description": "d", "parameters": SCHEMA}}]}
    lines = [json.dumps({"message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "search", "arguments": {"n": 2}}}]}, "done": False}) + "\n",
             json.dumps({"done": True}) + "\n"]
    answer("application/x-ndjson", lines, gap=0.02)
    status, body, _ = post(e, "/api/chat", req)
    check("ollama NDJSON: passes byte for byte", body.decode() == "".join(lines), body[:200])
    p = stats(e)
    check("ollama: the call without the required q counted invalid", counter(p, "tool_calls_invalid", "ollama", "ollama") == 1
          and counter(p, "tool_calls_seen", "ollama", "ollama") == 1, [l for l in p.splitlines() if "tool_calls" in l and "ollama" in l])
    logs = e.logs()
    check("ollama: a log line names the tool and the place", re.search(r'invalid tool call: tool "search" at /: required property "q" is missing', logs) is not None, logs[-600:])

    # a request that needs no repair: its stream reaches the client while the upstream is still writing
    text = chat_stream(["search"], ["{\"q\":\"a\"}"])
    first, rest = text[:text.index("\n\n") + 2], text[text.index("\n\n") + 2:]
    answer("text/event-stream", [first, rest])
    SCRIPT.wait = threading.Event()
    c = http.client.HTTPConnection("127.0.0.1", e.port, timeout=30)
    c.request("POST", "/llama/v1/chat/completions", body=json.dumps({**req, "stream": True}).encode(), headers={"content-type": "application/json"})
    r = c.getresponse()
    got = b""
    t0 = time.time()
    while not got.endswith(b"\n\n") and time.time() - t0 < 8:
        got += r.read1(65536)
    early = got.decode() == first and not SCRIPT.wait.is_set()
    SCRIPT.wait.set()
    got += r.read()
    check("a response to a request that needs no repair is not held: the first event arrives before the upstream goes on",
          early and got.decode() == text, got[:200])


def patterns_and_formats(e):
    """A call that breaks a pattern is counted invalid against the client's schema; one whose date is
    malformed is not (`format` is an annotation in 2020-12: the validator never calls it a violation)."""
    schema = {"type": "object", "properties": {"key": {"type": "string", "pattern": "^[A-Z]+-\\d+$"}, "day": {"type": "string", "format": "date"}}}
    req = {"model": "qwen", "stream": False, "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "jira", "description": "d", "parameters": schema}}]}
    before = counter(stats(e), "tool_calls_invalid", "ollama", "ollama")
    for args in ({"key": "abc"}, {"day": "2023-02-30"}, {"key": "AB-12", "day": "2024-02-29"}):
        answer("application/json", [json.dumps({"message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "jira", "arguments": args}}]}, "done": True})])
        post(e, "/api/chat", req)
    p = stats(e)
    logs = e.logs()
    check("a call that breaks a pattern is counted invalid; a malformed date (format, an annotation) and the valid call are not",
          counter(p, "tool_calls_invalid", "ollama", "ollama") - before == 1 and "does not match" in logs and "is not a valid date" not in logs,
          (counter(p, "tool_calls_invalid", "ollama", "ollama") - before, logs[-600:]))


def encodings(e):
    """Compressed answers on a route whose replies are repaired: decoded, repaired, sent as identity;
    a body that does not decode (corrupt, or a bomb past the limit) goes on as it came, counted."""
    import gzip, zlib
    req = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "gh.search", "parameters": SCHEMA}}]}
    up = json.dumps({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "gh_search", "arguments": "{\"q\":\"a\",\"n\":null}"}}]}, "finish_reason": "tool_calls"}]})
    want = up.replace('"gh_search"', '"gh.search"').replace('{\\"q\\":\\"a\\",\\"n\\":null}', '{\\"q\\":\\"a\\"}')
    z = gzip.compress(up.encode())
    for name, chunks, enc in [("gzip in one piece", [z], "gzip"), ("gzip byte by byte", [z[i:i + 1] for i in range(len(z))], "gzip"),
                              ("deflate (zlib)", [zlib.compress(up.encode())], "deflate")]:
        answer("application/json", chunks, encoding=enc)
        status, body, headers = post(e, "/v1/chat/completions", req)
        check(f"compressed reply, {name}: decoded, repaired, forwarded without Content-Encoding", status == 200 and body.decode() == want and "content-encoding" not in headers,
              (status, headers.get("content-encoding"), body[:200]))
    before = counter(stats(e), "responses_unrepaired", "chat", "openai-strict")
    junk = b"\x1f\x8b\x08\x00 not really gzip " * 4
    answer("application/json", [junk], encoding="gzip")
    status, body, _ = post(e, "/v1/chat/completions", req)
    check("a reply that says gzip but is not: the bytes go on as they came, status kept", status == 200 and body == junk, (status, body[:80]))
    bomb = gzip.compress(b"\0" * (40 << 20))
    answer("text/event-stream", [bomb], encoding="gzip")
    status, body, _ = post(e, "/v1/chat/completions", {**req, "stream": True})
    check("a gzip bomb (40 MiB of zeros in %d bytes) is not inflated: the bytes go on as they came" % len(bomb), status == 200 and body == bomb, (status, len(body)))
    check("both counted responses_unrepaired", counter(stats(e), "responses_unrepaired", "chat", "openai-strict") - before == 2)
    SCRIPT.encoding = None


def reject(kind="wasm", **delivery_options):
    """`on_invalid_tool_call: reject`: the response's headers wait for its body (the Wasm filter holds
    it; the processor has Envoy buffer it, or holds it itself when the body comes full-duplex), and an
    invalid call turns the answer into a 502."""
    from harness import delivery
    port = free_port()
    srv = ThreadingHTTPServer(("127.0.0.1", port), Upstream)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    routes = [{**ROUTES[0], "on_invalid_tool_call": "reject"}]
    e = delivery.start(kind, {"profile": "openai-strict", "framing": "exact", "routes": routes}, port, test_routes=False, **delivery_options)
    try:
        req = {"model": "gpt-4o", "messages": [], "tools": [{"type": "function", "function": {"name": "gh.search", "description": "s", "parameters": SCHEMA}}]}
        ok = json.dumps({"choices": [{"index": 0, "message": {"tool_calls": [{"id": "1", "type": "function", "function": {"name": "gh_search", "arguments": "{\"q\":\"a\",\"n\":null}"}}]}}]})
        answer("application/json", [ok])
        status, body, _ = post(e, "/v1/chat/completions", req)
        check("reject: a valid call passes repaired (200)", status == 200 and json.loads(body)["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{\"q\":\"a\"}", (status, body[:200]))
        answer("application/json", [ok.replace('\\"q\\":\\"a\\",', "")])
        status, body, headers = post(e, "/v1/chat/completions", req)
        err = json.loads(body).get("error", {}) if body.startswith(b"{") else {}
        check("reject: an invalid call answers 502 with the tool and the place", status == 502 and err.get("tool") == "gh.search"
              and err.get("type") == "toolfit_invalid_tool_call" and headers.get("x-toolfit") == "invalid-tool-call", (status, body[:300]))
        p = stats(e)
        check("reject: tool_calls_rejected counted", counter(p, "tool_calls_rejected", "chat", "openai-strict") == 1)
        # big replies: the Wasm filter holds the body itself up to max_body_bytes (16 MiB); the processor
        # has Envoy buffer it, up to the route's buffer limit (17 MiB in envoy/extproc.yaml). Within them
        # a reply is repaired; past them it reaches the client whole as it came, counted, never an error
        calls = json.loads(ok)["choices"][0]["message"]["tool_calls"]
        for mib, repaired in ((3, True), (18, False)):
            big = json.dumps({"choices": [{"index": 0, "message": {"content": "x" * (mib << 20), "tool_calls": calls}}]})
            answer("application/json", [big[i:i + 65536] for i in range(0, len(big), 65536)])
            before = counter(stats(e), "responses_unrepaired", "chat", "openai-strict")
            status, body, _ = post(e, "/v1/chat/completions", req)
            got = json.loads(body) if body.startswith(b"{") else {}
            args = got.get("choices", [{}])[0].get("message", {}).get("tool_calls", [{}])[0].get("function", {}).get("arguments")
            unrepaired = counter(stats(e), "responses_unrepaired", "chat", "openai-strict") - before
            if repaired:
                check(f"reject: a {mib} MiB reply waits whole and is repaired (200)", status == 200 and args == "{\"q\":\"a\"}" and unrepaired == 0, (status, len(body), args))
            else:
                check(f"reject: a {mib} MiB reply, past what waits: whole as it came (200), counted unrepaired",
                      status == 200 and len(body) == len(big) and args == "{\"q\":\"a\",\"n\":null}" and unrepaired == 1, (status, len(body), args, unrepaired))
    finally:
        e.stop()
        srv.shutdown()


def bedrock(e):
    """Bedrock Converse: names mapped in toolSpec and toolChoice, the reply's toolUse name restored, Claude's
    model (in the path, percent-encoded) picking bedrock-anthropic; a request the client signed (SigV4)
    reaches the upstream byte for byte and is counted."""
    union = {"anyOf": [{"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}, {"type": "object", "properties": {"id": {"type": "integer"}}}]}
    req = {"messages": [{"role": "user", "content": [{"text": "x"}]}],
           "toolConfig": {"tools": [{"toolSpec": {"name": "gh.search", "description": "", "inputSchema": {"json": union}}}], "toolChoice": {"tool": {"name": "gh.search"}}}}
    up = json.dumps({"output": {"message": {"role": "assistant", "content": [{"text": "ok"}, {"toolUse": {"toolUseId": "t", "name": "gh_search", "input": {"q": "a"}}}]}},
                     "stopReason": "tool_use", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}})
    for model, union_kept in (("us.anthropic.claude-sonnet-4-5-20250929-v1%3A0", False), ("meta.llama3-70b-instruct-v1%3A0", True)):
        answer("application/json", [up])
        status, body, _ = post(e, f"/model/{model}/converse", req)
        sent = json.loads(SCRIPT.requests[-1])
        spec = sent["toolConfig"]["tools"][0]["toolSpec"]
        check(f"bedrock {model.split('.')[1].split('-')[0]}: names mapped (toolSpec, toolChoice), the empty description removed, the reply's toolUse name restored",
              spec["name"] == "gh_search" and sent["toolConfig"]["toolChoice"]["tool"]["name"] == "gh_search" and "description" not in spec
              and body.decode() == up.replace("gh_search", "gh.search"), body[:300])
        check(f"bedrock {model.split('.')[1].split('-')[0]}: a root union {'kept beside type: object' if union_kept else 'made one object (Claude refuses it)'}",
              ("anyOf" in spec["inputSchema"]["json"]) == union_kept and spec["inputSchema"]["json"].get("type") == "object", spec)
    signed = {"authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261127/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
              "x-amz-date": "20261127T000000Z"}
    answer("application/json", [up])
    status, body, _ = post(e, "/model/meta.llama3-70b-instruct-v1%3A0/converse", req, signed)
    check("bedrock: a request the client signed reaches the upstream byte for byte (a rewrite would break its signature)",
          SCRIPT.requests[-1] == json.dumps(req).encode() and status == 200, SCRIPT.requests[-1][:200])
    check("bedrock: counted skipped_signed", re.search(r'^toolfit_skipped_signed\{[^}]*\} [1-9]', e.prom(), re.M) is not None)


# what the checks through the processor with full-duplex response bodies are named after
FULL_DUPLEX = "ext_proc, full-duplex responses: "

# every part that reads a response, in order (reject() needs its own Envoy)
PARTS = (openai, responses, anthropic, gemini, cohere, bedrock, ollama_and_untouched, patterns_and_formats, encodings)


def run_parts(e, parts, label=""):
    """Runs each part against `e` (an Envoy, or a delivery.ExtProc), every check named after `label`."""
    verdict.LABEL = label
    try:
        for part in parts:
            try:
                part(e)
            except Exception as x:  # one broken part must not hide the others' results
                check(f"{part.__name__} ran", False, repr(x))
    finally:
        verdict.LABEL = ""


def main():
    from harness import delivery
    runner.use_venv_envoy()
    if not os.path.exists(WASM):
        sys.exit(f"missing {WASM}: run make wasm")
    port = free_port()
    srv = ThreadingHTTPServer(("127.0.0.1", port), Upstream)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        # the two deliveries, then the processor with full-duplex response bodies (agentgateway's
        # default, and what Istio's inference pools use): each piece answered with streamed bytes
        runs = [(kind, delivery.label(kind), {}) for kind in delivery.DELIVERIES] + [("ext_proc", FULL_DUPLEX, {"response_mode": "FULL_DUPLEX_STREAMED"})]
        for kind, label, options in runs:
            e = delivery.start(kind, {"profile": "llama-cpp", "routes": ROUTES}, port, test_routes=False, **options)
            check(f"{label}toolfit and envoy start with the response-path routes", e.ready, e.logs()[-1500:])
            if not e.ready:
                continue
            try:
                run_parts(e, PARTS, label)
                if kind == "wasm":
                    # the per-tool metric names join what e2e.py saved for the deploy/ tests' dashboard check
                    names = runner.read_metric_names()[0] or set()
                    names |= set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )", e.prom(), re.M))
                    runner.write_metric_names(sorted(names))
            finally:
                e.stop()
    finally:
        srv.shutdown()
    for kind in delivery.DELIVERIES:
        verdict.LABEL = delivery.label(kind)
        reject(kind)
    verdict.LABEL = FULL_DUPLEX
    reject("ext_proc", response_mode="FULL_DUPLEX_STREAMED")
    verdict.LABEL = ""


if __name__ == "__main__":
    verdict.run("responses", main)
