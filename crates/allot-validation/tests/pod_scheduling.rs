//! Validation of what the scheduler reads of a Pod (pod affinity and anti-affinity, topology
//! spread constraints, container ports, scheduling gates, preemption policy), with upstream's
//! paths and messages (pkg/apis/core/validation: validatePodAffinityTerm,
//! validateMatchLabelKeysAndMismatchLabelKeys, validateTopologySpreadConstraints,
//! validateContainerPorts, AccumulateUniqueHostPorts, validateSchedulingGates,
//! validatePreemptionPolicy).

use allot_api::defaults::default_object;
use allot_api::load::{LoadOptions, decode_object, parse_str};
use allot_validation::{CelCompileError, CelCompiler, ExpressionKind, validate_object};

struct NoCel;

impl CelCompiler for NoCel {
    fn compile(&self, _: &str, _: ExpressionKind) -> Result<u64, CelCompileError> {
        Ok(1)
    }
}

/// The errors of a pod whose spec (YAML flow mapping entries) is `spec` (with one container
/// unless `spec` lists them).
fn errors(labels: &str, spec: &str) -> Vec<String> {
    let containers = if spec.contains(" containers: [") {
        ""
    } else {
        "containers: [{name: c, image: x}], "
    };
    let text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: default, labels: {{{labels}}}}}\nspec: {{{containers}{spec}}}\n"
    );
    let docs = parse_str("pod.yaml", &text).expect("parse");
    let mut object = decode_object(&docs[0], &LoadOptions::default()).expect("decode");
    default_object(&mut object);
    validate_object(&object, &NoCel)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn pod_affinity_terms() {
    assert_eq!(
        errors(
            "",
            "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: web}}}]}}"
        ),
        [
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty"
        ]
    );
    assert_eq!(
        errors(
            "",
            "affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, podAffinityTerm: {topologyKey: zone, namespaces: [Bad_NS]}}]}}"
        ),
        [
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespace: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ]
    );
    assert_eq!(
        errors(
            "",
            "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, labelSelector: {matchExpressions: [{key: app, operator: In, values: []}]}}]}}"
        ),
        [
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        ]
    );
}

#[test]
fn match_and_mismatch_label_keys() {
    // Without a label selector.
    assert_eq!(
        errors(
            "",
            "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, matchLabelKeys: [app]}]}}"
        ),
        [
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"
        ]
    );
    // In both lists; an invalid key.
    assert_eq!(
        errors(
            "",
            "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, labelSelector: {}, matchLabelKeys: [app], mismatchLabelKeys: [app, /simple]}]}}"
        ),
        [
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].mismatchLabelKeys[1]: Invalid value: \"/simple\": prefix part must be non-empty",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and mismatchLabelKeys",
        ]
    );
    // A key of the pod's labels named in matchLabelKeys and in the selector (upstream reports
    // it at the term's path indexed by the key's position).
    assert_eq!(
        errors(
            "key: value1",
            "affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 10, podAffinityTerm: {topologyKey: zone, labelSelector: {matchExpressions: [{key: key, operator: NotIn, values: [value1, value2]}]}, matchLabelKeys: [key]}}]}}"
        ),
        [
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm[0]: Invalid value: \"key\": exists in both matchLabelKeys and labelSelector"
        ]
    );
    // Without the label on the pod nothing is merged: valid.
    assert!(
        errors(
            "",
            "affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 10, podAffinityTerm: {topologyKey: zone, labelSelector: {matchExpressions: [{key: key, operator: NotIn, values: [value1, value2]}]}, matchLabelKeys: [key]}}]}}"
        )
        .is_empty()
    );
}

#[test]
fn topology_spread_constraints() {
    assert_eq!(
        errors(
            "",
            "topologySpreadConstraints: [{maxSkew: 0, topologyKey: '', whenUnsatisfiable: Sometimes, minDomains: 0, nodeAffinityPolicy: Maybe, nodeTaintsPolicy: Honor}]"
        ),
        [
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            "spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
            "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
            "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: must be greater than zero",
            "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not Sometimes",
            "spec.topologySpreadConstraints[0].nodeAffinityPolicy: Unsupported value: \"Maybe\": supported values: \"Honor\", \"Ignore\"",
        ]
    );
    assert_eq!(
        errors(
            "",
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone}]"
        ),
        [
            "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
        ]
    );
    assert_eq!(
        errors(
            "",
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]"
        ),
        [
            "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\""
        ]
    );
    assert_eq!(
        errors(
            "app: web",
            "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app]}]"
        ),
        [
            "spec.topologySpreadConstraints[0][0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"
        ]
    );
}

#[test]
fn ports_gates_and_preemption() {
    assert_eq!(
        errors(
            "",
            "initContainers: [{name: i, image: x, ports: [{containerPort: 70000, hostPort: 80}]}], containers: [{name: c, image: x, ports: [{name: Web, containerPort: 80, hostPort: 8080, protocol: QUIC}, {containerPort: 0, hostPort: 8080}]}, {name: d, image: x, ports: [{containerPort: 81, hostPort: 8080}]}]"
        ),
        [
            "spec.initContainers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.containers[0].ports[0].name: Invalid value: \"Web\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "spec.containers[0].ports[0].protocol: Unsupported value: \"QUIC\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.containers[0].ports[1].containerPort: Required value",
            "spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\"",
        ]
    );
    assert_eq!(
        errors(
            "",
            "schedulingGates: [{name: example.com/gate}, {name: 'bad gate'}, {name: example.com/gate}], preemptionPolicy: Sometimes"
        ),
        [
            "spec.schedulingGates[1]: Invalid value: \"bad gate\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.schedulingGates[2]: Duplicate value: \"example.com/gate\"",
            "spec.preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"",
        ]
    );
}
