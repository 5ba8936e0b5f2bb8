//! A store that mirrors shared storage (etcd) needs two things the simulator does not: to take
//! back changes that shared storage refused, and to apply changes that were committed elsewhere
//! at resourceVersions it did not choose.
//!
//! The undo journal is off unless [`Store::begin_journal`] turned it on, so the simulator pays one
//! branch per write for it. While it is on, every write records the object as it was before, so
//! [`Store::uncommitted`] can show each change with its pre-image (for a compare-and-swap on the
//! previous resourceVersion) and [`Store::rollback`] can restore objects, the event log and the
//! counters exactly.

use crate::{Event, EventType, ObjectKey, Store, StoreError, Stored};

/// The state a journal returns to, and the pre-image of every change since.
#[derive(Debug, Clone, Default)]
pub(crate) struct Journal {
    resource_version: u64,
    uid_counter: u64,
    name_counter: u64,
    events: usize,
    /// Per event since the journal began, in order: the object before the change.
    previous: Vec<Option<Stored>>,
}

/// A change made since [`Store::begin_journal`] that shared storage has not taken yet.
#[derive(Debug, Clone, Copy)]
pub struct Uncommitted<'a> {
    /// The change, with the resourceVersion the store gave it.
    pub event: &'a Event,
    /// The object before the change (`None` for a create).
    pub previous: Option<&'a Stored>,
}

impl Store {
    /// Starts recording pre-images of every change (replacing a journal already running).
    pub fn begin_journal(&mut self) {
        self.journal = Some(Journal {
            resource_version: self.resource_version,
            uid_counter: self.uid_counter,
            name_counter: self.name_counter,
            events: self.events.len(),
            previous: Vec::new(),
        });
    }

    /// Stops recording and keeps every change made since [`Store::begin_journal`].
    pub fn end_journal(&mut self) {
        self.journal = None;
    }

    /// Whether a journal is running.
    pub fn journaling(&self) -> bool {
        self.journal.is_some()
    }

    /// The changes since [`Store::begin_journal`], oldest first (none without a journal).
    pub fn uncommitted(&self) -> Vec<Uncommitted<'_>> {
        let Some(journal) = &self.journal else {
            return Vec::new();
        };
        self.events[journal.events..]
            .iter()
            .zip(&journal.previous)
            .map(|(event, previous)| Uncommitted {
                event,
                previous: previous.as_ref(),
            })
            .collect()
    }

    /// Undoes every change since [`Store::begin_journal`]: objects, event log and counters are
    /// as they were then. The journal stays on, empty. Returns whether anything was undone.
    pub fn rollback(&mut self) -> bool {
        let Some(journal) = self.journal.take() else {
            return false;
        };
        let undone = !journal.previous.is_empty();
        let changed: Vec<ObjectKey> = self.events[journal.events..]
            .iter()
            .map(|e| e.key.clone())
            .collect();
        for (key, previous) in changed.into_iter().zip(journal.previous).rev() {
            match previous {
                Some(object) => {
                    self.put(&key, object);
                }
                None => {
                    self.take(&key);
                }
            }
        }
        self.events.truncate(journal.events);
        self.resource_version = journal.resource_version;
        self.uid_counter = journal.uid_counter;
        self.name_counter = journal.name_counter;
        self.begin_journal();
        undone
    }

    /// Called by every write with the object as it was before (`None`: it did not exist).
    pub(crate) fn journal_record(&mut self, previous: impl FnOnce() -> Option<Stored>) {
        if let Some(journal) = &mut self.journal {
            journal.previous.push(previous());
        }
    }

    /// Moves the resourceVersion (and uid) counters up to `rv`: revisions that shared storage
    /// used for things this store does not hold. Never moves them back.
    pub fn skip_to(&mut self, rv: u64) {
        self.resource_version = self.resource_version.max(rv);
        self.uid_counter = self.uid_counter.max(rv);
    }

    /// Applies a change that shared storage committed at `rv` (by this server or another), as
    /// it is there: the object is stored (or removed, for `Deleted`) with resourceVersion `rv`
    /// and an event is logged. `rv` must not be below the store's resourceVersion (changes come
    /// in commit order); ends any journal. The uid counter follows, so uids made from it stay
    /// unique across servers that share the storage.
    pub fn apply_committed(
        &mut self,
        rv: u64,
        event_type: EventType,
        mut object: Stored,
    ) -> Result<(), StoreError> {
        self.journal = None;
        let key = key_of_stored(&object);
        if rv < self.resource_version {
            return Err(StoreError::Conflict {
                key,
                have: rv.to_string(),
                stored: self.resource_version.to_string(),
            });
        }
        self.skip_to(rv);
        object.meta_mut().resource_version = rv.to_string();
        match event_type {
            EventType::Added | EventType::Modified => {
                self.put(&key, object.clone());
            }
            EventType::Deleted => {
                self.take(&key);
            }
        }
        self.events.push(Event {
            resource_version: rv,
            event_type,
            key,
            object,
        });
        Ok(())
    }
}

