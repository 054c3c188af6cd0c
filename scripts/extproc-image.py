#!/usr/bin/env python3
"""Writes toolfit-extproc as a container image, an OCI image layout directory (`crane push DIR
REGISTRY/toolfit-extproc:VERSION` pushes it), without Docker or a base image from a registry: one
reproducible layer with what deploy/Dockerfile.extproc's distroless base gives the binary (the C
library, libgcc, libm and the loader it is linked against, read with ldd from this machine, and a
passwd naming the nonroot user 65532) and the binary at /usr/local/bin/toolfit-extproc. The image runs
as 65532:65532 with the binary as its entrypoint and ports 50051 (gRPC) and 9464 (metrics), as the
Dockerfile's does.

    scripts/extproc-image.py target/release/toolfit-extproc target/oci/toolfit-extproc [VERSION]

Prints the manifest digest and the file list. The libraries are this machine's: build on the distribution
you deploy (glibc is backward compatible, so an older build host is the safe side)."""
import importlib.util, os, re, subprocess, sys

spec = importlib.util.spec_from_file_location("wasm_image", os.path.join(os.path.dirname(os.path.abspath(__file__)), "wasm-image.py"))
wasm_image = importlib.util.module_from_spec(spec)
spec.loader.exec_module(wasm_image)

PASSWD = b"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
GROUP = b"root:x:0:\nnonroot:x:65532:\n"


def libraries(binary):
    """The shared objects the binary loads, as (path in the image, file on this machine): ldd's paths,
    the loader included; the vDSO has no file."""
    out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            found.append((m.group(1).lstrip("/"), os.path.realpath(m.group(1))))
    return sorted(set(found))


def build(binary, root, version="0.1.0"):
    files = [(path, open(real, "rb").read(), 0o755) for path, real in libraries(binary)]
    files += [("etc/passwd", PASSWD, 0o644), ("etc/group", GROUP, 0o644),
              ("usr/local/bin/toolfit-extproc", open(binary, "rb").read(), 0o755)]
    run = {"User": "65532:65532", "Entrypoint": ["/usr/local/bin/toolfit-extproc"], "ExposedPorts": {"50051/tcp": {}, "9464/tcp": {}},
           "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"]}
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    return wasm_image.image(root, files, "toolfit-extproc", version, (arch, "linux"), run), [p for p, _, _ in files]


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    digest, paths = build(sys.argv[1], sys.argv[2], *(sys.argv[3:4] or []))
    print(f"image  {digest}\nfiles  {' '.join(paths)}")
