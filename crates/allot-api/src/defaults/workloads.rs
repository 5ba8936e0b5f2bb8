//! API-server defaulting of the workload, storage, service and scheduling kinds (upstream
//! `pkg/apis/{apps,batch,core,scheduling,storage}/v1/defaults.go`), and of the pod templates
//! they embed.
//!
//! Pod templates get upstream's `SetDefaults_PodSpec` and `SetDefaults_Container` (and the
//! defaults of ports, probes and volume modes the pod spec holds). They are applied to the
//! template's JSON form, so that they do not depend on which pod fields allot types and which it
//! keeps opaque: the template is serialised, defaulted and decoded again.

use serde_json::{Map, Value, json};

use crate::apps::v1::{
    DaemonSet, DaemonSetUpdateStrategyType, Deployment, DeploymentStrategyType,
    PersistentVolumeClaimRetentionPolicyType, PodManagementPolicyType, ReplicaSet,
    RollingUpdateDaemonSet, RollingUpdateDeployment, RollingUpdateStatefulSetStrategy, StatefulSet,
    StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetUpdateStrategyType,
};
use crate::batch::v1::{CompletionMode, ConcurrencyPolicy, CronJob, Job, PodReplacementPolicy};
use crate::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimPhase, PersistentVolumeClaimSpec,
    PersistentVolumeMode, PersistentVolumePhase, PersistentVolumeReclaimPolicy, PodSpec,
    PodTemplateSpec, PreemptionPolicy, Protocol, ReplicationController, Service, ServiceAffinity,
    ServiceExternalTrafficPolicy, ServiceInternalTrafficPolicy, ServiceType,
};
use crate::intstr::IntOrString;
use crate::load::Object;
use crate::scheduling::v1::PriorityClass;
use crate::storage::v1::{
    CSIDriver, FSGroupPolicy, StorageClass, VolumeBindingMode, VolumeLifecycleMode,
};

/// The label of a Job's pods naming their Job's uid.
pub const JOB_CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The label of a Job's pods naming their Job.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The legacy form of [`JOB_CONTROLLER_UID_LABEL`].
pub const LEGACY_JOB_CONTROLLER_UID_LABEL: &str = "controller-uid";
/// The legacy form of [`JOB_NAME_LABEL`].
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// Defaults one decoded object of the kinds of this module in place; others are left alone.
pub fn default_object(object: &mut Object) {
    match object {
        Object::Deployment(o) => default_deployment(o),
        Object::ReplicaSet(o) => default_replica_set(o),
        Object::StatefulSet(o) => default_stateful_set(o),
        Object::DaemonSet(o) => default_daemon_set(o),
        Object::Job(o) => default_job(o),
        Object::CronJob(o) => default_cron_job(o),
        Object::ReplicationController(o) => default_replication_controller(o),
        Object::PersistentVolume(o) => default_persistent_volume(o),
        Object::PersistentVolumeClaim(o) => default_persistent_volume_claim(o),
        Object::Service(o) => default_service(o),
        Object::PriorityClass(o) => default_priority_class(o),
        Object::StorageClass(o) => default_storage_class(o),
        Object::CSIDriver(o) => default_csi_driver(o),
        Object::Secret(o) => default_secret(o),
        Object::PodTemplate(o) => default_pod_template(&mut o.template),
        _ => {}
    }
}

/// `SetDefaults_Deployment`: one replica, a 25%/25% rolling update, ten old revisions kept, a
/// progress deadline of 600 seconds; the template as a pod's.
pub fn default_deployment(deployment: &mut Deployment) {
    let spec = &mut deployment.spec;
    spec.replicas.get_or_insert(1);
    let strategy = &mut spec.strategy;
    let kind = strategy
        .type_
        .get_or_insert(DeploymentStrategyType::RollingUpdate);
    if *kind == DeploymentStrategyType::RollingUpdate {
        let rolling = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDeployment::default);
        rolling
            .max_unavailable
            .get_or_insert_with(|| IntOrString::String("25%".into()));
        rolling
            .max_surge
            .get_or_insert_with(|| IntOrString::String("25%".into()));
    }
    spec.revision_history_limit.get_or_insert(10);
    spec.progress_deadline_seconds.get_or_insert(600);
    default_pod_template(&mut spec.template);
}

