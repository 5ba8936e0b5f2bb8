//! What the workload controllers share (upstream `pkg/controller/controller_utils.go`,
//! `k8s.io/component-helpers` and `apimachinery/pkg/labels`): label selectors, controller
//! references (mapping what a controller owns back to it, releasing and adopting), pods from
//! templates and their creation with its Event, the object a reconcile works on, a pod's
//! state as the controllers count it, and int-or-percent arithmetic.

use std::collections::BTreeMap;

use allot_api::core::v1::ObjectReference;
use allot_api::core::v1::{
    Node, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, Pod, PodSpec,
    PodTemplateSpec, Taint, TaintEffect, Toleration, TolerationOperator,
};
use allot_api::intstr::IntOrString;
use allot_api::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use allot_runtime::SimTime;
use allot_store::{Kind, ObjectKey, Resource, Store, StoreError, Stored};

use crate::events::{self, EventKind, Source};

/// Whether `labels` match a label selector (`matchLabels` and `matchExpressions`; an empty
/// selector matches everything, as `LabelSelectorAsSelector` makes it).
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector.match_expressions.iter().all(|r| {
            let value = labels.get(&r.key);
            match r.operator.as_str() {
                "In" => value.is_some_and(|v| r.values.contains(v)),
                "NotIn" => value.is_none_or(|v| !r.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// Whether a selector selects nothing at all (absent: upstream's `labels.Nothing()`).
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    selector.is_some_and(|s| selector_matches(s, labels))
}

/// The controller reference of an object: its owner reference with `controller: true`.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .find(|o| o.controller == Some(true))
}

/// Whether `meta`'s controller is the object with this uid.
pub fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    controller_of(meta).is_some_and(|o| o.uid == uid)
}

/// The controller reference a controller puts on what it creates or adopts (`controller` and
/// `blockOwnerDeletion` both true, as upstream's `NewControllerRef`).
pub fn controller_ref(kind: Kind, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: kind.api_version().into(),
        kind: kind.name().into(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The key an owner reference names, in the dependent's namespace.
pub fn owner_key(reference: &OwnerReference, namespace: &str) -> Option<ObjectKey> {
    let kind = Kind::ALL.into_iter().find(|k| {
        k.name() == reference.kind && group_of(k.api_version()) == group_of(&reference.api_version)
    })?;
    let namespace = if kind.namespaced() { namespace } else { "" };
    Some(ObjectKey::new(kind, namespace, reference.name.as_str()))
}

/// The API group of an `apiVersion` (`""` for core).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The objects of kind `R` whose controller is the object with uid `owner`, in name order.
pub fn controlled<'a, R: Resource>(store: &'a Store, owner: &str) -> Vec<&'a R> {
    controlled_iter(store, owner).map(|o| &**o).collect()
}

/// [`controlled`], as the store's shared copies: for a caller that changes the store while it
/// still looks at them.
pub fn controlled_shared<R: Resource>(store: &Store, owner: &str) -> Vec<std::sync::Arc<R>> {
    controlled_iter(store, owner).cloned().collect()
}

fn controlled_iter<'a, 'b, R: Resource>(
    store: &'a Store,
    owner: &'b str,
) -> impl Iterator<Item = &'a std::sync::Arc<R>> + use<'a, 'b, R> {
    store
        .dependents(owner)
        .filter(|k| k.kind == R::KIND)
        .filter_map(|k| store.get_shared::<R>(&k.namespace, &k.name))
        .filter(move |o| controlled_by(o.meta(), owner))
}

/// A pod made from a template, as upstream's `GetPodFromTemplate`: the template's labels,
/// annotations, finalizers and spec, `generateName` `<prefix>-` (a pod of a StatefulSet sets
/// its name instead), and the controller reference.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    generate_name: &str,
    controller: OwnerReference,
) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = namespace.to_string();
    pod.metadata.generate_name = generate_name.to_string();
    pod.metadata.labels = template.metadata.labels.clone();
    pod.metadata.annotations = template.metadata.annotations.clone();
    pod.metadata.finalizers = template.metadata.finalizers.clone();
    pod.metadata.owner_references = vec![controller];
    pod.spec = template.spec.clone();
    pod
}

