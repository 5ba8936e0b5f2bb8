//! The Priority admission plugin's pod side (upstream `plugin/pkg/admission/priority`), one
//! implementation for `allot simulate` and `allot serve`: on create, a pod's
//! `priorityClassName` (or, without one, the global default class) gives its `spec.priority`
//! and `spec.preemptionPolicy`.
//!
//! The two system classes kube-apiserver creates at start-up (`system-node-critical`,
//! `system-cluster-critical`, both `PreemptLowerPriority`) are known here whether or not the
//! input lists them. With several global defaults (a race upstream allows), the one of lowest
//! value wins, as upstream.

use allot_api::core::v1::{Pod, PreemptionPolicy};
use allot_api::scheduling::v1::PriorityClass;

/// The built-in classes: name and value.
pub const SYSTEM_PRIORITY_CLASSES: &[(&str, i32)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// Sets the pod's priority and preemption policy from its class as the Priority admission
/// plugin does on create. `Err` is the plugin's refusal (kube-apiserver answers 403
/// Forbidden with it): an unknown class, or a `priority`/`preemptionPolicy` already in the
/// spec that differs from the class's.
pub fn admit_pod_priority<'a>(
    pod: &mut Pod,
    classes: impl IntoIterator<Item = &'a PriorityClass>,
) -> Result<(), String> {
    let classes: Vec<&PriorityClass> = classes.into_iter().collect();
    let name = pod.spec.priority_class_name.clone().unwrap_or_default();
    // A class's policy is defaulted to PreemptLowerPriority (SetDefaults_PriorityClass).
    let (value, policy): (i32, Option<PreemptionPolicy>) = if name.is_empty() {
        let default = classes.iter().filter(|c| c.global_default).min_by(|a, b| {
            a.value
                .cmp(&b.value)
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        match default {
            Some(class) => {
                pod.spec.priority_class_name = Some(class.metadata.name.clone());
                (class.value, class.preemption_policy.clone())
            }
            None => (0, Some(PreemptionPolicy::PreemptLowerPriority)),
        }
    } else if let Some(class) = classes.iter().find(|c| c.metadata.name == name) {
        (class.value, class.preemption_policy.clone())
    } else if let Some((_, value)) = SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
        (*value, Some(PreemptionPolicy::PreemptLowerPriority))
    } else {
        return Err(format!("no PriorityClass with name {name} was found"));
    };
    if let Some(given) = pod.spec.priority
        && given != value
    {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        ));
    }
    pod.spec.priority = Some(value);
    let policy = policy.or(Some(PreemptionPolicy::PreemptLowerPriority));
    if let Some(policy) = policy {
        if let Some(given) = &pod.spec.preemption_policy
            && *given != policy
        {
            return Err(format!(
                "the string value of PreemptionPolicy ({}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                given.as_str(),
                policy.as_str()
            ));
        }
        pod.spec.preemption_policy = Some(policy);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i32, default: bool, policy: Option<&str>) -> PriorityClass {
        let mut c = PriorityClass {
            value,
            global_default: default,
            preemption_policy: policy.map(PreemptionPolicy::from),
            ..Default::default()
        };
        c.metadata.name = name.into();
        c
    }

    fn pod(class: Option<&str>) -> Pod {
        let mut p = Pod::default();
        p.spec.priority_class_name = class.map(str::to_string);
        p
    }

    #[test]
    fn class_value_and_policy() {
        let classes = [class("gold", 1000, false, Some("Never"))];
        let mut p = pod(Some("gold"));
        admit_pod_priority(&mut p, &classes).unwrap();
        assert_eq!(p.spec.priority, Some(1000));
        assert_eq!(p.spec.preemption_policy, Some(PreemptionPolicy::Never));
    }

    #[test]
    fn global_default_lowest_value_wins() {
        let classes = [
            class("b", 50, true, Some("PreemptLowerPriority")),
            class("a", 10, true, Some("PreemptLowerPriority")),
        ];
        let mut p = pod(None);
        admit_pod_priority(&mut p, &classes).unwrap();
        assert_eq!(p.spec.priority, Some(10));
        assert_eq!(p.spec.priority_class_name.as_deref(), Some("a"));
    }

    #[test]
    fn no_class_no_default_is_zero() {
        let mut p = pod(None);
        admit_pod_priority(&mut p, []).unwrap();
        assert_eq!(p.spec.priority, Some(0));
        assert_eq!(p.spec.priority_class_name, None);
        assert_eq!(
            p.spec.preemption_policy,
            Some(PreemptionPolicy::PreemptLowerPriority)
        );
    }

    #[test]
    fn system_classes_are_built_in() {
        let mut p = pod(Some("system-node-critical"));
        admit_pod_priority(&mut p, []).unwrap();
        assert_eq!(p.spec.priority, Some(2_000_001_000));
        assert_eq!(
            p.spec.preemption_policy,
            Some(PreemptionPolicy::PreemptLowerPriority)
        );
    }

    #[test]
    fn refusals_as_upstream() {
        let mut p = pod(Some("gold"));
        assert_eq!(
            admit_pod_priority(&mut p, []).unwrap_err(),
            "no PriorityClass with name gold was found"
        );
        let classes = [class("gold", 1000, false, Some("Never"))];
        let mut p = pod(Some("gold"));
        p.spec.priority = Some(5);
        assert_eq!(
            admit_pod_priority(&mut p, &classes).unwrap_err(),
            "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"
        );
        let mut p = pod(Some("gold"));
        p.spec.preemption_policy = Some(PreemptionPolicy::PreemptLowerPriority);
        assert_eq!(
            admit_pod_priority(&mut p, &classes).unwrap_err(),
            "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"
        );
    }
}
