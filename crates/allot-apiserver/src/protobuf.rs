//! Just enough of Kubernetes' protobuf encoding to read the bodies kubectl's typed clients send
//! for the kinds it has `kubectl create <kind>` generators for (today: Namespace).
//!
//! The envelope is the magic `k8s\0` followed by a `runtime.Unknown` message whose `raw` field
//! holds the object. Only string-valued metadata (name, generateName, labels, annotations,
//! finalizers) and `spec.finalizers` are read; anything else is refused, so nothing is dropped
//! silently.

use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

/// One field of a protobuf message: number and payload (length-delimited bytes or a varint).
enum Field<'a> {
    Bytes(u32, &'a [u8]),
    Varint(u32),
}

fn varint(data: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint too long".into())
}

fn fields(data: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let tag = varint(data, &mut pos)?;
        let number = u32::try_from(tag >> 3).map_err(|_| "field number too large")?;
        match tag & 7 {
            0 => {
                varint(data, &mut pos)?;
                out.push(Field::Varint(number));
            }
            2 => {
                let len =
                    usize::try_from(varint(data, &mut pos)?).map_err(|_| "length too large")?;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= data.len())
                    .ok_or("truncated field")?;
                out.push(Field::Bytes(number, &data[pos..end]));
                pos = end;
            }
            other => return Err(format!("unsupported wire type {other}")),
        }
    }
    Ok(out)
}

fn string(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a string field is not UTF-8".to_string())
}

fn map_entry(bytes: &[u8]) -> Result<(String, String), String> {
    let (mut key, mut value) = (String::new(), String::new());
    for field in fields(bytes)? {
        match field {
            Field::Bytes(1, b) => key = string(b)?,
            Field::Bytes(2, b) => value = string(b)?,
            _ => return Err("unexpected field in a map entry".into()),
        }
    }
    Ok((key, value))
}

