#!/usr/bin/env python3
"""A real llama-server, raw and behind Envoy with dist/toolfit.wasm, as users run it (`--jinja`).

llama-server is built from the llama.cpp the llama-cpp-python sdists vendor (scripts/llama_server.sh:
0.3.36 = llama.cpp 2026-10, 0.3.16 = 2025-08); the model is a tiny random-weight qwen2 written by
scripts/tiny_model.py from the sdist's vocabulary and a real chat template. Grammar-constrained sampling
from random weights is a fuzzer of the grammar: whatever comes back is what the grammar allowed.

Each case sends the same OpenAI chat request twice: straight to a llama-server, and through Envoy and
toolfit to another llama-server of the same build. Tool calls are forced the way llama.cpp's own tests
do it: `tool_choice: "required"` with the one tool, and the last message is the assistant's call opener from the chat
template (`<tool_call>\\n` for Qwen 2.5), so the server continues inside the tool-call grammar.

    scripts/venv.sh's python tests/llama_server.py [--full]   (--full: every catalog's sample, not 8 + 8 tools)

Prints one line per check and 'N passed, M failed'.
"""
import http.client, json, os, signal, socket, subprocess, sys, tarfile, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import e2e  # noqa: E402  (the Envoy harness: envoy/envoy.yaml with the built wasm)

CACHE = os.environ.get("TOOLFIT_CACHE", os.path.expanduser("~/.cache/toolfit"))
VERSIONS = {"0.3.36": "2026-10", "0.3.16": "2025-08"}
TEMPLATES = {"qwen2.5": ("ggml-vocab-qwen2.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja", "<tool_call>\n")}
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok    " if ok else "FAIL  ") + name + ("" if ok or not detail else f": {detail}"), flush=True)


def venv_python():
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(venv, "bin", "python")


def server_binary(version):
    return subprocess.run([os.path.join(ROOT, "scripts", "llama_server.sh"), version], check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]


