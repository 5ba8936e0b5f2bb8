//! Upstream's DefaultPreemption test tables (pkg/scheduler/framework/plugins/defaultpreemption/
//! default_preemption_test.go), converted to data in tests/conformance/scheduler/
//! default_preemption/<test>.yaml, run against allot's `plugins::default_preemption`.
//!
//! A table names the upstream test it converts (`test`): `postFilter` (TestPostFilter: the
//! PostFilter status and nominated node for given node statuses), `dryRun`
//! (TestDryRunPreemption: the candidates, by node name, with their victims by pod name and PDB
//! violations, and how often the counting `FakeFilter` ran, per preemptor in turn),
//! `selectBest` (TestSelectBestCandidate: the node picked, any of `best`), `eligible`
//! (TestPodEligibleToPreemptOthers) and `preempt` (TestPreempt: the node nominated and the pods
//! marked as victims).
//!
//! The framework-level tests of pkg/scheduler/framework/preemption (preemption_test.go,
//! executor_test.go) use the same runner: `mightHelp` (TestNodesWherePreemptionMightHelp: the
//! nodes a dry run tries for given Filter statuses, `Code` or `Code: reason`), `dryRun` and
//! `selectBest` with upstream's fake preemption plugins (`fakeVictims`: the first pod of each
//! node is its victim, with that many PDB violations, as `FakePostFilterPlugin`;
//! `fakeScores: fewestContainers`, as `FakePreemptionScorePostFilterPlugin`'s
//! `OrderedScoreFuncs`), and `prepare` (TestPrepareCandidate: a given candidate executed; the
//! pods newly marked for deletion, their `DisruptionTarget` message, the `Preempted` Events).
//!
//! Pods and nodes are written as upstream's test builders make them: a pod has a name, a node,
//! a priority, `req` (one of the table's `resources`: a container requesting it), labels, a
//! start time, and any other `spec` fields; a node is `name[/zone[/region]]` (the labels
//! `hostname`, `zone`, `region`, as upstream's tests split the name) with the table's
//! `nodeCapacity` (and `pods: 32`, as `st.MakeNode().Capacity`), or an object giving its own.
//! Upstream's test plugins are here too: `FakeFilter` (fails every node with the case's
//! `fakeFilterCode`, counting its calls), `TrueFilter`, `FalseFilter`, `MatchFilter` (passes the
//! node named like the pod) and `test-plugin` (upstream's `TestPlugin`, a PreFilter whose AddPod/RemovePod fail on nodes
//! labelled `error: "true"`).
//!
//! A case that allot answers differently on purpose carries `deviation:`; the runner then
//! expects allot's answer (in `want`) and counts it apart. Upstream cases that need what allot
//! does not have (scheduler extenders) are listed in the table's header, not converted.

#[path = "support/tables.rs"]
mod tables;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use allot_api::core::v1::{Event as CoreEvent, Node, Pod};
use allot_api::policy::v1::PodDisruptionBudget;
use allot_runtime::SimTime;
use allot_scheduler::cache::{Cache, NodeInfo};
use allot_scheduler::framework::{
    BindCtx, Code, Ctx, Cycle, CycleOutcome, CycleState, FilterHandle, FilterPlugin, Framework,
    Plugin, PluginConfig, PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult, Status,
};
use allot_scheduler::plugins;
use allot_scheduler::plugins::default_preemption::{self, DefaultPreemption, pick_one};
use allot_store::Store;
use serde::Deserialize;
use serde_json::{Value, json};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/scheduler/default_preemption"
);