fn object_meta(bytes: &[u8]) -> Result<Value, String> {
    let mut meta = Map::new();
    let mut labels = Map::new();
    let mut annotations = Map::new();
    let mut finalizers = Vec::new();
    for field in fields(bytes)? {
        match field {
            Field::Bytes(1, b) => {
                meta.insert("name".into(), Value::String(string(b)?));
            }
            Field::Bytes(2, b) => {
                meta.insert("generateName".into(), Value::String(string(b)?));
            }
            Field::Bytes(3, b) => {
                meta.insert("namespace".into(), Value::String(string(b)?));
            }
            Field::Bytes(11, b) => {
                let (k, v) = map_entry(b)?;
                labels.insert(k, Value::String(v));
            }
            Field::Bytes(12, b) => {
                let (k, v) = map_entry(b)?;
                annotations.insert(k, Value::String(v));
            }
            Field::Bytes(14, b) => finalizers.push(Value::String(string(b)?)),
            // Server-managed fields (selfLink, uid, resourceVersion, timestamps, counters,
            // managedFields) are ignored as the JSON path ignores them; Go's encoder writes
            // every string field, so empty ones are skipped too.
            Field::Bytes(4 | 5 | 6 | 8 | 9 | 17, _) | Field::Varint(7 | 10) => {}
            Field::Bytes(_, []) => {}
            Field::Bytes(n, _) | Field::Varint(n) => {
                return Err(format!("unsupported metadata field {n}"));
            }
        }
    }
    if !labels.is_empty() {
        meta.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
    if !finalizers.is_empty() {
        meta.insert("finalizers".into(), Value::Array(finalizers));
    }
    Ok(Value::Object(meta))
}

/// The string fields of a message by number (repeated ones collected), refusing other fields.
fn strings_of(bytes: &[u8], what: &str, known: &[u32]) -> Result<Vec<(u32, String)>, String> {
    let mut out = Vec::new();
    for field in fields(bytes)? {
        match field {
            Field::Bytes(n, b) if known.contains(&n) => out.push((n, string(b)?)),
            Field::Bytes(n, _) | Field::Varint(n) => {
                return Err(format!("unsupported {what} field {n}"));
            }
        }
    }
    Ok(out)
}

/// `rbac.authorization.k8s.io/v1` Role, ClusterRole (rules: verbs 1, apiGroups 2, resources 3,
/// resourceNames 4, nonResourceURLs 5), RoleBinding and ClusterRoleBinding (subjects: kind 1,
/// apiGroup 2, name 3, namespace 4; roleRef: apiGroup 1, kind 2, name 3), as
/// `kubectl create role|clusterrole|rolebinding|clusterrolebinding` send them.
fn rbac_object(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, String> {
    let mut object = json!({"apiVersion": api_version, "kind": kind});
    let binding = kind.ends_with("Binding");
    let mut rules = Vec::new();
    let mut subjects = Vec::new();
    for field in fields(raw)? {
        match field {
            Field::Bytes(1, b) => object["metadata"] = object_meta(b)?,
            Field::Bytes(2, b) if !binding => {
                let mut rule = Map::new();
                for (n, value) in strings_of(b, "PolicyRule", &[1, 2, 3, 4, 5])? {
                    let name = [
                        "verbs",
                        "apiGroups",
                        "resources",
                        "resourceNames",
                        "nonResourceURLs",
                    ][(n - 1) as usize];
                    if let Value::Array(items) =
                        rule.entry(name).or_insert_with(|| Value::Array(Vec::new()))
                    {
                        items.push(Value::String(value));
                    }
                }
                rules.push(Value::Object(rule));
            }
            Field::Bytes(2, b) => {
                let mut subject = Map::new();
                for (n, value) in strings_of(b, "Subject", &[1, 2, 3, 4])? {
                    if !value.is_empty() {
                        let name = ["kind", "apiGroup", "name", "namespace"][(n - 1) as usize];
                        subject.insert(name.into(), Value::String(value));
                    }
                }
                subjects.push(Value::Object(subject));
            }
            Field::Bytes(3, b) if binding => {
                let mut role_ref = Map::new();
                for (n, value) in strings_of(b, "RoleRef", &[1, 2, 3])? {
                    let name = ["apiGroup", "kind", "name"][(n - 1) as usize];
                    role_ref.insert(name.into(), Value::String(value));
                }
                object["roleRef"] = Value::Object(role_ref);
            }
            Field::Bytes(n, _) | Field::Varint(n) => {
                return Err(format!("unsupported {kind} field {n}"));
            }
        }
    }
    if binding {
        if !subjects.is_empty() {
            object["subjects"] = Value::Array(subjects);
        }
    } else {
        object["rules"] = Value::Array(rules);
    }
    Ok(object)
}

/// `authorization.k8s.io/v1` SelfSubjectAccessReview, as `kubectl auth can-i` sends it: spec
/// (2) with resourceAttributes (1: namespace 1, verb 2, group 3, version 4, resource 5,
/// subresource 6, name 7; the selectors 8 and 9 only narrow a request and are not read) or
/// nonResourceAttributes (2: path 1, verb 2).
fn self_subject_access_review(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, String> {
    let mut object = json!({"apiVersion": api_version, "kind": kind, "spec": {}});
    for field in fields(raw)? {
        match field {
            Field::Bytes(1, b) => object["metadata"] = object_meta(b)?,
            Field::Bytes(2, spec) => {
                for f in fields(spec)? {
                    let (name, names, data): (&str, &[&str], &[u8]) = match f {
                        Field::Bytes(1, d) => (
                            "resourceAttributes",
                            &[
                                "namespace",
                                "verb",
                                "group",
                                "version",
                                "resource",
                                "subresource",
                                "name",
                            ],
                            d,
                        ),
                        Field::Bytes(2, d) => ("nonResourceAttributes", &["path", "verb"], d),
                        Field::Bytes(n, _) | Field::Varint(n) => {
                            return Err(format!(
                                "unsupported SelfSubjectAccessReviewSpec field {n}"
                            ));
                        }
                    };
                    let mut attributes = Map::new();
                    for g in fields(data)? {
                        match g {
                            Field::Bytes(n, b) if (1..=names.len()).contains(&(n as usize)) => {
                                attributes.insert(
                                    names[n as usize - 1].into(),
                                    Value::String(string(b)?),
                                );
                            }
                            Field::Bytes(8 | 9, _) if name == "resourceAttributes" => {}
                            Field::Bytes(n, _) | Field::Varint(n) => {
                                return Err(format!("unsupported {name} field {n}"));
                            }
                        }
                    }
                    object["spec"][name] = Value::Object(attributes);
                }
            }
            Field::Bytes(3, _) => {}
            Field::Bytes(n, _) | Field::Varint(n) => {
                return Err(format!("unsupported {kind} field {n}"));
            }
        }
    }
    Ok(object)
}

/// `authorization.k8s.io/v1` SelfSubjectRulesReview, as `kubectl auth can-i --list` sends it:
/// metadata (1), spec (2: namespace 1), status (3, ignored as upstream ignores it on create).
fn self_subject_rules_review(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, String> {
    let mut object = json!({"apiVersion": api_version, "kind": kind, "spec": {}});
    for field in fields(raw)? {
        match field {
            Field::Bytes(1, b) => object["metadata"] = object_meta(b)?,
            Field::Bytes(2, spec) => {
                for f in fields(spec)? {
                    match f {
                        Field::Bytes(1, b) => {
                            object["spec"]["namespace"] = Value::String(string(b)?)
                        }
                        Field::Bytes(n, _) | Field::Varint(n) => {
                            return Err(format!(
                                "unsupported SelfSubjectRulesReviewSpec field {n}"
                            ));
                        }
                    }
                }
            }
            Field::Bytes(3, _) => {}
            Field::Bytes(n, _) | Field::Varint(n) => {
                return Err(format!("unsupported {kind} field {n}"));
            }
        }
    }
    Ok(object)
}

/// `authentication.k8s.io/v1` SelfSubjectReview, as `kubectl auth whoami` sends it: metadata
/// (1) and status (2, ignored: the server fills it in).
fn self_subject_review(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, String> {
    let mut object = json!({"apiVersion": api_version, "kind": kind});
    for field in fields(raw)? {
        match field {
            Field::Bytes(1, b) => object["metadata"] = object_meta(b)?,
            Field::Bytes(2, _) => {}
            Field::Bytes(n, _) | Field::Varint(n) => {
                return Err(format!("unsupported {kind} field {n}"));
            }
        }
    }
    Ok(object)
}

/// Decodes a protobuf body into the JSON object it stands for.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf envelope")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), None);
    for field in fields(envelope)? {
        match field {
            Field::Bytes(1, type_meta) => {
                for f in fields(type_meta)? {
                    match f {
                        Field::Bytes(1, b) => api_version = string(b)?,
                        Field::Bytes(2, b) => kind = string(b)?,
                        _ => {}
                    }
                }
            }
            Field::Bytes(2, b) => raw = Some(b),
            _ => {}
        }
    }
    let raw = raw.ok_or("the envelope holds no object")?;
    if api_version == "rbac.authorization.k8s.io/v1"
        && matches!(
            kind.as_str(),
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
        )
    {
        return rbac_object(&api_version, &kind, raw);
    }
    if (api_version.as_str(), kind.as_str())
        == ("authorization.k8s.io/v1", "SelfSubjectAccessReview")
    {
        return self_subject_access_review(&api_version, &kind, raw);
    }
    if (api_version.as_str(), kind.as_str())
        == ("authorization.k8s.io/v1", "SelfSubjectRulesReview")
    {
        return self_subject_rules_review(&api_version, &kind, raw);
    }
    if (api_version.as_str(), kind.as_str()) == ("authentication.k8s.io/v1", "SelfSubjectReview") {
        return self_subject_review(&api_version, &kind, raw);
    }
    if (api_version.as_str(), kind.as_str()) != ("v1", "Namespace") {
        return Err(format!(
            "protobuf bodies of {api_version} {kind} are not supported; send JSON"
        ));
    }
    let mut object = json!({"apiVersion": api_version, "kind": kind});
    for field in fields(raw)? {
        match field {
            Field::Bytes(1, b) => object["metadata"] = object_meta(b)?,
            Field::Bytes(2, b) => {
                let mut finalizers = Vec::new();
                for f in fields(b)? {
                    match f {
                        Field::Bytes(1, s) => finalizers.push(Value::String(string(s)?)),
                        _ => return Err("unsupported NamespaceSpec field".into()),
                    }
                }
                if !finalizers.is_empty() {
                    object["spec"] = json!({"finalizers": finalizers});
                }
            }
            Field::Bytes(3, _) => {}
            _ => return Err("unsupported Namespace field".into()),
        }
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_field(number: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![
            (number << 3) | 2,
            u8::try_from(payload.len()).expect("short"),
        ];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn decodes_a_namespace_envelope() {
        let mut label = bytes_field(1, b"team");
        label.extend(bytes_field(2, b"cats"));
        let mut meta = bytes_field(1, b"ns1");
        meta.extend(bytes_field(11, &label));
        let raw = bytes_field(1, &meta);
        let mut type_meta = bytes_field(1, b"v1");
        type_meta.extend(bytes_field(2, b"Namespace"));
        let mut body = MAGIC.to_vec();
        body.extend(bytes_field(1, &type_meta));
        body.extend(bytes_field(2, &raw));
        let object = decode(&body).expect("decodes");
        assert_eq!(
            object,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1", "labels": {"team": "cats"}}})
        );
    }

    #[test]
    fn decodes_rbac_objects() {
        let envelope = |kind: &str, raw: Vec<u8>| {
            let mut type_meta = bytes_field(1, b"rbac.authorization.k8s.io/v1");
            type_meta.extend(bytes_field(2, kind.as_bytes()));
            let mut body = MAGIC.to_vec();
            body.extend(bytes_field(1, &type_meta));
            body.extend(bytes_field(2, &raw));
            body
        };
        let meta = bytes_field(1, &bytes_field(1, b"pod-reader"));
        let mut rule = bytes_field(1, b"get");
        rule.extend(bytes_field(1, b"list"));
        rule.extend(bytes_field(2, b""));
        rule.extend(bytes_field(3, b"pods"));
        let mut raw = meta.clone();
        raw.extend(bytes_field(2, &rule));
        assert_eq!(
            decode(&envelope("ClusterRole", raw)).expect("decodes"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "pod-reader"},
                   "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]})
        );
        let mut subject = bytes_field(1, b"User");
        subject.extend(bytes_field(2, b"rbac.authorization.k8s.io"));
        subject.extend(bytes_field(3, b"bob"));
        subject.extend(bytes_field(4, b""));
        let mut role_ref = bytes_field(1, b"rbac.authorization.k8s.io");
        role_ref.extend(bytes_field(2, b"ClusterRole"));
        role_ref.extend(bytes_field(3, b"pod-reader"));
        let mut raw = meta;
        raw.extend(bytes_field(2, &subject));
        raw.extend(bytes_field(3, &role_ref));
        assert_eq!(
            decode(&envelope("RoleBinding", raw.clone())).expect("decodes"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "pod-reader"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"}})
        );
        // An aggregation rule (field 3 of a ClusterRole) is refused, not dropped.
        let mut raw = bytes_field(1, &bytes_field(1, b"agg"));
        raw.extend(bytes_field(3, b"x"));
        assert!(decode(&envelope("ClusterRole", raw)).is_err());
    }

    #[test]
    fn decodes_a_self_subject_access_review() {
        let mut type_meta = bytes_field(1, b"authorization.k8s.io/v1");
        type_meta.extend(bytes_field(2, b"SelfSubjectAccessReview"));
        let mut attributes = bytes_field(1, b"team");
        attributes.extend(bytes_field(2, b"list"));
        attributes.extend(bytes_field(3, b"resource.k8s.io"));
        attributes.extend(bytes_field(5, b"resourceclaims"));
        let spec = bytes_field(1, &attributes);
        let mut body = MAGIC.to_vec();
        body.extend(bytes_field(1, &type_meta));
        body.extend(bytes_field(2, &bytes_field(2, &spec)));
        assert_eq!(
            decode(&body).expect("decodes"),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": {"resourceAttributes": {"namespace": "team", "verb": "list",
                            "group": "resource.k8s.io", "resource": "resourceclaims"}}})
        );
    }

    #[test]
    fn decodes_a_self_subject_rules_review() {
        let mut type_meta = bytes_field(1, b"authorization.k8s.io/v1");
        type_meta.extend(bytes_field(2, b"SelfSubjectRulesReview"));
        let spec = bytes_field(1, b"team-a");
        let raw = [
            bytes_field(1, &[]),
            bytes_field(2, &spec),
            bytes_field(3, &[]),
        ]
        .concat();
        let mut body = MAGIC.to_vec();
        body.extend(bytes_field(1, &type_meta));
        body.extend(bytes_field(2, &raw));
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                   "metadata": {}, "spec": {"namespace": "team-a"}})
        );
    }

    #[test]
    fn decodes_a_self_subject_review() {
        let mut type_meta = bytes_field(1, b"authentication.k8s.io/v1");
        type_meta.extend(bytes_field(2, b"SelfSubjectReview"));
        let raw = [bytes_field(1, &[]), bytes_field(2, &[])].concat();
        let mut body = MAGIC.to_vec();
        body.extend(bytes_field(1, &type_meta));
        body.extend(bytes_field(2, &raw));
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {}})
        );
    }

    #[test]
    fn refuses_garbage_without_panicking() {
        for body in [
            &b""[..],
            b"k8s\0",
            b"k8s\0\x0a\xff\xff\xff",
            b"k8s\0\x12\x05abc",
            b"{}",
        ] {
            assert!(decode(body).is_err(), "{body:?}");
        }
    }
}
