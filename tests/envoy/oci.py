#!/usr/bin/env python3
"""The Wasm module as users fetch it: scripts/wasm-image.py writes dist/toolfit.wasm as the OCI image the
overlays' `url` names, crane pushes it to a registry running here (both built from the Go module proxy:
github.com/distribution/distribution/v3's registry, go-containerregistry's crane), and it comes back:

- with crane: the digest the registry reports is the one the script printed, the image has the one
  `tar+gzip` layer Istio's compat variant wants, and `plugin.wasm` in it is dist/toolfit.wasm byte for byte;
- through Istio's own module cache (istio.io/istio/pkg/wasm, the code pilot-agent runs for a WasmPlugin;
  tests/oci/wasmfetch): deploy/inference-gateway's WasmPlugin, its REGISTRY and sha256 filled in as
  deploy/README.md says, fetches the module, byte for byte; the module's own sha256 (what the overlays
  once said to pin) is refused, as Istio refuses it, and so is a module that is not Wasm.

Prints one line per check and 'N passed, M failed'."""
import hashlib, io, json, os, shutil, subprocess, sys, tarfile, tempfile, time

import yaml

import deploy
from harness import gotools, runner
from harness.paths import ROOT
from harness.verdict import check, summary

REGISTRY = "github.com/distribution/distribution/v3/cmd/registry@v3.1.2"
CRANE = "github.com/google/go-containerregistry/cmd/crane@v0.22.1"
WASM = os.path.join(ROOT, "dist", "toolfit.wasm")


def tool(spec):
    p = subprocess.run([os.path.join(ROOT, "scripts", "go-tool.sh"), spec], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None, p.stderr[-800:]


def wasmfetch():
    """tests/oci/wasmfetch built once per source (its go.mod pins istio.io/istio)."""
    return gotools.build(os.path.join("tests", "oci", "wasmfetch"), "wasmfetch")


def main():
    if not os.path.exists(WASM):
        sys.exit(f"missing {WASM}: run make wasm")
    registry, err = tool(REGISTRY)
    check(f"registry built from {REGISTRY}", registry is not None, err)
    crane, err = tool(CRANE)
    check(f"crane built from {CRANE}", crane is not None, err)
    fetch, err = wasmfetch()
    check("tests/oci/wasmfetch (Istio's pkg/wasm) built from istio.io/istio on the Go module proxy", fetch is not None, err)
    if not (registry and crane and fetch):
        return
    d = tempfile.mkdtemp(prefix="toolfit-oci-")
    port = runner.free_port()
    cfg = os.path.join(d, "config.yml")
    yaml.safe_dump({"version": 0.1, "log": {"level": "warn"}, "storage": {"filesystem": {"rootdirectory": os.path.join(d, "data")}, "delete": {"enabled": True}},
                    "http": {"addr": f"127.0.0.1:{port}"}}, open(cfg, "w"))
    log = open(os.path.join(d, "registry.log"), "w+")
    reg = subprocess.Popen([registry, "serve", cfg], stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.time() + 20
        up = False
        while time.time() < end and not up:
            up = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/v2/"], capture_output=True).returncode == 0
            time.sleep(0.1)
        check("the registry serves the distribution API (/v2/)", up, open(log.name).read()[-500:])
        if not up:
            return
        module = open(WASM, "rb").read()
        module_sum = hashlib.sha256(module).hexdigest()
        layout = os.path.join(d, "layout")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "wasm-image.py"), WASM, layout, "0.1.0"], capture_output=True, text=True)
        lines = dict(l.split() for l in p.stdout.splitlines() if l.strip())
        image = lines.get("image", "")
        check("scripts/wasm-image.py writes the OCI layout and prints its digest and the module's", p.returncode == 0 and image.startswith("sha256:")
              and lines.get("module") == "sha256:" + module_sum, p.stdout + p.stderr)
        ref = f"127.0.0.1:{port}/toolfit:0.1.0"
        p = subprocess.run([crane, "push", "--insecure", layout, ref], capture_output=True, text=True)
        check(f"crane push the layout to {ref}", p.returncode == 0, p.stderr[-500:])
        p = subprocess.run([crane, "digest", "--insecure", ref], capture_output=True, text=True)
        check("the registry's digest for the tag is the one wasm-image.py printed (reproducible: the same module, the same image)", p.stdout.strip() == image, (p.stdout, image))
        man = json.loads(subprocess.run([crane, "manifest", "--insecure", ref], capture_output=True, text=True).stdout or "{}")
        check("one layer, application/vnd.oci.image.layer.v1.tar+gzip (Istio's compat variant)",
              [l.get("mediaType") for l in man.get("layers", [])] == ["application/vnd.oci.image.layer.v1.tar+gzip"], man)
        p = subprocess.run([crane, "export", "--insecure", ref, "-"], capture_output=True)
        names = {}
        if p.returncode == 0:
            with tarfile.open(fileobj=io.BytesIO(p.stdout)) as t:
                names = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
        check("crane export: plugin.wasm is dist/toolfit.wasm byte for byte", list(names) == ["plugin.wasm"] and names["plugin.wasm"] == module, list(names))

        # Istio's agent, as a WasmPlugin from deploy/inference-gateway names it (README: REGISTRY and sha256 set)
        objs, _ = deploy.render("inference-gateway")
        wp = next(o["spec"] for o in objs if o["kind"] == "WasmPlugin")
        url = wp["url"].replace("REGISTRY", f"127.0.0.1:{port}")
        def run(u, s):
            """wasmfetch's exit, the module it fetched (b"" if none) and what it said (Istio logs on stdout)."""
            p = subprocess.run([fetch, u, s, "insecure"], capture_output=True, text=True)
            path = (p.stdout.strip().splitlines() or [""])[-1]
            got = open(path, "rb").read() if p.returncode == 0 and os.path.isfile(path) else b""
            return p.returncode, got, p.stdout[-300:] + p.stderr[-300:]
        code, got, said = run(url, image.split(":")[1])
        check(f"Istio's module cache fetches deploy/inference-gateway's {wp['url']} with sha256 = the image digest: the module, byte for byte",
              code == 0 and got == module, said)
        code, got, said = run(url, module_sum)
        check("Istio refuses the same URL with sha256 = the module's own sha256 (the checksum is the image's)", code != 0 and "does not match" in said, said)
        code, got, said = run(f"oci://127.0.0.1:{port}/toolfit@{image}", "")
        check("and fetches it pinned by digest in the URL, with no sha256", code == 0 and got == module, said)
        # a module that is not Wasm, pushed the same way: the agent refuses it
        bad = os.path.join(d, "bad.wasm")
        open(bad, "wb").write(b"not wasm at all")
        out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "wasm-image.py"), bad, os.path.join(d, "bad"), "0.0.0"], capture_output=True, text=True).stdout
        badref = f"127.0.0.1:{port}/toolfit:bad"
        subprocess.run([crane, "push", "--insecure", os.path.join(d, "bad"), badref], capture_output=True)
        code, got, said = run(f"oci://{badref}", "")
        check("control: an image whose plugin.wasm is not Wasm is refused by Istio's cache", code != 0 and "invalid" in said, (out, said))
    finally:
        reg.terminate()
        try:
            reg.wait(5)
        except subprocess.TimeoutExpired:
            reg.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
    summary("oci")
