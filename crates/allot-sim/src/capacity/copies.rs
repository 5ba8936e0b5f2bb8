//! What-if workloads judged as units, and copies of a workload for `--max`.
//!
//! A workload's pods are the pods that appear after its objects are created (bare pods, and
//! those its controllers make: Deployment → ReplicaSet → Pods, StatefulSet, Job, ...). Its
//! units are its gangs (PodGroups with a `gang` policy: a unit fits when at least `minCount`
//! of its pods are bound, so a gang never fits partly) and every other pod.
//!
//! A copy of a workload renames every object `<name>-what-if-<n>` and follows the renames
//! where pods name them (`schedulingGroup.podGroupName`, `resourceClaimName`,
//! `resourceClaimTemplateName`, in pods, pod templates and PodGroups); controllers with a
//! label selector get the label `allot.dev/what-if-copy: "<n>"` in their selector and pod
//! template, so copies never adopt each other's pods.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::load::{RawDocument, decode_object};
use allot_store::{Kind, Store, Stored};
use serde::Serialize;
use serde_json::Value;

use super::{Placement, Unfit, Workload, judge};
use crate::SimError;
use crate::gangs::Gang;
use crate::input::Input;
use crate::run::Progress;
use crate::run::session::{Session, SessionOptions};

/// The label that keeps copies' selectors apart.
pub const COPY_LABEL: &str = "allot.dev/what-if-copy";

/// A workload's pods after it was created and the controllers settled.
#[derive(Debug, Clone, Default)]
pub struct Judged {
    /// Placed pods of the workload, in pod order.
    pub placed: Vec<Placement>,
    /// Pods of the workload that did not fit.
    pub unfit: Vec<Unfit>,
    /// The workload's gangs.
    pub gangs: Vec<Gang>,
    /// Units (gangs and pods outside gangs).
    pub units: usize,
    /// Units that fit.
    pub units_fit: usize,
}

/// Pod names (`namespace/name`) in a store.
pub fn pod_names(store: &Store) -> BTreeSet<String> {
    store
        .list::<allot_api::core::v1::Pod>()
        .map(|p| format!("{}/{}", p.metadata.namespace, p.metadata.name))
        .collect()
}

/// Judges the pods that are in `store` but not in `before`, with the gangs of `workload`.
pub fn judge_workload(store: &Store, before: &BTreeSet<String>, workload: &Workload) -> Judged {
    let trial = judge(store);
    let groups: BTreeSet<(String, String)> = workload
        .iter()
        .filter_map(|o| match o {
            Stored::PodGroup(g) => Some((g.metadata.namespace.clone(), g.metadata.name.clone())),
            _ => None,
        })
        .collect();
    let gangs: Vec<Gang> = crate::gangs::gangs(store)
        .into_iter()
        .filter(|g| groups.contains(&(g.namespace.clone(), g.name.clone())))
        .collect();
    let gang_names: BTreeSet<(String, String)> = gangs
        .iter()
        .map(|g| (g.namespace.clone(), g.name.clone()))
        .collect();
    let in_gang: BTreeSet<String> = store
        .list::<allot_api::core::v1::Pod>()
        .filter(|p| {
            p.spec.scheduling_group.as_ref().is_some_and(|g| {
                gang_names.contains(&(p.metadata.namespace.clone(), g.pod_group_name.clone()))
            })
        })
        .map(|p| format!("{}/{}", p.metadata.namespace, p.metadata.name))
        .collect();
    let new = |pod: &String| !before.contains(pod);
    let placed: Vec<Placement> = trial
        .placements
        .iter()
        .filter(|(pod, _)| new(pod))
        .map(|(pod, node)| Placement {
            pod: pod.clone(),
            node: node.clone(),
        })
        .collect();
    let unfit: Vec<Unfit> = trial.unfit.into_iter().filter(|u| new(&u.pod)).collect();
    let loose_placed = placed.iter().filter(|p| !in_gang.contains(&p.pod)).count();
    let loose_unfit = unfit.iter().filter(|u| !in_gang.contains(&u.pod)).count();
    Judged {
        units: gangs.len() + loose_placed + loose_unfit,
        units_fit: gangs.iter().filter(|g| g.scheduled).count() + loose_placed,
        placed,
        unfit,
        gangs,
    }
}

/// The answer to "how many copies of this workload fit".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadMax {
    /// Copies that fit entirely (every unit) before one did not.
    pub copies: usize,
    /// The most copies tried.
    pub limit: usize,
    /// Pods of the copies that fit, per node, in node order.
    pub per_node: BTreeMap<String, usize>,
    /// Why the next copy did not fit (its first unit that did not), when one did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_because: Option<String>,
}

