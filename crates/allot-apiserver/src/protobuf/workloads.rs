//! The workload objects kubectl's generators send as protobuf: `apps/v1` Deployment
//! (`kubectl create deployment`) and `batch/v1` Job (`kubectl create job`), with the pod
//! template those generators fill in (labels, containers with name, image, command, args,
//! working directory, ports, image pull policy; the restart policy). Go's encoder writes every
//! non-pointer field, so empty strings, zero numbers and empty messages are skipped; a field
//! with a value that is not read is refused (nothing is dropped silently). Status is ignored,
//! as a create ignores it.

use serde_json::{Map, Value, json};

use super::{Field, fields, map_entry, object_meta, string};

/// A message with nothing in it: every field empty or zero (Go writes the zero values).
fn empty(bytes: &[u8]) -> Result<bool, String> {
    Ok(fields(bytes)?.iter().all(|f| match f {
        Field::Bytes(_, b) => b.is_empty() || empty(b).unwrap_or(false),
        Field::Varint(_, v) => *v == 0,
    }))
}

/// Refuses a field that is not read unless it holds nothing.
fn skip_empty(what: &str, field: &Field<'_>) -> Result<(), String> {
    let zero = match field {
        Field::Bytes(_, b) => b.is_empty() || empty(b)?,
        Field::Varint(_, v) => *v == 0,
    };
    if zero {
        return Ok(());
    }
    let (Field::Bytes(n, _) | Field::Varint(n, _)) = field;
    Err(format!("unsupported {what} field {n}"))
}

/// Inserts a string field unless it is empty (Go's zero value).
fn put_string(object: &mut Map<String, Value>, name: &str, bytes: &[u8]) -> Result<(), String> {
    let value = string(bytes)?;
    if !value.is_empty() {
        object.insert(name.into(), Value::String(value));
    }
    Ok(())
}

fn push_string(object: &mut Map<String, Value>, name: &str, bytes: &[u8]) -> Result<(), String> {
    let value = Value::String(string(bytes)?);
    if let Value::Array(items) = object
        .entry(name)
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        items.push(value);
    }
    Ok(())
}

fn int(value: u64) -> Value {
    // int32 fields: negative values arrive as ten-byte two's complement.
    Value::from(value as i64 as i32)
}

/// core/v1 ContainerPort: name 1, hostPort 2, containerPort 3, protocol 4, hostIP 5.
fn container_port(bytes: &[u8]) -> Result<Value, String> {
    let mut port = Map::new();
    for field in fields(bytes)? {
        match field {
            Field::Bytes(1, b) => put_string(&mut port, "name", b)?,
            Field::Varint(2, v) if v != 0 => {
                port.insert("hostPort".into(), int(v));
            }
            Field::Varint(3, v) => {
                port.insert("containerPort".into(), int(v));
            }
            Field::Bytes(4, b) => put_string(&mut port, "protocol", b)?,
            Field::Bytes(5, b) => put_string(&mut port, "hostIP", b)?,
            other => skip_empty("ContainerPort", &other)?,
        }
    }
    Ok(Value::Object(port))
}

/// core/v1 Container: name 1, image 2, command 3, args 4, workingDir 5, ports 6,
/// terminationMessagePath 13, imagePullPolicy 14, terminationMessagePolicy 20.
fn container(bytes: &[u8]) -> Result<Value, String> {
    let mut c = Map::new();
    let mut ports = Vec::new();
    for field in fields(bytes)? {
        match field {
            Field::Bytes(1, b) => put_string(&mut c, "name", b)?,
            Field::Bytes(2, b) => put_string(&mut c, "image", b)?,
            Field::Bytes(3, b) => push_string(&mut c, "command", b)?,
            Field::Bytes(4, b) => push_string(&mut c, "args", b)?,
            Field::Bytes(5, b) => put_string(&mut c, "workingDir", b)?,
            Field::Bytes(6, b) => ports.push(container_port(b)?),
            Field::Bytes(13, b) => put_string(&mut c, "terminationMessagePath", b)?,
            Field::Bytes(14, b) => put_string(&mut c, "imagePullPolicy", b)?,
            Field::Bytes(20, b) => put_string(&mut c, "terminationMessagePolicy", b)?,
            other => skip_empty("Container", &other)?,
        }
    }
    if !ports.is_empty() {
        c.insert("ports".into(), Value::Array(ports));
    }
    Ok(Value::Object(c))
}

