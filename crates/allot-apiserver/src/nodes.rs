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
//! reaches only those. Events reach only the agents they concern: the fleet names each event's
//! topics with the runtime's own router ([`Fanout`]) and offers it to the agents subscribed to
//! one (its node, its pods, claims it prepared, pools its pods use), and a starting agent is
//! offered only the objects of its node (from an index of the store built once per
//! resourceVersion), so neither events nor starts cost nodes × objects.
//!
//! Like a kubelet's `/var/lib/kubelet`, each agent keeps its CPU and Memory Manager checkpoints
//! (`cpu_manager_state`, `memory_manager_state`, in the kubelet's formats) in
//! `DATA_DIR/nodes/<node>/`: written after every reconcile that changed them (temporary file,
//! fsync, rename, fsync of the folder, so a kill at any instant leaves the old or the new
//! file), before the store's writes of that tick are persisted, and restored when the agent
//! starts again, so a restarted server re-admits the pods already running with the exclusive
//! CPUs and memory they had. A checkpoint the kubelet refuses (another machine) is dropped
//! with a warning, as a kubelet operator would delete it. On etcd the leader's agents use the
//! leader's local data directory the same way. Not kept yet: the DRA prepared-claims and
//! device plugin checkpoints (prepared claims are prepared again on restart).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use allot_api::allot::v1alpha1::NodeTopology as TopologyObject;
use allot_api::load::{decode, parse_str};
use allot_kubelet_config::KubeletConfiguration;
use allot_nodesim::{NodeAgent, NodeAgentConfig};
use allot_runtime::{Action, Context, Controller, ERROR_BACKOFF_MILLIS, Fanout};
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
    /// The checkpoints last written to (or read from) its folder.
    saved: (Vec<u8>, Vec<u8>),
    /// The NodeTopology's uid and machine, serialised: a new one restarts the agent.
    fingerprint: String,
    /// Its number in the fleet's [`Fanout`].
    number: usize,
}

/// Which stored objects concern which node, for offering a starting agent what it would have
/// reacted to: pods by the node they are bound to, claims by the pod or PodGroup reserving
/// them.
#[derive(Default)]
struct NodeIndex {
    pods: HashMap<String, Vec<ObjectKey>>,
    /// (namespace, "pods"|"podgroups", name) → claims reserved for it.
    claims: HashMap<(String, String, String), Vec<ObjectKey>>,
}

impl NodeIndex {
    fn build(store: &Store) -> Self {
        let mut index = NodeIndex::default();
        for object in store.list_kind(Kind::Pod) {
            let Stored::Pod(pod) = object else { continue };
            if let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
                index
                    .pods
                    .entry(node.to_string())
                    .or_default()
                    .push(crate::storage::key_of(object));
            }
        }
        for object in store.list_kind(Kind::ResourceClaim) {
            let Stored::ResourceClaim(claim) = object else {
                continue;
            };
            for consumer in &claim.status.reserved_for {
                index
                    .claims
                    .entry((
                        claim.metadata.namespace.clone(),
                        consumer.resource.clone(),
                        consumer.name.clone(),
                    ))
                    .or_default()
                    .push(crate::storage::key_of(object));
            }
        }
        index
    }

    /// The keys of node `name`'s pods, and of the other objects a new agent of it reacts to
    /// (claims reserved for those pods or their PodGroups, those PodGroups, the Node).
    fn objects_of(&self, store: &Store, name: &str) -> (Vec<ObjectKey>, BTreeSet<ObjectKey>) {
        let pods = self.pods.get(name).cloned().unwrap_or_default();
        let mut others = BTreeSet::new();
        others.insert(ObjectKey::new(Kind::Node, "", name));
        for key in &pods {
            let claims = |resource: &str, of: &str| {
                self.claims
                    .get(&(key.namespace.clone(), resource.to_string(), of.to_string()))
                    .into_iter()
                    .flatten()
                    .cloned()
            };
            others.extend(claims("pods", &key.name));
            let group = store
                .get::<allot_api::core::v1::Pod>(&key.namespace, &key.name)
                .and_then(|p| p.spec.scheduling_group.as_ref())
                .map(|g| g.pod_group_name.clone());
            if let Some(group) = group {
                others.extend(claims("podgroups", &group));
                others.insert(ObjectKey::new(
                    Kind::PodGroup,
                    key.namespace.as_str(),
                    group,
                ));
            }
        }
        (pods, others)
    }
}

