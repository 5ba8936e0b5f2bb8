//! The active queue: pods waiting for a scheduling attempt, ordered by the profile's QueueSort
//! plugin (a binary heap over its `less`, ties broken by the pods' keys, so the order is total).

use std::collections::HashMap;

use allot_store::ObjectKey;

use super::interface::{QueueSortPlugin, QueuedPodInfo};

/// Pods waiting for an attempt, best first.
#[derive(Debug, Default)]
pub struct ActiveQueue {
    heap: Vec<(u64, QueuedPodInfo)>,
    /// The sequence number of each queued pod's live entry (older entries are stale).
    live: HashMap<ObjectKey, u64>,
    next_seq: u64,
}

impl ActiveQueue {
    /// An empty queue.
    pub fn new() -> Self {
        ActiveQueue::default()
    }

    /// How many pods are queued.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no pod is queued.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Whether a pod is queued.
    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.live.contains_key(key)
    }

    /// Queues a pod (replacing its earlier entry).
    pub fn push(&mut self, info: QueuedPodInfo, sort: &dyn QueueSortPlugin) {
        self.next_seq += 1;
        let seq = self.next_seq;
        self.live.insert(info.key.clone(), seq);
        self.heap.push((seq, info));
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if before(&self.heap[i].1, &self.heap[parent].1, sort) {
                self.heap.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    /// Drops a pod from the queue.
    pub fn remove(&mut self, key: &ObjectKey) {
        self.live.remove(key);
    }

    /// The best queued pod, without removing it.
    pub fn peek(&mut self, sort: &dyn QueueSortPlugin) -> Option<&QueuedPodInfo> {
        self.drop_stale(sort);
        self.heap.first().map(|(_, info)| info)
    }

    /// Removes and returns the best queued pod.
    pub fn pop(&mut self, sort: &dyn QueueSortPlugin) -> Option<QueuedPodInfo> {
        self.drop_stale(sort);
        let (_, info) = self.pop_top(sort)?;
        self.live.remove(&info.key);
        Some(info)
    }

    fn drop_stale(&mut self, sort: &dyn QueueSortPlugin) {
        while let Some((seq, info)) = self.heap.first() {
            if self.live.get(&info.key) == Some(seq) {
                return;
            }
            self.pop_top(sort);
        }
    }

    fn pop_top(&mut self, sort: &dyn QueueSortPlugin) -> Option<(u64, QueuedPodInfo)> {
        if self.heap.is_empty() {
            return None;
        }
        let last = self.heap.len() - 1;
        self.heap.swap(0, last);
        let top = self.heap.pop();
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && before(&self.heap[l].1, &self.heap[best].1, sort) {
                best = l;
            }
            if r < n && before(&self.heap[r].1, &self.heap[best].1, sort) {
                best = r;
            }
            if best == i {
                break;
            }
            self.heap.swap(i, best);
            i = best;
        }
        top
    }
}

/// The total order: the plugin's `less`, then the key.
fn before(a: &QueuedPodInfo, b: &QueuedPodInfo, sort: &dyn QueueSortPlugin) -> bool {
    if sort.less(a, b) {
        return true;
    }
    if sort.less(b, a) {
        return false;
    }
    a.key < b.key
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::Pod;
    use allot_runtime::SimTime;
    use allot_store::Kind;
    use std::sync::Arc;

    struct ByPriority;
    impl QueueSortPlugin for ByPriority {
        fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
            a.pod.spec.priority.unwrap_or(0) > b.pod.spec.priority.unwrap_or(0)
        }
    }

    fn info(name: &str, priority: i32) -> QueuedPodInfo {
        let mut pod = Pod::default();
        pod.spec.priority = Some(priority);
        QueuedPodInfo {
            key: ObjectKey::new(Kind::Pod, "ns", name),
            pod: Arc::new(pod),
            timestamp: SimTime::ZERO,
        }
    }

    #[test]
    fn pops_by_priority_then_key_and_skips_removed() {
        let mut q = ActiveQueue::new();
        for (name, p) in [("c", 1), ("a", 1), ("b", 5), ("d", 0), ("e", 5)] {
            q.push(info(name, p), &ByPriority);
        }
        q.remove(&ObjectKey::new(Kind::Pod, "ns", "e"));
        q.push(info("d", 9), &ByPriority);
        let order: Vec<String> = std::iter::from_fn(|| q.pop(&ByPriority))
            .map(|i| i.key.name.to_string())
            .collect();
        assert_eq!(order, ["d", "b", "a", "c"]);
        assert!(q.is_empty());
    }
}