/// `SetDefaults_ReplicaSet`: one replica; the template as a pod's.
pub fn default_replica_set(set: &mut ReplicaSet) {
    set.spec.replicas.get_or_insert(1);
    default_pod_template(&mut set.spec.template);
}

/// `SetDefaults_StatefulSet`: `OrderedReady`, a rolling update from partition 0 with one pod
/// unavailable at most (`MaxUnavailableStatefulSet`, on by default since 1.35), claims retained,
/// one replica, ten old revisions; the template as a pod's and the claim templates as claims.
pub fn default_stateful_set(set: &mut StatefulSet) {
    let spec = &mut set.spec;
    spec.pod_management_policy
        .get_or_insert(PodManagementPolicyType::OrderedReady);
    let strategy = &mut spec.update_strategy;
    if strategy.type_.is_none() {
        strategy.type_ = Some(StatefulSetUpdateStrategyType::RollingUpdate);
        strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateStatefulSetStrategy::default);
    }
    if strategy.type_ == Some(StatefulSetUpdateStrategyType::RollingUpdate)
        && let Some(rolling) = &mut strategy.rolling_update
    {
        rolling.partition.get_or_insert(0);
        rolling.max_unavailable.get_or_insert(IntOrString::Int(1));
    }
    let retention = spec
        .persistent_volume_claim_retention_policy
        .get_or_insert_with(StatefulSetPersistentVolumeClaimRetentionPolicy::default);
    retention
        .when_deleted
        .get_or_insert(PersistentVolumeClaimRetentionPolicyType::Retain);
    retention
        .when_scaled
        .get_or_insert(PersistentVolumeClaimRetentionPolicyType::Retain);
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    default_pod_template(&mut spec.template);
    for claim in &mut spec.volume_claim_templates {
        default_persistent_volume_claim(claim);
    }
}

/// `SetDefaults_DaemonSet`: a rolling update with one pod unavailable and none surging, ten old
/// revisions; the template as a pod's.
pub fn default_daemon_set(set: &mut DaemonSet) {
    let spec = &mut set.spec;
    let strategy = &mut spec.update_strategy;
    let kind = strategy
        .type_
        .get_or_insert(DaemonSetUpdateStrategyType::RollingUpdate);
    if *kind == DaemonSetUpdateStrategyType::RollingUpdate {
        let rolling = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDaemonSet::default);
        rolling.max_unavailable.get_or_insert(IntOrString::Int(1));
        rolling.max_surge.get_or_insert(IntOrString::Int(0));
    }
    spec.revision_history_limit.get_or_insert(10);
    default_pod_template(&mut spec.template);
}

/// `SetDefaults_Job`: completions and parallelism 1 when both are unset (parallelism 1 when it
/// alone is), a backoff limit of 6 (the largest int32 with a per-index limit), the object's
/// labels from the template's when it has none, `NonIndexed`, not suspended, pod condition
/// patterns `True`, pods replaced once `Failed` with a pod failure policy and once
/// `TerminatingOrFailed` without, no manual selector; the template as a pod's.
pub fn default_job(job: &mut Job) {
    let spec = &mut job.spec;
    if spec.completions.is_none() && spec.parallelism.is_none() {
        spec.completions = Some(1);
    }
    spec.parallelism.get_or_insert(1);
    if spec.backoff_limit.is_none() {
        spec.backoff_limit = Some(if spec.backoff_limit_per_index.is_some() {
            i32::MAX
        } else {
            6
        });
    }
    if !spec.template.metadata.labels.is_empty() && job.metadata.labels.is_empty() {
        job.metadata.labels = spec.template.metadata.labels.clone();
    }
    spec.completion_mode
        .get_or_insert(CompletionMode::NonIndexed);
    spec.suspend.get_or_insert(false);
    if let Some(policy) = &mut spec.pod_failure_policy {
        for rule in &mut policy.rules {
            for pattern in &mut rule.on_pod_conditions {
                if pattern.status.is_empty() {
                    pattern.status = "True".into();
                }
            }
        }
    }
    if spec.pod_replacement_policy.is_none() {
        spec.pod_replacement_policy = Some(if spec.pod_failure_policy.is_some() {
            PodReplacementPolicy::Failed
        } else {
            PodReplacementPolicy::TerminatingOrFailed
        });
    }
    spec.manual_selector.get_or_insert(false);
    default_pod_template(std::sync::Arc::make_mut(&mut spec.template));
}

