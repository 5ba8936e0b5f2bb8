//! What a run shows: the final state as one `v1 List`, and a table of pods.

use std::collections::BTreeSet;

use allot_api::core::v1::Pod;
use allot_store::Store;
use allot_topology::CpuSet;

/// The pod annotation in which node agents report each container's CPUs, memory and devices,
/// shaped like the kubelet's PodResources API.
pub const RESOURCES_ANNOTATION: &str = "allot.dev/resources";

/// Every object's final state as one `v1 List`, in kind order then namespace and name.
pub fn list(store: &Store) -> serde_json::Value {
    let items: Vec<serde_json::Value> = store.iter().map(|(_, o)| o.to_json()).collect();
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": items,
        "metadata": {"resourceVersion": ""},
    })
}

/// The same `v1 List` as [`list`], serialised object by object as a serializer asks for it,
/// so writing a large cluster's final state never holds the whole list (as JSON values or as
/// text) in memory. The keys come in `list`'s order; the run's report, when given, is the last
/// item.
pub struct List<'a>(pub &'a Store, pub Option<&'a crate::record::Report>);

impl serde::Serialize for List<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("apiVersion", "v1")?;
        map.serialize_entry("kind", "List")?;
        map.serialize_entry("items", &Items(self.0, self.1))?;
        map.serialize_entry("metadata", &serde_json::json!({"resourceVersion": ""}))?;
        map.end()
    }
}

/// The items of [`List`].
struct Items<'a>(&'a Store, Option<&'a crate::record::Report>);

impl serde::Serialize for Items<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let count = self.0.iter().count() + usize::from(self.1.is_some());
        let mut seq = serializer.serialize_seq(Some(count))?;
        for (_, object) in self.0.iter() {
            seq.serialize_element(&object.to_json())?;
        }
        if let Some(report) = self.1 {
            seq.serialize_element(&report.to_json(&|_| true))?;
        }
        seq.end()
    }
}

/// The names of a pod's claims as `(pod claim name, ResourceClaim name)`; the second is empty
/// while a claim from a template has not been created. The claim the scheduler made for the
/// pod's extended resources (DRAExtendedResource) comes last, as `extended-resources`.
pub fn pod_claims(pod: &Pod) -> Vec<(String, String)> {
    let extended = pod
        .status
        .extended_resource_claim_status
        .as_ref()
        .and_then(|s| s.get("resourceClaimName"))
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .map(|n| ("extended-resources".to_string(), n.to_string()));
    pod.spec
        .resource_claims
        .iter()
        .map(|claim| {
            let name = match &claim.resource_claim_name {
                Some(name) => name.clone(),
                None => pod
                    .status
                    .resource_claim_statuses
                    .iter()
                    .find(|s| s.name == claim.name)
                    .and_then(|s| s.resource_claim_name.clone())
                    .unwrap_or_default(),
            };
            (claim.name.clone(), name)
        })
        .chain(extended)
        .collect()
}

/// Why a pod is not running: the failure reason and message, or the `PodScheduled=False`
/// message, or that it waits.
pub fn pod_problem(pod: &Pod) -> String {
    if pod.status.phase.as_deref() == Some("Failed") {
        let reason = pod.status.reason.clone().unwrap_or_default();
        let message = pod.status.message.clone().unwrap_or_default();
        return match (reason.is_empty(), message.is_empty()) {
            (false, false) => format!("{reason}: {message}"),
            (false, true) => reason,
            (true, false) => message,
            (true, true) => "Failed".to_string(),
        };
    }
    match pod
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    {
        Some(condition) => {
            let reason = condition.reason.clone().unwrap_or_default();
            let message = condition.message.clone().unwrap_or_default();
            if reason.is_empty() {
                message
            } else {
                format!("{reason}: {message}")
            }
        }
        None if pod.spec.node_name.is_none() => "not scheduled yet".to_string(),
        None => "waiting on its node".to_string(),
    }
}

/// The CPUs and NUMA nodes a pod's containers were given, from [`RESOURCES_ANNOTATION`]:
/// every `cpuIds` list and every `topology.nodes[].id` in it.
pub fn pod_cpus_and_numa(pod: &Pod) -> (CpuSet, BTreeSet<u64>) {
    let mut cpus = CpuSet::new();
    let mut numa = BTreeSet::new();
    if let Some(value) = pod
        .metadata
        .annotations
        .get(RESOURCES_ANNOTATION)
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
    {
        walk(&value, &mut cpus, &mut numa);
    }
    (cpus, numa)
}

fn walk(value: &serde_json::Value, cpus: &mut CpuSet, numa: &mut BTreeSet<u64>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    ("cpuIds" | "cpu_ids", serde_json::Value::Array(ids)) => {
                        for id in ids.iter().filter_map(serde_json::Value::as_u64) {
                            if let Ok(id) = u32::try_from(id)
                                && id <= allot_topology::MAX_CPU_ID
                            {
                                cpus.insert(id);
                            }
                        }
                    }
                    ("topology", serde_json::Value::Object(topology)) => {
                        if let Some(serde_json::Value::Array(nodes)) = topology.get("nodes") {
                            for node in nodes {
                                // Upstream's PodResources JSON names the field "ID".
                                let id = node.get("ID").or_else(|| node.get("id"));
                                if let Some(id) = id.and_then(serde_json::Value::as_u64) {
                                    numa.insert(id);
                                } else if id.is_none() && node.is_object() {
                                    // protobuf JSON omits a zero id.
                                    numa.insert(0);
                                }
                            }
                        }
                    }
                    _ => walk(inner, cpus, numa),
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                walk(item, cpus, numa);
            }
        }
        _ => {}
    }
}

/// The default table (see [`crate::table`]): every pod, 120 columns.
pub fn table(store: &Store, input: Option<&crate::Input>) -> String {
    crate::table::table(store, input, &crate::table::TableOptions::default())
}

#[cfg(test)]
mod list_tests {
    #[test]
    fn the_streamed_list_is_the_list() {
        let outcome =
            crate::run(&crate::example::input().expect("example"), &mut |_| {}).expect("runs");
        let streamed = super::List(&outcome.store, None);
        let whole = super::list(&outcome.store);
        let json = serde_json::to_string_pretty(&streamed).unwrap();
        assert!(json.len() > 10_000 && json.contains("\"kind\": \"ResourceClaim\""));
        // (Not assert_eq: a difference would print two copies of the whole cluster.)
        assert!(json == serde_json::to_string_pretty(&whole).unwrap());
        let yaml = serde_saphyr::to_string(&streamed).unwrap();
        assert!(yaml.contains("kind: ResourceClaim"));
        assert!(yaml == serde_saphyr::to_string(&whole).unwrap());
    }
}