/// The controller that runs one [`NodeAgent`] per simulated node.
pub struct NodeFleet {
    kubelet_config: KubeletConfiguration,
    /// The kubelet's feature gates for every agent.
    features: allot_nodesim::NodeFeatures,
    members: RefCell<BTreeMap<String, Member>>,
    /// Nodes whose kubelet refused to start, with the fingerprint that failed (not retried
    /// until the topology changes).
    failed: RefCell<BTreeMap<String, String>>,
    /// Which agents (by node) asked for each queued item.
    pending: RefCell<BTreeMap<ObjectKey, BTreeSet<String>>>,
    /// Where each node's checkpoints live (`<dir>/<node>/`), if anywhere.
    state_dir: Option<PathBuf>,
    /// Which agents each event concerns.
    fanout: RefCell<Fanout>,
    /// Member number → node name.
    numbers: RefCell<HashMap<usize, String>>,
    next_number: Cell<usize>,
    /// The store's resourceVersion and its [`NodeIndex`] then, built when an agent starts.
    index: RefCell<Option<(u64, NodeIndex)>>,
}

/// The kubelet's checkpoint file names.
const CPU_STATE: &str = "cpu_manager_state";
const MEMORY_STATE: &str = "memory_manager_state";

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file: a
/// temporary file beside it, fsync, rename over it, fsync of the folder.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Reads a node's checkpoints from its folder (missing files are no checkpoint).
fn read_checkpoints(dir: &Path) -> Result<allot_kubelet::Checkpoints, String> {
    let read = |name: &str| {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    };
    Ok(allot_kubelet::Checkpoints {
        cpu: read(CPU_STATE)?,
        cpu_origin: dir.join(CPU_STATE).display().to_string(),
        memory: read(MEMORY_STATE)?,
        memory_origin: dir.join(MEMORY_STATE).display().to_string(),
    })
}

impl NodeFleet {
    /// A fleet whose agents use `kubelet_config`.
    pub fn new(kubelet_config: KubeletConfiguration) -> Self {
        NodeFleet {
            kubelet_config,
            features: allot_nodesim::NodeFeatures::default(),
            members: RefCell::new(BTreeMap::new()),
            failed: RefCell::new(BTreeMap::new()),
            pending: RefCell::new(BTreeMap::new()),
            state_dir: None,
            fanout: RefCell::new(Fanout::new()),
            numbers: RefCell::new(HashMap::new()),
            next_number: Cell::new(0),
            index: RefCell::new(None),
        }
    }

    /// The kubelet feature gates of every agent (`--feature-gates`).
    pub fn with_features(mut self, features: allot_nodesim::NodeFeatures) -> Self {
        self.features = features;
        self
    }

    /// Keeps each node's kubelet checkpoints in `<dir>/<node>/` and restores them when its
    /// agent starts.
    pub fn with_state_dir(mut self, dir: PathBuf) -> Self {
        self.state_dir = Some(dir);
        self
    }

