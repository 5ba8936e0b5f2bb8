//! Upstream's plugin test tables (pkg/scheduler/framework/plugins/*/..._test.go in Kubernetes
//! 1.37), converted to data in tests/conformance/scheduler/<plugin>.yaml, run by one table
//! runner: each case's nodes, namespaces and placed pods go into a store, the scheduler's cache
//! reads them, and a profile of the plugin alone (with PrioritySort and DefaultBinder, which
//! every profile needs) runs PreFilter, then Filter on every node or PreScore and Score.
//!
//! A case's `want` gives the PreFilter status (`preFilter`) and node names
//! (`preFilterNodes`, `PreFilterResult.NodeNames`), per node the Filter status
//! (`filter`; nodes not listed must pass), or per node the normalized score (`scores`, of the
//! `candidates` when given: the nodes that passed Filter, the others failed it). A
//! status is a code (`Skip`, `Unschedulable`, ...) or `[code, reason...]`; with `codeOnly` the
//! reasons are not compared (the upstream table compares codes only). A case that allot answers
//! differently on purpose carries `deviation:` with the upstream issue; the runner then expects
//! allot's answer and counts it apart.

#[path = "support/tables.rs"]
mod tables;

use std::collections::BTreeMap;
use std::sync::Arc;

use allot_api::core::v1::{Namespace, Node, Pod};
use allot_runtime::SimTime;
use allot_scheduler::cache::Cache;
use allot_scheduler::framework::{
    Code, Ctx, Cycle, CycleOutcome, Framework, PluginConfig, PodInfo, PreFilterCtx, Status,
};
use allot_scheduler::plugins;
use allot_store::Store;
use serde::Deserialize;
use serde_json::Value;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/scheduler"
);

