//! The Memory Manager Static-policy table: upstream's policy_static_test.go cases transcribed as
//! scenarios in tests/conformance/kubelet/memory_static_policy/ (see its README for formats and
//! comparison semantics). One runner for all 40.

use std::collections::BTreeMap;
use std::path::Path;

use allot_memorymanager::{
    Block, ContainerMemoryAssignments, ContainerResources, HugePages, MemoryState, NumaNodeInfo,
    NumaNodeMap, PodResources, StaticPolicy, SystemReserved, machine_states_equal,
};
use allot_quantity::Quantity;
use allot_topologymanager::{NumaMask, ProviderHints, TopologyHint};
use serde::Deserialize;
use serde_json::Value;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/memory_static_policy"
);

// Test-only views of the scenario documents: just the fields this runner needs.

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeTopologyDoc {
    #[serde(default)]
    numa_nodes: Option<Vec<NumaNodeDoc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NumaNodeDoc {
    #[serde(default)]
    machine_info: Option<MachineInfoDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct MachineInfoDoc {
    id: usize,
    memory: u64,
    #[serde(default)]
    huge_pages: Option<Vec<HugePageDoc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct HugePageDoc {
    page_size: u64,
    num_pages: u64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct KubeletConfigDoc {
    #[serde(default)]
    reserved_memory: Option<Vec<ReservedMemoryDoc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReservedMemoryDoc {
    numa_node: usize,
    #[serde(default)]
    limits: BTreeMap<String, Quantity>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeStateDoc {
    #[serde(default)]
    memory_manager: Option<StateDoc>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StateDoc {
    #[serde(default)]
    machine_state: Option<NumaNodeMap>,
    #[serde(default)]
    entries: Option<ContainerMemoryAssignments>,
}

impl StateDoc {
    fn to_state(&self) -> MemoryState {
        MemoryState {
            machine_state: self.machine_state.clone().unwrap_or_default(),
            entries: self.entries.clone().unwrap_or_default(),
            pod_entries: BTreeMap::new(),
        }
    }
}

#[derive(Deserialize)]
struct PodDoc {
    metadata: PodMeta,
    spec: PodSpec,
}

#[derive(Deserialize)]
struct PodMeta {
    name: String,
    uid: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    init_containers: Vec<ContainerDoc>,
    #[serde(default)]
    containers: Vec<ContainerDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerDoc {
    name: String,
    #[serde(default)]
    restart_policy: Option<String>,
    #[serde(default)]
    resources: Option<ResourcesDoc>,
}

#[derive(Deserialize, Default, Clone)]
struct ResourcesDoc {
    #[serde(default)]
    requests: Option<BTreeMap<String, Quantity>>,
    #[serde(default)]
    limits: Option<BTreeMap<String, Quantity>>,
}

#[derive(Deserialize)]
struct HintDoc {
    pod: String,
    container: String,
    affinity: Option<Vec<usize>>,
    preferred: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExpectedDoc {
    #[serde(default)]
    new: Option<ErrorDoc>,
    #[serde(default)]
    start: Option<ErrorDoc>,
    #[serde(default)]
    allocate: Option<Vec<CallDoc>>,
    #[serde(default)]
    remove: Option<RemoveDoc>,
    #[serde(default)]
    topology_hints: Option<HintsDoc>,
    #[serde(default)]
    state: Option<NodeStateDoc>,
}

#[derive(Deserialize)]
struct ErrorDoc {
    error: Option<String>,
}

#[derive(Deserialize)]
struct CallDoc {
    pod: String,
    container: String,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoveDoc {
    #[serde(rename = "podUID")]
    pod_uid: String,
    container: String,
}

#[derive(Deserialize)]
struct HintsDoc {
    pod: String,
    container: String,
    hints: Option<BTreeMap<String, Vec<TopologyHint>>>,
}

#[derive(Default)]
struct Scenario {
    topology: NodeTopologyDoc,
    config: KubeletConfigDoc,
    state: NodeStateDoc,
    pods: Vec<PodDoc>,
    hints: Vec<HintDoc>,
    expected: Option<ExpectedDoc>,
}

fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| e.to_string())?;
    let mut s = Scenario::default();
    for doc in docs {
        let kind = doc
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let bad = |e: serde_json::Error| format!("{kind}: {e}");
        match kind.as_str() {
            "NodeTopology" => s.topology = serde_json::from_value(doc).map_err(bad)?,
            "KubeletConfiguration" => s.config = serde_json::from_value(doc).map_err(bad)?,
            "NodeState" => s.state = serde_json::from_value(doc).map_err(bad)?,
            "Pod" => s.pods.push(serde_json::from_value(doc).map_err(bad)?),
            "TopologyHint" => s.hints.push(serde_json::from_value(doc).map_err(bad)?),
            "Expected" => s.expected = Some(serde_json::from_value(doc).map_err(bad)?),
            other => return Err(format!("unknown document kind {other:?}")),
        }
    }
    Ok(s)
}

fn bytes(q: &Quantity) -> u64 {
    q.as_i64().unwrap_or(0) as u64
}

/// Requests as the API server defaults them: a missing request takes the limit.
fn effective_requests(r: &ResourcesDoc) -> BTreeMap<String, Quantity> {
    let mut out = r.limits.clone().unwrap_or_default();
    out.extend(r.requests.clone().unwrap_or_default());
    out
}

/// Guaranteed QoS: every container has CPU and memory limits and requests equal to them.
fn is_guaranteed(pod: &PodDoc) -> bool {
    pod.spec
        .init_containers
        .iter()
        .chain(pod.spec.containers.iter())
        .all(|c| {
            let r = c.resources.clone().unwrap_or_default();
            let limits = r.limits.clone().unwrap_or_default();
            let requests = effective_requests(&r);
            ["cpu", "memory"].iter().all(|name| {
                limits
                    .get(*name)
                    .is_some_and(|l| !l.is_zero() && requests.get(*name) == Some(l))
            })
        })
}

fn to_pod(pod: &PodDoc) -> Result<PodResources, String> {
    let convert = |c: &ContainerDoc| {
        let r = c.resources.clone().unwrap_or_default();
        ContainerResources::from_requests(
            &c.name,
            c.restart_policy.as_deref() == Some("Always"),
            &effective_requests(&r),
        )
        .map_err(|e| e.to_string())
    };
    Ok(PodResources {
        uid: pod.metadata.uid.clone(),
        guaranteed: is_guaranteed(pod),
        pod_level_resources: false,
        init_containers: pod
            .spec
            .init_containers
            .iter()
            .map(convert)
            .collect::<Result<_, _>>()?,
        containers: pod
            .spec
            .containers
            .iter()
            .map(convert)
            .collect::<Result<_, _>>()?,
    })
}

fn error_text<T>(result: &Result<T, allot_memorymanager::Error>) -> Option<String> {
    result.as_ref().err().map(ToString::to_string)
}

fn sorted_entries(entries: &ContainerMemoryAssignments) -> ContainerMemoryAssignments {
    entries
        .iter()
        .map(|(pod, containers)| {
            let containers = containers
                .iter()
                .map(|(name, blocks)| {
                    let mut blocks: Vec<Block> = blocks.clone();
                    blocks.sort();
                    (name.clone(), blocks)
                })
                .collect();
            (pod.clone(), containers)
        })
        .collect()
}

fn compare_state(actual: &MemoryState, expected: &NodeStateDoc) -> Result<(), String> {
    let expected = expected
        .memory_manager
        .as_ref()
        .map(StateDoc::to_state)
        .unwrap_or_default();
    if !machine_states_equal(&actual.machine_state, &expected.machine_state) {
        return Err(format!(
            "machine state differs:\n  actual   {:?}\n  expected {:?}",
            actual.machine_state, expected.machine_state
        ));
    }
    if sorted_entries(&actual.entries) != sorted_entries(&expected.entries) {
        return Err(format!(
            "entries differ:\n  actual   {:?}\n  expected {:?}",
            actual.entries, expected.entries
        ));
    }
    Ok(())
}

fn find_pod<'a>(s: &'a Scenario, name: &str) -> Result<&'a PodDoc, String> {
    let short = name.rsplit('/').next().unwrap_or(name);
    s.pods
        .iter()
        .find(|p| p.metadata.name == short)
        .ok_or_else(|| format!("no Pod document {name}"))
}

fn run(s: &Scenario) -> Result<(), String> {
    let expected = s.expected.as_ref().ok_or("no Expected document")?;
    let mut reserved = SystemReserved::new();
    for r in s.config.reserved_memory.iter().flatten() {
        let node = reserved.entry(r.numa_node).or_default();
        for (resource, q) in &r.limits {
            node.insert(resource.clone(), bytes(q));
        }
    }
    let machine: Vec<NumaNodeInfo> = s
        .topology
        .numa_nodes
        .iter()
        .flatten()
        .filter_map(|n| n.machine_info.as_ref())
        .map(|m| NumaNodeInfo {
            id: m.id,
            memory: m.memory,
            hugepages: m
                .huge_pages
                .iter()
                .flatten()
                .map(|h| HugePages {
                    page_size_kib: h.page_size,
                    num_pages: h.num_pages,
                })
                .collect(),
        })
        .collect();
    let created = StaticPolicy::new(machine, reserved);
    if let Some(new) = &expected.new {
        let got = error_text(&created);
        return if got == new.error {
            Ok(())
        } else {
            Err(format!("new: expected error {:?}, got {got:?}", new.error))
        };
    }
    let mut policy = created.map_err(|e| format!("new: {e}"))?;
    let mut state = s
        .state
        .memory_manager
        .as_ref()
        .map(StateDoc::to_state)
        .unwrap_or_default();

    if let Some(start) = &expected.start {
        let got = error_text(&policy.start(&mut state));
        if got != start.error {
            return Err(format!(
                "start: expected error {:?}, got {got:?}",
                start.error
            ));
        }
        if start.error.is_some() {
            return Ok(());
        }
    }
    if let Some(calls) = &expected.allocate {
        for call in calls {
            let pod = to_pod(find_pod(s, &call.pod)?)?;
            let container = pod
                .all_containers()
                .find(|c| c.name == call.container)
                .ok_or_else(|| format!("no container {}", call.container))?
                .clone();
            let hint = s
                .hints
                .iter()
                .find(|h| h.pod == call.pod && h.container == call.container)
                .or_else(|| s.hints.first())
                .map(|h| TopologyHint {
                    affinity: h
                        .affinity
                        .as_ref()
                        .map(|ids| NumaMask::from_ids(ids.iter().copied())),
                    preferred: h.preferred,
                })
                .unwrap_or_default();
            let got = error_text(&policy.allocate(&mut state, &pod, &container, &hint));
            if got != call.error {
                return Err(format!(
                    "allocate {}: expected error {:?}, got {got:?}",
                    call.container, call.error
                ));
            }
            if call.error.is_some() {
                return Ok(());
            }
        }
    }
    if let Some(remove) = &expected.remove {
        policy.remove_container(&mut state, &remove.pod_uid, &remove.container);
    }
    if let Some(th) = &expected.topology_hints {
        let pod = to_pod(find_pod(s, &th.pod)?)?;
        let container = pod
            .all_containers()
            .find(|c| c.name == th.container)
            .ok_or_else(|| format!("no container {}", th.container))?
            .clone();
        let got = policy.get_topology_hints(&state, &pod, &container);
        let want: Option<ProviderHints> = th.hints.as_ref().map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect()
        });
        if got != want {
            return Err(format!("hints: expected {want:?}, got {got:?}"));
        }
    }
    if let Some(expected_state) = &expected.state {
        compare_state(&state, expected_state)?;
    }
    Ok(())
}

#[test]
fn memory_manager_static_policy_table() {
    let mut paths: Vec<_> = std::fs::read_dir(DIR)
        .unwrap_or_else(|e| panic!("reading {DIR}: {e}"))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 40, "scenario count");
    let mut failures = Vec::new();
    for path in &paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Err(why) = load(path).and_then(|s| run(&s)) {
            failures.push(format!("{name}: {why}"));
        }
    }
    println!(
        "memory_static_policy: {}/{} pass",
        paths.len() - failures.len(),
        paths.len()
    );
    assert!(
        failures.is_empty(),
        "failing cases:\n{}",
        failures.join("\n")
    );
}
