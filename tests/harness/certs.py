"""Certificates for the TLS checks, made with the openssl command: a CA and leaf certificates it signs,
each a (cert, key) pair of PEM files in one temporary directory."""
import os, shutil, subprocess, tempfile


class Pki:
    def __init__(self, prefix="toolfit-pki-"):
        self.dir = tempfile.mkdtemp(prefix=prefix)

    def _run(self, *args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def ca(self, name):
        """A self-signed CA `name`: (cert file, key file)."""
        cert, key = self.path(f"{name}.crt"), self.path(f"{name}.key")
        self._run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                  "-subj", f"/CN={name}", "-keyout", key, "-out", cert,
                  "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        return cert, key

    def leaf(self, name, ca, dns=(), client=False):
        """A certificate `name` that the CA `ca` (a pair from `ca`) signs: for a server with these DNS
        names (and 127.0.0.1), or for a client. (cert file, key file)."""
        cert, key, csr = self.path(f"{name}.crt"), self.path(f"{name}.key"), self.path(f"{name}.csr")
        self._run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}", "-keyout", key, "-out", csr)
        ext = self.path(f"{name}.ext")
        lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature",
                 "extendedKeyUsage=" + ("clientAuth" if client else "serverAuth")]
        if dns:
            lines.append("subjectAltName=" + ",".join([f"DNS:{d}" for d in dns] + ["IP:127.0.0.1"]))
        open(ext, "w").write("\n".join(lines) + "\n")
        self._run("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert)
        return cert, key


def mount_secret(mount, version, cert, key):
    """The kubelet's atomic update of a Secret volume at `mount`: the files (tls.crt, tls.key) in a new
    directory `..<version>`, the `..data` link swapped to it, the file names links through `..data`."""
    d = os.path.join(mount, f"..{version}")
    os.mkdir(d)
    shutil.copy(cert, os.path.join(d, "tls.crt"))
    shutil.copy(key, os.path.join(d, "tls.key"))
    os.symlink(f"..{version}", os.path.join(mount, "..data_tmp"))
    os.replace(os.path.join(mount, "..data_tmp"), os.path.join(mount, "..data"))
    for f in ("tls.crt", "tls.key"):
        if not os.path.islink(os.path.join(mount, f)):
            os.symlink(f"..data/{f}", os.path.join(mount, f))


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # and an empty SETTINGS frame


def handshake(port, ca, sni, pair=None):
    """A gRPC client's first steps on a TLS listener: the handshake (with `pair` as its certificate),
    HTTP/2's preface, then a read. Returns ('served', the server certificate's DER) when the server
    answered with its SETTINGS, else ('refused', why). In TLS 1.3 a server refuses a client certificate
    after the client's side of the handshake is done, so the refusal arrives at the read."""
    import socket as so, ssl
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["h2"])
    if pair:
        ctx.load_cert_chain(*pair)
    try:
        with so.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw, server_hostname=sni) as t:
            t.sendall(H2_PREFACE)
            data = t.recv(64)
            return ("served", t.getpeercert(binary_form=True)) if data[3:4] == b"\x04" else ("refused", f"read {data!r}")
    except (ssl.SSLError, OSError) as ex:
        return "refused", str(ex)
