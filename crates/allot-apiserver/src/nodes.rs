//! Simulated nodes inside `allot serve`: every Node that has a NodeTopology (of the same name, or
//! one whose `allot.dev/node-selector` annotation matches the Node's labels) gets
//! an `allot-nodesim` [`NodeAgent`] (the kubelet side: admission, DRA prepare, device health,
//! the pod resources annotation, claim device status), built from that topology and the
//! KubeletConfiguration given with `--kubelet-config` (the kubelet's defaults otherwise).
//!
//! Key design decision: the set of simulated nodes changes while the server runs, but an
//! `allot_runtime::Runtime` takes its controllers once. [`NodeFleet`] is therefore one
//! controller that owns the agents, starts one when a Node and its NodeTopology both exist
//! (offering it every current object, as a kubelet lists what it missed at start) and stops
//! it when either goes away. It remembers which agents asked for a work item so a reconcile
//! reaches only those. The cost: every store event is offered to every agent (fine for the
//! handful of nodes a server simulates), and an agent's manager state lives in memory only, so
//! a restarted server re-admits the pods already bound (as a kubelet without checkpoints would).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use allot_api::allot::v1alpha1::NodeTopology as TopologyObject;
use allot_api::load::{decode, parse_str};
use allot_kubelet_config::KubeletConfiguration;
use allot_nodesim::{NodeAgent, NodeAgentConfig};
use allot_runtime::{Action, Context, Controller, ERROR_BACKOFF_MILLIS};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

/// Reads `--kubelet-config`: one `kubelet.config.k8s.io/v1beta1 KubeletConfiguration` document,
/// decoded strictly and validated as the kubelet validates at start. Errors name the file, line
/// and field.
pub fn load_kubelet_config(path: &Path) -> Result<KubeletConfiguration, String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let documents = parse_str(&file, &text).map_err(|e| e.to_string())?;
    let [raw] = documents.as_slice() else {
        return Err(format!(
            "{file}: expected exactly one KubeletConfiguration document, found {}",
            documents.len()
        ));
    };
    if raw.api_version != allot_kubelet_config::API_VERSION
        || raw.kind != allot_kubelet_config::KIND
    {
        return Err(format!(
            "{file}:{}: expected apiVersion {} kind {}, found {} {}",
            raw.line,
            allot_kubelet_config::API_VERSION,
            allot_kubelet_config::KIND,
            raw.api_version,
            raw.kind
        ));
    }
    let config: KubeletConfiguration = decode(raw).map_err(|e| e.to_string())?;
    config
        .validate()
        .map_err(|e| format!("{file}:{}: {e}", raw.line))?;
    Ok(config)
}

/// The machine a NodeTopology object describes, as `allot-topology` reads it, checked.
pub fn machine_of(object: &TopologyObject) -> Result<allot_topology::NodeTopology, String> {
    let mut value = serde_json::to_value(object).map_err(|e| e.to_string())?;
    let meta = &object.metadata;
    value["apiVersion"] = allot_topology::API_VERSION.into();
    value["kind"] = allot_topology::KIND.into();
    value["metadata"] = serde_json::json!({
        "name": meta.name,
        "labels": meta.labels,
        "annotations": meta.annotations,
    });
    let machine: allot_topology::NodeTopology =
        serde_path_to_error::deserialize(&value).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().to_string();
            if path.is_empty() || path == "." {
                message
            } else {
                format!("{path}: {message}")
            }
        })?;
    machine.validate().map_err(|e| e.to_string())?;
    Ok(machine)
}

/// The annotation by which one NodeTopology serves every Node whose labels match
/// (`key=value[,key[=value]...]`), as in `allot simulate`.
pub const NODE_SELECTOR_ANNOTATION: &str = "allot.dev/node-selector";

/// Parses a [`NODE_SELECTOR_ANNOTATION`] value: `(key, Some(value))` for `key=value`,
/// `(key, None)` for "the label exists". `None` when malformed.
pub fn parse_node_selector(text: &str) -> Option<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (key, value) = match part.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (part, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return None;
        }
        out.push((key.to_string(), value));
    }
    Some(out)
}

