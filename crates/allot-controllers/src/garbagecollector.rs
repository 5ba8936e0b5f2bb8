//! The garbage collector (upstream `pkg/controller/garbagecollector`) and deletion with a
//! propagation policy (what the API server does with `DeleteOptions.propagationPolicy`).
//!
//! - **Background** (kubectl's default): the owner goes at once; the collector then deletes
//!   every dependent none of whose owners exists any more, and drops the references to absent
//!   owners from dependents that still have a live one.
//! - **Foreground**: the owner gets a `deletionTimestamp` and the `foregroundDeletion`
//!   finalizer; the collector deletes its dependents (in the foreground too, when they have
//!   dependents of their own) and removes the finalizer once no dependent with
//!   `blockOwnerDeletion` is left, so the owner goes last.
//! - **Orphan**: the owner gets the `orphan` finalizer; the collector removes the owner's
//!   references from its dependents, then the finalizer, and the dependents stay.
//!
//! Key design decision: the store keeps an index of dependents by owner uid
//! (`Store::dependents`), so the collector needs no graph of its own: an owner's deletion wakes
//! exactly its dependents, and a dependent's deletion wakes an owner waiting in the foreground.
//! The cost: an owner reference to a kind the store does not hold is never resolved, so such
//! a dependent is left alone rather than collected.

use allot_runtime::{Action, Context, Controller, SimTime};
use allot_store::{Event, EventType, ObjectKey, Store, Stored};

use crate::workload::{delete_object, owner_key, remove_finalizer};

/// The finalizer of an owner deleted in the foreground.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer of an owner whose dependents are orphaned.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// How a deletion treats the object's dependents (`DeleteOptions.propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are collected after the owner is gone.
    Background,
    /// Dependents go first; the owner waits with `foregroundDeletion`.
    Foreground,
    /// Dependents stay without the owner's references.
    Orphan,
}

impl Propagation {
    /// Parses the API's spelling (`Background`, `Foreground`, `Orphan`).
    pub fn parse(text: &str) -> Option<Propagation> {
        match text {
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            "Orphan" => Some(Propagation::Orphan),
            _ => None,
        }
    }
}

/// Deletes an object with a propagation policy, as the API server does: Foreground and Orphan
/// add their finalizer and a `deletionTimestamp` (the collector finishes the deletion);
/// Background deletes at once unless other finalizers hold the object. `NotFound` is success.
pub fn delete_with(
    store: &mut Store,
    key: &ObjectKey,
    propagation: Propagation,
    now: SimTime,
) -> Result<(), String> {
    let finalizer = match propagation {
        Propagation::Background => return delete_object(store, key, now),
        Propagation::Foreground => FOREGROUND_FINALIZER,
        Propagation::Orphan => ORPHAN_FINALIZER,
    };
    let Some(current) = store.get_stored(key).cloned() else {
        return Ok(());
    };
    let mut marked = current;
    let meta = marked.meta_mut();
    // Either policy replaces the other's finalizer, as the API server's deletion strategy does.
    meta.finalizers
        .retain(|f| f != FOREGROUND_FINALIZER && f != ORPHAN_FINALIZER);
    meta.finalizers.push(finalizer.to_string());
    if meta.deletion_timestamp.is_none() {
        meta.deletion_timestamp = Some(now.rfc3339());
    }
    meta.resource_version.clear();
    store
        .update_stored(marked)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn has_finalizer(object: &Stored, finalizer: &str) -> bool {
    object.meta().finalizers.iter().any(|f| f == finalizer)
}

/// Whether an object is being deleted in the foreground (upstream's `isDeletingDependents`).
fn deleting_dependents(object: &Stored) -> bool {
    object.meta().deletion_timestamp.is_some() && has_finalizer(object, FOREGROUND_FINALIZER)
}

/// The garbage collector.
#[derive(Debug, Default)]
pub struct GarbageCollector;

impl GarbageCollector {
    /// A collector.
    pub fn new() -> Self {
        GarbageCollector
    }
}

/// How an object's owner references stand (upstream's `classifyReferences`).
#[derive(Debug, Default)]
struct Owners {
    /// Owners that exist and are not deleting their dependents.
    solid: usize,
    /// Uids of owners that are gone (or replaced by a namesake).
    dangling: Vec<String>,
    /// Uids of owners deleting their dependents in the foreground.
    waiting: Vec<String>,
}

fn classify(store: &Store, object: &Stored) -> Owners {
    let mut owners = Owners::default();
    let namespace = object.meta().namespace.as_str();
    for reference in &object.meta().owner_references {
        let Some(key) = owner_key(reference, namespace) else {
            // A kind the store does not hold: treated as present.
            owners.solid += 1;
            continue;
        };
        match store.get_stored(&key) {
            Some(owner) if owner.meta().uid == reference.uid => {
                if deleting_dependents(owner) {
                    owners.waiting.push(reference.uid.clone());
                } else {
                    owners.solid += 1;
                }
            }
            _ => owners.dangling.push(reference.uid.clone()),
        }
    }
    owners
}

impl Controller for GarbageCollector {
    fn name(&self) -> &'static str {
        "garbage-collector"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        let object = &event.object;
        let meta = object.meta();
        let mut keys = Vec::new();
        match event.event_type {
            EventType::Deleted => {
                // Its dependents may have lost their last owner.
                keys.extend(store.dependents(&meta.uid).cloned());
                // An owner waiting in the foreground may be done.
                for reference in &meta.owner_references {
                    if reference.block_owner_deletion != Some(true) {
                        continue;
                    }
                    if let Some(key) = owner_key(reference, &meta.namespace)
                        && store.get_stored(&key).is_some_and(|o| {
                            o.meta().uid == reference.uid && deleting_dependents(o)
                        })
                    {
                        keys.push(key);
                    }
                }
            }
            EventType::Added | EventType::Modified => {
                if meta.deletion_timestamp.is_some()
                    && (has_finalizer(object, FOREGROUND_FINALIZER)
                        || has_finalizer(object, ORPHAN_FINALIZER))
                {
                    keys.push(event.key.clone());
                    keys.extend(store.dependents(&meta.uid).cloned());
                }
                if event.event_type == EventType::Added && !meta.owner_references.is_empty() {
                    // Created with an owner that is already gone (upstream's virtual nodes).
                    let owners = classify(store, object);
                    if !owners.dangling.is_empty() || !owners.waiting.is_empty() {
                        keys.push(event.key.clone());
                    }
                }
            }
        }
        keys
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(object) = store.get_stored(key).cloned() else {
            return Ok(Action::Done);
        };
        if object.meta().deletion_timestamp.is_some() {
            if has_finalizer(&object, ORPHAN_FINALIZER) {
                orphan_dependents(store, &object)?;
                remove_finalizer(store, key, ORPHAN_FINALIZER)?;
                return Ok(Action::Done);
            }
            if has_finalizer(&object, FOREGROUND_FINALIZER) {
                return delete_dependents(store, key, &object, ctx.now);
            }
        }
        collect(store, key, &object, ctx.now)?;
        Ok(Action::Done)
    }
}

