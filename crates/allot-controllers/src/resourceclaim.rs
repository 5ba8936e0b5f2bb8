//! The ResourceClaim controller (upstream pkg/controller/resourceclaim).
//!
//! What it does, per work item:
//! - **Pod**: creates a ResourceClaim from each `resourceClaimTemplateName` of the pod (one per
//!   pod claim, owned by the pod), or resolves it to the claim generated for the pod's PodGroup
//!   when the claim matches one of the group's claims (DRAWorkloadResourceClaims); records the
//!   names in `status.resourceClaimStatuses`; and, for a pod already bound to a node (created
//!   with `spec.nodeName`), reserves claims that are allocated but not reserved for it.
//! - **PodGroup**: creates one claim per `resourceClaimTemplateName` of the group, owned by the
//!   group, and records it in the group's `status.resourceClaimStatuses`.
//! - **ResourceClaim**: drops `reservedFor` entries whose consumer is gone or finished,
//!   deallocates a claim nothing reserves, and deletes a generated claim whose owner is gone or
//!   finished once it is no longer reserved (template claims, PodGroup claims, and the claim the
//!   scheduler creates for a pod's extended resources, found through the pod's
//!   `status.extendedResourceClaimStatus`).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use allot_api::core::v1::{Pod, PodResourceClaim, PodResourceClaimStatus};
use allot_api::meta::v1::{ObjectMeta, OwnerReference};
use allot_api::resource::v1::{
    ResourceClaim, ResourceClaimConsumerReference, ResourceClaimTemplate,
};
use allot_api::scheduling::v1beta1::{PodGroup, PodGroupResourceClaimStatus};
use allot_runtime::{Action, Context, Controller};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

/// The annotation naming the pod claim a generated claim was made for.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";
/// The annotation naming the PodGroup claim a generated claim was made for.
pub const POD_GROUP_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/podgroup-claim-name";
/// The most consumers one claim can be reserved for.
pub const RESERVED_FOR_MAX_SIZE: usize = 256;
/// Leaves room for five random characters in a 63-character name.
const MAX_GENERATE_NAME_BASE: usize = 57;

/// Settings of the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceClaimControllerConfig {
    /// The DRAWorkloadResourceClaims feature gate: claims for PodGroups.
    pub workload_resource_claims: bool,
}

/// The ResourceClaim controller.
///
/// Like upstream's `enqueuePod`/`podNeedsWork`, an event wakes an item only when its reconcile
/// would change something ([`ResourceClaimController::pod_needs_work`],
/// [`ResourceClaimController::claim_needs_work`]), judged on the store as it is when the event
/// is dispatched: echoes of the controller's own writes, status updates of other loops and pods
/// whose claims are settled wake nothing. A later change that matters is an event of its own.
#[derive(Debug, Default)]
pub struct ResourceClaimController {
    config: ResourceClaimControllerConfig,
    /// Owner uid -> (namespace, claim name in the owner, generated claim name): looked up by a
    /// borrowed uid, without building a key.
    generated: HashMap<String, Vec<(String, String, String)>>,
    /// Synced from the event log by `keys_for` (which only borrows the controller) as well as by
    /// `reconcile`.
    owners: RefCell<OwnerIndex>,
}

/// Claims by (namespace, controller owner uid), kept from the store's event log, so that
/// finding the claim generated for an owner does not scan every claim of the namespace
/// (upstream's controller indexes claims by owner for the same reason). Keyed by namespace
/// first so that lookups borrow their keys; a claim event that leaves the claim's controller
/// owners as they were costs two lookups.
#[derive(Debug, Default)]
struct OwnerIndex {
    seen_rv: u64,
    /// namespace -> owner uid -> claim names.
    by_owner: HashMap<String, HashMap<String, BTreeSet<String>>>,
    /// namespace -> claim name -> its controller owners' uids.
    owners_of: HashMap<String, HashMap<String, Vec<String>>>,
}

