#!/usr/bin/env python3
"""The coding agents developers run, from npm, through Envoy and toolfit: Claude Code (`claude -p`, Messages),
Codex (`codex exec`, Responses), Gemini CLI (`gemini -p`, streamGenerateContent) and opencode (`opencode run`,
Chat Completions), each with the real MCP servers the agents suite runs (server-everything,
server-filesystem, mcp-server-time) connected, each in a fresh HOME.

Between toolfit and the backend stands a tap (or, for a hosted API, the API's double) that records every
request the backend received and what it answered. Two backends:

- a real llama-server 2026-10 (the `llama-cpp` profile; opencode also against 2025-08, which serves chat
  only): the CLI exits 0 and prints the model's turn, llama-server answers every request 200, and the
  tools it received are exactly what `toolfit normalize` makes of the tools the CLI sent. With
  `--context` the tiny model gets the 131,072 tokens Claude Code's first request needs.
  The turn that calls a tool: the prompt carries a mark; on that turn's first request the tap narrows
  the tools to the MCP time tool, requires a call and opens it (`<tool_call>`, as the agents suite
  does), which is how a tiny random-weight model is made to call; the arguments are the grammar's, with
  the timezone's text pinned to "UTC" (a made-up one the time server refuses, on whatever CPU samples it).
  Every call the CLI runs is tapped on its way to the MCP server (mcp_tap.py): its arguments must be valid
  against the server's own inputSchema and the server must answer with the time; and the schema each
  request offered must keep every required name and property type of the server's (harness.contract).
- a double of each hosted API that judges what it receives by that API's rules (the hosted judges'
  worker: the APIs' own SDKs, the documented rules, Python's `re` for OpenAI patterns, the name rules)
  and answers 400 in the API's error shape, or, on the first turn, a call to the MCP time tool under the
  name it received (the time server's name is one a platform team might give it, long enough that
  opencode's `<server>_<tool>` passes OpenAI's 64 characters, so toolfit maps it), and on the second
  turn a text saying whether the tool's result came back.

Every run goes raw (no toolfit) and through toolfit by both deliveries (the Wasm filter and
toolfit-extproc). The CLI's own transcript (`--output-format stream-json`, `codex exec --json`,
`gemini --output-format json`, `opencode run --format json`) must show the tool called under its
original name and its result used. Prints a line per check, the table of docs/measured.md's agent-CLI
section, and 'N passed, M failed'.

    $(scripts/venv.sh)/bin/python tests/envoy/agent_clis.py [--only claude,codex] [--no-llama] [--no-hosted]
"""
import http.client, json, os, re, shutil, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import llama_server as ls
import mcp_agents
from harness import contract, delivery, excuse, runner, verdict
from harness.paths import ROOT
from harness.venv import cache_dir, venv

# The one place the CLIs' versions are pinned.
CLIS = {
    "claude": "@anthropic-ai/claude-code@2.1.328",
    "codex": "@openai/codex@0.169.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "opencode": "opencode-ai@1.18.33",
}
HOSTED_PINS = ["openai-agents==0.24.0", "google-genai==3.4.0", "anthropic==2.12.0", "cohere==7.3.1"]
JUDGE = os.path.join(ROOT, "tests", "judges", "hosted_worker.py")
# the MCP time server under a name a platform team might give it (opencode's `<server>_<tool>` for it
# is 67 characters: past OpenAI's 64)
TIME = "time-zones-service-of-the-platform-team-in-eu-west"
TIME_TOOL = "get_current_time"
MARK = "[toolfit-call]"
PROMPT = f"What time is it in UTC? Use the time tool. {MARK}"
SEEN = "result seen"
# (CLI, API format) -> the hosted profiles it is run with
HOSTED = {"claude": ("anthropic", ["anthropic", "anthropic-strict"]), "codex": ("openai-responses", ["openai", "openai-strict"]),
          "gemini": ("gemini", ["gemini", "gemini-json"]), "opencode": ("openai", ["openai", "openai-strict"])}
# CLI -> the llama-server releases it runs against (2025-08 serves Chat Completions only)
LLAMA = {"claude": ["0.3.36"], "codex": ["0.3.36"], "opencode": ["0.3.36", "0.3.16"]}
DELIVERIES = ["raw", "wasm", "extproc"]
CONTEXT = ["--override-kv", "qwen2.context_length=int:131072", "-c", "131072"]


def install():
    """The CLIs, installed once into ~/.cache/toolfit/clis; returns their bin directory."""
    d = cache_dir("clis")
    stamp = os.path.join(d, "pins")
    pins = "\n".join(CLIS.values())
    if not (os.path.exists(stamp) and open(stamp).read() == pins):
        shutil.rmtree(os.path.join(d, "node_modules"), ignore_errors=True)
        if not os.path.exists(os.path.join(d, "package.json")):
            open(os.path.join(d, "package.json"), "w").write('{"name": "toolfit-clis", "private": true}\n')
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", *CLIS.values()], cwd=d, check=True)
        open(stamp, "w").write(pins)
    return os.path.join(d, "node_modules", ".bin")