/// The NodeTopology of a Node: the one named like it, else the first (by name) whose
/// [`NODE_SELECTOR_ANNOTATION`] matches its labels.
pub fn topology_for<'a>(
    store: &'a Store,
    node: &allot_api::core::v1::Node,
) -> Option<&'a TopologyObject> {
    let name = &node.metadata.name;
    store.get::<TopologyObject>("", name).or_else(|| {
        store.list::<TopologyObject>().find(|t| {
            t.metadata
                .annotations
                .get(NODE_SELECTOR_ANNOTATION)
                .and_then(|text| parse_node_selector(text))
                .is_some_and(|requirements| {
                    requirements.iter().all(|(key, want)| {
                        match (node.metadata.labels.get(key), want) {
                            (Some(have), Some(want)) => have == want,
                            (Some(_), None) => true,
                            (None, _) => false,
                        }
                    })
                })
        })
    })
}

/// Admission for objects the generic validation does not check: a NodeTopology's body must
/// be a machine `allot-topology` accepts (errors at the decoder's field path, or at the root).
pub fn admit(object: &Stored) -> Vec<allot_validation::FieldError> {
    let Stored::NodeTopology(topology) = object else {
        return Vec::new();
    };
    if let Some(text) = topology.metadata.annotations.get(NODE_SELECTOR_ANNOTATION)
        && parse_node_selector(text).is_none()
    {
        return vec![allot_validation::FieldError::invalid(
            &format!("metadata.annotations[{NODE_SELECTOR_ANNOTATION}]"),
            text.as_str(),
            "expected key=value[,key[=value]...]",
        )];
    }
    match machine_of(topology) {
        Ok(_) => Vec::new(),
        Err(message) => {
            let (path, detail) = match message.split_once(": ") {
                Some((path, rest)) if !path.contains(' ') => (path.to_string(), rest.to_string()),
                _ => (String::new(), message),
            };
            let path = if path.is_empty() {
                "<root>".to_string()
            } else {
                path
            };
            vec![allot_validation::FieldError::invalid(
                &path,
                allot_validation::BadValue::Raw("{...}".into()),
                detail,
            )]
        }
    }
}

/// One running agent and the topology it was built from.
struct Member {
    agent: NodeAgent,
    /// The NodeTopology's uid and machine, serialised: a new one restarts the agent.
    fingerprint: String,
}

/// The controller that runs one [`NodeAgent`] per simulated node.
pub struct NodeFleet {
    kubelet_config: KubeletConfiguration,
    members: RefCell<BTreeMap<String, Member>>,
    /// Nodes whose kubelet refused to start, with the fingerprint that failed (not retried
    /// until the topology changes).
    failed: RefCell<BTreeMap<String, String>>,
    /// Which agents (by node) asked for each queued item.
    pending: RefCell<BTreeMap<ObjectKey, BTreeSet<String>>>,
}

impl NodeFleet {
    /// A fleet whose agents use `kubelet_config`.
    pub fn new(kubelet_config: KubeletConfiguration) -> Self {
        NodeFleet {
            kubelet_config,
            members: RefCell::new(BTreeMap::new()),
            failed: RefCell::new(BTreeMap::new()),
            pending: RefCell::new(BTreeMap::new()),
        }
    }

    /// The nodes that have a running agent, in name order.
    pub fn nodes(&self) -> Vec<String> {
        self.members.borrow().keys().cloned().collect()
    }

    /// Starts, restarts or stops the agent of `name` to match the store; returns the work
    /// items a newly started agent wants for the objects already there.
    fn sync_member(&self, name: &str, store: &Store) -> Vec<(String, ObjectKey)> {
        let node = store.get::<allot_api::core::v1::Node>("", name);
        let Some(topology) = node.and_then(|n| topology_for(store, n)) else {
            self.members.borrow_mut().remove(name);
            self.failed.borrow_mut().remove(name);
            return Vec::new();
        };
        let machine = machine_of(topology);
        let fingerprint = format!(
            "{}/{}",
            topology.metadata.uid,
            machine
                .as_ref()
                .ok()
                .and_then(|m| serde_json::to_string(&(&m.cpus, &m.numa_nodes, &m.devices)).ok())
                .unwrap_or_default()
        );
        if self
            .members
            .borrow()
            .get(name)
            .is_some_and(|m| m.fingerprint == fingerprint)
            || self.failed.borrow().get(name) == Some(&fingerprint)
        {
            return Vec::new();
        }
        self.members.borrow_mut().remove(name);
        let started = machine.and_then(|mut machine| {
            machine.metadata.name = name.to_string();
            let config = NodeAgentConfig::new(name, machine, self.kubelet_config.clone());
            NodeAgent::new(config).map_err(|e| e.to_string())
        });
        let agent = match started {
            Ok(agent) => agent,
            Err(message) => {
                tracing::warn!("simulated node {name}: {message}");
                self.failed
                    .borrow_mut()
                    .insert(name.to_string(), fingerprint);
                return Vec::new();
            }
        };
        self.failed.borrow_mut().remove(name);
        // The agent learns about the pods first, then everything that maps to pods.
        let rv = store.resource_version();
        let mut wanted = Vec::new();
        let pods = store.list_kind(Kind::Pod);
        let others = store
            .iter()
            .map(|(_, o)| o)
            .filter(|o| o.kind() != Kind::Pod);
        for object in pods.chain(others) {
            let event = Event {
                resource_version: rv,
                event_type: EventType::Added,
                key: crate::storage::key_of(object),
                object: object.clone(),
            };
            for key in agent.keys_for(&event, store) {
                wanted.push((name.to_string(), key));
            }
        }
        self.members
            .borrow_mut()
            .insert(name.to_string(), Member { agent, fingerprint });
        wanted
    }
}

