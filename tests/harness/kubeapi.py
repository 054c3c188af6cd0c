"""A Kubernetes API server that only reads: enough of the API for a controller-runtime client (the
Endpoint Picker's) to discover, list and watch a fixed set of objects. Discovery (/version, /api, /apis,
each group version's resource list), LIST with label and field selectors, WATCH (the plain kind, and the
watch-list kind: the objects as ADDED events, then the bookmark that ends them; then nothing more, as in
a cluster where nothing changes), GET of one object; a write is answered as if it were taken (Events)
and kept nowhere. Objects are given as dicts, the way `kubectl kustomize` renders them.

    api = KubeApi([pod, pool]); api.kubeconfig  # a file for KUBECONFIG
    api.requests                              # (method, path) of every request, for the checks
    api.stop()
"""
import json, os, re, socketserver, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

from harness.runner import free_port

# kind -> (plural, namespaced) of the kinds served; a group version lists the kinds of its objects
# plus these, so a client watching a kind nobody created gets an empty list, not a 404
KNOWN = {
    ("", "v1"): {"Pod": "pods", "Service": "services", "Namespace": "namespaces", "Event": "events"},
    ("events.k8s.io", "v1"): {"Event": "events"},
    ("coordination.k8s.io", "v1"): {"Lease": "leases"},
    ("inference.networking.k8s.io", "v1"): {"InferencePool": "inferencepools"},
    ("inference.networking.x-k8s.io", "v1alpha2"): {"InferenceObjective": "inferenceobjectives", "InferencePool": "inferencepools",
                                                    "InferenceModelRewrite": "inferencemodelrewrites"},
}
CLUSTER_SCOPED = {"Namespace"}


def ready_pod(name, ns, labels, ip, containers):
    """A Pod as the kubelet reports a running, Ready one at `ip`."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": containers},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}], "podIP": ip, "podIPs": [{"ip": ip}]}}


def group_version(api_version):
    return tuple(api_version.split("/")) if "/" in api_version else ("", api_version)


def labels_match(selector, labels):
    """A label selector in its query form: a=b, a!=b, a in (x,y), a, !a; comma-separated."""
    for term in filter(None, re.split(r",(?![^()]*\))", selector or "")):
        term = term.strip()
        m = re.match(r"^(\S+)\s+(in|notin)\s+\((.*)\)$", term)
        if m:
            vals = {v.strip() for v in m.group(3).split(",")}
            if (labels.get(m.group(1)) in vals) != (m.group(2) == "in"):
                return False
        elif "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def fields_match(selector, obj):
    for term in filter(None, (selector or "").split(",")):
        k, _, v = term.partition("=")
        cur = obj
        for part in k.split("."):
            cur = cur.get(part, {}) if isinstance(cur, dict) else {}
        if str(cur) != v.lstrip("="):
            return False
    return True


class KubeApi:
    def __init__(self, objects, version="1.32"):
        self.objects = []
        for i, o in enumerate(objects):
            o = json.loads(json.dumps(o))
            md = o.setdefault("metadata", {})
            md.setdefault("uid", f"00000000-0000-0000-0000-{i:012d}")
            md.setdefault("resourceVersion", "1")
            md.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            self.objects.append(o)
        self.version = version
        self.requests = []
        self.port = free_port()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                api.requests.append(("GET", self.path))
                api.get(self)

            def write(self):
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                api.requests.append((self.command, self.path))
                self.reply(201 if self.command == "POST" else 200, body)

            do_POST = do_PUT = do_PATCH = write

        class Server(socketserver.ThreadingMixIn, HTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client that hangs up on a watch is how watches end

        self.server = Server(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.dir = tempfile.mkdtemp(prefix="toolfit-kubeapi-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "here",
                       "clusters": [{"name": "here", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
                       "users": [{"name": "here", "user": {}}],
                       "contexts": [{"name": "here", "context": {"cluster": "here", "user": "here"}}]}, f)

    def kinds(self):
        out = {gv: dict(k) for gv, k in KNOWN.items()}
        for o in self.objects:
            gv = group_version(o["apiVersion"])
            out.setdefault(gv, {})[o["kind"]] = o["kind"].lower() + "s"
        return out

    def get(self, h):
        u = urlparse(h.path)
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        parts = [p for p in u.path.split("/") if p]
        kinds = self.kinds()
        if u.path == "/version":
            return h.reply(200, {"major": "1", "minor": self.version.split(".")[1], "gitVersion": f"v{self.version}.0", "platform": "linux/amd64"})
        if u.path == "/api":
            return h.reply(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if u.path == "/apis":
            groups = {}
            for g, v in kinds:
                if g:
                    groups.setdefault(g, []).append(v)
            return h.reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                 "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}} for g, vs in groups.items()]})
        if parts[:1] == ["api"]:
            gv, rest = ("", parts[1]) if len(parts) > 1 else ("", "v1"), parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            gv, rest = (parts[1], parts[2]), parts[3:]
        else:
            return h.reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
        if gv not in kinds:
            return h.reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
        if not rest:
            return h.reply(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "/".join(x for x in gv if x), "resources": [
                {"name": plural, "singularName": kind.lower(), "namespaced": kind not in CLUSTER_SCOPED, "kind": kind,
                 "verbs": ["get", "list", "watch", "create", "update", "patch"]} for kind, plural in kinds[gv].items()]})
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural, name = rest[0], (rest[1] if len(rest) > 1 else None)
        kind = next((k for k, p in kinds[gv].items() if p == plural), None)
        items = [o for o in self.objects if group_version(o["apiVersion"]) == gv and o["kind"] == kind
                 and (ns is None or o["metadata"].get("namespace") == ns)]
        if name is not None:
            hit = next((o for o in items if o["metadata"]["name"] == name), None)
            return h.reply(200, hit) if hit else h.reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
        items = [o for o in items if labels_match(q.get("labelSelector"), o["metadata"].get("labels", {})) and fields_match(q.get("fieldSelector"), o)]
        if q.get("watch") in ("true", "1"):
            return self.watch(h, items, q)
        return h.reply(200, {"kind": f"{kind}List", "apiVersion": "/".join(x for x in gv if x), "metadata": {"resourceVersion": "1"}, "items": items})

    def watch(self, h, items, q):
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()

        def send(event):
            data = json.dumps(event).encode() + b"\n"
            h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            h.wfile.flush()
        try:
            if q.get("sendInitialEvents") == "true":
                for o in items:
                    send({"type": "ADDED", "object": o})
                send({"type": "BOOKMARK", "object": {"kind": items[0]["kind"] if items else "Pod", "apiVersion": "v1",
                      "metadata": {"resourceVersion": "1", "annotations": {"k8s.io/initial-events-end": "true"}}}})
            end = time.time() + min(float(q.get("timeoutSeconds", 300)), 300)
            while time.time() < end:
                time.sleep(0.5)
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