/// core/v1 PodSpec: containers 2, restartPolicy 3, dnsPolicy 6, serviceAccountName 8,
/// schedulerName 19, priorityClassName 24.
fn pod_spec(bytes: &[u8]) -> Result<Value, String> {
    let mut spec = Map::new();
    let mut containers = Vec::new();
    for field in fields(bytes)? {
        match field {
            Field::Bytes(2, b) => containers.push(container(b)?),
            Field::Bytes(3, b) => put_string(&mut spec, "restartPolicy", b)?,
            Field::Bytes(6, b) => put_string(&mut spec, "dnsPolicy", b)?,
            Field::Bytes(8, b) => put_string(&mut spec, "serviceAccountName", b)?,
            Field::Bytes(19, b) => put_string(&mut spec, "schedulerName", b)?,
            Field::Bytes(24, b) => put_string(&mut spec, "priorityClassName", b)?,
            other => skip_empty("PodSpec", &other)?,
        }
    }
    spec.insert("containers".into(), Value::Array(containers));
    Ok(Value::Object(spec))
}

/// core/v1 PodTemplateSpec: metadata 1, spec 2.
fn pod_template(bytes: &[u8]) -> Result<Value, String> {
    let mut template = json!({});
    for field in fields(bytes)? {
        match field {
            Field::Bytes(1, b) => template["metadata"] = object_meta(b)?,
            Field::Bytes(2, b) => template["spec"] = pod_spec(b)?,
            other => skip_empty("PodTemplateSpec", &other)?,
        }
    }
    Ok(template)
}

/// meta/v1 LabelSelector: matchLabels 1 (matchExpressions 2 is not read).
fn label_selector(bytes: &[u8]) -> Result<Value, String> {
    let mut labels = Map::new();
    for field in fields(bytes)? {
        match field {
            Field::Bytes(1, b) => {
                let (k, v) = map_entry(b)?;
                labels.insert(k, Value::String(v));
            }
            other => skip_empty("LabelSelector", &other)?,
        }
    }
    Ok(json!({"matchLabels": labels}))
}

/// apps/v1 DeploymentSpec: replicas 1, selector 2, template 3, strategy 4 (type 1 only),
/// minReadySeconds 5, revisionHistoryLimit 6, paused 7, progressDeadlineSeconds 9.
fn deployment_spec(bytes: &[u8]) -> Result<Value, String> {
    let mut spec = Map::new();
    for field in fields(bytes)? {
        match field {
            Field::Varint(1, v) => {
                spec.insert("replicas".into(), int(v));
            }
            Field::Bytes(2, b) => {
                spec.insert("selector".into(), label_selector(b)?);
            }
            Field::Bytes(3, b) => {
                spec.insert("template".into(), pod_template(b)?);
            }
            Field::Bytes(4, b) => {
                let mut strategy = Map::new();
                for f in fields(b)? {
                    match f {
                        Field::Bytes(1, t) => put_string(&mut strategy, "type", t)?,
                        other => skip_empty("DeploymentStrategy", &other)?,
                    }
                }
                if !strategy.is_empty() {
                    spec.insert("strategy".into(), Value::Object(strategy));
                }
            }
            Field::Varint(5, v) if v != 0 => {
                spec.insert("minReadySeconds".into(), int(v));
            }
            Field::Varint(6, v) => {
                spec.insert("revisionHistoryLimit".into(), int(v));
            }
            Field::Varint(7, v) if v != 0 => {
                spec.insert("paused".into(), Value::Bool(true));
            }
            Field::Varint(9, v) => {
                spec.insert("progressDeadlineSeconds".into(), int(v));
            }
            other => skip_empty("DeploymentSpec", &other)?,
        }
    }
    Ok(Value::Object(spec))
}

/// batch/v1 JobSpec: parallelism 1, completions 2, activeDeadlineSeconds 3, template 6,
/// backoffLimit 7, ttlSecondsAfterFinished 8, completionMode 9, suspend 10.
fn job_spec(bytes: &[u8]) -> Result<Value, String> {
    let mut spec = Map::new();
    for field in fields(bytes)? {
        match field {
            Field::Varint(1, v) => {
                spec.insert("parallelism".into(), int(v));
            }
            Field::Varint(2, v) => {
                spec.insert("completions".into(), int(v));
            }
            Field::Varint(3, v) => {
                spec.insert("activeDeadlineSeconds".into(), Value::from(v as i64));
            }
            Field::Bytes(6, b) => {
                spec.insert("template".into(), pod_template(b)?);
            }
            Field::Varint(7, v) => {
                spec.insert("backoffLimit".into(), int(v));
            }
            Field::Varint(8, v) => {
                spec.insert("ttlSecondsAfterFinished".into(), int(v));
            }
            Field::Bytes(9, b) => put_string(&mut spec, "completionMode", b)?,
            Field::Varint(10, v) => {
                spec.insert("suspend".into(), Value::Bool(v != 0));
            }
            other => skip_empty("JobSpec", &other)?,
        }
    }
    Ok(Value::Object(spec))
}

