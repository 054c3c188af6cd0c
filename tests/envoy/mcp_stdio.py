#!/usr/bin/env python3
"""`toolfit mcp`: the MCP leg's stdio host, between a client and a stdio MCP server it runs as its child.

1. Bytes: a scripted server (mcp_stdio_server.py) driven raw and through `toolfit mcp` by the same
   client script. Every line either side writes arrives as it was written, in order (CRLF endings, odd
   spacing, a notification, the server's own request, a line that is not JSON, a message split across
   writes), except the `tools/list` answer (which must equal `toolfit normalize --format mcp` of the
   server's) and the `tools/call` toolfit gives back its original name (the server reads the same bytes
   as from a client that called it directly).
2. Broken servers: one that exits at once (its status and stderr come through), one not found (127),
   one killed (137), a list past max_body_bytes (as it came, counted), a client that stops reading
   (the server is stopped): each ends within seconds, never a hang.
3. Real servers through the Python SDK's stdio client named as each CLI names itself: FastMCP (typed
   returns, `.` and `/` in names), server-everything and server-filesystem (npm), mcp-server-time
   (PyPI). The list each client gets is `toolfit normalize --format mcp` of the server's for its
   profile; each call returns what it returns without toolfit.
4. The four coding agents' CLIs (tests/envoy/agent_clis.py pins them) configured as users would: their
   own MCP configuration names `toolfit mcp -- <server>` (opencode with `--profile openai`), beside a
   broken server, against a double of their model API that judges every request by that API's rules
   and calls the weather tool. Control: the same CLIs with the servers configured directly.
  python tests/envoy/mcp_stdio.py [--clis=claude,codex|none]"""
import json, os, queue, re, subprocess, sys, tempfile, threading, time

import agent_clis
import mcp_agents
from harness import verdict
from harness.paths import ROOT
from harness.venv import venv
from mcp_leg import series

check = verdict.check
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLFIT = os.path.join(ROOT, "target", "release", "toolfit")
SCRIPTED = os.path.join(HERE, "mcp_stdio_server.py")
FASTMCP = os.path.join(HERE, "mcp_fastmcp.py")
# the clients as the CLIs name themselves in `initialize`, and the profile toolfit maps each to by default
CLIENTS = {"codex-mcp-client": "openai", "claude-code": "anthropic", "gemini-cli-mcp-client": "gemini-json", "an-unknown-client": "mcp"}
DECLARES = ("claude-code",)  # declare_2020_12's default patterns (claude*)


def toolfit(*args, stats=None, profile=None):
    """`toolfit mcp [...] --` as a command prefix."""
    return [TOOLFIT, "mcp", *(["--stats", stats] if stats else []), *(["--profile", profile] if profile else []), *args, "--"]


def expected(tools, profile, declare=False):
    """What a client of `profile` must be listed: `toolfit normalize --format mcp` of the server's list."""
    doc = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).encode()
    p = subprocess.run([TOOLFIT, "normalize", "--format", "mcp", "--profile", profile, *(["--declare-2020-12"] if declare else [])], input=doc, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"toolfit normalize --profile {profile}: {p.stderr.decode()[:300]}")
    return json.loads(p.stdout)["result"]["tools"]


