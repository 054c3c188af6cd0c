#!/usr/bin/env python3
"""The MCP leg: toolfit in front of real MCP servers (envoy/mcp.yaml, envoy/mcp-extproc.yaml), each
`tools/list` result rewritten for the client that asked and each `tools/call` given the server's names.

Servers: an MCPServer (FastMCP) from the Python SDK with typed returns (tests/envoy/mcp_fastmcp.py),
@modelcontextprotocol/server-everything in `streamableHttp` and `sse` modes (npm), and a small server of
our own (mcp_catalog_server.py) that serves the 1,409-tool catalog page by page, as JSON or as SSE in
7-byte pieces, with and without sessions, and answers some methods in hostile ways. The client is the
Python SDK's own (mcp 2.x, tests/envoy/mcp_client_worker.py), named as each CLI names itself in
`initialize`; where the SDK cannot show a thing (the session id toolfit hands out, bytes of hostile
answers) a plain HTTP client speaks JSON-RPC. Both deliveries; sessions across two Envoys behind one
front Envoy that sends each request to the next. A second FastMCP server (--props) has a tool whose
property names Gemini's API refuses: for each profile that renames them on the inference leg, a client
mapped to it must see them as written and call with them.

Each check's expectation is computed, not written down: the schemas a client must get are `toolfit
normalize --format mcp` of what the server lists directly, for the profile the client maps to.
The coding agents' CLIs (Claude Code, Codex, Gemini CLI, opencode; tests/envoy/agent_clis.py pins them)
take the FastMCP server as a remote MCP server, raw and through the gateway, against a double of their
model API that judges each request by that API's rules and calls the weather tool.
  python tests/envoy/mcp_leg.py [--delivery=wasm|ext_proc] [--clis=claude,codex|none]"""
import http.client, json, os, re, subprocess, sys, tempfile, time

import agent_clis
import mcp_agents
from harness import delivery, runner, verdict
from harness.paths import CORPUS, ROOT
from harness.runner import free_port
from harness.venv import venv

check = verdict.check
HERE = os.path.dirname(os.path.abspath(__file__))
MCP_YAML = os.path.join(ROOT, "envoy", "mcp.yaml")
MCP_EXTPROC_YAML = os.path.join(ROOT, "envoy", "mcp-extproc.yaml")
CATALOG = os.path.join(CORPUS, "servers", "twilio-all-services.json")
# a catalog with tools llama.cpp's profile loses meaning of (lossy records), for the `unfit` settings
APIFY = os.path.join(CORPUS, "servers", "apify.json")
# the clients as the four CLIs name themselves in `initialize`, and the profile envoy/mcp.yaml maps each to
CLIENTS = {"codex-mcp-client": "openai", "claude-code": "anthropic", "gemini-cli-mcp-client": "gemini-json", "opencode": "mcp"}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def plugin():
    """The plugin configuration envoy/mcp.yaml ships (its `value: |` block)."""
    m = re.search(r"value: \|\n\s+(\{.*\})", open(MCP_YAML).read())
    return json.loads(m.group(1))


class WasmGateway(runner.Envoy):
    """envoy/mcp.yaml on free ports in front of `upstream`."""

    def __init__(self, config, upstream):
        self.port, self.admin = free_port(), free_port()
        text = open(MCP_YAML).read().replace("port_value: 9902", f"port_value: {self.admin}").replace("port_value: 10001", f"port_value: {self.port}")
        text = text.replace("port_value: 8081", f"port_value: {upstream}").replace("filename: dist/toolfit.wasm", f"filename: {runner.WASM}")
        text = re.sub(r"(value: \|\n\s+)\{.*\}", lambda m: m.group(1) + json.dumps(config), text)
        self.start("stats_flush_interval: 1s\n" + text, ["--component-log-level", "wasm:info"])


class ExtprocGateway(delivery.ExtProc):
    """envoy/mcp-extproc.yaml and toolfit-extproc with the same plugin configuration."""

    def __init__(self, config, upstream):
        super().__init__(config, upstream, test_routes=False, config_file=MCP_EXTPROC_YAML)


def gateway(kind, upstream, config=None):
    g = (WasmGateway if kind == "wasm" else ExtprocGateway)(config or plugin(), upstream)
    if not g.ready:
        raise RuntimeError(f"{kind} gateway did not start:\n" + g.logs()[-3000:])
    return g


def series(prom, name, need=False, **labels):
    """The value of `toolfit_<name>` with these labels (others ignored), summed; 0 if absent, or with
    `need`, None (a check that a counter stayed at zero must see the series)."""
    total, found = 0, False
    for m in re.finditer(rf"^toolfit_{name}\{{([^}}]*)\}} (\d+)", prom, re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if all(have.get(k) == v for k, v in labels.items()):
            total, found = total + int(m.group(2)), True
    return total if found or not need else None


def prom(g):
    time.sleep(1.2)  # Envoy flushes custom stats every second
    return g.prom()


class Server(runner.Process):
    """An MCP server process on a free port (stopped as every process the tests start)."""

    def __init__(self, cmd, path, env=None, wait="/", errors=None):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="toolfit-mcp-", suffix=".log", delete=False).name
        # `errors`: a file for the server's stderr (a long run keeps what a server said when it failed)
        self.proc = subprocess.Popen([c.replace("{port}", str(self.port)).replace("{log}", self.log) for c in cmd], env={**os.environ, "PORT": str(self.port), **(env or {})},
                                     stdout=subprocess.DEVNULL, stderr=open(errors, "w") if errors else subprocess.DEVNULL)
        self.url_path = path
        end = time.time() + 30
        while time.time() < end:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", wait)
                c.getresponse().read()
                break
            except OSError:
                time.sleep(0.2)

    def records(self):
        try:
            return [json.loads(line) for line in open(self.log) if line.strip()]
        except OSError:
            return []



