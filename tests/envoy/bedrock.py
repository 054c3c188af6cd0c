#!/usr/bin/env python3
"""Bedrock Converse through Envoy and toolfit (both deliveries), with boto3's bedrock-runtime client and a
double of the Bedrock Runtime API that judges every request by botocore's own validation of Converse
and docs/backend-rules.md §2.13, and verifies its SigV4 signature with botocore's SigV4 code
(tests/envoy/bedrock_worker.py, in a venv of boto3 under ~/.cache/toolfit/bedrock).

- Signed by the client: toolfit leaves the request as it came (a rewrite would break the signature),
  counts `skipped_signed`; the double finds the signature valid.
- Signed by the gateway after toolfit (Envoy's aws_request_signing after toolfit, as an egress gateway
  signs): boto3 sends unsigned; toolfit rewrites (a dotted name mapped, Claude's root union made one
  object); the double finds the signature valid and the request one Bedrock takes; boto3 hands the
  program the original name.
- Controls: the same request straight to the double is refused by its judge; a body changed after
  botocore signed it fails the double's verification. With the signer placed before toolfit, toolfit
  sees a signed request and leaves it (counted): the misplacement shows, nothing breaks.
Prints one line per check and 'N passed, M failed'."""
import json, os, subprocess, sys, tempfile, time

from harness import delivery, runner, verdict
from harness.runner import free_port
from harness.venv import venv
from harness.verdict import check

PINS = ["boto3==1.44.5"]
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bedrock_worker.py")
KEY, SECRET = "AKIDTOOLFITTEST00001", "toolfit/test/secret/key/0000000000000000"  # the worker's
SIGNER = f"""          - name: envoy.filters.http.aws_request_signing
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.aws_request_signing.v3.AwsRequestSigning
              service_name: bedrock
              region: us-east-1
              use_unsigned_payload: false
              credential_provider:
                inline_credential: {{access_key_id: {KEY}, secret_access_key: {SECRET}}}
"""
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
UNION = {"anyOf": [{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                   {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}]}
MAPPED = {"modelId": CLAUDE, "messages": [{"role": "user", "content": [{"text": "weather in Oslo?"}]}],
          "toolConfig": {"tools": [{"toolSpec": {"name": "get.weather", "description": "Weather by city or position", "inputSchema": {"json": UNION}}}]}}
# the same tool as Anthropic's Messages body has it, for InvokeModel
INVOKE = {"modelId": CLAUDE, "messages": [{"role": "user", "content": "weather in Oslo?"}],
          "tools": [{"name": "get.weather", "description": "Weather by city or position", "input_schema": UNION}]}
CLEAN = {"modelId": "meta.llama3-70b-instruct-v1:0", "messages": [{"role": "user", "content": [{"text": "hi"}]}],
         "toolConfig": {"tools": [{"toolSpec": {"name": "get_time", "description": "Time", "inputSchema": {"json": {"type": "object", "properties": {"tz": {"type": "string"}}}}}}]}}


def place(order, kind):
    """A config edit putting the signer after toolfit (before the router) or before it."""
    toolfit = "          - name: toolfit\n" if kind == "wasm" else "          - name: envoy.filters.http.ext_proc\n"
    at = {"after": "          - name: envoy.filters.http.router\n", "before": toolfit}[order]
    return lambda text: text.replace(at, SIGNER + at, 1)


def call(py, url, mode, request):
    p = subprocess.run([py, WORKER, "client", url, mode], input=json.dumps(request), capture_output=True, text=True, timeout=60)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"ok": False, "error": p.stderr[-400:]}


def seen(log):
    return [json.loads(x) for x in open(log).read().splitlines()]