/// kube-apiserver's Priority admission on a pod a controller creates
/// (`allot_validation::priority`, as for every pod create): its priority and preemption
/// policy from its PriorityClass; a refusal is the create's error, in upstream's words.
pub fn admit_priority(store: &Store, mut pod: Pod) -> Result<Pod, String> {
    let classes: Vec<allot_api::scheduling::v1::PriorityClass> = store
        .list::<allot_api::scheduling::v1::PriorityClass>()
        .cloned()
        .collect();
    match allot_validation::priority::admit_pod_priority(&mut pod, &classes) {
        Ok(()) => Ok(pod),
        Err(message) => {
            let name = if pod.metadata.name.is_empty() {
                &pod.metadata.generate_name
            } else {
                &pod.metadata.name
            };
            Err(format!("pods {name:?} is forbidden: {message}"))
        }
    }
}

/// A pod of the workload `owner` (of `kind`) from `template`: in the workload's namespace, with
/// its controller reference, named by `generate_name` (see [`pod_from_template`]).
pub fn owned_pod(
    kind: Kind,
    owner: &ObjectMeta,
    template: &PodTemplateSpec,
    generate_name: &str,
) -> Pod {
    pod_from_template(
        template,
        &owner.namespace,
        generate_name,
        controller_ref(kind, owner),
    )
}

/// Records upstream's `SuccessfulCreate` Event for a pod a workload controller created
/// (`Created pod: <name>`), on the workload `involved`.
pub fn record_pod_created(
    store: &mut Store,
    now: SimTime,
    involved: &ObjectReference,
    source: Source<'_>,
    pod: &Pod,
) -> Result<(), String> {
    events::record(
        store,
        now,
        involved,
        EventKind::Normal,
        "SuccessfulCreate",
        &format!("Created pod: {}", pod.metadata.name),
        source,
    )
}

/// Creates a workload's pod and records its `SuccessfulCreate` Event ([`record_pod_created`]);
/// returns the pod as stored (with its generated name).
pub fn create_pod(
    store: &mut Store,
    now: SimTime,
    involved: &ObjectReference,
    source: Source<'_>,
    pod: Pod,
) -> Result<std::sync::Arc<Pod>, String> {
    let pod = admit_priority(store, pod)?;
    let created = store
        .create_shared(pod, &now.rfc3339())
        .map_err(|e| e.to_string())?;
    record_pod_created(store, now, involved, source, &created)?;
    Ok(created)
}

/// The key of the `kind` object that controls `meta`'s object in `namespace` (its controller
/// reference names that kind at its apiVersion): how a workload controller maps an event of
/// what it owns to itself.
pub fn controller_key(meta: &ObjectMeta, namespace: &str, kind: Kind) -> Option<ObjectKey> {
    let owner = controller_of(meta)?;
    (owner.kind == kind.name() && owner.api_version == kind.api_version())
        .then(|| ObjectKey::new(kind, namespace, owner.name.as_str()))
}

/// The object a reconcile of `key` works on, copied out of the store; `None` (nothing to do)
/// when the key is of another kind or the object is gone.
pub fn reconciled<R: Resource>(store: &Store, key: &ObjectKey) -> Option<R> {
    reconciled_shared(store, key).map(std::sync::Arc::unwrap_or_clone)
}

/// [`reconciled`], as the store's shared copy: for a reconcile that copies the object only
/// to write it.
pub fn reconciled_shared<R: Resource>(store: &Store, key: &ObjectKey) -> Option<std::sync::Arc<R>> {
    if key.kind != R::KIND {
        return None;
    }
    store.get_shared::<R>(&key.namespace, &key.name).cloned()
}

