#!/usr/bin/env python3
"""Writes dist/toolfit.wasm as the Wasm OCI image the WasmPlugin's and EnvoyExtensionPolicy's `url` name,
as an OCI image layout directory (`crane push DIR REGISTRY/toolfit:VERSION` pushes it; no Docker needed):

- the "compat" variant Istio's and Envoy Gateway's fetchers read: one layer,
  `application/vnd.oci.image.layer.v1.tar+gzip`, holding `plugin.wasm` at its root (what deploy/Dockerfile
  builds with `FROM scratch` / `COPY`);
- reproducible: the tar entry's owner, mode and time and the gzip header are fixed, so the same module
  always gives the same layer, config and manifest digests.

    scripts/wasm-image.py dist/toolfit.wasm target/oci/toolfit [VERSION]

Prints the manifest digest (`sha256:...`): what a WasmPlugin's or EnvoyExtensionPolicy's `sha256` must
be for an `oci://` URL (both check it against the image's digest, not the module's), and the module's."""
import gzip, hashlib, io, json, os, sys, tarfile


def blob(root, data, media_type):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    path = os.path.join(root, "blobs", "sha256", digest.split(":")[1])
    with open(path, "wb") as f:
        f.write(data)
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def layer(files):
    """A reproducible tar+gzip layer of (path, bytes, mode): owner root, time 0, no gzip name or time.
    Directories the paths need come first. Returns (tar, gzip)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as t:
        dirs = sorted({"/".join(p.split("/")[:i]) for p, _, _ in files for i in range(1, p.count("/") + 1)})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = tarfile.DIRTYPE, 0o755, 0, 0, 0, "", ""
            t.addfile(info)
        for path, data, mode in files:
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = len(data), mode, 0, 0, 0, "", ""
            t.addfile(info, io.BytesIO(data))
    tar = raw.getvalue()
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9, filename="") as g:
        g.write(tar)
    return tar, out.getvalue()


def image(root, files, title, version, platform, run=None):
    """Writes an OCI image layout of one layer holding `files` at `root`; returns the manifest digest."""
    os.makedirs(os.path.join(root, "blobs", "sha256"), exist_ok=True)
    tar, gz = layer(files)
    diff_id = "sha256:" + hashlib.sha256(tar).hexdigest()
    labels = {"org.opencontainers.image.title": title, "org.opencontainers.image.version": version, "org.opencontainers.image.licenses": "Apache-2.0"}
    config = {
        "architecture": platform[0], "os": platform[1],
        "config": dict(run or {}, Labels=labels),
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": f"scripts/{os.path.basename(sys.argv[0])}: " + ", ".join(p for p, _, _ in files)}],
    }
    cfg = blob(root, json.dumps(config, sort_keys=True, separators=(",", ":")).encode(), "application/vnd.oci.image.config.v1+json")
    lay = blob(root, gz, "application/vnd.oci.image.layer.v1.tar+gzip")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cfg, "layers": [lay],
                "annotations": {"org.opencontainers.image.title": title, "org.opencontainers.image.version": version}}
    man = blob(root, json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode(), "application/vnd.oci.image.manifest.v1+json")
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [dict(man, annotations={"org.opencontainers.image.ref.name": version})]}
    open(os.path.join(root, "index.json"), "w").write(json.dumps(index, indent=1))
    open(os.path.join(root, "oci-layout"), "w").write('{"imageLayoutVersion":"1.0.0"}')
    return man["digest"]


def build(module_path, root, version="0.1.0"):
    module = open(module_path, "rb").read()
    digest = image(root, [("plugin.wasm", module, 0o644)], "toolfit", version, ("wasm", "wasip1"))
    return digest, "sha256:" + hashlib.sha256(module).hexdigest()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    image, module = build(sys.argv[1], sys.argv[2], *(sys.argv[3:4] or []))
    print(f"image  {image}\nmodule {module}")
