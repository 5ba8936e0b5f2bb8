//! Gangs as units: each `scheduling.k8s.io` PodGroup with a `gang` policy, whether it was
//! scheduled as a unit (at least `minCount` of its pods bound) and, if not, why, for the
//! table's "Gangs:" section, `-o json`'s report and the what-if answer.

use allot_api::core::v1::Pod;
use allot_api::scheduling::v1beta1::PodGroup;
use allot_store::Store;
use serde::Serialize;

/// The text of a gang pod rejected at Permit when its gang did not form in time.
const TIMEOUT_PREFIX: &str = "rejected due to timeout after waiting";

/// One gang's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gang {
    /// The PodGroup's namespace.
    pub namespace: String,
    /// The PodGroup's name.
    pub name: String,
    /// `spec.schedulingPolicy.gang.minCount`.
    pub min_count: usize,
    /// Its pods (neither deleted nor finished before being bound).
    pub pods: usize,
    /// Its pods bound to a node.
    pub bound: usize,
    /// At least `minCount` pods bound.
    pub scheduled: bool,
    /// Why the gang is not scheduled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn scheduled_message(pod: &Pod) -> Option<String> {
    pod.status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.message.clone())
}

/// The gangs of the store, in namespace and name order.
pub fn gangs(store: &Store) -> Vec<Gang> {
    let mut out = Vec::new();
    for group in store.list::<PodGroup>() {
        let Some(gang) = group
            .spec
            .scheduling_policy
            .as_ref()
            .and_then(|p| p.gang.as_ref())
        else {
            continue;
        };
        let ns = &group.metadata.namespace;
        let members: Vec<&Pod> = store
            .list_in::<Pod>(ns)
            .filter(|p| {
                p.spec
                    .scheduling_group
                    .as_ref()
                    .is_some_and(|g| g.pod_group_name == group.metadata.name)
            })
            .collect();
        let min_count = usize::try_from(gang.min_count).unwrap_or(0);
        let bound = members
            .iter()
            .filter(|p| p.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()))
            .count();
        let scheduled = bound >= min_count && bound > 0;
        let reason = (!scheduled).then(|| reason(&members, min_count));
        out.push(Gang {
            namespace: ns.clone(),
            name: group.metadata.name.clone(),
            min_count,
            pods: members.len(),
            bound,
            scheduled,
            reason,
        });
    }
    out
}

/// Why a gang is not scheduled: too few pods, a member that fits nowhere (its scheduler
/// message), or the gang timing out at Permit.
fn reason(members: &[&Pod], min_count: usize) -> String {
    if members.len() < min_count {
        return format!(
            "{} of minCount {min_count} pods exist: waiting for minCount pods from a gang to appear in scheduling queue",
            members.len()
        );
    }
    let unbound: Vec<&&Pod> = members
        .iter()
        .filter(|p| p.spec.node_name.as_deref().is_none_or(str::is_empty))
        .collect();
    let failing: Vec<(&&Pod, String)> = unbound
        .iter()
        .filter_map(|p| scheduled_message(p).map(|m| (*p, m)))
        .filter(|(_, m)| !m.starts_with(TIMEOUT_PREFIX))
        .collect();
    let fit = unbound.len() - failing.len();
    if let Some((pod, message)) = failing.first() {
        let others = match failing.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return format!(
            "only {fit} of its pods fit at once (minCount {min_count}); {}/{}{others} cannot be placed: {message}",
            pod.metadata.namespace, pod.metadata.name
        );
    }
    match unbound.iter().find_map(|p| scheduled_message(p)) {
        Some(message) => format!("the gang did not form before its timeout: {message}"),
        None => "waiting at Permit for minCount pods of the gang".to_string(),
    }
}

/// The table's "Gangs:" lines.
pub fn lines(gangs: &[Gang]) -> Vec<String> {
    gangs
        .iter()
        .map(|g| {
            let head = format!(
                "{}/{} (minCount {}): {} of {} pods bound",
                g.namespace, g.name, g.min_count, g.bound, g.pods
            );
            match &g.reason {
                None => format!("{head}, scheduled as a unit"),
                Some(reason) => format!("{head}, does not fit as a unit: {reason}"),
            }
        })
        .collect()
}