# ---------------------------------------------------------------- what each format's request holds

def fmt_of(path):
    p = path.split("?")[0]
    return "messages" if p.endswith("/messages") else "responses" if p.endswith("/responses") else \
        "gemini" if "generateContent" in p or "GenerateContent" in p else "chat"


def functions(fmt, body):
    """(name, namespace or None, schema, description) of every function tool in a request body."""
    out = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if fmt == "messages" and "input_schema" in t:
            out.append((t.get("name"), None, t["input_schema"], t.get("description", "")))
        elif fmt == "chat" and isinstance(t.get("function"), dict):
            f = t["function"]
            out.append((f.get("name"), None, f.get("parameters"), f.get("description", "")))
        elif fmt == "responses" and t.get("type") == "function":
            out.append((t.get("name"), None, t.get("parameters"), t.get("description", "")))
        elif fmt == "responses" and t.get("type") == "namespace":
            out += [(u.get("name"), t.get("name"), u.get("parameters"), u.get("description", "")) for u in t.get("tools") or []
                    if isinstance(u, dict) and u.get("type") == "function"]
        elif fmt == "gemini":
            for d in t.get("functionDeclarations") or []:
                out.append((d.get("name"), None, d.get("parametersJsonSchema", d.get("parameters")), d.get("description", "")))
    return out


def has_result(fmt, body):
    """Whether the request carries a tool's result (the turn after the call)."""
    text = json.dumps(body)
    return {"messages": '"tool_result"', "chat": '"role": "tool"', "responses": '"function_call_output"', "gemini": '"functionResponse"'}[fmt] in text


def is_time_tool(name, description):
    return TIME_TOOL in (name or "") or (description or "").startswith("Get current time")


# ---------------------------------------------------------------- the tap in front of llama-server

class Tap(ThreadingHTTPServer):
    """Forwards to llama-server and records (path, body received, status answered). On the marked turn's
    first request it narrows the tools to the time tool, requires a call and opens it."""
    daemon_threads = True

    def __init__(self, upstream, force=True):
        self.upstream, self.seen, self.force = upstream, [], force
        super().__init__(("127.0.0.1", 0), TapHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server_address[1]


def read_body(handler):
    if handler.headers.get("transfer-encoding", "").lower() == "chunked":
        data = b""
        while True:
            n = int(handler.rfile.readline().split(b";")[0], 16)
            if n == 0:
                handler.rfile.readline()
                return data
            data += handler.rfile.read(n)
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("content-length") or 0))


def lever(fmt, body):
    """The marked turn's first request, made to call the time tool (see the module's text). A request
    whose time tool the server does not read (inside a Responses namespace, which llama-server skips)
    goes as it came."""
    if MARK not in json.dumps(body) or has_result(fmt, body):
        return body, False
    orig, body = body, dict(body)
    opener = "<tool_call>\n"
    if fmt == "messages":
        tools = [t for t in body.get("tools", []) if is_time_tool(t.get("name"), t.get("description"))]
        body["tool_choice"] = {"type": "any"}
        body["messages"] = body.get("messages", []) + [{"role": "assistant", "content": opener}]
    elif fmt == "chat":
        tools = [t for t in body.get("tools", []) if is_time_tool(t.get("function", {}).get("name"), t.get("function", {}).get("description"))]
        body["tool_choice"] = "required"
        body["messages"] = body.get("messages", []) + [{"role": "assistant", "content": opener}]
    else:
        tools = [t for t in body.get("tools", []) if t.get("type") == "function" and is_time_tool(t.get("name"), t.get("description"))]
        body["tool_choice"] = "required"
        body["input"] = (body.get("input") if isinstance(body.get("input"), list) else []) + [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": opener}]}]
    if not tools:
        return orig, False
    body["tools"] = [pinned(fmt, t) for t in tools]
    body["max_tokens" if fmt != "responses" else "max_output_tokens"] = 256
    body["seed"] = 1
    return body, True


def pinned(fmt, tool):
    """The forced tool with each string property's value pinned to the one a user would give ("UTC": the
    time server refuses a timezone a random-weight model makes up). The grammar still writes what the
    schema toolfit sent requires; only the free text is fixed, so the call runs on any machine."""
    tool = json.loads(json.dumps(tool))
    schema = tool.get("input_schema") if fmt == "messages" else (tool.get("function") or {}).get("parameters") if fmt == "chat" else tool.get("parameters")
    for sub in ((schema or {}).get("properties") or {}).values() if isinstance(schema, dict) else ():
        t = sub.get("type") if isinstance(sub, dict) else None
        if t == "string" or isinstance(t, list) and "string" in t:
            sub["enum"] = ["UTC"]
    return tool


class TapHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.relay(b"")

    def do_POST(self):
        self.relay(read_body(self))

    def relay(self, raw):
        fmt = fmt_of(self.path)
        sent = raw
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        forced = False
        if isinstance(body, dict) and self.command == "POST" and self.server.force:
            new, forced = lever(fmt, body)
            if forced:
                sent = json.dumps(new).encode()
        c = http.client.HTTPConnection("127.0.0.1", self.server.upstream, timeout=600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "transfer-encoding", "connection", "accept-encoding")}
        c.request(self.command, self.path, body=sent if self.command == "POST" else None, headers=headers)
        r = c.getresponse()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(k, v)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        answer = b""
        while chunk := r.read1(65536):
            answer += chunk
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        if self.command == "POST":
            self.server.seen.append({"path": self.path, "fmt": fmt, "body": body, "status": r.status, "forced": forced, "answer": answer[-2000:].decode(errors="replace")})


