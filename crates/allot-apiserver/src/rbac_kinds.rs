//! Upstream's bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) for the
//! workload, storage, service, policy and scheduling kinds: the rules the aggregated
//! `edit`/`view` roles and `system:kube-scheduler` grant on them, `system:volume-scheduler`,
//! `system:kube-controller-manager` and the controllers' `system:controller:*` roles with their
//! bindings. [`extend`] adds them to the bootstrap objects of `rbac.rs`.
//!
//! Like every bootstrap object, these are created when missing; a data directory created by an
//! earlier version keeps its older roles (upstream reconciles `autoupdate` roles at start, allot
//! does not yet).

use serde_json::{Value, json};

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_UPDATE: &[&str] = &["get", "list", "watch", "update", "patch"];
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

fn named_rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources, "resourceNames": names})
}

/// Upstream's `eventsRule()`.
fn events() -> Value {
    rule(
        &["create", "update", "patch"],
        &["", "events.k8s.io"],
        &["events"],
    )
}

fn meta(name: &str) -> Value {
    json!({"name": name,
           "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
           "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": meta(name), "rules": rules})
}

fn cluster_role_binding(name: &str, subject: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": meta(name), "subjects": [subject],
           "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name}})
}

/// Rules `system:aggregate-to-edit` adds for these kinds.
fn edit_rules() -> Vec<Value> {
    vec![
        rule(&["impersonate"], &[""], &["serviceaccounts"]),
        rule(&["create"], &[""], &["pods/eviction"]),
        rule(
            WRITE,
            &[""],
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(&["create"], &[""], &["serviceaccounts/token"]),
        rule(
            WRITE,
            &["apps"],
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        rule(WRITE, &["batch"], &["jobs", "cronjobs"]),
        rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
        rule(
            &[
                "get",
                "list",
                "watch",
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection",
            ],
            &["coordination.k8s.io"],
            &["leases"],
        ),
    ]
}

/// Rules `system:aggregate-to-view` adds for these kinds.
fn view_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            &[""],
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            &[""],
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "resourcequotas/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
        rule(
            READ,
            &["apps"],
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        rule(
            READ,
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            &["batch"],
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        rule(
            READ,
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
    ]
}

/// Rules `system:kube-scheduler` adds for these kinds: what selects pods, what pods use, and
/// the storage objects the volume plugins read.
fn scheduler_rules() -> Vec<Value> {
    vec![
        rule(READ, &[""], &["services", "replicationcontrollers"]),
        rule(READ, &["apps", "extensions"], &["replicasets"]),
        rule(READ, &["apps"], &["statefulsets"]),
        rule(READ, &["policy"], &["poddisruptionbudgets"]),
        rule(
            READ,
            &[""],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(READ, &["storage.k8s.io"], &["csinodes"]),
        rule(READ, &["storage.k8s.io"], &["csidrivers"]),
        rule(READ, &["storage.k8s.io"], &["csistoragecapacities"]),
        rule(READ, &["storage.k8s.io"], &["volumeattachments"]),
    ]
}

/// `system:kube-controller-manager`: leader election, the service account machinery, and
/// list/watch of everything for the shared informers.
fn controller_manager_rules() -> Vec<Value> {
    vec![
        events(),
        rule(&["create"], &["coordination.k8s.io"], &["leases"]),
        named_rule(
            &["get", "update"],
            &["coordination.k8s.io"],
            &["leases"],
            &["kube-controller-manager"],
        ),
        rule(&["create"], &[""], &["secrets", "serviceaccounts"]),
        rule(&["delete"], &[""], &["secrets"]),
        rule(
            &["get"],
            &[""],
            &["configmaps", "namespaces", "secrets", "serviceaccounts"],
        ),
        rule(&["update"], &[""], &["secrets", "serviceaccounts"]),
        rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
        rule(
            &["create"],
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
        ),
        rule(&["list", "watch"], &["*"], &["*"]),
        rule(&["create"], &[""], &["serviceaccounts/token"]),
    ]
}

/// The controllers' roles (upstream's controller_policy.go) for the controllers of these kinds,
/// in upstream's order.
fn controller_roles() -> Vec<(&'static str, Vec<Value>)> {
    let mut roles = controller_roles_a_to_g();
    roles.extend(controller_roles_j_to_s());
    roles.extend(later_controller_roles());
    roles
}

/// The groups of the old and current workload APIs.
const APPS_EXT: &[&str] = &["extensions", "apps"];

/// Upstream's first, alphabetical block of controller roles: attachdetach to
/// generic-garbage-collector.
fn controller_roles_a_to_g() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "attachdetach-controller",
            vec![
                rule(
                    &["list", "watch"],
                    &[""],
                    &["persistentvolumes", "persistentvolumeclaims"],
                ),
                rule(READ, &[""], &["nodes"]),
                rule(&["patch", "update"], &[""], &["nodes/status"]),
                rule(&["list", "watch"], &[""], &["pods"]),
                events(),
                rule(
                    &["get", "create", "delete", "list", "watch"],
                    &["storage.k8s.io"],
                    &["volumeattachments"],
                ),
                rule(
                    &["get", "watch", "list"],
                    &["storage.k8s.io"],
                    &["csidrivers"],
                ),
                rule(
                    &["get", "watch", "list"],
                    &["storage.k8s.io"],
                    &["csinodes"],
                ),
            ],
        ),
        (
            "cronjob-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &["batch"],
                    &["cronjobs"],
                ),
                rule(
                    &[
                        "get", "list", "watch", "create", "update", "delete", "patch",
                    ],
                    &["batch"],
                    &["jobs"],
                ),
                rule(&["update"], &["batch"], &["cronjobs/status"]),
                rule(&["update"], &["batch"], &["cronjobs/finalizers"]),
                rule(&["list", "delete"], &[""], &["pods"]),
                events(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                rule(READ, APPS_EXT, &["daemonsets"]),
                rule(&["update"], APPS_EXT, &["daemonsets/status"]),
                rule(&["update"], APPS_EXT, &["daemonsets/finalizers"]),
                rule(&["list", "watch"], &[""], &["nodes"]),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[""],
                    &["pods"],
                ),
                rule(&["create"], &[""], &["pods/binding"]),
                rule(
                    &[
                        "get", "list", "watch", "create", "delete", "update", "patch",
                    ],
                    &["apps"],
                    &["controllerrevisions"],
                ),
                events(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    APPS_EXT,
                    &["deployments"],
                ),
                rule(&["update"], APPS_EXT, &["deployments/status"]),
                rule(&["update"], APPS_EXT, &["deployments/finalizers"]),
                rule(
                    &[
                        "get", "list", "watch", "create", "update", "patch", "delete",
                    ],
                    &["apps", "extensions"],
                    &["replicasets"],
                ),
                rule(&["get", "list", "watch", "update"], &[""], &["pods"]),
                events(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                rule(READ, APPS_EXT, &["deployments"]),
                rule(READ, &["apps", "extensions"], &["replicasets"]),
                rule(READ, &[""], &["replicationcontrollers"]),
                rule(READ, &["policy"], &["poddisruptionbudgets"]),
                rule(READ, &["apps"], &["statefulsets"]),
                rule(&["update"], &["policy"], &["poddisruptionbudgets/status"]),
                rule(&["patch", "update"], &[""], &["pods/status"]),
                rule(&["get"], &["*"], &["*/scale"]),
                events(),
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                rule(READ, &[""], &["pods"]),
                rule(&["update"], &[""], &["pods/finalizers"]),
                rule(
                    &["get", "list", "watch", "create"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                events(),
            ],
        ),
        (
            "expand-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update", "patch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                rule(
                    &["update", "patch"],
                    &[""],
                    &["persistentvolumeclaims/status"],
                ),
                rule(READ, &[""], &["persistentvolumeclaims"]),
                rule(READ, &["storage.k8s.io"], &["storageclasses"]),
                rule(&["get"], &[""], &["services", "endpoints"]),
                rule(&["get"], &[""], &["secrets"]),
                events(),
            ],
        ),
        (
            "generic-garbage-collector",
            vec![
                rule(
                    &["get", "list", "watch", "patch", "update", "delete"],
                    &["*"],
                    &["*"],
                ),
                events(),
            ],
        ),
    ]
}

