//! The Priority admission plugin over the input's pods (the same rule `allot serve` applies
//! on create: `allot_validation::priority`), once every PriorityClass of the input is known.

use std::collections::BTreeMap;
use std::sync::Arc;

use allot_api::scheduling::v1::PriorityClass;
use allot_store::{ObjectKey, Stored};

use crate::InputError;

/// Sets each input pod's priority and preemption policy from its class; a refusal is an
/// input error at the pod's document (`origins`: key → `file:line`).
pub(crate) fn admit_pod_priorities(
    objects: &mut [Stored],
    origins: &BTreeMap<ObjectKey, String>,
    errors: &mut Vec<InputError>,
) {
    let classes: Vec<PriorityClass> = objects
        .iter()
        .filter_map(|o| match o {
            Stored::PriorityClass(c) => Some((**c).clone()),
            _ => None,
        })
        .collect();
    for object in objects.iter_mut() {
        let Stored::Pod(pod) = object else { continue };
        let mut admitted = (**pod).clone();
        match allot_validation::priority::admit_pod_priority(&mut admitted, &classes) {
            Ok(()) => {
                if admitted != **pod {
                    *pod = Arc::new(admitted);
                }
            }
            Err(message) => {
                let key = ObjectKey::new(
                    allot_store::Kind::Pod,
                    pod.metadata.namespace.clone(),
                    pod.metadata.name.clone(),
                );
                let origin = origins.get(&key).map(String::as_str).unwrap_or("");
                let (file, line) = origin.rsplit_once(':').unwrap_or((origin, "0"));
                let field = if message.starts_with("no PriorityClass") {
                    "spec.priorityClassName"
                } else if message.contains("PreemptionPolicy") {
                    "spec.preemptionPolicy"
                } else {
                    "spec.priority"
                };
                errors.push(InputError {
                    file: file.to_string(),
                    line: line.parse().unwrap_or(0),
                    kind: "Pod".into(),
                    object: format!("{}/{}", pod.metadata.namespace, pod.metadata.name),
                    field: field.into(),
                    message: format!("Forbidden: {message}"),
                });
            }
        }
    }
}
