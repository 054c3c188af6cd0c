"""Runs in the Bedrock venv (boto3 and botocore from the registry, pinned in bedrock.py). Two roles:

  double PORT FILE [CERT KEY]
                     the Bedrock Runtime double (over TLS with CERT and KEY): answers Converse as the API does (JSON), calling every
                     tool it received under the name it received; judges each request with botocore's
                     own parameter validation of Converse (the bedrock-runtime service model) and the
                     rules of docs/backend-rules.md §2.13; verifies the SigV4 signature with botocore's
                     SigV4 code and the credentials below; appends one JSON line per request to FILE.
  client URL MODE    boto3's bedrock-runtime client calls `converse` once (MODE: signed, with the
                     credentials below; unsigned, botocore.UNSIGNED, for a gateway that signs) and
                     prints what the SDK handed back as JSON.
"""
import binascii, hashlib, hmac, json, re, struct, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, HTTPHeaders
from botocore.credentials import Credentials
from botocore.validate import ParamValidator

# the test's credentials: the client's when it signs, Envoy's aws_request_signing's when the gateway does
KEY, SECRET, REGION = "AKIDTOOLFITTEST00001", "toolfit/test/secret/key/0000000000000000", "us-east-1"
CREDS = Credentials(KEY, SECRET)
MODEL = botocore.session.get_session().get_service_model("bedrock-runtime")
AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$")


class Exactly(SigV4Auth):
    """botocore's SigV4 over exactly the headers the signature names (botocore itself would leave out
    user-agent and add the rest)."""

    def __init__(self, signed, *a):
        super().__init__(*a)
        self.signed = signed

    def headers_to_sign(self, request):
        out = HTTPHeaders()
        for name in self.signed:
            out[name] = request.headers.get(name, "")
        return out


def verify(method, path, headers, body):
    """'unsigned', 'valid', or why not."""
    auth = headers.get("authorization", "")
    if not auth:
        return "unsigned"
    m = AUTH.match(auth)
    if not m:
        return "malformed Authorization"
    key, day, region, service, signed, sig = m.groups()
    if key != KEY:
        return f"unknown key {key}"
    sha = headers.get("x-amz-content-sha256")
    # an unsigned payload is S3's alone: Bedrock's runtime signs the body, so a changed body breaks it
    if sha == "UNSIGNED-PAYLOAD":
        return "x-amz-content-sha256: UNSIGNED-PAYLOAD (only S3 takes an unsigned payload)"
    if sha and sha != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 is not the body's hash"
    req = AWSRequest(method=method, url=f"http://{headers.get('host', '')}{path}", headers={k: v for k, v in headers.items()}, data=body)
    req.context["timestamp"] = headers.get("x-amz-date", "")
    s = Exactly(signed.split(";"), CREDS, service, region)
    want = s.signature(s.string_to_sign(req, s.canonical_request(req)), req)
    return "valid" if hmac.compare_digest(want, sig) else "invalid"


def judge_invoke(model, body):
    """InvokeModel with Anthropic's Messages body: botocore's validation of the call (the body a blob),
    and the Anthropic rules Claude on Bedrock holds tools to (§2.3, §2.13)."""
    errors = []
    report = ParamValidator().validate({"modelId": model, "body": body, "contentType": "application/json"}, MODEL.operation_model("InvokeModel").input_shape)
    if report.has_errors():
        errors.append(f"botocore refuses the InvokeModel call: {report.generate_report()[:300]}")
    try:
        params = json.loads(body)
    except ValueError as e:
        return errors + [f"not JSON: {e}"]
    if params.get("anthropic_version") != "bedrock-2023-05-31":
        errors.append("anthropic_version is not bedrock-2023-05-31")
    for t in params.get("tools") or []:
        name, s = t.get("name", ""), t.get("input_schema")
        if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name):
            errors.append(f"{name!r}: a name the API refuses (§2.13 ToolName)")
        if not isinstance(s, dict) or s.get("type") != "object":
            errors.append(f"{name}: input_schema root is not type: object (§2.3)")
        elif any(k in s for k in ("anyOf", "oneOf", "allOf")):
            errors.append(f"{name}: Claude on Bedrock refuses a union at the root (§2.13)")
    return errors


def judge(model, body):
    """botocore's validation of Converse with this body, and §2.13's rules it does not check."""
    errors = []
    try:
        params = json.loads(body)
    except ValueError as e:
        return [f"not JSON: {e}"]
    report = ParamValidator().validate({"modelId": model, **params}, MODEL.operation_model("Converse").input_shape)
    if report.has_errors():
        errors.append(f"botocore refuses the Converse request: {report.generate_report()[:300]}")
    claude = ".anthropic.claude" in f".{model}"
    for t in (params.get("toolConfig") or {}).get("tools") or []:
        spec = t.get("toolSpec") or {}
        name, s = spec.get("name", ""), (spec.get("inputSchema") or {}).get("json")
        if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name):
            errors.append(f"{name!r}: a name the API refuses (§2.13 ToolName)")
        if not isinstance(s, dict) or s.get("type") != "object":
            errors.append(f"{name}: inputSchema.json root is not type: object (§2.13)")
        if claude and isinstance(s, dict) and any(k in s for k in ("anyOf", "oneOf", "allOf")):
            errors.append(f"{name}: Claude on Bedrock refuses a union at the root (§2.13)")
    return errors