def client(py, url, name, calls=(), sse=False, headers=None, lists=1):
    """The Python SDK's client: what it listed and what its calls returned (`error`: it failed)."""
    cmd = [py, os.path.join(HERE, "mcp_client_worker.py"), url, "--client", name, "--lists", str(lists)]
    for k, v in (headers or {}).items():
        cmd += ["--header", f"{k}={v}"]
    for n, a in calls:
        cmd += ["--call", n, json.dumps(a)]
    if sse:
        cmd.append("--sse")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (p.stderr or p.stdout)[-1500:], "tools": [], "calls": []}


def rpc(port, path, msg, headers=None):
    """One JSON-RPC POST: status, lower-cased headers, body bytes."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    c.request("POST", path, body=body, headers={**ACCEPT, **(headers or {})})
    r = c.getresponse()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()


def initialize(port, path, name, headers=None):
    """`initialize` as a client named `name`: the session id it got (None: none)."""
    _, h, _ = rpc(port, path, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}}, headers)
    sid = h.get("mcp-session-id")
    rpc(port, path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"mcp-session-id": sid} if sid else {})
    return sid


def expected(tools, profile):
    """The input schemas a client of `profile` must get: `toolfit normalize --format mcp` of the list."""
    doc = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).encode()
    out = json.loads(runner.cli(doc, "mcp", profile))
    return [t.get("inputSchema") for t in out["result"]["tools"]]


def names_mapped(tools):
    """The listed name of each tool as the MCP leg spells a name its client's API refuses."""
    return [t["name"] for t in tools]


def fastmcp_leg(kind, py, servers, raw):
    fm = servers["fastmcp"]
    g = gateway(kind, fm.port)
    try:
        url = f"http://127.0.0.1:{g.port}/mcp"
        server_tools = raw["fastmcp"]["tools"]
        # the control: the comparison below can tell a rewrite from none (OpenAI's `re` needs the patterns rewritten)
        check("FastMCP control: what OpenAI needs differs from what the server lists",
              expected(server_tools, "openai") != [t.get("inputSchema") for t in server_tools])
        for name, profile in CLIENTS.items():
            got = client(py, url, name)
            want = expected(server_tools, profile)
            check(f"FastMCP, {name}: every tools/list result rewritten for {profile}",
                  [t.get("inputSchema") for t in got["tools"]] == want and len(want) == 3,
                  json.dumps(got)[:600])
        # names both ways: OpenAI refuses `.` and `/`, so Codex gets names that map back
        got = client(py, url, "codex-mcp-client", calls=[("get_weather__032e", {"city": "Paris"}), ("stats_mean__052f", {"values": [1, 2]}), ("shout", {"text": "hi"})])
        names = [t["name"] for t in got["tools"]]
        check("FastMCP, codex-mcp-client: names OpenAI refuses listed under names that map back",
              names == ["get_weather__032e", "stats_mean__052f", "shout"], names)
        calls = got["calls"]
        check("FastMCP: every call by a listed name ran on the server under its own name (structuredContent back)",
              len(calls) == 3 and all(c.get("ok") for c in calls)
              and calls[0].get("structured") == {"city": "Paris", "celsius": 21.5, "conditions": ["sunny", "windy"]}
              and calls[1].get("structured") == {"mean": 1.5, "n": 2.0}, calls)
        # structured output: the SDK validated each structuredContent against the listed outputSchema
        # (above: no error); without toolfit it refuses get.weather's own schema (`\p{Lu}` is not a
        # Python regex): the control that the check can say no
        raw_call = next((c for c in raw["fastmcp"]["calls"] if c["name"] == "get.weather"), {})
        check("FastMCP control: without toolfit the SDK refuses get.weather's structuredContent (its outputSchema's \\p{Lu})",
              "Invalid schema" in (raw_call.get("error") or ""), raw_call)
        from jsonschema import Draft202012Validator
        outs = {t["name"]: t.get("outputSchema") for t in got["tools"]}
        judged = [(c["name"], c.get("structured"), Draft202012Validator(outs[c["name"]]).is_valid(c.get("structured"))) for c in calls if outs.get(c["name"])]
        check("FastMCP: every listed outputSchema accepts what the server returned (jsonschema, beside the SDK's own check)",
              len(judged) == 3 and all(ok for _, _, ok in judged), judged)
        # a call naming what toolfit never listed (the original name, refused by OpenAI): counted
        sid = initialize(g.port, "/mcp", "codex-mcp-client")
        st, _, body = rpc(g.port, "/mcp", {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "get.weather", "arguments": {"city": "Rome"}}},
                          {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
        p = prom(g)
        check("FastMCP: a call naming a tool toolfit never listed is forwarded as it came and counted (mcp_calls_unmapped)",
              st == 200 and b"Rome" in body and series(p, "mcp_calls_unmapped", route="mcp", profile="openai", mcp_client="codex-mcp-client") == 1, (st, body[:200]))
        check("FastMCP: sessions and listed tools counted per client",
              series(p, "mcp_sessions", mcp_client="codex-mcp-client") >= 3 and series(p, "mcp_tools_listed", profile="openai", mcp_client="codex-mcp-client") >= 6
              and series(p, "mcp_sessions", mcp_client="other") >= 1, [ln for ln in p.splitlines() if "mcp_" in ln and not ln.endswith(" 0")][:12])
        # the profile header a client can set wins over the map
        got = client(py, url, "some-agent", headers={"x-toolfit-profile": "openai"})
        check("FastMCP: x-toolfit-profile wins over the client map", [t.get("inputSchema") for t in got["tools"]] == expected(server_tools, "openai"), got.get("error"))
    finally:
        g.stop()


def catalog_leg(kind, py, servers):
    tools = json.load(open(CATALOG))["tools"]
    cat = servers["catalog"]
    g = gateway(kind, cat.port)
    try:
        url = f"http://127.0.0.1:{g.port}/mcp"
        got = client(py, url, "codex-mcp-client")
        want = [s for i in range(0, len(tools), 500) for s in expected(tools[i:i + 500], "openai")]
        check(f"catalog: all {len(tools)} tools of every page rewritten for openai", [t.get("inputSchema") for t in got["tools"]] == want and len(want) == 1409,
              got.get("error") or len(got["tools"]))
        sid = initialize(g.port, "/mcp", "codex-mcp-client")
        seen = {r.get("session") for r in cat.records()}
        check("catalog: the client's session id carries the tag; the server never sees it",
              bool(sid) and sid.endswith(".tf.openai.codex-mcp-client") and not any(s and ".tf." in s for s in seen), (sid, seen))
        # a trailing slash is the same endpoint (issue 57: `/mcp/` took a route where toolfit was off,
        # and the server got the listed name), and the profile header is toolfit's alone
        call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "get_weather__032e", "arguments": {}}}
        rpc(g.port, "/mcp/", call, {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18", "x-toolfit-profile": "openai"})
        last_call = [r for r in cat.records() if r.get("method") == "tools/call"][-1:]
        check("catalog: a call through /mcp/ (trailing slash) reaches the server under the original name, without x-toolfit-profile",
              last_call and last_call[0].get("path") == "/mcp/" and last_call[0].get("name") == "get.weather" and last_call[0].get("profile_header") is None, last_call)
        # hostile answers to tools/list: forwarded as they came, byte for byte, or with nothing lost
        head = {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        for cursor in ("wrong-id", "list-shaped"):
            msg = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"cursor": cursor}}
            direct, through = rpc(cat.port, "/mcp", msg, {"mcp-session-id": sid.split(".tf.")[0]}), rpc(g.port, "/mcp", msg, head)
            check(f"catalog: a tools/list answer with {cursor} forwarded byte for byte", direct[2] == through[2] and through[0] == 200, (direct[2][:120], through[2][:120]))
        msg = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"cursor": "huge"}}
        direct, through = json.loads(rpc(cat.port, "/mcp", msg)[2]), json.loads(rpc(g.port, "/mcp", msg, head)[2])
        check("catalog: a 5 MB string beside the tools arrives whole, the tools rewritten",
              through["result"]["_meta"] == direct["result"]["_meta"] and [t["inputSchema"] for t in through["result"]["tools"]] == expected(tools[:3], "openai"))
        p = prom(g)
        check("catalog: no internal error on any of it (the series exists and reads 0)", series(p, "internal_errors", need=True) == 0, series(p, "internal_errors", need=True))
    finally:
        g.stop()
    # a tool that cannot fit the client's profile without loss: the route's `unfit` says what becomes of it
    apify = json.load(open(APIFY))["tools"]
    lossy = lossy_tools(apify, "llama-cpp")
    for unfit in ("error", "drop", "pass"):
        config = plugin()
        config["routes"][0] = {**config["routes"][0], "unfit": unfit, "clients": {"codex-mcp-client": "llama-cpp"}}
        g = gateway(kind, servers["apify"].port, config)
        try:
            got = client(py, f"http://127.0.0.1:{g.port}/mcp", "codex-mcp-client")
            p = prom(g)
            listed = {t["name"]: t.get("inputSchema") for t in got["tools"]}
            if unfit == "error":
                err = got.get("error") or ""
                check("unfit: error: the tools/list answered with a JSON-RPC error naming the tool, the server and the pointer",
                      "cannot be listed" in err and f"127.0.0.1:{g.port}/mcp" in err and any(f'tool "{t}"' in err for t in lossy) and " at /" in err
                      and series(p, "mcp_lists_refused", mcp_client="codex-mcp-client") == 1, err[:400])
            elif unfit == "drop":
                check(f"unfit: drop: the {len(lossy)} tools the profile loses meaning of left out, counted",
                      0 < len(lossy) < len(apify) and sorted(listed) == sorted(t["name"] for t in apify if t["name"] not in lossy)
                      and series(p, "mcp_tools_dropped", mcp_client="codex-mcp-client") == len(lossy), (sorted(lossy), sorted(listed), got.get("error")))
            else:
                as_came = [listed.get(t["name"]) == t["inputSchema"] for t in apify if t["name"] in lossy]
                check("unfit: pass: those tools listed as the server wrote them, the rest rewritten",
                      len(listed) == len(apify) and as_came and all(as_came), got.get("error") or as_came)
        finally:
            g.stop()


