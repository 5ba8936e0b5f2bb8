//! The query parameters of reads (get, list, watch), decoded and checked as kube-apiserver does
//! before it touches storage, with its status codes and messages:
//!
//! - numbers as Go's `strconv` parses them (`limit=abc`: 400 `strconv.ParseInt: parsing "abc":
//!   invalid syntax`; a negative `limit` is accepted and means no limit, as upstream);
//! - `resourceVersion` as the storage's versioner parses it (422 `resourceVersion: Invalid
//!   value: ...`; 400 `invalid resource version: ...` where upstream hands the list to etcd);
//! - `resourceVersionMatch` as `ValidateListOptions` (422 on `ListOptions.meta.k8s.io`);
//! - `continue` tokens as storage's `DecodeContinue` (400 `invalid continue token: ...`);
//! - field selectors against each kind's supported field labels (400 `field label not
//!   supported: ...`).
//!
//! Key design decision: allot never splits a list into pages (it answers `limit` with every
//! item, which the API allows: a client must follow `continue` only when one is returned), so a
//! continue token can only come from a client; a well-formed one is honoured by listing from its
//! start key.

use allot_store::Kind;
use serde_json::{Value, json};

use crate::selector::{Requirement, Selector};

/// A refusal: status code, reason and message of the `Status` to answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`.
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, or `Value::Null`.
    pub details: Value,
}

impl QueryError {
    fn bad_request(message: impl Into<String>) -> Self {
        QueryError {
            code: 400,
            reason: "BadRequest",
            message: message.into(),
            details: Value::Null,
        }
    }

    /// 422 for an invalid value the storage layer reports (upstream's storage InvalidError).
    fn invalid_storage(message: impl Into<String>) -> Self {
        QueryError {
            code: 422,
            reason: "Invalid",
            message: message.into(),
            details: Value::Null,
        }
    }
}

/// Which request the parameters belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
}

/// The checked parameters of a read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadQuery {
    /// `limit` (0 or negative: no limit).
    pub limit: i64,
    /// The start key of a `continue` token, relative to the collection (`name` or
    /// `namespace/name`, as upstream's keys below the resource prefix).
    pub continue_from: Option<String>,
}

/// Go's `strconv.ParseUint(text, 10, 64)`, with its error text.
pub fn go_parse_uint(text: &str) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(text)
        ));
    }
    text.parse::<u64>().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(text)
        )
    })
}

/// Go's `strconv.ParseInt(text, 10, 64)`, with its error text.
pub fn go_parse_int(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseInt: parsing {}: invalid syntax",
            go_quote(text)
        ));
    }
    text.trim_start_matches('+').parse::<i64>().map_err(|_| {
        format!(
            "strconv.ParseInt: parsing {}: value out of range",
            go_quote(text)
        )
    })
}

/// A string as Go's `%q` prints it (JSON escaping is the same for the characters that matter).
fn go_quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// The storage versioner's parse of a `resourceVersion` parameter: `Ok(None)` for "" and "0".
pub fn parse_resource_version(rv: &str) -> Result<Option<u64>, String> {
    if rv.is_empty() || rv == "0" {
        return Ok(None);
    }
    go_parse_uint(rv)
        .map(Some)
        .map_err(|err| format!("resourceVersion: Invalid value: {}: {err}", go_quote(rv)))
}