/// Upstream's `attemptToDeleteItem` for a dependent.
fn collect(
    store: &mut Store,
    key: &ObjectKey,
    object: &Stored,
    now: SimTime,
) -> Result<(), String> {
    if object.meta().owner_references.is_empty() {
        return Ok(());
    }
    let owners = classify(store, object);
    if owners.solid > 0 {
        if owners.dangling.is_empty() && owners.waiting.is_empty() {
            return Ok(());
        }
        let mut gone = owners.dangling;
        gone.extend(owners.waiting);
        let mut changed = object.clone();
        changed
            .meta_mut()
            .owner_references
            .retain(|r| !gone.contains(&r.uid));
        changed.meta_mut().resource_version.clear();
        return store
            .update_stored(changed)
            .map(drop)
            .map_err(|e| e.to_string());
    }
    if object.meta().deletion_timestamp.is_some() {
        // Already being deleted; its own finalizers finish it.
        return Ok(());
    }
    let propagation = if !owners.waiting.is_empty() && store.has_dependents(&object.meta().uid) {
        Propagation::Foreground
    } else if has_finalizer(object, ORPHAN_FINALIZER) {
        Propagation::Orphan
    } else if has_finalizer(object, FOREGROUND_FINALIZER) {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    delete_with(store, key, propagation, now)
}

/// Removes the owner's references from its dependents (upstream's `orphanDependents`).
fn orphan_dependents(store: &mut Store, owner: &Stored) -> Result<(), String> {
    let uid = owner.meta().uid.clone();
    let dependents: Vec<ObjectKey> = store.dependents(&uid).cloned().collect();
    for key in dependents {
        let Some(mut dependent) = store.get_stored(&key).cloned() else {
            continue;
        };
        dependent
            .meta_mut()
            .owner_references
            .retain(|r| r.uid != uid);
        dependent.meta_mut().resource_version.clear();
        store.update_stored(dependent).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// An owner deleted in the foreground: its dependents go first (upstream's
/// `processDeletingDependentsItem`); the finalizer goes once none with `blockOwnerDeletion`
/// is left.
fn delete_dependents(
    store: &mut Store,
    key: &ObjectKey,
    owner: &Stored,
    now: SimTime,
) -> Result<Action, String> {
    let uid = owner.meta().uid.clone();
    let dependents: Vec<ObjectKey> = store.dependents(&uid).cloned().collect();
    let mut blocking = false;
    for dependent_key in dependents {
        let Some(dependent) = store.get_stored(&dependent_key).cloned() else {
            continue;
        };
        let blocks = dependent
            .meta()
            .owner_references
            .iter()
            .any(|r| r.uid == uid && r.block_owner_deletion == Some(true));
        blocking |= blocks;
        collect(store, &dependent_key, &dependent, now)?;
    }
    let still_blocking = store.dependents(&uid).any(|k| {
        store.get_stored(k).is_some_and(|d| {
            d.meta()
                .owner_references
                .iter()
                .any(|r| r.uid == uid && r.block_owner_deletion == Some(true))
        })
    });
    if !blocking || !still_blocking {
        remove_finalizer(store, key, FOREGROUND_FINALIZER)?;
    }
    Ok(Action::Done)
}

#[cfg(test)]
mod tests;
