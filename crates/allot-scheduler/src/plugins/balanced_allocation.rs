//! NodeResourcesBalancedAllocation (PreScore, Score): nodes whose resource fractions (requested
//! with the pod over allocatable, actual requests) are closest to each other score higher;
//! best-effort pods (no request of the scored resources) are not scored.

use serde::Deserialize;

use crate::cache::{NodeInfo, NodeSummary};
use crate::framework::{
    Ctx, CycleState, MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreScorePlugin, ScorePlugin,
    Status,
};

use super::node_resources_fit::{
    ResourceSpec, allocatable_requested, default_resources, pod_score_requests,
};

/// The plugin's name.
pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// The resources compared (default CPU and memory); weights are ignored.
    #[serde(default)]
    pub resources: Option<Vec<ResourceSpec>>,
}

/// The plugin.
#[derive(Debug)]
pub struct BalancedAllocation {
    resources: Vec<ResourceSpec>,
    cpu_memory: bool,
    memo: Vec<([i64; 4], i64)>,
}

/// PreScore state: the pod's actual requests of the resources.
#[derive(Debug, Clone)]
struct Requests(Vec<i64>);

impl BalancedAllocation {
    /// The plugin with its arguments.
    pub fn new(args: Args) -> Self {
        let resources = args.resources.unwrap_or_else(default_resources);
        let cpu_memory =
            resources.len() == 2 && resources[0].name == "cpu" && resources[1].name == "memory";
        BalancedAllocation {
            resources,
            cpu_memory,
            memo: Vec::new(),
        }
    }
}

/// Upstream `balancedResourceScorer`: `(1 - std) * 100` of the fractions (capped at 1) of the
/// resources the node has.
pub fn balanced_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let fractions: Vec<f64> = requested
        .iter()
        .zip(allocatable)
        .filter(|(_, a)| **a != 0)
        .map(|(r, a)| (*r as f64 / *a as f64).min(1.0))
        .collect();
    let std = match fractions.len() {
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n if n > 2 => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            let sum: f64 = fractions.iter().map(|f| (f - mean) * (f - mean)).sum();
            (sum / n as f64).sqrt()
        }
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_score(&mut self) -> Option<&mut dyn PreScorePlugin> {
        Some(self)
    }

    fn as_score(&mut self) -> Option<&mut dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for BalancedAllocation {
    /// Skip for best-effort pods (upstream issue 129138: else they all pile on one node).
    fn pre_score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[usize],
    ) -> Status {
        let requests = pod_score_requests(&pod.pod, &self.resources, true);
        if requests.iter().all(|r| *r == 0) {
            return Status::skip();
        }
        state.write(Requests(requests));
        Status::success()
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let owned;
        let requests = match state.read::<Requests>() {
            Some(r) => &r.0,
            None => {
                owned = pod_score_requests(&pod.pod, &self.resources, true);
                if owned.iter().all(|r| *r == 0) {
                    return Ok(0);
                }
                &owned
            }
        };
        let mut requested = Vec::with_capacity(requests.len());
        let mut allocatable = Vec::with_capacity(requests.len());
        for (spec, want) in self.resources.iter().zip(requests) {
            let (a, r) = allocatable_requested(node, &spec.name, *want, true);
            allocatable.push(a);
            requested.push(if a == 0 { 0 } else { r });
        }
        Ok(balanced_score(&requested, &allocatable))
    }

    fn score_summaries(
        &mut self,
        state: &CycleState,
        summaries: &[NodeSummary],
        out: &mut [NodeScore],
    ) {
        if !self.cpu_memory {
            return;
        }
        let Some(requests) = state.read::<Requests>() else {
            return;
        };
        let (cpu, memory) = (requests.0[0], requests.0[1]);
        if self.memo.len() < summaries.len() {
            self.memo.resize(summaries.len(), ([-1; 4], 0));
        }
        for o in out {
            let (Some(summary), Some(memo)) = (summaries.get(o.slot), self.memo.get_mut(o.slot))
            else {
                continue;
            };
            let inputs = [
                summary.allocatable[0],
                summary.requested[0] + cpu,
                summary.allocatable[1],
                summary.requested[1] + memory,
            ];
            if memo.0 != inputs {
                *memo = (
                    inputs,
                    balanced_score(&[inputs[1], inputs[3]], &[inputs[0], inputs[2]]),
                );
            }
            o.score = memo.1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_resources_use_half_the_difference() {
        assert_eq!(balanced_score(&[2000, 0], &[4000, 10000]), 75);
        assert_eq!(balanced_score(&[3000, 5000], &[6000, 10000]), 100);
        // A resource the node lacks is left out: one fraction, no deviation.
        assert_eq!(balanced_score(&[3000, 5], &[6000, 0]), 100);
    }
}
