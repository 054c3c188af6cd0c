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
from harness.delivery import EXTPROC, ExtprocEnvoy
from harness.paths import ROOT, readme_request
from harness.verdict import check, run

REGISTRY = "github.com/distribution/distribution/v3/cmd/registry@v3.1.2"
CRANE = "github.com/google/go-containerregistry/cmd/crane@v0.22.1"
WASM = os.path.join(ROOT, "dist", "toolfit.wasm")


def tool(spec):
    p = subprocess.run([os.path.join(ROOT, "scripts", "go-tool.sh"), spec], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None, p.stderr[-800:]


def wasmfetch():
    """tests/oci/wasmfetch built once per source (its go.mod pins istio.io/istio)."""
    return gotools.build(os.path.join("tests", "oci", "wasmfetch"), "wasmfetch")


def extproc_image(crane, port, d):
    """toolfit-extproc's image from scripts/extproc-image.py (no Docker, no base image): pushed, pulled
    back, and its filesystem run as the image says (its entrypoint, as user 65532, in a chroot of the
    exported filesystem: nothing of this machine's but the kernel) behind Envoy: the README's request is
    rewritten. Control: the same filesystem without the C library it was built against does not start."""
    layout = os.path.join(d, "extproc")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "extproc-image.py"), EXTPROC, layout, "0.1.0"], capture_output=True, text=True)
    image = dict(line.split(None, 1) for line in p.stdout.splitlines() if line.strip()).get("image", "")
    check("scripts/extproc-image.py writes toolfit-extproc's image (the binary, the libraries ldd names, a passwd) as an OCI layout", p.returncode == 0 and image.startswith("sha256:"), p.stdout + p.stderr[-500:])
    ref = f"127.0.0.1:{port}/toolfit-extproc:0.1.0"
    p = subprocess.run([crane, "push", "--insecure", layout, ref], capture_output=True, text=True)
    got = subprocess.run([crane, "digest", "--insecure", ref], capture_output=True, text=True).stdout.strip()
    check(f"crane push {ref}: the registry's digest is the one printed", p.returncode == 0 and got == image, (p.stderr[-300:], got, image))
    cfg = json.loads(subprocess.run([crane, "config", "--insecure", ref], capture_output=True, text=True).stdout or "{}").get("config", {})
    check("its configuration: user 65532, the processor as entrypoint, ports 50051 and 9464 (as deploy/Dockerfile.extproc's)",
          cfg.get("User") == "65532:65532" and cfg.get("Entrypoint") == ["/usr/local/bin/toolfit-extproc"] and set(cfg.get("ExposedPorts", {})) == {"50051/tcp", "9464/tcp"}, cfg)
    rootfs = os.path.join(d, "rootfs")
    os.makedirs(rootfs)
    p = subprocess.run([crane, "export", "--insecure", ref, "-"], capture_output=True)
    if p.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(p.stdout)) as t:
            t.extractall(rootfs, filter="tar")
    os.makedirs(os.path.join(rootfs, "etc", "toolfit"), exist_ok=True)
    json.dump({"profile": "llama-cpp", "framing": "exact"}, open(os.path.join(rootfs, "etc", "toolfit", "config.json"), "w"))
    os.chmod(os.path.join(rootfs, "etc", "toolfit", "config.json"), 0o644)
    # root chroots; without root, a user namespace maps this user to root for the chroot
    jail = ["chroot", "--userspec=65532:65532", rootfs] if os.geteuid() == 0 else ["unshare", "-r", "chroot", rootfs]

    def start():
        gport, mport = runner.free_port(), runner.free_port()
        log = open(os.path.join(d, f"extproc-{gport}.log"), "w+")
        proc = subprocess.Popen(jail + cfg.get("Entrypoint", []) + ["--config", "/etc/toolfit/config.json", "--listen", f"127.0.0.1:{gport}",
                                                                    "--metrics-listen", f"127.0.0.1:{mport}"], stdout=log, stderr=subprocess.STDOUT)
        end, ready = time.time() + 15, False
        while time.time() < end and proc.poll() is None and not ready:
            ready = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{mport}/readyz"], capture_output=True).returncode == 0
            time.sleep(0.05)
        log.seek(0)
        return proc, gport, ready, log.read()
    proc, gport, ready, said = start()
    try:
        check("the image's filesystem runs the processor by itself (chroot, user 65532): /readyz answers", ready, said[-500:])
        if ready:
            up = runner.free_port()
            _, rec = runner.echo_upstream.serve(up)
            runner.use_venv_envoy()
            e = ExtprocEnvoy(up, gport)
            try:
                body = readme_request()
                status, _, _ = e.request("POST", "/v1/chat/completions", body)
                check("Envoy through the image's processor: deploy/README.md's request arrives rewritten as the engine says",
                      e.ready and status == 200 and runner.last(rec).get("body") == runner.cli(body) != body, e.logs()[-500:])
            finally:
                e.stop()
    finally:
        proc.terminate()
        proc.wait(10)
    # control: the image without its C library does not start (the layer carries what the binary needs)
    libc = next(os.path.join(dp, f) for dp, _, fs in os.walk(rootfs) for f in fs if f.startswith("libc.so"))
    os.rename(libc, libc + ".gone")
    proc, _, ready, said = start()
    proc.terminate()
    proc.wait(10)
    check("control: the same filesystem without its libc.so does not start, and the check says so", not ready, said[-300:])


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
        extproc_image(crane, port, d)
    finally:
        reg.terminate()
        try:
            reg.wait(5)
        except subprocess.TimeoutExpired:
            reg.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    run("oci", main)
