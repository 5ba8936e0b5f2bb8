//! The device taint eviction controller (upstream pkg/controller/devicetainteviction).
//!
//! Pods that use allocated devices with `NoExecute` taints, from the ResourceSlices or from
//! DeviceTaintRules, are evicted once the tolerations recorded in their claims' allocation run
//! out: the pod gets the `DisruptionTarget` condition (reason `DeletionByDeviceTaintManager`) and
//! is then deleted (or, with [`EvictionMode::MarkFailed`], kept with phase `Failed`). The work
//! items are pods (evict now, or come back at the eviction time) and DeviceTaintRules (the
//! `EvictionInProgress` condition with upstream's reasons and messages, including the dry run of
//! `effect: None`).
//!
//! DeviceTaintRule selection follows upstream (driver, pool, device; a rule without a selector
//! selects nothing) plus the spec's extension: a `deviceClassName` selects the devices the class's
//! CEL selectors select (a missing class selects nothing), and CEL `selectors` must all be true.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{Pod, PodCondition};
use allot_api::meta::v1::Condition;
use allot_api::resource::v1::{
    Device, DeviceAttribute, DeviceClass, DeviceRequestAllocationResult, DeviceTaint,
    DeviceTaintEffect, DeviceTaintRule, DeviceTaintRuleSpec, DeviceToleration,
    DeviceTolerationOperator, ResourceClaim, ResourceSlice,
};
use allot_cel::{AttributeValue, CelDevice, CompiledExpression};
use allot_runtime::{Action, Context, Controller, SimTime};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::resourceclaim::pod_claim_names;

/// The controller's name.
pub const DEVICE_TAINT_EVICTION_CONTROLLER: &str = "device-taint-eviction-controller";
/// The condition type on DeviceTaintRules.
pub const EVICTION_IN_PROGRESS: &str = "EvictionInProgress";
/// The shortest time between status updates of a rule while eviction is in progress.
pub const RULE_STATUS_PERIOD_MILLIS: u64 = 10_000;
/// The pod condition reason upstream sets before deleting a pod.
pub const EVICTION_REASON: &str = "DeletionByDeviceTaintManager";
/// The pod condition message upstream sets before deleting a pod.
pub const EVICTION_MESSAGE: &str = "Device Taint manager: deleting due to NoExecute taint";

/// What eviction does to a pod after adding the `DisruptionTarget` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvictionMode {
    /// Delete the pod, as upstream does.
    #[default]
    Delete,
    /// Keep the pod with `status.phase: Failed` and reason `DeletionByDeviceTaintManager`, so the
    /// final state shows what happened.
    MarkFailed,
}

/// The device taint eviction controller.
#[derive(Debug, Default)]
pub struct DeviceTaintEvictionController {
    mode: EvictionMode,
    /// Pods evicted per rule uid since the controller started.
    evicted: BTreeMap<String, u64>,
    /// Rule selection.
    matcher: RuleMatcher,
    /// Pools (driver, pool) that had a NoExecute device taint in some slice event. Only pods
    /// using those pools (or DeviceTaintRules) can need eviction; the set only grows.
    tainted_pools: RefCell<BTreeSet<(String, String)>>,
    /// The spec of each rule (by uid) last seen in an event, so that status-only updates do
    /// not wake every pod.
    rule_specs: RefCell<BTreeMap<String, DeviceTaintRuleSpec>>,
}

/// Where a taint comes from; the order is upstream's (rules first, by name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum TaintSource {
    Rule {
        name: String,
        uid: String,
    },
    Slice {
        driver: String,
        pool: String,
        device: String,
        index: usize,
    },
}

/// When a pod or claim must be evicted, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Eviction {
    when: SimTime,
    reasons: BTreeSet<TaintSource>,
}

impl Eviction {
    fn join(a: Option<Eviction>, b: Eviction) -> Eviction {
        match a {
            None => b,
            Some(mut a) => {
                a.when = a.when.min(b.when);
                a.reasons.extend(b.reasons);
                a
            }
        }
    }
}

