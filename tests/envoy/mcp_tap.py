"""A stdio tap between an MCP client and a real MCP server: starts the server, relays every JSON-RPC line
both ways unchanged, and appends what the test needs to LOG (JSON lines): each tools/list result (the
server's own schemas), each tools/call (tool, arguments) and the server's answer to it (isError, the
JSON-RPC error, the first text).
  python mcp_tap.py LOG -- COMMAND [ARGS...]"""
import json, subprocess, sys, threading


def main():
    log_path, cmd = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    log = open(log_path, "a", buffering=1)
    pending = {}  # request id -> ("list" | "call", tool, arguments)
    lock = threading.Lock()

    def note(rec):
        with lock:
            log.write(json.dumps(rec) + "\n")

    def upstream():
        for line in sys.stdin.buffer:
            try:
                m = json.loads(line)
                if m.get("method") == "tools/call":
                    p = m.get("params") or {}
                    pending[m.get("id")] = ("call", p.get("name"), p.get("arguments"))
                elif m.get("method") == "tools/list":
                    pending[m.get("id")] = ("list", None, None)
            except (ValueError, AttributeError):
                pass
            proc.stdin.write(line)
            proc.stdin.flush()
        proc.stdin.close()

    threading.Thread(target=upstream, daemon=True).start()
    for line in proc.stdout:
        try:
            m = json.loads(line)
            what = pending.pop(m.get("id"), None) if isinstance(m, dict) and "method" not in m else None
            if what and what[0] == "list":
                note({"list": [{"name": t.get("name"), "inputSchema": t.get("inputSchema")} for t in (m.get("result") or {}).get("tools", [])]})
            elif what:
                res = m.get("result") or {}
                text = next((c.get("text", "") for c in res.get("content", []) if isinstance(c, dict)), "")
                note({"call": what[1], "arguments": what[2], "isError": bool(res.get("isError")), "error": m.get("error"), "text": (text or "")[:300]})
        except (ValueError, AttributeError):
            pass
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    proc.wait()


if __name__ == "__main__":
    main()