/// An `apps/v1` Deployment or `batch/v1` Job: metadata 1, spec 2, status 3 (ignored).
pub(super) fn workload(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, String> {
    let mut object = json!({"apiVersion": api_version, "kind": kind});
    for field in fields(raw)? {
        match field {
            Field::Bytes(1, b) => object["metadata"] = object_meta(b)?,
            Field::Bytes(2, b) if kind == "Deployment" => object["spec"] = deployment_spec(b)?,
            Field::Bytes(2, b) => object["spec"] = job_spec(b)?,
            Field::Bytes(3, _) => {}
            other => skip_empty(kind, &other)?,
        }
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(number: u32, wire: u64) -> Vec<u8> {
        varint((u64::from(number) << 3) | wire)
    }

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    fn bytes(number: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = tag(number, 2);
        out.extend(varint(payload.len() as u64));
        out.extend_from_slice(payload);
        out
    }

    fn number(number: u32, value: u64) -> Vec<u8> {
        let mut out = tag(number, 0);
        out.extend(varint(value));
        out
    }

    fn entry(k: &str, v: &str) -> Vec<u8> {
        [bytes(1, k.as_bytes()), bytes(2, v.as_bytes())].concat()
    }

    /// What `kubectl create deployment web --image=nginx --replicas=2` sends, zero fields
    /// included as Go writes them.
    fn deployment() -> Vec<u8> {
        let labels = bytes(11, &entry("app", "web"));
        let meta = [
            bytes(1, b"web"),
            bytes(2, b""),
            number(7, 0),
            labels.clone(),
        ]
        .concat();
        let container = [
            bytes(1, b"nginx"),
            bytes(2, b"nginx"),
            bytes(5, b""),
            bytes(8, b""),
            bytes(13, b""),
            number(16, 0),
        ]
        .concat();
        let pod_spec = [bytes(2, &container), bytes(3, b""), number(11, 0)].concat();
        let template = [bytes(1, &labels), bytes(2, &pod_spec)].concat();
        let spec = [
            number(1, 2),
            bytes(2, &bytes(1, &entry("app", "web"))),
            bytes(3, &template),
            bytes(4, &bytes(1, b"")),
            number(5, 0),
            number(7, 0),
        ]
        .concat();
        [bytes(1, &meta), bytes(2, &spec), bytes(3, &number(2, 0))].concat()
    }

    #[test]
    fn decodes_what_kubectl_create_deployment_sends() {
        let object = workload("apps/v1", "Deployment", &deployment()).expect("decodes");
        assert_eq!(
            object,
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}
                    }
                }
            })
        );
    }

    #[test]
    fn decodes_what_kubectl_create_job_sends() {
        let container = [
            bytes(1, b"pi"),
            bytes(2, b"perl"),
            bytes(3, b"perl"),
            bytes(3, b"-e1"),
        ]
        .concat();
        let pod_spec = [bytes(2, &container), bytes(3, b"Never")].concat();
        let spec = [bytes(6, &bytes(2, &pod_spec))].concat();
        let raw = [bytes(1, &bytes(1, b"pi")), bytes(2, &spec)].concat();
        let object = workload("batch/v1", "Job", &raw).expect("decodes");
        assert_eq!(
            object["spec"]["template"]["spec"],
            json!({"restartPolicy": "Never", "containers": [
                {"name": "pi", "image": "perl", "command": ["perl", "-e1"]}]})
        );
    }

    #[test]
    fn a_field_with_a_value_that_is_not_read_is_refused() {
        // A container's env (7) with a variable.
        let container = [bytes(1, b"c"), bytes(7, &bytes(1, b"A"))].concat();
        let raw = bytes(2, &bytes(6, &bytes(2, &bytes(2, &container))));
        let err = workload("batch/v1", "Job", &raw).expect_err("refused");
        assert_eq!(err, "unsupported Container field 7");
    }
}