/// Whether a toleration matches a taint (upstream `resourceclaim.ToleratesTaint`).
pub fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    if toleration
        .effect
        .as_ref()
        .is_some_and(|e| *e != taint.effect)
    {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    match toleration.operator {
        Some(DeviceTolerationOperator::Exists) => true,
        Some(DeviceTolerationOperator::Equal) | None => toleration.value == taint.value,
        Some(_) => false,
    }
}

fn parse_time(text: Option<&str>) -> Option<SimTime> {
    text.and_then(SimTime::parse_rfc3339)
}

/// When a taint took effect: `timeAdded`, else the creation of the object carrying it.
fn taint_time(taint: &DeviceTaint, created: Option<&str>) -> SimTime {
    parse_time(taint.time_added.as_deref())
        .or_else(|| parse_time(created))
        .unwrap_or(SimTime::ZERO)
}

fn attribute_value(attribute: &DeviceAttribute) -> Option<AttributeValue> {
    Some(if let Some(v) = attribute.bool_value {
        AttributeValue::Bool(v)
    } else if let Some(v) = attribute.int_value {
        AttributeValue::Int(v)
    } else if let Some(v) = &attribute.string_value {
        AttributeValue::String(v.clone())
    } else if let Some(v) = &attribute.version_value {
        AttributeValue::Version(v.clone())
    } else if !attribute.bool_values.is_empty() {
        AttributeValue::BoolList(attribute.bool_values.clone())
    } else if !attribute.int_values.is_empty() {
        AttributeValue::IntList(attribute.int_values.clone())
    } else if !attribute.string_values.is_empty() {
        AttributeValue::StringList(attribute.string_values.clone())
    } else if !attribute.version_values.is_empty() {
        AttributeValue::VersionList(attribute.version_values.clone())
    } else {
        return None;
    })
}

/// The CEL view of a device; `None` when an attribute has no value of a known type.
pub(crate) fn cel_device(driver: &str, device: &Device) -> Option<CelDevice> {
    let mut cel = CelDevice::new(driver, device.allow_multiple_allocations.unwrap_or(false));
    for (name, attribute) in &device.attributes {
        cel = cel.attribute(name, attribute_value(attribute)?);
    }
    for (name, capacity) in &device.capacity {
        cel = cel.capacity(name, capacity.value.clone());
    }
    Some(cel)
}

/// The devices of the newest generation of each pool, by (driver, pool).
struct Pools<'a> {
    pools: BTreeMap<(&'a str, &'a str), Vec<&'a ResourceSlice>>,
}

impl<'a> Pools<'a> {
    /// Indexes the slices of the given pools (all pools when `only` is `None`).
    fn new(store: &'a Store, only: Option<&BTreeSet<(String, String)>>) -> Self {
        let mut pools: BTreeMap<(&str, &str), Vec<&ResourceSlice>> = BTreeMap::new();
        for slice in store.list::<ResourceSlice>() {
            let id = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
            if only.is_some_and(|o| !o.iter().any(|(d, p)| d == id.0 && p == id.1)) {
                continue;
            }
            pools.entry(id).or_default().push(slice);
        }
        for slices in pools.values_mut() {
            let newest = slices.iter().map(|s| s.spec.pool.generation).max();
            slices.retain(|s| Some(s.spec.pool.generation) == newest);
        }
        Pools { pools }
    }

    fn device(
        &self,
        driver: &str,
        pool: &str,
        device: &str,
    ) -> Option<(&'a ResourceSlice, &'a Device)> {
        self.pools.get(&(driver, pool))?.iter().find_map(|slice| {
            slice
                .spec
                .devices
                .iter()
                .find(|d| d.name == device)
                .map(|d| (*slice, d))
        })
    }

