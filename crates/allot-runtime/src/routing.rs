//! Event routing: which controllers are offered which store events.
//!
//! Offering every event to every controller costs controllers × events calls of `keys_for`; with
//! one node agent per node that is quadratic in cluster size. A controller that only cares
//! about some events subscribes to [`Topic`]s instead, through the [`Subscriptions`] handle the
//! runtime gives it; the runtime then computes the topics of each event once and offers it only
//! to the subscribers of those topics (and to every controller that did not subscribe).
//!
//! A topic must be a superset of what the subscriber's `keys_for` reacts to: routing changes
//! how many controllers look at an event, never what a controller that looks decides.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use allot_store::{Event, EventType, Kind, ObjectKey, Stored};

/// Hash tables here are looked up per event and never iterated where order could show: a fast
/// fixed hasher.
type Fast = foldhash::fast::FixedState;

/// A class of store events a controller can subscribe to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Topic {
    /// Everything that concerns one node: the Node itself; Pods bound to it, before or after
    /// the change (a deleted pod counts for the node it was bound to); ResourceSlices published
    /// for it (`spec.nodeName`, before or after); ResourceClaims whose `status.reservedFor`
    /// names a pod bound to it, or a PodGroup with a pod bound to it; such PodGroups.
    Node(String),
    /// ResourceSlices of one pool, as (driver, pool name), before or after the change.
    Pool(String, String),
    /// Every object of a kind in a namespace ("" for cluster-scoped kinds).
    Namespace(Kind, String),
    /// Every object of a kind, in every namespace (a workload controller's own kind, or the
    /// pods it may own).
    Kind(Kind),
    /// One object.
    Object(ObjectKey),
}

/// Who subscribed to what.
#[derive(Debug, Default)]
pub(crate) struct Table {
    topics: HashMap<Topic, BTreeSet<usize>, Fast>,
    /// How many `Object` and `Namespace` topics of each kind have subscribers: the router
    /// names an event's object and namespace topics only for kinds that have some (no one
    /// subscribes to one Event object, and Events are most of a large run's writes).
    per_kind: HashMap<(PerKind, Kind), usize, Fast>,
}

/// The topics of one object or namespace, counted per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PerKind {
    Object,
    Namespace,
}

impl PerKind {
    fn of(topic: &Topic) -> Option<(PerKind, Kind)> {
        match topic {
            Topic::Object(key) => Some((PerKind::Object, key.kind)),
            Topic::Namespace(kind, _) => Some((PerKind::Namespace, *kind)),
            _ => None,
        }
    }
}

/// A controller's handle on its subscriptions. Cheap to clone; every clone acts for the same
/// controller. A handle made with [`Subscriptions::detached`] records nothing (for a
/// controller driven outside a [`crate::Runtime`], which is then offered every event).
#[derive(Debug, Clone, Default)]
pub struct Subscriptions {
    shared: Option<(Arc<Mutex<Table>>, usize)>,
}

impl Subscriptions {
    pub(crate) fn new(table: Arc<Mutex<Table>>, controller: usize) -> Self {
        Subscriptions {
            shared: Some((table, controller)),
        }
    }

    /// A handle that records nothing.
    pub fn detached() -> Self {
        Subscriptions::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Table, usize) -> T) -> Option<T> {
        let (table, controller) = self.shared.as_ref()?;
        let mut guard = table.lock().unwrap_or_else(|e| e.into_inner());
        Some(f(&mut guard, *controller))
    }

    /// Subscribes to a topic (again: no change).
    pub fn add(&self, topic: Topic) {
        self.with(|t, c| t.add(topic, c));
    }

    /// Ends a subscription (none: no change).
    pub fn remove(&self, topic: &Topic) {
        self.with(|t, c| t.remove(topic, c));
    }

    /// Subscribes when `on`, unsubscribes otherwise.
    pub fn set(&self, topic: Topic, on: bool) {
        if on {
            self.add(topic);
        } else {
            self.remove(&topic);
        }
    }

    /// Whether this handle's controller is subscribed to `topic`.
    pub fn contains(&self, topic: &Topic) -> bool {
        self.with(|t, c| t.topics.get(topic).is_some_and(|s| s.contains(&c)))
            .unwrap_or(false)
    }
}

/// Where a pod was bound at its last event, and its PodGroup.
#[derive(Debug, Clone)]
struct PodHome {
    node: String,
    group: Option<String>,
}

/// What the router remembers between events to name the topics of the next one: where pods
/// were bound, which nodes host each PodGroup's pods, where slices were published.
#[derive(Debug, Default)]
pub(crate) struct Router {
    pods: HashMap<ObjectKey, PodHome, Fast>,
    /// (namespace, PodGroup) → node → pods of the group bound there.
    groups: BTreeMap<(String, String), BTreeMap<String, usize>>,
    /// Slice name → (its node, (driver, pool)).
    slices: HashMap<String, (Option<String>, (String, String)), Fast>,
}