impl OwnerIndex {
    fn sync(&mut self, store: &Store) {
        if store.resource_version() <= self.seen_rv {
            return;
        }
        let events = store.events_since(self.seen_rv);
        let Some(last) = events.last() else { return };
        self.seen_rv = last.resource_version;
        for event in events {
            let Stored::ResourceClaim(claim) = &event.object else {
                continue;
            };
            let (namespace, name) = (event.key.namespace.as_str(), event.key.name.as_str());
            let deleted = event.event_type == EventType::Deleted;
            let uids = || {
                claim
                    .metadata
                    .owner_references
                    .iter()
                    .filter(|o| o.controller == Some(true))
                    .map(|o| o.uid.as_str())
            };
            let before = self.owners_of.get(namespace).and_then(|m| m.get(name));
            let unchanged = match before {
                Some(old) => !deleted && old.iter().map(String::as_str).eq(uids()),
                None => deleted || uids().next().is_none(),
            };
            if unchanged {
                continue;
            }
            let old = self
                .owners_of
                .get_mut(namespace)
                .and_then(|m| m.remove(name))
                .unwrap_or_default();
            if let Some(owners) = self.by_owner.get_mut(namespace) {
                for uid in &old {
                    if let Some(names) = owners.get_mut(uid) {
                        names.remove(name);
                        if names.is_empty() {
                            owners.remove(uid);
                        }
                    }
                }
            }
            if deleted {
                continue;
            }
            let uids: Vec<String> = uids().map(str::to_string).collect();
            if uids.is_empty() {
                continue;
            }
            let owners = self.by_owner.entry(namespace.to_string()).or_default();
            for uid in &uids {
                owners
                    .entry(uid.clone())
                    .or_default()
                    .insert(name.to_string());
            }
            self.owners_of
                .entry(namespace.to_string())
                .or_default()
                .insert(name.to_string(), uids);
        }
    }

    /// Names of the claims in `namespace` with a controller owner of this uid, in name order.
    fn owned(&self, namespace: &str, uid: &str) -> impl Iterator<Item = &String> {
        self.by_owner
            .get(namespace)
            .and_then(|owners| owners.get(uid))
            .into_iter()
            .flatten()
    }
}

impl ResourceClaimController {
    /// A controller with the given settings.
    pub fn new(config: ResourceClaimControllerConfig) -> Self {
        ResourceClaimController {
            config,
            generated: HashMap::new(),
            owners: RefCell::new(OwnerIndex::default()),
        }
    }

    /// Remembers the claim generated for an owner's claim.
    fn remember_generated(&mut self, namespace: &str, uid: &str, claim_name: &str, name: &str) {
        let entries = self.generated.entry(uid.to_string()).or_default();
        match entries
            .iter_mut()
            .find(|(ns, claim, _)| ns == namespace && claim == claim_name)
        {
            Some(entry) => {
                if entry.2 != name {
                    entry.2 = name.to_string();
                }
            }
            None => entries.push((namespace.into(), claim_name.into(), name.into())),
        }
    }

    /// The existing claim generated for an owner's claim `claim_name`: the one remembered when
    /// it still exists, else one found through the owner index (which must be synced). `None`
    /// means a reconcile would generate one from the template.
    fn existing_generated_claim(
        &self,
        store: &Store,
        owner_meta: &ObjectMeta,
        annotation: &str,
        claim_name: &str,
    ) -> Option<String> {
        let namespace = owner_meta.namespace.as_str();
        let remembered = self.generated.get(&owner_meta.uid).and_then(|entries| {
            entries
                .iter()
                .find(|(ns, claim, _)| ns == namespace && claim == claim_name)
        });
        if let Some((_, _, name)) = remembered
            && store.get::<ResourceClaim>(namespace, name).is_some()
        {
            return Some(name.clone());
        }
        // A claim generated earlier (for example, given in the input) is found by its owner.
        let owners = self.owners.borrow();
        owners
            .owned(namespace, &owner_meta.uid)
            .filter_map(|name| store.get::<ResourceClaim>(namespace, name))
            .find(|c| {
                c.metadata.annotations.get(annotation).map(String::as_str) == Some(claim_name)
                    && c.metadata
                        .owner_references
                        .iter()
                        .any(|o| o.uid == owner_meta.uid && o.controller == Some(true))
            })
            .map(|c| c.metadata.name.clone())
    }

