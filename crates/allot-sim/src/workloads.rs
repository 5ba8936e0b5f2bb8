//! Run durations per workload: a Timeline's `workloads` entries put the
//! `allot.dev/run-duration` (and `allot.dev/exit-code`) annotations on the pod templates (and
//! bare pods) they match, unless those set them.

use std::sync::Arc;

use allot_api::core::v1::PodTemplateSpec;
use allot_api::meta::v1::ObjectMeta;
use allot_nodesim::{EXIT_CODE_ANNOTATION, RUN_DURATION_ANNOTATION};
use allot_store::Stored;

use crate::timeline::WorkloadDefaults;

/// The kinds a `workloads` entry can name.
pub const KINDS: [&str; 7] = [
    "Pod",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
];

fn matches(meta: &ObjectMeta, kind: &str, defaults: &WorkloadDefaults) -> bool {
    let namespace = if meta.namespace.is_empty() {
        "default"
    } else {
        meta.namespace.as_str()
    };
    defaults.kind == kind
        && (defaults.namespace.is_empty() || defaults.namespace == namespace)
        && (defaults.name.is_empty() || defaults.name == meta.name)
}

fn annotate(
    annotations: &mut std::collections::BTreeMap<String, String>,
    defaults: &WorkloadDefaults,
) {
    if annotations.contains_key(RUN_DURATION_ANNOTATION) {
        return;
    }
    annotations.insert(
        RUN_DURATION_ANNOTATION.to_string(),
        defaults.run_duration.clone(),
    );
    if let Some(code) = defaults.exit_code
        && !annotations.contains_key(EXIT_CODE_ANNOTATION)
    {
        annotations.insert(EXIT_CODE_ANNOTATION.to_string(), code.to_string());
    }
}

fn template(t: &mut PodTemplateSpec, defaults: &WorkloadDefaults) {
    annotate(&mut t.metadata.annotations, defaults);
}

/// Applies one `workloads` entry to an object it matches.
pub fn apply_defaults(object: &mut Stored, defaults: &WorkloadDefaults) {
    let kind = object.kind().name();
    if !matches(object.meta(), kind, defaults) {
        return;
    }
    match object {
        Stored::Pod(p) => annotate(&mut Arc::make_mut(p).metadata.annotations, defaults),
        Stored::Deployment(d) => template(&mut Arc::make_mut(d).spec.template, defaults),
        Stored::ReplicaSet(r) => template(&mut Arc::make_mut(r).spec.template, defaults),
        Stored::StatefulSet(s) => template(&mut Arc::make_mut(s).spec.template, defaults),
        Stored::DaemonSet(d) => template(&mut Arc::make_mut(d).spec.template, defaults),
        Stored::Job(j) => template(Arc::make_mut(&mut Arc::make_mut(j).spec.template), defaults),
        Stored::CronJob(c) => template(
            Arc::make_mut(&mut Arc::make_mut(c).spec.job_template.spec.template),
            defaults,
        ),
        _ => {}
    }
}
