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

/// `(kind, patches, expected messages)`.
type Case<'a> = (&'a str, Vec<(&'a str, Value)>, Vec<&'a str>);

#[test]
fn create_validation_reports_upstream_messages() {
    let cases: Vec<Case> = vec![
        (
            "Deployment",
            vec![("/spec/replicas", json!(-1))],
            vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "Deployment",
            vec![("/spec/template/metadata/labels/app", json!("other"))],
            vec![
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            "Deployment",
            vec![("/spec/selector", Value::Null)],
            vec![
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            "Deployment",
            vec![("/spec/selector", json!({}))],
            vec![
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
            ],
        ),
        (
            "Deployment",
            vec![
                ("/spec/strategy/rollingUpdate/maxSurge", json!(0)),
                ("/spec/strategy/rollingUpdate/maxUnavailable", json!(0)),
            ],
            vec![
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0",
            ],
        ),
        (
            "Deployment",
            vec![("/spec/strategy/rollingUpdate/maxUnavailable", json!("110%"))],
            vec![
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"110%\"}: must not be greater than 100%",
            ],
        ),
        (
            "Deployment",
            vec![
                ("/spec/progressDeadlineSeconds", json!(10)),
                ("/spec/minReadySeconds", json!(10)),
            ],
            vec![
                "spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds",
            ],
        ),
        (
            "Deployment",
            vec![("/spec/template/spec/restartPolicy", json!("Never"))],
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ],
        ),
        (
            "Deployment",
            vec![("/spec/template/spec/containers/0/name", json!("Bad_Name"))],
            vec![
                "spec.template.spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
        (
            "StatefulSet",
            vec![("/spec/podManagementPolicy", json!("Sometimes"))],
            vec![
                "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
            ],
        ),
        (
            "StatefulSet",
            vec![(
                "/spec/updateStrategy/rollingUpdate/maxUnavailable",
                json!(0),
            )],
            vec![
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: cannot be 0",
            ],
        ),
        (
            "DaemonSet",
            vec![("/spec/updateStrategy/rollingUpdate/maxSurge", json!(1))],
            vec![
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}: may not be set when maxUnavailable is non-zero",
            ],
        ),
        (
            "Job",
            vec![("/spec/template/spec/restartPolicy", Value::Null)],
            vec![
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ],
        ),
        (
            "Job",
            vec![
                ("/spec/completionMode", json!("Indexed")),
                ("/spec/parallelism", json!(200000)),
                ("/spec/completions", json!(3)),
            ],
            vec![
                "spec.parallelism: Invalid value: 200000: must be less than or equal to 100000 when completion mode is Indexed",
            ],
        ),
        (
            "Job",
            vec![("/spec/backoffLimitPerIndex", json!(1))],
            vec!["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"],
        ),
        (
            "Job",
            vec![
                ("/spec/manualSelector", json!(true)),
                ("/spec/selector", json!({"matchLabels": {"app": "x"}})),
            ],
            vec![
                "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template `labels`",
            ],
        ),
        (
            "Job",
            vec![(
                "/spec/podFailurePolicy",
                json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 3, 2]}}]}),
            )],
            vec![
                "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{0, 3, 2}: must be ordered",
            ],
        ),
        (
            "CronJob",
            vec![("/spec/schedule", json!("61 * * * *"))],
            vec![
                "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61",
            ],
        ),
        (
            "CronJob",
            vec![(
                "/metadata/name",
                json!("a-cron-job-name-that-is-much-too-long-for-its-jobs-xy"),
            )],
            vec![
                "metadata.name: Invalid value: \"a-cron-job-name-that-is-much-too-long-for-its-jobs-xy\": must be no more than 52 characters",
            ],
        ),
        (
            "CronJob",
            vec![(
                "/spec/jobTemplate/spec/selector",
                json!({"matchLabels": {"a": "b"}}),
            )],
            vec![
                "spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
            ],
        ),
        (
            "PriorityClass",
            vec![("/value", json!(1_000_000_001))],
            vec![
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            ],
        ),
        (
            "PriorityClass",
            vec![("/metadata/name", json!("system-mine"))],
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
            ],
        ),
        (
            "PersistentVolumeClaim",
            vec![("/spec/accessModes", json!([]))],
            vec!["spec.accessModes: Required value: at least 1 access mode is required"],
        ),
        (
            "PersistentVolumeClaim",
            vec![("/spec/resources/requests", json!({}))],
            vec!["spec.resources[storage]: Required value"],
        ),
        (
            "PersistentVolumeClaim",
            vec![(
                "/spec/accessModes",
                json!(["ReadWriteOncePod", "ReadOnlyMany"]),
            )],
            vec![
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            ],
        ),
        (
            "PersistentVolume",
            vec![("/spec/nfs", json!({"server": "nfs", "path": "/x"}))],
            vec!["spec.csi: Forbidden: may not specify more than 1 volume type"],
        ),
        (
            "PersistentVolume",
            vec![("/spec/persistentVolumeReclaimPolicy", json!("Keep"))],
            vec![
                "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
            ],
        ),
        (
            "StorageClass",
            vec![("/provisioner", json!(""))],
            vec!["provisioner: Required value"],
        ),
        (
            "StorageClass",
            vec![("/volumeBindingMode", json!("Later"))],
            vec![
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ],
        ),
        (
            "Service",
            vec![("/spec/ports/0/port", json!(70000))],
            vec![
                "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ],
        ),
        (
            "Service",
            vec![("/spec/type", json!("Magic"))],
            vec![
                "spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            ],
        ),
        (
            "ReplicationController",
            vec![("/spec/selector", json!({"app": "other"}))],
            vec![
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"legacy\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            "PodDisruptionBudget",
            vec![("/spec/maxUnavailable", json!("10%"))],
            vec!["spec: Invalid value: {...}: minAvailable and maxUnavailable cannot be both set"],
        ),
        (
            "CSINode",
            vec![("/spec/drivers/0/nodeID", json!(""))],
            vec!["spec.drivers[0].nodeID: Required value"],
        ),
        (
            "VolumeAttachment",
            vec![("/spec/source", json!({}))],
            vec![
                "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
            ],
        ),
        (
            "ConfigMap",
            vec![("/data/bad key", json!("x"))],
            vec![
                "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            ],
        ),
        (
            "ControllerRevision",
            vec![("/data", Value::Null), ("/revision", json!(-1))],
            vec![
                "data: Required value: data is mandatory",
                "revision: Invalid value: -1: must be greater than or equal to 0",
            ],
        ),
        (
            "CSIStorageCapacity",
            vec![("/capacity", json!("-1Gi"))],
            vec!["capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0"],
        ),
        (
            "CSIDriver",
            vec![("/spec/fsGroupPolicy", json!("Sometimes"))],
            vec![
                "spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"",
            ],
        ),
        (
            "HorizontalPodAutoscaler",
            vec![("/metadata/name", json!("Web"))],
            vec![
                "metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        (
            "PodTemplate",
            vec![("/template/spec/containers", json!([]))],
            vec!["template.spec.containers: Required value"],
        ),
        (
            "IPAddress",
            vec![("/metadata/name", json!("not-an-ip"))],
            vec![
                "metadata.name: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ],
        ),
    ];
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(kind, patches, want)| {
            let got = check(kind, &patches);
            let want: BTreeSet<String> = want.into_iter().map(String::from).collect();
            (got != want).then(|| format!("{kind} {patches:?}:\n  got  {got:?}\n  want {want:?}"))
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
