//! What kube-apiserver does to a pod on its way in, besides validation: the scheme's pod spec
//! defaults (`schedulerName: default-scheduler`, restart and DNS policies, grace period,
//! container pull policies, ...: without a scheduler name a real kube-scheduler ignores the
//! pod), and on create the registry's `PrepareForCreate` status (phase `Pending`, the QoS
//! class) and the Priority admission plugin (the priority and preemption policy of the pod's
//! PriorityClass, the global default's, or 0).

use allot_api::core::v1::{Pod, PreemptionPolicy};
use allot_api::scheduling::v1::PriorityClass;
use allot_store::Store;

/// The built-in classes upstream always has.
const SYSTEM_CLASSES: &[(&str, i32)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// Pod spec defaults, on every write (as upstream's decoder defaults every body).
pub fn default(pod: &mut Pod) {
    allot_api::defaults::workloads::default_pod_spec(&mut pod.spec);
    pod.spec
        .enable_service_links
        .get_or_insert(serde_json::Value::Bool(true));
}

/// Create-time changes: status and priority. `Err` is the Priority plugin's refusal (403).
pub fn prepare_create(pod: &mut Pod, store: &Store) -> Result<(), String> {
    pod.status = Default::default();
    pod.status.phase = Some("Pending".into());
    pod.status.qos_class = Some(allot_kubelet::compute_pod_qos(pod, true).name().into());
    let class_name = pod.spec.priority_class_name.clone().unwrap_or_default();
    let (value, policy) = if class_name.is_empty() {
        match store.list::<PriorityClass>().find(|c| c.global_default) {
            Some(class) => {
                pod.spec.priority_class_name = Some(class.metadata.name.clone());
                (
                    class.value,
                    class
                        .preemption_policy
                        .as_ref()
                        .map(|p| p.as_str().to_string()),
                )
            }
            None => (0, None),
        }
    } else if let Some((_, value)) = SYSTEM_CLASSES.iter().find(|(n, _)| *n == class_name) {
        (*value, None)
    } else {
        match store.get::<PriorityClass>("", &class_name) {
            Some(class) => (
                class.value,
                class
                    .preemption_policy
                    .as_ref()
                    .map(|p| p.as_str().to_string()),
            ),
            None => return Err(format!("no PriorityClass with name {class_name} was found")),
        }
    };
    if pod.spec.priority.is_some_and(|p| p != value) {
        return Err(
            "the integer value of priority must not be provided in pod spec; priority admission controller computed "
                .to_string()
                + &format!("{value} from the given PriorityClass name"),
        );
    }
    pod.spec.priority = Some(value);
    pod.spec.preemption_policy.get_or_insert_with(|| {
        PreemptionPolicy::from(policy.as_deref().unwrap_or("PreemptLowerPriority"))
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_pod_gets_what_kube_apiserver_gives_it() {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": "1"}}}]}
        }))
        .expect("a pod");
        default(&mut pod);
        prepare_create(&mut pod, &Store::new()).expect("admitted");
        let json = serde_json::to_value(&pod).expect("json");
        assert_eq!(json["spec"]["schedulerName"], "default-scheduler");
        assert_eq!(json["spec"]["restartPolicy"], "Always");
        assert_eq!(json["spec"]["priority"], 0);
        assert_eq!(json["spec"]["preemptionPolicy"], "PreemptLowerPriority");
        assert_eq!(json["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(json["status"]["phase"], "Pending");
        assert_eq!(json["status"]["qosClass"], "Burstable");
        let mut missing = pod.clone();
        missing.spec.priority = None;
        missing.spec.priority_class_name = Some("gold".into());
        assert_eq!(
            prepare_create(&mut missing, &Store::new()).expect_err("no class"),
            "no PriorityClass with name gold was found"
        );
    }
}
