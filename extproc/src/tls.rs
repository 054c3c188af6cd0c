//! TLS and mutual TLS for the gRPC listener (`--tls-cert FILE --tls-key FILE [--client-ca FILE]`).
//!
//! A platform team reaches the processor across the cluster network from the gateway: the listener
//! serves TLS with the certificate and key from files (a mounted Kubernetes Secret), and with
//! `--client-ca` it requires a client certificate that CA signed (the gateway's), refusing any other
//! peer at the handshake. A Secret's rotation swaps the mounted files; each new connection looks at
//! them again (at most once per `CHECK_EVERY`), so a rotated certificate or CA serves from the next
//! connection on with no restart. A rotation half-written, or files that do not make a valid pair,
//! keep what served before, counted and said in the log.
//!
//! rustls with `ring`: TLS 1.3 and 1.2, its safe defaults; ALPN `h2` (gRPC).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_rustls::rustls;
use tokio_rustls::rustls::client::danger::HandshakeSignatureValid;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use tokio_rustls::rustls::DigitallySignedStruct;

/// How often, at most, the files are read again to see whether they changed.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Where the listener's certificate, key and (for mutual TLS) client CA are.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// With it, a client must present a certificate this CA bundle signed.
    pub client_ca: Option<PathBuf>,
    /// With mutual TLS, the names (DNS or IP) a client certificate must be valid for, any one of them:
    /// the gateway's identity. Empty: any certificate the CA signed.
    pub client_sans: Vec<String>,
}

/// The files' bytes as last read, to tell a rotation from no change.
#[derive(PartialEq, Eq)]
struct Read {
    cert: Vec<u8>,
    key: Vec<u8>,
    client_ca: Option<Vec<u8>>,
}

struct State {
    checked: Instant,
    read: Read,
    config: Arc<rustls::ServerConfig>,
    /// The last problem said, so a file missing for a while is counted and logged once.
    error: Option<String>,
}

/// The server configuration in use, read again from its files when they change.
pub struct Reloading {
    files: TlsFiles,
    state: Mutex<State>,
    /// Rotations taken (a new certificate, key or CA in use).
    pub reloads: AtomicU64,
    /// Rotations refused (unreadable files, a key that does not match, no certificate).
    pub reload_failures: AtomicU64,
}

impl Reloading {
    /// Reads and checks the files; an error names the file and what is wrong (the start is refused).
    pub fn load(files: TlsFiles) -> Result<Self, String> {
        let read = read_files(&files)?;
        let config = Arc::new(build(&files, &read)?);
        Ok(Reloading {
            files,
            state: Mutex::new(State { checked: Instant::now(), read, config, error: None }),
            reloads: AtomicU64::new(0),
            reload_failures: AtomicU64::new(0),
        })
    }

    /// The configuration for a new connection: the files are looked at again when `CHECK_EVERY` has
    /// passed since the last look, and a change that makes a valid configuration replaces it.
    pub fn current(&self) -> Arc<rustls::ServerConfig> {
        self.current_at(Instant::now())
    }

    fn current_at(&self, now: Instant) -> Arc<rustls::ServerConfig> {
        // a poisoned lock means a thread panicked holding it; the state it guards is whole either way
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if now.saturating_duration_since(state.checked) < CHECK_EVERY {
            return state.config.clone();
        }
        state.checked = now;
        let read = match read_files(&self.files) {
            Ok(r) => r,
            Err(e) => {
                // mid-rotation a file may be missing for a moment: what serves goes on serving
                self.failed(&mut state, e);
                return state.config.clone();
            }
        };
        if read == state.read {
            return state.config.clone();
        }
        match build(&self.files, &read) {
            Ok(config) => {
                state.config = Arc::new(config);
                state.read = read;
                state.error = None;
                self.reloads.fetch_add(1, Ordering::Relaxed);
                log::info!(
                    "toolfit-extproc: TLS files changed; new connections use the new certificate{}",
                    if self.files.client_ca.is_some() { " and client CA" } else { "" }
                );
            }
            Err(e) => {
                // the same bad files are not built again at every look
                state.read = read;
                self.failed(&mut state, e);
            }
        }
        state.config.clone()
    }

    /// Counts and logs a rotation that cannot be used, once per distinct problem.
    fn failed(&self, state: &mut State, e: String) {
        if state.error.as_ref() == Some(&e) {
            return;
        }
        self.reload_failures.fetch_add(1, Ordering::Relaxed);
        log::warn!("toolfit-extproc: TLS files changed but cannot be used ({e}); the previous certificate still serves");
        state.error = Some(e);
    }
}

fn read_files(files: &TlsFiles) -> Result<Read, String> {
    let get = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    Ok(Read { cert: get(&files.cert)?, key: get(&files.key)?, client_ca: files.client_ca.as_ref().map(get).transpose()? })
}

