//! ImageLocality (PreScore, Score): nodes that already have the pod's container images score
//! higher, by the images' sizes scaled by how many nodes have them (so that images on every
//! node do not pull all pods to the same nodes).

use crate::cache::{NodeInfo, NodeSummary};
use crate::framework::{
    Ctx, CycleState, MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreScorePlugin, ScorePlugin,
    Status,
};

/// The plugin's name.
pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this sum the score is 0.
const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, above this the score is the highest.
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The plugin.
#[derive(Debug, Default)]
pub struct ImageLocality;

/// PreScore state: the pod's images (normalized, one per container) with the number of nodes
/// that have each, the number of containers and of nodes.
#[derive(Debug, Clone)]
struct Images {
    images: Vec<(String, usize)>,
    containers: usize,
    nodes: usize,
}

/// Upstream `normalizedImageName`: a name without a tag gets `:latest`.
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':');
    let slash = name.rfind('/');
    if colon.is_none_or(|c| slash.is_some_and(|s| c <= s)) {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// Upstream `calculatePriority`.
fn priority(sum: i64, containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * containers as i64;
    let sum = sum.max(MIN_THRESHOLD).min(max_threshold.max(MIN_THRESHOLD));
    if max_threshold <= MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

impl Plugin for ImageLocality {
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

impl PreScorePlugin for ImageLocality {
    /// Skip when no node has any of the pod's images (every node scores 0).
    fn pre_score(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[usize],
    ) -> Status {
        let containers = pod.pod.spec.init_containers.len() + pod.pod.spec.containers.len();
        if !ctx.cluster.has_images() {
            return Status::skip();
        }
        let images: Vec<(String, usize)> = pod
            .pod
            .spec
            .init_containers
            .iter()
            .chain(&pod.pod.spec.containers)
            .filter_map(|c| c.image.as_deref())
            .map(normalized_image_name)
            .map(|name| {
                let n = ctx.cluster.image_node_count(&name);
                (name, n)
            })
            .collect();
        if images.iter().all(|(_, n)| *n == 0) {
            return Status::skip();
        }
        state.write(Images {
            images,
            containers,
            nodes: ctx.cluster.node_count(),
        });
        Status::success()
    }
}

impl ScorePlugin for ImageLocality {
    fn score(
        &mut self,
        ctx: &Ctx<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let Some(images) = state.read::<Images>() else {
            // Without PreScore: compute what it would have.
            let mut fresh = CycleState::new();
            if !self.pre_score(ctx, &mut fresh, pod, &[]).is_success() {
                return Ok(0);
            }
            return self.score(ctx, &fresh, pod, node);
        };
        let Some(have) = &node.images else {
            return Ok(0);
        };
        let mut sum = 0i64;
        for (name, nodes) in &images.images {
            if let Some(size) = have.get(name) {
                let spread = *nodes as f64 / images.nodes.max(1) as f64;
                sum += (*size as f64 * spread) as i64;
            }
        }
        Ok(priority(sum, images.containers))
    }

    /// A node without images scores 0.
    fn score_summaries(
        &mut self,
        _state: &CycleState,
        summaries: &[NodeSummary],
        out: &mut [NodeScore],
    ) {
        for o in out {
            if summaries.get(o.slot).is_some_and(|s| !s.images) {
                o.score = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_priority_follow_upstream() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.2"), "nginx:1.2");
        assert_eq!(
            normalized_image_name("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(priority(0, 1), 0);
        assert_eq!(priority(MAX_CONTAINER_THRESHOLD, 1), 100);
        assert_eq!(priority(500 * MB, 1), 48);
    }
}
