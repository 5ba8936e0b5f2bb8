//! TLS for `allot serve`: a self-signed CA and a serving certificate under `DATA_DIR/pki/`,
//! created on first start and reused afterwards, and a listener that hands axum TLS streams.
//!
//! Files (PEM): `ca.crt`, `ca.key`, `apiserver.crt`, `apiserver.key`, plus `apiserver.sans`, the
//! subject alternative names the serving certificate was issued for. On start the CA is loaded
//! (or created); the serving certificate is reused when it was issued for every name this start
//! needs, and re-issued by the same CA otherwise (a new listen address), so kubeconfigs written
//! earlier keep working. Keys are written with mode 0600. ECDSA P-256 keys, rustls with the ring
//! provider, HTTP/1.1 only (advertised through ALPN).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::Error;

/// The CA's common name (also the issuer of every serving certificate).
pub const CA_COMMON_NAME: &str = "allot-ca";

/// How long a TLS handshake may take before the connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The loaded certificates: the CA (for kubeconfigs) and the server's TLS configuration.
pub struct Pki {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    /// The rustls configuration serving the certificate.
    pub config: Arc<rustls::ServerConfig>,
    /// The directory the files live in.
    pub dir: PathBuf,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki").field("dir", &self.dir).finish()
    }
}