/// The key of a stored object of any kind.
pub(crate) fn key_of_stored(object: &Stored) -> ObjectKey {
    let kind = object.kind();
    let namespace = if kind.namespaced() {
        object.meta().namespace.clone()
    } else {
        String::new()
    };
    ObjectKey::new(kind, namespace, object.meta().name.clone())
}

#[cfg(test)]
mod tests {
    use allot_api::core::v1::Namespace;

    use crate::{EventType, Kind, ObjectKey, Resource, Store};

    fn namespace(name: &str) -> Namespace {
        let mut ns = Namespace::default();
        ns.metadata.name = name.into();
        ns
    }

    #[test]
    fn rollback_restores_objects_log_and_counters() {
        let mut store = Store::new();
        store.create(namespace("a"), "t").expect("creates");
        store.create(namespace("gone"), "t").expect("creates");
        let before: Vec<_> = store.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        store.begin_journal();
        let mut a = store.get::<Namespace>("", "a").expect("a").clone();
        a.metadata.labels.insert("x".into(), "y".into());
        store.update(a).expect("updates");
        store
            .delete(&ObjectKey::new(Kind::Namespace, "", "gone"))
            .expect("deletes");
        store.create(namespace("new"), "t").expect("creates");
        let changes = store.uncommitted();
        assert_eq!(changes.len(), 3);
        assert_eq!(
            changes[0]
                .previous
                .map(|p| p.meta().resource_version.clone()),
            Some("1".to_string())
        );
        assert!(changes[1].previous.is_some());
        assert!(changes[2].previous.is_none());
        assert!(store.rollback());
        let after: Vec<_> = store.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(before, after);
        assert_eq!(store.resource_version(), 2);
        assert_eq!(store.events_since(0).len(), 2);
        // The same create after the rollback gets the same uid and resourceVersion.
        let again = store.create(namespace("new"), "t").expect("creates");
        assert_eq!(again.metadata.resource_version, "3");
        assert_eq!(again.metadata.uid, "00000003-0000-4000-8000-000000000003");
        assert!(!Store::new().rollback());
    }

    #[test]
    fn committed_changes_take_the_given_resource_version() {
        let mut store = Store::new();
        store
            .apply_committed(7, EventType::Added, namespace("a").into_stored())
            .expect("applies");
        store.skip_to(9);
        let created = store.create(namespace("b"), "t").expect("creates");
        assert_eq!(created.metadata.resource_version, "10");
        assert_eq!(created.metadata.uid, "0000000a-0000-4000-8000-00000000000a");
        store
            .apply_committed(12, EventType::Deleted, namespace("a").into_stored())
            .expect("applies");
        assert!(store.get::<Namespace>("", "a").is_none());
        let err = store
            .apply_committed(11, EventType::Added, namespace("c").into_stored())
            .expect_err("out of order");
        assert!(err.to_string().contains("have 11"), "{err}");
        let rvs: Vec<u64> = store
            .events_since(0)
            .iter()
            .map(|e| e.resource_version)
            .collect();
        assert_eq!(rvs, [7, 10, 12]);
    }
}
