//! Table tests of the workload, storage, service, policy and scheduling kinds and of the kinds
//! allot stores without interpreting them: strict decoding (an unknown field is refused with
//! its path), upstream's defaults, create validation and update validation with upstream's
//! messages and field paths.
//!
//! Every case starts from the kind's object in `crates/allot/tests/kinds/all-kinds.yaml` (the
//! manifest the end-to-end tests load too) and patches it (JSON pointer -> new value; `null`
//! removes).

use std::collections::BTreeSet;

use allot_api::defaults::default_object;
use allot_api::load::{LoadError, LoadOptions, Object, decode_object, parse_str};
use allot_validation::{DraCel, Subresource, validate_object, validate_object_update};
use serde_json::{Value, json};

const MANIFEST: &str = include_str!("../../allot/tests/kinds/all-kinds.yaml");

/// The manifest's object of `kind`, as JSON.
fn base(kind: &str) -> Value {
    let documents = parse_str("all-kinds.yaml", MANIFEST).expect("the manifest parses");
    documents
        .into_iter()
        .find(|d| d.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} in the manifest"))
        .value
}

/// Applies `(pointer, value)` patches; `null` removes the field.
fn patched(mut value: Value, patches: &[(&str, Value)]) -> Value {
    for (pointer, new) in patches {
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        if value.pointer(parent).is_none() {
            // Create missing parents as objects.
            let mut path = String::new();
            for part in parent.split('/').skip(1) {
                path.push('/');
                path.push_str(part);
                if value.pointer(&path).is_none() {
                    let (p, k) = path.rsplit_once('/').expect("a pointer");
                    value
                        .pointer_mut(p)
                        .and_then(Value::as_object_mut)
                        .expect("an object parent")
                        .insert(k.replace("~1", "/"), json!({}));
                }
            }
        }
        let object = value
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{parent} is not an object"));
        let key = key.replace("~1", "/");
        if new.is_null() {
            object.remove(&key);
        } else {
            object.insert(key, new.clone());
        }
    }
    value
}

/// Decodes (strictly) and defaults a JSON document.
#[allow(clippy::result_large_err)]
fn load(value: &Value) -> Result<Object, LoadError> {
    let text = serde_json::to_string(value).expect("JSON");
    let documents = parse_str("case.json", &text).expect("parses");
    let raw = documents.into_iter().next().expect("one document");
    let mut object = decode_object(&raw, &LoadOptions::default())?;
    default_object(&mut object);
    Ok(object)
}

fn messages(errors: Vec<allot_validation::FieldError>) -> BTreeSet<String> {
    errors.into_iter().map(|e| e.to_string()).collect()
}

/// Create validation of `kind`'s object patched with `patches`.
fn check(kind: &str, patches: &[(&str, Value)]) -> BTreeSet<String> {
    let object = load(&patched(base(kind), patches)).expect("decodes");
    messages(validate_object(&object, &DraCel))
}

#[test]
fn every_kind_of_the_manifest_is_valid_and_refuses_unknown_fields() {
    let documents = parse_str("all-kinds.yaml", MANIFEST).expect("the manifest parses");
    assert_eq!(documents.len(), 33);
    for document in documents {
        let object = load(&document.value).expect(&document.kind);
        assert_eq!(
            messages(validate_object(&object, &DraCel)),
            BTreeSet::new(),
            "{}",
            document.kind
        );
        // An unknown field at the top and one level down.
        for pointer in ["/colour", "/metadata/colour"] {
            let value = patched(document.value.clone(), &[(pointer, json!(1))]);
            match load(&value) {
                Err(LoadError::UnknownField { path, .. }) => {
                    assert_eq!(path, pointer[1..].replace('/', "."), "{}", document.kind)
                }
                other => panic!("{}: {pointer} decoded: {other:?}", document.kind),
            }
        }
    }
    // Typed specs refuse misspelt fields deep inside.
    let cases = [
        ("Deployment", "/spec/strategy/rollingUpdate/maxSurged"),
        ("PersistentVolume", "/spec/csi/volumeHandel"),
        ("Job", "/spec/podFailurePolicy/rulez"),
        ("StorageClass", "/allowedTopologies/0/matchLabelExpression"),
        ("Service", "/spec/ports/0/nodeport"),
        ("CSINode", "/spec/drivers/0/allocatable/counts"),
    ];
    for (kind, pointer) in cases {
        let value = patched(base(kind), &[(pointer, json!(1))]);
        assert!(
            matches!(load(&value), Err(LoadError::UnknownField { .. })),
            "{kind} {pointer}"
        );
    }
}

