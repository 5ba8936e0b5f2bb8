//! Content negotiation as kube-apiserver does it: the `Accept` header's clauses in order of
//! quality (then specificity), each matched against the media types the resource is served in
//! (JSON, YAML, and protobuf for the built-in kinds), with the `as`/`g`/`v` parameters that ask
//! for a Table or object metadata instead of the object; 406 when no clause can be served.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// How a response body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// What the response holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The object (or list) itself.
    Object,
    /// A `meta.k8s.io` Table (`as=Table`), always written as JSON.
    Table,
    /// `meta.k8s.io/v1` PartialObjectMetadata(List) (`as=PartialObjectMetadata[List]`).
    Metadata,
}

/// The outcome of negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Media {
    /// The body's format.
    pub format: Format,
    /// The body's shape.
    pub shape: Shape,
}

impl Media {
    /// JSON objects: what a request without `Accept` gets.
    pub const JSON: Media = Media {
        format: Format::Json,
        shape: Shape::Object,
    };
}

/// One clause of an `Accept` header.
struct Clause<'a> {
    kind: &'a str,
    subtype: &'a str,
    q: f32,
    params: Vec<(&'a str, &'a str)>,
}

fn parse(accept: &str) -> Vec<Clause<'_>> {
    let mut clauses = Vec::new();
    for part in accept.split(',') {
        let mut pieces = part.split(';');
        let media = pieces.next().unwrap_or_default().trim_matches(' ');
        let (kind, subtype) = match media.split_once('/') {
            Some((k, s)) if !s.contains('/') => (k.trim_matches(' '), s.trim_matches(' ')),
            None if media == "*" => ("*", "*"),
            _ => continue,
        };
        let mut clause = Clause {
            kind,
            subtype,
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            if value.contains('=') {
                continue;
            }
            let key = key.trim_matches(' ');
            if key == "q" {
                clause.q = value.trim().parse().unwrap_or(0.0);
            } else {
                clause.params.push((key, value.trim_matches(' ')));
            }
        }
        clauses.push(clause);
    }
    // Higher quality first, then concrete types before wildcards (stable otherwise).
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| (a.kind == "*").cmp(&(b.kind == "*")))
            .then_with(|| (a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
}

/// The media types served for a resource, in the server's order of preference.
fn served(protobuf: bool) -> &'static [(&'static str, &'static str, Format)] {
    const ALL: &[(&str, &str, Format)] = &[
        ("application", "json", Format::Json),
        ("application", "yaml", Format::Yaml),
        ("application", "vnd.kubernetes.protobuf", Format::Protobuf),
    ];
    if protobuf { ALL } else { &ALL[..2] }
}