/// What the Job registry does at creation when `manualSelector` is not true (upstream's
/// `generateSelector`): the template gets the `job-name` and `controller-uid` labels (both
/// forms) unless it sets them, and the selector matches `batch.kubernetes.io/controller-uid`.
/// Needs the Job's uid, so it runs where the uid is assigned (the store's create). A Job
/// without labels then gets the template's, as upstream's defaulting gives them to the Job it
/// reads back.
pub fn generate_job_selector(job: &mut Job) {
    if job.spec.manual_selector == Some(true) {
        return;
    }
    let name = job.metadata.name.clone();
    let uid = job.metadata.uid.clone();
    let labels = &mut std::sync::Arc::make_mut(&mut job.spec.template)
        .metadata
        .labels;
    for key in [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL] {
        labels
            .entry(key.to_string())
            .or_insert_with(|| name.clone());
    }
    for key in [LEGACY_JOB_CONTROLLER_UID_LABEL, JOB_CONTROLLER_UID_LABEL] {
        labels.entry(key.to_string()).or_insert_with(|| uid.clone());
    }
    job.spec
        .selector
        .get_or_insert_with(Default::default)
        .match_labels
        .entry(JOB_CONTROLLER_UID_LABEL.to_string())
        .or_insert(uid);
    // Upstream defaults a Job's labels from its template's whenever it is decoded, so a Job
    // read back after creation carries the generated labels too.
    if job.metadata.labels.is_empty() {
        job.metadata.labels = job.spec.template.metadata.labels.clone();
    }
}

/// Undoes [`generate_job_selector`] on a Job created with `uid` whose creation must be decided
/// again under a new uid (a create retried after another writer moved the store on): the
/// labels and selector entries holding `uid` go, and Job labels copied from the template are
/// cleared, so that generating again gives the new uid everywhere. Entries a user set to other
/// values stay.
pub fn forget_generated_job_selector(job: &mut Job, uid: &str) {
    if job.spec.manual_selector == Some(true) || uid.is_empty() {
        return;
    }
    if job.metadata.labels == job.spec.template.metadata.labels {
        job.metadata.labels.clear();
    }
    let labels = &mut std::sync::Arc::make_mut(&mut job.spec.template)
        .metadata
        .labels;
    for key in [LEGACY_JOB_CONTROLLER_UID_LABEL, JOB_CONTROLLER_UID_LABEL] {
        if labels.get(key).is_some_and(|v| v == uid) {
            labels.remove(key);
        }
    }
    if let Some(selector) = &mut job.spec.selector
        && selector
            .match_labels
            .get(JOB_CONTROLLER_UID_LABEL)
            .is_some_and(|v| v == uid)
    {
        selector.match_labels.remove(JOB_CONTROLLER_UID_LABEL);
    }
}

/// `SetDefaults_CronJob`: `Allow`, not suspended, three successful and one failed Job kept; the
/// Job template's pod template as a pod's (the Job template gets no Job defaults).
pub fn default_cron_job(job: &mut CronJob) {
    let spec = &mut job.spec;
    spec.concurrency_policy
        .get_or_insert(ConcurrencyPolicy::Allow);
    spec.suspend.get_or_insert(false);
    spec.successful_jobs_history_limit.get_or_insert(3);
    spec.failed_jobs_history_limit.get_or_insert(1);
    default_pod_template(std::sync::Arc::make_mut(
        &mut spec.job_template.spec.template,
    ));
}

