//! The store's objects: found by key through a hash table, listed in key order through sorted
//! sets of the keys' names, one per kind and namespace.
//!
//! Lookups are by far the most frequent operation (every controller reads several objects per
//! reconcile, and every write reads the object it replaces): a hash of the key costs one pass
//! over its bytes, where an ordered map compares the key with some twenty others, string by
//! string. Order is needed only to list objects, and only a create or a delete changes it, so
//! the sorted sets are touched by those alone, never by the far more frequent updates. They
//! hold names under their kind and namespace: a create compares its name with others, not
//! kind, namespace and name each time (most objects of a kind share a few namespaces).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use crate::{KeyParts, Kind, ObjectKey, Stored};

/// A fixed hasher: nothing here iterates the hash table, but a fixed seed keeps runs alike.
type FixedHash = foldhash::fast::FixedState;

impl Hash for dyn KeyParts + '_ {
    /// Hashes as [`ObjectKey`]'s derived `Hash` does (kind, namespace, name), so that a key
    /// borrowed from its parts finds the owned key it equals.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (kind, namespace, name) = self.parts();
        kind.hash(state);
        namespace.hash(state);
        name.hash(state);
    }
}

/// Names by namespace, in order.
type Namespaces = BTreeMap<String, BTreeSet<String>>;

/// Objects by key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Objects {
    by_key: HashMap<ObjectKey, Stored, FixedHash>,
    /// Every key, as kind → namespace → names: the same keys as `by_key`.
    order: BTreeMap<Kind, Namespaces>,
}

impl Objects {
    pub(crate) fn get(&self, key: &dyn KeyParts) -> Option<&Stored> {
        self.by_key.get(key)
    }

    pub(crate) fn get_mut(&mut self, key: &dyn KeyParts) -> Option<&mut Stored> {
        self.by_key.get_mut(key)
    }

    pub(crate) fn contains_key(&self, key: &dyn KeyParts) -> bool {
        self.by_key.contains_key(key)
    }

    /// Stores `object` under `key`; returns the object it replaced.
    pub(crate) fn insert(&mut self, key: &ObjectKey, object: Stored) -> Option<Stored> {
        if let Some(slot) = self.by_key.get_mut(key as &dyn KeyParts) {
            return Some(std::mem::replace(slot, object));
        }
        let spaces = self.order.entry(key.kind).or_default();
        let names = match spaces.get_mut(key.namespace.as_str()) {
            Some(names) => names,
            None => spaces.entry(key.namespace.clone()).or_default(),
        };
        names.insert(key.name.clone());
        self.by_key.insert(key.clone(), object);
        None
    }

    pub(crate) fn remove(&mut self, key: &dyn KeyParts) -> Option<Stored> {
        let object = self.by_key.remove(key)?;
        let (kind, namespace, name) = key.parts();
        if let Some(spaces) = self.order.get_mut(&kind) {
            if let Some(names) = spaces.get_mut(namespace) {
                names.remove(name);
                if names.is_empty() {
                    spaces.remove(namespace);
                }
            }
            if spaces.is_empty() {
                self.order.remove(&kind);
            }
        }
        Some(object)
    }