/// Runs the input, then creates copies of the workload one at a time (letting the
/// controllers settle after each) until one does not fit entirely or `limit` copies fit.
pub fn workload_max(
    input: &Input,
    workload: &Workload,
    limit: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<WorkloadMax, SimError> {
    let mut session = Session::start(input, SessionOptions::default(), progress)?;
    let mut answer = WorkloadMax {
        copies: 0,
        limit,
        per_node: BTreeMap::new(),
        stopped_because: None,
    };
    while answer.copies < limit {
        let before = pod_names(session.store());
        let copy = copy_workload(workload, answer.copies + 1)?;
        session.create(copy.clone())?;
        session.settle(progress)?;
        let judged = judge_workload(session.store(), &before, &copy);
        if judged.units == 0 {
            answer.stopped_because = Some("the workload made no pod".into());
            break;
        }
        if judged.units_fit < judged.units {
            answer.stopped_because = Some(first_reason(&judged));
            break;
        }
        answer.copies += 1;
        for p in &judged.placed {
            *answer.per_node.entry(p.node.clone()).or_default() += 1;
        }
    }
    Ok(answer)
}

/// The first unit that did not fit, with its reason: a gang first, else a pod.
pub fn first_reason(judged: &Judged) -> String {
    if let Some(g) = judged.gangs.iter().find(|g| !g.scheduled) {
        return format!(
            "gang {}/{}: {}",
            g.namespace,
            g.name,
            g.reason.clone().unwrap_or_default()
        );
    }
    match judged.unfit.first() {
        Some(u) => format!("{}: {}", u.pod, u.reason),
        None => String::new(),
    }
}

/// Copy `n` of a workload (see the module's documentation).
pub fn copy_workload(workload: &Workload, n: usize) -> Result<Vec<Stored>, SimError> {
    let suffix = format!("-what-if-{n}");
    let names = |kind: Kind| -> BTreeSet<String> {
        workload
            .iter()
            .filter(|o| crate::input::stored_key(o).kind == kind)
            .map(|o| crate::input::stored_key(o).name.to_string())
            .collect()
    };
    let renames = Renames {
        suffix: &suffix,
        groups: names(Kind::PodGroup),
        claims: names(Kind::ResourceClaim),
        templates: names(Kind::ResourceClaimTemplate),
    };
    let mut out = Vec::new();
    for object in workload {
        let mut value = object.to_json();
        let kind = value["kind"].as_str().unwrap_or_default().to_string();
        let api_version = value["apiVersion"].as_str().unwrap_or_default().to_string();
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(Value::String(name)) = meta.get_mut("name")
                && !name.is_empty()
            {
                name.push_str(&suffix);
            }
            for field in ["uid", "resourceVersion", "creationTimestamp"] {
                meta.remove(field);
            }
        }
        if let Some(map) = value.as_object_mut() {
            map.remove("status");
        }
        renames.apply(&mut value);
        let selects = matches!(
            kind.as_str(),
            "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet"
        ) || (kind == "Job" && value["spec"]["manualSelector"] == Value::Bool(true));
        if selects {
            let label = Value::String(n.to_string());
            if let Some(labels) = value
                .pointer_mut("/spec/selector/matchLabels")
                .and_then(Value::as_object_mut)
            {
                labels.insert(COPY_LABEL.into(), label.clone());
            }
            if let Some(meta) = value
                .pointer_mut("/spec/template/metadata")
                .and_then(Value::as_object_mut)
            {
                let labels = meta
                    .entry("labels")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(labels) = labels.as_object_mut() {
                    labels.insert(COPY_LABEL.into(), label);
                }
            }
        }
        let raw = RawDocument {
            file: "what-if copy".into(),
            line: 1,
            api_version,
            kind: kind.clone(),
            value,
            source_map: Default::default(),
        };
        let decoded =
            decode_object(&raw, &crate::input::load_options()).map_err(|err| SimError::Store {
                key: format!("{kind} copy {n}"),
                message: err.to_string(),
            })?;
        if let Some(stored) = Stored::from_object(decoded) {
            out.push(stored);
        }
    }
    Ok(out)
}

struct Renames<'a> {
    suffix: &'a str,
    groups: BTreeSet<String>,
    claims: BTreeSet<String>,
    templates: BTreeSet<String>,
}

impl Renames<'_> {
    /// Renames references everywhere in a document.
    fn apply(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    let set = match key.as_str() {
                        "podGroupName" => Some(&self.groups),
                        "resourceClaimName" => Some(&self.claims),
                        "resourceClaimTemplateName" => Some(&self.templates),
                        _ => None,
                    };
                    match (set, v) {
                        (Some(set), Value::String(name)) if set.contains(name.as_str()) => {
                            name.push_str(self.suffix);
                        }
                        (_, v) => self.apply(v),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.apply(v)),
            _ => {}
        }
    }
}
