"""A small MCP server the MCP-leg suite owns (streamable HTTP on /mcp, standard library only): serves a
corpus catalog as `tools/list` pages, answers as JSON or as SSE written in small pieces, records what
reached it, and answers some methods in hostile ways on purpose.
  python mcp_catalog_server.py PORT CATALOG.json LOG.jsonl [--sse] [--piece N] [--page N] [--limit N] [--stateless] [--lengths]

Methods: initialize (session id `cat-<n>` unless --stateless), notifications (202), ping, tools/list
(pages of --page tools, `nextCursor` the next offset), tools/call (answers with the name and arguments it
received). Hostile `tools/list` answers by cursor: `wrong-id` (a result under another id), `broken` (an
SSE event cut inside its JSON, one that is not JSON, and a stream that ends mid-event), `list-shaped` (a
`tools` member that is not a list), `huge` (a page with a 5 MB string beside the tools). LOG gets one line per
request: method, the session header, the called name, and the bytes of the body. A body that is not JSON
gets HTTP 400 with JSON-RPC's parse error. --lengths: as a server that reads a body by its `Content-Length`
alone (anything on Python's http.server), a chunked body is answered 411 Length Required. --hints: every list
result carries 2026-07-28's caching hints (`"cacheScope": "public", "ttlMs": 60000`)."""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, CATALOG, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3]
TOOLS = json.load(open(CATALOG))["tools"]


def opt(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


SSE, PIECE, PAGE, STATELESS, LENGTHS = "--sse" in sys.argv, opt("--piece", 0), opt("--page", 500), "--stateless" in sys.argv, "--lengths" in sys.argv
HINTS = {"cacheScope": "public", "ttlMs": 60000} if "--hints" in sys.argv else {}
TOOLS = TOOLS[:opt("--limit", len(TOOLS))]
lock, sessions = threading.Lock(), [0]


def answer(msg):
    """The result (or error) for one request, and extra headers."""
    method, mid = msg.get("method"), msg.get("id")
    p = msg.get("params") or {}
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": p.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "toolfit-catalog", "version": "1"}}}
    if method == "tools/list" and p.get("cursor") == "wrong-id":
        return {"jsonrpc": "2.0", "id": f"not-{mid}", "result": {"tools": TOOLS[:3]}}
    if method == "tools/list" and p.get("cursor") == "list-shaped":
        return {"jsonrpc": "2.0", "id": mid, "result": {"tools": {"inputSchema": {"type": "object", "$schema": "x"}}}}
    if method == "tools/list" and p.get("cursor") == "huge":
        return {"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS[:3], "_meta": {"padding": "\u00e9\"\\" * 1_700_000}}}
    if method == "tools/list":
        at = int(p.get("cursor") or 0)
        page = {"tools": TOOLS[at:at + PAGE], **HINTS}
        if at + PAGE < len(TOOLS):
            page["nextCursor"] = str(at + PAGE)
        return {"jsonrpc": "2.0", "id": mid, "result": page}
    if method == "tools/call":
        text = json.dumps({"called": p.get("name"), "arguments": p.get("arguments")})
        return {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": mid, "result": {}}
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"unknown method {method}"}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        if chunked and LENGTHS:
            with lock:
                open(LOG, "a").write(json.dumps({"refused": "chunked", "path": self.path}) + "\n")
            self.send_response(411)
            self.send_header("content-length", "0")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            return
        if chunked:
            raw = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        else:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            msg = json.loads(raw)
        except ValueError:  # as a server answers a body that is not JSON: HTTP 400, JSON-RPC's parse error
            self.json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}, {})
            return
        if not isinstance(msg, dict):
            msg = {}
        sid = self.headers.get("mcp-session-id")
        with lock:
            open(LOG, "a").write(json.dumps({"method": msg.get("method"), "session": sid, "name": (msg.get("params") or {}).get("name"),
                                             "profile_header": self.headers.get("x-toolfit-profile"), "bytes": len(raw), "path": self.path,
                                             "agent": self.headers.get("user-agent"),
                                             "content_length": self.headers.get("content-length"), "chunked": chunked,
                                             **({"body": raw.decode("utf-8", "replace")} if LENGTHS else {})}) + "\n")
        if "id" not in msg:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        headers = {}
        if msg.get("method") == "initialize" and not STATELESS:
            with lock:
                sessions[0] += 1
                headers["mcp-session-id"] = f"cat-{sessions[0]}"
        if msg.get("method") == "tools/list" and (msg.get("params") or {}).get("cursor") == "broken":
            self.stream([b'event: message\ndata: {"jsonrpc":"2.0","id":', str(msg.get("id")).encode(), b',"result":{"tools":[{"name"\n\n',
                         b"data: not json at all\n\n", b'data: {"jsonrpc":"2.0","id":1,"result":{"tools":[]'], headers)
            return
        if SSE:
            self.stream([b"event: message\ndata: " + json.dumps(answer(msg)).encode() + b"\n\n"], headers)
        else:
            self.json(200, answer(msg), headers)

    def json(self, code, doc, headers):
        """`doc` as a JSON answer with `code` and these headers."""
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def stream(self, parts, headers):
        """SSE, chunked, each part cut into --piece bytes (0: whole)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        data = b"".join(parts)
        step = PIECE or len(data)
        for i in range(0, len(data), step):
            piece = data[i:i + step]
            self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_DELETE(self):
        with lock:
            open(LOG, "a").write(json.dumps({"method": "DELETE", "session": self.headers.get("mcp-session-id")}) + "\n")
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()


# a listen backlog for a gateway that opens many connections at once (http.server's default is 5)
ThreadingHTTPServer.request_queue_size = 128
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
