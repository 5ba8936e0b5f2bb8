//! Generated clusters for scale tests: nodes with GPUs on two NUMA nodes, one GPU DeviceClass, a
//! claim template, and pods of which as many as there are GPUs ask for one through the template.

use serde_json::{Value, json};

use crate::timeline::NODE_SELECTOR_ANNOTATION;

/// The size of a generated cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenOptions {
    /// Nodes.
    pub nodes: usize,
    /// GPUs per node.
    pub devices_per_node: usize,
    /// Pods.
    pub pods: usize,
}

/// The driver of generated devices.
pub const DRIVER: &str = "gpu.example.com";
/// The label every generated node carries (its NodeTopology selects on it).
pub const GENERATED_LABEL: &str = "allot.dev/generated";

/// Zero-padded names sort like numbers.
fn node_name(index: usize) -> String {
    format!("node-{index:05}")
}

/// The cluster's documents, in the order they should be created: DeviceClass, claim template,
/// NodeTopology, then per node its Node and ResourceSlice, then the pods.
pub fn cluster(options: GenOptions) -> Vec<Value> {
    let mut out = Vec::with_capacity(3 + 2 * options.nodes + options.pods);
    out.push(json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]},
    }));
    out.push(json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
        ]}}},
    }));
    // One topology for every generated node: 2 sockets, each one NUMA node with 16 cores of
    // 2 threads; thread siblings are id and id + 32, as on Linux.
    let cpus: Vec<Value> = (0..64u32)
        .map(|id| {
            let core = id % 32;
            let socket = core / 16;
            json!({"id": id, "core": core, "socket": socket, "numa": socket, "uncoreCache": socket})
        })
        .collect();
    out.push(json!({
        "apiVersion": allot_topology::API_VERSION,
        "kind": allot_topology::KIND,
        "metadata": {
            "name": "generated",
            "annotations": {NODE_SELECTOR_ANNOTATION: format!("{GENERATED_LABEL}=true")},
        },
        "cpus": cpus,
        "numaNodes": [
            {"id": 0, "memory": "128Gi", "distances": [{"node": 0, "distance": 10}, {"node": 1, "distance": 21}]},
            {"id": 1, "memory": "128Gi", "distances": [{"node": 0, "distance": 21}, {"node": 1, "distance": 10}]},
        ],
    }));
    for n in 0..options.nodes {
        let name = node_name(n);
        out.push(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {
                GENERATED_LABEL: "true",
                "kubernetes.io/hostname": name,
            }},
            "status": {
                "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            },
        }));
        let devices: Vec<Value> = (0..options.devices_per_node)
            .map(|d| {
                let numa = if options.devices_per_node > 1 {
                    (2 * d / options.devices_per_node) as i64
                } else {
                    0
                };
                json!({
                    "name": format!("gpu-{d}"),
                    "attributes": {
                        "gpu.example.com/model": {"string": "A100"},
                        "gpu.example.com/numa": {"int": numa},
                    },
                    "capacity": {"gpu.example.com/memory": {"value": "80Gi"}},
                })
            })
            .collect();
        out.push(json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": format!("{name}-gpu.example.com")},
            "spec": {
                "driver": DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }));
    }
    let gpus = options.nodes * options.devices_per_node;
    let gpu_pods = gpus.min(options.pods);
    for p in 0..options.pods {
        // Spread the GPU pods evenly among all pods.
        let wants_gpu = options.pods > 0
            && (p * gpu_pods) / options.pods != ((p + 1) * gpu_pods) / options.pods;
        let mut container = json!({
            "name": "main",
            "image": "registry.example.com/worker:1",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        });
        let mut spec = json!({"containers": []});
        if wants_gpu {
            container["resources"]["claims"] = json!([{"name": "gpu"}]);
            spec["resourceClaims"] =
                json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]);
        }
        spec["containers"] = json!([container]);
        out.push(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("pod-{p:06}"), "namespace": "default"},
            "spec": spec,
        }));
    }
    out
}