/// `SetDefaults_ReplicationController`: the selector and the object's labels from the
/// template's labels when empty, one replica; the template as a pod's.
pub fn default_replication_controller(controller: &mut ReplicationController) {
    let spec = &mut controller.spec;
    if let Some(template) = &mut spec.template {
        let labels = &template.metadata.labels;
        if spec.selector.is_empty() {
            spec.selector = labels.clone();
        }
        if controller.metadata.labels.is_empty() {
            controller.metadata.labels = labels.clone();
        }
        default_pod_template(template);
    }
    spec.replicas.get_or_insert(1);
}

/// `SetDefaults_PersistentVolume`: phase `Pending`, reclaim policy `Retain`, volume mode
/// `Filesystem`.
pub fn default_persistent_volume(volume: &mut PersistentVolume) {
    volume
        .status
        .phase
        .get_or_insert(PersistentVolumePhase::Pending);
    volume
        .spec
        .persistent_volume_reclaim_policy
        .get_or_insert(PersistentVolumeReclaimPolicy::Retain);
    volume
        .spec
        .volume_mode
        .get_or_insert(PersistentVolumeMode::Filesystem);
}

/// `SetDefaults_PersistentVolumeClaim`: phase `Pending`, volume mode `Filesystem`.
pub fn default_persistent_volume_claim(claim: &mut PersistentVolumeClaim) {
    claim
        .status
        .phase
        .get_or_insert(PersistentVolumeClaimPhase::Pending);
    default_persistent_volume_claim_spec(&mut claim.spec);
}

/// `SetDefaults_PersistentVolumeClaimSpec`: volume mode `Filesystem`.
pub fn default_persistent_volume_claim_spec(spec: &mut PersistentVolumeClaimSpec) {
    spec.volume_mode
        .get_or_insert(PersistentVolumeMode::Filesystem);
}

/// `SetDefaults_Service`: session affinity `None` (a 10800 s timeout for `ClientIP`), type
/// `ClusterIP`, each port's protocol `TCP` and target port its port, traffic policies
/// `Cluster`, load balancer node ports allocated.
pub fn default_service(service: &mut Service) {
    let spec = &mut service.spec;
    let affinity = spec.session_affinity.get_or_insert(ServiceAffinity::None);
    if *affinity == ServiceAffinity::None {
        spec.session_affinity_config = None;
    }
    if *affinity == ServiceAffinity::ClientIP {
        let config = spec
            .session_affinity_config
            .get_or_insert_with(Default::default);
        let client = config.client_ip.get_or_insert_with(Default::default);
        client.timeout_seconds.get_or_insert(10800);
    }
    let kind = spec.type_.get_or_insert(ServiceType::ClusterIP).clone();
    for port in &mut spec.ports {
        port.protocol.get_or_insert(Protocol::Tcp);
        let unset = match &port.target_port {
            None => true,
            Some(IntOrString::Int(0)) => true,
            Some(IntOrString::String(s)) => s.is_empty(),
            Some(IntOrString::Int(_)) => false,
        };
        if unset {
            port.target_port = Some(IntOrString::Int(port.port));
        }
    }
    let externally_accessible = matches!(kind, ServiceType::NodePort | ServiceType::LoadBalancer)
        || (kind == ServiceType::ClusterIP && !spec.external_ips.is_empty());
    if externally_accessible {
        spec.external_traffic_policy
            .get_or_insert(ServiceExternalTrafficPolicy::Cluster);
    }
    if matches!(
        kind,
        ServiceType::NodePort | ServiceType::LoadBalancer | ServiceType::ClusterIP
    ) {
        spec.internal_traffic_policy
            .get_or_insert(ServiceInternalTrafficPolicy::Cluster);
    }
    if kind == ServiceType::LoadBalancer {
        spec.allocate_load_balancer_node_ports.get_or_insert(true);
    }
}

/// `SetDefaults_PriorityClass`: `PreemptLowerPriority`.
pub fn default_priority_class(class: &mut PriorityClass) {
    class
        .preemption_policy
        .get_or_insert(PreemptionPolicy::PreemptLowerPriority);
}

