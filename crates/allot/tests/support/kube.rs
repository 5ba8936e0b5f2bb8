//! A client that speaks to `allot serve` as client-go does: protobuf bodies
//! (`application/vnd.kubernetes.protobuf`) with `Accept: application/vnd.kubernetes.protobuf,
//! */*`, binary responses, chunked transfer decoded, and watch streams read frame by frame
//! while they are open (the length-prefixed WatchEvents of a protobuf watch).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

/// client-go's Accept header for built-in kinds.
pub const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, */*";
/// The protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

type Stream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A response, with its body decoded from chunked transfer.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The Content-Type.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON (decoded from protobuf when it is protobuf).
    pub fn json(&self) -> Value {
        if self.content_type.starts_with(PROTOBUF) {
            allot_protobuf::decode(&self.body)
                .unwrap_or_else(|e| panic!("the {} body does not decode: {e}", self.content_type))
        } else {
            serde_json::from_slice(&self.body).unwrap_or_else(|e| {
                panic!(
                    "the {} body is not JSON ({e}): {}",
                    self.content_type,
                    String::from_utf8_lossy(&self.body)
                )
            })
        }
    }
}

/// A client for one server.
pub struct Client {
    address: String,
    ca: PathBuf,
    token: Option<String>,
    /// The User-Agent sent.
    pub user_agent: String,
}

fn tls(ca: &Path) -> Arc<rustls::ClientConfig> {
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

impl Client {
    /// A client for `address`, trusting `ca`, as `token`'s user.
    pub fn new(address: &str, ca: &Path, token: Option<String>, user_agent: &str) -> Client {
        Client {
            address: address.to_string(),
            ca: ca.to_path_buf(),
            token,
            user_agent: user_agent.to_string(),
        }
    }

    fn open(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        accept: &str,
        body: &[u8],
    ) -> (Stream, u16, String, bool) {
        let host = self
            .address
            .rsplit_once(':')
            .map_or(self.address.as_str(), |(h, _)| h)
            .to_string();
        let name = ServerName::try_from(host).expect("server name");
        let connection = rustls::ClientConnection::new(tls(&self.ca), name).expect("TLS");
        let socket = TcpStream::connect(&self.address).expect("connects");
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut stream = rustls::StreamOwned::new(connection, socket);
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: {}\r\nContent-Length: {}\r\n",
            self.address,
            self.user_agent,
            body.len()
        );
        if let Some(token) = &self.token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        if !content_type.is_empty() {
            head.push_str(&format!("Content-Type: {content_type}\r\n"));
        }
        if !accept.is_empty() {
            head.push_str(&format!("Accept: {accept}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("writes");
        stream.write_all(body).expect("writes the body");
        stream.flush().expect("flushes");
        // The response head.
        let mut raw = Vec::new();
        let mut byte = [0u8; 1];
        while !raw.ends_with(b"\r\n\r\n") {
            let n = stream.read(&mut byte).expect("reads the response head");
            assert!(n == 1, "the server closed the connection before answering");
            raw.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&raw).into_owned();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let header = |name: &str| {
            head.lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                })
                .unwrap_or_default()
        };
        let chunked = header("transfer-encoding").eq_ignore_ascii_case("chunked");
        (stream, status, header("content-type"), chunked)
    }

    /// One request; the whole response.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        accept: &str,
        body: &[u8],
    ) -> Response {
        let (mut stream, status, content_type, chunked) =
            self.open(method, path, content_type, accept, body);
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        let body = if chunked { dechunk(&rest) } else { rest };
        Response {
            status,
            content_type,
            body,
        }
    }

    /// A protobuf request (the body encoded from `object` as `api_version` `kind`).
    pub fn protobuf(&self, method: &str, path: &str, object: &Value) -> Response {
        let body = allot_protobuf::encode(
            object["apiVersion"].as_str().unwrap_or_default(),
            object["kind"].as_str().unwrap_or_default(),
            object,
        )
        .unwrap_or_else(|e| panic!("{path}: the body does not encode: {e}"));
        self.send(method, path, PROTOBUF, PROTOBUF_ACCEPT, &body)
    }

    /// A GET with client-go's Accept header.
    pub fn get(&self, path: &str) -> Response {
        self.send("GET", path, "", PROTOBUF_ACCEPT, &[])
    }

    /// Opens a watch; its events are read with [`Watch::next`].
    pub fn watch(&self, path: &str, accept: &str) -> Watch {
        let (stream, status, content_type, chunked) = self.open("GET", path, "", accept, &[]);
        Watch {
            stream,
            status,
            content_type,
            chunked,
            raw: Vec::new(),
            body: Vec::new(),
        }
    }
}

fn dechunk(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(end) = raw[at..].windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&raw[at..at + end]).into_owned();
        let size = usize::from_str_radix(size_text.trim(), 16).unwrap_or(0);
        at += end + 2;
        if size == 0 || at + size > raw.len() {
            break;
        }
        out.extend_from_slice(&raw[at..at + size]);
        at += size + 2;
    }
    out
}

/// An open watch.
pub struct Watch {
    stream: Stream,
    /// The status code.
    pub status: u16,
    /// The Content-Type.
    pub content_type: String,
    chunked: bool,
    /// Bytes read, not yet dechunked.
    raw: Vec<u8>,
    /// Dechunked bytes not yet taken as events.
    body: Vec<u8>,
}

impl Watch {
    /// The next event (type, object as JSON), waiting up to `timeout`; `None` when the stream
    /// ended or nothing came in time.
    pub fn next(&mut self, timeout: Duration) -> Option<(String, Value)> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(event) = self.take_event() {
                return Some(event);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            self.stream
                .sock
                .set_read_timeout(Some(left.max(Duration::from_millis(10))))
                .ok()?;
            let mut buffer = [0u8; 16 * 1024];
            match self.stream.read(&mut buffer) {
                Ok(0) => return None,
                Ok(n) => self.raw.extend_from_slice(&buffer[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if Instant::now() >= deadline {
                        return None;
                    }
                }
                Err(_) => return None,
            }
            self.pump();
        }
    }

    /// Moves whole chunks from `raw` to `body`.
    fn pump(&mut self) {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return;
        }
        loop {
            let Some(end) = self.raw.windows(2).position(|w| w == b"\r\n") else {
                return;
            };
            let size_text = String::from_utf8_lossy(&self.raw[..end]).into_owned();
            let Ok(size) = usize::from_str_radix(size_text.trim(), 16) else {
                return;
            };
            if self.raw.len() < end + 2 + size + 2 {
                return;
            }
            self.body
                .extend_from_slice(&self.raw[end + 2..end + 2 + size]);
            self.raw.drain(..end + 2 + size + 2);
        }
    }

    fn take_event(&mut self) -> Option<(String, Value)> {
        if self.content_type.starts_with(PROTOBUF) {
            if self.body.len() < 4 {
                return None;
            }
            let len = u32::from_be_bytes([self.body[0], self.body[1], self.body[2], self.body[3]])
                as usize;
            if self.body.len() < 4 + len {
                return None;
            }
            let mut frame: Vec<u8> = self.body.drain(..4 + len).collect();
            let events = allot_protobuf::watch_events(&mut frame).expect("a watch frame");
            let (kind, object) = events.into_iter().next()?;
            let value = allot_protobuf::decode(&object)
                .unwrap_or_else(|e| panic!("a {kind} event's object does not decode: {e}"));
            return Some((kind, value));
        }
        let end = self.body.iter().position(|b| *b == b'\n')?;
        let line: Vec<u8> = self.body.drain(..=end).collect();
        let event: Value = serde_json::from_slice(&line).expect("a JSON watch event");
        Some((
            event["type"].as_str().unwrap_or_default().to_string(),
            event["object"].clone(),
        ))
    }
}