    /// Every object, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Stored)> {
        self.order
            .iter()
            .flat_map(|(&kind, spaces)| self.in_namespaces(kind, spaces))
    }

    /// Every object of a kind, in key order.
    pub(crate) fn of_kind(&self, kind: Kind) -> impl Iterator<Item = (&ObjectKey, &Stored)> {
        self.order
            .get(&kind)
            .into_iter()
            .flat_map(move |spaces| self.in_namespaces(kind, spaces))
    }

    /// Every object of a kind in one namespace, in name order.
    pub(crate) fn in_namespace<'a>(
        &'a self,
        kind: Kind,
        namespace: &str,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Stored)> + use<'a> {
        let names = self
            .order
            .get(&kind)
            .and_then(|s| s.get_key_value(namespace));
        names
            .into_iter()
            .flat_map(move |(namespace, names)| self.named(kind, namespace, names))
    }

    fn in_namespaces<'a>(
        &'a self,
        kind: Kind,
        spaces: &'a Namespaces,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Stored)> + 'a {
        spaces
            .iter()
            .flat_map(move |(namespace, names)| self.named(kind, namespace, names))
    }

    fn named<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
        names: &'a BTreeSet<String>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Stored)> + 'a {
        // Both collections hold the same keys: `insert` and `remove` change them together.
        names.iter().filter_map(move |name| {
            self.by_key
                .get_key_value(&(kind, namespace, name.as_str()) as &dyn KeyParts)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn a_borrowed_key_hashes_as_the_owned_key() {
        let state = FixedHash::default();
        for (kind, namespace, name) in [
            (Kind::Pod, "default", "web-0"),
            (Kind::Node, "", "node-a"),
            (Kind::ResourceClaim, "ns", ""),
        ] {
            let owned = ObjectKey::new(kind, namespace, name);
            let borrowed = (kind, namespace, name);
            assert_eq!(
                state.hash_one(&owned),
                state.hash_one(&borrowed as &dyn KeyParts),
                "{owned}"
            );
        }
    }

    #[test]
    fn lists_in_key_order_whatever_the_insertion_order() {
        let mut objects = Objects::default();
        let keys = [
            ObjectKey::new(Kind::Pod, "b", "x"),
            ObjectKey::new(Kind::Node, "", "n2"),
            ObjectKey::new(Kind::Pod, "a", "z"),
            ObjectKey::new(Kind::Node, "", "n1"),
            ObjectKey::new(Kind::Pod, "a", "y"),
        ];
        for key in &keys {
            let stored = Stored::Namespace(Default::default());
            assert!(objects.insert(key, stored).is_none());
        }
        let mut sorted = keys.to_vec();
        sorted.sort();
        let listed: Vec<&ObjectKey> = objects.iter().map(|(k, _)| k).collect();
        assert_eq!(listed, sorted.iter().collect::<Vec<_>>());
        let pods: Vec<&str> = objects
            .of_kind(Kind::Pod)
            .map(|(k, _)| k.name.as_str())
            .collect();
        assert_eq!(pods, ["y", "z", "x"]);
        // Replacing keeps one entry; removing takes it out of both.
        assert!(
            objects
                .insert(&keys[0], Stored::Namespace(Default::default()))
                .is_some()
        );
        assert_eq!(objects.iter().count(), 5);
        assert!(objects.remove(&keys[2]).is_some());
        assert!(!objects.contains_key(&keys[2]));
        assert_eq!(objects.of_kind(Kind::Pod).count(), 2);
        assert!(objects.remove(&keys[2]).is_none());
        let in_b: Vec<&str> = objects
            .in_namespace(Kind::Pod, "b")
            .map(|(k, _)| k.name.as_str())
            .collect();
        assert_eq!(in_b, ["x"]);
        assert_eq!(objects.in_namespace(Kind::Pod, "c").count(), 0);
        assert_eq!(objects.in_namespace(Kind::Service, "a").count(), 0);
        // The last object of a namespace and of a kind gone: nothing left to list of them.
        assert!(objects.remove(&keys[4]).is_some());
        assert!(objects.remove(&keys[0]).is_some());
        assert_eq!(objects.of_kind(Kind::Pod).count(), 0);
        assert!(!objects.order.contains_key(&Kind::Pod));
        assert_eq!(objects.iter().count(), 2);
    }

    proptest::proptest! {
        /// Whatever the creates and deletes, listing gives exactly the keys present, in key
        /// order, whole, per kind and per namespace.
        #[test]
        fn listing_follows_inserts_and_removes(
            ops in proptest::collection::vec((proptest::bool::ANY, 0usize..3, 0usize..3, 0usize..4), 0..60)
        ) {
            let kinds = [Kind::Pod, Kind::Node, Kind::ResourceClaim];
            let namespaces = ["", "a", "b"];
            let mut objects = Objects::default();
            let mut model = std::collections::BTreeSet::new();
            for (insert, kind, namespace, name) in ops {
                let key = ObjectKey::new(kinds[kind], namespaces[namespace], format!("n{name}"));
                if insert {
                    let replaced = objects
                        .insert(&key, Stored::Namespace(Default::default()))
                        .is_some();
                    proptest::prop_assert_eq!(replaced, !model.insert(key));
                } else {
                    proptest::prop_assert_eq!(objects.remove(&key).is_some(), model.remove(&key));
                }
            }
            let listed: Vec<&ObjectKey> = objects.iter().map(|(k, _)| k).collect();
            proptest::prop_assert_eq!(listed, model.iter().collect::<Vec<_>>());
            for kind in kinds {
                let of_kind: Vec<&ObjectKey> = objects.of_kind(kind).map(|(k, _)| k).collect();
                let expected: Vec<&ObjectKey> = model.iter().filter(|k| k.kind == kind).collect();
                proptest::prop_assert_eq!(of_kind, expected);
                for namespace in namespaces {
                    let listed: Vec<&ObjectKey> =
                        objects.in_namespace(kind, namespace).map(|(k, _)| k).collect();
                    let expected: Vec<&ObjectKey> = model
                        .iter()
                        .filter(|k| k.kind == kind && k.namespace == namespace)
                        .collect();
                    proptest::prop_assert_eq!(listed, expected);
                }
            }
            // No empty set is left behind.
            let tidy = objects
                .order
                .values()
                .all(|spaces| !spaces.is_empty() && spaces.values().all(|names| !names.is_empty()));
            proptest::prop_assert!(tidy);
        }
    }
}