tables::table!(Table, Case, test);

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Table {
    /// `postFilter`, `dryRun`, `selectBest`, `eligible` or `preempt`.
    test: String,
    /// Where the cases come from (upstream file and test function).
    source: Vec<String>,
    /// Named resource lists (upstream's `smallRes`, `largeRes`, ...).
    #[serde(default)]
    resources: BTreeMap<String, BTreeMap<String, String>>,
    /// The resources (a `resources` name) of nodes given by name.
    #[serde(default)]
    node_capacity: Option<String>,
    /// The profile's plugins besides PrioritySort and DefaultBinder, in order.
    #[serde(default)]
    plugins: Vec<String>,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Case {
    name: String,
    /// DefaultPreemptionArgs.
    #[serde(default)]
    args: Value,
    /// The profile's plugins, when not the table's.
    #[serde(default)]
    plugins: Option<Vec<String>>,
    #[serde(default)]
    nodes: Vec<NodeDesc>,
    /// Pods already placed.
    #[serde(default)]
    pods: Vec<PodDesc>,
    #[serde(default)]
    pdbs: Vec<PodDisruptionBudget>,
    /// The preemptor (or, for `dryRun`, the first of `preemptors`).
    #[serde(default)]
    pod: Option<PodDesc>,
    /// `dryRun`: preemptors tried in turn (upstream's `testPods`).
    #[serde(default)]
    preemptors: Vec<PodDesc>,
    /// Per node the status Filter gave (upstream's `filteredNodesStatuses`); every node
    /// `Unschedulable` when absent.
    #[serde(default)]
    statuses: Option<BTreeMap<String, String>>,
    /// `eligible`: the status of the pod's nominated node.
    #[serde(default)]
    nominated_node_status: Option<String>,
    /// What `FakeFilter` answers on every node (Success when absent).
    #[serde(default)]
    fake_filter_code: Option<String>,
    /// Upstream's fake `SelectVictimsOnNode`: each node's first pod is its victim, with this
    /// many PDB violations.
    #[serde(default)]
    fake_victims: Option<usize>,
    /// Upstream's fake `OrderedScoreFuncs` (`fewestContainers`) instead of the default criteria.
    #[serde(default)]
    fake_scores: Option<String>,
    /// `prepare`: the candidate executed.
    #[serde(default)]
    candidate: Option<CandidateDesc>,
    want: Want,
    #[serde(default)]
    deviation: Option<String>,
}

/// `prepare`: a candidate as upstream's tests write it (its victims need not exist).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CandidateDesc {
    #[serde(default)]
    node: String,
    #[serde(default)]
    victims: Vec<PodDesc>,
    #[serde(default)]
    pdb_violations: usize,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum NodeDesc {
    Name(String),
    Full {
        name: String,
        /// A `resources` name.
        capacity: String,
        #[serde(default)]
        labels: BTreeMap<String, String>,
    },
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PodDesc {
    name: String,
    /// The uid (`uid-<index>` when absent).
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    priority: Option<i32>,
    /// A `resources` name: one container requesting it.
    #[serde(default)]
    req: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    nominated_node_name: Option<String>,
    #[serde(default)]
    preemption_policy: Option<String>,
    /// Being deleted (upstream's `Terminating()`).
    #[serde(default)]
    terminating: bool,
    /// Carries `DisruptionTarget: True` with reason `PreemptionByScheduler`.
    #[serde(default)]
    disruption_target: bool,
    /// Other spec fields (affinity, topologySpreadConstraints).
    #[serde(default)]
    spec: Value,
    /// Status fields (conditions).
    #[serde(default)]
    status: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Want {
    /// `postFilter`: `[code]` or `[code, message]`.
    #[serde(default)]
    status: Option<Vec<String>>,
    /// `postFilter`, `preempt`: the nominated node (`""`: none).
    #[serde(default)]
    nominated: Option<String>,
    /// `dryRun`: per preemptor, the candidates by node name.
    #[serde(default)]
    candidates: Option<Vec<Vec<WantCandidate>>>,
    /// `dryRun`: per preemptor, FakeFilter's calls.
    #[serde(default)]
    filter_calls: Option<Vec<u32>>,
    /// `selectBest`: any of these.
    #[serde(default)]
    best: Option<Vec<String>>,
    /// `eligible`.
    #[serde(default)]
    eligible: Option<bool>,
    /// `preempt`: the pods marked for deletion, by name.
    #[serde(default)]
    victims: Option<Vec<String>>,
    /// `mightHelp`: the nodes a dry run tries, by name.
    #[serde(default)]
    might_help: Option<Vec<String>>,
    /// `prepare`: the pods this call marked for deletion (they had no deletion timestamp).
    #[serde(default)]
    deleted: Option<Vec<String>>,
    /// `prepare`: the message of the `DisruptionTarget` condition of each pod marked.
    #[serde(default)]
    condition: Option<String>,
    /// `prepare`: the `Preempted` Events recorded.
    #[serde(default)]
    events: Option<Vec<WantEvent>>,
}

/// A `Preempted` Event: its objects by name, action, message and reporting component.
#[derive(Debug, Deserialize, PartialEq, PartialOrd, Eq, Ord)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WantEvent {
    involved: String,
    related: String,
    action: String,
    message: String,
    #[serde(rename = "type")]
    type_: String,
    reported_by: String,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WantCandidate {
    node: String,
    victims: Vec<String>,
    #[serde(default)]
    pdb_violations: usize,
}

fn code(text: &str) -> Code {
    match text {
        "Success" => Code::Success,
        "Error" => Code::Error,
        "Unschedulable" => Code::Unschedulable,
        "UnschedulableAndUnresolvable" => Code::UnschedulableAndUnresolvable,
        "Skip" => Code::Skip,
        other => panic!("unknown status code {other:?}"),
    }
}

fn requests(table: &Table, name: &str) -> Value {
    let list = table
        .resources
        .get(name)
        .unwrap_or_else(|| panic!("no resources named {name:?}"));
    json!(list)
}

fn node_object(table: &Table, desc: &NodeDesc) -> Node {
    let (name, labels, capacity) = match desc {
        NodeDesc::Name(spec) => {
            let keys = ["hostname", "zone", "region"];
            let labels: BTreeMap<String, String> = spec
                .split('/')
                .zip(keys)
                .map(|(v, k)| (k.to_string(), v.to_string()))
                .collect();
            let name = spec.split('/').next().unwrap_or_default().to_string();
            (
                name,
                labels,
                table.node_capacity.clone().expect("table nodeCapacity"),
            )
        }
        NodeDesc::Full {
            name,
            capacity,
            labels,
        } => (name.clone(), labels.clone(), capacity.clone()),
    };
    let mut resources = serde_json::Map::new();
    resources.insert("pods".into(), json!("32"));
    if let Value::Object(m) = requests(table, &capacity) {
        resources.extend(m);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": resources, "allocatable": resources},
    }))
    .expect("node")
}

fn pod_object(table: &Table, desc: &PodDesc, uid: usize) -> Pod {
    let mut spec = json!({"containers": []});
    if let Some(req) = &desc.req {
        spec["containers"] =
            json!([{"name": "c", "resources": {"requests": requests(table, req)}}]);
    }
    if let Some(node) = &desc.node {
        spec["nodeName"] = json!(node);
    }
    if let Some(p) = desc.priority {
        spec["priority"] = json!(p);
    }
    if let Some(p) = &desc.preemption_policy {
        spec["preemptionPolicy"] = json!(p);
    }
    if let Value::Object(extra) = &desc.spec {
        for (k, v) in extra {
            spec[k] = v.clone();
        }
    }
    let mut status = json!({});
    if let Value::Object(extra) = &desc.status {
        for (k, v) in extra {
            status[k] = v.clone();
        }
    }
    if let Some(t) = &desc.start_time {
        status["startTime"] = json!(t);
    }
    if let Some(n) = &desc.nominated_node_name {
        status["nominatedNodeName"] = json!(n);
    }
    if desc.disruption_target {
        status["conditions"] = json!([{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]);
    }
    let mut metadata = json!({
        "name": desc.name,
        "namespace": desc.namespace.as_deref().unwrap_or("default"),
        "uid": desc.uid.clone().unwrap_or_else(|| format!("uid-{uid}")),
        "labels": desc.labels,
    });
    if desc.terminating {
        metadata["deletionTimestamp"] = json!(SimTime::ZERO.rfc3339());
    }
    serde_json::from_value(json!({"metadata": metadata, "spec": spec, "status": status}))
        .unwrap_or_else(|e| panic!("pod {}: {e}", desc.name))
}

/// The store and cache of a case.
fn cluster(table: &Table, case: &Case) -> (Store, Cache) {
    let now = SimTime::ZERO.rfc3339();
    let mut store = Store::new();
    for node in &case.nodes {
        store.create(node_object(table, node), &now).expect("node");
    }
    for (i, pod) in case.pods.iter().enumerate() {
        store.create(pod_object(table, pod, i), &now).expect("pod");
    }
    for (i, pdb) in case.pdbs.iter().enumerate() {
        let mut pdb = pdb.clone();
        if pdb.metadata.name.is_empty() {
            pdb.metadata.name = format!("pdb-{i}");
        }
        if pdb.metadata.namespace.is_empty() {
            pdb.metadata.namespace = "default".into();
        }
        store.create(pdb, &now).expect("pdb");
    }
    let mut cache = Cache::default();
    cache.sync(&store);
    cache.order();
    (store, cache)
}

/// Upstream's `FakeFilterPlugin`: answers `code` everywhere and counts its calls.
struct FakeFilter {
    code: Code,
    calls: Rc<Cell<u32>>,
}

impl Plugin for FakeFilter {
    fn name(&self) -> &'static str {
        "FakeFilter"
    }
    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for FakeFilter {
    fn filter(&mut self, _: &Ctx<'_>, _: &mut CycleState, pod: &PodInfo, _: &NodeInfo) -> Status {
        self.calls.set(self.calls.get() + 1);
        match self.code {
            Code::Success => Status::success(),
            code => Status::new(
                code,
                format!("injecting failure for pod {}", pod.pod.metadata.name),
            ),
        }
    }
}

/// Upstream's `TrueFilter`, `FalseFilter` and `MatchFilter`.
struct SimpleFilter(&'static str);

impl Plugin for SimpleFilter {
    fn name(&self) -> &'static str {
        self.0
    }
    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for SimpleFilter {
    fn filter(
        &mut self,
        _: &Ctx<'_>,
        _: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let pass = match self.0 {
            "TrueFilter" => true,
            "MatchFilter" => pod.pod.metadata.name == node.name,
            _ => false,
        };
        if pass {
            Status::success()
        } else {
            Status::unschedulable(format!(
                "injecting failure for pod {}",
                pod.pod.metadata.name
            ))
        }
    }
}

/// Upstream's `TestPlugin`: AddPod and RemovePod fail on nodes labelled `error: "true"`.
struct TestPlugin;

impl Plugin for TestPlugin {
    fn name(&self) -> &'static str {
        "test-plugin"
    }
    fn as_pre_filter(&mut self) -> Option<&mut dyn PreFilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for TestPlugin {
    fn pre_filter(
        &mut self,
        _: &mut PreFilterCtx<'_>,
        _: &mut CycleState,
        _: &PodInfo,
    ) -> (PreFilterResult, Status) {
        (PreFilterResult::all_nodes(), Status::success())
    }
    fn add_pod(
        &mut self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        if node.labels().get("error").map(String::as_str) == Some("true") {
            return Status::error(format!("failed to add pod: {}", pod.pod.metadata.name));
        }
        Status::success()
    }
    fn remove_pod(
        &mut self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        if node.labels().get("error").map(String::as_str) == Some("true") {
            return Status::error(format!("failed to remove pod: {}", pod.pod.metadata.name));
        }
        Status::success()
    }
}

fn framework(table: &Table, case: &Case, calls: &Rc<Cell<u32>>) -> Framework {
    let mut names = vec![PluginConfig::new("PrioritySort")];
    for p in case.plugins.as_ref().unwrap_or(&table.plugins) {
        names.push(PluginConfig::new(p));
    }
    names.push(PluginConfig::new("DefaultBinder"));
    let profile = tables::profile(names);
    let features = tables::features();
    let fake_code = case.fake_filter_code.as_deref().map_or(Code::Success, code);
    Framework::new(&profile, &mut |p| -> Result<Box<dyn Plugin>, String> {
        Ok(match p.name.as_str() {
            "FakeFilter" => Box::new(FakeFilter {
                code: fake_code,
                calls: Rc::clone(calls),
            }),
            "TrueFilter" => Box::new(SimpleFilter("TrueFilter")),
            "FalseFilter" => Box::new(SimpleFilter("FalseFilter")),
            "MatchFilter" => Box::new(SimpleFilter("MatchFilter")),
            "test-plugin" => Box::new(TestPlugin),
            _ => plugins::build(p, &features)?,
        })
    })
    .expect("profile")
}

fn preemption(case: &Case) -> DefaultPreemption {
    let args: default_preemption::Args = if case.args.is_null() {
        default_preemption::Args::default()
    } else {
        serde_json::from_value(case.args.clone()).expect("args")
    };
    DefaultPreemption::new(args).expect("args")
}

/// Per node the status Filter gave: the case's, or every node `Unschedulable`.
fn statuses(case: &Case, cache: &Cache) -> Vec<(usize, Status)> {
    let mut out = Vec::new();
    for node in cache.nodes_in_order() {
        let status = match &case.statuses {
            Some(s) => match s.get(&node.name) {
                // `Code` or `Code: reason`.
                Some(text) => match text.split_once(": ") {
                    Some((c, reason)) => Status::new(code(c), reason.to_string()),
                    None => Status::with_reasons(code(text), Vec::new()),
                },
                None => continue,
            },
            None => Status::with_reasons(Code::Unschedulable, Vec::new()),
        };
        out.push((node.slot, status));
    }
    out
}

/// A cycle for `pod`, PreFilter run.
fn cycle_for(
    framework: &mut Framework,
    store: &mut Store,
    cache: &Cache,
    pod: Pod,
) -> Result<Cycle, String> {
    let mut cycle = Cycle::new(PodInfo::new(Arc::new(pod)));
    let mut ctx = PreFilterCtx {
        cluster: cache,
        store,
        now: SimTime::ZERO,
    };
    match framework.run_pre_filter(&mut ctx, &mut cycle) {
        Ok(_) => Ok(cycle),
        Err(outcome) => match *outcome {
            CycleOutcome::Error(m) => Err(format!("PreFilter error: {m}")),
            _ => Err("PreFilter rejected the pod".into()),
        },
    }
}

type Found = (Vec<default_preemption::Candidate>, Vec<(usize, Status)>);

/// The dry run for one preemptor: candidates or the error. With `fake_victims`, upstream's
/// `FakePostFilterPlugin` picks the victims: each node's first pod, with that many PDB
/// violations.
fn dry_run(
    framework: &mut Framework,
    dp: &DefaultPreemption,
    (store, cache): (&mut Store, &Cache),
    cycle: &Cycle,
    statuses: &[(usize, Status)],
    fake_victims: Option<usize>,
) -> Result<Found, String> {
    let stamp = SimTime::ZERO.rfc3339();
    let mut ctx = BindCtx {
        cluster: cache,
        store,
        now: SimTime::ZERO,
        stamp: &stamp,
    };
    framework.with_filter_handle(cycle, |handle| match fake_victims {
        None => dp.find_candidates(&mut ctx, handle, &cycle.state, &cycle.pod, statuses),
        Some(violations) => {
            let mut first_pod =
                |_: &Ctx<'_>,
                 _: &mut dyn FilterHandle,
                 _: &mut CycleState,
                 _: &PodInfo,
                 node: &mut NodeInfo,
                 _: &[PodDisruptionBudget]| match node.pods.first() {
                    Some(p) => Ok((vec![Arc::clone(p)], violations)),
                    None => Err(Status::unresolvable("no pod on the node")),
                };
            dp.find_candidates_with(
                &mut ctx,
                handle,
                &cycle.state,
                &cycle.pod,
                statuses,
                &mut first_pod,
            )
        }
    })
}

/// The node picked among the candidates: DefaultPreemption's criteria, or upstream's fake
/// `OrderedScoreFuncs` (`fewestContainers`: the fewest containers and init containers among
/// the victims).
fn pick(case: &Case, found: &[default_preemption::Candidate]) -> Option<usize> {
    match case.fake_scores.as_deref() {
        None => pick_one(found, &SimTime::ZERO.rfc3339()),
        Some("fewestContainers") => {
            let scores: Vec<default_preemption::Score<'_, i64>> = vec![Box::new(|c| {
                -c.victims
                    .iter()
                    .map(|v| {
                        (v.pod.spec.containers.len() + v.pod.spec.init_containers.len()) as i64
                    })
                    .sum::<i64>()
            })];
            default_preemption::pick_one_by(found, &scores)
        }
        Some(other) => panic!("unknown fakeScores {other:?}"),
    }
}