    fn devices(&self) -> impl Iterator<Item = (&'a ResourceSlice, &'a Device)> + '_ {
        self.pools.values().flat_map(|slices| {
            slices
                .iter()
                .flat_map(|s| s.spec.devices.iter().map(move |d| (*s, d)))
        })
    }
}

/// DeviceTaintRule selection with a cache of compiled CEL selectors.
#[derive(Debug, Default)]
pub struct RuleMatcher {
    /// Compiled CEL selectors by expression (`None`: does not compile).
    cel: BTreeMap<String, Option<CompiledExpression>>,
}

impl RuleMatcher {
    fn compiled(&mut self, expression: &str) -> Option<&CompiledExpression> {
        self.cel
            .entry(expression.to_string())
            .or_insert_with(|| allot_cel::compile(expression).ok())
            .as_ref()
    }

    fn selectors_match<'s>(
        &mut self,
        expressions: impl Iterator<Item = &'s str>,
        driver: &str,
        device: Option<&Device>,
    ) -> bool {
        let mut cel: Option<CelDevice> = None;
        for expression in expressions {
            let Some(device) = device else {
                return false;
            };
            if cel.is_none() {
                cel = cel_device(driver, device);
            }
            let Some(view) = &cel else {
                return false;
            };
            let Some(compiled) = self.compiled(expression) else {
                return false;
            };
            if compiled.evaluate(view) != Ok(true) {
                return false;
            }
        }
        true
    }

    /// Whether a rule selects a device: upstream's driver, pool and device fields plus the
    /// class and CEL extension. `device` is the published device, needed only by the extension
    /// (without it, a rule using the extension selects nothing).
    pub fn matches(
        &mut self,
        store: &Store,
        rule: &DeviceTaintRule,
        driver: &str,
        pool: &str,
        name: &str,
        device: Option<&Device>,
    ) -> bool {
        let Some(selector) = &rule.spec.device_selector else {
            return false;
        };
        if selector.driver.as_deref().is_some_and(|d| d != driver)
            || selector.pool.as_deref().is_some_and(|p| p != pool)
            || selector.device.as_deref().is_some_and(|d| d != name)
        {
            return false;
        }
        if let Some(class_name) = &selector.device_class_name {
            let Some(class) = store.get::<DeviceClass>("", class_name) else {
                return false;
            };
            let expressions = class
                .spec
                .selectors
                .iter()
                .filter_map(|s| s.cel.as_ref().map(|c| c.expression.as_str()));
            if !self.selectors_match(expressions, driver, device) {
                return false;
            }
        }
        let expressions = selector
            .selectors
            .iter()
            .filter_map(|s| s.cel.as_ref().map(|c| c.expression.as_str()));
        self.selectors_match(expressions, driver, device)
    }
}

/// A rule as the controller evaluates it: its effect may be overridden for the dry run.
struct RuleView<'a> {
    rule: &'a DeviceTaintRule,
    effect: DeviceTaintEffect,
}

impl DeviceTaintEvictionController {
    /// A controller that evicts pods as `mode` says.
    pub fn new(mode: EvictionMode) -> Self {
        DeviceTaintEvictionController {
            mode,
            ..Default::default()
        }
    }

    /// Pods evicted so far because of the rule with this uid.
    pub fn evicted_for_rule(&self, uid: &str) -> u64 {
        self.evicted.get(uid).copied().unwrap_or(0)
    }

    /// Whether a rule selects a device.
    fn rule_matches(
        &mut self,
        store: &Store,
        rule: &DeviceTaintRule,
        driver: &str,
        pool: &str,
        name: &str,
        device: Option<&Device>,
    ) -> bool {
        self.matcher
            .matches(store, rule, driver, pool, name, device)
    }