/// The accepted media types, as the 406 message lists them.
pub fn accepted(protobuf: bool, stream: bool) -> String {
    served(protobuf)
        .iter()
        .filter(|(_, _, format)| !stream || *format != Format::Yaml)
        .map(|(k, s, _)| {
            if stream {
                format!("{k}/{s};stream=watch")
            } else {
                format!("{k}/{s}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Negotiates the response for an `Accept` header: `protobuf` says whether the resource has a
/// protobuf form, `stream` whether the response is a watch. The error is the 406 answer.
pub fn negotiate(accept: &str, protobuf: bool, stream: bool) -> Result<Media, Box<Response>> {
    if accept.trim().is_empty() {
        return Ok(Media::JSON);
    }
    for clause in parse(accept) {
        for (kind, subtype, format) in served(protobuf) {
            let matches = (clause.kind == *kind
                && (clause.subtype == *subtype || clause.subtype == "*"))
                || (clause.kind == "*" && clause.subtype == "*");
            if !matches || (stream && *format == Format::Yaml) {
                continue;
            }
            if let Some(shape) = shape(&clause, *format, stream) {
                return Ok(Media {
                    format: *format,
                    shape,
                });
            }
        }
    }
    Err(Box::new(not_acceptable(protobuf, stream)))
}

/// What a clause's parameters ask for, or `None` when this server cannot give it in `format`.
fn shape(clause: &Clause<'_>, format: Format, stream: bool) -> Option<Shape> {
    let (mut as_, mut group, mut version) = ("", "", "");
    for (key, value) in &clause.params {
        match *key {
            "as" => as_ = value,
            "g" => group = value,
            "v" => version = value,
            "stream" if !value.is_empty() && (*value != "watch" || !stream) => return None,
            // A server version (`sv`) is not something this server offers.
            "sv" if !value.is_empty() => return None,
            _ => {}
        }
    }
    match (as_, group, version) {
        ("", "", "") => Some(Shape::Object),
        // Tables stay JSON.
        ("Table", "meta.k8s.io", "v1" | "v1beta1") if format == Format::Json => Some(Shape::Table),
        ("PartialObjectMetadata" | "PartialObjectMetadataList", "meta.k8s.io", "v1")
            if format != Format::Yaml =>
        {
            Some(Shape::Metadata)
        }
        _ => None,
    }
}

/// kube-apiserver's 406.
pub fn not_acceptable(protobuf: bool, stream: bool) -> Response {
    let message = format!(
        "only the following media types are accepted: {}",
        accepted(protobuf, stream)
    );
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": "NotAcceptable", "code": 406});
    (
        StatusCode::NOT_ACCEPTABLE,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&status).unwrap_or_default(),
    )
        .into_response()
}

/// The content type of a response body.
pub fn content_type(format: Format, stream: bool) -> &'static str {
    match (format, stream) {
        (Format::Json, false) => "application/json",
        (Format::Json, true) => "application/json;stream=watch",
        (Format::Yaml, _) => "application/yaml",
        (Format::Protobuf, false) => allot_protobuf::MEDIA_TYPE,
        (Format::Protobuf, true) => allot_protobuf::WATCH_MEDIA_TYPE,
    }
}

/// Whether an object holds one of allot's alpha fields that upstream's protobuf schema has no
/// field for yet (`derivedAttributes` of claim requests, `compatibilityGroups` of counter
/// consumptions, a DeviceTaintRule's class and CEL selectors): such an object is only sent
/// as JSON. The protobuf crate's example round trip names the same fields.
pub fn wire_lacks_fields(object: &allot_store::Stored) -> bool {
    use allot_api::resource::v1::{DeviceRequest, ResourceClaimSpec};
    use allot_store::Stored;
    let request = |r: &DeviceRequest| {
        r.exactly
            .as_ref()
            .is_some_and(|e| !e.derived_attributes.is_empty())
            || r.first_available
                .iter()
                .any(|s| !s.derived_attributes.is_empty())
    };
    let claim = |spec: &ResourceClaimSpec| spec.devices.requests.iter().any(request);
    match object {
        Stored::ResourceClaim(c) => claim(&c.spec),
        Stored::ResourceClaimTemplate(t) => claim(&t.spec.spec),
        Stored::ResourceSlice(s) => s.spec.devices.iter().any(|d| {
            d.consumes_counters
                .iter()
                .any(|c| !c.compatibility_groups.is_empty())
        }),
        Stored::DeviceTaintRule(r) => r
            .spec
            .device_selector
            .as_ref()
            .is_some_and(|s| s.device_class_name.is_some() || !s.selectors.is_empty()),
        _ => false,
    }
}

/// An object or list as `meta.k8s.io/v1` PartialObjectMetadata(List).
pub fn metadata_only(value: &Value) -> Value {
    let item = |v: &Value| {
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
               "metadata": v.get("metadata").cloned().unwrap_or_else(|| json!({}))})
    };
    match value.get("items").and_then(Value::as_array) {
        Some(items) => json!({
            "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
            "metadata": value.get("metadata").cloned().unwrap_or_else(|| json!({})),
            "items": items.iter().map(item).collect::<Vec<_>>(),
        }),
        None => item(value),
    }
}

/// The protobuf body of one object encoded from the typed object, without the
/// `serde_json::Value` that [`body`] encodes: when protobuf objects are negotiated, the object
/// is served as stored (`info` is its storage version, so no version conversion and no
/// events.k8s.io view), and the wire format carries all its fields. The bytes are those
/// [`body`] writes for the rendered value (`typed_and_value_bodies_agree`); `None` leaves the
/// object to the `Value` path (which also answers in JSON what protobuf cannot carry).
pub fn typed_body(
    media: Media,
    info: &crate::resources::ResourceInfo,
    object: &allot_store::Stored,
) -> Option<Vec<u8>> {
    if media.format != Format::Protobuf || media.shape != Shape::Object {
        return None;
    }
    let kind = object.kind();
    let api_version = kind.api_version();
    if info.kind != kind || info.group_version() != api_version {
        return None;
    }
    allot_protobuf::encode(api_version, kind.name(), object).ok()
}

/// [`typed_body`] for a list (one page, at `resource_version`, holding `objects`): the
/// `XList` message written from the typed objects, as [`body`] writes it for the rendered list.
pub fn typed_list_body(
    media: Media,
    info: &crate::resources::ResourceInfo,
    resource_version: &str,
    objects: &[allot_store::Stored],
) -> Option<Vec<u8>> {
    if media.format != Format::Protobuf || media.shape != Shape::Object {
        return None;
    }
    let api_version = info.kind.api_version();
    if info.group_version() != api_version || objects.iter().any(|o| o.kind() != info.kind) {
        return None;
    }
    let meta = allot_protobuf::ListMeta {
        resource_version: resource_version.to_string(),
        ..Default::default()
    };
    let kind = format!("{}List", info.kind.name());
    allot_protobuf::encode_list(api_version, &kind, &meta, objects).ok()
}

/// Writes a response body: protobuf when negotiated and the value has a protobuf form, else
/// JSON (a value holding a field the wire format lacks is answered in JSON, which every
/// protobuf client also accepts).
pub fn body(media: Media, value: &Value) -> (&'static str, Vec<u8>) {
    if media.format == Format::Protobuf && media.shape != Shape::Table {
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match allot_protobuf::encode(api_version, kind, value) {
            Ok(bytes) => return (allot_protobuf::MEDIA_TYPE, bytes),
            Err(err) => tracing::debug!("{api_version} {kind} answered in JSON: {err}"),
        }
    }
    if media.format == Format::Yaml
        && let Ok(text) = serde_saphyr::to_string(value)
    {
        return ("application/yaml", text.into_bytes());
    }
    (
        "application/json",
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(accept: &str, protobuf: bool) -> Option<(Format, Shape)> {
        negotiate(accept, protobuf, false)
            .ok()
            .map(|m| (m.format, m.shape))
    }

    #[test]
    fn clients_get_what_they_ask_for() {
        use Format::*;
        use Shape::*;
        // client-go's default for built-in kinds.
        assert_eq!(
            check("application/vnd.kubernetes.protobuf, */*", true),
            Some((Protobuf, Object))
        );
        // The same for a kind without a protobuf form (as for custom resources).
        assert_eq!(
            check("application/vnd.kubernetes.protobuf, */*", false),
            Some((Json, Object))
        );
        assert_eq!(check("", true), Some((Json, Object)));
        assert_eq!(check("*/*", true), Some((Json, Object)));
        assert_eq!(check("application/yaml", true), Some((Yaml, Object)));
        // Quality values reorder the clauses.
        assert_eq!(
            check(
                "application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9",
                true
            ),
            Some((Protobuf, Object))
        );
        // kubectl get: a Table, in JSON.
        assert_eq!(
            check(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
                true
            ),
            Some((Json, Table))
        );
        // A Table in protobuf stays JSON: the next clause is served.
        assert_eq!(
            check(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json",
                true
            ),
            Some((Json, Object))
        );
        // The metadata client.
        assert_eq!(
            check(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
                true
            ),
            Some((Protobuf, Metadata))
        );
        // Conversions this server does not offer are skipped.
        assert_eq!(
            check("application/json;as=Scale;g=autoscaling;v=v1", true),
            None
        );
        assert_eq!(check("application/cbor", true), None);
        assert_eq!(check("text/html", true), None);
    }

    #[test]
    fn watches_negotiate_stream_types() {
        let media = negotiate(
            "application/vnd.kubernetes.protobuf, application/json",
            true,
            true,
        )
        .expect("served");
        assert_eq!(media.format, Format::Protobuf);
        assert_eq!(
            content_type(media.format, true),
            "application/vnd.kubernetes.protobuf;stream=watch"
        );
        assert!(negotiate("application/yaml", true, true).is_err());
    }

    #[test]
    fn the_406_lists_what_is_served() {
        assert_eq!(
            accepted(true, false),
            "application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        assert_eq!(accepted(false, false), "application/json, application/yaml");
        assert_eq!(
            accepted(true, true),
            "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
    }
}
