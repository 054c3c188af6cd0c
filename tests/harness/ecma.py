"""The reference for what an ECMA-262 pattern matches: Node's own RegExp with the `u` flag (as JSON Schema
reads `pattern`), one process for many patterns. The judges compare each backend's matcher with it."""
import json, subprocess

SCRIPT = ("const a = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
          "console.log(JSON.stringify(a.map(([p, xs]) => { try { const r = new RegExp(p, 'u'); return xs.map(x => r.test(x)) }"
          " catch (e) { return null } })))")


def regexp_u(asks):
    """[(pattern, [string])] -> ([[bool] per string, or None where Node refuses the pattern], Node's stderr);
    ([], stderr) if Node did not answer."""
    p = subprocess.run(["node", "-e", SCRIPT], input=json.dumps(asks), capture_output=True, text=True)
    return (json.loads(p.stdout) if p.returncode == 0 else []), p.stderr


def matrix(patterns, samples):
    """For each pattern, whether Node's RegExp (`u`) matches each sample; a pattern Node refuses fails."""
    said, err = regexp_u([(p, samples) for p in patterns])
    if len(said) != len(patterns) or any(x is None for x in said):
        raise RuntimeError(f"Node did not judge every pattern: {err[-300:]}")
    return said
