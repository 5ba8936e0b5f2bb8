//! A simulation kept alive after its run, for the capacity questions: run the input as
//! [`crate::run`] does, then create more objects at the end (nodes of a shape with their
//! slices, a workload) and let the controllers settle again, as often as needed, reading the
//! store in between.
//!
//! Nodes can be there from the start ([`SessionOptions::start_nodes`]: the input plus them), or
//! added at the end. Nodes added at the end get their node agents from the start (an agent acts only on pods
//! bound to its node, so until its Node exists it does nothing, and the run before is the
//! plain run's). Nodes can also be left out from the start: the run is then the input's run
//! without them (their Node objects and the slices naming them, also those a timeline
//! creates).

use std::collections::BTreeSet;
use std::path::PathBuf;

use allot_api::core::v1::Node;
use allot_api::resource::v1::ResourceSlice;
use allot_kubelet_config::KubeletConfiguration;
use allot_runtime::{Controller, Runtime, SimTime};
use allot_store::{ObjectKey, Store, Stored};
use allot_topology::NodeTopology;

use super::{
    Controllers, Progress, apply, controllers_for, initial_store, reconcile_bound, run_until,
};
use crate::SimError;
use crate::input::{Action, Input, KubeletConfigEntry, TopologyEntry, stored_key};
use crate::usage::UsageRecorder;

/// A node to add at the end, with what makes it a machine.
#[derive(Debug, Clone)]
pub struct NewNode {
    /// The Node.
    pub node: Node,
    /// Its ResourceSlices.
    pub slices: Vec<ResourceSlice>,
    /// Its machine.
    pub topology: NodeTopology,
    /// Its kubelet configuration.
    pub kubelet_config: KubeletConfiguration,
}

/// How a session starts.
#[derive(Default)]
pub struct SessionOptions<'a> {
    /// Nodes that may be added at the end (with [`Session::add_nodes`]); their agents exist
    /// from the start.
    pub later_nodes: &'a [NewNode],
    /// Nodes left out of the run from the start.
    pub without_nodes: Option<&'a BTreeSet<String>>,
    /// Nodes (with their slices and machines) that exist from the start, after the input's.
    pub start_nodes: &'a [NewNode],
    /// Records utilisation over time.
    pub usage: Option<UsageRecorder>,
    /// Runs without the Ledger (every pod's times, the Event timeline): for a question that
    /// only reads the final store (the capacity searches' trials). The Ledger only observes
    /// (it writes nothing and wakes nothing), so the run's decisions are the same; it saves a
    /// copy of every pod at each of its changes. [`Session::into_outcome`]'s report is empty.
    /// Such a run also leaves out the EventRecorder: no core/v1 Events are written (the
    /// placements are the same, `capacity` tests check it on the bundled examples).
    pub unrecorded: bool,
}

/// A live simulation.
pub struct Session {
    input: Input,
    runtime: Runtime,
    metadata: Vec<allot_nodesim::MetadataLog>,
    bound: u64,
    names: Vec<String>,
    event_errors: Vec<String>,
    /// What the run's Ledger recorded (pod times, Events, utilisation), for the report.
    record: std::rc::Rc<std::cell::RefCell<crate::record::LedgerData>>,
    /// When the input's own run ended.
    pub base_end: SimTime,
}

/// Whether a stored object belongs to a node left out.
fn of_removed(object: &Stored, removed: &BTreeSet<String>) -> bool {
    match object {
        Stored::Node(node) => removed.contains(&node.metadata.name),
        Stored::ResourceSlice(slice) => slice
            .spec
            .node_name
            .as_ref()
            .is_some_and(|n| removed.contains(n)),
        _ => false,
    }
}

/// The input with the left-out nodes removed and the later nodes' machines known.
fn prepared_input(input: &Input, options: &SessionOptions<'_>) -> Input {
    let mut input = input.clone();
    if let Some(removed) = options.without_nodes.filter(|r| !r.is_empty()) {
        input.objects.retain(|o| !of_removed(o, removed));
        for event in &mut input.events {
            if let Action::Create(objects) = &mut event.action {
                objects.retain(|o| !of_removed(o, removed));
            }
        }
    }
    // Named entries win over every group; they go first, so they are also found first.
    let mut topologies = Vec::new();
    let mut configs = Vec::new();
    for new in options.start_nodes {
        input
            .objects
            .push(Stored::Node(std::sync::Arc::new(new.node.clone())));
        for slice in &new.slices {
            input
                .objects
                .push(Stored::ResourceSlice(std::sync::Arc::new(slice.clone())));
        }
    }
    for new in options.later_nodes.iter().chain(options.start_nodes) {
        let name = new.node.metadata.name.clone();
        let mut topology = new.topology.clone();
        topology.metadata.name = name.clone();
        topology.metadata.annotations.clear();
        topologies.push(TopologyEntry {
            topology,
            selector: None,
        });
        configs.push(KubeletConfigEntry {
            config: new.kubelet_config.clone(),
            name,
            selector: None,
            origin: "NodeShape".to_string(),
        });
    }
    topologies.append(&mut input.topologies);
    input.topologies = topologies;
    configs.append(&mut input.kubelet_configs);
    input.kubelet_configs = configs;
    input
}