fn tls_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Tls {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// The names the serving certificate must carry for a listen address: `localhost`,
/// `127.0.0.1`, `::1`, and the listen IP when it is a specific one. Sorted, no duplicates.
pub fn subject_alt_names(listen: IpAddr) -> Vec<String> {
    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if !listen.is_unspecified() {
        names.push(listen.to_string());
    }
    names.sort();
    names.dedup();
    names
}

/// Loads the CA and serving certificate from `dir`, creating what is missing.
pub fn load_or_create(dir: &Path, listen: SocketAddr) -> Result<Pki, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let ca_crt = dir.join("ca.crt");
    let ca_key = dir.join("ca.key");
    let (ca_pem, ca_key_pair) = if ca_crt.exists() || ca_key.exists() {
        let pem = read(&ca_crt)?;
        let key = KeyPair::from_pem(&read(&ca_key)?).map_err(|e| tls_error(&ca_key, e))?;
        (pem, key)
    } else {
        let key = KeyPair::generate().map_err(|e| tls_error(&ca_key, e))?;
        let cert = ca_params()
            .self_signed(&key)
            .map_err(|e| tls_error(&ca_crt, e))?;
        let pem = cert.pem();
        write_file(&ca_key, &key.serialize_pem(), true)?;
        write_file(&ca_crt, &pem, false)?;
        (pem, key)
    };
    let sans = subject_alt_names(listen.ip());
    let crt = dir.join("apiserver.crt");
    let key = dir.join("apiserver.key");
    let sans_path = dir.join("apiserver.sans");
    let issued_for: Vec<String> = std::fs::read_to_string(&sans_path)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default();
    let reuse = crt.exists() && key.exists() && sans.iter().all(|name| issued_for.contains(name));
    if !reuse {
        let issuer = Issuer::new(ca_params(), ca_key_pair);
        let server_key = KeyPair::generate().map_err(|e| tls_error(&key, e))?;
        let cert = serving_params(&sans, &crt)?
            .signed_by(&server_key, &issuer)
            .map_err(|e| tls_error(&crt, e))?;
        write_file(&key, &server_key.serialize_pem(), true)?;
        write_file(&crt, &cert.pem(), false)?;
        write_file(&sans_path, &(sans.join("\n") + "\n"), false)?;
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&crt)
        .map_err(|e| tls_error(&crt, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| tls_error(&crt, e))?;
    if chain.is_empty() {
        return Err(tls_error(&crt, "no certificate in the file"));
    }
    let private = PrivateKeyDer::from_pem_file(&key).map_err(|e| tls_error(&key, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(dir, e))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| tls_error(&crt, e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Pki {
        ca_pem,
        config: Arc::new(config),
        dir: dir.to_path_buf(),
    })
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes a file atomically (temp file, fsync, rename, fsync of the directory); `secret` files
/// get mode 0600.
fn write_file(path: &Path, text: &str, secret: bool) -> Result<(), Error> {
    use std::io::Write;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut file = options.open(&tmp).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = path.parent()
        && let Ok(dir) = std::fs::File::open(dir)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn validity(params: &mut CertificateParams, years: i32) {
    use chrono::Datelike;
    let year = chrono::Utc::now().year();
    params.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
    params.not_after = rcgen::date_time_ymd(year + years, 1, 1);
}

fn random_serial() -> SerialNumber {
    let mut bytes = [0u8; 16];
    let _ = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if bytes.iter().all(|b| *b == 0) {
        // No /dev/urandom: the clock still makes serials differ between certificates.
        let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
        bytes[..8].copy_from_slice(&nanos.to_be_bytes());
    }
    bytes[0] &= 0x7f;
    bytes[0] |= 0x01;
    SerialNumber::from_slice(&bytes)
}

/// The CA's parameters; the same every time, so a reloaded CA key signs as the stored CA.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, CA_COMMON_NAME);
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.serial_number = Some(random_serial());
    validity(&mut params, 10);
    params
}

fn serving_params(sans: &[String], path: &Path) -> Result<CertificateParams, Error> {
    let mut params = CertificateParams::new(sans.to_vec()).map_err(|e| tls_error(path, e))?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "kube-apiserver");
    params.distinguished_name = name;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(random_serial());
    validity(&mut params, 5);
    Ok(params)
}

/// Standard base64 (with padding), for `certificate-authority-data`.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The kubeconfig for the admin user: `https://` the bound address (loopback when it listens
/// on every address), the CA inline, the admin token when there is one.
pub fn kubeconfig_text(address: SocketAddr, token: Option<&str>, ca_pem: &str) -> String {
    let mut address = address;
    if address.ip().is_unspecified() {
        let loopback: IpAddr = if address.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        };
        address.set_ip(loopback);
    }
    let user = match token {
        Some(token) => format!("  user:\n    token: {token}\n"),
        None => "  user: {}\n".to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: allot\n  cluster:\n    server: https://{address}\n    certificate-authority-data: {}\nusers:\n- name: admin\n{user}contexts:\n- name: allot\n  context:\n    cluster: allot\n    user: admin\n    namespace: default\ncurrent-context: allot\n",
        base64(ca_pem.as_bytes())
    )
}

/// A TCP listener whose connections are TLS streams: accepted sockets do their handshake on
/// their own task (a slow or broken client never blocks the others) and finished streams are
/// handed to axum in order of completion.
pub struct TlsListener {
    streams: tokio::sync::mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    local: SocketAddr,
}

impl TlsListener {
    /// Starts accepting on `listener` with `config`.
    pub fn new(
        listener: tokio::net::TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (socket, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::warn!("accept: {err}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                if tx.is_closed() {
                    return;
                }
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(socket)).await {
                        Ok(Ok(stream)) => {
                            let _ = tx.send((stream, peer)).await;
                        }
                        Ok(Err(err)) => tracing::debug!("TLS handshake with {peer}: {err}"),
                        Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { streams: rx, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.streams.recv().await {
            Some(accepted) => accepted,
            // The accept loop never ends while the receiver lives; if it did, wait forever
            // rather than spin.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
        }
    }

    #[test]
    fn kubeconfig_points_at_https_with_the_ca() {
        let text = kubeconfig_text("0.0.0.0:6443".parse().expect("addr"), Some("tok"), "PEM");
        assert!(
            text.contains("    server: https://127.0.0.1:6443\n"),
            "{text}"
        );
        assert!(
            text.contains("    certificate-authority-data: UEVN\n"),
            "{text}"
        );
        assert!(text.contains("  user:\n    token: tok\n"), "{text}");
        let text = kubeconfig_text("10.0.0.1:1".parse().expect("addr"), None, "PEM");
        assert!(text.contains("server: https://10.0.0.1:1\n"), "{text}");
        assert!(text.contains("  user: {}\n"), "{text}");
    }

    #[test]
    fn names_cover_loopback_and_the_listen_address() {
        assert_eq!(
            subject_alt_names("127.0.0.1".parse().expect("ip")),
            vec!["127.0.0.1", "::1", "localhost"]
        );
        assert_eq!(
            subject_alt_names("0.0.0.0".parse().expect("ip")),
            vec!["127.0.0.1", "::1", "localhost"]
        );
        assert_eq!(
            subject_alt_names("10.1.2.3".parse().expect("ip")),
            vec!["10.1.2.3", "127.0.0.1", "::1", "localhost"]
        );
    }

    #[test]
    fn certificates_are_created_once_and_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = dir.path().join("pki");
        let listen: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let first = load_or_create(&pki, listen).expect("creates");
        let crt = std::fs::read_to_string(pki.join("apiserver.crt")).expect("crt");
        let second = load_or_create(&pki, listen).expect("loads");
        assert_eq!(first.ca_pem, second.ca_pem);
        assert_eq!(
            crt,
            std::fs::read_to_string(pki.join("apiserver.crt")).expect("crt"),
            "same names: the serving certificate is reused"
        );
        // A new listen address re-issues the serving certificate from the same CA.
        let third = load_or_create(&pki, "10.9.8.7:6443".parse().expect("addr")).expect("loads");
        assert_eq!(first.ca_pem, third.ca_pem);
        assert_ne!(
            crt,
            std::fs::read_to_string(pki.join("apiserver.crt")).expect("crt")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for key in ["ca.key", "apiserver.key"] {
                let mode = std::fs::metadata(pki.join(key))
                    .expect("key")
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o077, 0, "{key} is private");
            }
        }
    }

    #[test]
    fn serving_certificate_verifies_against_the_ca() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = dir.path().join("pki");
        let listen: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let loaded = load_or_create(&pki, listen).expect("creates");
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(loaded.ca_pem.as_bytes()) {
            roots.add(cert.expect("ca parses")).expect("adds");
        }
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(pki.join("apiserver.crt"))
                .expect("reads")
                .collect::<Result<_, _>>()
                .expect("parses");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("verifier");
        use rustls::client::danger::ServerCertVerifier;
        let now = rustls::pki_types::UnixTime::now();
        for name in ["localhost", "127.0.0.1"] {
            let server_name = rustls::pki_types::ServerName::try_from(name).expect("name");
            verifier
                .verify_server_cert(&chain[0], &chain[1..], &server_name, &[], now)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let other = rustls::pki_types::ServerName::try_from("example.com").expect("name");
        assert!(
            verifier
                .verify_server_cert(&chain[0], &chain[1..], &other, &[], now)
                .is_err()
        );
        // A corrupt key is an error naming the file, not a panic.
        std::fs::write(pki.join("ca.key"), "not a key").expect("writes");
        let err = load_or_create(&dir.path().join("pki"), listen).expect_err("corrupt key");
        assert!(err.to_string().contains("ca.key"), "{err}");
    }
}