/// `SetDefaults_StorageClass`: reclaim policy `Delete`, binding mode `Immediate`.
pub fn default_storage_class(class: &mut StorageClass) {
    class
        .reclaim_policy
        .get_or_insert(PersistentVolumeReclaimPolicy::Delete);
    class
        .volume_binding_mode
        .get_or_insert(VolumeBindingMode::Immediate);
}

/// `SetDefaults_CSIDriver`: attach required, no pod info on mount, no storage capacity,
/// `ReadWriteOnceWithFSType`, `Persistent` volumes, no republish, no SELinux mount.
pub fn default_csi_driver(driver: &mut CSIDriver) {
    let spec = &mut driver.spec;
    spec.attach_required.get_or_insert(true);
    spec.pod_info_on_mount.get_or_insert(false);
    spec.storage_capacity.get_or_insert(false);
    spec.fs_group_policy
        .get_or_insert(FSGroupPolicy::ReadWriteOnceWithFSType);
    if spec.volume_lifecycle_modes.is_empty() {
        spec.volume_lifecycle_modes
            .push(VolumeLifecycleMode::Persistent);
    }
    spec.requires_republish.get_or_insert(false);
    spec.se_linux_mount.get_or_insert(false);
}

/// `SetDefaults_Secret` (type `Opaque`) and what the conversion of a v1 Secret does with
/// `stringData`: its entries replace `data`'s, base64-encoded, and it is not kept.
pub fn default_secret(secret: &mut crate::core::v1::Secret) {
    if secret.type_.is_empty() {
        secret.type_ = "Opaque".into();
    }
    for (key, value) in std::mem::take(&mut secret.string_data) {
        secret.data.insert(key, base64(value.as_bytes()));
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Defaults a pod template's spec as upstream defaults a pod spec.
pub fn default_pod_template(template: &mut PodTemplateSpec) {
    default_pod_spec(&mut template.spec);
}

/// Upstream's pod spec defaults, applied through the spec's JSON form. A spec that does not
/// decode again after defaulting (it cannot: only absent fields get values of their schema
/// types) is left as it was.
pub fn default_pod_spec(spec: &mut PodSpec) {
    let Ok(mut value) = serde_json::to_value(&*spec) else {
        return;
    };
    if let Value::Object(map) = &mut value {
        default_pod_spec_json(map);
    }
    if let Ok(defaulted) = serde_json::from_value(value) {
        *spec = defaulted;
    }
}

fn set_if_absent(map: &mut Map<String, Value>, key: &str, value: Value) {
    let absent = match map.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    };
    if absent {
        map.insert(key.to_string(), value);
    }
}

/// `SetDefaults_PodSpec` and what the pod spec's parts default on a JSON pod spec: DNS policy
/// `ClusterFirst`, restart policy `Always`, an empty security context, a 30 s termination grace
/// period, `default-scheduler`; containers, ports, probes and volume modes.
pub fn default_pod_spec_json(spec: &mut Map<String, Value>) {
    set_if_absent(spec, "dnsPolicy", json!("ClusterFirst"));
    set_if_absent(spec, "restartPolicy", json!("Always"));
    set_if_absent(spec, "securityContext", json!({}));
    set_if_absent(spec, "terminationGracePeriodSeconds", json!(30));
    set_if_absent(spec, "schedulerName", json!("default-scheduler"));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(Value::Array(containers)) = spec.get_mut(list) {
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container_json(container);
            }
        }
    }
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        for volume in volumes.iter_mut().filter_map(Value::as_object_mut) {
            default_volume_json(volume);
        }
    }
}

/// The image's tag as upstream's image name parser reads it: after the last `:` that follows
/// the last `/`, none with a digest, `latest` when absent.
fn image_tag(image: &str) -> &str {
    if image.contains('@') {
        return "";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag,
        None => "latest",
    }
}

