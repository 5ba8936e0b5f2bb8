//! A small blocking HTTPS/1.1 client for `allot bench`: keep-alive connections (one per client
//! thread) with a bearer token, and watch streams read line by line. It knows only what
//! `allot serve` answers with: `Content-Length` or chunked bodies.
//!
//! Key design decision: no HTTP client crate. The workspace has rustls already (the server's
//! TLS), and the few dozen lines of HTTP/1.1 framing below keep the benchmark's own cost small
//! and visible: a request is one write, a response one buffered read.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// Where and as whom to connect: what a kubeconfig written by `allot serve` says.
#[derive(Clone)]
pub struct Endpoint {
    /// `host:port`.
    pub address: String,
    name: ServerName<'static>,
    config: Arc<rustls::ClientConfig>,
    token: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("address", &self.address)
            .finish()
    }
}

/// The value of the first `key: value` line of a kubeconfig (leading spaces ignored).
fn kubeconfig_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        line.trim_start()
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

/// Standard base64 (with or without padding), as kubeconfigs carry certificates.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            b'\r' | b'\n' | b' ' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

impl Endpoint {
    /// Reads the server address, CA and token of a kubeconfig that `allot serve` wrote (one
    /// cluster, one user with a token).
    pub fn from_kubeconfig(path: &Path) -> anyhow::Result<Endpoint> {
        let file = path.display();
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {file}"))?;
        let server = kubeconfig_value(&text, "server")
            .ok_or_else(|| anyhow!("{file}: no clusters[].cluster.server"))?;
        let address = server
            .strip_prefix("https://")
            .ok_or_else(|| anyhow!("{file}: server {server:?} is not https://host:port"))?
            .trim_end_matches('/')
            .to_string();
        let ca = kubeconfig_value(&text, "certificate-authority-data")
            .and_then(base64_decode)
            .ok_or_else(|| {
                anyhow!("{file}: no valid clusters[].cluster.certificate-authority-data")
            })?;
        let token = kubeconfig_value(&text, "token").map(str::to_string);
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&ca) {
            let cert = cert.map_err(|e| anyhow!("{file}: certificate-authority-data: {e:?}"))?;
            roots
                .add(cert)
                .map_err(|e| anyhow!("{file}: certificate-authority-data: {e}"))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| anyhow!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let host = address
            .rsplit_once(':')
            .map_or(address.as_str(), |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let name =
            ServerName::try_from(host).map_err(|e| anyhow!("{file}: server {server:?}: {e}"))?;
        Ok(Endpoint {
            address,
            name,
            config: Arc::new(config),
            token,
        })
    }

    /// Opens a connection (TLS handshake included).
    pub fn connect(&self) -> anyhow::Result<Connection> {
        let socket = TcpStream::connect(&self.address)
            .with_context(|| format!("connecting to {}", self.address))?;
        socket.set_nodelay(true)?;
        socket.set_read_timeout(Some(Duration::from_secs(120)))?;
        let tls = rustls::ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(|e| anyhow!("TLS: {e}"))?;
        Ok(Connection {
            stream: BufReader::with_capacity(64 * 1024, rustls::StreamOwned::new(tls, socket)),
            endpoint: self.clone(),
            open: true,
        })
    }
}

type Stream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// One keep-alive connection.
pub struct Connection {
    stream: BufReader<Stream>,
    endpoint: Endpoint,
    /// False once the server said `Connection: close` or an error broke the framing.
    open: bool,
}

/// A response's status line and headers.
struct Head {
    code: u16,
    length: Option<usize>,
    chunked: bool,
    close: bool,
}

impl Connection {
    fn send(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<()> {
        let mut text = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nUser-Agent: allot-bench\r\n",
            self.endpoint.address
        );
        if let Some(token) = &self.endpoint.token {
            text.push_str("Authorization: Bearer ");
            text.push_str(token);
            text.push_str("\r\n");
        }
        if !body.is_empty() || method != "GET" {
            text.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        text.push_str("\r\n");
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(body);
        let stream = self.stream.get_mut();
        stream.write_all(&bytes)?;
        stream.flush()
    }

    fn read_head(&mut self) -> anyhow::Result<Head> {
        let mut line = String::new();
        if self.stream.read_line(&mut line)? == 0 {
            bail!("the server closed the connection");
        }
        let code = line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| anyhow!("bad status line {line:?}"))?;
        let mut head = Head {
            code,
            length: None,
            chunked: false,
            close: false,
        };
        loop {
            line.clear();
            if self.stream.read_line(&mut line)? == 0 {
                bail!("the server closed the connection in the headers");
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => head.length = value.parse().ok(),
                "transfer-encoding" => head.chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => head.close = value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
        Ok(head)
    }

    /// Reads one chunk of a chunked body; an empty vector is the last chunk.
    fn read_chunk(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut line = String::new();
        if self.stream.read_line(&mut line)? == 0 {
            bail!("the server closed the connection in a chunked body");
        }
        let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| anyhow!("bad chunk size {line:?}"))?;
        let mut data = vec![0; size];
        self.stream.read_exact(&mut data)?;
        let mut crlf = [0; 2];
        self.stream.read_exact(&mut crlf)?;
        if size == 0 {
            // No trailers are sent: the CRLF read above ended the body.
            return Ok(Vec::new());
        }
        Ok(data)
    }

    fn read_body(&mut self, head: &Head) -> anyhow::Result<Vec<u8>> {
        if head.chunked {
            let mut body = Vec::new();
            loop {
                let chunk = self.read_chunk()?;
                if chunk.is_empty() {
                    return Ok(body);
                }
                body.extend_from_slice(&chunk);
            }
        }
        if let Some(length) = head.length {
            let mut body = vec![0; length];
            self.stream.read_exact(&mut body)?;
            return Ok(body);
        }
        let mut body = Vec::new();
        self.stream.read_to_end(&mut body)?;
        self.open = false;
        Ok(body)
    }

    /// Sends one request and reads the whole response: status code and body.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> anyhow::Result<(u16, Vec<u8>)> {
        let result = self
            .send(method, path, body)
            .map_err(anyhow::Error::from)
            .and_then(|()| {
                let head = self.read_head()?;
                let body = self.read_body(&head)?;
                if head.close {
                    self.open = false;
                }
                Ok((head.code, body))
            });
        if result.is_err() {
            self.open = false;
        }
        result
    }