#[test]
fn upstream_defaults_are_applied() {
    let cases: &[(&str, &[(&str, Value)])] = &[
        (
            "Deployment",
            &[
                ("/spec/replicas", json!(3)),
                ("/spec/strategy/type", json!("RollingUpdate")),
                ("/spec/strategy/rollingUpdate/maxUnavailable", json!("25%")),
                ("/spec/strategy/rollingUpdate/maxSurge", json!("25%")),
                ("/spec/revisionHistoryLimit", json!(10)),
                ("/spec/progressDeadlineSeconds", json!(600)),
                ("/spec/template/spec/restartPolicy", json!("Always")),
                (
                    "/spec/template/spec/schedulerName",
                    json!("default-scheduler"),
                ),
                (
                    "/spec/template/spec/terminationGracePeriodSeconds",
                    json!(30),
                ),
                ("/spec/template/spec/dnsPolicy", json!("ClusterFirst")),
                (
                    "/spec/template/spec/containers/0/imagePullPolicy",
                    json!("IfNotPresent"),
                ),
                (
                    "/spec/template/spec/containers/0/terminationMessagePath",
                    json!("/dev/termination-log"),
                ),
                (
                    "/spec/template/spec/containers/0/ports/0/protocol",
                    json!("TCP"),
                ),
            ],
        ),
        ("ReplicaSet", &[("/spec/replicas", json!(1))]),
        (
            "StatefulSet",
            &[
                ("/spec/podManagementPolicy", json!("OrderedReady")),
                ("/spec/updateStrategy/type", json!("RollingUpdate")),
                ("/spec/updateStrategy/rollingUpdate/partition", json!(0)),
                (
                    "/spec/updateStrategy/rollingUpdate/maxUnavailable",
                    json!(1),
                ),
                (
                    "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
                    json!("Retain"),
                ),
                ("/spec/revisionHistoryLimit", json!(10)),
                (
                    "/spec/volumeClaimTemplates/0/spec/volumeMode",
                    json!("Filesystem"),
                ),
            ],
        ),
        (
            "DaemonSet",
            &[
                (
                    "/spec/updateStrategy/rollingUpdate/maxUnavailable",
                    json!(1),
                ),
                ("/spec/updateStrategy/rollingUpdate/maxSurge", json!(0)),
            ],
        ),
        (
            "Job",
            &[
                ("/spec/parallelism", json!(1)),
                ("/spec/completions", json!(1)),
                ("/spec/backoffLimit", json!(6)),
                ("/spec/completionMode", json!("NonIndexed")),
                ("/spec/suspend", json!(false)),
                ("/spec/manualSelector", json!(false)),
                ("/spec/podReplacementPolicy", json!("TerminatingOrFailed")),
            ],
        ),
        (
            "CronJob",
            &[
                ("/spec/concurrencyPolicy", json!("Allow")),
                ("/spec/suspend", json!(false)),
                ("/spec/successfulJobsHistoryLimit", json!(3)),
                ("/spec/failedJobsHistoryLimit", json!(1)),
            ],
        ),
        (
            "ReplicationController",
            &[("/metadata/labels/app", json!("legacy"))],
        ),
        (
            "PersistentVolume",
            &[
                ("/spec/persistentVolumeReclaimPolicy", json!("Retain")),
                ("/spec/volumeMode", json!("Filesystem")),
                ("/status/phase", json!("Pending")),
            ],
        ),
        (
            "PersistentVolumeClaim",
            &[
                ("/spec/volumeMode", json!("Filesystem")),
                ("/status/phase", json!("Pending")),
            ],
        ),
        (
            "Service",
            &[
                ("/spec/type", json!("ClusterIP")),
                ("/spec/sessionAffinity", json!("None")),
                ("/spec/ports/0/protocol", json!("TCP")),
                ("/spec/ports/0/targetPort", json!(8080)),
                ("/spec/internalTrafficPolicy", json!("Cluster")),
            ],
        ),
        (
            "PriorityClass",
            &[("/preemptionPolicy", json!("PreemptLowerPriority"))],
        ),
        ("StorageClass", &[("/reclaimPolicy", json!("Delete"))]),
        (
            "CSIDriver",
            &[
                ("/spec/attachRequired", json!(false)),
                ("/spec/podInfoOnMount", json!(false)),
                ("/spec/fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
                ("/spec/volumeLifecycleModes", json!(["Persistent"])),
            ],
        ),
        (
            "Secret",
            &[
                ("/type", json!("Opaque")),
                ("/data/user", json!("YWRtaW4=")),
                ("/data/password", json!("c2VjcmV0")),
            ],
        ),
    ];
    for (kind, wanted) in cases {
        let object = load(&base(kind)).expect(kind);
        let value = match &object {
            Object::Deployment(o) => serde_json::to_value(o),
            Object::ReplicaSet(o) => serde_json::to_value(o),
            Object::StatefulSet(o) => serde_json::to_value(o),
            Object::DaemonSet(o) => serde_json::to_value(o),
            Object::Job(o) => serde_json::to_value(o),
            Object::CronJob(o) => serde_json::to_value(o),
            Object::ReplicationController(o) => serde_json::to_value(o),
            Object::PersistentVolume(o) => serde_json::to_value(o),
            Object::PersistentVolumeClaim(o) => serde_json::to_value(o),
            Object::Service(o) => serde_json::to_value(o),
            Object::PriorityClass(o) => serde_json::to_value(o),
            Object::StorageClass(o) => serde_json::to_value(o),
            Object::CSIDriver(o) => serde_json::to_value(o),
            Object::Secret(o) => serde_json::to_value(o),
            other => panic!("{} has no case", other.kind()),
        }
        .expect("encodes");
        for (pointer, want) in *wanted {
            assert_eq!(value.pointer(pointer), Some(want), "{kind} {pointer}");
        }
        if *kind == "Secret" {
            assert_eq!(
                value.get("stringData"),
                None,
                "stringData is folded into data"
            );
        }
    }
    // An explicit value is kept; completions alone leave parallelism 1.
    let job = load(&patched(base("Job"), &[("/spec/completions", json!(5))])).expect("Job");
    let Object::Job(job) = job else {
        panic!("a Job")
    };
    assert_eq!(
        (job.spec.completions, job.spec.parallelism),
        (Some(5), Some(1))
    );
    // A pod failure policy makes replacement wait for Failed, and defaults pattern statuses.
    let value = patched(
        base("Job"),
        &[(
            "/spec/podFailurePolicy",
            json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}),
        )],
    );
    let Ok(Object::Job(job)) = load(&value) else {
        panic!("a Job")
    };
    assert_eq!(
        job.spec.pod_replacement_policy.map(|p| p.to_string()),
        Some("Failed".into())
    );
    assert_eq!(
        job.spec.pod_failure_policy.expect("kept").rules[0].on_pod_conditions[0].status,
        "True"
    );
}