/// `SetDefaults_Container`, its ports' protocol and its probes' timings.
fn default_container_json(container: &mut Map<String, Value>) {
    let tag = image_tag(
        container
            .get("image")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    let pull = if tag == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    };
    set_if_absent(container, "imagePullPolicy", json!(pull));
    set_if_absent(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    set_if_absent(container, "terminationMessagePolicy", json!("File"));
    if let Some(Value::Array(ports)) = container.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_if_absent(port, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(Value::Object(probe)) = container.get_mut(probe) {
            set_if_absent(probe, "timeoutSeconds", json!(1));
            set_if_absent(probe, "periodSeconds", json!(10));
            set_if_absent(probe, "successThreshold", json!(1));
            set_if_absent(probe, "failureThreshold", json!(3));
            if let Some(Value::Object(get)) = probe.get_mut("httpGet") {
                set_if_absent(get, "path", json!("/"));
                set_if_absent(get, "scheme", json!("HTTP"));
            }
        }
    }
}

/// The default file modes of projected-file volumes (0644).
fn default_volume_json(volume: &mut Map<String, Value>) {
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(Value::Object(source)) = volume.get_mut(source) {
            set_if_absent(source, "defaultMode", json!(0o644));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_without_a_tag_are_pulled_always() {
        let cases = [
            ("nginx", "latest"),
            ("nginx:1.27", "1.27"),
            ("registry:5000/team/app", "latest"),
            ("registry:5000/team/app:v2", "v2"),
            ("app@sha256:abc", ""),
        ];
        for (image, tag) in cases {
            assert_eq!(image_tag(image), tag, "{image}");
        }
    }

    #[test]
    fn base64_pads_like_go() {
        let cases = [
            ("", ""),
            ("a", "YQ=="),
            ("ab", "YWI="),
            ("abc", "YWJj"),
            ("secret", "c2VjcmV0"),
        ];
        for (text, want) in cases {
            assert_eq!(base64(text.as_bytes()), want, "{text}");
        }
    }

    #[test]
    fn job_selector_is_generated_from_the_uid() {
        let mut job = Job::default();
        job.metadata.name = "pi".into();
        job.metadata.uid = "u-1".into();
        job.spec.manual_selector = Some(false);
        std::sync::Arc::make_mut(&mut job.spec.template)
            .metadata
            .labels
            .insert("job-name".into(), "mine".into());
        generate_job_selector(&mut job);
        let labels = &job.spec.template.metadata.labels;
        assert_eq!(labels["job-name"], "mine");
        assert_eq!(labels[JOB_NAME_LABEL], "pi");
        assert_eq!(labels[JOB_CONTROLLER_UID_LABEL], "u-1");
        assert_eq!(labels[LEGACY_JOB_CONTROLLER_UID_LABEL], "u-1");
        let selector = job.spec.selector.as_ref().expect("generated");
        assert_eq!(selector.match_labels[JOB_CONTROLLER_UID_LABEL], "u-1");
        let mut manual = Job::default();
        manual.spec.manual_selector = Some(true);
        generate_job_selector(&mut manual);
        assert!(manual.spec.selector.is_none());
    }

    /// A create decided again under a new uid (the etcd backend's retry) ends with the new uid
    /// in the selector, the template and the Job's labels, and nothing of the old one.
    #[test]
    fn job_selector_follows_a_new_uid() {
        let mut job = Job::default();
        job.metadata.name = "pi".into();
        job.metadata.uid = "old".into();
        job.spec.manual_selector = Some(false);
        std::sync::Arc::make_mut(&mut job.spec.template)
            .metadata
            .labels
            .insert("app".into(), "pi".into());
        generate_job_selector(&mut job);
        let uid = std::mem::take(&mut job.metadata.uid);
        forget_generated_job_selector(&mut job, &uid);
        job.metadata.uid = "new".into();
        generate_job_selector(&mut job);
        let text = serde_json::to_string(&job).expect("json");
        assert!(!text.contains("\"old\""), "{text}");
        let labels = &job.spec.template.metadata.labels;
        assert_eq!(labels[JOB_CONTROLLER_UID_LABEL], "new");
        assert_eq!(labels[LEGACY_JOB_CONTROLLER_UID_LABEL], "new");
        assert_eq!(labels["app"], "pi");
        let selector = job.spec.selector.as_ref().expect("generated");
        assert_eq!(selector.match_labels[JOB_CONTROLLER_UID_LABEL], "new");
        assert_eq!(job.metadata.labels[JOB_CONTROLLER_UID_LABEL], "new");
    }
}