impl Router {
    /// The topics of an event that `table` may have subscribers for, updating what the router
    /// remembers. May repeat a topic.
    pub(crate) fn topics(&mut self, event: &Event, table: &Table, out: &mut Vec<Topic>) {
        out.clear();
        let key = &event.key;
        if table.objects_of(key.kind) {
            out.push(Topic::Object(key.clone()));
        }
        if table.namespaces_of(key.kind) {
            out.push(Topic::Namespace(key.kind, key.namespace.clone()));
        }
        out.push(Topic::Kind(key.kind));
        let deleted = event.event_type == EventType::Deleted;
        match &event.object {
            Stored::Pod(pod) => {
                let node = pod.spec.node_name.as_deref().filter(|n| !n.is_empty());
                if let Some(node) = node {
                    out.push(Topic::Node(node.to_string()));
                }
                let home = node.filter(|_| !deleted).map(|node| PodHome {
                    node: node.to_string(),
                    group: pod
                        .spec
                        .scheduling_group
                        .as_ref()
                        .map(|g| g.pod_group_name.clone()),
                });
                let old = match home {
                    Some(home) => {
                        self.add_group_member(&key.namespace, &home);
                        self.pods.insert(key.clone(), home)
                    }
                    None => self.pods.remove(key),
                };
                if let Some(old) = old {
                    self.remove_group_member(&key.namespace, &old);
                    if node != Some(old.node.as_str()) {
                        out.push(Topic::Node(old.node));
                    }
                }
            }
            Stored::Node(node) => out.push(Topic::Node(node.metadata.name.clone())),
            Stored::ResourceSlice(slice) => {
                let node = slice.spec.node_name.clone().filter(|n| !n.is_empty());
                let pool = (slice.spec.driver.clone(), slice.spec.pool.name.clone());
                if let Some(node) = &node {
                    out.push(Topic::Node(node.clone()));
                }
                out.push(Topic::Pool(pool.0.clone(), pool.1.clone()));
                let old = if deleted {
                    self.slices.remove(&key.name)
                } else {
                    self.slices
                        .insert(key.name.clone(), (node.clone(), pool.clone()))
                };
                if let Some((old_node, old_pool)) = old {
                    if let Some(old_node) = old_node.filter(|n| Some(n) != node.as_ref()) {
                        out.push(Topic::Node(old_node));
                    }
                    if old_pool != pool {
                        out.push(Topic::Pool(old_pool.0, old_pool.1));
                    }
                }
            }
            Stored::ResourceClaim(claim) => {
                for consumer in &claim.status.reserved_for {
                    match consumer.resource.as_str() {
                        "pods" => {
                            let pod = ObjectKey::new(
                                Kind::Pod,
                                key.namespace.as_str(),
                                consumer.name.as_str(),
                            );
                            if let Some(home) = self.pods.get(&pod) {
                                out.push(Topic::Node(home.node.clone()));
                            }
                        }
                        "podgroups" => self.group_nodes(&key.namespace, &consumer.name, out),
                        _ => {}
                    }
                }
            }
            Stored::PodGroup(_) => self.group_nodes(&key.namespace, &key.name, out),
            _ => {}
        }
    }

    fn group_nodes(&self, namespace: &str, group: &str, out: &mut Vec<Topic>) {
        if let Some(nodes) = self.groups.get(&(namespace.to_string(), group.to_string())) {
            out.extend(nodes.keys().map(|n| Topic::Node(n.clone())));
        }
    }

    fn add_group_member(&mut self, namespace: &str, home: &PodHome) {
        if let Some(group) = &home.group {
            *self
                .groups
                .entry((namespace.to_string(), group.clone()))
                .or_default()
                .entry(home.node.clone())
                .or_insert(0) += 1;
        }
    }

    fn remove_group_member(&mut self, namespace: &str, home: &PodHome) {
        let Some(group) = &home.group else { return };
        let group_key = (namespace.to_string(), group.clone());
        let Some(nodes) = self.groups.get_mut(&group_key) else {
            return;
        };
        if let Some(count) = nodes.get_mut(&home.node) {
            *count -= 1;
            if *count == 0 {
                nodes.remove(&home.node);
            }
        }
        if nodes.is_empty() {
            self.groups.remove(&group_key);
        }
    }
}

/// Counts one topic fewer of its kind (it lost its last subscriber).
fn uncount(per_kind: &mut HashMap<(PerKind, Kind), usize, Fast>, topic: &Topic) {
    let Some(class) = PerKind::of(topic) else {
        return;
    };
    if let Some(count) = per_kind.get_mut(&class) {
        *count -= 1;
        if *count == 0 {
            per_kind.remove(&class);
        }
    }
}

impl Table {
    /// The subscribers of `event`'s topics, added to `out`: the router names the topics this
    /// table may hold (remembering where the event's objects are), `topics` is scratch space.
    pub(crate) fn route(
        &self,
        router: &mut Router,
        event: &Event,
        topics: &mut Vec<Topic>,
        out: &mut BTreeSet<usize>,
    ) {
        router.topics(event, self, topics);
        self.subscribers(topics, out);
    }