fn candidates_of(found: &[default_preemption::Candidate]) -> Vec<WantCandidate> {
    let mut out: Vec<WantCandidate> = found
        .iter()
        .map(|c| {
            let mut victims: Vec<String> = c
                .victims
                .iter()
                .map(|v| v.pod.metadata.name.clone())
                .collect();
            victims.sort();
            WantCandidate {
                node: c.node.clone(),
                victims,
                pdb_violations: c.pdb_violations,
            }
        })
        .collect();
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

/// Runs one case: `Err` with what differs.
fn run(table: &Table, case: &Case) -> Result<(), String> {
    let (mut store, cache) = cluster(table, case);
    let calls = Rc::new(Cell::new(0));
    let mut framework = framework(table, case, &calls);
    let mut dp = preemption(case);
    let preemptors: Vec<&PodDesc> = case.pod.iter().chain(&case.preemptors).collect();
    let pod_of = |i: usize| pod_object(table, preemptors[i], 1000 + i);
    let statuses = statuses(case, &cache);
    let want = &case.want;
    match table.test.as_str() {
        "postFilter" | "preempt" => {
            let cycle = cycle_for(&mut framework, &mut store, &cache, pod_of(0))?;
            let stamp = SimTime::ZERO.rfc3339();
            let mut ctx = BindCtx {
                cluster: &cache,
                store: &mut store,
                now: SimTime::ZERO,
                stamp: &stamp,
            };
            let outcome = framework.with_filter_handle(&cycle, |handle| {
                use allot_scheduler::framework::PostFilterPlugin;
                let mut state = cycle.state.clone();
                dp.post_filter(&mut ctx, handle, &mut state, &cycle.pod, &statuses)
            });
            let nominated = outcome.nominated.clone().unwrap_or_default();
            if let Some(w) = &want.nominated
                && &nominated != w
            {
                return Err(format!(
                    "nominated {nominated:?}, want {w:?} ({:?})",
                    outcome.status
                ));
            }
            if let Some(w) = &want.status {
                let got_code = outcome.status.code().to_string();
                if got_code != w[0] {
                    return Err(format!(
                        "status {got_code} {:?}, want {w:?}",
                        outcome.status.message()
                    ));
                }
                if let Some(m) = w.get(1)
                    && &outcome.status.message() != m
                {
                    return Err(format!(
                        "message {:?}, want {m:?}",
                        outcome.status.message()
                    ));
                }
            }
            if let Some(w) = &want.victims {
                let mut got: Vec<String> =
                    outcome.victims.iter().map(|v| v.key.name.clone()).collect();
                got.sort();
                let mut w = w.clone();
                w.sort();
                if got != w {
                    return Err(format!("victims {got:?}, want {w:?}"));
                }
                for name in &got {
                    let pod = store.get::<Pod>("default", name).ok_or("victim gone")?;
                    if !default_preemption::terminating_by_preemption(pod) {
                        return Err(format!("{name} not marked DisruptionTarget"));
                    }
                }
            }
            Ok(())
        }
        "dryRun" => {
            let want_candidates = want.candidates.as_ref().ok_or("want.candidates")?;
            let mut previous = 0;
            for (i, w) in want_candidates.iter().enumerate() {
                let cycle = cycle_for(&mut framework, &mut store, &cache, pod_of(i))?;
                let found = dry_run(
                    &mut framework,
                    &dp,
                    (&mut store, &cache),
                    &cycle,
                    &statuses,
                    case.fake_victims,
                )?;
                let got = candidates_of(&found.0);
                if &got != w {
                    return Err(format!("cycle {i}: candidates {got:?}, want {w:?}"));
                }
                if let Some(c) = &want.filter_calls {
                    let n = calls.get() - previous;
                    if n != c[i] {
                        return Err(format!(
                            "cycle {i}: FakeFilter ran {n} times, want {}",
                            c[i]
                        ));
                    }
                }
                previous = calls.get();
            }
            Ok(())
        }
        "selectBest" => {
            let cycle = cycle_for(&mut framework, &mut store, &cache, pod_of(0))?;
            let found = dry_run(
                &mut framework,
                &dp,
                (&mut store, &cache),
                &cycle,
                &statuses,
                case.fake_victims,
            )?;
            let best = want.best.as_ref().ok_or("want.best")?;
            match pick(case, &found.0) {
                Some(i) if best.contains(&found.0[i].node) => Ok(()),
                Some(i) => Err(format!("picked {}, want any of {best:?}", found.0[i].node)),
                None if best.is_empty() => Ok(()),
                None => Err(format!("no candidate, want any of {best:?}")),
            }
        }
        "eligible" => {
            let pod = pod_of(0);
            let nominated = pod.status.nominated_node_name.clone().unwrap_or_default();
            let mut node_statuses = Vec::new();
            if let (Some(c), Some(slot)) = (&case.nominated_node_status, cache.slot_of(&nominated))
            {
                node_statuses.push((slot, Status::with_reasons(code(c), Vec::new())));
            }
            let stamp = SimTime::ZERO.rfc3339();
            let ctx = BindCtx {
                cluster: &cache,
                store: &mut store,
                now: SimTime::ZERO,
                stamp: &stamp,
            };
            let got = dp
                .eligible(&ctx, &PodInfo::new(Arc::new(pod)), &node_statuses)
                .is_ok();
            let w = want.eligible.ok_or("want.eligible")?;
            if got != w {
                return Err(format!("eligible {got}, want {w}"));
            }
            Ok(())
        }
        "mightHelp" => {
            let mut got: Vec<String> =
                default_preemption::nodes_where_preemption_might_help(&cache, &statuses)
                    .iter()
                    .map(|n| n.name.clone())
                    .collect();
            got.sort();
            let mut w = want.might_help.clone().ok_or("want.mightHelp")?;
            w.sort();
            if got != w {
                return Err(format!("nodes tried {got:?}, want {w:?}"));
            }
            Ok(())
        }
        "prepare" => prepare(table, case, &mut store, &cache, &dp, pod_of(0)),
        other => panic!("unknown test {other:?}"),
    }
}

/// `prepare`: the case's candidate executed for the preemptor (upstream `prepareCandidate`).
fn prepare(
    table: &Table,
    case: &Case,
    store: &mut Store,
    cache: &Cache,
    dp: &DefaultPreemption,
    preemptor: Pod,
) -> Result<(), String> {
    let want = &case.want;
    let desc = case.candidate.as_ref().ok_or("candidate")?;
    let candidate = default_preemption::Candidate {
        node: desc.node.clone(),
        victims: desc
            .victims
            .iter()
            .enumerate()
            .map(|(i, v)| Arc::new(PodInfo::new(Arc::new(pod_object(table, v, 2000 + i)))))
            .collect(),
        pdb_violations: desc.pdb_violations,
    };
    let terminating_before: Vec<String> = store
        .list::<Pod>()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .map(|p| p.metadata.name.clone())
        .collect();
    let stamp = SimTime::ZERO.rfc3339();
    let mut ctx = BindCtx {
        cluster: cache,
        store,
        now: SimTime::ZERO,
        stamp: &stamp,
    };
    let result = dp.prepare(&mut ctx, &PodInfo::new(Arc::new(preemptor)), &candidate);
    if let Some(w) = &want.status {
        let got = if result.is_ok() { "Success" } else { "Error" };
        if got != w[0] {
            return Err(format!("status {got} ({result:?}), want {w:?}"));
        }
    }
    let mut deleted: Vec<String> = store
        .list::<Pod>()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .map(|p| p.metadata.name.clone())
        .filter(|n| !terminating_before.contains(n))
        .collect();
    deleted.sort();
    let mut w = want.deleted.clone().ok_or("want.deleted")?;
    w.sort();
    if deleted != w {
        return Err(format!("marked for deletion {deleted:?}, want {w:?}"));
    }
    if let Some(message) = &want.condition {
        for name in &deleted {
            let pod = store.get::<Pod>("default", name).ok_or("victim gone")?;
            let condition = pod
                .status
                .conditions
                .iter()
                .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
                .ok_or_else(|| format!("{name}: no DisruptionTarget condition"))?;
            if condition.reason.as_deref() != Some("PreemptionByScheduler")
                || condition.message.as_deref() != Some(message.as_str())
            {
                return Err(format!("{name}: DisruptionTarget {condition:?}"));
            }
        }
    }
    let mut events: Vec<WantEvent> = store
        .list::<CoreEvent>()
        .filter(|e| e.reason.as_deref() == Some("Preempted"))
        .map(|e| WantEvent {
            involved: e.involved_object.name.clone().unwrap_or_default(),
            related: e
                .related
                .as_ref()
                .map(|r| {
                    format!(
                        "{}/{} {}",
                        r.kind.as_deref().unwrap_or_default(),
                        r.name.as_deref().unwrap_or_default(),
                        r.uid.as_deref().unwrap_or_default()
                    )
                })
                .unwrap_or_default(),
            action: e.action.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            type_: e.type_.clone().unwrap_or_default(),
            reported_by: e.reporting_component.clone().unwrap_or_default(),
        })
        .collect();
    events.sort();
    let mut w: Vec<&WantEvent> = want.events.as_ref().ok_or("want.events")?.iter().collect();
    w.sort();
    if events.iter().collect::<Vec<_>>() != w {
        return Err(format!("Preempted events {events:?}, want {w:?}"));
    }
    Ok(())
}

#[test]
fn upstream_preemption_tables() {
    tables::run_tables::<Table>(DIR, run);
}