tables::table!(Table, Case, plugin);

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Table {
    /// The plugin under test.
    plugin: String,
    /// Where the cases come from (upstream file and test function).
    source: Vec<String>,
    /// The plugin's arguments for every case (a case may override them).
    #[serde(default)]
    args: Value,
    /// Namespaces every case sees.
    #[serde(default)]
    namespaces: Vec<Namespace>,
    /// Nodes every case sees unless it lists its own.
    #[serde(default)]
    nodes: Vec<Node>,
    /// Other objects every case sees (PersistentVolumes, claims, StorageClasses, CSINodes,
    /// CSIDrivers, CSIStorageCapacities), by `kind`.
    #[serde(default)]
    objects: Vec<Value>,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    nodes: Option<Vec<Node>>,
    /// Pods already placed (with `spec.nodeName`).
    #[serde(default)]
    pods: Vec<Pod>,
    /// Objects of this case, beside the table's.
    #[serde(default)]
    objects: Vec<Value>,
    /// The pod to schedule.
    pod: Pod,
    want: Want,
    /// Why allot's answer (in `want`) differs from upstream's, with the upstream issue.
    #[serde(default)]
    deviation: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Want {
    #[serde(default)]
    pre_filter: Option<WantStatus>,
    /// The node names PreFilter narrows the search to (`PreFilterResult.NodeNames`).
    #[serde(default)]
    pre_filter_nodes: Option<Vec<String>>,
    #[serde(default)]
    filter: BTreeMap<String, WantStatus>,
    #[serde(default)]
    scores: Option<BTreeMap<String, i64>>,
    /// The nodes that passed Filter and are scored (upstream's `nodes` beside `failedNodes`);
    /// all nodes when absent.
    #[serde(default)]
    candidates: Option<Vec<String>>,
    /// Compare codes only.
    #[serde(default)]
    code_only: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum WantStatus {
    Code(String),
    Full(Vec<String>),
}

impl WantStatus {
    fn check(&self, got: &Status, code_only: bool) -> Result<(), String> {
        let (code, reasons): (&str, &[String]) = match self {
            WantStatus::Code(c) => (c, &[]),
            WantStatus::Full(v) => (&v[0], &v[1..]),
        };
        let got_code = got.code().to_string();
        if got_code != code {
            return Err(format!("code {got_code} ({}), want {code}", got.message()));
        }
        if !code_only && matches!(self, WantStatus::Full(_)) {
            let got_reasons: Vec<&str> = got.reasons().iter().map(|r| r.as_ref()).collect();
            if got_reasons != reasons {
                return Err(format!("reasons {got_reasons:?}, want {reasons:?}"));
            }
        }
        Ok(())
    }
}

/// Loads a case's objects into a store and the cache.
fn cluster(table: &Table, case: &Case) -> (Store, Cache) {
    let now = SimTime::ZERO.rfc3339();
    let mut store = Store::new();
    for ns in &table.namespaces {
        store.create(ns.clone(), &now).expect("namespace");
    }
    for node in case.nodes.as_ref().unwrap_or(&table.nodes) {
        store.create(node.clone(), &now).expect("node");
    }
    for object in table.objects.iter().chain(&case.objects) {
        create_object(&mut store, object, &now);
    }
    for (i, pod) in case.pods.iter().enumerate() {
        let mut pod = pod.clone();
        if pod.metadata.name.is_empty() {
            pod.metadata.name = format!("placed-{i}");
        }
        if pod.metadata.namespace.is_empty() {
            pod.metadata.namespace = "default".into();
        }
        pod.metadata.uid = format!("uid-placed-{i}");
        store.create(pod, &now).expect("pod");
    }
    let mut cache = Cache::default();
    cache.sync(&store);
    cache.order();
    (store, cache)
}

/// Creates one of the volume plugins' objects from its JSON form (by `kind`).
fn create_object(store: &mut Store, object: &Value, now: &str) {
    use allot_api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use allot_api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
    fn typed<T: serde::de::DeserializeOwned>(v: &Value) -> T {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("kind");
        }
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{object}: {e}", object = "object"))
    }
    let kind = object["kind"].as_str().unwrap_or_default();
    let result = match kind {
        "PersistentVolume" => store
            .create(typed::<PersistentVolume>(object), now)
            .map(|_| ()),
        "PersistentVolumeClaim" => {
            let mut c: PersistentVolumeClaim = typed(object);
            if c.metadata.namespace.is_empty() {
                c.metadata.namespace = "default".into();
            }
            store.create(c, now).map(|_| ())
        }
        "StorageClass" => store.create(typed::<StorageClass>(object), now).map(|_| ()),
        "CSINode" => store.create(typed::<CSINode>(object), now).map(|_| ()),
        "CSIDriver" => store.create(typed::<CSIDriver>(object), now).map(|_| ()),
        "CSIStorageCapacity" => {
            let mut c: CSIStorageCapacity = typed(object);
            if c.metadata.namespace.is_empty() {
                c.metadata.namespace = "default".into();
            }
            store.create(c, now).map(|_| ())
        }
        other => panic!("object of kind {other:?} not supported by the runner"),
    };
    result.unwrap_or_else(|e| panic!("{kind}: {e}"));
}

fn framework(table: &Table, case: &Case) -> Framework {
    let mut plugin = PluginConfig::new(&table.plugin);
    plugin.args = case.args.clone().unwrap_or_else(|| table.args.clone());
    let mut names = vec![PluginConfig::new("PrioritySort")];
    if table.plugin != "PrioritySort" {
        names.push(plugin);
    }
    if table.plugin != "DefaultBinder" {
        names.push(PluginConfig::new("DefaultBinder"));
    }
    let profile = tables::profile(names);
    let features = tables::features();
    Framework::new(&profile, &mut |p| plugins::build(p, &features)).expect("profile")
}

/// Runs one case: `Err` with what differs.
fn run(table: &Table, case: &Case) -> Result<(), String> {
    let (mut store, cache) = cluster(table, case);
    let mut framework = framework(table, case);
    let mut pod = case.pod.clone();
    if pod.metadata.namespace.is_empty() {
        pod.metadata.namespace = "default".into();
    }
    if pod.metadata.name.is_empty() {
        pod.metadata.name = "incoming".into();
    }
    let mut cycle = Cycle::new(PodInfo::new(Arc::new(pod)));
    let pre = {
        let mut ctx = PreFilterCtx {
            cluster: &cache,
            store: &mut store,
            now: SimTime::ZERO,
        };
        framework.run_pre_filter(&mut ctx, &mut cycle)
    };
    let pre_status = match &pre {
        Ok(_) => {
            // A skipped plugin: PreFilter said Skip.
            if cycle_skipped(&framework, &cycle, &table.plugin) {
                Status::skip()
            } else {
                Status::success()
            }
        }
        Err(outcome) => match &**outcome {
            CycleOutcome::Unschedulable { error, .. } => {
                Status::unresolvable(error.diagnosis.pre_filter_msg.clone().unwrap_or_default())
            }
            CycleOutcome::Error(message) => Status::error(message.clone()),
            CycleOutcome::Scheduled { .. } => Status::success(),
        },
    };
    let code_only = case.want.code_only;
    match &case.want.pre_filter {
        Some(want) => want
            .check(&pre_status, code_only)
            .map_err(|e| format!("PreFilter: {e}"))?,
        None if !pre_status.is_success() && !pre_status.is_skip() => {
            return Err(format!("PreFilter: {pre_status:?}, want Success"));
        }
        None => {}
    }
    let Ok((result, _)) = &pre else {
        return Ok(());
    };
    if let Some(want) = &case.want.pre_filter_nodes {
        let got: Vec<String> = result
            .node_names
            .as_ref()
            .map(|n| n.iter().cloned().collect())
            .unwrap_or_default();
        if &got != want {
            return Err(format!("PreFilterResult {got:?}, want {want:?}"));
        }
    } else if let Some(got) = &result.node_names {
        return Err(format!("PreFilterResult {got:?}, want all nodes"));
    }
    let ctx = Ctx {
        cluster: &cache,
        now: SimTime::ZERO,
    };
    let nodes: Vec<(String, usize)> = cache
        .nodes_in_order()
        .map(|n| (n.name.clone(), n.slot))
        .collect();
    if let Some(scores) = &case.want.scores {
        let scored: Vec<&(String, usize)> = nodes
            .iter()
            .filter(|(name, _)| {
                case.want
                    .candidates
                    .as_ref()
                    .is_none_or(|c| c.contains(name))
            })
            .collect();
        let slots: Vec<usize> = scored.iter().map(|(_, s)| *s).collect();
        let got = framework.run_score_plugins(&ctx, &mut cycle, &slots)?;
        let got: BTreeMap<String, i64> = scored
            .iter()
            .zip(&got)
            .map(|((name, _), s)| (name.clone(), s.score))
            .collect();
        if &got != scores {
            return Err(format!("scores {got:?}, want {scores:?}"));
        }
        return Ok(());
    }
    for (name, slot) in &nodes {
        let got = framework.run_filter_plugins(&ctx, &mut cycle, *slot);
        match case.want.filter.get(name) {
            Some(want) => want
                .check(&got, code_only)
                .map_err(|e| format!("Filter on {name}: {e}"))?,
            None if !got.is_success() => {
                return Err(format!(
                    "Filter on {name}: {} ({}), want Success",
                    got.code(),
                    got.message()
                ));
            }
            None => {}
        }
    }
    Ok(())
}

/// Whether the plugin under test skipped itself at PreFilter (its Filter is then skipped too:
/// every node passes).
fn cycle_skipped(framework: &Framework, cycle: &Cycle, plugin: &str) -> bool {
    framework.filter_skipped(cycle, plugin)
}

#[test]
fn upstream_plugin_tables() {
    tables::run_tables::<Table>(DIR, run);
    let _ = Code::Success;
}
