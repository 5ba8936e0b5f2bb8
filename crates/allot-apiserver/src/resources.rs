//! The served resources: REST names, legacy discovery documents and `kubectl get` tables
//! (OpenAPI is in `openapi.rs`, aggregated discovery in `discovery.rs`).

use allot_store::Kind;
use serde_json::{Value, json};

/// How one kind is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The store kind.
    pub kind: Kind,
    /// The API group ("" for core).
    pub group: &'static str,
    /// The served version.
    pub version: &'static str,
    /// The plural resource name in URLs.
    pub plural: &'static str,
    /// The singular name.
    pub singular: &'static str,
    /// Short names `kubectl` accepts.
    pub short_names: &'static [&'static str],
    /// Whether it has a `status` subresource.
    pub status: bool,
}

impl ResourceInfo {
    /// `group/version`, or `v1` for the core group.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Every served resource.
pub const RESOURCES: &[ResourceInfo] = &[
    ResourceInfo {
        kind: Kind::Namespace,
        group: "",
        version: "v1",
        plural: "namespaces",
        singular: "namespace",
        short_names: &["ns"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::Node,
        group: "",
        version: "v1",
        plural: "nodes",
        singular: "node",
        short_names: &["no"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::Pod,
        group: "",
        version: "v1",
        plural: "pods",
        singular: "pod",
        short_names: &["po"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::Event,
        group: "",
        version: "v1",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        status: false,
    },
    // The same stored Events, in their events.k8s.io/v1 form (see `events_v1`).
    ResourceInfo {
        kind: Kind::Event,
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::DeviceClass,
        group: "resource.k8s.io",
        version: "v1",
        plural: "deviceclasses",
        singular: "deviceclass",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceSlice,
        group: "resource.k8s.io",
        version: "v1",
        plural: "resourceslices",
        singular: "resourceslice",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceClaimTemplate,
        group: "resource.k8s.io",
        version: "v1",
        plural: "resourceclaimtemplates",
        singular: "resourceclaimtemplate",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceClaim,
        group: "resource.k8s.io",
        version: "v1",
        plural: "resourceclaims",
        singular: "resourceclaim",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::DeviceTaintRule,
        group: "resource.k8s.io",
        version: "v1",
        plural: "devicetaintrules",
        singular: "devicetaintrule",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::DeviceTaintRule,
        group: "resource.k8s.io",
        version: "v1beta2",
        plural: "devicetaintrules",
        singular: "devicetaintrule",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::DeviceTaintRule,
        group: "resource.k8s.io",
        version: "v1alpha3",
        plural: "devicetaintrules",
        singular: "devicetaintrule",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::ResourcePoolStatusRequest,
        group: "resource.k8s.io",
        version: "v1alpha3",
        plural: "resourcepoolstatusrequests",
        singular: "resourcepoolstatusrequest",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::PodGroup,
        group: "scheduling.k8s.io",
        version: "v1beta1",
        plural: "podgroups",
        singular: "podgroup",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::NodeTopology,
        group: "allot.dev",
        version: "v1alpha1",
        plural: "nodetopologies",
        singular: "nodetopology",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::Lease,
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        singular: "lease",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ClusterRoleBinding,
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterrolebindings",
        singular: "clusterrolebinding",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ClusterRole,
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterroles",
        singular: "clusterrole",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::RoleBinding,
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
        singular: "rolebinding",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::Role,
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
        singular: "role",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::PriorityClass,
        group: "scheduling.k8s.io",
        version: "v1",
        plural: "priorityclasses",
        singular: "priorityclass",
        short_names: &["pc"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::StorageClass,
        group: "storage.k8s.io",
        version: "v1",
        plural: "storageclasses",
        singular: "storageclass",
        short_names: &["sc"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::CSIDriver,
        group: "storage.k8s.io",
        version: "v1",
        plural: "csidrivers",
        singular: "csidriver",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::CSINode,
        group: "storage.k8s.io",
        version: "v1",
        plural: "csinodes",
        singular: "csinode",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::CSIStorageCapacity,
        group: "storage.k8s.io",
        version: "v1",
        plural: "csistoragecapacities",
        singular: "csistoragecapacity",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::VolumeAttachment,
        group: "storage.k8s.io",
        version: "v1",
        plural: "volumeattachments",
        singular: "volumeattachment",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::PersistentVolume,
        group: "",
        version: "v1",
        plural: "persistentvolumes",
        singular: "persistentvolume",
        short_names: &["pv"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::PersistentVolumeClaim,
        group: "",
        version: "v1",
        plural: "persistentvolumeclaims",
        singular: "persistentvolumeclaim",
        short_names: &["pvc"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::Service,
        group: "",
        version: "v1",
        plural: "services",
        singular: "service",
        short_names: &["svc"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::ReplicationController,
        group: "",
        version: "v1",
        plural: "replicationcontrollers",
        singular: "replicationcontroller",
        short_names: &["rc"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::PodDisruptionBudget,
        group: "policy",
        version: "v1",
        plural: "poddisruptionbudgets",
        singular: "poddisruptionbudget",
        short_names: &["pdb"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::Deployment,
        group: "apps",
        version: "v1",
        plural: "deployments",
        singular: "deployment",
        short_names: &["deploy"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::ReplicaSet,
        group: "apps",
        version: "v1",
        plural: "replicasets",
        singular: "replicaset",
        short_names: &["rs"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::StatefulSet,
        group: "apps",
        version: "v1",
        plural: "statefulsets",
        singular: "statefulset",
        short_names: &["sts"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::DaemonSet,
        group: "apps",
        version: "v1",
        plural: "daemonsets",
        singular: "daemonset",
        short_names: &["ds"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::ControllerRevision,
        group: "apps",
        version: "v1",
        plural: "controllerrevisions",
        singular: "controllerrevision",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::Job,
        group: "batch",
        version: "v1",
        plural: "jobs",
        singular: "job",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::CronJob,
        group: "batch",
        version: "v1",
        plural: "cronjobs",
        singular: "cronjob",
        short_names: &["cj"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::ServiceAccount,
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        short_names: &["sa"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::Secret,
        group: "",
        version: "v1",
        plural: "secrets",
        singular: "secret",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ConfigMap,
        group: "",
        version: "v1",
        plural: "configmaps",
        singular: "configmap",
        short_names: &["cm"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::Endpoints,
        group: "",
        version: "v1",
        plural: "endpoints",
        singular: "endpoints",
        short_names: &["ep"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceQuota,
        group: "",
        version: "v1",
        plural: "resourcequotas",
        singular: "resourcequota",
        short_names: &["quota"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::LimitRange,
        group: "",
        version: "v1",
        plural: "limitranges",
        singular: "limitrange",
        short_names: &["limits"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::PodTemplate,
        group: "",
        version: "v1",
        plural: "podtemplates",
        singular: "podtemplate",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::EndpointSlice,
        group: "discovery.k8s.io",
        version: "v1",
        plural: "endpointslices",
        singular: "endpointslice",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::HorizontalPodAutoscaler,
        group: "autoscaling",
        version: "v2",
        plural: "horizontalpodautoscalers",
        singular: "horizontalpodautoscaler",
        short_names: &["hpa"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::CertificateSigningRequest,
        group: "certificates.k8s.io",
        version: "v1",
        plural: "certificatesigningrequests",
        singular: "certificatesigningrequest",
        short_names: &["csr"],
        status: true,
    },
    ResourceInfo {
        kind: Kind::ValidatingAdmissionPolicy,
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingadmissionpolicies",
        singular: "validatingadmissionpolicy",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::ValidatingAdmissionPolicyBinding,
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingadmissionpolicybindings",
        singular: "validatingadmissionpolicybinding",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ServiceCIDR,
        group: "networking.k8s.io",
        version: "v1",
        plural: "servicecidrs",
        singular: "servicecidr",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::IPAddress,
        group: "networking.k8s.io",
        version: "v1",
        plural: "ipaddresses",
        singular: "ipaddress",
        short_names: &["ip"],
        status: false,
    },
    ResourceInfo {
        kind: Kind::VolumeAttributesClass,
        group: "storage.k8s.io",
        version: "v1",
        plural: "volumeattributesclasses",
        singular: "volumeattributesclass",
        short_names: &["vac"],
        status: false,
    },
    // Older versions of the DRA kinds, converted at the request boundary (`versions`); off
    // unless `--runtime-config` asks for them, as in kube-apiserver 1.37.
    ResourceInfo {
        kind: Kind::DeviceClass,
        group: "resource.k8s.io",
        version: "v1beta1",
        plural: "deviceclasses",
        singular: "deviceclass",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceSlice,
        group: "resource.k8s.io",
        version: "v1beta1",
        plural: "resourceslices",
        singular: "resourceslice",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceClaimTemplate,
        group: "resource.k8s.io",
        version: "v1beta1",
        plural: "resourceclaimtemplates",
        singular: "resourceclaimtemplate",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceClaim,
        group: "resource.k8s.io",
        version: "v1beta1",
        plural: "resourceclaims",
        singular: "resourceclaim",
        short_names: &[],
        status: true,
    },
    ResourceInfo {
        kind: Kind::DeviceClass,
        group: "resource.k8s.io",
        version: "v1beta2",
        plural: "deviceclasses",
        singular: "deviceclass",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceSlice,
        group: "resource.k8s.io",
        version: "v1beta2",
        plural: "resourceslices",
        singular: "resourceslice",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceClaimTemplate,
        group: "resource.k8s.io",
        version: "v1beta2",
        plural: "resourceclaimtemplates",
        singular: "resourceclaimtemplate",
        short_names: &[],
        status: false,
    },
    ResourceInfo {
        kind: Kind::ResourceClaim,
        group: "resource.k8s.io",
        version: "v1beta2",
        plural: "resourceclaims",
        singular: "resourceclaim",
        short_names: &[],
        status: true,
    },
];

/// The resource served at `group/version/plural`.
pub fn lookup(group: &str, version: &str, plural: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The preferred (first listed) resource of a store kind.
pub fn info_of(kind: Kind) -> Option<&'static ResourceInfo> {
    RESOURCES.iter().find(|r| r.kind == kind)
}

/// Served `(group, version)` pairs, core first, then groups in name order.
pub fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for r in RESOURCES {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out.sort_by(|a, b| {
        (!a.0.is_empty())
            .cmp(&!b.0.is_empty())
            .then_with(|| a.0.cmp(b.0))
            .then_with(|| a.1.cmp(b.1))
    });
    out
}

/// Whether a kind's collection is deleted in one request (`deletecollection`): every kind's
/// but namespaces', as upstream, whose namespace storage deletes one namespace at a time.
pub fn deletes_collections(kind: Kind) -> bool {
    kind != Kind::Namespace
}

/// The verbs a resource serves.
fn verbs(kind: Kind) -> Vec<&'static str> {
    const VERBS: [&str; 8] = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    VERBS
        .into_iter()
        .filter(|verb| *verb != "deletecollection" || deletes_collections(kind))
        .collect()
}

/// `APIResourceList` for one group version (legacy discovery).
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        resources.push(json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.kind.namespaced(),
            "kind": r.kind.name(),
            "verbs": verbs(r.kind),
            "shortNames": r.short_names,
            "categories": categories(r.plural),
        }));
        if r.status {
            resources.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.kind.namespaced(),
                "kind": r.kind.name(),
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.kind == Kind::Namespace {
            resources.push(json!({
                "name": format!("{}/finalize", r.plural),
                "singularName": "",
                "namespaced": false,
                "kind": r.kind.name(),
                "verbs": ["update"],
            }));
        }
        if crate::scale::has_scale(r.kind) {
            resources.push(json!({
                "name": format!("{}/scale", r.plural),
                "singularName": "",
                "namespaced": r.kind.namespaced(),
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// The categories a resource belongs to, as upstream's REST storage declares them (`kubectl get
/// all` lists the `all` category).
pub fn categories(plural: &str) -> &'static [&'static str] {
    match plural {
        "pods"
        | "replicationcontrollers"
        | "services"
        | "daemonsets"
        | "deployments"
        | "replicasets"
        | "statefulsets"
        | "horizontalpodautoscalers"
        | "cronjobs"
        | "jobs" => &["all"],
        _ => &[],
    }
}

/// `APIGroupList` for `/apis`.
pub fn api_group_list() -> Value {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (group, version) in group_versions() {
        if group.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, versions)) => versions.push(version),
            None => groups.push((group, vec![version])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(group, versions)| {
            let preferred = preferred_version(&versions);
            json!({
                "name": group,
                "versions": versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect::<Vec<_>>(),
                "preferredVersion": {"groupVersion": format!("{group}/{preferred}"), "version": preferred},
            })
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// GA before beta before alpha.
pub(crate) fn preferred_version<'a>(versions: &[&'a str]) -> &'a str {
    let rank = |v: &str| {
        if v.contains("alpha") {
            2
        } else if v.contains("beta") {
            1
        } else {
            0
        }
    };
    versions
        .iter()
        .copied()
        .min_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)))
        .unwrap_or("v1")
}

/// Human age as `kubectl get` prints it (upstream's `HumanDuration`).
pub fn human_age(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        let rem = s % 60;
        return if rem == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{rem}s")
        };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = m / 60;
    if h < 8 {
        let rem = m % 60;
        return if rem == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{rem}m")
        };
    }
    if h < 48 {
        return format!("{h}h");
    }
    let d = h / 24;
    if d < 8 {
        let rem = h % 24;
        return if rem == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rem}h")
        };
    }
    if d < 730 {
        return format!("{d}d");
    }
    format!("{}y", d / 365)
}

/// The columns `kubectl get` shows for a kind, `(name, type, priority)`, as upstream's printers
/// (pkg/printers/internalversion) define them; kinds upstream has no printer for get the API
/// server's default columns (`Name`, `Created At`), allot's own NodeTopology those of a custom
/// resource (`Name`, `Age`).
pub fn columns(kind: Kind) -> Vec<(&'static str, &'static str, u8)> {
    let mut out = vec![("Name", "string", 0)];
    match kind {
        Kind::Pod => out.extend([
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ]),
        Kind::Node => out.extend([
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
        ]),
        Kind::Namespace => out.extend([("Status", "string", 0), ("Age", "string", 0)]),
        Kind::ResourceClaim => out.extend([("State", "string", 0), ("Age", "string", 0)]),
        Kind::ResourceSlice => out.extend([
            ("Node", "string", 0),
            ("Driver", "string", 0),
            ("Pool", "string", 0),
            ("Age", "string", 0),
        ]),
        Kind::Event => {
            return vec![
                ("Last Seen", "string", 0),
                ("Type", "string", 0),
                ("Reason", "string", 0),
                ("Object", "string", 0),
                ("Subobject", "string", 1),
                ("Source", "string", 1),
                ("Message", "string", 0),
                ("First Seen", "string", 1),
                ("Count", "integer", 1),
                ("Name", "string", 1),
            ];
        }
        Kind::DeviceTaintRule
        | Kind::ResourcePoolStatusRequest
        | Kind::Role
        | Kind::ClusterRole => {
            out.push(("Created At", "date", 0));
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => out.extend([
            ("Role", "string", 0),
            ("Age", "string", 0),
            ("Users", "string", 1),
            ("Groups", "string", 1),
            ("ServiceAccounts", "string", 1),
        ]),
        Kind::Lease => out.extend([("Holder", "string", 0), ("Age", "string", 0)]),
        Kind::DeviceClass | Kind::ResourceClaimTemplate | Kind::PodGroup | Kind::NodeTopology => {
            out.push(("Age", "string", 0))
        }
        // The workload, storage, service and policy kinds.
        other => return crate::printers::columns(other),
    }
    out
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The cells of one row, matching [`columns`].
pub fn cells(kind: Kind, object: &Value, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let name = str_at(object, "/metadata/name").to_string();
    let age = chrono::DateTime::parse_from_rfc3339(str_at(object, "/metadata/creationTimestamp"))
        .map(|t| human_age((now - t.with_timezone(&chrono::Utc)).num_seconds()))
        .unwrap_or_else(|_| "<unknown>".into());
    let none = || "<none>".to_string();
    let or_none = |s: &str| if s.is_empty() { none() } else { s.to_string() };
    let row: Vec<String> = match kind {
        Kind::Pod => {
            let containers = object
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = object
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .map_or(0, |s| {
                    s.iter()
                        .filter(|c| c.get("ready") == Some(&Value::Bool(true)))
                        .count()
                });
            let phase = str_at(object, "/status/phase");
            let reason = str_at(object, "/status/reason");
            let terminal = matches!(phase, "Succeeded" | "Failed");
            let status = if object.pointer("/metadata/deletionTimestamp").is_some() && !terminal {
                "Terminating".to_string()
            } else if !reason.is_empty() {
                reason.to_string()
            } else if phase.is_empty() {
                "Pending".to_string()
            } else {
                phase.to_string()
            };
            let gates = object
                .pointer("/spec/readinessGates")
                .and_then(Value::as_array)
                .filter(|g| !g.is_empty());
            let readiness = gates.map_or_else(none, |gates| {
                let conditions = object
                    .pointer("/status/conditions")
                    .and_then(Value::as_array);
                let ready = gates
                    .iter()
                    .filter(|g| {
                        conditions.is_some_and(|cs| {
                            cs.iter().any(|c| {
                                c.get("type") == g.get("conditionType")
                                    && c.get("status").and_then(Value::as_str) == Some("True")
                            })
                        })
                    })
                    .count();
                format!("{ready}/{}", gates.len())
            });
            vec![
                name,
                format!("{ready}/{containers}"),
                status,
                "0".into(),
                age,
                or_none(str_at(object, "/status/podIP")),
                or_none(str_at(object, "/spec/nodeName")),
                or_none(str_at(object, "/status/nominatedNodeName")),
                readiness,
            ]
        }
        Kind::Node => {
            let ready = object
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| {
                    c.iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
                })
                .map(|c| match c.get("status").and_then(Value::as_str) {
                    Some("True") => "Ready",
                    Some("False") => "NotReady",
                    _ => "Unknown",
                })
                .unwrap_or("Unknown");
            vec![
                name,
                ready.into(),
                none(),
                age,
                str_at(object, "/status/nodeInfo/kubeletVersion").to_string(),
            ]
        }
        Kind::Namespace => {
            let phase = str_at(object, "/status/phase");
            vec![
                name,
                if phase.is_empty() {
                    "Active".into()
                } else {
                    phase.to_string()
                },
                age,
            ]
        }
        Kind::ResourceClaim => {
            let mut state = Vec::new();
            if object.pointer("/metadata/deletionTimestamp").is_some() {
                state.push("deleted");
            }
            if object.pointer("/status/allocation").is_some() {
                state.push("allocated");
                if object
                    .pointer("/status/reservedFor")
                    .and_then(Value::as_array)
                    .is_some_and(|r| !r.is_empty())
                {
                    state.push("reserved");
                }
            } else {
                state.push("pending");
            }
            vec![name, state.join(","), age]
        }
        Kind::ResourceSlice => vec![
            name,
            or_none(str_at(object, "/spec/nodeName")),
            str_at(object, "/spec/driver").to_string(),
            str_at(object, "/spec/pool/name").to_string(),
            age,
        ],
        Kind::Event => return event_cells(object, now),
        Kind::DeviceTaintRule
        | Kind::ResourcePoolStatusRequest
        | Kind::Role
        | Kind::ClusterRole => {
            vec![
                name,
                str_at(object, "/metadata/creationTimestamp").to_string(),
            ]
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => {
            let subjects = object.get("subjects").and_then(Value::as_array);
            let of_kind = |kind: &str| {
                let names: Vec<String> = subjects
                    .into_iter()
                    .flatten()
                    .filter(|s| str_at(s, "/kind") == kind)
                    .map(|s| match (kind, str_at(s, "/namespace")) {
                        ("ServiceAccount", ns) => format!("{ns}/{}", str_at(s, "/name")),
                        _ => str_at(s, "/name").to_string(),
                    })
                    .collect();
                names.join(", ")
            };
            vec![
                name,
                format!(
                    "{}/{}",
                    str_at(object, "/roleRef/kind"),
                    str_at(object, "/roleRef/name")
                ),
                age,
                of_kind("User"),
                of_kind("Group"),
                of_kind("ServiceAccount"),
            ]
        }
        Kind::Lease => vec![
            name,
            str_at(object, "/spec/holderIdentity").to_string(),
            age,
        ],
        Kind::DeviceClass | Kind::ResourceClaimTemplate | Kind::PodGroup | Kind::NodeTopology => {
            vec![name, age]
        }
        other => return crate::printers::cells(other, object, now),
    };
    row.into_iter().map(Value::String).collect()
}

/// An Event's row as upstream prints it: when last and first seen, type, reason, the object as
/// `kind/name` (lower-case kind), field path, source, message, count, name.
fn event_cells(object: &Value, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let since = |pointer: &str| {
        chrono::DateTime::parse_from_rfc3339(str_at(object, pointer))
            .ok()
            .map(|t| human_age((now - t.with_timezone(&chrono::Utc)).num_seconds()))
    };
    let first = since("/firstTimestamp")
        .or_else(|| since("/eventTime"))
        .unwrap_or_else(|| "<unknown>".into());
    let mut last = since("/lastTimestamp").unwrap_or_else(|| first.clone());
    let mut count = object.get("count").and_then(Value::as_i64).unwrap_or(0);
    if object.get("series").is_some_and(Value::is_object) {
        last = since("/series/lastObservedTime").unwrap_or_else(|| "<unknown>".into());
        count = object
            .pointer("/series/count")
            .and_then(Value::as_i64)
            .unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = str_at(object, "/involvedObject/kind").to_lowercase();
    let target = match str_at(object, "/involvedObject/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component = str_at(object, "/source/component");
    let host = str_at(object, "/source/host");
    let source = if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };
    vec![
        Value::String(last),
        Value::String(str_at(object, "/type").into()),
        Value::String(str_at(object, "/reason").into()),
        Value::String(target),
        Value::String(str_at(object, "/involvedObject/fieldPath").into()),
        Value::String(source),
        Value::String(str_at(object, "/message").into()),
        Value::String(first),
        Value::from(count),
        Value::String(str_at(object, "/metadata/name").into()),
    ]
}

/// A `meta.k8s.io/v1 Table` of objects of one kind.
pub fn table(
    kind: Kind,
    objects: &[Value],
    resource_version: &str,
    full_objects: bool,
    with_columns: bool,
) -> Value {
    let now = chrono::Utc::now();
    let column_definitions: Vec<Value> = if with_columns {
        columns(kind)
            .into_iter()
            .map(|(name, ty, priority)| {
                json!({"name": name, "type": ty, "format": if name == "Name" { "name" } else { "" }, "description": name, "priority": priority})
            })
            .collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let object = if full_objects {
                o.clone()
            } else {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.get("metadata").cloned().unwrap_or(Value::Null)})
            };
            json!({"cells": cells(kind, o, now), "object": object})
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        let cases = [
            (5, "5s"),
            (119, "119s"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (9 * 3600, "9h"),
            (3 * 86400, "3d"),
        ];
        let failures: Vec<String> = cases
            .iter()
            .filter(|(s, want)| human_age(*s) != *want)
            .map(|(s, want)| format!("{s}: got {}, want {want}", human_age(*s)))
            .collect();
        assert!(failures.is_empty(), "{failures:?}");
    }

    #[test]
    fn every_kind_has_one_cell_per_column() {
        let now = chrono::Utc::now();
        let object =
            json!({"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        for kind in Kind::ALL {
            assert_eq!(
                columns(kind).len(),
                cells(kind, &object, now).len(),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn events_print_like_kubectl_get_events() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:01:00Z")
            .expect("time")
            .with_timezone(&chrono::Utc);
        let event = json!({
            "metadata": {"name": "p.1"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "FailedScheduling", "type": "Warning", "message": "0/1 nodes",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:30Z",
        });
        let row = cells(Kind::Event, &event, now);
        assert_eq!(
            row,
            vec![
                json!("30s"),
                json!("Warning"),
                json!("FailedScheduling"),
                json!("pod/p"),
                json!(""),
                json!("kubelet, n1"),
                json!("0/1 nodes"),
                json!("60s"),
                json!(1),
                json!("p.1"),
            ]
        );
        let rejected = json!({"metadata": {"name": "p"}, "spec": {"containers": [{}]},
            "status": {"phase": "Failed", "reason": "OutOfcpu"}});
        assert_eq!(cells(Kind::Pod, &rejected, now)[2], json!("OutOfcpu"));
    }

    #[test]
    fn every_kind_is_served_at_its_store_version() {
        for kind in Kind::ALL {
            assert!(
                RESOURCES
                    .iter()
                    .any(|r| r.kind == kind && r.group_version() == kind.api_version()),
                "{kind:?}"
            );
        }
        // DeviceTaintRule is served at every version allot-api decodes, v1 preferred.
        assert_eq!(
            info_of(Kind::DeviceTaintRule).map(|r| r.version),
            Some("v1")
        );
    }

    #[test]
    fn core_group_comes_first_then_groups_by_name() {
        let gvs = group_versions();
        assert_eq!(gvs.first(), Some(&("", "v1")));
        assert_eq!(gvs.get(1), Some(&("admissionregistration.k8s.io", "v1")));
        assert!(gvs[1..].windows(2).all(|w| w[0] <= w[1]), "{gvs:?}");
        assert_eq!(gvs.last(), Some(&("storage.k8s.io", "v1")));
    }
}