/// One case of tests/data/create_messages.yaml.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateCase {
    kind: String,
    patches: Vec<Patch>,
    messages: BTreeSet<String>,
}

/// A JSON-pointer patch of a case's base object.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Patch {
    path: String,
    value: Value,
}

/// How many cases tests/data/create_messages.yaml holds: a dropped one fails the count.
const CREATE_CASES: usize = 42;

#[test]
fn create_validation_reports_upstream_messages() {
    let text = include_str!("data/create_messages.yaml");
    let cases: Vec<CreateCase> =
        serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("create_messages.yaml: {e}"));
    assert_eq!(cases.len(), CREATE_CASES, "cases in create_messages.yaml");
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|case| {
            let patches: Vec<(&str, Value)> = case
                .patches
                .iter()
                .map(|p| (p.path.as_str(), p.value.clone()))
                .collect();
            let got = check(&case.kind, &patches);
            let want = case.messages;
            (got != want).then(|| {
                format!(
                    "{} {patches:?}:\n  got  {got:?}\n  want {want:?}",
                    case.kind
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `(kind, patches of the old object, patches of the new one, expected messages)`.
type UpdateCase<'a> = (
    &'a str,
    Vec<(&'a str, Value)>,
    Vec<(&'a str, Value)>,
    Vec<&'a str>,
);

/// Update validation of `kind`'s object changed by `patches`, as the server runs it: the
/// create rules on the new object and the update rules on both.
fn check_update(kind: &str, old: &[(&str, Value)], new: &[(&str, Value)]) -> BTreeSet<String> {
    let old_value = patched(base(kind), old);
    let new_value = patched(old_value.clone(), new);
    let old = load(&old_value).expect("old decodes");
    let new = load(&new_value).expect("new decodes");
    let mut errors = validate_object(&new, &DraCel);
    errors.extend(validate_object_update(&new, &old, Subresource::Main));
    messages(errors)
}

#[test]
fn update_validation_keeps_what_upstream_keeps() {
    let uid = ("/metadata/uid", json!("u-1"));
    let cases: Vec<UpdateCase> = vec![
        (
            "Deployment",
            vec![],
            vec![
                ("/spec/selector/matchLabels/tier", json!("x")),
                ("/spec/template/metadata/labels/tier", json!("x")),
            ],
            vec![
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"tier\":\"x\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
            ],
        ),
        (
            "Deployment",
            vec![],
            vec![("/spec/replicas", json!(7))],
            vec![],
        ),
        (
            "StatefulSet",
            vec![],
            vec![("/spec/serviceName", json!("other"))],
            vec![
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ],
        ),
        (
            "StatefulSet",
            vec![],
            vec![("/spec/replicas", json!(5))],
            vec![],
        ),
        (
            "Job",
            vec![uid.clone()],
            vec![("/spec/template/spec/containers/0/image", json!("perl:2"))],
            vec!["spec.template: Forbidden: field is immutable"],
        ),
        (
            "Job",
            vec![uid.clone(), ("/spec/suspend", json!(true))],
            vec![("/spec/template/spec/nodeSelector", json!({"zone": "a"}))],
            vec![],
        ),
        (
            "Job",
            vec![uid.clone()],
            vec![("/spec/completions", json!(4))],
            vec!["spec.completions: Invalid value: 4: field is immutable"],
        ),
        (
            "PersistentVolumeClaim",
            vec![],
            vec![("/spec/resources/requests/storage", json!("2Gi"))],
            vec![],
        ),
        (
            "PersistentVolumeClaim",
            vec![],
            vec![("/spec/accessModes", json!(["ReadWriteMany"]))],
            vec![
                "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ],
        ),
        (
            "PersistentVolumeClaim",
            vec![("/status/capacity", json!({"storage": "1Gi"}))],
            vec![("/spec/resources/requests/storage", json!("512Mi"))],
            vec![
                "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity",
            ],
        ),
        (
            "StorageClass",
            vec![],
            vec![
                ("/parameters", json!({"type": "ssd"})),
                ("/provisioner", json!("other.example.com")),
            ],
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
            ],
        ),
        (
            "PriorityClass",
            vec![],
            vec![("/value", json!(5))],
            vec!["value: Forbidden: may not be changed in an update."],
        ),
        (
            "PersistentVolume",
            vec![],
            vec![("/spec/csi/volumeHandle", json!("vol-2"))],
            vec![
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
            ],
        ),
        (
            "VolumeAttachment",
            vec![],
            vec![("/spec/nodeName", json!("n2"))],
            vec!["spec: Forbidden: field is immutable"],
        ),
        (
            "ConfigMap",
            vec![],
            vec![("/metadata/namespace", json!("other"))],
            vec!["metadata.namespace: Invalid value: \"other\": field is immutable"],
        ),
    ];
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(kind, old, new, want)| {
            let got = check_update(kind, &old, &new);
            let want: BTreeSet<String> = want.into_iter().map(String::from).collect();
            (got != want).then(|| format!("{kind} {new:?}:\n  got  {got:?}\n  want {want:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn only_one_priority_class_is_the_default() {
    let class = |name: &str, default: bool| {
        let value = patched(
            base("PriorityClass"),
            &[
                ("/metadata/name", json!(name)),
                ("/globalDefault", json!(default)),
            ],
        );
        match load(&value) {
            Ok(Object::PriorityClass(c)) => c,
            other => panic!("{other:?}"),
        }
    };
    let stored = [class("a", true), class("b", false)];
    let admit = allot_validation::core_more::admit_priority_class;
    assert_eq!(
        admit(&class("c", true), &stored),
        Some("PriorityClass a is already marked as default. Only one default can exist".into())
    );
    assert_eq!(admit(&class("a", true), &stored), None, "itself");
    assert_eq!(admit(&class("c", false), &stored), None);
}

#[test]
fn status_updates_keep_upstream_counters() {
    let status = |kind: &str, old: &[(&str, Value)], new: &[(&str, Value)]| {
        let old_value = patched(base(kind), old);
        let old = load(&old_value).expect("old");
        let new = load(&patched(old_value, new)).expect("new");
        messages(validate_object_update(&new, &old, Subresource::Status))
    };
    let set =
        |items: &[&str]| -> BTreeSet<String> { items.iter().map(|s| s.to_string()).collect() };
    assert_eq!(
        status(
            "Deployment",
            &[],
            &[(
                "/status",
                json!({"replicas": 2, "readyReplicas": 3, "availableReplicas": 1})
            )]
        ),
        set(&["status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas"])
    );
    assert_eq!(
        status(
            "StatefulSet",
            &[("/status", json!({"replicas": 1, "collisionCount": 2}))],
            &[("/status", json!({"replicas": 1, "collisionCount": 1}))]
        ),
        set(&["status.collisionCount: Invalid value: 1: cannot be decremented"])
    );
    assert_eq!(
        status(
            "Job",
            &[
                ("/metadata/uid", json!("u")),
                ("/status", json!({"failed": 2}))
            ],
            &[("/status", json!({"failed": 1, "active": 1, "ready": 2}))]
        ),
        set(&[
            "status.failed: Invalid value: 1: cannot decrease the failed counter",
            "status.ready: Invalid value: 2: cannot set more ready pods than active",
        ])
    );
    assert_eq!(
        status(
            "ReplicaSet",
            &[],
            &[("/status", json!({"replicas": 1, "readyReplicas": 1}))]
        ),
        BTreeSet::new()
    );
}
