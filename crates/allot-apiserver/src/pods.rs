//! What kube-apiserver does to a pod on its way in, besides validation: the scheme's pod spec
//! defaults (`schedulerName: default-scheduler`, restart and DNS policies, grace period,
//! container pull policies, ...: without a scheduler name a real kube-scheduler ignores the
//! pod), and on create the registry's `PrepareForCreate` status (phase `Pending`, the QoS
//! class) and the Priority admission plugin (the priority and preemption policy of the pod's
//! PriorityClass, the global default's, or 0).

use allot_api::core::v1::Pod;
use allot_api::scheduling::v1::PriorityClass;
use allot_store::Store;

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
    let classes: Vec<PriorityClass> = store.list::<PriorityClass>().cloned().collect();
    allot_validation::priority::admit_pod_priority(pod, &classes)
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