/// Releases the objects of kind `R` that `owner` controls but `selector` no longer matches:
/// removes `owner`'s reference from them (the release half of upstream's `ClaimObject`).
pub fn release_unmatched<R: Resource>(
    store: &mut Store,
    owner: &ObjectMeta,
    selector: &LabelSelector,
) -> Result<(), String> {
    let released: Vec<String> = controlled::<R>(store, &owner.uid)
        .into_iter()
        .filter(|o| !selector_matches(selector, &o.meta().labels))
        .map(|o| o.meta().name.clone())
        .collect();
    for name in released {
        let uid = owner.uid.clone();
        store
            .modify::<R, _>(&owner.namespace, &name, |o| {
                o.meta_mut().owner_references.retain(|r| r.uid != uid);
            })
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Adopts the orphan `name` of kind `R`: gives it the controller reference of `owner` (of
/// `kind`), the adopt half of upstream's `ClaimObject`.
pub fn adopt<R: Resource>(
    store: &mut Store,
    kind: Kind,
    owner: &ObjectMeta,
    name: &str,
) -> Result<(), String> {
    let reference = controller_ref(kind, owner);
    store
        .modify::<R, _>(&owner.namespace, name, |o| {
            o.meta_mut().owner_references.push(reference);
        })
        .map_err(|e| e.to_string())
}

/// `<name>-`, cut so that five generated characters still fit in 63 (upstream's
/// `getPodsPrefix` and `names.SimpleNameGenerator`).
pub fn pods_prefix(name: &str) -> String {
    const MAX: usize = 63 - 5;
    let mut prefix = format!("{name}-");
    if prefix.len() > MAX {
        let mut end = MAX;
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        prefix.truncate(end);
    }
    prefix
}

/// Whether a pod finished: phase `Succeeded` or `Failed`.
pub fn is_terminated(pod: &Pod) -> bool {
    matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"))
}

/// Upstream's `IsPodActive`: not finished and not being deleted.
pub fn is_active(pod: &Pod) -> bool {
    !is_terminated(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// Whether a pod is being deleted but has not finished (`IsPodTerminating`).
pub fn is_terminating(pod: &Pod) -> bool {
    !is_terminated(pod) && pod.metadata.deletion_timestamp.is_some()
}

/// The pod's `Ready` condition, when True: since when.
pub fn ready_since(pod: &Pod) -> Option<SimTime> {
    let c = pod
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?;
    Some(
        c.last_transition_time
            .as_deref()
            .and_then(SimTime::parse_rfc3339)
            .unwrap_or(SimTime::ZERO),
    )
}

/// Whether the pod's `Ready` condition is True (`IsPodReady`).
pub fn is_ready(pod: &Pod) -> bool {
    ready_since(pod).is_some()
}

/// Upstream's `IsPodAvailable`: ready, for at least `min_ready_seconds` at `now`.
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: SimTime) -> bool {
    match ready_since(pod) {
        None => false,
        Some(_) if min_ready_seconds <= 0 => true,
        Some(since) => since.plus_seconds(min_ready_seconds as u64) <= now,
    }
}

/// When a ready pod that is not available yet becomes available, for a requeue.
pub fn available_at(pod: &Pod, min_ready_seconds: i32, now: SimTime) -> Option<SimTime> {
    let since = ready_since(pod)?;
    let at = since.plus_seconds(min_ready_seconds.max(0) as u64);
    (at > now).then_some(at)
}

/// The earliest of two optional times.
pub fn earliest(a: Option<SimTime>, b: Option<SimTime>) -> Option<SimTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A requeue at `at` (or none).
pub fn requeue_at(at: Option<SimTime>, now: SimTime) -> allot_runtime::Action {
    match at {
        Some(t) if t > now => allot_runtime::Action::RequeueAfterMillis(t.0 - now.0),
        Some(_) => allot_runtime::Action::RequeueAfterMillis(1),
        None => allot_runtime::Action::Done,
    }
}

/// An int-or-percent scaled against `total` (`intstr.GetScaledValueFromIntOrPercent`),
/// rounding percentages up or down. A malformed percentage counts as 0.
pub fn scaled_value(value: Option<&IntOrString>, total: i32, round_up: bool) -> i32 {
    match value {
        None => 0,
        Some(IntOrString::Int(n)) => *n,
        Some(IntOrString::String(s)) => {
            let Some(number) = s.strip_suffix('%').and_then(|n| n.parse::<i64>().ok()) else {
                return s.parse::<i32>().unwrap_or(0);
            };
            let product = number * i64::from(total);
            let value = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            value.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
        }
    }
}

/// Deletes an object as the API server does for a controller: with finalizers it only gets a
/// `deletionTimestamp` (and stays until they are removed), else it goes. `NotFound` is success.
pub fn delete_object(store: &mut Store, key: &ObjectKey, now: SimTime) -> Result<(), String> {
    let Some(current) = store.get_stored(key).cloned() else {
        return Ok(());
    };
    if current.meta().finalizers.is_empty() {
        return match store.delete(key) {
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        };
    }
    if current.meta().deletion_timestamp.is_some() {
        return Ok(());
    }
    let mut marked = current;
    marked.meta_mut().deletion_timestamp = Some(now.rfc3339());
    marked.meta_mut().resource_version.clear();
    store
        .update_stored(marked)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Removes a finalizer from an object; an object being deleted that has no finalizer left
/// goes, as the API server makes it go after such an update.
pub fn remove_finalizer(store: &mut Store, key: &ObjectKey, finalizer: &str) -> Result<(), String> {
    let Some(current) = store.get_stored(key).cloned() else {
        return Ok(());
    };
    if !current.meta().finalizers.iter().any(|f| f == finalizer) {
        return Ok(());
    }
    let mut changed = current;
    changed.meta_mut().finalizers.retain(|f| f != finalizer);
    changed.meta_mut().resource_version.clear();
    let gone = changed.meta().finalizers.is_empty() && changed.meta().deletion_timestamp.is_some();
    let stored: Stored = store.update_stored(changed).map_err(|e| e.to_string())?;
    if gone {
        match store.delete(&crate::workload::key_of(&stored)) {
            Ok(_) | Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// The key of a stored object.
pub fn key_of(object: &Stored) -> ObjectKey {
    let kind = object.kind();
    let namespace = if kind.namespaced() {
        object.meta().namespace.clone()
    } else {
        String::new()
    };
    ObjectKey::new(kind, namespace, object.meta().name.clone())
}

/// FNV-1a over a JSON rendering, encoded as upstream's `rand.SafeEncodeString` of the decimal
/// 32-bit hash: the `pod-template-hash` and `controller-revision-hash` shape (upstream hashes
/// the Go struct; names differ from a real cluster's but are stable across runs).
pub fn template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let text = serde_json::to_string(template).unwrap_or_default();
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    if let Some(count) = collision_count {
        for byte in count.to_le_bytes() {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    safe_encode(&hash.to_string())
}

/// Upstream's `rand.SafeEncodeString`: each byte mapped into consonants and digits without
/// look-alikes, so no bad words come out.
pub fn safe_encode(text: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    text.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// Whether a node selector matches a node: any term matches (an empty term matches nothing);
/// `matchFields` know `metadata.name`.
pub fn node_selector_matches(node: &Node, selector: &NodeSelector) -> bool {
    selector.node_selector_terms.iter().any(|term| {
        (!term.match_expressions.is_empty() || !term.match_fields.is_empty())
            && term.match_expressions.iter().all(|r| {
                requirement_matches(r, node.metadata.labels.get(&r.key).map(String::as_str))
            })
            && term.match_fields.iter().all(|r| {
                r.key == "metadata.name" && requirement_matches(r, Some(&node.metadata.name))
            })
    })
}

fn requirement_matches(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = &requirement.values;
    match &requirement.operator {
        NodeSelectorOperator::In => value.is_some_and(|v| values.iter().any(|x| x == v)),
        NodeSelectorOperator::NotIn => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        NodeSelectorOperator::Exists => value.is_some(),
        NodeSelectorOperator::DoesNotExist => value.is_none(),
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let (Some(bound), Some(v)) = (
                values.first().and_then(|b| b.parse::<i64>().ok()),
                value.and_then(|v| v.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if requirement.operator == NodeSelectorOperator::Gt {
                v > bound
            } else {
                v < bound
            }
        }
        NodeSelectorOperator::Other(_) => false,
    }
}

/// Whether a toleration tolerates a taint (upstream's `ToleratesTaint`).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
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
    let operator = toleration
        .operator
        .clone()
        .unwrap_or(TolerationOperator::Equal);
    match operator {
        TolerationOperator::Exists => true,
        TolerationOperator::Equal => toleration.value == taint.value,
        TolerationOperator::Lt | TolerationOperator::Gt => {
            let (Ok(tv), Ok(nv)) = (toleration.value.parse::<i64>(), taint.value.parse::<i64>())
            else {
                return false;
            };
            if operator == TolerationOperator::Lt {
                nv < tv
            } else {
                nv > tv
            }
        }
        TolerationOperator::Other(_) => false,
    }
}

/// Whether a pod spec's node selector and required node affinity let it run on the node
/// (upstream's `nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`).
pub fn fits_node_affinity(spec: &PodSpec, node: &Node) -> bool {
    let labels_ok = spec
        .node_selector
        .iter()
        .all(|(k, v)| node.metadata.labels.get(k) == Some(v));
    let affinity_ok = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_none_or(|selector| node_selector_matches(node, selector));
    labels_ok && affinity_ok
}

/// The first taint of the node with one of the effects that no toleration tolerates.
pub fn untolerated_taint<'a>(
    tolerations: &[Toleration],
    node: &'a Node,
    effects: &[TaintEffect],
) -> Option<&'a Taint> {
    node.spec
        .taints
        .iter()
        .filter(|t| effects.contains(&t.effect))
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_match_as_upstream_labels_do() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        let mut s = LabelSelector::default();
        assert!(selector_matches(&s, &l), "empty selects everything");
        assert!(!selects(None, &l), "absent selects nothing");
        s.match_labels = labels(&[("app", "web")]);
        assert!(selector_matches(&s, &l));
        let req = |key: &str, op: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        for (r, want) in [
            (req("tier", "In", &["front", "back"]), true),
            (req("tier", "NotIn", &["front"]), false),
            (req("zone", "NotIn", &["a"]), true),
            (req("zone", "Exists", &[]), false),
            (req("zone", "DoesNotExist", &[]), true),
        ] {
            let mut s = s.clone();
            s.match_expressions = vec![r.clone()];
            assert_eq!(selector_matches(&s, &l), want, "{r:?}");
        }
    }

    #[test]
    fn percentages_scale_as_intstr_does() {
        let pct = |s: &str| Some(IntOrString::String(s.into()));
        assert_eq!(scaled_value(pct("25%").as_ref(), 10, true), 3);
        assert_eq!(scaled_value(pct("25%").as_ref(), 10, false), 2);
        assert_eq!(scaled_value(Some(&IntOrString::Int(4)), 10, false), 4);
        assert_eq!(scaled_value(pct("0%").as_ref(), 10, true), 0);
        assert_eq!(scaled_value(None, 10, true), 0);
    }

    #[test]
    fn prefixes_leave_room_for_five_characters() {
        assert_eq!(pods_prefix("web"), "web-");
        assert_eq!(pods_prefix(&"x".repeat(70)).len(), 58);
    }

    #[test]
    fn template_hashes_are_stable_and_safe() {
        let t = PodTemplateSpec::default();
        let a = template_hash(&t, None);
        assert_eq!(a, template_hash(&t, None));
        assert_ne!(a, template_hash(&t, Some(1)));
        assert!(
            a.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }
}