    /// Writes the checkpoints of `name`'s agent when they changed.
    fn save(state_dir: Option<&Path>, name: &str, member: &mut Member) {
        let Some(dir) = state_dir.map(|d| d.join(name)) else {
            return;
        };
        let kubelet = member.agent.kubelet();
        let now = (
            kubelet.cpu_checkpoint().to_json(),
            kubelet.memory_checkpoint().to_json().into_bytes(),
        );
        if now == member.saved {
            return;
        }
        for (file, bytes, old) in [
            (CPU_STATE, &now.0, &member.saved.0),
            (MEMORY_STATE, &now.1, &member.saved.1),
        ] {
            if bytes != old
                && let Err(e) = write_atomically(&dir.join(file), bytes)
            {
                tracing::warn!("simulated node {name}: {}: {e}", dir.join(file).display());
                return;
            }
        }
        member.saved = now;
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
            // The node is gone: so is its kubelet's state.
            if self.remove_member(name)
                && let Some(dir) = &self.state_dir
            {
                let _ = std::fs::remove_dir_all(dir.join(name));
            }
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
        self.remove_member(name);
        let mut saved = (Vec::new(), Vec::new());
        let started = machine.and_then(|mut machine| {
            machine.metadata.name = name.to_string();
            let mut config = NodeAgentConfig::new(name, machine, self.kubelet_config.clone());
            config.features = self.features;
            let restored = match self
                .state_dir
                .as_ref()
                .map(|d| read_checkpoints(&d.join(name)))
            {
                Some(Ok(checkpoints))
                    if checkpoints.cpu.is_some() || checkpoints.memory.is_some() =>
                {
                    let mut with = config.clone();
                    with.checkpoints = checkpoints;
                    match NodeAgent::new(with.clone()) {
                        Ok(agent) => {
                            saved = (
                                with.checkpoints.cpu.unwrap_or_default(),
                                with.checkpoints.memory.unwrap_or_default(),
                            );
                            Some(agent)
                        }
                        Err(e) => {
                            tracing::warn!("simulated node {name}: checkpoints dropped: {e}");
                            None
                        }
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!("simulated node {name}: checkpoints dropped: {e}");
                    None
                }
                _ => None,
            };
            match restored {
                Some(agent) => Ok(agent),
                None => NodeAgent::new(config).map_err(|e| e.to_string()),
            }
        });
        let mut agent = match started {
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
        let number = self.next_number.get();
        self.next_number.set(number + 1);
        agent.subscribe(self.fanout.borrow().subscriptions(number));
        self.numbers.borrow_mut().insert(number, name.to_string());
        // The agent learns about the pods first, then everything that maps to pods: of the
        // store's objects, those of its node (a new agent reacts to nothing else).
        let rv = store.resource_version();
        let mut index = self.index.borrow_mut();
        if index.as_ref().is_none_or(|(at, _)| *at != rv) {
            *index = Some((rv, NodeIndex::build(store)));
        }
        let (pods, others) = index
            .as_ref()
            .map(|(_, index)| index.objects_of(store, name))
            .unwrap_or_default();
        drop(index);
        let mut wanted = Vec::new();
        for key in pods.iter().chain(&others) {
            let Some(object) = store.get_stored(key) else {
                continue;
            };
            let event = Event {
                resource_version: rv,
                event_type: EventType::Added,
                key: key.clone(),
                object: object.clone(),
            };
            for key in agent.keys_for(&event, store) {
                wanted.push((name.to_string(), key));
            }
        }
        self.members.borrow_mut().insert(
            name.to_string(),
            Member {
                agent,
                saved,
                fingerprint,
                number,
            },
        );
        wanted
    }

    /// Stops `name`'s agent, if it runs; returns whether it did.
    fn remove_member(&self, name: &str) -> bool {
        let Some(member) = self.members.borrow_mut().remove(name) else {
            return false;
        };
        self.fanout.borrow().forget(member.number);
        self.numbers.borrow_mut().remove(&member.number);
        true
    }
}

impl Controller for NodeFleet {
    fn name(&self) -> &'static str {
        "node-agents"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        let mut targets = BTreeSet::new();
        self.fanout.borrow_mut().targets(event, &mut targets);
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
        let numbers = self.numbers.borrow();
        let members = self.members.borrow();
        for number in targets {
            let Some(name) = numbers.get(&number) else {
                continue;
            };
            let Some(member) = members.get(name).filter(|m| m.number == number) else {
                continue;
            };
            for key in member.agent.keys_for(event, store) {
                wanted.push((name.clone(), key));
            }
        }
        drop((numbers, members));
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
            let result = member.agent.reconcile(store, key, ctx);
            Self::save(self.state_dir.as_deref(), &name, member);
            match result {
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
    fn checkpoints_are_written_whole_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let node = dir.path().join("n1");
        let none = read_checkpoints(&node).expect("no files is no checkpoint");
        assert!(none.cpu.is_none() && none.memory.is_none());
        write_atomically(&node.join(CPU_STATE), b"first").expect("writes");
        write_atomically(&node.join(CPU_STATE), b"second").expect("replaces");
        let read = read_checkpoints(&node).expect("reads");
        assert_eq!(read.cpu.as_deref(), Some(&b"second"[..]));
        assert!(read.memory.is_none());
        assert!(read.cpu_origin.ends_with("n1/cpu_manager_state"));
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(&node)
            .expect("lists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [CPU_STATE]);
        // An unreadable checkpoint is an error naming the file.
        std::fs::create_dir_all(node.join(MEMORY_STATE)).expect("a folder in its place");
        let err = read_checkpoints(&node).expect_err("a folder is not a file");
        assert!(err.contains("memory_manager_state"), "{err}");
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