def large_call_leg(kind, py, servers):
    """A `tools/call` past max_body_bytes (200 KB here) naming a listed name: toolfit cannot read it to
    give the name back, so it refuses it with a JSON-RPC error under its id, and the server never sees
    it (it ran the server's literal `get_weather__032e`, or nothing, before). The control: the same
    call under the limit reaches the server as `get.weather`."""
    cat = servers["catalog"]
    g = gateway(kind, cat.port, {**plugin(), "max_body_bytes": 200_000})
    try:
        sid = initialize(g.port, "/mcp", "codex-mcp-client")
        head = {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        outcomes = {}
        for size in (300_000, 100_000):
            before = len([r for r in cat.records() if r.get("method") == "tools/call"])
            call = {"jsonrpc": "2.0", "id": f"big-{size}", "method": "tools/call", "params": {"name": "get_weather__032e", "arguments": {"city": "P" * size}}}
            status, _, body = rpc(g.port, "/mcp", call, head)
            reached = [r.get("name") for r in cat.records() if r.get("method") == "tools/call"][before:]
            try:
                answer = json.loads(body)
            except ValueError:
                answer = {}
            outcomes[size] = (status, answer, reached)
        status, answer, reached = outcomes[300_000]
        check("a listed call past max_body_bytes is refused with a JSON-RPC error under its id, and never reaches the server",
              status == 200 and answer.get("id") == "big-300000" and "max_body_bytes" in str(answer.get("error")) and reached == [], (status, str(answer)[:300], reached))
        status, answer, reached = outcomes[100_000]
        check("control: the same call under the limit reaches the server as get.weather", status == 200 and reached == ["get.weather"], (status, str(answer)[:200], reached))
    finally:
        g.stop()


def lossy_tools(tools, profile):
    """The tools whose rewrite for `profile` has a lossy record (the CLI's report)."""
    doc = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).encode()
    return {t for t, rs in runner.lossy_records(doc, profile, fmt="mcp").items() if rs}


