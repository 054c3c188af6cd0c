"""Certificates for the TLS checks, made with the openssl command: a CA and leaf certificates it signs,
each a (cert, key) pair of PEM files in one temporary directory."""
import os, subprocess, tempfile


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