    fn add(&mut self, topic: Topic, controller: usize) {
        let per_kind = PerKind::of(&topic);
        let set = self.topics.entry(topic).or_default();
        if set.is_empty()
            && let Some(class) = per_kind
        {
            *self.per_kind.entry(class).or_default() += 1;
        }
        set.insert(controller);
    }

    fn remove(&mut self, topic: &Topic, controller: usize) {
        let Some(set) = self.topics.get_mut(topic) else {
            return;
        };
        set.remove(&controller);
        if set.is_empty() {
            self.topics.remove(topic);
            uncount(&mut self.per_kind, topic);
        }
    }

    /// Whether some `Object` topic of `kind` has subscribers.
    fn objects_of(&self, kind: Kind) -> bool {
        self.per_kind.contains_key(&(PerKind::Object, kind))
    }

    /// Whether some `Namespace` topic of `kind` has subscribers.
    fn namespaces_of(&self, kind: Kind) -> bool {
        self.per_kind.contains_key(&(PerKind::Namespace, kind))
    }

    /// The controllers subscribed to any of `topics`, added to `out`.
    pub(crate) fn subscribers(&self, topics: &[Topic], out: &mut BTreeSet<usize>) {
        for topic in topics {
            if let Some(set) = self.topics.get(topic) {
                out.extend(set.iter().copied());
            }
        }
    }
}

/// Topic routing for a controller that drives many sub-controllers itself (the API server's
/// fleet of node agents, which the runtime sees as one controller): the same [`Router`] and
/// subscription table the runtime uses, for members numbered by the owner.
///
/// The owner must show it every event, in order ([`Fanout::targets`]), so it keeps knowing
/// where pods are bound; a member that subscribed is then offered only the events of its
/// topics. Members that never subscribe are not offered anything: the owner decides.
#[derive(Debug, Default)]
pub struct Fanout {
    table: Arc<Mutex<Table>>,
    router: Router,
    topics: Vec<Topic>,
}

impl Fanout {
    /// An empty fanout.
    pub fn new() -> Self {
        Fanout::default()
    }

    /// The subscription handle of member `member`.
    pub fn subscriptions(&self, member: usize) -> Subscriptions {
        Subscriptions::new(self.table.clone(), member)
    }

    /// Ends every subscription of `member` (it left; its number may be reused).
    pub fn forget(&self, member: usize) {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let Table { topics, per_kind } = &mut *table;
        topics.retain(|topic, set| {
            set.remove(&member);
            if set.is_empty() {
                uncount(per_kind, topic);
            }
            !set.is_empty()
        });
    }

    /// The members subscribed to a topic of `event`, added to `out`; updates what the router
    /// remembers (call it once per event, in order).
    pub fn targets(&mut self, event: &Event, out: &mut BTreeSet<usize>) {
        self.table.lock().unwrap_or_else(|e| e.into_inner()).route(
            &mut self.router,
            event,
            &mut self.topics,
            out,
        );
    }
}

#[cfg(test)]
mod per_kind_tests {
    use super::*;

    /// The per-kind counts follow the subscriptions: a kind is named while some object or
    /// namespace topic of it has a subscriber, whoever ends theirs and however.
    #[test]
    fn object_and_namespace_topics_are_counted_per_kind() {
        let fanout = Fanout::new();
        let claim = |name: &str| Topic::Object(ObjectKey::new(Kind::ResourceClaim, "ns", name));
        let counts = |f: &Fanout| {
            let table = f.table.lock().unwrap_or_else(|e| e.into_inner());
            (
                table.objects_of(Kind::ResourceClaim),
                table.namespaces_of(Kind::ResourceClaim),
                table.objects_of(Kind::Pod),
            )
        };
        fanout.subscriptions(0).add(claim("x"));
        fanout.subscriptions(1).add(claim("x"));
        fanout.subscriptions(1).add(claim("y"));
        fanout
            .subscriptions(2)
            .add(Topic::Namespace(Kind::ResourceClaim, "ns".into()));
        assert_eq!(counts(&fanout), (true, true, false));
        // Two topics of the kind, x with two subscribers: one ending leaves the kind named.
        fanout.subscriptions(0).remove(&claim("x"));
        fanout.subscriptions(1).remove(&claim("y"));
        assert_eq!(counts(&fanout), (true, true, false));
        fanout.forget(1);
        assert_eq!(counts(&fanout), (false, true, false));
        fanout
            .subscriptions(2)
            .remove(&Topic::Namespace(Kind::ResourceClaim, "ns".into()));
        assert_eq!(counts(&fanout), (false, false, false));
        assert!(
            fanout
                .table
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .per_kind
                .is_empty()
        );
        // Removing what is not there changes nothing.
        fanout.subscriptions(3).remove(&claim("x"));
        fanout.forget(3);
        assert_eq!(counts(&fanout), (false, false, false));
    }
}