impl Controller for NodeFleet {
    fn name(&self) -> &'static str {
        "node-agents"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        let mut wanted = Vec::new();
        match event.key.kind {
            Kind::Node => wanted = self.sync_member(&event.key.name, store),
            Kind::NodeTopology => {
                let names: Vec<String> = store
                    .list::<allot_api::core::v1::Node>()
                    .map(|n| n.metadata.name.clone())
                    .chain(self.nodes())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                for name in names {
                    wanted.extend(self.sync_member(&name, store));
                }
            }
            _ => {}
        }
        for (name, member) in self.members.borrow().iter() {
            for key in member.agent.keys_for(event, store) {
                wanted.push((name.clone(), key));
            }
        }
        let mut pending = self.pending.borrow_mut();
        let mut keys = BTreeSet::new();
        for (name, key) in wanted {
            pending.entry(key.clone()).or_default().insert(name);
            keys.insert(key);
        }
        keys.into_iter().collect()
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let nodes = self.pending.get_mut().remove(key).unwrap_or_default();
        let mut again: BTreeSet<String> = BTreeSet::new();
        let mut after: Option<u64> = None;
        let mut errors = Vec::new();
        let members = self.members.get_mut();
        for name in nodes {
            let Some(member) = members.get_mut(&name) else {
                continue;
            };
            match member.agent.reconcile(store, key, ctx) {
                Ok(Action::Done) => {}
                Ok(Action::RequeueAfterMillis(ms)) => {
                    after = Some(after.map_or(ms, |a| a.min(ms)));
                    again.insert(name);
                }
                Err(message) => {
                    after =
                        Some(after.map_or(ERROR_BACKOFF_MILLIS, |a| a.min(ERROR_BACKOFF_MILLIS)));
                    errors.push(format!("node-agent/{name}: {message}"));
                    again.insert(name);
                }
            }
        }
        if !again.is_empty() {
            self.pending
                .get_mut()
                .entry(key.clone())
                .or_default()
                .extend(again);
        }
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        Ok(after.map_or(Action::Done, Action::RequeueAfterMillis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::load::{LoadOptions, decode_object};

    fn stored(yaml: &str) -> Stored {
        let raw = parse_str("t.yaml", yaml).expect("parses").remove(0);
        let object = decode_object(&raw, &LoadOptions::default()).expect("decodes");
        Stored::from_object(object).expect("a stored kind")
    }

    const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  capacity:\n    cpu: \"4\"\n    memory: 8Gi\n    pods: \"110\"\n  allocatable:\n    cpu: \"4\"\n    memory: 8Gi\n    pods: \"110\"\n";
    const TOPOLOGY: &str = "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: n1\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0}\n- {id: 1, core: 1, socket: 0, numa: 0}\n- {id: 2, core: 2, socket: 0, numa: 0}\n- {id: 3, core: 3, socket: 0, numa: 0}\nnumaNodes:\n- {id: 0, memory: 8Gi}\n";
    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\nspec:\n  nodeName: n1\n  containers:\n  - name: c\n    image: i\n    resources:\n      requests: {cpu: \"1\", memory: 1Gi}\n      limits: {cpu: \"1\", memory: 1Gi}\n";

    fn runtime(store: Store) -> allot_runtime::Runtime {
        let fleet = NodeFleet::new(KubeletConfiguration::default());
        allot_runtime::Runtime::new(store, vec![Box::new(fleet)], allot_runtime::SimTime(1000))
    }

    fn phase(store: &Store) -> Option<String> {
        store
            .get::<allot_api::core::v1::Pod>("default", "p")
            .and_then(|p| p.status.phase.clone())
    }

    #[test]
    fn a_node_with_a_topology_runs_its_pods() {
        let mut store = Store::new();
        for yaml in [NODE, TOPOLOGY, POD] {
            store
                .create_stored(stored(yaml), "2026-01-01T00:00:00Z")
                .expect("creates");
        }
        let mut rt = runtime(store);
        rt.run_until_idle(allot_runtime::SimTime(60_000), 10_000)
            .expect("runs");
        assert_eq!(phase(&rt.store).as_deref(), Some("Running"));
    }

    #[test]
    fn a_node_without_a_topology_is_not_simulated_until_one_arrives() {
        let mut store = Store::new();
        for yaml in [NODE, POD] {
            store
                .create_stored(stored(yaml), "2026-01-01T00:00:00Z")
                .expect("creates");
        }
        let mut rt = runtime(store);
        rt.run_until_idle(allot_runtime::SimTime(60_000), 10_000)
            .expect("runs");
        assert_eq!(phase(&rt.store), None);
        // The topology arrives after the pod: the new agent is offered the pod.
        rt.store
            .create_stored(stored(TOPOLOGY), "2026-01-01T00:00:01Z")
            .expect("creates");
        rt.run_until_idle(allot_runtime::SimTime(120_000), 10_000)
            .expect("runs");
        assert_eq!(phase(&rt.store).as_deref(), Some("Running"));
    }

    #[test]
    fn a_selector_topology_serves_every_matching_node() {
        let mut store = Store::new();
        let node = NODE.replace("name: n1\n", "name: n1\n  labels: {rack: r1}\n");
        let shared = TOPOLOGY.replace(
            "name: n1\n",
            "name: rack\n  annotations: {allot.dev/node-selector: rack=r1}\n",
        );
        for yaml in [node.as_str(), shared.as_str(), POD] {
            store
                .create_stored(stored(yaml), "2026-01-01T00:00:00Z")
                .expect("creates");
        }
        let mut rt = runtime(store);
        rt.run_until_idle(allot_runtime::SimTime(60_000), 10_000)
            .expect("runs");
        assert_eq!(phase(&rt.store).as_deref(), Some("Running"));
        assert_eq!(
            parse_node_selector("a=b, c"),
            Some(vec![("a".into(), Some("b".into())), ("c".into(), None)])
        );
        assert_eq!(parse_node_selector("a b"), None);
        let bad = TOPOLOGY.replace(
            "name: n1\n",
            "name: x\n  annotations: {allot.dev/node-selector: \"a b\"}\n",
        );
        assert_eq!(admit(&stored(&bad)).len(), 1);
    }

    #[test]
    fn topologies_the_kubelet_rejects_are_refused_with_a_field() {
        let bad = TOPOLOGY.replace("numa: 0}\n- {id: 1", "numa: 0}\n- {id: 0");
        let errors = admit(&stored(&bad));
        assert_eq!(errors.len(), 1, "duplicate CPU ids are refused");
        let typo = TOPOLOGY.replace("core: 0,", "cores: 0,");
        let errors = admit(&stored(&typo));
        assert_eq!(errors.len(), 1, "unknown fields are refused");
        assert!(errors[0].path.starts_with("cpus[0]"), "{errors:?}");
        assert!(errors[0].detail.contains("cores"), "{errors:?}");
        assert!(admit(&stored(TOPOLOGY)).is_empty());
    }

    #[test]
    fn kubelet_config_files_are_read_strictly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("k.yaml");
        std::fs::write(
            &good,
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n",
        )
        .expect("writes");
        let config = load_kubelet_config(&good).expect("loads");
        assert_eq!(
            serde_json::to_value(&config).expect("serialises")["cpuManagerPolicy"],
            "static"
        );
        let bad = dir.path().join("bad.yaml");
        std::fs::write(
            &bad,
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicyy: static\n",
        )
        .expect("writes");
        let err = load_kubelet_config(&bad).expect_err("unknown field");
        assert!(
            err.contains("bad.yaml:3") && err.contains("cpuManagerPolicyy"),
            "{err}"
        );
        let missing = load_kubelet_config(&dir.path().join("none.yaml")).expect_err("missing");
        assert!(missing.contains("none.yaml"), "{missing}");
    }
}