def model(version, template):
    """The tiny model for a chat template, written once from that sdist's vocabulary and template."""
    vocab, jinja, _ = TEMPLATES[template]
    out_dir = os.path.join(CACHE, "models")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"tiny-{template}-{version}.gguf")
    if os.path.exists(out):
        return out
    pkg = f"llama_cpp_python-{version}"
    sdist = os.path.join(CACHE, "server", f"{pkg}.tar.gz")
    tmp = tempfile.mkdtemp(prefix="toolfit-model-")
    with tarfile.open(sdist) as t:
        for name in (f"{pkg}/vendor/llama.cpp/models/{vocab}", f"{pkg}/vendor/llama.cpp/models/templates/{jinja}"):
            t.extract(name, tmp)
    base = os.path.join(tmp, pkg, "vendor", "llama.cpp", "models")
    subprocess.run([venv_python(), os.path.join(ROOT, "scripts", "tiny_model.py"), os.path.join(base, vocab),
                    os.path.join(base, "templates", jinja), out + ".tmp"], check=True)
    os.replace(out + ".tmp", out)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One llama-server process on loopback; restarted when a request kills it."""

    def __init__(self, binary, model_path):
        self.binary, self.model = binary, model_path
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
        self.port = free_port()
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen([self.binary, "-m", self.model, "--jinja", "--host", "127.0.0.1", "--port", str(self.port),
                                      "-t", "2", "-c", "8192", "-np", "1", "--seed", "1"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        end = time.time() + 60
        while time.time() < end and self.proc.poll() is None:
            try:
                if request("127.0.0.1", self.port, "GET", "/health")[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.2)
        return False

    def alive(self):
        return self.proc.poll() is None

    def died_by(self):
        """How the process ended: 'SIGSEGV' and the like, or 'running'."""
        rc = self.proc.poll()
        if rc is None:
            return "running"
        return signal.Signals(-rc).name if rc < 0 else f"exit {rc}"

    def ensure(self):
        if not self.alive():
            self.start()

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def request(host, port, method, path, body=None, timeout=120):
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    c.request(method, path, body=body, headers={"content-type": "application/json"} if body is not None else {})
    r = c.getresponse()
    return r.status, r.read()


def chat(tools, opener, name=None, max_tokens=200):
    """A request that makes the server continue inside its tool-call grammar."""
    # `tool_choice` naming the function answers 500 on 2026-10 with this prefill; with one tool in the
    # request, "required" calls that tool
    del name
    body = {"model": "tiny", "max_tokens": max_tokens, "temperature": 1.0, "seed": 1,
            "messages": [{"role": "user", "content": "Use a tool."}, {"role": "assistant", "content": opener}],
            "tools": tools, "tool_choice": "required"}
    return json.dumps(body).encode()


def send(port, body):
    """(status, response JSON or None, error text); a dropped connection is status 0."""
    try:
        status, data = request("127.0.0.1", port, "POST", "/v1/chat/completions", body)
    except (OSError, http.client.HTTPException) as e:
        return 0, None, f"{type(e).__name__}: {e}"
    try:
        return status, json.loads(data), ""
    except ValueError:
        return status, None, data[:200].decode(errors="replace")


def tool_calls(resp):
    try:
        return resp["choices"][0]["message"].get("tool_calls") or []
    except (KeyError, IndexError, TypeError):
        return []


def fn(name, schema, description="d"):
    f = {"name": name, "parameters": schema}
    if description is not None:
        f["description"] = description
    return {"type": "function", "function": f}


JIRA = {"type": "object", "properties": {"issue_key": {"type": "string", "pattern": "^(?:[A-Z][A-Z0-9]+)-\\d+$"}}, "required": ["issue_key"]}
PLAIN = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 8}}, "required": ["q"]}


def sample_tools(per_kind):
    """Real tools: up to `per_kind` with a lossy record in toolfit's report and as many without, taken in
    turn from every corpus catalog (deterministic). Each: (label, tool as listed, lossy record paths)."""
    lossy, clean = [], []
    servers = os.path.join(ROOT, "tests", "corpus", "servers")
    for f in sorted(os.listdir(servers)):
        tools = [t for t in json.load(open(os.path.join(servers, f)))["tools"] if isinstance(t.get("inputSchema"), dict)]
        got_lossy = got_clean = False
        for t in tools:
            body = json.dumps({"tools": [{"type": "function", "function": {"name": t["name"], "description": "d", "parameters": t["inputSchema"]}}]})
            p = subprocess.run([e2e.TOOLFIT, "normalize", "--profile", "llama-cpp", "--report", "-"], input=body.encode(), capture_output=True)
            recs = json.loads(p.stderr.decode().strip().split("\n")[-1])["records"]
            paths = [r["path"] for r in recs if r["lossy"]]
            if paths and not got_lossy:
                lossy.append((f"{f[:-5]}/{t['name']}", t, paths))
                got_lossy = True
            elif not paths and not got_clean:
                clean.append((f"{f[:-5]}/{t['name']}", t, []))
                got_clean = True
            if got_lossy and got_clean:
                break
    return lossy[:per_kind] + clean[:per_kind]


def violation(validator, args):
    """The first place `args` breaks the schema: its schema path as a JSON pointer, or None."""
    errors = sorted(validator.iter_errors(args), key=lambda e: len(e.absolute_schema_path))
    if not errors:
        return None
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in errors[0].absolute_schema_path)


def validity(version, per_kind):
    """Tool calls checked against each tool's ORIGINAL schema, raw and through toolfit."""
    import jsonschema
    raw, behind, env = pair(version, "qwen2.5")
    opener = TEMPLATES["qwen2.5"][2]
    tag = f"llama-server {VERSIONS[version]} ({version})"
    tally = {name: {"calls": 0, "invalid": 0, "failed": 0, "truncated": 0, "crashed": 0, "unexplained": []} for name in ("raw", "toolfit")}
    try:
        for label, t, lossy_paths in sample_tools(per_kind):
            schema = t["inputSchema"]
            validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
            body = chat([fn(t["name"], schema, t.get("description") or "d")], opener)
            for name, server, port in (("raw", raw, raw.port), ("toolfit", behind, env.port)):
                n = tally[name]
                status, resp, err = send(port, body)
                if not server.alive():
                    n["crashed"] += 1
                    server.ensure()
                    continue
                if status == 500 and "peg-native" in err + json.dumps(resp or {}):
                    n["truncated"] += 1  # 2026-10's answer to a call cut by max_tokens, not a schema failure
                    continue
                calls = tool_calls(resp)
                if status != 200 or not calls:
                    n["failed"] += 1
                    continue
                if (resp["choices"][0].get("finish_reason") == "length") and len(calls) == 1:
                    n["truncated"] += 1
                    continue
                try:
                    args = json.loads(calls[0]["function"]["arguments"])
                except ValueError:
                    n["truncated"] += 1
                    continue
                n["calls"] += 1
                where = violation(validator, args)
                if where is None:
                    continue
                n["invalid"] += 1
                # through toolfit, an invalid call must fall where the report has a lossy record
                if name == "toolfit" and not any(where == p or where.startswith(p + "/") or p == "" for p in lossy_paths):
                    n["unexplained"].append(f"{label} at {where}")
        for name in ("raw", "toolfit"):
            n = tally[name]
            per_k = 1000 * n["invalid"] / n["calls"] if n["calls"] else 0
            print(f"  {tag} {name}: {n['calls']} calls, {n['invalid']} invalid ({per_k:.0f} per 1,000), {n['failed']} requests failed, "
                  f"{n['crashed']} server crashes, {n['truncated']} cut by max_tokens")
        t = tally["toolfit"]
        check(f"{tag}: through toolfit no request fails and no server crashes", t["failed"] == 0 and t["crashed"] == 0, json.dumps({k: v for k, v in t.items() if k != "unexplained"}))
        check(f"{tag}: through toolfit every invalid call falls on a lossy record", not t["unexplained"] and t["calls"] > 0, "; ".join(t["unexplained"][:5]) or "no calls")
    finally:
        env.stop()
        raw.stop()
        behind.stop()