    /// The claim names `sync_pod` would record for a pod's template claims, or `None` when it
    /// would create a claim. Writes nothing (it only brings the owner index up to date).
    fn resolved_pod_claims(&self, store: &Store, pod: &Pod) -> Option<Vec<PodResourceClaimStatus>> {
        if pod
            .spec
            .resource_claims
            .iter()
            .any(|c| c.resource_claim_template_name.is_some())
        {
            self.owners.borrow_mut().sync(store);
        }
        let mut statuses = Vec::new();
        for claim in &pod.spec.resource_claims {
            let Some(template) = &claim.resource_claim_template_name else {
                continue;
            };
            let resolved = if let Some(group) = matching_group_claim(store, pod, claim) {
                if !self.config.workload_resource_claims {
                    None
                } else {
                    group
                        .status
                        .resource_claim_statuses
                        .iter()
                        .find(|s| s.name == claim.name)
                        .and_then(|s| s.resource_claim_name.clone())
                }
            } else {
                match self.existing_generated_claim(
                    store,
                    &pod.metadata,
                    POD_CLAIM_NAME_ANNOTATION,
                    &claim.name,
                ) {
                    Some(name) => Some(name),
                    // A reconcile would create it; without the template it waits.
                    None if store
                        .get::<ResourceClaimTemplate>(&pod.metadata.namespace, template)
                        .is_some() =>
                    {
                        return None;
                    }
                    None => None,
                }
            };
            if let Some(name) = resolved {
                statuses.push(PodResourceClaimStatus {
                    name: claim.name.clone(),
                    resource_claim_name: Some(name),
                });
            }
        }
        Some(statuses)
    }

    /// Whether reconciling the pod would write anything (upstream's `podNeedsWork`, exactly
    /// for this controller's `sync_pod`): a claim to generate, `resourceClaimStatuses` to
    /// update, or, for a pod bound without the scheduler, an allocated claim to reserve.
    pub fn pod_needs_work(&self, store: &Store, pod: &Pod) -> bool {
        if pod_is_done(pod) {
            return false;
        }
        if pod.spec.resource_claims.is_empty() && pod.status.resource_claim_statuses.is_empty() {
            return false;
        }
        match self.resolved_pod_claims(store, pod) {
            None => return true,
            Some(statuses) if statuses != pod.status.resource_claim_statuses => return true,
            Some(_) => {}
        }
        pod.spec.node_name.is_some() && !claims_to_reserve(store, pod).is_empty()
    }

    /// Whether reconciling the claim would write anything: a `reservedFor` entry to drop, an
    /// allocation to undo, the delete-protection finalizer to remove, or the claim to delete
    /// because its owner is gone.
    pub fn claim_needs_work(store: &Store, claim: &ResourceClaim) -> bool {
        let namespace = &claim.metadata.namespace;
        let live = claim
            .status
            .reserved_for
            .iter()
            .filter(|r| Self::consumer_is_live(store, namespace, r))
            .count();
        if live != claim.status.reserved_for.len() {
            return true;
        }
        if live > 0 {
            return false;
        }
        let deleting = claim.metadata.deletion_timestamp.is_some();
        let protected = claim
            .metadata
            .finalizers
            .iter()
            .any(|f| f == allot_api::resource::v1::FINALIZER);
        (deleting && (claim.status.allocation.is_some() || protected))
            || Self::owner_is_gone(store, claim)
    }
}