    /// The eviction a claim's allocation calls for, if any (upstream `claimEvictionTime`).
    fn claim_eviction(
        &mut self,
        store: &Store,
        pools: &Pools<'_>,
        rules: &[RuleView<'_>],
        claim: &ResourceClaim,
    ) -> Option<Eviction> {
        let allocation = claim.status.allocation.as_ref()?;
        let mut eviction: Option<Eviction> = None;
        for result in &allocation.devices.results {
            let found = pools.device(&result.driver, &result.pool, &result.device);
            let mut taints: Vec<(TaintSource, DeviceTaint, SimTime)> = Vec::new();
            if let Some((slice, device)) = found {
                for (index, taint) in device.taints.iter().enumerate() {
                    if taint.effect == DeviceTaintEffect::NoExecute {
                        let at = taint_time(taint, slice.metadata.creation_timestamp.as_deref());
                        let source = TaintSource::Slice {
                            driver: result.driver.to_string(),
                            pool: result.pool.to_string(),
                            device: result.device.to_string(),
                            index,
                        };
                        taints.push((source, taint.clone(), at));
                    }
                }
            }
            for view in rules {
                if view.effect != DeviceTaintEffect::NoExecute
                    || !self.rule_matches(
                        store,
                        view.rule,
                        &result.driver,
                        &result.pool,
                        &result.device,
                        found.map(|(_, d)| d),
                    )
                {
                    continue;
                }
                let mut taint = view.rule.spec.taint.clone();
                taint.effect = DeviceTaintEffect::NoExecute;
                let at = taint_time(&taint, view.rule.metadata.creation_timestamp.as_deref());
                let source = TaintSource::Rule {
                    name: view.rule.metadata.name.clone(),
                    uid: view.rule.metadata.uid.clone(),
                };
                taints.push((source, taint, at));
            }
            for (source, taint, at) in taints {
                let Some(when) = eviction_time(result, &taint, at) else {
                    continue;
                };
                eviction = Some(Eviction::join(
                    eviction,
                    Eviction {
                        when,
                        reasons: BTreeSet::from([source]),
                    },
                ));
            }
        }
        eviction
    }

    /// The eviction a pod calls for (upstream `podEvictionTime`): its claims that are allocated
    /// and reserved for it.
    fn pod_eviction(
        &mut self,
        store: &Store,
        pools: &Pools<'_>,
        rules: &[RuleView<'_>],
        pod: &Pod,
    ) -> Option<Eviction> {
        if pod.spec.node_name.as_deref().unwrap_or("").is_empty() {
            return None;
        }
        let mut eviction = None;
        for (_, claim_name) in pod_claim_names(store, pod) {
            let Some(claim_name) = claim_name else {
                continue;
            };
            let Some(claim) = store.get::<ResourceClaim>(&pod.metadata.namespace, &claim_name)
            else {
                continue;
            };
            if !claim
                .status
                .reserved_for
                .iter()
                .any(|r| r.resource == "pods" && r.uid == pod.metadata.uid)
            {
                continue;
            }
            if let Some(e) = self.claim_eviction(store, pools, rules, claim) {
                eviction = Some(Eviction::join(eviction, e));
            }
        }
        eviction
    }

    /// Nothing can evict while no rule and no slice carries a NoExecute taint.
    fn nothing_evicts(&self, store: &Store) -> bool {
        self.tainted_pools.borrow().is_empty()
            && !store
                .list::<DeviceTaintRule>()
                .any(|r| r.spec.taint.effect == DeviceTaintEffect::NoExecute)
    }

    fn sync_pod(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        if self.nothing_evicts(store) {
            return Ok(Action::Done);
        }
        let Some(pod) = store.get::<Pod>(&key.namespace, &key.name).cloned() else {
            return Ok(Action::Done);
        };
        if pod.metadata.deletion_timestamp.is_some()
            || matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"))
            || pod.spec.resource_claims.is_empty()
        {
            return Ok(Action::Done);
        }
        let rules: Vec<DeviceTaintRule> = store
            .list::<DeviceTaintRule>()
            .filter(|r| r.spec.taint.effect == DeviceTaintEffect::NoExecute)
            .cloned()
            .collect();
        if rules.is_empty() && self.tainted_pools.borrow().is_empty() {
            return Ok(Action::Done);
        }
        // Only the pools of the pod's claims matter.
        let mut used: BTreeSet<(String, String)> = BTreeSet::new();
        for (_, claim_name) in pod_claim_names(store, &pod) {
            let Some(claim) =
                claim_name.and_then(|n| store.get::<ResourceClaim>(&pod.metadata.namespace, &n))
            else {
                continue;
            };
            for r in claim
                .status
                .allocation
                .iter()
                .flat_map(|a| &a.devices.results)
            {
                used.insert((r.driver.to_string(), r.pool.to_string()));
            }
        }
        if rules.is_empty() {
            let tainted = self.tainted_pools.borrow();
            used.retain(|id| tainted.contains(id));
        }
        if used.is_empty() {
            return Ok(Action::Done);
        }
        let only = Some(&used);
        let eviction = {
            let snapshot: &Store = store;
            let pools = Pools::new(snapshot, only);
            let views: Vec<RuleView<'_>> = rules
                .iter()
                .map(|rule| RuleView {
                    rule,
                    effect: DeviceTaintEffect::NoExecute,
                })
                .collect();
            self.pod_eviction(snapshot, &pools, &views, &pod)
        };
        let Some(eviction) = eviction else {
            return Ok(Action::Done);
        };
        if eviction.when > ctx.now {
            return Ok(Action::RequeueAfterMillis(eviction.when.0 - ctx.now.0));
        }
        self.evict(store, &pod, ctx)?;
        for reason in &eviction.reasons {
            if let TaintSource::Rule { uid, .. } = reason {
                *self.evicted.entry(uid.clone()).or_default() += 1;
            }
        }
        Ok(Action::Done)
    }

    fn evict(&mut self, store: &mut Store, pod: &Pod, ctx: &Context) -> Result<(), String> {
        let now = ctx.now.rfc3339();
        let mode = self.mode;
        store
            .modify::<Pod, _>(&pod.metadata.namespace, &pod.metadata.name, |p| {
                let condition = PodCondition {
                    type_: "DisruptionTarget".into(),
                    status: "True".into(),
                    reason: Some(EVICTION_REASON.into()),
                    message: Some(EVICTION_MESSAGE.into()),
                    last_transition_time: Some(now.clone()),
                    ..Default::default()
                };
                match p
                    .status
                    .conditions
                    .iter_mut()
                    .find(|c| c.type_ == "DisruptionTarget")
                {
                    Some(existing) => {
                        if existing.status != condition.status
                            || existing.reason != condition.reason
                            || existing.message != condition.message
                        {
                            *existing = condition;
                        }
                    }
                    None => p.status.conditions.push(condition),
                }
                if mode == EvictionMode::MarkFailed {
                    p.status.phase = Some("Failed".into());
                    p.status.reason = Some(EVICTION_REASON.into());
                    p.status.message = Some(EVICTION_MESSAGE.into());
                }
            })
            .map_err(|e| e.to_string())?;
        if mode == EvictionMode::Delete {
            let key = ObjectKey::new(
                Kind::Pod,
                pod.metadata.namespace.clone(),
                pod.metadata.name.clone(),
            );
            store.delete(&key).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Pods pending eviction because of `rule` (with its effect treated as `effect`), and the
    /// number of their namespaces (upstream `countPendingPods`).
    fn count_pending(
        &mut self,
        store: &Store,
        pools: &Pools<'_>,
        rules: &[RuleView<'_>],
        rule_uid: &str,
    ) -> (u64, u64) {
        let mut pods = 0;
        let mut namespaces = BTreeSet::new();
        for pod in store.list::<Pod>() {
            if pod.metadata.deletion_timestamp.is_some() || pod.spec.resource_claims.is_empty() {
                continue;
            }
            let Some(eviction) = self.pod_eviction(store, pools, rules, pod) else {
                continue;
            };
            if eviction
                .reasons
                .iter()
                .any(|r| matches!(r, TaintSource::Rule { uid, .. } if uid == rule_uid))
            {
                pods += 1;
                namespaces.insert(pod.metadata.namespace.clone());
            }
        }
        (pods, namespaces.len() as u64)
    }

    fn sync_rule(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(rule) = store.get::<DeviceTaintRule>("", &key.name).cloned() else {
            return Ok(Action::Done);
        };
        let generation = rule.metadata.generation.unwrap_or(0);
        let existing = rule
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == EVICTION_IN_PROGRESS)
            .cloned();
        if let Some(existing) = &existing
            && existing.observed_generation == Some(generation)
        {
            if rule.spec.taint.effect == DeviceTaintEffect::None {
                // The dry-run result is computed once per generation.
                return Ok(Action::Done);
            }
            let since = parse_time(Some(&existing.last_transition_time))
                .map(|t| ctx.now.0.saturating_sub(t.0))
                .unwrap_or(u64::MAX);
            if since < RULE_STATUS_PERIOD_MILLIS {
                return Ok(Action::RequeueAfterMillis(
                    RULE_STATUS_PERIOD_MILLIS - since,
                ));
            }
        }
        let snapshot: &Store = store;
        let pools = Pools::new(snapshot, None);
        let (mut pending, mut namespaces, mut published, mut allocated) = (0, 0, 0u64, 0u64);
        match &rule.spec.taint.effect {
            DeviceTaintEffect::None => {
                // The dry run: every NoExecute rule plus this one as if it were NoExecute.
                let mut views: Vec<RuleView<'_>> = snapshot
                    .list::<DeviceTaintRule>()
                    .filter(|r| r.metadata.uid != rule.metadata.uid)
                    .map(|r| RuleView {
                        rule: r,
                        effect: r.spec.taint.effect.clone(),
                    })
                    .collect();
                views.push(RuleView {
                    rule: &rule,
                    effect: DeviceTaintEffect::NoExecute,
                });
                (pending, namespaces) =
                    self.count_pending(snapshot, &pools, &views, &rule.metadata.uid);
                for (slice, device) in pools.devices() {
                    if self.rule_matches(
                        snapshot,
                        &rule,
                        &slice.spec.driver,
                        &slice.spec.pool.name,
                        &device.name,
                        Some(device),
                    ) {
                        published += 1;
                    }
                }
                for claim in snapshot.list::<ResourceClaim>() {
                    let Some(allocation) = &claim.status.allocation else {
                        continue;
                    };
                    for result in &allocation.devices.results {
                        let device = pools
                            .device(&result.driver, &result.pool, &result.device)
                            .map(|(_, d)| d);
                        if self.rule_matches(
                            snapshot,
                            &rule,
                            &result.driver,
                            &result.pool,
                            &result.device,
                            device,
                        ) {
                            allocated += 1;
                        }
                    }
                }
            }
            DeviceTaintEffect::NoExecute => {
                let views: Vec<RuleView<'_>> = snapshot
                    .list::<DeviceTaintRule>()
                    .map(|r| RuleView {
                        rule: r,
                        effect: r.spec.taint.effect.clone(),
                    })
                    .collect();
                (pending, namespaces) =
                    self.count_pending(snapshot, &pools, &views, &rule.metadata.uid);
            }
            _ => {}
        }
        let evicted = self.evicted_for_rule(&rule.metadata.uid);
        let (status, reason, mut message) = condition_text(
            &rule.spec.taint.effect,
            pending,
            namespaces,
            published,
            allocated,
            evicted,
        );
        if evicted > 0 {
            if !message.is_empty() {
                message.push(' ');
            }
            message.push_str(&format!(
                "{} evicted since starting the controller.",
                plural(evicted, "pod", "pods")
            ));
        }
        let mut condition = Condition {
            type_: EVICTION_IN_PROGRESS.into(),
            status: status.into(),
            observed_generation: Some(generation),
            last_transition_time: existing
                .as_ref()
                .map(|c| c.last_transition_time.clone())
                .unwrap_or_default(),
            reason: reason.into(),
            message,
        };
        if existing.as_ref() == Some(&condition) {
            return Ok(Action::Done);
        }
        condition.last_transition_time = ctx.now.rfc3339();
        store
            .modify::<DeviceTaintRule, _>("", &key.name, |r| {
                r.status
                    .conditions
                    .retain(|c| c.type_ != EVICTION_IN_PROGRESS);
                r.status.conditions.push(condition.clone());
            })
            .map_err(|e| e.to_string())?;
        if pending > 0 {
            Ok(Action::RequeueAfterMillis(RULE_STATUS_PERIOD_MILLIS))
        } else {
            Ok(Action::Done)
        }
    }

    /// Bound pods whose reserved claims use a device of the given pool.
    fn pods_using_pool(store: &Store, driver: &str, pool: &str) -> Vec<ObjectKey> {
        let mut keys = BTreeSet::new();
        for claim in store.list::<ResourceClaim>() {
            let Some(allocation) = &claim.status.allocation else {
                continue;
            };
            if allocation
                .devices
                .results
                .iter()
                .any(|r| r.driver == driver && r.pool == pool)
            {
                for r in &claim.status.reserved_for {
                    if r.resource == "pods" {
                        keys.insert(ObjectKey::new(
                            Kind::Pod,
                            claim.metadata.namespace.clone(),
                            r.name.clone(),
                        ));
                    }
                }
            }
        }
        keys.into_iter().collect()
    }

    /// Bound pods with claims.
    fn pods_with_claims(store: &Store) -> Vec<ObjectKey> {
        store
            .list::<Pod>()
            .filter(|p| !p.spec.resource_claims.is_empty() && p.spec.node_name.is_some())
            .map(Store::key_of)
            .collect()
    }

    /// Rules whose status can change when pods come and go.
    fn active_rules(store: &Store) -> Vec<ObjectKey> {
        store
            .list::<DeviceTaintRule>()
            .filter(|r| r.spec.taint.effect == DeviceTaintEffect::NoExecute)
            .map(Store::key_of)
            .collect()
    }
}

/// When a taint on an allocated device evicts its users, or `None` when a toleration without
/// `tolerationSeconds` tolerates it forever. As upstream, only tolerations naming the
/// `NoExecute` effect delay eviction.
fn eviction_time(
    result: &DeviceRequestAllocationResult,
    taint: &DeviceTaint,
    added: SimTime,
) -> Option<SimTime> {
    let mut seconds: Option<i64> = None;
    for toleration in &result.tolerations {
        if toleration.effect != Some(DeviceTaintEffect::NoExecute) || !tolerates(toleration, taint)
        {
            continue;
        }
        let s = toleration.toleration_seconds?.max(0);
        seconds = Some(seconds.map_or(s, |m| m.min(s)));
    }
    Some(added.plus_seconds(seconds.unwrap_or(0) as u64))
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Status, reason and message of `EvictionInProgress` before the "evicted since starting"
/// suffix, as upstream words them.
fn condition_text(
    effect: &DeviceTaintEffect,
    pending: u64,
    namespaces: u64,
    published: u64,
    allocated: u64,
    evicted: u64,
) -> (&'static str, &'static str, String) {
    let in_namespaces = |n: u64, end: &str| {
        if n == 1 {
            format!("1 namespace{end}")
        } else {
            format!("{n} different namespaces{end}")
        }
    };
    match effect {
        DeviceTaintEffect::NoExecute if pending > 0 => {
            let head = if pending == 1 {
                "1 pod needs to be evicted in ".to_string()
            } else {
                format!("{pending} pods need to be evicted in ")
            };
            (
                "True",
                "PodsPendingEviction",
                head + &in_namespaces(namespaces, "."),
            )
        }
        DeviceTaintEffect::NoExecute if evicted > 0 => ("False", "Completed", String::new()),
        DeviceTaintEffect::NoExecute => ("False", "NotStarted", String::new()),
        DeviceTaintEffect::None => {
            let message = format!(
                "{} selected. {} selected. {} would be evicted in {}if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.",
                plural(published, "published device", "published devices"),
                plural(allocated, "allocated device", "allocated devices"),
                plural(pending, "pod", "pods"),
                in_namespaces(namespaces, " "),
            );
            ("False", "NoEffect", message)
        }
        _ => (
            "False",
            "OtherEffect",
            "Eviction only happens for the NoExecute effect.".to_string(),
        ),
    }
}

impl Controller for DeviceTaintEvictionController {
    fn name(&self) -> &'static str {
        DEVICE_TAINT_EVICTION_CONTROLLER
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            // While no rule and no slice carries a NoExecute taint a pod's reconcile does
            // nothing (`sync_pod`), and the first such rule or slice wakes every pod it
            // concerns: pod and claim changes wake nothing until then.
            Stored::Pod(_) | Stored::ResourceClaim(_) if self.nothing_evicts(store) => Vec::new(),
            Stored::Pod(pod) => {
                let mut keys = Vec::new();
                if event.event_type != EventType::Deleted
                    && !pod.spec.resource_claims.is_empty()
                    && pod.spec.node_name.is_some()
                {
                    keys.push(event.key.clone());
                }
                if !pod.spec.resource_claims.is_empty() {
                    keys.extend(Self::active_rules(store));
                }
                keys
            }
            Stored::ResourceClaim(claim) => claim
                .status
                .reserved_for
                .iter()
                .filter(|r| r.resource == "pods")
                .map(|r| {
                    ObjectKey::new(Kind::Pod, claim.metadata.namespace.clone(), r.name.clone())
                })
                .collect(),
            Stored::ResourceSlice(slice) => {
                let id = (slice.spec.driver.clone(), slice.spec.pool.name.clone());
                let tainted = slice.spec.devices.iter().any(|d| {
                    d.taints
                        .iter()
                        .any(|t| t.effect == DeviceTaintEffect::NoExecute)
                });
                let known = self.tainted_pools.borrow().contains(&id);
                if !tainted && !known {
                    return Vec::new();
                }
                self.tainted_pools.borrow_mut().insert(id.clone());
                let mut keys = Self::pods_using_pool(store, &id.0, &id.1);
                keys.extend(Self::active_rules(store));
                keys
            }
            Stored::DeviceTaintRule(rule) => {
                let mut keys = vec![event.key.clone()];
                let uid = rule.metadata.uid.clone();
                let changed = if event.event_type == EventType::Deleted {
                    self.rule_specs.borrow_mut().remove(&uid);
                    true
                } else {
                    let previous = self.rule_specs.borrow_mut().insert(uid, rule.spec.clone());
                    previous.as_ref() != Some(&rule.spec)
                };
                if changed {
                    keys.extend(Self::pods_with_claims(store));
                }
                keys
            }
            Stored::DeviceClass(_) => {
                if store.list::<DeviceTaintRule>().next().is_none() {
                    return Vec::new();
                }
                let mut keys: Vec<ObjectKey> =
                    store.list::<DeviceTaintRule>().map(Store::key_of).collect();
                keys.extend(Self::pods_with_claims(store));
                keys
            }
            _ => Vec::new(),
        }
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        match key.kind {
            Kind::Pod => self.sync_pod(store, key, ctx),
            Kind::DeviceTaintRule => self.sync_rule(store, key, ctx),
            _ => Ok(Action::Done),
        }
    }
}

#[cfg(test)]
mod tests;