fn build(files: &TlsFiles, read: &Read) -> Result<rustls::ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&read.cert).collect::<Result<_, _>>().map_err(|e| format!("{}: {e}", files.cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no PEM certificate in it", files.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_slice(&read.key).map_err(|e| format!("{}: no PEM private key in it ({e})", files.key.display()))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(|e| e.to_string())?;
    let builder = match (&files.client_ca, &read.client_ca) {
        (Some(path), Some(pem)) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| format!("{}: {e}", path.display()))?;
                roots.add(cert).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            if roots.is_empty() {
                return Err(format!("{}: no PEM certificate in it", path.display()));
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if files.client_sans.is_empty() {
                builder.with_client_cert_verifier(verifier)
            } else {
                let names = files
                    .client_sans
                    .iter()
                    .map(|n| ServerName::try_from(n.clone()).map_err(|e| format!("--client-san {n}: {e}")))
                    .collect::<Result<_, _>>()?;
                builder.with_client_cert_verifier(Arc::new(Named { inner: verifier, names }))
            }
        }
        _ => builder.with_no_client_auth(),
    };
    // with_single_cert checks the key matches the certificate's public key
    let mut config = builder.with_single_cert(chain, key).map_err(|e| format!("{} and {}: {e}", files.cert.display(), files.key.display()))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// A connection that completed its handshake, as tonic serves it.
pub struct TlsConn(pub tokio_rustls::server::TlsStream<tokio::net::TcpStream>);

impl tonic::transport::server::Connected for TlsConn {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;
    fn connect_info(&self) -> Self::ConnectInfo {
        self.0.get_ref().0.connect_info()
    }
}

impl tokio::io::AsyncRead for TlsConn {
    fn poll_read(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for TlsConn {
    fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }
    fn poll_flush(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }
    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

/// A client verifier that also requires the certificate to be valid for one of `names` (its SANs): a
/// certificate the CA signed for another workload is refused at the handshake.
#[derive(Debug)]
struct Named {
    inner: Arc<dyn ClientCertVerifier>,
    names: Vec<ServerName<'static>>,
}

impl ClientCertVerifier for Named {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }
    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.inner.root_hint_subjects()
    }
    fn verify_client_cert(&self, end: &CertificateDer<'_>, chain: &[CertificateDer<'_>], now: UnixTime) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self.inner.verify_client_cert(end, chain, now)?;
        let cert = webpki::EndEntityCert::try_from(end).map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding))?;
        if self.names.iter().any(|n| cert.verify_is_valid_for_subject_name(n).is_ok()) {
            Ok(verified)
        } else {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
        }
    }
    fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(m, c, d)
    }
    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(m, c, d)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// How long a peer has to finish its handshake; a slower one is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes in progress at once; a connection past it is closed at once (counted as failed), so a
/// flood of half-open connections holds bounded memory. A gateway keeps a few long-lived connections.
pub const HANDSHAKES_AT_ONCE: usize = 256;

/// Handshakes that failed (no client certificate, one another CA signed, not TLS, too slow).
#[derive(Default)]
pub struct Handshakes {
    pub failed: AtomicU64,
    /// When the last failure was logged (seconds since the start, plus one; 0: never), so a scanner
    /// cannot flood the log.
    logged: AtomicU64,
}

/// Accepts TCP connections on `listener` and completes their TLS handshakes off the accept loop (one
/// slow peer holds up no other), giving the finished ones to tonic through the returned stream.
pub fn incoming(
    listener: tokio::net::TcpListener,
    tls: Arc<Reloading>,
    handshakes: Arc<Handshakes>,
) -> tokio_stream::wrappers::ReceiverStream<Result<TlsConn, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let start = Instant::now();
    let slots = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES_AT_ONCE));
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // out of file descriptors and the like: the listener goes on after a breath
                    log::warn!("toolfit-extproc: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                handshakes.fail(start, &format!("{HANDSHAKES_AT_ONCE} TLS handshakes already in progress; {peer} closed"));
                continue;
            };
            // no Nagle, as for the cleartext listener (see main.rs)
            let _ = tcp.set_nodelay(true);
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.current());
            let (tx, handshakes) = (tx.clone(), handshakes.clone());
            tokio::spawn(async move {
                let _slot = slot;
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => {
                        let _ = tx.send(Ok(TlsConn(stream))).await;
                    }
                    Ok(Err(e)) => handshakes.fail(start, &format!("TLS handshake with {peer} failed: {e}")),
                    Err(_) => handshakes.fail(start, &format!("TLS handshake with {peer} took over {} s", HANDSHAKE_TIMEOUT.as_secs())),
                }
            });
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