    /// Whether the connection can take another request.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Starts a watch (`GET path` answered with a chunked stream of JSON lines) and calls
    /// `on_line` for each line until it returns false, the stream ends, or an error breaks it.
    /// The connection is spent afterwards.
    pub fn watch(
        mut self,
        path: &str,
        mut on_line: impl FnMut(&[u8]) -> bool,
    ) -> anyhow::Result<()> {
        self.stream.get_ref().sock.set_read_timeout(None)?;
        self.send("GET", path, &[])?;
        let head = self.read_head()?;
        if head.code != 200 {
            let body = self.read_body(&head).unwrap_or_default();
            bail!(
                "watch {path}: HTTP {}: {}",
                head.code,
                String::from_utf8_lossy(&body)
            );
        }
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let chunk = if head.chunked {
                self.read_chunk()?
            } else {
                let mut buffer = vec![0; 64 * 1024];
                let n = self.stream.read(&mut buffer)?;
                buffer.truncate(n);
                buffer
            };
            if chunk.is_empty() {
                return Ok(());
            }
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(offset) = pending[start..].iter().position(|&b| b == b'\n') {
                let line = &pending[start..start + offset];
                start += offset + 1;
                if !line.is_empty() && !on_line(line) {
                    return Ok(());
                }
            }
            pending.drain(..start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_as_the_standard_alphabet() {
        assert_eq!(base64_decode("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64_decode("aGVsbG8").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64_decode("YQ==").as_deref(), Some(&b"a"[..]));
        assert_eq!(
            base64_decode("+/+/").as_deref(),
            Some(&[0xfb, 0xff, 0xbf][..])
        );
        assert_eq!(base64_decode("a$b"), None);
    }

    #[test]
    fn kubeconfig_values_are_found_by_key() {
        let text = "clusters:\n- name: allot\n  cluster:\n    server: https://127.0.0.1:6443\nusers:\n- name: admin\n  user:\n    token: abc\n";
        assert_eq!(
            kubeconfig_value(text, "server"),
            Some("https://127.0.0.1:6443")
        );
        assert_eq!(kubeconfig_value(text, "token"), Some("abc"));
        assert_eq!(kubeconfig_value(text, "certificate-authority-data"), None);
    }

    #[test]
    fn kubeconfigs_without_a_server_are_refused_with_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, "apiVersion: v1\nkind: Config\n").expect("writes");
        let err = Endpoint::from_kubeconfig(&path).expect_err("no server");
        assert!(err.to_string().contains("kubeconfig: no clusters"), "{err}");
        std::fs::write(
            &path,
            "clusters:\n- cluster:\n    server: http://x:1\n    certificate-authority-data: AAAA\n",
        )
        .expect("writes");
        let err = Endpoint::from_kubeconfig(&path).expect_err("not https");
        assert!(err.to_string().contains("not https"), "{err}");
    }
}