/// A generated cluster (every pod of `options` placed when it fits) plus `pending` pods
/// asking for one GPU each through the template, named `extra-NNNNNN`: the scale-up case of
/// issue 20 (1,000 nodes x 8 GPUs, 8,000 pods, 5,000 pending), as loadable texts.
pub fn scale_up_texts(options: GenOptions, pending: usize) -> Vec<(String, String)> {
    let mut documents = cluster(options);
    for p in 0..pending {
        documents.push(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("extra-{p:06}"), "namespace": "default"},
            "spec": {
                "containers": [{
                    "name": "main",
                    "image": "registry.example.com/worker:1",
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "claims": [{"name": "gpu"}],
                    },
                }],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            },
        }));
    }
    texts(&documents, "scale-up")
}

/// A `NodeShape` file of generated nodes with `devices` GPUs (see [`crate::shape`]).
pub fn node_shape_text(name: &str, devices: usize) -> String {
    let mut documents = cluster(GenOptions {
        nodes: 1,
        devices_per_node: devices,
        pods: 0,
    });
    // The node and its slice; the class, template and topology are the cluster's.
    documents.retain(|d| d["kind"] == "Node" || d["kind"] == "ResourceSlice");
    let mut text =
        format!("apiVersion: allot.dev/v1alpha1\nkind: NodeShape\nmetadata: {{name: {name}}}\n");
    for document in documents {
        text.push_str("---\n");
        text.push_str(
            &document
                .to_string()
                .replace(&node_name(0), crate::shape::NODE_NAME),
        );
        text.push('\n');
    }
    text
}

fn texts(documents: &[Value], prefix: &str) -> Vec<(String, String)> {
    documents
        .chunks(DOCUMENTS_PER_TEXT)
        .enumerate()
        .map(|(index, chunk)| {
            let mut text = String::new();
            for document in chunk {
                text.push_str("---\n");
                text.push_str(&document.to_string());
                text.push('\n');
            }
            (format!("{prefix}-{index:04}.yaml"), text)
        })
        .collect()
}

/// The most documents one generated text holds: the YAML parser limits documents per stream.
pub const DOCUMENTS_PER_TEXT: usize = 1000;

/// The cluster as texts of at most [`DOCUMENTS_PER_TEXT`] documents each, one JSON object per
/// document (JSON is YAML), named `generated-NNNN.yaml`; the loader reads them like any
/// manifests.
pub fn cluster_texts(options: GenOptions) -> Vec<(String, String)> {
    texts(&cluster(options), "generated")
}

/// Loads a generated cluster.
pub fn load_generated(options: GenOptions) -> Result<crate::Input, crate::SimError> {
    let texts = cluster_texts(options);
    let borrowed: Vec<(&str, &str)> = texts
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    crate::load_texts(&borrowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_cluster_loads_and_validates() {
        let input = load_generated(GenOptions {
            nodes: 3,
            devices_per_node: 2,
            pods: 8,
        })
        .expect("valid");
        // DeviceClass, template, 3 nodes, 3 slices, 8 pods.
        assert_eq!(input.objects.len(), 2 + 3 + 3 + 8);
        assert_eq!(input.topologies.len(), 1);
        let gpu_pods = input
            .objects
            .iter()
            .filter(|o| match o {
                allot_store::Stored::Pod(p) => !p.spec.resource_claims.is_empty(),
                _ => false,
            })
            .count();
        assert_eq!(gpu_pods, 6);
    }

    #[test]
    fn big_clusters_are_split_into_loadable_texts() {
        let options = GenOptions {
            nodes: 300,
            devices_per_node: 1,
            pods: 1500,
        };
        let texts = cluster_texts(options);
        assert_eq!(texts.len(), 3);
        let input = load_generated(options).expect("valid");
        assert_eq!(input.objects.len(), 2 + 600 + 1500);
    }

    #[test]
    fn generated_nodes_get_the_generated_topology() {
        let input = load_generated(GenOptions {
            nodes: 1,
            devices_per_node: 1,
            pods: 0,
        })
        .expect("valid");
        let node = input
            .objects
            .iter()
            .find_map(|o| match o {
                allot_store::Stored::Node(n) => Some(n.clone()),
                _ => None,
            })
            .expect("a node");
        let (topology, _) = input.node_setup(&node);
        assert_eq!(topology.cpus.len(), 64);
        assert_eq!(topology.metadata.name, "node-00000");
    }
}
