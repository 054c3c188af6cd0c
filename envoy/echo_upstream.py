#!/usr/bin/env python3
"""A stand-in for llama-server that needs no model: it records every request exactly as it arrived
(framing, headers, body bytes) and answers with a JSON description of it, so you can see what the
backend received through toolfit.
  python3 envoy/echo_upstream.py [PORT]        (default 8080)
  STRICT_CL=1 ...   answer 411 to a POST without Content-Length, like an upstream that requires it
"""
import hashlib, json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    records = []  # shared: (method, path, headers, body, framing)
    lock = threading.Lock()
    strict_cl = os.environ.get("STRICT_CL") == "1"
    digest_only = False  # keep a sha256 of each body instead of the body (load tests)

    def log_message(self, *a):
        pass

    def read_body(self):
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return out, "chunked"
                out += self.rfile.read(size)
                self.rfile.readline()
        n = self.headers.get("content-length")
        return (self.rfile.read(int(n)) if n else b""), ("content-length" if n else "none")

    def handle_any(self):
        body, framing = self.read_body()
        rec = {"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
               "body": hashlib.sha256(body).hexdigest() if type(self).digest_only else body, "framing": framing, "bytes": len(body)}
        with Recorder.lock:
            type(self).records.append(rec)
        if self.command == "POST" and framing != "content-length" and type(self).strict_cl:
            return self.reply(411, {"error": "length required"})
        if self.path.startswith("/status/") and self.path[8:].isdigit():  # a test's non-200 on demand
            return self.reply(int(self.path[8:]), {"status": int(self.path[8:])})
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        self.reply(200, {"received": {"path": self.path, "framing": framing, "bytes": len(body),
                                      "content_length": rec["headers"].get("content-length"),
                                      "tools": (parsed or {}).get("tools") if isinstance(parsed, dict) else None}})

    def reply(self, code, obj):
        data = json.dumps(obj, indent=1).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = handle_any


class Server(ThreadingHTTPServer):
    """Python's default listen backlog is 5: when Envoy opens many upstream connections at once (a batch
    of ext_proc answers lets their requests go together), the kernel's accept queue overflowed and a
    connection Envoy had already written a request to was reset (`make load` through toolfit-extproc:
    1 or 2 requests in 20,000 answered 503, flag UC, never received; issue 71)."""

    request_queue_size = 128


def serve(port, strict_cl=False, digest_only=False, host="127.0.0.1"):
    """Starts a recorder in a thread; returns (server, records list)."""
    cls = type("R", (Recorder,), {"records": [], "strict_cl": strict_cl, "digest_only": digest_only})
    srv = Server((host, port), cls)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, cls.records


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    print(f"echo upstream on 127.0.0.1:{port} (stands in for llama-server)", flush=True)
    Server(("127.0.0.1", port), Recorder).serve_forever()
