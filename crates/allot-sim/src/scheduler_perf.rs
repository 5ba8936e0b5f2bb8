//! kube-scheduler's scheduler_perf workloads (test/integration/scheduler_perf in Kubernetes
//! 1.37) as allot inputs: the same nodes, pods and counts as the `performance` workloads, so
//! allot's throughput can be compared with the thresholds upstream's CI enforces.
//!
//! Faithful to the templates: nodes have 4 CPUs, 32Gi and 110 pods (`node-default.yaml`; the
//! API server defaults `allocatable` to `capacity`, written out here) and no
//! `kubernetes.io/hostname` label (upstream's node preparer sets none); pods ask for 100m CPU
//! and 500Mi with a container port 80 (`pod-default.yaml` and friends). Upstream creates the
//! init pods, waits for them, then measures the others; allot loads all at once, init pods
//! first in the queue (their names sort first), and reports the rate over every pod.

use serde_json::{Value, json};

/// One workload: what it creates and upstream's threshold (pods/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Upstream's `name/workload`.
    pub name: &'static str,
    /// Nodes.
    pub nodes: usize,
    /// Pods created (and scheduled) before the measured ones.
    pub init_pods: usize,
    /// Measured pods.
    pub measure_pods: usize,
    /// Upstream's threshold in pods/s (the measured pods' average throughput).
    pub threshold: u32,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Basic,
    PodAntiAffinity,
    PodAffinity,
    TopologySpreading,
}

/// The workloads (the 5,000-node `performance` ones).
pub const WORKLOADS: [Workload; 4] = [
    Workload {
        name: "SchedulingBasic/5000Nodes_50000Pods",
        nodes: 5000,
        init_pods: 5000,
        measure_pods: 50000,
        threshold: 810,
        kind: Kind::Basic,
    },
    Workload {
        name: "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
        nodes: 5000,
        init_pods: 1000,
        measure_pods: 2000,
        threshold: 60,
        kind: Kind::PodAntiAffinity,
    },
    Workload {
        name: "SchedulingPodAffinity/5000Nodes_5000Pods",
        nodes: 5000,
        init_pods: 5000,
        measure_pods: 5000,
        threshold: 35,
        kind: Kind::PodAffinity,
    },
    Workload {
        name: "TopologySpreading/5000Nodes_5000Pods",
        nodes: 5000,
        init_pods: 5000,
        measure_pods: 5000,
        threshold: 460,
        kind: Kind::TopologySpreading,
    },
];

/// The workload whose name starts with `prefix` (e.g. `SchedulingBasic`).
pub fn workload(prefix: &str) -> Option<Workload> {
    WORKLOADS
        .iter()
        .copied()
        .find(|w| w.name.starts_with(prefix))
}

impl Workload {
    /// The same workload with `nodes` nodes and the pod counts scaled alike.
    pub fn scaled(self, nodes: usize) -> Workload {
        let scale = |n: usize| (n * nodes).div_ceil(self.nodes);
        Workload {
            nodes,
            init_pods: scale(self.init_pods),
            measure_pods: scale(self.measure_pods),
            ..self
        }
    }

    /// Every pod.
    pub fn pods(&self) -> usize {
        self.init_pods + self.measure_pods
    }