/// Upstream's first block, continued: job to statefulset.
fn controller_roles_j_to_s() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "job-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update", "patch"],
                    &["batch"],
                    &["jobs"],
                ),
                rule(&["update"], &["batch"], &["jobs/status"]),
                rule(&["update"], &["batch"], &["jobs/finalizers"]),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                rule(
                    &["get", "list", "watch", "update", "create", "delete"],
                    &[""],
                    &["persistentvolumes"],
                ),
                rule(&["update"], &[""], &["persistentvolumes/status"]),
                rule(
                    &["get", "list", "watch", "update"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(&["update"], &[""], &["persistentvolumeclaims/status"]),
                rule(
                    &["list", "watch", "get", "create", "delete"],
                    &[""],
                    &["pods"],
                ),
                rule(READ, &["storage.k8s.io"], &["storageclasses"]),
                rule(
                    &["get", "create", "update", "delete"],
                    &[""],
                    &["endpoints"],
                ),
                rule(&["get", "create", "delete"], &[""], &["services"]),
                rule(&["get"], &[""], &["secrets"]),
                rule(&["get", "list"], &[""], &["nodes"]),
                rule(&["watch"], &[""], &["events"]),
                events(),
            ],
        ),
        (
            "pv-protection-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[""],
                    &["persistentvolumes"],
                ),
                events(),
            ],
        ),
        (
            "pvc-protection-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(&["list", "watch", "get"], &[""], &["pods"]),
                events(),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &["apps", "extensions"],
                    &["replicasets"],
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["replicasets/status"],
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["replicasets/finalizers"],
                ),
                rule(
                    &["list", "watch", "patch", "create", "delete"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        (
            "replication-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[""],
                    &["replicationcontrollers"],
                ),
                rule(&["update"], &[""], &["replicationcontrollers/status"]),
                rule(&["update"], &[""], &["replicationcontrollers/finalizers"]),
                rule(
                    &["list", "watch", "patch", "create", "delete"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        (
            "service-controller",
            vec![
                rule(READ, &[""], &["services"]),
                rule(&["patch", "update"], &[""], &["services/status"]),
                rule(&["list", "watch"], &[""], &["nodes"]),
                events(),
            ],
        ),
        (
            "statefulset-controller",
            vec![
                rule(&["list", "watch"], &[""], &["pods"]),
                rule(READ, &["apps"], &["statefulsets"]),
                rule(&["update"], &["apps"], &["statefulsets/status"]),
                rule(&["update"], &["apps"], &["statefulsets/finalizers"]),
                rule(
                    &["get", "create", "delete", "update", "patch"],
                    &[""],
                    &["pods"],
                ),
                rule(
                    &[
                        "get", "create", "delete", "update", "patch", "list", "watch",
                    ],
                    &["apps"],
                    &["controllerrevisions"],
                ),
                rule(&["get", "create"], &[""], &["persistentvolumeclaims"]),
                events(),
                rule(&["update", "delete"], &[""], &["persistentvolumeclaims"]),
            ],
        ),
    ]
}

/// Upstream's later controller roles: endpoint to ttl-after-finished.
fn later_controller_roles() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "endpoint-controller",
            vec![
                rule(READ, &[""], &["services", "pods"]),
                rule(
                    &["get", "list", "create", "update", "delete"],
                    &[""],
                    &["endpoints"],
                ),
                rule(&["create"], &[""], &["endpoints/restricted"]),
                events(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                rule(READ, &[""], &["services", "pods", "nodes"]),
                rule(&["update"], &[""], &["services/finalizers"]),
                rule(
                    &["get", "list", "create", "update", "delete"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
                events(),
            ],
        ),
        (
            "horizontal-pod-autoscaler",
            vec![
                rule(READ, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(
                    &["update"],
                    &["autoscaling"],
                    &["horizontalpodautoscalers/status"],
                ),
                rule(&["get", "update"], &["*"], &["*/scale"]),
                rule(&["list"], &[""], &["pods"]),
                rule(&["list"], &["metrics.k8s.io"], &["pods"]),
                rule(&["get", "list"], &["custom.metrics.k8s.io"], &["*"]),
                rule(&["get", "list"], &["external.metrics.k8s.io"], &["*"]),
                events(),
            ],
        ),
        (
            "certificate-controller",
            vec![
                rule(
                    &["get", "list", "watch", "delete"],
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                ),
                rule(
                    &["update"],
                    &["certificates.k8s.io"],
                    &[
                        "certificatesigningrequests/status",
                        "certificatesigningrequests/approval",
                    ],
                ),
                named_rule(
                    &["approve"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &["kubernetes.io/kube-apiserver-client-kubelet"],
                ),
                named_rule(
                    &["sign"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &[
                        "kubernetes.io/legacy-unknown",
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                    ],
                ),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                events(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![
                rule(&["list", "watch"], &["*"], &["*"]),
                rule(&["update"], &[""], &["resourcequotas/status"]),
                events(),
            ],
        ),
        (
            "root-ca-cert-publisher",
            vec![
                rule(&["create", "update"], &[""], &["configmaps"]),
                events(),
            ],
        ),
        (
            "service-account-controller",
            vec![rule(&["create"], &[""], &["serviceaccounts"]), events()],
        ),
        (
            "service-cidrs-controller",
            vec![
                rule(
                    &["get", "list", "watch", "patch", "update"],
                    &["networking.k8s.io"],
                    &["servicecidrs"],
                ),
                rule(
                    &["patch", "update"],
                    &["networking.k8s.io"],
                    &["servicecidrs/finalizers"],
                ),
                rule(
                    &["patch", "update"],
                    &["networking.k8s.io"],
                    &["servicecidrs/status"],
                ),
                rule(READ, &["networking.k8s.io"], &["ipaddresses"]),
                events(),
            ],
        ),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(
                    READ,
                    &["admissionregistration.k8s.io"],
                    &["validatingadmissionpolicies"],
                ),
                rule(
                    &["get", "patch", "update"],
                    &["admissionregistration.k8s.io"],
                    &["validatingadmissionpolicies/status"],
                ),
                events(),
            ],
        ),
        (
            "volumeattributesclass-protection-controller",
            vec![
                rule(
                    &["list", "watch", "get"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(&["list", "watch", "get"], &[""], &["persistentvolumes"]),
                rule(
                    &["get", "list", "watch", "update"],
                    &["storage.k8s.io"],
                    &["volumeattributesclasses"],
                ),
                events(),
            ],
        ),
        (
            "ttl-after-finished-controller",
            vec![
                rule(&["get", "list", "watch", "delete"], &["batch"], &["jobs"]),
                events(),
            ],
        ),
    ]
}

/// Adds this module's rules to the bootstrap roles they extend and appends its roles and
/// bindings.
pub fn extend(objects: &mut Vec<Value>) {
    for object in objects.iter_mut() {
        let more = match object.pointer("/metadata/name").and_then(Value::as_str) {
            Some("system:aggregate-to-edit") => edit_rules(),
            Some("system:aggregate-to-view") => view_rules(),
            Some("system:kube-scheduler") => scheduler_rules(),
            _ => continue,
        };
        if let Some(rules) = object.get_mut("rules").and_then(Value::as_array_mut) {
            rules.extend(more);
        }
    }
    objects.push(cluster_role(
        "system:volume-scheduler",
        vec![
            rule(READ_UPDATE, &[""], &["persistentvolumes"]),
            rule(READ, &["storage.k8s.io"], &["storageclasses"]),
            rule(READ_UPDATE, &[""], &["persistentvolumeclaims"]),
        ],
    ));
    objects.push(cluster_role(
        "system:kube-controller-manager",
        controller_manager_rules(),
    ));
    for (name, rules) in controller_roles() {
        objects.push(cluster_role(&format!("system:controller:{name}"), rules));
    }
    objects.push(cluster_role_binding(
        "system:volume-scheduler",
        json!({"kind": "User", "apiGroup": RBAC_GROUP, "name": "system:kube-scheduler"}),
    ));
    objects.push(cluster_role_binding(
        "system:kube-controller-manager",
        json!({"kind": "User", "apiGroup": RBAC_GROUP, "name": "system:kube-controller-manager"}),
    ));
    for (name, _) in controller_roles() {
        objects.push(cluster_role_binding(
            &format!("system:controller:{name}"),
            json!({"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}),
        ));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn edit_view_and_scheduler_get_the_new_kinds_and_every_role_is_bound() {
        let objects = crate::rbac::bootstrap_objects();
        let rules_of = |name: &str| -> String {
            objects
                .iter()
                .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name)
                .map(|o| o["rules"].to_string())
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        assert!(rules_of("system:aggregate-to-edit").contains("deployments/scale"));
        assert!(rules_of("system:aggregate-to-view").contains("persistentvolumeclaims/status"));
        let scheduler = rules_of("system:kube-scheduler");
        for resource in [
            "csinodes",
            "csistoragecapacities",
            "poddisruptionbudgets",
            "statefulsets",
        ] {
            assert!(scheduler.contains(resource), "{resource}");
        }
        assert!(rules_of("system:controller:job-controller").contains("jobs/status"));
        for role in objects.iter().filter(|o| o["kind"] == "ClusterRole") {
            let name = role["metadata"]["name"].as_str().unwrap_or_default();
            if name.starts_with("system:controller:") || name == "system:volume-scheduler" {
                assert!(
                    objects
                        .iter()
                        .any(|b| b["kind"] == "ClusterRoleBinding" && b["roleRef"]["name"] == name),
                    "{name} is not bound"
                );
            }
        }
        // Every object decodes as the store keeps it.
        for object in &objects {
            crate::storage::stored_from_json(object).expect("decodes");
        }
    }
}
