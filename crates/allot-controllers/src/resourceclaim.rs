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

use std::collections::{BTreeMap, BTreeSet};

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
#[derive(Debug, Default)]
pub struct ResourceClaimController {
    config: ResourceClaimControllerConfig,
    /// (namespace, owner uid, claim name in the owner) -> generated claim name.
    generated: BTreeMap<(String, String, String), String>,
    owners: OwnerIndex,
}

/// Claims by (namespace, controller owner uid), kept from the store's event log, so that
/// finding the claim generated for an owner does not scan every claim of the namespace
/// (upstream's controller indexes claims by owner for the same reason).
#[derive(Debug, Default)]
struct OwnerIndex {
    seen_rv: u64,
    /// (namespace, owner uid) -> claim names.
    by_owner: BTreeMap<(String, String), BTreeSet<String>>,
    /// (namespace, claim name) -> its controller owners' uids.
    owners_of: BTreeMap<(String, String), Vec<String>>,
}

impl OwnerIndex {
    fn sync(&mut self, store: &Store) {
        let events = store.events_since(self.seen_rv);
        let Some(last) = events.last() else { return };
        self.seen_rv = last.resource_version;
        for event in events {
            let Stored::ResourceClaim(claim) = &event.object else {
                continue;
            };
            let claim_key = (event.key.namespace.clone(), event.key.name.clone());
            for uid in self.owners_of.remove(&claim_key).unwrap_or_default() {
                let owner_key = (claim_key.0.clone(), uid);
                if let Some(names) = self.by_owner.get_mut(&owner_key) {
                    names.remove(&claim_key.1);
                    if names.is_empty() {
                        self.by_owner.remove(&owner_key);
                    }
                }
            }
            if event.event_type == EventType::Deleted {
                continue;
            }
            let uids: Vec<String> = claim
                .metadata
                .owner_references
                .iter()
                .filter(|o| o.controller == Some(true))
                .map(|o| o.uid.clone())
                .collect();
            for uid in &uids {
                self.by_owner
                    .entry((claim_key.0.clone(), uid.clone()))
                    .or_default()
                    .insert(claim_key.1.clone());
            }
            if !uids.is_empty() {
                self.owners_of.insert(claim_key, uids);
            }
        }
    }

    /// Names of the claims in `namespace` with a controller owner of this uid, in name order.
    fn owned(&self, namespace: &str, uid: &str) -> impl Iterator<Item = &String> {
        self.by_owner
            .get(&(namespace.to_string(), uid.to_string()))
            .into_iter()
            .flatten()
    }
}

impl ResourceClaimController {
    /// A controller with the given settings.
    pub fn new(config: ResourceClaimControllerConfig) -> Self {
        ResourceClaimController {
            config,
            generated: BTreeMap::new(),
            owners: OwnerIndex::default(),
        }
    }
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

/// Whether a pod has finished (or is being deleted) and no longer needs its claims.
pub fn pod_is_done(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        || matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"))
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
        let index_key = (
            namespace.clone(),
            owner_meta.uid.clone(),
            claim_name.to_string(),
        );
        if let Some(name) = self.generated.get(&index_key)
            && store.get::<ResourceClaim>(&namespace, name).is_some()
        {
            return Ok(Some(name.clone()));
        }
        // A claim generated earlier (for example, given in the input) is found by its owner.
        self.owners.sync(store);
        let existing = self
            .owners
            .owned(&namespace, &owner_meta.uid)
            .filter_map(|name| store.get::<ResourceClaim>(&namespace, name))
            .find(|c| {
                c.metadata.annotations.get(annotation).map(String::as_str) == Some(claim_name)
                    && c.metadata
                        .owner_references
                        .iter()
                        .any(|o| o.uid == owner_meta.uid && o.controller == Some(true))
            });
        if let Some(existing) = existing {
            let name = existing.metadata.name.clone();
            self.generated.insert(index_key, name.clone());
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
            .create(claim, &ctx.now.rfc3339())
            .map_err(|e| e.to_string())?;
        let name = created.metadata.name;
        self.generated.insert(index_key, name.clone());
        Ok(Some(name))
    }

    fn sync_pod(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(pod) = store.get::<Pod>(&key.namespace, &key.name).cloned() else {
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
        let Some(pod) = store.get::<Pod>(namespace, name).cloned() else {
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
            let group_reserved = pod
                .spec
                .resource_claims
                .iter()
                .find(|c| c.name == pod_claim)
                .and_then(|c| matching_group_claim(store, &pod, c))
                .is_some_and(|g| {
                    claim
                        .status
                        .reserved_for
                        .iter()
                        .any(|r| r.uid == g.metadata.uid)
                });
            if claim.status.allocation.is_none()
                || group_reserved
                || claim
                    .status
                    .reserved_for
                    .iter()
                    .any(|r| r.uid == reference.uid)
                || claim.status.reserved_for.len() >= RESERVED_FOR_MAX_SIZE
            {
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
                self.generated.insert(
                    (key.namespace.clone(), owner.uid.clone(), claim_name.clone()),
                    key.name.clone(),
                );
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
        match &event.object {
            Stored::Pod(pod) => {
                let mut keys = Vec::new();
                if event.event_type != EventType::Deleted {
                    keys.push(event.key.clone());
                }
                // The pod's claims may lose a consumer or an owner.
                for status in &pod.status.resource_claim_statuses {
                    if let Some(name) = &status.resource_claim_name {
                        keys.push(claim_key(name));
                    }
                }
                for claim in &pod.spec.resource_claims {
                    if let Some(name) = &claim.resource_claim_name {
                        keys.push(claim_key(name));
                    }
                }
                // The claim the scheduler made for extended resources backed by DRA.
                if let Some(name) = extended_resource_claim_name(pod) {
                    keys.push(claim_key(&name));
                }
                keys
            }
            Stored::ResourceClaim(_) => vec![event.key.clone()],
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
        Some(self.owners.seen_rv)
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        self.owners.sync(store);
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