/// The claims of a bound pod that `reserve_for_bound_pod` would reserve for it, by name:
/// allocated, not reserved for the pod or its PodGroup, and with room in `reservedFor`.
fn claims_to_reserve(store: &Store, pod: &Pod) -> Vec<String> {
    let namespace = &pod.metadata.namespace;
    let mut out = Vec::new();
    for (pod_claim, claim_name) in pod_claim_names(store, pod) {
        let Some(claim_name) = claim_name else {
            continue;
        };
        let Some(claim) = store.get::<ResourceClaim>(namespace, &claim_name) else {
            continue;
        };
        if !needs_reservation(store, pod, &pod_claim, claim) {
            continue;
        }
        out.push(claim_name);
    }
    out
}

/// Whether `reserve_for_bound_pod` reserves `claim` (the pod's claim entry `pod_claim`) for the
/// pod: allocated, not yet reserved for the pod or its PodGroup, with room in `reservedFor`.
fn needs_reservation(store: &Store, pod: &Pod, pod_claim: &str, claim: &ResourceClaim) -> bool {
    let reserved = |uid: &str| claim.status.reserved_for.iter().any(|r| r.uid == uid);
    let group_reserved = pod
        .spec
        .resource_claims
        .iter()
        .find(|c| c.name == pod_claim)
        .and_then(|c| matching_group_claim(store, pod, c))
        .is_some_and(|g| reserved(&g.metadata.uid));
    claim.status.allocation.is_some()
        && !group_reserved
        && !reserved(&pod.metadata.uid)
        && claim.status.reserved_for.len() < RESERVED_FOR_MAX_SIZE
}

/// The claim named in `status.extendedResourceClaimStatus` (DRAExtendedResource): created by
/// the scheduler, owned by the pod, and like a generated claim released and deleted once the
/// pod is gone or done.
pub fn extended_resource_claim_name(pod: &Pod) -> Option<String> {
    pod.status
        .extended_resource_claim_status
        .as_ref()
        .and_then(|s| s.get("resourceClaimName"))
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// Whether a pod has finished and no longer needs its claims (upstream `isPodDone`): its
/// phase is terminal, or it is being deleted and was never scheduled. A scheduled pod in its
/// grace period still holds its devices until it is gone.
pub fn pod_is_done(pod: &Pod) -> bool {
    matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"))
        || (pod.metadata.deletion_timestamp.is_some()
            && pod.spec.node_name.as_deref().is_none_or(str::is_empty))
}

/// The consumer reference for a pod in `reservedFor`.
pub fn pod_reference(pod: &Pod) -> ResourceClaimConsumerReference {
    ResourceClaimConsumerReference {
        api_group: String::new(),
        resource: "pods".into(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
    }
}

/// The consumer reference for a PodGroup in `reservedFor`.
pub fn pod_group_reference(group: &PodGroup) -> ResourceClaimConsumerReference {
    ResourceClaimConsumerReference {
        api_group: "scheduling.k8s.io".into(),
        resource: "podgroups".into(),
        name: group.metadata.name.clone(),
        uid: group.metadata.uid.clone(),
    }
}

/// `<owner>-<claim>-`, truncating both parts in proportion when too long, as upstream does (the
/// truncated form has no trailing hyphen, also as upstream).
pub fn generate_name(owner: &str, claim: &str) -> String {
    let base = format!("{owner}-{claim}-");
    if base.len() <= MAX_GENERATE_NAME_BASE {
        return base;
    }
    let cut = |s: &str| {
        let mut end = s.len() * MAX_GENERATE_NAME_BASE / base.len();
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].to_string()
    };
    format!("{}-{}", cut(owner), cut(claim))
}

/// The PodGroup claim a pod claim matches: same name, same claim name, same template name.
fn matching_group_claim<'a>(
    store: &'a Store,
    pod: &Pod,
    claim: &PodResourceClaim,
) -> Option<&'a PodGroup> {
    let group_name = &pod.spec.scheduling_group.as_ref()?.pod_group_name;
    let group = store.get::<PodGroup>(&pod.metadata.namespace, group_name)?;
    group
        .spec
        .resource_claims
        .iter()
        .any(|g| {
            g.name == claim.name
                && g.resource_claim_name == claim.resource_claim_name
                && g.resource_claim_template_name == claim.resource_claim_template_name
        })
        .then_some(group)
}

