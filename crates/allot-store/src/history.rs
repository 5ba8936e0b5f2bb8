//! Reads at an older resourceVersion: the objects of a kind as they were at revision `rv`,
//! rebuilt from the current objects and the event log (what etcd's MVCC gives kube-apiserver
//! for a list with `resourceVersionMatch=Exact`).
//!
//! The rule: an object changed after `rv` was, at `rv`, what its first later event says it
//! was before it — absent before an `Added`, the event's object before a `Deleted` (a delete's
//! event carries the object as it was) — and, before a `Modified`, the object of its last
//! event at or below `rv`. That last rule needs the log to reach back to that event; when
//! compaction dropped it, the revision is not available (`None`), as a compacted revision is
//! not in etcd.

use std::collections::{HashMap, HashSet};

use crate::{EventType, Kind, ObjectKey, Store, Stored};

impl Store {
    /// The objects of `kind` at resourceVersion `rv`, in key order (as [`Store::list_kind`]);
    /// `None` when the event log no longer holds what that needs. A revision at or beyond the
    /// store's own is the current state.
    pub fn list_kind_at(&self, kind: Kind, rv: u64) -> Option<Vec<Stored>> {
        if rv >= self.resource_version {
            return Some(self.list_kind(kind).cloned().collect());
        }
        if rv < self.compacted_through {
            // Changes after rv are gone from the log.
            return None;
        }
        // Each key changed after rv: its state at rv (None: absent then).
        let mut then: HashMap<&ObjectKey, Option<Stored>> = HashMap::new();
        // Keys whose first later change is an update: their state is found further back.
        let mut pending: HashSet<&ObjectKey> = HashSet::new();
        for event in self.events_since(rv) {
            if event.key.kind != kind
                || then.contains_key(&event.key)
                || pending.contains(&event.key)
            {
                continue;
            }
            match event.event_type {
                EventType::Added => {
                    then.insert(&event.key, None);
                }
                EventType::Deleted => {
                    then.insert(&event.key, Some(event.object.clone()));
                }
                EventType::Modified => {
                    pending.insert(&event.key);
                }
            }
        }
        if !pending.is_empty() {
            let before = &self.events[..self.events.len() - self.events_since(rv).len()];
            for event in before.iter().rev() {
                if pending.remove(&event.key) {
                    let state = match event.event_type {
                        EventType::Added | EventType::Modified => Some(event.object.clone()),
                        EventType::Deleted => None,
                    };
                    then.insert(&event.key, state);
                    if pending.is_empty() {
                        break;
                    }
                }
            }
            if !pending.is_empty() {
                return None;
            }
        }
        let mut out: Vec<(&ObjectKey, Stored)> = Vec::new();
        for (key, object) in self.objects.of_kind(kind) {
            match then.get(key) {
                None => out.push((key, object.clone())),
                Some(Some(old)) => out.push((key, old.clone())),
                Some(None) => {}
            }
        }
        // Objects deleted since rv are not among the current ones: merged in key order.
        let before = out.len();
        for (key, state) in &then {
            if let Some(old) = state
                && !self.objects.contains_key(*key)
            {
                out.push((key, old.clone()));
            }
        }
        if out.len() > before {
            out.sort_by(|a, b| a.0.cmp(b.0));
        }
        Some(out.into_iter().map(|(_, object)| object).collect())
    }
}

#[cfg(test)]
mod tests {
    use allot_api::core::v1::ConfigMap;
    use allot_api::resource::v1::ResourceClaim;
    use proptest::prelude::*;

    use crate::{Kind, Store, Stored};

    /// What a list shows of an object: its name and resourceVersion.
    fn shown(objects: &[Stored]) -> Vec<(String, String)> {
        objects
            .iter()
            .map(|o| (o.meta().name.clone(), o.meta().resource_version.clone()))
            .collect()
    }

    fn map(name: &str, value: u8) -> ConfigMap {
        let mut map = ConfigMap::default();
        map.metadata.namespace = "ns".into();
        map.metadata.name = name.into();
        map.data.insert("v".into(), value.to_string());
        map
    }

    /// One write: on which of a few names, of which kind, and what.
    #[derive(Debug, Clone)]
    enum Op {
        Put(u8, u8),
        Delete(u8),
        Other(u8),
    }

    fn apply(store: &mut Store, op: &Op) {
        match *op {
            Op::Put(name, value) => {
                let name = format!("m{name}");
                match store.get::<ConfigMap>("ns", &name).cloned() {
                    Some(mut old) => {
                        old.data.insert("v".into(), value.to_string());
                        store.update(old).expect("updates");
                    }
                    None => {
                        store.create(map(&name, value), "t").expect("creates");
                    }
                }
            }
            Op::Delete(name) => {
                let key = crate::ObjectKey::new(Kind::ConfigMap, "ns", format!("m{name}"));
                let _ = store.delete(&key);
            }
            Op::Other(name) => {
                // A write of another kind moves the resourceVersion alone.
                let mut claim = ResourceClaim::default();
                claim.metadata.namespace = "ns".into();
                claim.metadata.name = format!("c{name}");
                let _ = store.create(claim, "t");
            }
        }
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            prop_oneof![
                (0u8..5, any::<u8>()).prop_map(|(n, v)| Op::Put(n, v)),
                (0u8..5).prop_map(Op::Delete),
                (0u8..50).prop_map(Op::Other),
            ],
            0..40,
        )
    }

    proptest! {
        /// Every revision lists exactly what a list at that revision listed; after compaction,
        /// a revision is either that or unavailable.
        #[test]
        fn a_list_at_a_past_revision_is_what_was_listed_then(ops in ops(), cut in 0u64..40) {
            let mut store = Store::new();
            let mut seen = vec![(0u64, Vec::new())];
            for op in &ops {
                apply(&mut store, op);
                let rv = store.resource_version();
                let now: Vec<Stored> = store.list_kind(Kind::ConfigMap).cloned().collect();
                seen.push((rv, shown(&now)));
            }
            for (rv, then) in &seen {
                let at = store.list_kind_at(Kind::ConfigMap, *rv).expect("the whole log");
                prop_assert_eq!(&shown(&at), then, "at {}", rv);
            }
            store.compact_events(cut);
            for (rv, then) in &seen {
                if let Some(at) = store.list_kind_at(Kind::ConfigMap, *rv) {
                    prop_assert_eq!(&shown(&at), then, "at {} after compacting through {}", rv, cut);
                } else {
                    // Unavailable only when compaction dropped what it needed.
                    prop_assert!(cut > 0 && *rv < store.resource_version(), "{} unavailable", rv);
                }
            }
        }
    }

    #[test]
    fn a_revision_whose_earlier_state_was_compacted_is_unavailable() {
        let mut store = Store::new();
        apply(&mut store, &Op::Put(1, 1));
        apply(&mut store, &Op::Other(1));
        apply(&mut store, &Op::Put(1, 2));
        store.compact_events(2);
        // At 2 the map was as written at 1, an event compaction dropped.
        assert!(store.list_kind_at(Kind::ConfigMap, 2).is_none());
        // Kinds that did not change since are still listed.
        assert_eq!(
            store.list_kind_at(Kind::ResourceClaim, 2).map(|v| v.len()),
            Some(1)
        );
        assert_eq!(
            store.list_kind_at(Kind::ConfigMap, 3).map(|v| shown(&v)),
            Some(vec![("m1".to_string(), "3".to_string())])
        );
    }
}
