//! Why a pod fits nowhere, and the message kube-scheduler writes for it (upstream `FitError`).

use std::collections::BTreeMap;

use super::status::Status;

/// What the filters found for a pod that fits nowhere (upstream `Diagnosis`).
#[derive(Debug, Clone, Default)]
pub struct Diagnosis {
    /// Per rejected node slot, the status of the plugin that rejected it.
    pub node_statuses: Vec<(usize, Status)>,
    /// The status of the nodes a PreFilter result left out (they count once each).
    pub absent: Option<(usize, Status)>,
    /// A PreFilter plugin's rejection message (then no node was filtered).
    pub pre_filter_msg: Option<String>,
    /// PostFilter plugins' message.
    pub post_filter_msg: Option<String>,
}

/// A pod that fits on none of the cluster's nodes.
#[derive(Debug, Clone)]
pub struct FitError {
    /// How many nodes the cluster has.
    pub num_all_nodes: usize,
    /// Why.
    pub diagnosis: Diagnosis,
}

impl FitError {
    /// The message as upstream's `FitError.Error()` writes it:
    /// `0/N nodes are available: <PreFilter message>.` or the sorted histogram of every
    /// rejected node's reasons (`2 node(s) didn't match pod anti-affinity rules, 1 ...`),
    /// followed by the PostFilter message when a PostFilter plugin ran.
    pub fn message(&self) -> String {
        let mut out = format!("0/{} nodes are available:", self.num_all_nodes);
        if let Some(msg) = &self.diagnosis.pre_filter_msg {
            out.push_str(&format!(" {msg}."));
        } else {
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, status) in &self.diagnosis.node_statuses {
                for reason in status.reasons() {
                    *counts.entry(reason.as_ref()).or_insert(0) += 1;
                }
            }
            if let Some((n, status)) = &self.diagnosis.absent {
                for reason in status.reasons() {
                    *counts.entry(reason.as_ref()).or_insert(0) += n;
                }
            }
            let mut histogram: Vec<String> =
                counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
            histogram.sort();
            if !histogram.is_empty() {
                out.push_str(&format!(" {}.", histogram.join(", ")));
            }
        }
        if let Some(msg) = &self.diagnosis.post_filter_msg {
            out.push_str(&format!(" {msg}"));
        }
        if out.ends_with(':') {
            // No reason at all (no nodes): "0/0 nodes are available."
            out.pop();
            out.push('.');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;

    #[test]
    fn histogram_is_sorted_as_strings() {
        let anti = Status::unschedulable("node(s) didn't match pod anti-affinity rules");
        let spread = Status::unschedulable("node(s) didn't match pod topology spread constraints");
        let fit = Status::with_reasons(
            Code::Unschedulable,
            vec!["Insufficient cpu".into(), "Insufficient memory".into()],
        );
        let error = FitError {
            num_all_nodes: 12,
            diagnosis: Diagnosis {
                node_statuses: vec![
                    (0, anti.clone()),
                    (1, anti),
                    (2, spread),
                    (3, fit.clone()),
                    (4, fit),
                ],
                absent: Some((
                    7,
                    Status::unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"),
                )),
                ..Default::default()
            },
        };
        assert_eq!(
            error.message(),
            "0/12 nodes are available: 1 node(s) didn't match pod topology spread constraints, \
             2 Insufficient cpu, 2 Insufficient memory, 2 node(s) didn't match pod anti-affinity \
             rules, 7 node(s) didn't satisfy plugin(s) [NodeAffinity]."
        );
    }

    #[test]
    fn pre_filter_and_post_filter_messages() {
        let error = FitError {
            num_all_nodes: 3,
            diagnosis: Diagnosis {
                pre_filter_msg: Some("pod has unbound immediate PersistentVolumeClaims".into()),
                post_filter_msg: Some(
                    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
                        .into(),
                ),
                ..Default::default()
            },
        };
        assert_eq!(
            error.message(),
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. \
             preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        );
        let none = FitError {
            num_all_nodes: 0,
            diagnosis: Diagnosis::default(),
        };
        assert_eq!(none.message(), "0/0 nodes are available.");
    }
}