/// The names of the claims a pod uses, resolved as far as the store allows (a template claim
/// not generated yet is `None`).
pub fn pod_claim_names(store: &Store, pod: &Pod) -> Vec<(String, Option<String>)> {
    pod.spec
        .resource_claims
        .iter()
        .map(|c| {
            if let Some(name) = &c.resource_claim_name {
                return (c.name.clone(), Some(name.clone()));
            }
            let from_status = pod
                .status
                .resource_claim_statuses
                .iter()
                .find(|s| s.name == c.name)
                .and_then(|s| s.resource_claim_name.clone());
            let from_group = || {
                let group = matching_group_claim(store, pod, c)?;
                group
                    .status
                    .resource_claim_statuses
                    .iter()
                    .find(|s| s.name == c.name)
                    .and_then(|s| s.resource_claim_name.clone())
            };
            (c.name.clone(), from_status.or_else(from_group))
        })
        .collect()
}

fn owner_reference(kind: &str, api_version: &str, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

impl ResourceClaimController {
    /// Finds or creates the claim generated from `template` for an owner's claim `claim_name`.
    #[allow(clippy::too_many_arguments)]
    fn ensure_generated_claim(
        &mut self,
        store: &mut Store,
        ctx: &Context,
        owner_meta: &ObjectMeta,
        owner: OwnerReference,
        annotation: &str,
        claim_name: &str,
        template_name: &str,
    ) -> Result<Option<String>, String> {
        let namespace = owner_meta.namespace.clone();
        self.owners.get_mut().sync(store);
        if let Some(name) = self.existing_generated_claim(store, owner_meta, annotation, claim_name)
        {
            self.remember_generated(&namespace, &owner_meta.uid, claim_name, &name);
            return Ok(Some(name));
        }
        let Some(template) = store.get::<ResourceClaimTemplate>(&namespace, template_name) else {
            // The template may appear later; its creation wakes the owner again.
            return Ok(None);
        };
        let mut claim = ResourceClaim::default();
        claim.metadata.namespace = namespace.clone();
        claim.metadata.generate_name = generate_name(&owner_meta.name, claim_name);
        claim.metadata.labels = template.spec.metadata.labels.clone();
        claim.metadata.annotations = template.spec.metadata.annotations.clone();
        claim
            .metadata
            .annotations
            .insert(annotation.to_string(), claim_name.to_string());
        claim.metadata.owner_references = vec![owner];
        claim.spec = template.spec.spec.clone();
        let created = store
            .create_shared(claim, &ctx.now.rfc3339())
            .map_err(|e| e.to_string())?;
        let name = created.metadata.name.clone();
        self.remember_generated(&namespace, &owner_meta.uid, claim_name, &name);
        Ok(Some(name))
    }

    fn sync_pod(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(pod) = store.get_shared::<Pod>(&key.namespace, &key.name).cloned() else {
            return Ok(Action::Done);
        };
        if pod_is_done(&pod) {
            return Ok(Action::Done);
        }
        let mut statuses: Vec<PodResourceClaimStatus> = Vec::new();
        for claim in &pod.spec.resource_claims {
            let Some(template) = &claim.resource_claim_template_name else {
                continue;
            };
            let resolved = if let Some(group) = matching_group_claim(store, &pod, claim) {
                if !self.config.workload_resource_claims {
                    // Upstream creates nothing here while the feature is off.
                    None
                } else {
                    group
                        .status
                        .resource_claim_statuses
                        .iter()
                        .find(|s| s.name == claim.name)
                        .and_then(|s| s.resource_claim_name.clone())
                }
            } else {
                self.ensure_generated_claim(
                    store,
                    ctx,
                    &pod.metadata,
                    owner_reference("Pod", "v1", &pod.metadata),
                    POD_CLAIM_NAME_ANNOTATION,
                    &claim.name,
                    template,
                )?
            };
            if let Some(name) = resolved {
                statuses.push(PodResourceClaimStatus {
                    name: claim.name.clone(),
                    resource_claim_name: Some(name),
                });
            }
        }
        if statuses != pod.status.resource_claim_statuses {
            store
                .modify::<Pod, _>(&key.namespace, &key.name, |p| {
                    p.status.resource_claim_statuses = statuses.clone();
                })
                .map_err(|e| e.to_string())?;
        }
        if pod.spec.node_name.is_some() {
            self.reserve_for_bound_pod(store, &key.namespace, &key.name)?;
        }
        Ok(Action::Done)
    }

    /// A pod bound without the scheduler: reserve its allocated claims for it (spec,
    /// "Pre-scheduled Pods"). Claims that are not allocated stay so: only the scheduler allocates.
    fn reserve_for_bound_pod(
        &mut self,
        store: &mut Store,
        namespace: &str,
        name: &str,
    ) -> Result<(), String> {
        let Some(pod) = store.get_shared::<Pod>(namespace, name).cloned() else {
            return Ok(());
        };
        let reference = pod_reference(&pod);
        for (pod_claim, claim_name) in pod_claim_names(store, &pod) {
            let Some(claim_name) = claim_name else {
                continue;
            };
            let Some(claim) = store.get::<ResourceClaim>(namespace, &claim_name) else {
                continue;
            };
            if !needs_reservation(store, &pod, &pod_claim, claim) {
                continue;
            }
            store
                .modify::<ResourceClaim, _>(namespace, &claim_name, |c| {
                    c.status.reserved_for.push(reference.clone());
                })
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn sync_pod_group(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        if !self.config.workload_resource_claims {
            return Ok(Action::Done);
        }
        let Some(group) = store.get::<PodGroup>(&key.namespace, &key.name).cloned() else {
            return Ok(Action::Done);
        };
        if group.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let mut statuses = Vec::new();
        for claim in &group.spec.resource_claims {
            let Some(template) = &claim.resource_claim_template_name else {
                continue;
            };
            let resolved = self.ensure_generated_claim(
                store,
                ctx,
                &group.metadata,
                owner_reference("PodGroup", "scheduling.k8s.io/v1beta1", &group.metadata),
                POD_GROUP_CLAIM_NAME_ANNOTATION,
                &claim.name,
                template,
            )?;
            if let Some(name) = resolved {
                statuses.push(PodGroupResourceClaimStatus {
                    name: claim.name.clone(),
                    resource_claim_name: Some(name),
                });
            }
        }
        if statuses != group.status.resource_claim_statuses {
            store
                .modify::<PodGroup, _>(&key.namespace, &key.name, |g| {
                    g.status.resource_claim_statuses = statuses.clone();
                })
                .map_err(|e| e.to_string())?;
        }
        Ok(Action::Done)
    }

    /// Whether a `reservedFor` entry still names a live consumer.
    fn consumer_is_live(
        store: &Store,
        namespace: &str,
        r: &ResourceClaimConsumerReference,
    ) -> bool {
        match (r.api_group.as_str(), r.resource.as_str()) {
            ("", "pods") => store
                .get::<Pod>(namespace, &r.name)
                .is_some_and(|p| p.metadata.uid == r.uid && !pod_is_done(p)),
            ("scheduling.k8s.io", "podgroups") => {
                store.get::<PodGroup>(namespace, &r.name).is_some_and(|g| {
                    g.metadata.uid == r.uid && g.metadata.deletion_timestamp.is_none()
                })
            }
            // Consumers of other kinds are not ours to judge.
            _ => true,
        }
    }

    /// Whether the claim's controlling owner is gone or finished.
    fn owner_is_gone(store: &Store, claim: &ResourceClaim) -> bool {
        let Some(owner) = claim
            .metadata
            .owner_references
            .iter()
            .find(|o| o.controller == Some(true))
        else {
            return false;
        };
        let namespace = &claim.metadata.namespace;
        match owner.kind.as_str() {
            "Pod" => store
                .get::<Pod>(namespace, &owner.name)
                .is_none_or(|p| p.metadata.uid != owner.uid || pod_is_done(p)),
            "PodGroup" => store
                .get::<PodGroup>(namespace, &owner.name)
                .is_none_or(|g| {
                    g.metadata.uid != owner.uid || g.metadata.deletion_timestamp.is_some()
                }),
            _ => false,
        }
    }

    fn sync_claim(&mut self, store: &mut Store, key: &ObjectKey) -> Result<Action, String> {
        let Some(claim) = store
            .get::<ResourceClaim>(&key.namespace, &key.name)
            .cloned()
        else {
            return Ok(Action::Done);
        };
        if let Some(owner) = claim
            .metadata
            .owner_references
            .iter()
            .find(|o| o.controller == Some(true))
        {
            let annotation = match owner.kind.as_str() {
                "Pod" => POD_CLAIM_NAME_ANNOTATION,
                _ => POD_GROUP_CLAIM_NAME_ANNOTATION,
            };
            if let Some(claim_name) = claim.metadata.annotations.get(annotation) {
                self.remember_generated(&key.namespace, &owner.uid, claim_name, &key.name);
            }
        }
        let live: Vec<ResourceClaimConsumerReference> = claim
            .status
            .reserved_for
            .iter()
            .filter(|r| Self::consumer_is_live(store, &key.namespace, r))
            .cloned()
            .collect();
        // As upstream, only the transition from used to unused deallocates: an allocated claim
        // that nobody reserved yet (a pre-scheduled pod's claim) keeps its allocation. A claim
        // being deleted that nobody uses is deallocated too, and loses the delete-protection
        // finalizer, so that the deletion completes.
        let deleting = claim.metadata.deletion_timestamp.is_some();
        let deallocate = live.is_empty()
            && (!claim.status.reserved_for.is_empty() || deleting)
            && claim.status.allocation.is_some();
        let release = deleting
            && live.is_empty()
            && claim
                .metadata
                .finalizers
                .iter()
                .any(|f| f == allot_api::resource::v1::FINALIZER);
        if live != claim.status.reserved_for || deallocate || release {
            store
                .modify::<ResourceClaim, _>(&key.namespace, &key.name, |c| {
                    c.status.reserved_for = live.clone();
                    if deallocate {
                        c.status.allocation = None;
                        c.status.devices.clear();
                    }
                    if release {
                        c.metadata
                            .finalizers
                            .retain(|f| f != allot_api::resource::v1::FINALIZER);
                    }
                })
                .map_err(|e| e.to_string())?;
        }
        if live.is_empty() && Self::owner_is_gone(store, &claim) {
            store
                .delete(&ObjectKey::new(
                    Kind::ResourceClaim,
                    &key.namespace,
                    &key.name,
                ))
                .map_err(|e| e.to_string())?;
        }
        Ok(Action::Done)
    }
}

impl Controller for ResourceClaimController {
    fn name(&self) -> &'static str {
        "resourceclaim-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        let ns = &event.key.namespace;
        let claim_key = |name: &str| ObjectKey::new(Kind::ResourceClaim, ns.as_str(), name);
        // Judged on the store as it is now, not on the event's copy: a claim or pod that needs
        // no work now is woken again by the change that gives it some.
        let claim_needs_work = |name: &str| {
            store
                .get::<ResourceClaim>(ns, name)
                .is_some_and(|c| Self::claim_needs_work(store, c))
        };
        match &event.object {
            Stored::Pod(pod) => {
                // A pod without claims (its claim entries cannot be added later) and without an
                // extended-resource claim wakes nothing. Judged on the event's copy: if the pod
                // as stored differs, a later event of the same batch judges that one.
                if pod.spec.resource_claims.is_empty()
                    && pod.status.resource_claim_statuses.is_empty()
                    && pod.status.extended_resource_claim_status.is_none()
                {
                    return Vec::new();
                }
                let mut keys = Vec::new();
                if event.event_type != EventType::Deleted
                    && let Some(current) = store.get::<Pod>(ns, &event.key.name)
                    && self.pod_needs_work(store, current)
                {
                    keys.push(event.key.clone());
                }
                // The pod's claims may lose a consumer or an owner.
                let named = pod
                    .status
                    .resource_claim_statuses
                    .iter()
                    .filter_map(|s| s.resource_claim_name.clone())
                    .chain(
                        pod.spec
                            .resource_claims
                            .iter()
                            .filter_map(|c| c.resource_claim_name.clone()),
                    )
                    // The claim the scheduler made for extended resources backed by DRA.
                    .chain(extended_resource_claim_name(pod));
                for name in named {
                    if claim_needs_work(&name) {
                        keys.push(claim_key(&name));
                    }
                }
                keys
            }
            Stored::ResourceClaim(_) => {
                if event.event_type != EventType::Deleted && claim_needs_work(&event.key.name) {
                    vec![event.key.clone()]
                } else {
                    Vec::new()
                }
            }
            Stored::PodGroup(group) => {
                let mut keys = vec![event.key.clone()];
                if event.event_type == EventType::Deleted {
                    keys.pop();
                }
                for status in &group.status.resource_claim_statuses {
                    if let Some(name) = &status.resource_claim_name {
                        keys.push(claim_key(name));
                    }
                }
                for claim in &group.spec.resource_claims {
                    if let Some(name) = &claim.resource_claim_name {
                        keys.push(claim_key(name));
                    }
                }
                // Member pods resolve their group claims through the group's status.
                keys.extend(
                    store
                        .list_in::<Pod>(ns)
                        .filter(|p| {
                            p.spec
                                .scheduling_group
                                .as_ref()
                                .is_some_and(|g| g.pod_group_name == group.metadata.name)
                        })
                        .map(|p| ObjectKey::new(Kind::Pod, ns.as_str(), p.metadata.name.as_str())),
                );
                keys
            }
            Stored::ResourceClaimTemplate(template) if event.event_type == EventType::Added => {
                let uses = |claims: &[PodResourceClaim]| {
                    claims.iter().any(|c| {
                        c.resource_claim_template_name.as_deref()
                            == Some(template.metadata.name.as_str())
                    })
                };
                let mut keys: Vec<ObjectKey> = store
                    .list_in::<Pod>(ns)
                    .filter(|p| uses(&p.spec.resource_claims))
                    .map(|p| ObjectKey::new(Kind::Pod, ns.as_str(), p.metadata.name.as_str()))
                    .collect();
                keys.extend(
                    store
                        .list_in::<PodGroup>(ns)
                        .filter(|g| {
                            g.spec.resource_claims.iter().any(|c| {
                                c.resource_claim_template_name.as_deref()
                                    == Some(template.metadata.name.as_str())
                            })
                        })
                        .map(|g| {
                            ObjectKey::new(Kind::PodGroup, ns.as_str(), g.metadata.name.as_str())
                        }),
                );
                keys
            }
            _ => Vec::new(),
        }
    }

    fn event_log_position(&self) -> Option<u64> {
        Some(self.owners.borrow().seen_rv)
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        self.owners.get_mut().sync(store);
        match key.kind {
            Kind::Pod => self.sync_pod(store, key, ctx),
            Kind::PodGroup => self.sync_pod_group(store, key, ctx),
            Kind::ResourceClaim => self.sync_claim(store, key),
            _ => Ok(Action::Done),
        }
    }
}

#[cfg(test)]
mod tests;