# ---------------------------------------------------------------- the hosted APIs' double

class Judge:
    """The hosted judges' worker (the APIs' SDKs and documented rules), one process, one request at a time."""

    def __init__(self):
        py = venv("hosted", HOSTED_PINS)
        self.p = subprocess.Popen([py, JUDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lock = threading.Lock()

    def errors(self, api, fmt, body):
        fs = functions(fmt, body)
        if not fs:
            return []
        if fmt == "messages":
            req = {"tools": [t for t in body["tools"] if isinstance(t, dict) and "input_schema" in t]}
        elif fmt == "chat":
            req = {"tools": [t for t in body["tools"] if isinstance(t, dict) and "function" in t]}
        elif fmt == "responses":  # a namespace's tools are function tools of the request too
            flat = [t for t in body["tools"] if isinstance(t, dict) and t.get("type") == "function"]
            nested = [u for t in body["tools"] if isinstance(t, dict) and t.get("type") == "namespace" for u in t.get("tools") or []]
            req = {"tools": [t for t in flat + nested if isinstance(t, dict) and t.get("type") == "function"]}
        else:
            req = {"tools": [{"functionDeclarations": [d for t in body["tools"] if isinstance(t, dict) for d in t.get("functionDeclarations") or []]}]}
        with self.lock:
            self.p.stdin.write(json.dumps({"api": api, "body": req}) + "\n")
            self.p.stdin.flush()
            return json.loads(self.p.stdout.readline())["errors"]

    def stop(self):
        self.p.kill()
        self.p.wait()


def sse(events, named):
    return b"".join(((f"event: {e['type']}\n" if named else "") + "data: " + json.dumps(e) + "\n\n").encode() for e in events)


def hosted_answer(fmt, body, call, marker="datetime"):
    """(content type, bytes): a call `call` = (name, namespace, arguments) or, with call None, a text
    saying whether the tool's result (`marker` in it) came back."""
    text = f"{SEEN}: {'yes' if marker in json.dumps(body) else 'no'}"
    stream = body.get("stream", fmt in ("responses", "gemini"))
    if fmt == "messages":
        block = {"type": "tool_use", "id": "toolu_1", "name": call[0], "input": call[2]} if call else {"type": "text", "text": text}
        msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m"), "content": [block],
               "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not stream:
            return "application/json", json.dumps(msg).encode()
        start = {**block, "input": {}} if call else {"type": "text", "text": ""}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call[2])} if call else {"type": "text_delta", "text": text}
        return "text/event-stream", sse([{"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}},
                                         {"type": "content_block_start", "index": 0, "content_block": start},
                                         {"type": "content_block_delta", "index": 0, "delta": delta}, {"type": "content_block_stop", "index": 0},
                                         {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": 1}},
                                         {"type": "message_stop"}], True)
    if fmt == "chat":
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body.get("model", "m")}
        tc = {"id": "call_1", "type": "function", "function": {"name": call[0], "arguments": json.dumps(call[2])}} if call else None
        if not stream:
            msg = {"role": "assistant", "content": None if call else text, **({"tool_calls": [tc]} if call else {})}
            return "application/json", json.dumps({**base, "object": "chat.completion", "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if call else "stop"}],
                                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        delta = {"role": "assistant", "tool_calls": [{"index": 0, **tc}]} if call else {"role": "assistant", "content": text}
        ev = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if call else "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}]
        return "text/event-stream", sse(ev, False) + b"data: [DONE]\n\n"
    if fmt == "responses":
        if call:
            item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": call[0], "arguments": json.dumps(call[2]), "status": "completed",
                    **({"namespace": call[1]} if call[1] else {})}
        else:
            item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
        resp = {"id": "resp_1", "object": "response", "created_at": 1, "model": body.get("model", "m"), "status": "completed", "output": [item],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
        if not stream:
            return "application/json", json.dumps(resp).encode()
        return "text/event-stream", sse([{"type": "response.created", "sequence_number": 0, "response": {**resp, "status": "in_progress", "output": []}},
                                         {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
                                         {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item},
                                         {"type": "response.completed", "sequence_number": 3, "response": resp}], True)
    part = {"functionCall": {"name": call[0], "args": call[2]}} if call else {"text": text}
    cand = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}
    return ("text/event-stream", sse([cand], False)) if stream else ("application/json", json.dumps(cand).encode())


def api_error(fmt, message):
    if fmt == "messages":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    if fmt == "gemini":
        return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    return {"error": {"message": message, "type": "invalid_request_error", "param": "tools", "code": None}}


class Double(ThreadingHTTPServer):
    """A hosted API: judges every request by `api`'s rules (400 in the API's error shape on any error),
    calls the time tool on the first turn and answers a text on the next."""
    daemon_threads = True

    def __init__(self, api, judge, pick=None, args=None, marker="datetime"):
        self.api, self.judge, self.seen = api, judge, []
        # which tool to call, with what (by default the smallest call the schema it received allows: a
        # rewrite that lost a required name or a type makes a call the MCP server's own schema refuses),
        # and what its result holds
        self.pick, self.args, self.marker = pick or is_time_tool, args, marker
        super().__init__(("127.0.0.1", 0), DoubleHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server_address[1]


class DoubleHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, ctype, data):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # model lists and the like: an empty list
        self.reply(200, "application/json", b'{"object": "list", "data": [], "models": []}')

    def do_POST(self):
        raw = read_body(self)
        fmt = fmt_of(self.path)
        try:
            body = json.loads(raw)
        except ValueError:
            return self.reply(400, "application/json", json.dumps(api_error(fmt, "not JSON")).encode())
        errors = self.server.judge.errors(self.server.api, fmt, body)
        call = None
        if not errors and not has_result(fmt, body):
            tool = next(((n, ns, x) for n, ns, x, d in functions(fmt, body) if self.server.pick(n, d)), None)
            call = (tool[0], tool[1], self.server.args if self.server.args is not None else contract.minimal_call(tool[2] or {})) if tool else None
        status = 400 if errors else 200
        self.server.seen.append({"path": self.path, "fmt": fmt, "body": body, "status": status, "errors": errors, "called": call and call[0]})
        if errors:
            return self.reply(400, "application/json", json.dumps(api_error(fmt, "; ".join(errors)[:2000])).encode())
        self.reply(200, *hosted_answer(fmt, body, call, self.server.marker))


# ---------------------------------------------------------------- running a CLI

TAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_tap.py")


def tapped(servers, log):
    """`servers` with each stdio server behind mcp_tap.py, which writes to `log` the server's own
    tools/list and each call with the server's answer."""
    return {n: [sys.executable, TAP, log, "--", *c] if isinstance(c, list) else c for n, c in servers.items()}


def mcp_servers(bin_dir, py, files):
    return {"everything": ["node", os.path.join(bin_dir, "mcp-server-everything"), "stdio"],
            "filesystem": ["node", os.path.join(bin_dir, "mcp-server-filesystem"), files],
            TIME: [py, "-m", "mcp_server_time"]}


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)


def remote(cli, spec):
    """A remote MCP server ({"url", "headers"}) in `cli`'s own configuration shape (streamable HTTP)."""
    h = spec.get("headers") or {}
    if cli == "claude":
        return {"type": "http", "url": spec["url"], **({"headers": h} if h else {})}
    if cli == "gemini":
        return {"httpUrl": spec["url"], "trust": True, **({"headers": h} if h else {})}
    return {"type": "remote", "url": spec["url"], "enabled": True, **({"headers": h} if h else {})}


def command(cli, bins, base, servers, home, work, model, prompt=PROMPT, allowed=None):
    """(argv, env) of one headless run of `cli` against `base` (scheme://host:port). A server is a
    command (stdio) or {"url", "headers"} (streamable HTTP)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_"))}
    env.update(HOME=home, PWD=work, NO_COLOR="1", CI="1")  # opencode finds its project by $PWD
    exe = os.path.join(bins, cli)
    if cli == "claude":
        f = os.path.join(work, "mcp.json")
        write_json(f, {"mcpServers": {n: remote(cli, c) if isinstance(c, dict) else {"command": c[0], "args": c[1:]} for n, c in servers.items()}})
        env.update(ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="test", DISABLE_TELEMETRY="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   ENABLE_TOOL_SEARCH="false", DISABLE_AUTOUPDATER="1")
        return [exe, "-p", prompt, "--mcp-config", f, "--strict-mcp-config", "--output-format", "stream-json", "--verbose",
                "--model", model, "--allowedTools", allowed or f"mcp__{TIME}__{TIME_TOOL}"], env
    if cli == "codex":
        os.makedirs(os.path.join(home, ".codex"), exist_ok=True)
        with open(os.path.join(home, ".codex", "config.toml"), "w") as f:
            for n, c in servers.items():
                if isinstance(c, dict):
                    head = "".join(f"{json.dumps(k)} = {json.dumps(v)}, " for k, v in (c.get("headers") or {}).items()).rstrip(", ")
                    f.write(f'[mcp_servers."{n}"]\nurl = {json.dumps(c["url"])}\n' + (f"http_headers = {{ {head} }}\n" if head else "") + "\n")
                else:
                    f.write(f'[mcp_servers."{n}"]\ncommand = {json.dumps(c[0])}\nargs = {json.dumps(c[1:])}\n'
                            # `codex exec` sends its first request with the servers that are up by then and
                            # leaves out one still starting (a Python server's first start on a new machine
                            # takes seconds); a required server is waited for (or the run fails, said)
                            # (a server named broken* is one a test breaks on purpose: not required)
                            f"required = {json.dumps(not n.startswith('broken'))}\nstartup_timeout_sec = 120\n\n")
        env.update(OPENAI_API_KEY="test")
        provider = f'model_providers.local={{name="local",base_url="{base}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}}'
        return [exe, "exec", "--json", "--skip-git-repo-check", "-m", model, "-c", "model_provider=local", "-c", provider, prompt], env
    if cli == "gemini":
        os.makedirs(os.path.join(home, ".gemini"), exist_ok=True)
        write_json(os.path.join(home, ".gemini", "settings.json"),
                   {"security": {"auth": {"selectedType": "gemini-api-key"}},
                    "mcpServers": {n: remote(cli, c) if isinstance(c, dict) else {"command": c[0], "args": c[1:], "trust": True} for n, c in servers.items()}})
        env.update(GEMINI_API_KEY="test", GOOGLE_GEMINI_BASE_URL=base, GEMINI_CLI_TRUST_WORKSPACE="true")
        return [exe, "-p", prompt, "--output-format", "json", "-m", model, "--yolo"], env
    write_json(os.path.join(work, "opencode.json"), {"provider": {"local": {"npm": "@ai-sdk/openai-compatible", "name": "local", "options": {"baseURL": f"{base}/v1", "apiKey": "test"},
                                      "models": {model: {"name": model, "tool_call": True}}}},
               "model": f"local/{model}", "small_model": f"local/{model}", "autoupdate": False, "share": "disabled", "mcp": {n: remote(cli, c) if isinstance(c, dict) else {"type": "local", "command": c, "enabled": True} for n, c in servers.items()}})
    return [exe, "run", "--format", "json", prompt], env


def transcript(cli, out, marker="datetime"):
    """(names of the MCP tools the CLI ran, as it reports them, whether a result (`marker` in it) came
    back, the model's last text)."""
    ran, result, text = [], False, ""
    for line in out.splitlines() if cli != "gemini" else [out]:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if cli == "claude":
            for b in (e.get("message") or {}).get("content") or [] if isinstance(e.get("message"), dict) else []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    ran.append(b.get("name"))
                if isinstance(b, dict) and b.get("type") == "tool_result" and marker in json.dumps(b.get("content")):
                    result = True
            if e.get("type") == "result":
                text = str(e.get("result"))
        elif cli == "codex":
            it = e.get("item") or {}
            if e.get("type") == "item.completed" and it.get("type") == "mcp_tool_call":
                ran.append(f"{it.get('server')}/{it.get('tool')}")
                result = result or marker in json.dumps(it.get("result"))
            if e.get("type") == "item.completed" and it.get("type") == "agent_message":
                text = it.get("text", "")
        elif cli == "gemini":
            tools = ((e.get("stats") or {}).get("tools") or {}).get("byName") or {}
            ran += [n for n, v in tools.items() if (v or {}).get("success", v.get("count", 0) if isinstance(v, dict) else 0)]
            result = bool(ran) and SEEN + ": yes" in str(e.get("response"))
            text = str(e.get("response", ""))
        else:
            p = e.get("part") or {}
            if e.get("type") == "tool_use" or p.get("type") == "tool":
                ran.append(p.get("tool"))
                result = result or marker in json.dumps((p.get("state") or {}).get("output"))
            if p.get("type") == "text":
                text = p.get("text", "")
    return ran, result, text


def original_name(cli):
    """How each CLI names the time tool when it runs it (its transcript's spelling). Gemini CLI names an
    MCP tool `mcp_<server>_<tool>` and itself cuts a name past 63 characters to its first and last 30."""
    gemini = f"mcp_{TIME}_{TIME_TOOL}"
    gemini = gemini if len(gemini) <= 63 else gemini[:30] + "..." + gemini[-30:]
    return {"claude": f"mcp__{TIME}__{TIME_TOOL}", "codex": f"{TIME}/{TIME_TOOL}", "gemini": gemini, "opencode": f"{TIME}_{TIME_TOOL}"}[cli]


def scratch(prefix):
    """A fresh directory outside the system's temporary directory: Codex refuses to put its helper
    binaries (its PATH aliases) under it, and a user's HOME is not there either."""
    return tempfile.mkdtemp(prefix=prefix, dir=cache_dir("homes"))


def run_cli(cli, bins, base, servers, model, timeout=300, **kw):
    home = scratch(f"{cli}-home-")
    work = scratch(f"{cli}-work-")
    argv, env = command(cli, bins, base, servers, home, work, model, **kw)
    try:
        p = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        code, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = "timeout", (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), ""
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return code, out, err


def normalized_tools(fmt, body, profile, since=None):
    """What `toolfit normalize` makes of the tools of `body`: [(name, namespace, schema)]."""
    f = {"messages": "anthropic", "chat": "openai-chat", "responses": "openai-responses", "gemini": "gemini"}[fmt]
    args = [runner.TOOLFIT, "normalize", "--profile", profile, "--format", f] + (["--llama-cpp-since", since] if since else [])
    p = subprocess.run(args, input=json.dumps(body).encode(), capture_output=True)
    if p.returncode != 0:
        return None
    return [(n, ns, s) for n, ns, s, _ in functions(fmt, json.loads(p.stdout))]


# ---------------------------------------------------------------- the legs

ROWS = []


def counters(env, route, profile):
    if env is None:
        return {}
    time.sleep(1.2)
    prom = env.prom()
    return {k: runner.metric(prom, f"toolfit_{k}", route, profile) for k in ("requests_seen", "requests_rewritten", "names_restored", "tools_seen", "lossy_total")}


ROUTE = {"messages": "messages", "chat": "chat", "responses": "responses", "gemini": "gemini"}


def leg(cli, bins, servers, backend, profile, kind, upstream, model, plugin, since=None):
    """One CLI run: raw (against `upstream`) or through toolfit delivered as `kind`. Returns the row."""
    env = None
    if kind != "raw":
        env = delivery.start(kind, plugin, upstream.port, test_routes=False)
        if not env.ready:
            verdict.check(f"{cli} / {backend} / {profile} / {kind}: Envoy and toolfit start", False, env.logs()[-800:])
            env.stop()
            return None
    n0 = len(upstream.seen)
    log = os.path.join(scratch(f"{cli}-tap-"), "mcp.jsonl")
    try:
        code, out, err = run_cli(cli, bins, f"http://127.0.0.1:{env.port if env else upstream.port}", tapped(servers, log), model)
        seen = upstream.seen[n0:]
        fmt = seen[0]["fmt"] if seen else None
        c = counters(env, ROUTE.get(fmt, "chat"), profile)
    finally:
        if env:
            env.stop()
    ran, result, text = transcript(cli, out)
    result = result or (backend.startswith("llama") and any(s["body"] and has_result(s["fmt"], s["body"]) for s in seen))
    refused = [s for s in seen if s["status"] >= 400]
    first = next((s for s in seen if s["body"] and functions(s["fmt"], s["body"])), None)
    row = {"cli": cli, "backend": backend, "profile": profile, "delivery": kind, "code": code, "requests": len(seen),
           "tools": len(functions(first["fmt"], first["body"])) if first else 0, "rewritten": c.get("requests_rewritten", "-"),
           "refused": len(refused), "ran": ran, "result": result, "text": text, "restored": c.get("names_restored", "-"),
           "lossy": c.get("lossy_total", "-"), "seen": seen, "out": out, "err": err, **mcp_side(log, seen, kind)}
    shutil.rmtree(os.path.dirname(log), ignore_errors=True)
    ROWS.append(row)
    return row


def mcp_side(log, seen, kind):
    """What the time server saw (mcp_tap.py's log): its own schema of the time tool, the calls of it, and
    for each request that offered the tool, what the rewrite lost of that schema."""
    recs = [json.loads(l) for l in open(log) if l.strip()] if os.path.exists(log) else []
    listed = next((t["inputSchema"] for r in recs if "list" in r for t in r["list"] if t["name"] == TIME_TOOL), None)
    calls = [r for r in recs if r.get("call") == TIME_TOOL]
    offered = [x for s in seen if s["body"] for n, _, x, d in functions(s["fmt"], s["body"]) if is_time_tool(n, d)]
    return {"schema": listed, "calls": calls, "offered": len(offered),
            "contract": [w for x in offered for w in contract.lost(listed, x or {})] if listed and kind != "raw" else []}


def tool_ran(row, lossy=()):
    """Whether the time tool ran on its MCP server as the user needs it: every call's arguments valid
    against the server's own inputSchema (or excused by a lossy record at the violated keyword), the
    server answered without error and with its real result (a "datetime"), and the rewrite kept every
    required name and property type of the tool it offered. Returns (ok, why)."""
    import jsonschema
    if row["schema"] is None:
        return False, "the time server's tools/list was not seen"
    if row["contract"]:
        return False, ("the rewrite lost", row["contract"][:3])
    good = []
    for c in row["calls"]:
        args = c["arguments"] if c["arguments"] is not None else {}
        cls = jsonschema.validators.validator_for(row["schema"], default=jsonschema.Draft202012Validator)
        if not cls(row["schema"]).is_valid(args) and excuse.excused(list(lossy), row["schema"], args) is None:
            return False, ("arguments invalid against the server's inputSchema", args)
        if not c["error"] and not c["isError"] and '"datetime"' in c["text"]:
            good.append(c)
    return bool(good), ("no call answered with the time", [(c["arguments"], c["isError"], c["text"][:120]) for c in row["calls"]][:2])


def llama_legs(bins, servers, only):
    for version in ("0.3.36", "0.3.16"):
        clis = [c for c in LLAMA if version in LLAMA[c] and c in only]
        if not clis:
            continue
        since = ls.VERSIONS[version]
        # Claude Code's first request is some 22,000 tokens: the tiny model's context is raised (a later -c wins)
        server = ls.Server(ls.server_binary(version), ls.model(version, "qwen2.5"), 2, CONTEXT)
        ready = server.alive()
        tap = Tap(server.port)
        plugin = {"profile": "llama-cpp", "framing": "exact", "llama_cpp_since": since}
        try:
            verdict.check(f"llama-server {since}: starts with a 131,072-token context", ready)
            for cli in clis:
                raw = None
                for kind in DELIVERIES:
                    row = leg(cli, bins, servers, f"llama-server {since}", "llama-cpp", kind, tap, "tiny", plugin, since)
                    if row is None:
                        continue
                    tag = f"{cli} / llama-server {since} / {kind}"
                    verdict.check(f"{tag}: the CLI exits 0 and prints the model's turn ({row['requests']} requests, {row['tools']} tools)",
                                  row["code"] == 0 and row["requests"] > 0 and row["text"] != "", (row["code"], row["err"][-600:], row["out"][-600:]))
                    verdict.check(f"{tag}: llama-server answered every request 200", row["refused"] == 0 and row["requests"] > 0,
                                  [(s["status"], s["answer"][:300]) for s in row["seen"] if s["status"] >= 400][:2])
                    # what the rest stands on: the CLI had the time server up and offered its tool
                    verdict.check(f"{tag}: the CLI offered the MCP time tool to the model ({row['offered']} requests)", row["offered"] > 0,
                                  [len(functions(s["fmt"], s["body"])) for s in row["seen"] if s["body"]][:3])
                    back = any(s["body"] and has_result(s["fmt"], s["body"]) for s in row["seen"])
                    if kind == "raw":
                        raw = row
                        if cli == "codex":  # why toolfit lifts namespace tools for llama-server (the control)
                            verdict.check(f"{tag}: llama-server reads no tool inside a Responses namespace: the MCP tool cannot be called raw",
                                          not row["ran"] and not any(s["forced"] for s in row["seen"]), row["ran"])
                        continue
                    ok, why = tool_ran(row)
                    verdict.check(f"{tag}: the model's call ran on the MCP server under the tool's original name, with arguments its inputSchema accepts, "
                                  "and its result went back to the model", original_name(cli) in row["ran"] and back and ok,
                                  (row["ran"], back, [s["forced"] for s in row["seen"]], why))
                    # what reached the server is what toolfit makes of what the CLI sent (the raw run's first request)
                    # every request that declared tools (each turn sends the catalog again)
                    sent = [s for s in row["seen"] if s["body"] and functions(s["fmt"], s["body"])]
                    base = next((s for s in (raw or {}).get("seen", []) if s["body"] and functions(s["fmt"], s["body"])), None)
                    want = normalized_tools(base["fmt"], base["body"], "llama-cpp", since) if base else None
                    gots = [[(n, ns, x) for n, ns, x, _ in functions(s["fmt"], s["body"])] for s in sent]
                    off = next(((i, g, w) for i, got in enumerate(gots) for g, w in zip(got, want or []) if g != w), None)
                    verdict.check(f"{tag}: every schema of every request reached llama-server as toolfit normalize writes it ({len(gots)} requests, {len(want or [])} tools)",
                                  want is not None and len(gots) > 0 and all(got == want for got in gots), off or [len(g) for g in gots] + [len(want or [])])
        finally:
            tap.shutdown()
            server.stop()


def hosted_legs(bins, servers, only):
    judge = Judge()
    raws = []
    try:
        for cli, (api_fmt, profiles) in HOSTED.items():
            if cli not in only:
                continue
            for profile in profiles:
                api = {"openai": "openai", "openai-strict": "openai-strict"}.get(profile, profile)
                if api_fmt == "openai-responses":
                    api = "openai-responses"
                double = Double(api, judge)
                plugin = {"profile": "gemini" if profile == "gemini-json" else profile}
                model = "gemini-2.5-flash" if cli == "gemini" else "m"
                try:
                    for kind in DELIVERIES:
                        row = leg(cli, bins, servers, f"{api} double", profile, kind, double, model, plugin)
                        if row is None:
                            continue
                        tag = f"{cli} / {api} double / {profile} / {kind}"
                        if kind == "raw":
                            raws.append(row)
                            continue
                        verdict.check(f"{tag}: the API's rules accept every request ({row['requests']} requests, {row['tools']} tools)",
                                      row["requests"] > 0 and row["refused"] == 0, [s["errors"][:3] for s in row["seen"] if s["errors"]][:1])
                        ok, why = tool_ran(row)
                        verdict.check(f"{tag}: the CLI ran the MCP time tool under its original name, with arguments its inputSchema accepts, and used its result",
                                      row["code"] == 0 and original_name(cli) in row["ran"] and row["result"] and SEEN + ": yes" in row["text"] and ok,
                                      (row["code"], row["ran"], row["text"][:200], why, row["err"][-500:]))
                finally:
                    double.shutdown()
        # the double's control: what a CLI sends raw, the API's rules refuse somewhere (opencode's 67-character name)
        if "opencode" in only:
            refused = [f"{r['cli']}/{r['profile']}" for r in raws if r["refused"]]
            verdict.check(f"the hosted doubles refuse what the API refuses: raw requests refused ({', '.join(refused)})", any("opencode" in x for x in refused))
    finally:
        judge.stop()


def table():
    print("\nagent CLI table:")
    print("| CLI | backend | profile | delivery | exit | requests | tools | rewritten | refused by the backend | calls run | result used | names restored | lossy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in ROWS:
        print(f"| {r['cli']} | {r['backend']} | {r['profile']} | {r['delivery']} | {r['code']} | {r['requests']} | {r['tools']} | {r['rewritten']} | {r['refused']} | "
              f"{len(r['ran'])} | {'yes' if r['result'] else 'no'} | {r['restored']} | {r['lossy']} |")


def controls():
    """The outcome checks can say no: the contract rules' own cases, and a run that went well, altered as a
    broken rewrite would have it (the required name dropped, so the call comes without it; the type
    changed), fails them."""
    for name, ok in contract.self_test():
        verdict.check(f"contract rule: {name}", ok)
    good = next((r for r in ROWS if r["delivery"] != "raw" and tool_ran(r)[0]), None)
    if good is None:
        verdict.check("the outcome check's control: a run whose tool ran", False, "no run to alter")
        return
    required = {**good, "contract": contract.lost(good["schema"], {**good["schema"], "required": []}),
                "calls": [{**c, "arguments": {}, "isError": True, "text": "missing timezone"} for c in good["calls"]]}
    typed = {**good, "contract": contract.lost(good["schema"], {**good["schema"], "properties": {"timezone": {"type": "integer"}}})}
    verdict.check(f"the outcome check says no to {good['cli']} / {good['backend']} / {good['delivery']} with the required name dropped, or the type changed",
                  not tool_ran(required)[0] and not tool_ran(typed)[0], (tool_ran(required), tool_ran(typed)))


def main():
    only = set((ls.flag("--only", "") or ",".join(CLIS)).split(","))
    for f in (runner.WASM, runner.TOOLFIT, delivery.EXTPROC):
        if not os.path.exists(f):
            sys.exit(f"missing {f}: run make wasm build")
    runner.ENVOY = os.path.join(os.path.dirname(ls.venv_python()), "envoy")
    print("the CLIs, the MCP servers and the agents' venv (cached)", flush=True)
    bins = install()
    py = venv("agents", mcp_agents.PINS)
    files = tempfile.mkdtemp(prefix="toolfit-cli-files-")
    open(os.path.join(files, "notes.txt"), "w").write("hello\n")
    servers = mcp_servers(mcp_agents.npm_servers(), py, files)
    started = time.time()
    if "--no-llama" not in sys.argv:
        llama_legs(bins, servers, only)
    if "--no-hosted" not in sys.argv:
        hosted_legs(bins, servers, only)
    if "--no-llama" not in sys.argv and "codex" in only:
        demo()
    controls()
    table()
    print(f"({time.time() - started:.0f} s)")


def demo():
    """What a newcomer runs: make demo AGENT=codex (the CLI whose tools toolfit lifts for llama-server)."""
    env = dict(os.environ, AGENT="codex", PORT="0", ADMIN_PORT="0")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "demo.py"), "--once"], env=env, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    verdict.check("make demo AGENT=codex: one MCP tool as Codex sent it and as llama-server received it (lifted), the tool run, only moved counters shown",
                  p.returncode == 0 and "in namespace 'mcp__" in out and "a top-level function tool" in out and f"it ran {TIME}/{TIME_TOOL}" in out
                  and "sent the result back to the model" in out and "Counters that moved" in out and not re.search(r"^  toolfit_\S+ 0$", out, re.M), out[-1500:])


if __name__ == "__main__":
    verdict.run("agent CLIs", main)