def pair(version, template):
    """A raw server, and Envoy with toolfit (llama_cpp_since = the version) in front of another."""
    binary, m = server_binary(version), model(version, template)
    raw, behind = Server(binary, m), Server(binary, m)
    env = e2e.Envoy({"profile": "llama-cpp", "framing": "exact", "llama_cpp_since": VERSIONS[version]}, behind.port, test_routes=False)
    return raw, behind, env


def main():
    e2e.ENVOY = os.path.join(os.path.dirname(venv_python()), "envoy")
    for f in (e2e.WASM, e2e.TOOLFIT):
        if not os.path.exists(f):
            sys.exit(f"missing {f}: run make wasm build")
    opener = TEMPLATES["qwen2.5"][2]
    for version in VERSIONS:
        raw, behind, env = pair(version, "qwen2.5")
        tag = f"llama-server {VERSIONS[version]} ({version}), Qwen 2.5 template"
        try:
            check(f"{tag}: both servers and Envoy start", raw.alive() and behind.alive() and env.ready, env.logs()[-500:])
            # a plain tool: a tool call comes back either way
            for name, port in (("raw", raw.port), ("toolfit", env.port)):
                status, resp, err = send(port, chat([fn("lookup", PLAIN)], opener, "lookup"))
                calls = tool_calls(resp)
                check(f"{tag}: {name}: a plain tool gets a tool call", status == 200 and calls and calls[0]["function"]["name"] == "lookup", f"{status} {err or json.dumps(resp)[:300]}")
            # the Jira-key pattern `(?:...)`: segfaults the converter up to 2025-08
            status, resp, err = send(raw.port, chat([fn("jira", JIRA)], opener, "jira"))
            time.sleep(0.5)
            if version == "0.3.16":
                check(f"{tag}: raw: a `(?:` pattern kills the server", status == 0 and not raw.alive(), f"{status}, server {raw.died_by()}")
            else:
                check(f"{tag}: raw: a `(?:` pattern is compiled (fixed in this release)", status == 200 and raw.alive(), f"{status}, server {raw.died_by()}")
            raw.ensure()
            status, resp, err = send(env.port, chat([fn("jira", JIRA)], opener, "jira"))
            calls = tool_calls(resp)
            check(f"{tag}: toolfit: the same request gets a tool call, server alive", status == 200 and calls and behind.alive(),
                  f"{status} {err or json.dumps(resp)[:300]}, server {behind.died_by()}")
            # a tool without description: 500 up to 2025-08
            status, resp, err = send(raw.port, chat([fn("nodesc", PLAIN, description=None)], opener, "nodesc"))
            if version == "0.3.16":
                check(f"{tag}: raw: a tool without description answers 500", status == 500, f"{status} {err or json.dumps(resp)[:200]}")
            else:
                check(f"{tag}: raw: a tool without description is taken (fixed in this release)", status == 200, f"{status} {err or json.dumps(resp)[:200]}")
            raw.ensure()
            status, resp, err = send(env.port, chat([fn("nodesc", PLAIN, description=None)], opener, "nodesc"))
            check(f"{tag}: toolfit: a tool without description gets a tool call", status == 200 and tool_calls(resp), f"{status} {err or json.dumps(resp)[:300]}")
            # a tool schema nested 10,000 levels
            deep = '{"type":"object","properties":{"a":' * 10_000 + '{"type":"string"}' + "}}" * 10_000
            body = chat([fn("deep", {"type": "object"})], opener, "deep").replace(b'{"type": "object"}', deep.encode(), 1)
            status, _, err = send(raw.port, body)
            time.sleep(0.5)
            check(f"{tag}: raw: a tool schema nested 10,000 levels kills the server", status == 0 and not raw.alive(), f"{status}, server {raw.died_by()}")
            raw.ensure()
            status, resp, err = send(env.port, body)
            check(f"{tag}: toolfit: the same request answers 200, server alive", status == 200 and behind.alive(), f"{status} {err}, server {behind.died_by()}")
        finally:
            env.stop()
            raw.stop()
            behind.stop()
    full = "--full" in sys.argv
    for version in VERSIONS:
        validity(version, 200 if full else 8)
    passed = sum(results)
    print(f"llama-server: {passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