impl Session {
    /// Runs the input (as [`crate::run`]) and keeps the simulation alive.
    pub fn start(
        input: &Input,
        options: SessionOptions<'_>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Session, SimError> {
        let input = prepared_input(input, &options);
        let store = initial_store(input.objects.clone())?;
        let later: Vec<Node> = options.later_nodes.iter().map(|n| n.node.clone()).collect();
        let later_slices: Vec<ResourceSlice> = options
            .later_nodes
            .iter()
            .flat_map(|n| n.slices.iter().cloned())
            .collect();
        let Controllers { mut list, metadata } =
            controllers_for(&input, &store, &later, &later_slices)?;
        if let Some(recorder) = options.usage {
            list.push(Box::new(recorder) as Box<dyn Controller>);
        }
        let ledger = crate::record::Ledger::new();
        let record = ledger.data();
        if options.unrecorded {
            // Nothing decides on core/v1 Events (only the recorder itself reads them back): a
            // run that only reads the final store does without them.
            list.retain(|c| c.name() != allot_controllers::EventRecorder::NAME);
        } else {
            list.push(Box::new(ledger));
        }
        let names = list.iter().map(|c| c.name().to_string()).collect();
        // Room for what is added later: the bound grows with the objects.
        let bound = reconcile_bound(&store).saturating_mul(2);
        let mut runtime = Runtime::new(store, list, SimTime::ZERO);
        runtime.compact_events(true);
        let mut event_errors = Vec::new();
        for event in &input.events {
            run_until(&mut runtime, event.at, false, bound, progress)?;
            let now = runtime.now();
            if let Err(message) = apply(&mut runtime.store, event, now) {
                event_errors.push(format!("{}: {message}", event.origin));
            }
        }
        let last = input.events.last().map_or(SimTime::ZERO, |e| e.at);
        run_until(
            &mut runtime,
            last.plus_millis(input.horizon_millis),
            true,
            bound,
            progress,
        )?;
        Ok(Session {
            base_end: runtime.now(),
            input,
            runtime,
            metadata,
            bound,
            names,
            event_errors,
            record,
        })
    }

    /// The store as it is now.
    pub fn store(&self) -> &Store {
        &self.runtime.store
    }

    /// The simulated time now.
    pub fn now(&self) -> SimTime {
        self.runtime.now()
    }

    /// The input the session runs (with left-out nodes removed and later nodes' machines).
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// Creates objects now, in order; returns their keys.
    pub fn create(&mut self, objects: Vec<Stored>) -> Result<Vec<ObjectKey>, SimError> {
        let stamp = self.runtime.now().rfc3339();
        let mut keys = Vec::new();
        for object in objects {
            let key = stored_key(&object);
            let created = self
                .runtime
                .store
                .create_stored(object, &stamp)
                .map_err(|err| SimError::Store {
                    key: key.to_string(),
                    message: err.to_string(),
                })?;
            keys.push(stored_key(&created));
        }
        Ok(keys)
    }

    /// Creates nodes (given in [`SessionOptions::later_nodes`]) and their slices now.
    pub fn add_nodes(&mut self, nodes: &[NewNode]) -> Result<(), SimError> {
        let mut objects = Vec::new();
        for new in nodes {
            objects.push(Stored::Node(std::sync::Arc::new(new.node.clone())));
            for slice in &new.slices {
                objects.push(Stored::ResourceSlice(std::sync::Arc::new(slice.clone())));
            }
        }
        self.create(objects).map(|_| ())
    }

    /// Runs the controllers until nothing is left to do (at most the input's horizon on).
    pub fn settle(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        let limit = self.runtime.now().plus_millis(self.input.horizon_millis);
        run_until(&mut self.runtime, limit, true, self.bound, progress)
    }

    /// The device metadata files the node agents wrote so far, in path order.
    pub fn metadata_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<(PathBuf, Vec<u8>)> =
            self.metadata.iter().flat_map(|log| log.files()).collect();
        files.sort();
        files
    }

    /// The session as a run's outcome.
    pub fn into_outcome(self) -> super::Outcome {
        let reconcile_errors = self
            .runtime
            .errors()
            .iter()
            .map(|(at, err)| format!("{at}: {err}"))
            .collect();
        let report = crate::record::Report::new(
            &self.record.borrow(),
            &self.runtime.store,
            self.runtime.now(),
        );
        super::Outcome {
            report,
            end: self.runtime.now(),
            reconciles: self.runtime.reconciles(),
            reconcile_errors,
            event_errors: self.event_errors,
            metadata_files: {
                let mut files: Vec<(PathBuf, Vec<u8>)> =
                    self.metadata.iter().flat_map(|log| log.files()).collect();
                files.sort();
                files
            },
            controllers: self.names,
            stats: self.runtime.stats().clone(),
            store: self.runtime.into_store(),
        }
    }
}