impl Handshakes {
    fn fail(&self, start: Instant, what: &str) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let now = start.elapsed().as_secs().saturating_add(1);
        let last = self.logged.load(Ordering::Relaxed);
        // one line per ten seconds at most; the counter has them all
        if (last == 0 || now.saturating_sub(last) >= 10) && self.logged.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            log::warn!("toolfit-extproc: {what} (toolfit_extproc_tls_handshakes_failed counts each)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    fn files(dir: &Path, ca: bool) -> TlsFiles {
        TlsFiles { cert: dir.join("tls.crt"), key: dir.join("tls.key"), client_ca: ca.then(|| dir.join("ca.crt")), client_sans: Vec::new() }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("toolfit-tls-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::create_dir_all(&d);
        d
    }

    /// A self-signed certificate and its key in `dir` as `name.crt`, `name.key` (the openssl command).
    fn self_signed(dir: &Path, name: &str) {
        let ok = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", &format!("/CN={name}")])
            .arg("-keyout")
            .arg(dir.join(format!("{name}.key")))
            .arg("-out")
            .arg(dir.join(format!("{name}.crt")))
            .output()
            .map(|o| o.status.success());
        assert_eq!(ok.ok(), Some(true), "openssl req failed");
    }

    fn copy(dir: &Path, from: &str, to: &str) {
        assert!(std::fs::copy(dir.join(from), dir.join(to)).is_ok());
    }

    #[test]
    fn missing_or_empty_files_refuse_the_start_naming_them() {
        let d = dir("missing");
        let f = files(&d, false);
        let e = Reloading::load(f.clone()).err().unwrap_or_default();
        assert!(e.contains("tls.crt"), "{e}");
        assert!(std::fs::write(&f.cert, b"not pem").is_ok() && std::fs::write(&f.key, b"not pem").is_ok());
        let e = Reloading::load(f).err().unwrap_or_default();
        assert!(e.contains("tls.crt") && e.contains("no PEM certificate"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_key_that_is_not_the_certificates_refuses_the_start() {
        let d = dir("mismatch");
        self_signed(&d, "a");
        self_signed(&d, "b");
        copy(&d, "a.crt", "tls.crt");
        copy(&d, "b.key", "tls.key");
        let e = Reloading::load(files(&d, false)).err().unwrap_or_default();
        assert!(e.contains("tls.crt and") && e.contains("tls.key"), "{e}");
        // control: the matching key starts
        copy(&d, "a.key", "tls.key");
        assert!(Reloading::load(files(&d, false)).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_rotation_serves_from_the_next_look_and_a_bad_one_keeps_the_old() {
        let d = dir("rotate");
        for n in ["a", "b", "ca"] {
            self_signed(&d, n);
        }
        copy(&d, "a.crt", "tls.crt");
        copy(&d, "a.key", "tls.key");
        copy(&d, "ca.crt", "ca.crt.pem");
        let f = TlsFiles { client_ca: Some(d.join("ca.crt.pem")), ..files(&d, false) };
        let Ok(tls) = Reloading::load(f) else { panic!("load") };
        let t0 = Instant::now();
        let first = tls.current_at(t0);
        // unchanged files: the same configuration, nothing counted
        let later = t0 + CHECK_EVERY;
        assert!(Arc::ptr_eq(&first, &tls.current_at(later)));
        // half a rotation (b's certificate, a's key): refused once, the old one serves
        copy(&d, "b.crt", "tls.crt");
        let t = later + CHECK_EVERY;
        assert!(Arc::ptr_eq(&first, &tls.current_at(t)));
        assert!(Arc::ptr_eq(&first, &tls.current_at(t + CHECK_EVERY)));
        assert_eq!((tls.reloads.load(Ordering::Relaxed), tls.reload_failures.load(Ordering::Relaxed)), (0, 1));
        // the rest of it: the new pair serves, but not before CHECK_EVERY since the last look
        copy(&d, "b.key", "tls.key");
        let t = t + CHECK_EVERY;
        assert!(Arc::ptr_eq(&first, &tls.current_at(t)));
        let next = tls.current_at(t + CHECK_EVERY);
        assert!(!Arc::ptr_eq(&first, &next));
        assert_eq!((tls.reloads.load(Ordering::Relaxed), tls.reload_failures.load(Ordering::Relaxed)), (1, 1));
        // a CA file gone for a while: counted once, what serves goes on
        let _ = std::fs::remove_file(d.join("ca.crt.pem"));
        let t = t + CHECK_EVERY * 2;
        assert!(Arc::ptr_eq(&next, &tls.current_at(t)) && Arc::ptr_eq(&next, &tls.current_at(t + CHECK_EVERY)));
        assert_eq!(tls.reload_failures.load(Ordering::Relaxed), 2);
        let _ = std::fs::remove_dir_all(&d);
    }
}
