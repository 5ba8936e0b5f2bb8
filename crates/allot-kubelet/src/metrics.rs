//! The resource managers' metrics in Prometheus (OpenMetrics) text format: the spec's
//! `resource_manager_*` series and the kubelet's CPU and Memory Manager pinning counters.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

/// Where an exclusive allocation was drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The node's shared pool.
    Node,
    /// A pod-level pool.
    Pod,
}

impl Source {
    fn label(self) -> &'static str {
        match self {
            Source::Node => "node",
            Source::Pod => "pod",
        }
    }
}

/// What a container was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignmentType {
    /// Exclusive resources from the node.
    NodeExclusive,
    /// An exclusive slice of a pod-level pool.
    PodExclusive,
    /// The pod's shared pool.
    PodShared,
}

impl AssignmentType {
    fn label(self) -> &'static str {
        match self {
            AssignmentType::NodeExclusive => "node_exclusive",
            AssignmentType::PodExclusive => "pod_exclusive",
            AssignmentType::PodShared => "pod_shared",
        }
    }
}

/// The metrics of one node.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    allocations: Family<Labels, Counter>,
    allocation_errors: Family<Labels, Counter>,
    assignments: Family<Labels, Gauge>,
    cpu_pinning_requests: Counter,
    cpu_pinning_errors: Counter,
    memory_pinning_requests: Counter,
    memory_pinning_errors: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// All series at zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let allocations = Family::<Labels, Counter>::default();
        let allocation_errors = Family::<Labels, Counter>::default();
        let assignments = Family::<Labels, Gauge>::default();
        let cpu_pinning_requests = Counter::default();
        let cpu_pinning_errors = Counter::default();
        let memory_pinning_requests = Counter::default();
        let memory_pinning_errors = Counter::default();
        registry.register(
            "resource_manager_allocations",
            "Exclusive resource allocations performed by a manager, by source (node or pod)",
            allocations.clone(),
        );
        registry.register(
            "resource_manager_allocation_errors",
            "Errors during exclusive resource allocation, by intended source (node or pod)",
            allocation_errors.clone(),
        );
        registry.register(
            "resource_manager_container_assignments",
            "Containers granted each type of resource assignment",
            assignments.clone(),
        );
        registry.register(
            "cpu_manager_pinning_requests",
            "The number of cpu core allocations which required pinning",
            cpu_pinning_requests.clone(),
        );
        registry.register(
            "cpu_manager_pinning_errors",
            "The number of cpu core allocations which required pinning failed",
            cpu_pinning_errors.clone(),
        );
        registry.register(
            "memory_manager_pinning_requests",
            "The number of memory pages allocations which required pinning",
            memory_pinning_requests.clone(),
        );
        registry.register(
            "memory_manager_pinning_errors",
            "The number of memory pages allocations which required pinning that failed",
            memory_pinning_errors.clone(),
        );
        for s in [Source::Node, Source::Pod] {
            let _ = allocations.get_or_create(&source(s));
            let _ = allocation_errors.get_or_create(&source(s));
        }
        for t in [
            AssignmentType::NodeExclusive,
            AssignmentType::PodExclusive,
            AssignmentType::PodShared,
        ] {
            let _ = assignments.get_or_create(&kind(t));
        }
        Metrics {
            registry,
            allocations,
            allocation_errors,
            assignments,
            cpu_pinning_requests,
            cpu_pinning_errors,
            memory_pinning_requests,
            memory_pinning_errors,
        }
    }

    /// Counts an exclusive allocation.
    pub fn allocation(&self, s: Source, ok: bool) {
        if ok {
            self.allocations.get_or_create(&source(s)).inc();
        } else {
            self.allocation_errors.get_or_create(&source(s)).inc();
        }
    }

    /// Counts a container's assignment.
    pub fn assignment(&self, t: AssignmentType) {
        self.assignments.get_or_create(&kind(t)).inc();
    }

    /// Counts a CPU pinning request.
    pub fn cpu_pinning(&self, ok: bool) {
        self.cpu_pinning_requests.inc();
        if !ok {
            self.cpu_pinning_errors.inc();
        }
    }

    /// Counts a memory pinning request.
    pub fn memory_pinning(&self, ok: bool) {
        self.memory_pinning_requests.inc();
        if !ok {
            self.memory_pinning_errors.inc();
        }
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

fn source(s: Source) -> Labels {
    vec![("source".to_string(), s.label().to_string())]
}

fn kind(t: AssignmentType) -> Labels {
    vec![("assignment_type".to_string(), t.label().to_string())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_names() {
        let m = Metrics::new();
        m.allocation(Source::Node, true);
        m.allocation(Source::Pod, false);
        m.assignment(AssignmentType::PodShared);
        m.cpu_pinning(false);
        m.memory_pinning(true);
        let text = m.encode();
        assert!(text.contains("resource_manager_allocations_total{source=\"node\"} 1"));
        assert!(text.contains("resource_manager_allocation_errors_total{source=\"pod\"} 1"));
        assert!(
            text.contains(
                "resource_manager_container_assignments{assignment_type=\"pod_shared\"} 1"
            )
        );
        assert!(text.contains("cpu_manager_pinning_requests_total 1"));
        assert!(text.contains("cpu_manager_pinning_errors_total 1"));
        assert!(text.contains("memory_manager_pinning_requests_total 1"));
        assert!(text.contains("memory_manager_pinning_errors_total 0"));
    }
}