/// Checks the parameters of a read of `kind`; `get` looks a parameter up.
pub fn check(
    verb: Verb,
    kind: Kind,
    get: impl Fn(&str) -> Option<String>,
) -> Result<ReadQuery, QueryError> {
    let param = |key: &str| get(key).unwrap_or_default();
    let rv = param("resourceVersion");
    if verb == Verb::Get {
        parse_resource_version(&rv).map_err(QueryError::invalid_storage)?;
        return Ok(ReadQuery::default());
    }
    // The parameter decoder: numbers first.
    let limit = match get("limit") {
        Some(text) => go_parse_int(&text).map_err(QueryError::bad_request)?,
        None => 0,
    };
    if let Some(text) = get("timeoutSeconds") {
        go_parse_int(&text).map_err(QueryError::bad_request)?;
    }
    let continue_token = param("continue");
    let rv_match = param("resourceVersionMatch");
    // Present (any value Go's ParseBool reads) counts as given, as a *bool parameter does.
    let send_initial_events = get("sendInitialEvents").is_some();
    validate_list_options(verb, &rv, &rv_match, &continue_token, send_initial_events)?;
    check_field_selector(kind, &param("fieldSelector"))?;
    // Storage: upstream answers from etcd (400s) or from its watch cache (422s).
    let delegated = verb == Verb::List
        && (!continue_token.is_empty()
            || rv_match == "Exact"
            || (rv_match.is_empty() && limit > 0 && !rv.is_empty() && rv != "0"));
    if let Err(err) = parse_resource_version(&rv) {
        return Err(if delegated {
            QueryError::bad_request(format!("invalid resource version: {err}"))
        } else {
            QueryError::invalid_storage(err)
        });
    }
    let mut query = ReadQuery {
        limit,
        continue_from: None,
    };
    if verb == Verb::List && !continue_token.is_empty() {
        let start = decode_continue(&continue_token)
            .map_err(|err| QueryError::bad_request(format!("invalid continue token: {err}")))?;
        if !rv.is_empty() && rv != "0" {
            return Err(QueryError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        query.continue_from = Some(start);
    }
    Ok(query)
}

/// `ValidateListOptions`: 422 on `ListOptions.meta.k8s.io ""` with every problem. A watch
/// with `sendInitialEvents` (client-go's WatchList, on by default since 1.34) needs
/// `resourceVersionMatch=NotOlderThan`; a list may not have `sendInitialEvents`.
fn validate_list_options(
    verb: Verb,
    rv: &str,
    rv_match: &str,
    continue_token: &str,
    send_initial_events: bool,
) -> Result<(), QueryError> {
    const MATCH: &str = "resourceVersionMatch";
    let mut causes: Vec<(&str, &str, String)> = Vec::new();
    let forbidden = |field: &'static str, detail: &str| {
        (field, "FieldValueForbidden", format!("Forbidden: {detail}"))
    };
    if verb == Verb::Watch {
        if send_initial_events && rv_match != "NotOlderThan" {
            causes.push(forbidden(
                MATCH,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !rv_match.is_empty() {
            if !send_initial_events {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if rv_match != "NotOlderThan" {
                causes.push((
                    MATCH,
                    "FieldValueNotSupported",
                    format!(
                        "Unsupported value: {}: supported values: \"NotOlderThan\"",
                        go_quote(rv_match)
                    ),
                ));
            }
            if !continue_token.is_empty() {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if !rv_match.is_empty() {
            if rv.is_empty() {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if !continue_token.is_empty() {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if rv_match != "Exact" && rv_match != "NotOlderThan" {
                causes.push((
                    MATCH,
                    "FieldValueNotSupported",
                    format!(
                        "Unsupported value: {}: supported values: \"Exact\", \"NotOlderThan\", \"\"",
                        go_quote(rv_match)
                    ),
                ));
            }
            if rv_match == "Exact" && rv == "0" {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if send_initial_events {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let texts: Vec<String> = causes
        .iter()
        .map(|(field, _, text)| format!("{field}: {text}"))
        .collect();
    let summary = if texts.len() == 1 {
        texts[0].clone()
    } else {
        format!("[{}]", texts.join(", "))
    };
    let details_causes: Vec<Value> = causes
        .iter()
        .map(|(field, reason, text)| json!({"reason": reason, "message": text, "field": field}))
        .collect();
    Err(QueryError {
        code: 422,
        reason: "Invalid",
        message: format!("ListOptions.meta.k8s.io \"\" is invalid: {summary}"),
        details: json!({"group": "meta.k8s.io", "kind": "ListOptions", "causes": details_causes}),
    })
}

/// Upstream's field labels per kind, and how it words an unsupported one.
fn field_labels(kind: Kind) -> (&'static [&'static str], fn(&str) -> String) {
    fn unsupported(label: &str) -> String {
        format!("field label not supported: {label}")
    }
    fn default_meta(label: &str) -> String {
        format!(
            "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        )
    }
    fn slice(label: &str) -> String {
        format!("field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: {label}")
    }
    match kind {
        Kind::Pod => (
            &[
                "metadata.name",
                "metadata.namespace",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
            ],
            unsupported,
        ),
        Kind::Node => (&["metadata.name", "spec.unschedulable"], unsupported),
        Kind::Namespace => (&["status.phase", "metadata.name"], unsupported),
        Kind::Event => (
            &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
                "metadata.namespace",
                "metadata.name",
            ],
            unsupported,
        ),
        Kind::ResourceSlice => (&["metadata.name", "spec.nodeName", "spec.driver"], slice),
        _ => (&["metadata.name", "metadata.namespace"], default_meta),
    }
}

/// A field selector must parse and name only the kind's field labels (400 otherwise).
fn check_field_selector(kind: Kind, text: &str) -> Result<(), QueryError> {
    let selector = Selector::parse_fields(text).map_err(QueryError::bad_request)?;
    let (labels, message) = field_labels(kind);
    for requirement in &selector.requirements {
        let label = match requirement {
            Requirement::Equals(label, _) | Requirement::NotEquals(label, _) => label,
            _ => continue,
        };
        if !labels.contains(&label.as_str()) {
            return Err(QueryError::bad_request(message(label)));
        }
    }
    Ok(())
}

/// Storage's `DecodeContinue`: the start key (relative to the collection) of a continue token,
/// or the reason it is not one (`continue key is not valid...`).
pub fn decode_continue(token: &str) -> Result<String, String> {
    const GENERIC: &str = "continue key is not valid";
    let data = base64_raw_url(token)
        .map_err(|at| format!("{GENERIC}: illegal base64 data at input byte {at}"))?;
    let value: Value = serde_json::from_slice(&data).map_err(|err| format!("{GENERIC}: {err}"))?;
    let version = value.get("v").and_then(Value::as_str).unwrap_or_default();
    if version != "meta.k8s.io/v1" {
        return Err(format!(
            "{GENERIC}: server does not recognize this encoded version {version}"
        ));
    }
    if value.get("rv").and_then(Value::as_i64).unwrap_or(0) == 0 {
        return Err(format!(
            "{GENERIC}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ));
    }
    let start = value
        .get("start")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if start.is_empty() {
        return Err(format!(
            "{GENERIC}: encoded start key empty (version meta.k8s.io/v1)"
        ));
    }
    // No path traversal: the key, made absolute, must already be clean.
    let key = if start.starts_with('/') {
        start.to_string()
    } else {
        format!("/{start}")
    };
    if clean_path(&key) != key {
        return Err(format!("{GENERIC}: {start}"));
    }
    Ok(key[1..].to_string())
}

/// Go's `path.Clean` for an absolute path.
fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Unpadded URL-safe base64 (Go's `RawURLEncoding`); `Err(offset)` of the first bad byte as Go
/// reports it.
fn base64_raw_url(text: &str) -> Result<Vec<u8>, usize> {
    let bytes = text.as_bytes();
    let value = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => u32::from(b - b'A'),
            b'a'..=b'z' => u32::from(b - b'a') + 26,
            b'0'..=b'9' => u32::from(b - b'0') + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    let mut chunk_start = 0;
    while chunk_start < bytes.len() {
        let chunk = &bytes[chunk_start..(chunk_start + 4).min(bytes.len())];
        let mut acc = 0u32;
        for (i, &b) in chunk.iter().enumerate() {
            // Go skips newlines; tokens never hold them, so they are refused here.
            let v = value(b).ok_or(chunk_start + i)?;
            acc |= v << (18 - 6 * i);
        }
        match chunk.len() {
            4 => out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]),
            3 => out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8]),
            2 => out.push((acc >> 16) as u8),
            // One leftover character cannot encode a byte.
            _ => return Err(chunk_start),
        }
        chunk_start += 4;
    }
    Ok(out)
}

/// The media types of request bodies the server decodes for creates, updates and deletes.
pub const BODY_MEDIA_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// A create, update or delete body's `Content-Type` (none means JSON): 415 with upstream's
/// message when the server does not decode it.
pub fn check_body_type(content_type: &str) -> Result<(), QueryError> {
    let media_type = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if media_type.is_empty() || BODY_MEDIA_TYPES.contains(&media_type.as_str()) {
        return Ok(());
    }
    Err(QueryError {
        code: 415,
        reason: "UnsupportedMediaType",
        message: format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            BODY_MEDIA_TYPES.join(", ")
        ),
        details: Value::Null,
    })
}

/// The key of an object below the collection a list reads (upstream's key without the
/// resource prefix): `name` within one namespace or for cluster-scoped kinds, else
/// `namespace/name`.
pub fn relative_key(list_namespace: &str, namespace: &str, name: &str) -> String {
    if list_namespace.is_empty() && !namespace.is_empty() {
        format!("{namespace}/{name}")
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_list(params: &[(&str, &str)]) -> Result<ReadQuery, QueryError> {
        check_as(Verb::List, Kind::Pod, params)
    }

    fn check_as(verb: Verb, kind: Kind, params: &[(&str, &str)]) -> Result<ReadQuery, QueryError> {
        check(verb, kind, |key| {
            params
                .iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        })
    }

    fn token(json: &str) -> String {
        // Test helper: URL-safe base64 without padding.
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bytes = json.as_bytes();
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.len();
            let mut acc = 0u32;
            for (i, &b) in chunk.iter().enumerate() {
                acc |= u32::from(b) << (16 - 8 * i);
            }
            for i in 0..=n {
                out.push(ALPHABET[((acc >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn go_numbers_parse_as_strconv() {
        assert_eq!(go_parse_uint("42"), Ok(42));
        assert_eq!(
            go_parse_uint("+5").unwrap_err(),
            "strconv.ParseUint: parsing \"+5\": invalid syntax"
        );
        assert_eq!(
            go_parse_uint("99999999999999999999").unwrap_err(),
            "strconv.ParseUint: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(go_parse_int("-5"), Ok(-5));
        assert_eq!(go_parse_int("+5"), Ok(5));
        assert_eq!(
            go_parse_int("abc").unwrap_err(),
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
    }

    #[test]
    fn a_bad_resource_version_is_refused_as_upstream_refuses_it() {
        let err = check_list(&[("resourceVersion", "abc")]).unwrap_err();
        assert_eq!((err.code, err.reason), (422, "Invalid"));
        assert_eq!(
            err.message,
            "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
        );
        // Handed to etcd upstream (a limit with a resourceVersion): 400.
        let err = check_list(&[("resourceVersion", "abc"), ("limit", "5")]).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(
            err.message
                .starts_with("invalid resource version: resourceVersion: Invalid value")
        );
        assert_eq!(
            check_as(Verb::Get, Kind::Pod, &[("resourceVersion", "-1")])
                .unwrap_err()
                .code,
            422
        );
        assert_eq!(
            check_as(Verb::Watch, Kind::Pod, &[("resourceVersion", "x")])
                .unwrap_err()
                .code,
            422
        );
        assert!(check_list(&[("resourceVersion", "0")]).is_ok());
        assert!(check_list(&[("resourceVersion", "17")]).is_ok());
    }

    /// client-go 1.36's WatchList request (kube-scheduler's informers send it) is served; the
    /// combinations upstream refuses are refused with its messages.
    #[test]
    fn watch_list_requests_validate_as_upstream() {
        let watch_list = [
            ("allowWatchBookmarks", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("sendInitialEvents", "true"),
            ("timeoutSeconds", "302"),
        ];
        assert!(check_as(Verb::Watch, Kind::Pod, &watch_list).is_ok());
        let err = check_as(Verb::Watch, Kind::Pod, &[("sendInitialEvents", "true")]).unwrap_err();
        assert_eq!(
            err.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        );
        let err = check_as(
            Verb::Watch,
            Kind::Pod,
            &[("resourceVersionMatch", "NotOlderThan")],
        )
        .unwrap_err();
        assert!(err.message.ends_with(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
        ));
        let err = check_list(&[("sendInitialEvents", "true")]).unwrap_err();
        assert_eq!(
            err.message,
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"
        );
        assert_eq!(err.details["causes"][0]["field"], "sendInitialEvents");
    }

    #[test]
    fn limits_parse_as_int64_and_a_negative_one_means_none() {
        let err = check_list(&[("limit", "abc")]).unwrap_err();
        assert_eq!((err.code, err.reason), (400, "BadRequest"));
        assert_eq!(
            err.message,
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert_eq!(check_list(&[("limit", "-5")]).map(|q| q.limit), Ok(-5));
        assert_eq!(
            check_list(&[("timeoutSeconds", "soon")]).unwrap_err().code,
            400
        );
    }

    #[test]
    fn resource_version_match_is_validated_as_list_options() {
        let err = check_list(&[("resourceVersionMatch", "Exact")]).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        let err = check_list(&[("resourceVersion", "1"), ("resourceVersionMatch", "Newest")])
            .unwrap_err();
        assert!(
            err.message.contains("Unsupported value: \"Newest\""),
            "{}",
            err.message
        );
        assert!(
            check_list(&[
                ("resourceVersion", "1"),
                ("resourceVersionMatch", "NotOlderThan")
            ])
            .is_ok()
        );
    }

    #[test]
    fn continue_tokens_are_decoded_as_storage_decodes_them() {
        let err = check_list(&[("continue", "garbage!")]).unwrap_err();
        assert_eq!((err.code, err.reason), (400, "BadRequest"));
        assert_eq!(
            err.message,
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 7"
        );
        let no_rv = token(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#);
        assert!(
            check_list(&[("continue", &no_rv)])
                .unwrap_err()
                .message
                .ends_with("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        );
        let traversal = token(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../../etc"}"#);
        assert_eq!(
            check_list(&[("continue", &traversal)]).unwrap_err().message,
            "invalid continue token: continue key is not valid: ../../etc"
        );
        let good = token("{\"v\":\"meta.k8s.io/v1\",\"rv\":3,\"start\":\"default/pod-b\\u0000\"}");
        assert_eq!(
            check_list(&[("continue", &good)]).map(|q| q.continue_from),
            Ok(Some("default/pod-b\u{0}".to_string()))
        );
        assert_eq!(
            check_list(&[("continue", &good), ("resourceVersion", "3")])
                .unwrap_err()
                .message,
            "specifying resource version is not allowed when using continue"
        );
    }

    #[test]
    fn bodies_must_be_json_yaml_or_protobuf() {
        for ok in [
            "",
            "application/json",
            "application/json; charset=utf-8",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ] {
            assert_eq!(check_body_type(ok), Ok(()), "{ok}");
        }
        for refused in ["text/plain", "application/cbor", "application/xml"] {
            let err = check_body_type(refused).unwrap_err();
            assert_eq!((err.code, err.reason), (415, "UnsupportedMediaType"));
            assert_eq!(
                err.message,
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            );
        }
    }

    #[test]
    fn field_selectors_name_only_the_kind_s_labels() {
        let err = check_list(&[("fieldSelector", "metadata.foo===x")]).unwrap_err();
        assert_eq!((err.code, err.reason), (400, "BadRequest"));
        assert_eq!(err.message, "field label not supported: metadata.foo");
        assert!(check_list(&[("fieldSelector", "spec.nodeName=n1,status.phase!=Running")]).is_ok());
        let claim = check_as(
            Verb::List,
            Kind::ResourceClaim,
            &[("fieldSelector", "spec.devices=x")],
        )
        .unwrap_err();
        assert_eq!(
            claim.message,
            "\"spec.devices\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let slice = check_as(
            Verb::List,
            Kind::ResourceSlice,
            &[("fieldSelector", "spec.pool=x")],
        )
        .unwrap_err();
        assert_eq!(
            slice.message,
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool"
        );
        assert!(
            check_as(
                Verb::List,
                Kind::ResourceSlice,
                &[("fieldSelector", "spec.driver=d")]
            )
            .is_ok()
        );
    }
}