    /// The documents, in creation order: namespaces, nodes, init pods, measured pods.
    pub fn documents(&self) -> Vec<Value> {
        let mut out = Vec::with_capacity(2 + self.nodes + self.pods());
        let namespaced = !matches!(self.kind, Kind::Basic | Kind::TopologySpreading);
        if namespaced {
            for ns in ["sched-0", "sched-1"] {
                out.push(
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                );
            }
        }
        for i in 0..self.nodes {
            let mut labels = serde_json::Map::new();
            match self.kind {
                Kind::PodAffinity => {
                    labels.insert("topology.kubernetes.io/zone".into(), json!("zone1"));
                }
                Kind::TopologySpreading => {
                    let zone = ["moon-1", "moon-2", "moon-3"][i % 3];
                    labels.insert("topology.kubernetes.io/zone".into(), json!(zone));
                }
                _ => {}
            }
            let resources = json!({"pods": "110", "cpu": "4", "memory": "32Gi"});
            out.push(json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": format!("scheduler-perf-{i:05}"), "labels": labels},
                "spec": {},
                "status": {
                    "capacity": resources,
                    "allocatable": resources,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }));
        }
        let (init_ns, measure_ns) = if namespaced {
            ("sched-0", "sched-1")
        } else {
            ("default", "default")
        };
        for i in 0..self.pods() {
            let init = i < self.init_pods;
            let namespace = if init { init_ns } else { measure_ns };
            let name = if init {
                format!("init-{i:06}")
            } else {
                format!("pod-{:06}", i - self.init_pods)
            };
            out.push(self.pod(&name, namespace, init));
        }
        out
    }

    fn pod(&self, name: &str, namespace: &str, init: bool) -> Value {
        let container = json!({
            "name": "pause",
            "image": "registry.k8s.io/pause:3.10.1",
            "ports": [{"containerPort": 80}],
            "resources": {
                "limits": {"cpu": "100m", "memory": "500Mi"},
                "requests": {"cpu": "100m", "memory": "500Mi"},
            },
        });
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [container]},
        });
        let term = |color: &str, key: &str| {
            json!({
                "labelSelector": {"matchLabels": {"color": color}},
                "topologyKey": key,
                "namespaces": ["sched-1", "sched-0"],
            })
        };
        match self.kind {
            Kind::Basic => {}
            Kind::PodAntiAffinity => {
                pod["metadata"]["labels"] = json!({"color": "green"});
                pod["spec"]["affinity"] = json!({"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term("green", "kubernetes.io/hostname")],
                }});
            }
            Kind::PodAffinity => {
                pod["metadata"]["labels"] = json!({"color": "blue"});
                pod["spec"]["affinity"] = json!({"podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term("blue", "topology.kubernetes.io/zone")],
                }});
            }
            Kind::TopologySpreading if !init => {
                pod["metadata"]["labels"] = json!({"color": "blue"});
                pod["spec"]["topologySpreadConstraints"] = json!([{
                    "maxSkew": 5,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"color": "blue"}},
                }]);
            }
            Kind::TopologySpreading => {}
        }
        pod
    }

    /// The documents as loadable texts (see [`crate::generate::cluster_texts`]).
    pub fn texts(&self) -> Vec<(String, String)> {
        self.documents()
            .chunks(crate::generate::DOCUMENTS_PER_TEXT)
            .enumerate()
            .map(|(index, chunk)| {
                let mut text = String::new();
                for document in chunk {
                    text.push_str("---\n");
                    text.push_str(&document.to_string());
                    text.push('\n');
                }
                (format!("scheduler-perf-{index:04}.yaml"), text)
            })
            .collect()
    }

    /// Loads the workload.
    pub fn load(&self) -> Result<crate::Input, crate::SimError> {
        let texts = self.texts();
        let borrowed: Vec<(&str, &str)> = texts
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        crate::load_texts(&borrowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_workloads_load_and_schedule_every_pod() {
        for w in WORKLOADS {
            let w = w.scaled(10);
            let mut input = w.load().unwrap_or_else(|e| panic!("{}: {e}", w.name));
            let outcome = crate::run_moving(&mut input, &mut |_| {}).expect("runs");
            let pods: Vec<_> = outcome.store.list::<allot_api::core::v1::Pod>().collect();
            assert_eq!(pods.len(), w.pods(), "{}", w.name);
            let bound = pods.iter().filter(|p| p.spec.node_name.is_some()).count();
            // Anti-affinity on a label the nodes lack constrains nothing (as upstream).
            assert_eq!(bound, w.pods(), "{}", w.name);
        }
    }
}
