//! `--request-log FILE`: one JSON line per request, to see what a client does (a real
//! kube-scheduler or kube-controller-manager) and to replay it in a test: the verb and path,
//! the query, the request's content type and Accept header, the user agent, the answer's
//! status and content type, and the request body as JSON (a protobuf body decoded; bearer
//! tokens and other headers are not written).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

/// An open request log.
pub struct RequestLog {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
    path: PathBuf,
}

/// One request, as logged.
pub struct Entry<'a> {
    /// The HTTP method.
    pub method: &'a str,
    /// The path.
    pub path: &'a str,
    /// The raw query string.
    pub query: &'a str,
    /// The request's Content-Type.
    pub content_type: &'a str,
    /// The Accept header.
    pub accept: &'a str,
    /// The User-Agent.
    pub user_agent: &'a str,
    /// The request body.
    pub body: &'a [u8],
    /// The answer's status.
    pub status: u16,
    /// The answer's Content-Type.
    pub response_type: &'a str,
}

impl RequestLog {
    /// Opens (appends to) the log.
    pub fn open(path: &Path) -> Result<RequestLog, crate::Error> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| crate::Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(RequestLog {
            file: Mutex::new(std::io::BufWriter::new(file)),
            path: path.to_path_buf(),
        })
    }

    /// Writes one entry (a failure to write is reported once per failure, not fatal).
    pub fn write(&self, entry: &Entry<'_>) {
        let line = render(entry);
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let written = serde_json::to_writer(&mut *file, &line)
            .map_err(std::io::Error::other)
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.flush());
        if let Err(err) = written {
            tracing::warn!("--request-log {}: {err}", self.path.display());
        }
    }
}

/// The body as JSON: protobuf decoded, JSON parsed, anything else as text.
fn body_json(content_type: &str, body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    if content_type.starts_with(allot_protobuf::MEDIA_TYPE) {
        return match allot_protobuf::decode_typed::<Value>(body) {
            Ok(value) => value,
            Err(err) => json!({"undecodable protobuf": err.to_string()}),
        };
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

fn render(entry: &Entry<'_>) -> Value {
    json!({
        "time": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        "method": entry.method,
        "path": entry.path,
        "query": entry.query,
        "contentType": entry.content_type,
        "accept": entry.accept,
        "userAgent": entry.user_agent,
        "status": entry.status,
        "responseType": entry.response_type,
        "body": body_json(entry.content_type, entry.body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_bodies_are_logged_as_json() {
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
            "spec": {"holderIdentity": "me"}});
        let bytes =
            allot_protobuf::encode("coordination.k8s.io/v1", "Lease", &lease).expect("encodes");
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("requests.jsonl");
        let log = RequestLog::open(&path).expect("opens");
        log.write(&Entry {
            method: "POST",
            path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            query: "",
            content_type: "application/vnd.kubernetes.protobuf",
            accept: "application/vnd.kubernetes.protobuf, */*",
            user_agent: "kube-scheduler/v1.36.1",
            body: &bytes,
            status: 201,
            response_type: "application/vnd.kubernetes.protobuf",
        });
        let text = std::fs::read_to_string(&path).expect("reads");
        let line: Value = serde_json::from_str(text.trim()).expect("one JSON line");
        assert_eq!(line["body"], lease);
        assert_eq!(line["status"], 201);
        assert_eq!(line["method"], "POST");
    }
}
