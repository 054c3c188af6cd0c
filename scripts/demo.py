#!/usr/bin/env python3
"""make demo: Envoy with toolfit in front of a model server, and a request that shows a schema fixed.

Upstream, one of:
- an echo upstream that needs no model and answers with what it received (the default);
- LLAMA=local (`make demo LLAMA=local`): a real llama-server (llama.cpp 2026-10, built from the
  llama-cpp-python sdist and cached in ~/.cache/toolfit/server, about 7 minutes the first time) with a
  tiny random-weight model (scripts/tiny_model.py, Qwen 2.5 chat template), started on a free port;
- LLAMA_URL=http://host:port: a llama-server you run.
AGENT=1 (`make demo AGENT=1`, implies LLAMA=local): after the example, an agent loop as users run it
(openai-agents with its MCPServerStdio) lists the tools of a real MCP server (mcp-server-time from PyPI,
in ~/.cache/toolfit/agents) and the model behind Envoy calls one; the MCP server runs it.
AGENT=claude, codex or opencode (`make demo AGENT=claude`): that coding agent's CLI (from npm, pinned in
tests/envoy/agent_clis.py, cached in ~/.cache/toolfit/clis) with real MCP servers (server-everything,
mcp-server-time) runs one turn against llama-server through Envoy and toolfit: the demo prints one MCP
tool as the CLI sent it and as llama-server received it, and the tool the model called and the CLI ran.
Every run prints the schema as sent beside the schema the model server received, the call that came
back, and the counters that moved. Envoy listens on $PORT (10000), admin on $ADMIN_PORT (9901).
`--once` sends the example request, prints, and stops (used by the tests).
"""
import json, os, signal, socket, subprocess, sys, tempfile, time, urllib.request
from urllib.parse import urlparse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXAMPLE = {
    "model": "any",
    "messages": [{"role": "user", "content": "Look up issue PROJ-123"}],
    "tools": [{"type": "function", "function": {"name": "get_issue", "description": "Fetch an issue", "parameters": {
        "type": "object",
        "properties": {
            "key": {"type": "string", "pattern": "^(?:[A-Z][A-Z0-9]+)-\\d+$", "description": "issue key"},
            "fields": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"not": {}}]},
        },
        "required": ["key"],
        "additionalProperties": False,
    }}}],
}


# everything started here, stopped however the demo ends (a closed pipe included)
PROCS = []