def main():
    runner.use_venv_envoy()
    for f in (runner.WASM, delivery.EXTPROC):
        if not os.path.exists(f):
            sys.exit(f"missing {f}: run make build wasm")
    print("building the Bedrock venv (cached)", flush=True)
    py = venv("bedrock", PINS)
    port, log = free_port(), tempfile.mktemp(prefix="bedrock-double-", suffix=".jsonl")
    open(log, "w").close()
    double = subprocess.Popen([py, WORKER, "double", str(port), log], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check("the Bedrock double starts", double.stdout.readline().strip() == "ready", double.stderr.read()[-500:] if double.poll() is not None else "")
        # the controls first: straight to the double, the judge refuses the raw request, and takes the clean one signed
        r = call(py, f"http://127.0.0.1:{port}", "unsigned", MAPPED)
        last = seen(log)[-1] if seen(log) else {}
        check("control: straight to the double, the raw request is refused (a dotted name, Claude's root union) and boto3 raises it",
              not r["ok"] and "ValidationException" in r.get("error", "") and any("name the API refuses" in e for e in last.get("errors", []))
              and any("union at the root" in e for e in last.get("errors", [])), (r, last.get("errors")))
        r = call(py, f"http://127.0.0.1:{port}", "signed", CLEAN)
        last = seen(log)[-1] if seen(log) else {}
        check("control: straight to the double, boto3's own signature verifies", r["ok"] and last.get("signature") == "valid", (r, last.get("signature")))
        call(py, f"http://127.0.0.1:{port}", "tampered", CLEAN)
        last = seen(log)[-1] if seen(log) else {}
        check("control: a body changed after botocore signed it fails the double's verification", last.get("signature") == "invalid", last.get("signature"))
        for kind in delivery.DELIVERIES:
            verdict.LABEL = delivery.label(kind)
            for order in ("none", "after", "before"):
                edit = place(order, kind) if order != "none" else None
                if edit:
                    runner.CONFIG_EDITS.append(edit)
                try:
                    e = delivery.start(kind, {"profile": "llama-cpp", "framing": "exact"}, port, test_routes=False)
                finally:
                    if edit:
                        runner.CONFIG_EDITS.remove(edit)
                where = {"none": "no gateway signer", "after": "Envoy signs after toolfit", "before": "Envoy signs before toolfit (wrong)"}[order]
                check(f"{where}: Envoy starts", e.ready, e.logs()[-1500:])
                if not e.ready:
                    e.stop()
                    continue
                url = f"http://127.0.0.1:{e.port}"
                try:
                    if order == "none":
                        r = call(py, url, "signed", CLEAN)
                        last = seen(log)[-1]
                        check(f"{where}: a request boto3 signed reaches the double byte for byte, its signature valid, the SDK gets the answer",
                              r["ok"] and last["signature"] == "valid" and not last["errors"], (r, last["signature"], last["errors"]))
                        r = call(py, url, "signed", MAPPED)
                        last = seen(log)[-1]
                        check(f"{where}: a signed request toolfit would rewrite goes as it came (the API judges it; signature valid)",
                              last["signature"] == "valid" and '"get.weather"' in last["body"] and not r["ok"], (last["signature"], r))
                        time.sleep(1.2)
                        check(f"{where}: counted skipped_signed", "toolfit_skipped_signed{" in e.prom(), "")
                    elif order == "after":
                        r = call(py, url, "unsigned", MAPPED)
                        last = seen(log)[-1]
                        sent = json.loads(last["body"]) if last["body"].startswith("{") else {}
                        spec = (sent.get("toolConfig", {}).get("tools") or [{}])[0].get("toolSpec", {})
                        check(f"{where}: the rewritten request verifies (the signature covers toolfit's bytes) and the judge takes it",
                              last["signature"] == "valid" and not last["errors"], (last["signature"], last["errors"]))
                        check(f"{where}: toolfit mapped the name and made Claude's root union one object",
                              spec.get("name") == "get_weather" and spec.get("inputSchema", {}).get("json", {}).get("type") == "object"
                              and "anyOf" not in spec.get("inputSchema", {}).get("json", {}), spec)
                        uses = [c["toolUse"] for c in r.get("content", []) if "toolUse" in c]
                        check(f"{where}: boto3 hands the program the tool under its own name", r["ok"] and [u["name"] for u in uses] == ["get.weather"], r)
                        # ConverseStream: the double answers event-stream messages in 7-byte pieces
                        r = call(py, url, "stream-unsigned", MAPPED)
                        last = seen(log)[-1]
                        check(f"{where}: ConverseStream: boto3 reads every message (checksums checked) and gets the tool's own name and whole input",
                              r["ok"] and last["signature"] == "valid" and r.get("names") == ["get.weather"] and len(r.get("inputs") or []) == 1
                              and r.get("stopReason") == "tool_use", r)
                        # InvokeModel with Anthropic's body (Claude Code's and the Anthropic SDK's way to Bedrock)
                        r = call(py, url, "invoke-unsigned", INVOKE)
                        last = seen(log)[-1]
                        sent = json.loads(last["body"]) if last["body"].startswith("{") else {}
                        tool = (sent.get("tools") or [{}])[0]
                        check(f"{where}: InvokeModel: the Messages body rewritten for Claude on Bedrock (name mapped, root union made one object), signed after it, taken",
                              last["signature"] == "valid" and not last["errors"] and tool.get("name") == "get_weather" and "anyOf" not in tool.get("input_schema", {}), (last["errors"], tool))
                        check(f"{where}: InvokeModel: boto3's answer names the tool as the program did", r["ok"] and r.get("names") == ["get.weather"], r)
                        r = call(py, url, "invoke-stream-unsigned", INVOKE)
                        check(f"{where}: InvokeModelWithResponseStream: Anthropic's events inside base64 in event-stream messages, the name restored, checksums right",
                              r["ok"] and r.get("names") == ["get.weather"] and len(r.get("inputs") or []) == 1, r)
                    else:
                        r = call(py, url, "unsigned", MAPPED)
                        last = seen(log)[-1]
                        time.sleep(1.2)
                        check(f"{where}: toolfit sees a signed request and leaves it (the signature stays valid, the name unmapped, "
                              "the API refuses it), counted skipped_signed: a misplaced signer shows in the counters",
                              last["signature"] == "valid" and '"get.weather"' in last["body"] and not r["ok"] and "toolfit_skipped_signed{" in e.prom(),
                              (last["signature"], r))
                finally:
                    e.stop()
        verdict.LABEL = ""
    finally:
        double.kill()


if __name__ == "__main__":
    verdict.run("bedrock", main)
