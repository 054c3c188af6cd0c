"""A scripted stdio MCP server for tests/envoy/mcp_stdio.py: what a real server may write, byte for byte.
It records every line it reads (as received, in LOG, one JSON string of the line's bytes as latin-1 per
line) and answers:
  initialize        a result spaced and ordered its own way, ended with CRLF
  notifications/initialized
                    a log notification, a request of its own (sampling/createMessage, id "s1"), a line
                    that is not JSON, and a JSON line that is not JSON-RPC
  tools/list        a tool named get.weather (a `\\p{..}` pattern), or with --huge MB one padded past MB
  tools/call        the name it was called by, in the text
  ping              {}
  python mcp_stdio_server.py LOG [--huge MB]
  python mcp_stdio_server.py LOG --exit N     (notes its start in LOG, writes to stderr and stdout, exits N)
  python mcp_stdio_server.py LOG --kill       (SIGKILL itself after initialize)"""
import json, os, signal, sys

LOG, ARGS = sys.argv[1], sys.argv[2:]
out = sys.stdout.buffer


def write(b):
    out.write(b)
    out.flush()


def tool(i=0, pad=0):
    return {"name": "get.weather" if i == 0 else f"tool.{i}", "description": "The weather." + " x" * pad,
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "pattern": "^\\p{Lu}\\p{Ll}+$"}}, "required": ["city"]}}


def tools(huge_mb):
    if not huge_mb:
        return [tool()]
    n = 64
    pad = huge_mb * 1024 * 1024 // n // 2 + 1
    return [tool(i, pad) for i in range(n)]


def main():
    if "--exit" in ARGS:
        code = int(ARGS[ARGS.index("--exit") + 1])
        with open(LOG, "a") as log:
            log.write(json.dumps(f"exit {code}") + "\n")
        sys.stderr.write(f"broken server: exiting {code}\n")
        sys.stderr.flush()
        write(b"this server is broken\n")
        sys.exit(code)
    huge = int(ARGS[ARGS.index("--huge") + 1]) if "--huge" in ARGS else 0
    log = open(LOG, "a", buffering=1)
    for raw in sys.stdin.buffer:
        log.write(json.dumps(raw.decode("latin-1")) + "\n")
        try:
            m = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(m, dict):
            continue
        method, mid = m.get("method"), m.get("id")
        if method == "initialize":
            write(b'{"result" : {"protocolVersion":"2025-06-18","serverInfo":{"version":"1","name":"scripted"},"capabilities":{"tools":{}}},  "id":'
                  + json.dumps(mid).encode() + b',"jsonrpc":"2.0"}\r\n')
            if "--kill" in ARGS:
                os.kill(os.getpid(), signal.SIGKILL)
        elif method == "notifications/initialized":
            write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"caf\\u00e9 \xe2\x9c\x93"}}\n')
            write(b'{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}\n')
            write(b"hello, this is not JSON\n")
            write(b'{"tools": [{"name": "not.an.answer"}]}\n')
        elif method == "tools/list":
            write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools(huge)}}).encode() + b"\n")
        elif method == "tools/call":
            name = (m.get("params") or {}).get("name")
            write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": f"called {name}"}]}}).encode() + b"\n")
        elif method == "ping":
            write(b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"result":{}}\n')


if __name__ == "__main__":
    main()