def sample(s):
    if not isinstance(s, dict):
        return "x"
    t = s.get("type")
    if t == "object" or "properties" in s:
        return {k: sample(v) for k, v in (s.get("properties") or {}).items() if k in (s.get("required") or [])}
    return {"integer": 3, "number": 1.5, "boolean": True, "array": []}.get(t, "x")


def header(name, value):
    """One string header of an event-stream message (type 7)."""
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()


def message(event_type, payload):
    """One event-stream message as Bedrock writes it: prelude with its CRC-32, headers, JSON payload,
    the message's CRC-32."""
    h = header(":event-type", event_type) + header(":content-type", "application/json") + header(":message-type", "event")
    data = json.dumps(payload, separators=(",", ":")).encode()
    prelude = struct.pack(">II", 16 + len(h) + len(data), len(h))
    msg = prelude + struct.pack(">I", binascii.crc32(prelude)) + h + data
    return msg + struct.pack(">I", binascii.crc32(msg))


def stream_of(calls):
    """ConverseStream's messages for a text block and then each call, its input in two pieces."""
    out = [message("messageStart", {"role": "assistant", "p": "abc"}),
           message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Looking it up."}, "p": "ab"}),
           message("contentBlockStop", {"contentBlockIndex": 0, "p": "a"})]
    for i, (name, args) in enumerate(calls, 1):
        text = json.dumps(args)
        out.append(message("contentBlockStart", {"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": f"tooluse_{i}", "name": name}}, "p": "abcd"}))
        out += [message("contentBlockDelta", {"contentBlockIndex": i, "delta": {"toolUse": {"input": part}}, "p": "x"}) for part in (text[:len(text) // 2], text[len(text) // 2:])]
        out.append(message("contentBlockStop", {"contentBlockIndex": i, "p": "abc"}))
    out.append(message("messageStop", {"stopReason": "tool_use" if calls else "end_turn", "p": "ab"}))
    out.append(message("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}))
    return out


class Double(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log = None

    def log_message(self, *a):
        pass

    def invoke(self, model, stream, body, headers):
        """InvokeModel: Anthropic's message (or, streamed, its events base64-encoded in `chunk` messages),
        calling every tool under the name it received."""
        errors = judge_invoke(model, body)
        with open(Double.log, "a") as f:
            f.write(json.dumps({"path": self.path, "model": model, "signature": verify("POST", self.path, headers, body), "errors": errors,
                                "sha256": hashlib.sha256(body).hexdigest(), "body": body.decode("utf-8", "replace")}) + "\n")
        if errors:
            data = json.dumps({"message": "; ".join(errors)[:500]}).encode()
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("x-amzn-errortype", "ValidationException")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        tools = json.loads(body).get("tools") or []
        blocks = [{"type": "tool_use", "id": f"toolu_{i}", "name": t["name"], "input": sample(t.get("input_schema"))} for i, t in enumerate(tools)]
        msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": blocks or [{"type": "text", "text": "ok"}],
               "stop_reason": "tool_use" if blocks else "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not stream:
            data = json.dumps(msg).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        events = [{"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}}]
        for i, b in enumerate(blocks):
            events.append({"type": "content_block_start", "index": i, "content_block": {**b, "input": {}}})
            text = json.dumps(b["input"])
            events += [{"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": p}} for p in (text[:len(text) // 2], text[len(text) // 2:])]
            events.append({"type": "content_block_stop", "index": i})
        events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 1}}, {"type": "message_stop"}]
        import base64
        self.stream(b"".join(message("chunk", {"bytes": base64.b64encode(json.dumps(ev).encode()).decode(), "p": "abc"}) for ev in events), 11)

    def stream(self, data, piece):
        """An event-stream body in `piece`-byte chunks: every message cut somewhere."""
        self.send_response(200)
        self.send_header("content-type", "application/vnd.amazon.eventstream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for i in range(0, len(data), piece):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data[i:i + piece]), data[i:i + piece]))
            self.wfile.flush()
            time.sleep(0.0005)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n)
        headers = {k.lower(): v for k, v in self.headers.items()}
        from urllib.parse import unquote
        inv = re.match(r"^/model/([^/]+)/invoke(-with-response-stream)?$", self.path.split("?")[0])
        if inv:
            return self.invoke(unquote(inv.group(1)), bool(inv.group(2)), body, headers)
        m = re.match(r"^/model/([^/]+)/converse(-stream)?$", self.path.split("?")[0])
        model = unquote(m.group(1)) if m else ""
        errors = judge(model, body) if m else [f"not a Converse path: {self.path}"]
        record = {"path": self.path, "model": model, "signature": verify("POST", self.path, headers, body), "errors": errors,
                  "sha256": hashlib.sha256(body).hexdigest(), "body": body.decode("utf-8", "replace")}
        with open(Double.log, "a") as f:
            f.write(json.dumps(record) + "\n")
        if m and m.group(2) and not errors:
            # the stream, in 7-byte pieces: every message cut, the name's among them
            params = json.loads(body)
            calls = [(t["toolSpec"]["name"], sample(t["toolSpec"]["inputSchema"]["json"])) for t in (params.get("toolConfig") or {}).get("tools") or [] if "toolSpec" in t]
            self.stream(b"".join(stream_of(calls)), 7)
            return
        if errors:
            out, status = {"message": "; ".join(errors)[:500]}, 400
        else:
            params = json.loads(body)
            content = [{"toolUse": {"toolUseId": f"t{i}", "name": t["toolSpec"]["name"], "input": sample(t["toolSpec"]["inputSchema"]["json"])}}
                       for i, t in enumerate((params.get("toolConfig") or {}).get("tools") or []) if "toolSpec" in t]
            out, status = {"output": {"message": {"role": "assistant", "content": content or [{"text": "ok"}]}}, "stopReason": "tool_use" if content else "end_turn",
                           "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}, 200
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        if status != 200:
            self.send_header("x-amzn-errortype", "ValidationException")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def tampered(url, request):
    """A Converse request signed by botocore (SigV4Auth, the client's credentials), one byte of its body
    changed after signing, sent as it is: the verifier's control."""
    import http.client
    from urllib.parse import quote, urlsplit
    body = json.dumps({k: v for k, v in request.items() if k != "modelId"}).encode()
    path = f"/model/{quote(request['modelId'], safe='')}/converse"
    req = AWSRequest(method="POST", url=url + path, data=body, headers={"content-type": "application/json"})
    SigV4Auth(CREDS, "bedrock", REGION).add_auth(req)
    u = urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("POST", path, body=body.replace(b"hi", b"ho", 1), headers=dict(req.headers.items()))
    r = c.getresponse()
    return {"ok": r.status == 200, "status": r.status, "body": r.read().decode()[:200]}


def client(url, mode, request):
    if mode == "tampered":
        return tampered(url, request)
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    cfg = Config(signature_version=UNSIGNED, retries={"max_attempts": 1}) if mode.endswith("unsigned") else Config(retries={"max_attempts": 1})
    c = boto3.client("bedrock-runtime", region_name=REGION, endpoint_url=url, aws_access_key_id=KEY, aws_secret_access_key=SECRET, config=cfg)
    try:
        if mode.startswith("invoke"):
            # Anthropic's body as the Anthropic SDK's Bedrock client sends it (the model in the path)
            body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": request["messages"], "tools": request["tools"]})
            if "stream" in mode:
                names, parts = [], {}
                for ev in c.invoke_model_with_response_stream(modelId=request["modelId"], body=body, contentType="application/json")["body"]:
                    e = json.loads(ev["chunk"]["bytes"])
                    if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use":
                        names.append(e["content_block"]["name"])
                    if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
                        parts[e["index"]] = parts.get(e["index"], "") + e["delta"]["partial_json"]
                return {"ok": True, "names": names, "inputs": [json.loads(v) for _, v in sorted(parts.items())]}
            r = json.loads(c.invoke_model(modelId=request["modelId"], body=body, contentType="application/json")["body"].read())
            return {"ok": True, "names": [b["name"] for b in r["content"] if b["type"] == "tool_use"]}
        if mode.startswith("stream"):
            # boto3 reads the event-stream itself, each message's checksums checked
            names, pieces, stop = [], {}, None
            for ev in c.converse_stream(**request)["stream"]:
                if "contentBlockStart" in ev and "toolUse" in ev["contentBlockStart"]["start"]:
                    names.append(ev["contentBlockStart"]["start"]["toolUse"]["name"])
                if "contentBlockDelta" in ev and "toolUse" in ev["contentBlockDelta"]["delta"]:
                    i = ev["contentBlockDelta"]["contentBlockIndex"]
                    pieces[i] = pieces.get(i, "") + ev["contentBlockDelta"]["delta"]["toolUse"]["input"]
                if "messageStop" in ev:
                    stop = ev["messageStop"]["stopReason"]
            return {"ok": True, "names": names, "inputs": [json.loads(v) for _, v in sorted(pieces.items())], "stopReason": stop}
        r = c.converse(**request)
        return {"ok": True, "content": r["output"]["message"]["content"], "stopReason": r["stopReason"]}
    except Exception as e:  # noqa: BLE001 (what the SDK raised is the result)
        return {"ok": False, "error": f"{type(e).__name__}: {e}"[:400]}


if __name__ == "__main__":
    if sys.argv[1] == "double":
        Double.log = sys.argv[3]
        srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Double)
        srv.daemon_threads = True
        if len(sys.argv) > 5:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(sys.argv[4], sys.argv[5])
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        print("ready", flush=True)
        srv.serve_forever()
    else:
        print(json.dumps(client(sys.argv[2], sys.argv[3], json.loads(sys.stdin.read()))))
