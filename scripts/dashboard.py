#!/usr/bin/env python3
"""Writes deploy/monitoring/toolfit-dashboard.json (Grafana) from the filter's metric names
(`toolfit stats`, `toolfit kinds`), so every panel queries a metric the filter emits."""
import json, os, subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLFIT = os.path.join(ROOT, "target", "release", "toolfit")
kinds = [l.split("`")[1] for l in subprocess.run([TOOLFIT, "kinds"], capture_output=True, text=True, check=True).stdout.splitlines()[2:]]

panels, y = [], 0


def panel(title, targets, unit="reqps", w=12, kind="timeseries", desc=""):
    global y
    x = 0 if len(panels) % 2 == 0 or w == 24 else 12
    panels.append({"id": len(panels) + 1, "type": kind, "title": title, "description": desc, "datasource": {"type": "prometheus", "uid": "${datasource}"},
                   "gridPos": {"h": 8, "w": w, "x": x, "y": y},
                   "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                   "targets": [{"refId": chr(65 + i), "expr": e, "legendFormat": l} for i, (e, l) in enumerate(targets)]})
    if x == 12 or w == 24:
        y += 8


sel = 'route=~"$route", profile=~"$profile"'
panel("Requests", [(f"sum(rate(toolfit_requests_rewritten{{{sel}}}[$__rate_interval]))", "rewritten"),
                   (f"sum(rate(toolfit_requests_unchanged{{{sel}}}[$__rate_interval]))", "unchanged"),
                   (f"sum(rate(toolfit_rejected_strict{{{sel}}}[$__rate_interval]))", "rejected (strict)")],
      desc="Inference requests toolfit read: rewritten (only schema bytes changed), unchanged (forwarded byte for byte), refused in strict mode.")
panel("Skipped (forwarded unchanged)", [(f"sum(rate(toolfit_{s}{{{sel}}}[$__rate_interval]))", s.replace("skipped_", "")) for s in
                                        ("skipped_too_large", "skipped_not_json", "skipped_unknown_shape", "skipped_encoded", "skipped_signed")]
      + [(f"sum(rate(toolfit_internal_errors{{{sel}}}[$__rate_interval]))", "internal errors")],
      desc="Bodies toolfit did not rewrite, by reason. Internal errors should stay at zero.")
panel("Transformations by kind", [(f'sum by (__name__) (rate({{__name__=~"toolfit_({"|".join(kinds)})", {sel}}}[$__rate_interval]))', "{{__name__}}")],
      unit="ops", w=24, desc="Every change the engine made, one series per transformation kind (docs/stats.md).")
panel("Lossy changes by route", [(f"sum by (route, profile) (rate(toolfit_lossy_total{{{sel}}}[$__rate_interval]))", "{{route}} / {{profile}}")],
      unit="ops", desc="Changes that alter which values a schema accepts; the proxy log names the tool and JSON path.")
panel("Rewrite time", [(f"histogram_quantile({q}, sum by (le) (rate(toolfit_rewrite_us_bucket{{{sel}}}[$__rate_interval])))", f"p{int(q * 100)}") for q in (0.5, 0.9, 0.99)],
      unit="µs", desc="Time to rewrite one body inside the Wasm VM.")
panel("Body bytes", [(f"sum(rate(toolfit_bytes_in{{{sel}}}[$__rate_interval]))", "in"), (f"sum(rate(toolfit_bytes_out{{{sel}}}[$__rate_interval]))", "out"),
                     (f"sum(rate(toolfit_bytes_held{{{sel}}}[$__rate_interval]))", "held")], unit="Bps")
panel("Tools seen", [(f"sum(rate(toolfit_tools_seen{{{sel}}}[$__rate_interval]))", "tools"), (f"sum(rate(toolfit_schemas_unparsed{{{sel}}}[$__rate_interval]))", "unparsed schemas")], unit="ops")
panel("Tool calls in responses", [(f"sum(rate(toolfit_tool_calls_seen{{{sel}}}[$__rate_interval]))", "seen"),
                                  (f"sum(rate(toolfit_tool_calls_invalid{{{sel}}}[$__rate_interval]))", "invalid (the MCP server would refuse)"),
                                  (f"sum(rate(toolfit_tool_calls_invalid_lossy{{{sel}}}[$__rate_interval]))", "invalid where toolfit was lossy")], unit="ops",
      desc="Every tool call checked against the schema the client sent. Invalid where lossy: the lossy rewrites that matter in practice.")
panel("Invalid tool calls by tool", [(f"topk(10, sum by (tool) (rate(toolfit_calls_invalid{{{sel}}}[$__rate_interval])))", "{{tool}}")], unit="ops",
      desc="Which MCP server's tools the models get wrong most (toolfit_calls_invalid{tool=...}).")
panel("Response repairs", [(f"sum(rate(toolfit_{s}{{{sel}}}[$__rate_interval]))", s) for s in
                           ("names_restored", "nulls_removed", "responses_unrepaired", "tool_calls_rejected")], unit="ops",
      desc="Names given back, injected nulls removed, responses forwarded unrepaired, responses rejected for an invalid call.")
panel("MCP leg: tools listed by client", [(f"sum by (mcp_client) (rate(toolfit_mcp_tools_listed{{{sel}}}[$__rate_interval]))", "{{mcp_client}}"),
                                          (f"sum(rate(toolfit_mcp_tools_dropped{{{sel}}}[$__rate_interval]))", "dropped (unfit)"),
                                          (f"sum(rate(toolfit_mcp_lists_refused{{{sel}}}[$__rate_interval]))", "lists refused (unfit)")], unit="ops",
      desc="MCP routes: tools each client was listed, rewritten for its profile (docs/mcp.md); tools left out and lists refused by the route's `unfit`.")
panel("MCP leg: sessions and calls", [(f"sum by (mcp_client) (rate(toolfit_mcp_sessions{{{sel}}}[$__rate_interval]))", "sessions {{mcp_client}}"),
                                      (f"sum(rate(toolfit_mcp_calls_unmapped{{{sel}}}[$__rate_interval]))", "calls naming a tool never listed"),
                                      (f"sum(rate(toolfit_mcp_outputs_kept{{{sel}}}[$__rate_interval]))", "output schemas kept (a rewrite would narrow them)")], unit="ops",
      desc="MCP routes: sessions begun per client, calls toolfit could not map, output schemas left as the server wrote them.")
panel("Wasm VM memory", [("max by (pod) (toolfit_vm_memory_bytes)", "{{pod}}")], unit="bytes", desc="Linear memory of toolfit's VMs (it only grows: a high-water mark).")

dash = {
    "title": "toolfit", "uid": "toolfit", "tags": ["toolfit", "envoy", "llm"], "schemaVersion": 39, "version": 1, "editable": True,
    "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
    "templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
        {"name": "route", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "query": "label_values(toolfit_requests_seen, route)",
         "includeAll": True, "multi": True, "current": {"text": "All", "value": "$__all"}, "allValue": ".*"},
        {"name": "profile", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "query": "label_values(toolfit_requests_seen, profile)",
         "includeAll": True, "multi": True, "current": {"text": "All", "value": "$__all"}, "allValue": ".*"},
    ]},
    "panels": panels,
}
out = os.path.join(ROOT, "deploy", "monitoring", "toolfit-dashboard.json")
json.dump(dash, open(out, "w"), indent=1)
print(f"wrote {out}: {len(panels)} panels")