def pick(port):
    """0 means any free port."""
    if port:
        return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def start_llama_server(context=8192):
    """llama-server 2026-10 with the tiny model, on a free loopback port (built and written on first use)."""
    from harness.paths import load
    tiny_model = load("scripts/tiny_model.py")

    version = "0.3.36"
    print("building or finding llama-server and the tiny model (the first time takes minutes) ...", flush=True)
    binary = subprocess.run([os.path.join(ROOT, "scripts", "llama_server.sh"), version], check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    model = tiny_model.cached(version, "qwen2.5")
    port = pick(0)
    log = os.path.join(tempfile.mkdtemp(prefix="toolfit-demo-llama-"), "llama-server.log")
    p = subprocess.Popen([binary, "-m", model, "--jinja", "--host", "127.0.0.1", "--port", str(port), "-t", "2", "--seed", "1",
                          "--override-kv", f"qwen2.context_length=int:{context}", "-c", str(context)],
                         stdout=open(log, "w"), stderr=subprocess.STDOUT)
    p.port, p.log_path = port, log
    return p


def received(body):
    """The example's parameters as toolfit rewrites them for this route (the CLI runs the same engine)."""
    cli = os.path.join(ROOT, "target", "release", "toolfit")
    if not os.path.exists(cli):
        return None
    p = subprocess.run([cli, "normalize", "--profile", "llama-cpp"], input=json.dumps(body).encode(), capture_output=True)
    try:
        return json.loads(p.stdout)["tools"][0]["function"]["parameters"]
    except (ValueError, KeyError, IndexError):
        return None


def run_agent(port):
    """openai-agents with a real MCP server (mcp-server-time), the model behind Envoy: one turn."""
    from harness.paths import load
    from harness.venv import venv
    PINS = load("tests/envoy/mcp_agents.py").PINS
    print("An agent: openai-agents, MCPServerStdio(mcp-server-time), the model through Envoy and toolfit", flush=True)
    py = venv("agents", PINS)
    tap = os.path.join(tempfile.mkdtemp(prefix="toolfit-demo-agent-"), "mcp.jsonl")
    worker = os.path.join(ROOT, "tests", "envoy", "agent_worker.py")
    p = subprocess.run([py, worker, "openai-agents", f"http://127.0.0.1:{port}/v1", "1", tap, "[]", "--", py, "-m", "mcp_server_time"],
                       capture_output=True, text=True, timeout=600)
    recs = [json.loads(l) for l in open(tap)] if os.path.exists(tap) else []
    listed = next((r["list"] for r in recs if "list" in r), [])
    print(f"\n  the agent listed {len(listed)} tools from the MCP server: {', '.join(t['name'] for t in listed)}")
    for r in recs:
        if "call" in r:
            print(f"  the model called {r['call']}({json.dumps(r['arguments'])})")
            print(f"  the MCP server answered ({'error' if r['isError'] else 'ok'}): {r['text'][:200]}")
    if not any("call" in r for r in recs):
        print("  no call reached the MCP server: " + (p.stdout[-300:] + p.stderr[-600:]))
    print()


CLIS = ("claude", "codex", "opencode")


def run_cli(cli, port, inner):
    """One turn of the coding agent `cli` against Envoy on `port` (a tap in front, so the demo sees what it sent)."""
    import agent_clis, mcp_agents
    from harness.venv import venv
    print(f"A coding agent: {cli} ({agent_clis.CLIS[cli]}) with server-everything and mcp-server-time, the model through Envoy and toolfit", flush=True)
    bins = agent_clis.install()
    py = venv("agents", mcp_agents.PINS)
    servers = {n: c for n, c in agent_clis.mcp_servers(mcp_agents.npm_servers(), py, tempfile.mkdtemp()).items() if n != "filesystem"}
    outer = agent_clis.Tap(port, force=False)
    n0 = len(inner.seen)
    code, out, err = agent_clis.run_cli(cli, bins, f"http://127.0.0.1:{outer.port}", servers, "tiny")
    outer.shutdown()
    first = lambda seen: next((x for x in seen if x["body"] and agent_clis.functions(x["fmt"], x["body"])), None)
    a, b = first(outer.seen), first(inner.seen[n0:])
    if a and b:
        before = {(n, ns): s for n, ns, s, _ in agent_clis.functions(a["fmt"], a["body"])}
        after = {(n, ns): s for n, ns, s, _ in agent_clis.functions(b["fmt"], b["body"])}
        print(f"\n  {cli} sent {len(before)} tools in its first request ({a['path']}); llama-server received {len(after)}")
        # one MCP tool toolfit changed (its name may have moved out of a namespace too)
        # an MCP tool whose schema toolfit changed, else one it lifted out of a namespace (Codex)
        shown = None
        for wanted in ("changed", "lifted"):
            for (n, ns), s in before.items():
                lifted = (f"{ns}__{n}", None) if ns else None
                got = after.get((n, ns)) if (n, ns) in after else after.get(lifted) if lifted else None
                mcp = (ns or "").startswith("mcp__") or n.startswith("mcp__") or "everything" in n
                if shown is None and got is not None and mcp and (got != s if wanted == "changed" else lifted in after):
                    shown = ((n, ns), s, got, lifted[0] if lifted and lifted in after else n)
        if shown:
            (n, ns), s, got, sent_as = shown
            print(f"\n  the MCP tool {n!r}{f' in namespace {ns!r}' if ns else ''} as {cli} sent it:\n\n    {json.dumps(s)[:900]}")
            print(f"\n  as llama-server received it{f' (as {sent_as!r}, a top-level function tool)' if sent_as != n else ''}:\n\n    {json.dumps(got)[:900]}")
    ran, result, text = agent_clis.transcript(cli, out)
    print(f"\n  {cli} exited {code}; it ran {', '.join(ran) or 'no tool'}{' and sent the result back to the model' if any(x['body'] and agent_clis.has_result(x['fmt'], x['body']) for x in inner.seen[n0:]) else ''}")
    if code != 0:
        print("  " + (err[-600:] or out[-600:]))
    print()


def wait_health(port, seconds=60):
    end = time.time() + seconds
    while time.time() < end:
        try:
            if '"ok"' in get(f"http://127.0.0.1:{port}/health"):
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def main():
    once = "--once" in sys.argv
    port, admin = pick(int(os.environ.get("PORT", 10000))), pick(int(os.environ.get("ADMIN_PORT", 9901)))
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    procs = PROCS
    llama = os.environ.get("LLAMA_URL")
    agent = os.environ.get("AGENT") == "1"
    cli = os.environ.get("AGENT") if os.environ.get("AGENT") in CLIS else None
    if os.environ.get("AGENT") not in (None, "", "0", "1") and not cli:
        sys.exit(f"AGENT={os.environ['AGENT']}: one of 1 (openai-agents), {', '.join(CLIS)}")
    local = os.environ.get("LLAMA") == "local" or agent or bool(cli)
    example = dict(EXAMPLE)
    if local:
        # Claude Code's first request is some 22,000 tokens
        procs.append(start_llama_server(131072 if cli else 8192))
        llama = f"http://127.0.0.1:{procs[-1].port}"
        # a random-weight model writes a call only if made to: "required" and, as llama.cpp's own tests do,
        # the assistant's turn opened with the template's call opener
        example["messages"] = EXAMPLE["messages"] + [{"role": "assistant", "content": "<tool_call>\n"}]
        example["tool_choice"] = "required"
    tap = None
    if llama:
        u = urlparse(llama)
        up_host, up_port = u.hostname or "127.0.0.1", u.port or 8080
        print(f"upstream: llama-server at {up_host}:{up_port}")
        if cli:
            sys.path.insert(0, os.path.join(ROOT, "tests", "envoy"))  # agent_clis and its siblings
            from agent_clis import Tap
            tap = Tap(up_port)  # what llama-server received, and the marked turn's call (agent_clis.py)
            up_port = tap.port
    else:
        up_host, up_port = "127.0.0.1", pick(int(os.environ.get("UPSTREAM_PORT", 8080)))
        if not free(up_port):
            sys.exit(f"port {up_port} is busy: set UPSTREAM_PORT, or LLAMA_URL to use a running llama-server")
        procs.append(subprocess.Popen([sys.executable, os.path.join(ROOT, "envoy", "echo_upstream.py"), str(up_port)]))
        print(f"upstream: echo server on {up_host}:{up_port} (set LLAMA_URL to use llama-server)")
    for p in (port, admin):
        if not free(p):
            sys.exit(f"port {p} is busy: set PORT / ADMIN_PORT")
    text = open(os.path.join(ROOT, "envoy", "envoy.yaml")).read()
    text = text.replace("port_value: 9901", f"port_value: {admin}").replace("port_value: 10000", f"port_value: {port}")
    text = text.replace("address: 127.0.0.1, port_value: 8080", f"address: {up_host}, port_value: {up_port}")
    text = "stats_flush_interval: 1s\n" + text
    cfg = os.path.join(tempfile.mkdtemp(prefix="toolfit-demo-"), "envoy.yaml")
    open(cfg, "w").write(text)
    log = open(cfg + ".log", "w")
    envoy = subprocess.Popen([os.path.join(venv, "bin", "envoy"), "-c", cfg, "--concurrency", "2", "--base-id", str(port),
                              "--log-format", "[%l] %v"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    procs.append(envoy)

    def stop(*_):
        for p in procs:
            p.terminate()
        sys.exit(0)

    if local and not wait_health(procs[0].port):
        print(f"llama-server did not start: see {procs[0].log_path}")
        stop()
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    time.sleep(0.2)
    for _ in range(300):
        try:
            if get(f"http://127.0.0.1:{admin}/ready").strip() == "LIVE":
                break
        except OSError:
            time.sleep(0.1)
    else:
        print(open(cfg + ".log").read()[-3000:])
        stop()
    body = json.dumps(example)
    curl = (f"curl -s localhost:{port}/v1/chat/completions -H 'content-type: application/json' -d '{body}'")
    print(f"\nEnvoy with toolfit on :{port} (admin :{admin}, log {cfg}.log).\n\nThe example request, a tool schema as MCP servers send it:\n\n  {curl}\n")
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body.encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        answer = r.read().decode()
    sent = example["tools"][0]["function"]["parameters"]
    print("The schema as sent:\n\n  " + json.dumps(sent) + "\n")
    if not llama:
        got = json.loads(answer)["received"]
        print("The schema the model server received:\n\n  " + json.dumps(got["tools"][0]["function"]["parameters"]))
        print(f"\n  framing: {got['framing']}, content-length {got['content_length']} = {got['bytes']} bytes received\n")
    else:
        rewritten = received(example)
        if rewritten:
            print("The schema the model server received (the same engine, `toolfit normalize`):\n\n  " + json.dumps(rewritten) + "\n")
        try:
            call = json.loads(answer)["choices"][0]["message"]["tool_calls"][0]["function"]
            print(f"The call that came back:\n\n  tool call: {call['name']}({call['arguments']})\n")
        except (ValueError, KeyError, IndexError, TypeError):
            print("llama-server answered (no tool call in it):\n  " + answer[:600] + "\n")
    if agent:
        run_agent(port)
    if cli:
        run_cli(cli, port, tap)
    time.sleep(1.2)
    stats = [l for l in get(f"http://127.0.0.1:{admin}/stats/prometheus").splitlines() if l.startswith("toolfit_") and not l.startswith("toolfit_rewrite_us")]
    moved = [l for l in stats if not l.startswith("#") and not l.endswith(" 0")]
    print(f"Counters that moved ({len(moved)} of {len([l for l in stats if not l.startswith('#')])}; all: curl -s localhost:{admin}/stats/prometheus | grep ^toolfit_):\n")
    for l in moved:
        print("  " + l)
    if once:
        stop()
    print("\nEnvoy keeps running; send your own requests. Ctrl-C stops it.")
    envoy.wait()
    stop()


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.terminate()