class Pipe:
    """A process on pipes: lines written to its stdin, lines read from its stdout as they come."""

    def __init__(self, cmd, read=True):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines, self.err = queue.Queue(), []
        if read:
            threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.err.append(self.p.stderr.read().decode(errors="replace")), daemon=True).start()
        self.started = time.time()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, *pieces, pause=0.05):
        for b in pieces:
            self.p.stdin.write(b)
            self.p.stdin.flush()
            time.sleep(pause)

    def take(self, n, timeout=30):
        out = []
        for _ in range(n):
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                break
            if line is None:
                break
            out.append(line)
        return out

    def close(self, timeout=10):
        """Closes stdin; (exit status or "hang", seconds, stderr)."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            code = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            code = "hang"
        time.sleep(0.1)
        return code, round(time.time() - self.started, 1), "".join(self.err)


def line(m, end=b"\n"):
    return json.dumps(m).encode() + end


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}}, "clientInfo": {"name": "codex-mcp-client", "version": "1"}}}


def scripted_session(prefix, log):
    """The client script against the scripted server (through `prefix`, or raw): what the client read,
    what the server read, the exit."""
    p = Pipe([*prefix, sys.executable, SCRIPTED, log])
    got = []
    p.send(line(INIT))
    got += p.take(1)
    p.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n')
    got += p.take(4)
    # the answer to the server's own request, then a list
    p.send(b'{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}\n', line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    got += p.take(1)
    try:
        name = json.loads(got[-1])["result"]["tools"][0]["name"]
    except (ValueError, KeyError, IndexError):
        name = "get.weather"
    p.send(line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": name, "arguments": {"city": "Paris"}}}))
    got += p.take(1)
    # a message in three writes
    p.send(b'{"jsonrpc":"2.0",', b'"id":4,"method"', b':"ping"}\n')
    got += p.take(1)
    code, took, err = p.close()
    read = [json.loads(x).encode("latin-1") for x in open(log)] if os.path.exists(log) else []
    return {"client": got, "server": read, "code": code, "took": took, "err": err}


def bytes_leg(tmp):
    raw = scripted_session([], os.path.join(tmp, "raw.log"))
    stats = os.path.join(tmp, "bytes.prom")
    via = scripted_session(toolfit(stats=stats), os.path.join(tmp, "via.log"))
    check("scripted server raw: the client script read 8 lines and the server 6", len(raw["client"]) == 8 and len(raw["server"]) == 6 and raw["code"] == 0, raw)
    listed = 5  # the index of the tools/list answer in what the client read
    same = [i for i in range(len(raw["client"])) if i != listed]
    check("through toolfit mcp: every line the server wrote but the list reached the client as written, in order (CRLF, spacing, a notification, the server's own request, not-JSON, not-JSON-RPC)",
          len(via["client"]) == 8 and all(via["client"][i] == raw["client"][i] for i in same), [(raw["client"][i], via["client"][i:i + 1]) for i in same if via["client"][i:i + 1] != [raw["client"][i]]][:2])
    # the control: the comparison says no where toolfit changed a line
    check("control: the list is the one line that differs", via["client"][listed:listed + 1] != raw["client"][listed:listed + 1], via["client"][listed:listed + 1])
    try:
        got = json.loads(via["client"][listed])["result"]["tools"]
        # the schemas as normalize makes them, the name as the leg lists a name OpenAI refuses
        want = [{**t, "name": "get_weather__032e"} for t in expected(json.loads(raw["client"][listed])["result"]["tools"], "openai")]
    except (ValueError, KeyError, IndexError) as e:
        got, want = None, str(e)
    check("the list the client read is `toolfit normalize --format mcp --profile openai` of the server's, get.weather listed as get_weather__032e (codex-mcp-client)", got == want, (got, want))
    check("every line the client wrote reached the server as written (the call under the listed name arrives as the direct call's bytes; a message in three writes arrives whole)",
          via["server"] == raw["server"] and len(raw["server"]) == 6, [(a, b) for a, b in zip(raw["server"], via["server"]) if a != b][:2] or (len(raw["server"]), len(via["server"])))
    check("the call ran under its own name and its answer came back", b"called get.weather" in b"".join(via["client"]), via["client"][6:7])
    check("the server's exit (0, at the end of its input) is toolfit's, at once", via["code"] == 0 and via["took"] < 10, (via["code"], via["took"], via["err"][-300:]))
    prom = open(stats).read() if os.path.exists(stats) else ""
    check("--stats: the list and the call counted for the client, in Prometheus' text format",
          series(prom, "mcp_tools_listed", route="stdio", profile="openai", mcp_client="codex-mcp-client") == 1 and series(prom, "names_restored", profile="openai") == 1, prom[:500])
    check("the summary line on stderr at exit names the client and what changed", "client codex-mcp-client (profile openai)" in via["err"] and "1 tools listed" in via["err"], via["err"][-400:])


def broken_leg(tmp):
    log = os.path.join(tmp, "broken.log")
    for what, args, want in [("exits 3 at once", ["--exit", "3"], 3), ("killed by SIGKILL after initialize", ["--kill"], 137)]:
        raw = Pipe([sys.executable, SCRIPTED, log, *args])
        raw.send(line(INIT))
        raw_out = raw.take(2, timeout=5)
        raw_code, _, raw_err = raw.close()
        raw_code = 128 - raw_code if isinstance(raw_code, int) and raw_code < 0 else raw_code  # as a shell says a signal
        p = Pipe([*toolfit(), sys.executable, SCRIPTED, log, *args])
        try:
            p.send(line(INIT))
        except OSError:
            pass
        out = p.take(2, timeout=5)
        code, took, err = p.close()
        check(f"a server that {what}: toolfit exits {want} as it did, within seconds, what it wrote and its stderr passed on",
              code == want == raw_code and took < 10 and out == raw_out and (not raw_err.strip() or raw_err.strip().splitlines()[0] in err), (code, raw_code, took, out, raw_out, err[-300:]))
    p = Pipe([*toolfit(), "/nonexistent/mcp-server"])
    code, took, err = p.close()
    check("a server command that does not exist: exit 127 and a line naming it", code == 127 and "/nonexistent/mcp-server" in err, (code, err))
    # a list past max_body_bytes goes on as it came, counted; a large one within it is rewritten (control)
    config = os.path.join(tmp, "small.json")
    open(config, "w").write(json.dumps({"max_body_bytes": 4 * 1024 * 1024}))
    for mb, rewritten in [(2, True), (6, False)]:
        stats = os.path.join(tmp, f"huge{mb}.prom")
        lines = {}
        for kind, prefix in [("raw", []), ("via", toolfit("--config", config, stats=stats))]:
            p = Pipe([*prefix, sys.executable, SCRIPTED, log, "--huge", str(mb)])
            p.send(line(INIT), line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            got = p.take(2, timeout=60)
            lines[kind] = (got[1:2] or [b""])[0]
            p.close()
        prom = open(stats).read() if os.path.exists(stats) else ""
        if rewritten:
            check(f"control: a {mb} MB list within max_body_bytes is rewritten", lines["via"] != lines["raw"] and b"get_weather__032e" in lines["via"], len(lines["via"]))
        else:
            check(f"a {mb} MB list past max_body_bytes (4 MiB) reaches the client as the server wrote it, counted skipped_too_large",
                  len(lines["raw"]) > 6_000_000 and lines["via"] == lines["raw"] and series(prom, "skipped_too_large") == 1, (len(lines["raw"]), len(lines["via"]), prom.count("skipped_too_large")))
    # a client stops its stdio server with SIGTERM: one that never reads its stdin gets it too
    p = Pipe([*toolfit(), sys.executable, "-c", "import time; time.sleep(120)"])
    time.sleep(1)
    p.p.send_signal(15)
    try:
        code = p.p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        code = "hang"
    p.close()
    check("SIGTERM to toolfit reaches a server that never reads its stdin: it ends, and toolfit exits 143 as it did", code == 143, code)
    # the client stops reading: the server is stopped and toolfit ends
    p = Pipe([*toolfit(), sys.executable, SCRIPTED, log], read=False)
    p.p.stdout and p.p.stdout.close()
    try:
        p.send(line(INIT))
    except OSError:
        pass
    try:
        code = p.p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        code = "hang"
    p.close()
    check("a client that closed its end: toolfit stops the server and ends within seconds", code != "hang", code)


def sdk(py, client, calls=(), command=()):
    cmd = [py, os.path.join(HERE, "mcp_client_worker.py"), "stdio", "--client", client]
    for n, a in calls:
        cmd += ["--call", n, json.dumps(a)]
    p = subprocess.run([*cmd, "--", *command], capture_output=True, text=True, timeout=180)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (p.stderr or p.stdout)[-1500:], "tools": [], "calls": []}


def servers_leg(py, bins, tmp):
    files = tempfile.mkdtemp(dir=tmp)
    open(os.path.join(files, "note.txt"), "w").write("hello from the filesystem server\n")
    servers = {
        "fastmcp": ([py, FASTMCP, "stdio"], [("get.weather", {"city": "Paris"}), ("stats/mean", {"values": [1, 2]})]),
        "everything": (["node", os.path.join(bins, "mcp-server-everything"), "stdio"], [("echo", {"message": "hi"})]),
        "filesystem": (["node", os.path.join(bins, "mcp-server-filesystem"), files], [("read_text_file", {"path": os.path.join(files, "note.txt")})]),
        "time": ([py, "-m", "mcp_server_time"], [("get_current_time", {"timezone": "UTC"})]),
    }
    for server, (command, calls) in servers.items():
        raw = sdk(py, "raw", calls, command)
        check(f"{server} (stdio) answers without toolfit: {len(raw['tools'])} tools, a call ran", raw["tools"] and any(c["ok"] for c in raw["calls"]) and not raw.get("error"), raw.get("error") or raw["calls"])
        for client, profile in CLIENTS.items():
            want = expected(raw["tools"], profile, client in DECLARES)
            via = sdk(py, client, [(listed_name(n, profile), a) for n, a in calls], toolfit(stats=os.path.join(tmp, f"{server}-{client}.prom")) + command)
            # each inputSchema as normalize makes it, each name as the leg lists it (outputSchemas: the
            # SDK validates each call's structuredContent against the listed one)
            got = [(t.get("name"), t.get("inputSchema")) for t in via["tools"]]
            check(f"{server} through toolfit mcp for {client}: listed as `toolfit normalize --format mcp --profile {profile}` makes it ({len(want)} tools)",
                  not via.get("error") and got == [(listed_name(t["name"], profile), t.get("inputSchema")) for t in want],
                  via.get("error") or [(a, b.get("name")) for a, b in zip(got, want) if a[1] != b.get("inputSchema") or a[0] != listed_name(b["name"], profile)][:2])
            same = all(ran(a, b) for a, b in zip(via["calls"], raw["calls"]))
            if server == "time":  # the time moves on between the two runs: the call ran, whole
                same = [c.get("ok") for c in via["calls"]] == [True] * len(calls) and all(c.get("structured") for c in via["calls"])
            check(f"{server} through toolfit mcp for {client}: each call under its listed name ran and returned what it returns directly ({len(calls)} calls)",
                  len(via["calls"]) == len(calls) and same, (via["calls"], raw["calls"]))


# the characters each API takes in a function name (docs/mcp.md: a name with others is listed written out)
NAME_CHARS = {"openai": "A-Za-z0-9_-", "anthropic": "A-Za-z0-9_-", "gemini-json": "A-Za-z0-9_.:-"}


def listed_name(name, profile):
    """The name the leg lists `name` under for `profile`: each character the API refuses written out
    after `__` as its position and code (`get.weather` -> `get_weather__032e` for OpenAI)."""
    chars = NAME_CHARS.get(profile)
    if not chars or re.fullmatch(f"[{chars}]+", name):
        return name
    out = [f"{i:02x}{ord(c):02x}" for i, c in enumerate(name) if not re.match(f"[{chars}]", c)]
    return re.sub(f"[^{chars}]", "_", name) + "__" + "".join(out)


def ran(via, raw):
    """A call through toolfit returned what it returns directly; or it failed directly only because the
    client refused the server's own outputSchema (a `\\p{..}` pattern Python's re cannot read), and ran."""
    key = lambda c: (c.get("ok"), c.get("structured"), c.get("text"))
    return key(via) == key(raw) or (not raw.get("ok") and "Invalid schema" in raw.get("error", "") and via.get("ok") and via.get("structured"))


# ---------------------------------------------------------------- the coding agents' CLIs

CLI_API = {"claude": ("anthropic", "m"), "codex": ("openai-responses", "m"), "gemini": ("gemini", "gemini-2.5-flash"), "opencode": ("openai", "m")}
CLI_CLIENT = {"claude": "claude-code", "codex": "codex-mcp-client", "gemini": "gemini-cli-mcp-client", "opencode": "other"}
CLI_PROFILE = {"claude": "anthropic", "codex": "openai", "gemini": "gemini-json", "opencode": "openai"}
# opencode names itself `opencode`, which no default maps: its configuration names the profile
CLI_FLAGS = {"opencode": ["--profile", "openai"]}
PROMPT = "What is the weather in Paris? Use the weather tool. [toolfit-call]"


def is_weather(name, description):
    return "weather" in (name or "")


def cli_run(cli, bins, judge, py, tmp, through):
    tap = os.path.join(tmp, f"{cli}-{through}-tap.log")
    stats = os.path.join(tmp, f"{cli}-stats.prom")
    weather = [sys.executable, os.path.join(HERE, "mcp_tap.py"), tap, "--", py, FASTMCP, "stdio"]
    broken_log = os.path.join(tmp, f"{cli}-{through}-broken.log")
    broken = [sys.executable, SCRIPTED, broken_log, "--exit", "3"]
    if through:
        weather = [*toolfit(*CLI_FLAGS.get(cli, []), stats=stats), *weather]
        broken = [*toolfit(), *broken]
    api, model = CLI_API[cli]
    double = agent_clis.Double(api, judge, pick=is_weather, args={"city": "Paris"}, marker="celsius")
    try:
        code, out, err = agent_clis.run_cli(cli, bins, f"http://127.0.0.1:{double.port}", {"weather": weather, "broken": broken}, model, timeout=240,
                                            prompt=PROMPT, allowed="mcp__weather")
    finally:
        double.shutdown()
    ran, result, text = agent_clis.transcript(cli, out, marker="celsius")
    calls = [json.loads(x) for x in open(tap)] if os.path.exists(tap) else []
    tools = [f for s in double.seen for f in agent_clis.functions(s["fmt"], s["body"]) if is_weather(f[0], f[3])]
    return {"code": code, "ran": ran, "result": result, "text": text, "err": (err or "")[-600:], "requests": len(double.seen),
            "refused": sum(1 for x in double.seen if x["errors"]), "errors": [x["errors"][:2] for x in double.seen if x["errors"]][:1],
            "tools": tools[:1], "calls": [c for c in calls if "call" in c], "broken": len(open(broken_log).readlines()) if os.path.exists(broken_log) else 0, "prom": open(stats).read() if through and os.path.exists(stats) else ""}


def cli_leg(py, tmp, only):
    bins = agent_clis.install()
    judge = agent_clis.Judge()
    table = {}
    try:
        raw = {cli: cli_run(cli, bins, judge, py, tmp, False) for cli in CLI_API if cli in only}
        for cli, r in raw.items():
            print(f"      raw {cli}: exit {r['code']}, {r['requests']} model requests, {r['refused']} refused {r['errors']}", flush=True)
            table[cli] = ["refused by its API" if r["refused"] else ("ran" if r["result"] else "no result")]
        check("CLIs control: with the stdio server configured directly, a model API refuses what the CLI makes of its tools (" +
              ", ".join(c for c, r in raw.items() if r["refused"]) + ")", any(r["refused"] for r in raw.values()), {c: r["errors"] for c, r in raw.items()})
        for cli in raw:
            r = cli_run(cli, bins, judge, py, tmp, True)
            table[cli].append("refused by its API" if r["refused"] else ("ran" if r["result"] and r["code"] == 0 else "no result"))
            name = "get.weather" if CLI_PROFILE[cli] == "gemini-json" else "get_weather__032e"
            listed = series(r["prom"], "mcp_tools_listed", profile=CLI_PROFILE[cli], mcp_client=CLI_CLIENT[cli])
            check(f"{cli} with `toolfit mcp` in its MCP configuration: its model API accepts every request ({r['requests']}), the tools as listed for {CLI_CLIENT[cli]} ({CLI_PROFILE[cli]})",
                  r["requests"] > 0 and r["refused"] == 0 and listed >= 3 and any(t[0].endswith(name) for t in r["tools"]), (r["errors"], listed, r["tools"], r["err"]))
            call = next((c for c in r["calls"] if c.get("call") == "get.weather"), None)
            check(f"{cli} with `toolfit mcp`: the weather tool ran on the server under its own name with the model's arguments and its result came back",
                  r["code"] == 0 and call and call.get("arguments") == {"city": "Paris"} and not call.get("isError") and r["result"], (r["code"], r["calls"][:2], r["text"][:200], r["err"]))
            # the control: directly, the model saw the tool otherwise (its name, or its schema)
            check(f"control: {cli} with the server directly: its model saw the weather tool as the server listed it, not as toolfit did ({(raw[cli]['tools'] or [['-']])[0][0]})",
                  raw[cli]["tools"] and r["tools"] and raw[cli]["tools"][0] != r["tools"][0], (raw[cli]["tools"], r["tools"]))
            check(f"{cli}: a server that exits at once, started through `toolfit mcp` beside it ({r['broken']} starts), left the CLI to its own error and its run ended (exit {r['code']})",
                  r["broken"] >= 1 and r["code"] == 0, (r["broken"], r["code"], r["err"][-300:]))
        print("\n| CLI | MCP client name | profile | stdio server directly | through `toolfit mcp` |\n|---|---|---|---|---|")
        for cli, row in table.items():
            print(f"| {cli} | {CLI_CLIENT[cli] if cli != 'opencode' else 'opencode (--profile openai)'} | {CLI_PROFILE[cli]} | " + " | ".join(row) + " |")
        print(flush=True)
    finally:
        judge.stop()


def main():
    clis = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--clis=")), list(CLI_API))
    tmp = tempfile.mkdtemp(prefix="toolfit-stdio-")
    py = venv("agents", mcp_agents.PINS)
    bins = mcp_agents.npm_servers()
    bytes_leg(tmp)
    broken_leg(tmp)
    servers_leg(py, bins, tmp)
    if clis != ["none"]:
        cli_leg(py, tmp, clis)


if __name__ == "__main__":
    verdict.run("mcp stdio", main)
