//! A blocking HTTPS/1.1 client for the `allot serve` tests: trusts the server's CA
//! (`DATA_DIR/pki/ca.crt`) and sends an optional bearer token. Raw on purpose, so tests can send
//! any method, headers and body and read the exact status and body back.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// The admin token that `allot serve` wrote into DATA_DIR/kubeconfig.
pub fn kubeconfig_token(kubeconfig: &Path) -> Option<String> {
    let text = std::fs::read_to_string(kubeconfig).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("token: ").map(str::to_string))
}

fn config(ca: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("reads the CA") {
        roots.add(cert.expect("CA parses")).expect("adds the CA");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// Sends one request to `address` (`host:port`) over TLS and returns status code and body
/// (chunked bodies are returned as sent, with their chunk framing).
pub fn request(
    address: &str,
    ca: &Path,
    token: Option<&str>,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &[u8],
) -> (u16, String) {
    let host = address
        .rsplit_once(':')
        .map_or(address, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let name = ServerName::try_from(host).expect("server name");
    let connection = rustls::ClientConnection::new(config(ca), name).expect("TLS client");
    let socket = TcpStream::connect(address).expect("connects");
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut stream = rustls::StreamOwned::new(connection, socket);
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(token) = token {
        text.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for h in headers {
        text.push_str(h);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    stream.write_all(text.as_bytes()).expect("writes");
    let _ = stream.write_all(body);
    let _ = stream.flush();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_string());
    (code, body)
}