def pieces_leg(kind, py, servers):
    """SSE answers written 7 bytes at a time, and a server without sessions."""
    tools = json.load(open(CATALOG))["tools"]
    g = gateway(kind, servers["pieces"].port)
    try:
        got = client(py, f"http://127.0.0.1:{g.port}/mcp", "claude-code")
        want = [s for i in range(0, 200, 100) for s in expected(tools[i:i + 100], "anthropic")]
        check("SSE in 7-byte pieces: every page rewritten for anthropic", [t.get("inputSchema") for t in got["tools"]] == want, got.get("error") or len(got["tools"]))
        # a stream that breaks inside an event's JSON, an event that is not JSON, a stream cut mid-event:
        # read by toolfit (a tools/list answer) and forwarded as it came
        sid = initialize(g.port, "/mcp", "claude-code")
        msg = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"cursor": "broken"}}
        direct, through = rpc(servers["pieces"].port, "/mcp", msg), rpc(g.port, "/mcp", msg, {"mcp-session-id": sid})
        check("SSE: broken events and a stream cut mid-event forwarded as they came", through[2] == direct[2] and b"not json" in direct[2], (direct[2][:80], through[2][:80]))
    finally:
        g.stop()
    g = gateway(kind, servers["stateless"].port)
    try:
        sid = initialize(g.port, "/mcp", "gemini-cli-mcp-client")
        st, _, _ = rpc(g.port, "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"mcp-session-id": sid})
        seen = [r.get("session") for r in servers["stateless"].records()]
        check("a server without sessions: toolfit's own session id (tf.<profile>.<client>), never sent upstream",
              sid == "tf.gemini-json.gemini-cli-mcp-client" and st == 200 and seen and all(s is None for s in seen), (sid, seen[-3:]))
    finally:
        g.stop()


AJV = os.path.join(HERE, "ajv2020.mjs")
D2020 = "https://json-schema.org/draft/2020-12/schema"
# Ajv2020 cannot resolve a draft's own metaschema by its URL (it has 2020-12's only): these groups
# validate data against that metaschema, which a 2020-12-only validator cannot do for any schema
METASCHEMA_REFS = {("definitions.json", "validate definition against metaschema"), ("defs.json", "validate definition against metaschema"),
                   ("ref.json", "remote ref, containing refs itself")}


def ajv2020(cases):
    """Ajv2020 on [{schema, data}]: [{compiled, valid, error}] (see ajv2020.mjs)."""
    p = subprocess.run(["node", AJV, os.path.dirname(mcp_agents.npm_servers())], input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return [{"compiled": False, "error": p.stderr[-300:], "valid": []} for _ in cases]


def dialect_leg():
    """Draft-07 and 2019-09 schemas declared 2020-12 for clients that validate with 2020-12 only (issue
    58): every group of the JSON-Schema-Test-Suite for those drafts (remote refs aside) translated by
    `toolfit normalize --schema --declare-2020-12`, then judged: the draft's own validator (jsonschema)
    on the original and a 2020-12 validator on the translation give every test the same verdict, and
    Ajv2020 (which refuses the draft's stamp: the control) compiles the translation and agrees, but
    where Ajv gets the 2020-12 suite's group of the same name wrong too (its own limits) or the group
    validates against the draft's metaschema by URL."""
    from jsonschema import Draft202012Validator, validators
    own = {(g["file"], g["description"]): g for g in map(json.loads, open(os.path.join(CORPUS, "jsts-2020-12.jsonl")))}
    for name, draft in (("jsts-draft7.jsonl", "draft-07"), ("jsts-2019-09.jsonl", "2019-09")):
        groups = [g for g in map(json.loads, open(os.path.join(CORPUS, name)))
                  if not g["file"].startswith("optional/") and "localhost:1234" not in json.dumps(g["schema"])]
        rows, unjudged, naive = [], [], []
        for g in groups:
            s, data = g["schema"], [t["data"] for t in g["tests"]]
            out = subprocess.run([runner.TOOLFIT, "normalize", "--schema", "--profile", "mcp", "--declare-2020-12"], input=json.dumps(s), capture_output=True, text=True)
            try:
                t = json.loads(out.stdout)
                before = [validators.validator_for(s)(s).is_valid(d) for d in data]
                after = [Draft202012Validator(t).is_valid(d) for d in data]
            except Exception as e:  # the suite's own schemas: any failure here is the translation's
                unjudged.append((g["file"], g["description"], str(e)[:80]))
                continue
            rows.append((g, t, before, after))
            # the control: the original merely restamped, as a naive proxy would, judged by 2020-12
            try:
                naive.append([Draft202012Validator({**s, "$schema": D2020} if isinstance(s, dict) else s).is_valid(d) for d in data] != before)
            except Exception:
                naive.append(True)
        check(f"{draft} suite: control: the originals merely restamped 2020-12 get another verdict in {sum(naive)} groups",
              sum(naive) >= 10, sum(naive))
        stamped = [r for r in rows if not isinstance(r[0]["schema"], dict) or r[1].get("$schema") == D2020]
        differ = [(g["file"], g["description"], b, a) for g, _, b, a in rows if a != b]
        check(f"{draft} suite, {len(rows)} groups: every translation declares 2020-12, and a 2020-12 validator gives each of its tests the draft's own verdict",
              len(rows) > 200 and not unjudged and len(stamped) == len(rows) and not differ, (unjudged[:3], differ[:5], len(stamped)))
        stamped_before = [r for r in rows if isinstance(r[0]["schema"], dict)]
        orig = ajv2020([{"schema": g["schema"]} for g, _, _, _ in stamped_before])
        check(f"{draft} suite: control: Ajv2020 refuses every original that declares {draft} ({sum(not o['compiled'] for o in orig)} of {len(orig)})",
              orig and not any(o["compiled"] for o in orig), [o.get("error") for o in orig[:2]])
        res = ajv2020([{"schema": t, "data": [x["data"] for x in g["tests"]]} for g, t, _, _ in rows])
        wrong = [(g, r) for (g, _, b, _), r in zip(rows, res) if not r["compiled"] or r["valid"] != b]
        mine, own_wrong = [], set()
        if wrong:
            same = [(k, own[k]) for k in ((g["file"], g["description"]) for g, _ in wrong) if k in own]
            verdicts = ajv2020([{"schema": g["schema"], "data": [x["data"] for x in g["tests"]]} for _, g in same])
            own_wrong = {k for (k, g), r in zip(same, verdicts) if not r["compiled"] or r["valid"] != [x["valid"] for x in g["tests"]]}
            mine = [(g["file"], g["description"], r.get("error") or r["valid"]) for g, r in wrong
                    if (g["file"], g["description"]) not in METASCHEMA_REFS | own_wrong]
        check(f"{draft} suite: Ajv2020 compiles every translation and agrees with the draft's verdicts but for its own limits "
              f"({len(wrong)} groups: {len(own_wrong)} it gets wrong in the 2020-12 suite too, the rest against the draft's metaschema by URL)",
              len(res) == len(rows) and not mine, mine[:5])


def everything_leg(kind, py, servers, raw):
    """server-everything: streamable HTTP (SSE answers) for Gemini CLI's name, and the old HTTP+SSE transport."""
    g = gateway(kind, servers["everything"].port)
    try:
        got = client(py, f"http://127.0.0.1:{g.port}/mcp", "gemini-cli-mcp-client", calls=[("echo", {"message": "hello"})])
        want = expected(raw["everything"]["tools"], "gemini-json")
        check("server-everything, gemini-cli-mcp-client: tools/list rewritten for gemini-json",
              [t.get("inputSchema") for t in got["tools"]] == want and len(want) >= 10, got.get("error") or json.dumps(got["tools"])[:300])
        check("server-everything: a call through toolfit runs", got["calls"] and got["calls"][0].get("ok") and "hello" in got["calls"][0].get("text", ""), got["calls"])
        # a Claude client validates with 2020-12 only: every output schema reaches it compiling there
        claude = client(py, f"http://127.0.0.1:{g.port}/mcp", "claude-code")
        outs = [t["outputSchema"] for t in claude["tools"] if t.get("outputSchema")]
        raw_outs = [t["outputSchema"] for t in raw["everything"]["tools"] if t.get("outputSchema")]
        judged = ajv2020([{"schema": o} for o in raw_outs + outs])
        refused_raw = [j for j in judged[:len(raw_outs)] if not j["compiled"]]
        check("server-everything, claude-code: its draft-07 output schemas reach the client declared 2020-12, each compiling in Ajv2020 "
              f"(control: {len(refused_raw)} of the server's own refused)",
              outs and len(outs) == len(raw_outs) and refused_raw and all(j["compiled"] for j in judged[len(raw_outs):]), [j.get("error") for j in judged][:4])
    finally:
        g.stop()
    g = gateway(kind, servers["everything-sse"].port)
    try:
        got = client(py, f"http://127.0.0.1:{g.port}/sse", "some-agent", calls=[("echo", {"message": "old"})], sse=True, headers={"x-toolfit-profile": "openai"})
        want = expected(raw["everything"]["tools"], "openai")
        check("server-everything over HTTP+SSE: the list on the GET stream rewritten for the profile the header names",
              [t.get("inputSchema") for t in got["tools"]] == want, got.get("error") or json.dumps(got["tools"])[:300])
        check("server-everything over HTTP+SSE: a call through toolfit runs", got["calls"] and got["calls"][0].get("ok"), got["calls"])
    finally:
        g.stop()


FRONT = """admin:
  address: {socket_address: {address: 127.0.0.1, port_value: ADMIN}}
static_resources:
  listeners:
  - name: front
    address: {socket_address: {address: 127.0.0.1, port_value: PORT}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: front
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes: [{match: {prefix: /}, route: {cluster: replicas, timeout: 0s}}]
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: replicas
    type: STATIC
    lb_policy: ROUND_ROBIN
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        common_http_protocol_options: {max_requests_per_connection: 1}
        explicit_http_config: {http_protocol_options: {}}
    load_assignment:
      cluster_name: replicas
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ONE}}}
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: TWO}}}
"""


def renaming_profiles(tools):
    """The profiles whose inference-leg rewrite renames `issue-key` or `page.size` (`toolfit profiles`
    lists them; `--format mcp-tools` is a tool list the response path gives keys back for)."""
    names = [line.split(":")[0] for line in subprocess.run([runner.TOOLFIT, "profiles"], capture_output=True, text=True).stdout.splitlines() if line and not line[0].isspace()]
    doc = json.dumps({"tools": tools}).encode()
    return [p for p in names if not all(f'"{k}"' in runner.cli(doc, "mcp-tools", p).decode() for k in ("issue-key", "page.size"))]


def props_leg(kind, py, servers):
    """Property names a profile's API refuses (`issue-key`, `page.size`: Gemini's) stay as the server
    wrote them on the MCP leg, for every profile that renames them on the inference leg: a client calls
    with the keys it read, and the SDK's server (pydantic, by alias) refuses any other (issue 57 saw
    `issue_key` listed and sent). Each such profile, mapped to a client through the route's `clients`."""
    srv = servers["props"]
    direct = client(py, f"http://127.0.0.1:{srv.port}/mcp", "raw")
    jira = [t for t in direct["tools"] if t["name"] == "jira"]
    renaming = renaming_profiles(jira)
    check("props: the server lists its jira tool, and at least one profile renames its properties on the inference leg",
          len(jira) == 1 and renaming, (direct.get("error"), renaming))
    args = {"issue": {"issue-key": "X-1", "page.size": 5}}
    for profile in renaming:
        config = plugin()
        config["routes"][0] = {**config["routes"][0], "clients": {"props-client": profile}}
        g = gateway(kind, srv.port, config)
        try:
            url = f"http://127.0.0.1:{g.port}/mcp"
            got = client(py, url, "props-client", calls=[("jira", args), ("jira", {"issue": {"issue_key": "X-1", "page_size": 5}})])
            listed = json.dumps(next((t.get("inputSchema") for t in got["tools"] if t["name"] == "jira"), None))
            calls = got["calls"]
            check(f"props: a {profile} client lists issue-key and page.size as the server wrote them, and its call with them runs (X-1 5)",
                  '"issue-key"' in listed and '"page.size"' in listed and calls and calls[0].get("ok") and "X-1 5" in (calls[0].get("text") or ""),
                  (listed[:300], calls[:1], got.get("error")))
            check(f"props: control: the same call under the inference leg's keys (issue_key, page_size) is refused by the server ({profile})",
                  len(calls) == 2 and not calls[1].get("ok"), calls[1:])
            cli = json.dumps(json.loads(runner.cli(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": jira}}).encode(), "mcp", profile)))
            check(f"props: toolfit normalize --format mcp --profile {profile} keeps them too (the CLI shows what the leg lists)",
                  '"issue-key"' in cli and '"page.size"' in cli, cli[:300])
        finally:
            g.stop()


# two tools for the server that needs a Content-Length: one whose name and pattern an OpenAI client's
# list must change, one as it is
LENGTHS_CATALOG = os.path.join(tempfile.mkdtemp(prefix="toolfit-mcp-lengths-"), "catalog.json")
json.dump({"tools": [{"name": "get.weather", "inputSchema": {"type": "object", "properties": {
    "city": {"type": "string", "pattern": "^\\p{Lu}"}, "region": {"type": "string", "x-mcp-header": "Region"}}}},
                     {"name": "plain", "inputSchema": {"type": "object"}}]}, open(LENGTHS_CATALOG, "w"))


def lengths_leg(kind, py, servers):
    """A server that reads a body by its Content-Length alone (411 to a chunked one, as HTTP allows):
    through the shipped configuration every message reaches it, each one toolfit leaves alone byte for
    byte with the client's own length, a renamed call with its new exact length (issue 58: five agent
    CLIs could not run a tool on such a server through chunked framing). The control: the same gateway
    in chunked framing loses the messages to 411."""
    srv = servers["lengths"]

    def session(g, stateless=False):
        """initialize, initialized, tools/list, a call by the listed name (or the stateless protocol's
        list and call, with their Mcp-Method and Mcp-Name headers): what the client sent, and the statuses."""
        sent, statuses, listed = [], [], []
        meta = {"_meta": {"io.modelcontextprotocol/clientInfo": {"name": "codex-mcp-client", "version": "1"}}}

        def post(msg, headers=None):
            body = json.dumps(msg).encode()
            sent.append(body)
            status, h, answer = rpc(g.port, "/mcp", body, headers)
            statuses.append(status)
            return h, answer
        sid = None
        if not stateless:
            h, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                                    "clientInfo": {"name": "codex-mcp-client", "version": "1"}}})
            sid = h.get("mcp-session-id")
            post({"jsonrpc": "2.0", "method": "notifications/initialized"}, {"mcp-session-id": sid} if sid else {})
        auth = {"mcp-session-id": sid} if sid else {"mcp-method": "tools/list"}
        _, answer = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list", **({"params": meta} if stateless else {})}, auth)
        try:
            listed = [t["name"] for t in json.loads(answer)["result"]["tools"]]
        except (ValueError, KeyError, TypeError):
            listed = []
        name = next((n for n in listed if n.startswith("get_weather")), "get_weather__032e")
        auth = {"mcp-session-id": sid} if sid else {"mcp-method": "tools/call", "mcp-name": name}
        _, answer = post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": name, "arguments": {"city": "Oslo"}, **(meta if stateless else {})}}, auth)
        return sent, statuses, listed, answer

    for stateless in (False, True):
        what = "stateless (Mcp-Method)" if stateless else "session"
        before = len(srv.records())
        g = gateway(kind, srv.port)
        try:
            sent, statuses, listed, answer = session(g, stateless)
        finally:
            g.stop()
        got = srv.records()[before:]
        exact = [r for r in got if "body" in r and not r["chunked"] and r["content_length"] == str(r["bytes"])]
        as_came = [r for r in got if r.get("method") != "tools/call" and r.get("body", "").encode() in sent]
        call = next((r for r in got if r.get("method") == "tools/call"), {})
        check(f"needs a length, {what}: every message reached the server with an exact Content-Length, none chunked ({len(got)} of {len(sent)})",
              statuses[:len(sent)] and all(s in (200, 202) for s in statuses) and len(exact) == len(got) == len(sent), (statuses, got[:4]))
        check(f"needs a length, {what}: each message toolfit leaves alone arrived byte for byte as the client sent it; the list was rewritten for the client",
              len(as_came) == len(sent) - 1 and "get_weather__032e" in listed, (len(as_came), listed))
        check(f"needs a length, {what}: the call by the listed name ran under the server's name, its body the client's with the name alone changed",
              call.get("name") == "get.weather" and call.get("body") == sent[-1].decode().replace("get_weather__032e", "get.weather") and b"get.weather" in answer,
              (call, answer[:200]))
    # 2026-07-28's list hints: a list tailored to its client is private, one the route's profile made
    # stays public (the control); x-mcp-header stays under every client's profile
    for who, headers, scope in (("codex-mcp-client", {}, "private"), ("gemini-cli-mcp-client", {}, "private"),
                                ("some-agent", {"x-toolfit-profile": "ollama"}, "private"), ("some-agent", {}, "public")):
        g = gateway(kind, srv.port)
        try:
            meta = {"_meta": {"io.modelcontextprotocol/clientInfo": {"name": who, "version": "1"}}}
            _, _, answer = rpc(g.port, "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta}, {"mcp-method": "tools/list", **headers})
        finally:
            g.stop()
        try:
            result = json.loads(answer)["result"]
        except (ValueError, KeyError, TypeError):
            result = {}
        region = next((t["inputSchema"]["properties"].get("region", {}) for t in result.get("tools", []) if t["name"].startswith("get")), {})
        check(f"list hints: {who} {headers or ''}: cacheScope {scope}, ttlMs kept, x-mcp-header kept",
              (result.get("cacheScope"), result.get("ttlMs"), region.get("x-mcp-header")) == (scope, 60000, "Region"), answer[:400])
    if kind == "wasm":
        config = {**plugin(), "framing": "chunked"}
        before = len(srv.records())
        g = gateway(kind, srv.port, config)
        try:
            sent, statuses, _, _ = session(g)
        finally:
            g.stop()
        refused = [r for r in srv.records()[before:] if r.get("refused")]
        check("needs a length: control: in chunked framing the gateway sends these messages without their length, and the server refuses them (411)",
              411 in statuses and refused, (statuses, refused[:2]))
        # chunked framing still keeps the length of a message whose Mcp-Method says it cannot change
        g = gateway(kind, srv.port, config)
        try:
            _, statuses, listed, _ = session(g, stateless=True)
        finally:
            g.stop()
        check("needs a length, chunked framing: a list whose Mcp-Method header says it is no call keeps its length (200); the renamed call cannot (411)",
              statuses == [200, 411] and "get_weather__032e" in listed, (statuses, listed))


def replicas_leg(kind, py, servers):
    """Two gateways behind one front Envoy that sends each request to the next: a session's requests
    land on both, and each knows the client from the session id alone."""
    fm = servers["fastmcp"]
    a, b = gateway(kind, fm.port), gateway(kind, fm.port)
    front = runner.Envoy.__new__(runner.Envoy)
    front.port, front.admin = free_port(), free_port()
    try:
        front.start(FRONT.replace("ADMIN", str(front.admin)).replace("PORT", str(front.port)).replace("ONE", str(a.port)).replace("TWO", str(b.port)))
        got = client(py, f"http://127.0.0.1:{front.port}/mcp", "codex-mcp-client", lists=2,
                     calls=[("get_weather__032e", {"city": "Oslo"}), ("stats_mean__052f", {"values": [3]}), ("get_weather__032e", {"city": "Lima"})])
        pa, pb = prom(a), prom(b)
        per = [(series(p, "mcp_sessions", mcp_client="codex-mcp-client"), series(p, "mcp_tools_listed", mcp_client="codex-mcp-client"),
                series(p, "names_restored", profile="openai")) for p in (pa, pb)]
        names = [t["name"] for t in got["tools"]]
        check("two replicas: the session works whichever replica each request reaches",
              got.get("error") is None and all(c.get("ok") for c in got["calls"]) and len(got["calls"]) == 3 and "get_weather__032e" in names, got)
        check("two replicas: one saw initialize, the other still rewrote for the session's client (from the session id alone)",
              sorted(s for s, _, _ in per) == [0, 1] and all(listed + restored > 0 for _, listed, restored in per), per)
    finally:
        for x in (front, a, b):
            x.stop()


# each CLI's model API (the double's judge) and model name; opencode maps to the route's `mcp` profile by
# default, so its MCP configuration names the profile its model API needs in the header
CLI_API = {"claude": ("anthropic", "m"), "codex": ("openai-responses", "m"), "gemini": ("gemini", "gemini-2.5-flash"), "opencode": ("openai", "m")}
CLI_CLIENT = {"claude": "claude-code", "codex": "codex-mcp-client", "gemini": "gemini-cli-mcp-client", "opencode": "opencode"}
CLI_HEADERS = {"opencode": {"x-toolfit-profile": "openai"}}
CLI_PROFILE = {"claude": "anthropic", "codex": "openai", "gemini": "gemini-json", "opencode": "openai"}
WEATHER_PROMPT = "What is the weather in Paris? Use the weather tool. [toolfit-call]"


def is_weather(name, description):
    return "weather" in (name or "")


def cli_runs(kind, servers, bins, judge, only):
    """Each coding agent's CLI with the FastMCP server as a remote MCP server, directly (`raw`) or through
    the MCP gateway, against a double of its model API that judges every request by that API's rules
    and calls the weather tool: a row per CLI."""
    rows = {}
    g = gateway(kind, servers["fastmcp"].port) if kind != "raw" else None
    try:
        url = f"http://127.0.0.1:{g.port if g else servers['fastmcp'].port}/mcp"
        for cli, (api, model) in CLI_API.items():
            if cli not in only:
                continue
            double = agent_clis.Double(api, judge, pick=is_weather, args={"city": "Paris"}, marker="celsius")
            try:
                spec = {"url": url, "headers": CLI_HEADERS.get(cli) if g else None}
                code, out, err = agent_clis.run_cli(cli, bins, f"http://127.0.0.1:{double.port}", {"weather": spec}, model, timeout=240,
                                                    prompt=WEATHER_PROMPT, allowed="mcp__weather")
                ran, result, text = agent_clis.transcript(cli, out, marker="celsius")
                tools = [f for s in double.seen for f in agent_clis.functions(s["fmt"], s["body"]) if is_weather(f[0], f[3])]
                rows[cli] = {"code": code, "ran": ran, "result": result, "text": text, "err": (err or "")[-600:],
                             "requests": len(double.seen), "refused": sum(1 for x in double.seen if x["errors"]),
                             "errors": [x["errors"][:2] for x in double.seen if x["errors"]][:1], "tools": tools[:1],
                             "prom": prom(g) if g else ""}
            finally:
                double.shutdown()
    finally:
        if g:
            g.stop()
    return rows


def cli_leg(servers, only, kinds=delivery.DELIVERIES):
    bins = agent_clis.install()
    judge = agent_clis.Judge()
    try:
        raw = cli_runs("raw", servers, bins, judge, only)
        for cli, r in raw.items():
            print(f"      raw {cli}: exit {r['code']}, {r['requests']} model requests, {r['refused']} refused {r['errors']}, ran {r['ran']}", flush=True)
        # the control: what the CLIs send their model API straight from the server, that API refuses
        check("CLIs control: without toolfit a model API refuses what the CLI makes of the server's tools (" +
              ", ".join(c for c, r in raw.items() if r["refused"]) + ")", any(r["refused"] for r in raw.values()), {c: r["errors"] for c, r in raw.items()})
        table = {c: {"raw": "refused by its API" if r["refused"] else ("ran" if r["result"] else "no result")} for c, r in raw.items()}
        for kind in kinds:
            verdict.LABEL = delivery.label(kind)
            for cli, r in cli_runs(kind, servers, bins, judge, only).items():
                table[cli][kind] = "refused by its API" if r["refused"] else ("ran" if r["result"] and r["code"] == 0 else "no result")
                client = CLI_CLIENT[cli]
                label = client if cli not in CLI_HEADERS else "other"
                # the client known by the name it gives itself (in `initialize`, or in each request's
                # `_meta` in the stateless protocol Claude Code speaks)
                listed = series(r["prom"], "mcp_tools_listed", mcp_client=label)
                # the name its model saw is the one toolfit listed (`get.weather` where the profile refuses dots)
                name = "get.weather" if CLI_PROFILE[cli] == "gemini-json" else "get_weather__032e"
                check(f"{cli} through the MCP leg: its model API accepts every request ({r['requests']} requests), the tools as toolfit listed them for {label}",
                      r["requests"] > 0 and r["refused"] == 0 and listed >= 3 and any(t[0].endswith(name) for t in r["tools"]), (r["errors"], listed, r["tools"]))
                check(f"{cli} through the MCP leg: the weather tool ran on the server under its own name and its result came back",
                      r["code"] == 0 and r["ran"] and r["result"], (r["code"], r["ran"], r["text"][:200], r["err"]))
            verdict.LABEL = ""
        print("\n| CLI (MCP client name) | profile | raw | " + " | ".join(delivery.DELIVERIES) + " |")
        for cli, row in table.items():
            print(f"| {cli} ({CLI_CLIENT[cli]}) | {CLI_PROFILE[cli]} | " + " | ".join(row.get(k, "-") for k in ("raw", *delivery.DELIVERIES)) + " |")
        print(flush=True)
    finally:
        judge.stop()


def main():
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--delivery=")), None)
    clis = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--clis=")), list(CLI_API))
    py = venv("agents", mcp_agents.PINS)
    bins = mcp_agents.npm_servers()
    everything = os.path.join(os.path.dirname(bins), "@modelcontextprotocol", "server-everything", "dist", "index.js")
    servers = {
        "fastmcp": Server([py, os.path.join(HERE, "mcp_fastmcp.py"), "{port}"], "/mcp"),
        "props": Server([py, os.path.join(HERE, "mcp_fastmcp.py"), "{port}", "--props"], "/mcp"),
        "catalog": Server([sys.executable, os.path.join(HERE, "mcp_catalog_server.py"), "{port}", CATALOG, "{log}"], "/mcp"),
        "pieces": Server([sys.executable, os.path.join(HERE, "mcp_catalog_server.py"), "{port}", CATALOG, "{log}", "--sse", "--piece", "7", "--page", "100", "--limit", "200"], "/mcp"),
        "stateless": Server([sys.executable, os.path.join(HERE, "mcp_catalog_server.py"), "{port}", CATALOG, "{log}", "--stateless", "--page", "50"], "/mcp"),
        "apify": Server([sys.executable, os.path.join(HERE, "mcp_catalog_server.py"), "{port}", APIFY, "{log}"], "/mcp"),
        "everything": Server(["node", everything, "streamableHttp"], "/mcp"),
        "everything-sse": Server(["node", everything, "sse"], "/sse", wait="/nothing"),
        "lengths": Server([sys.executable, os.path.join(HERE, "mcp_catalog_server.py"), "{port}", LENGTHS_CATALOG, "{log}", "--lengths", "--hints"], "/mcp"),
    }
    try:
        # what each server lists and answers without toolfit
        raw = {
            "fastmcp": client(py, f"http://127.0.0.1:{servers['fastmcp'].port}/mcp", "codex-mcp-client",
                              calls=[("get.weather", {"city": "Paris"}), ("stats/mean", {"values": [1, 2]}), ("shout", {"text": "hi"})]),
            "everything": client(py, f"http://127.0.0.1:{servers['everything'].port}/mcp", "raw"),
        }
        check("servers answer without toolfit (FastMCP 3 tools, server-everything 10 or more)",
              len(raw["fastmcp"]["tools"]) == 3 and len(raw["everything"]["tools"]) >= 10, {k: v.get("error") for k, v in raw.items()})
        for kind in delivery.DELIVERIES:
            if only and kind != only:
                continue
            verdict.LABEL = delivery.label(kind)
            for leg in (fastmcp_leg, everything_leg):
                leg(kind, py, servers, raw)
            for leg in (catalog_leg, large_call_leg, pieces_leg, replicas_leg, props_leg, lengths_leg):
                leg(kind, py, servers)
        verdict.LABEL = ""
        dialect_leg()
        if clis and clis != ["none"]:
            cli_leg(servers, clis, [k for k in delivery.DELIVERIES if not only or k == only])
    finally:
        for s in servers.values():
            s.stop()
    verdict.summary("mcp leg")


if __name__ == "__main__":
    main()
