//! `reservedMemory` checked against Node Allocatable and converted to per-NUMA-node bytes
//! (upstream `memory_manager.go`: `validateReservedMemory`, `getSystemReservedMemory`).

use std::collections::BTreeMap;

use allot_quantity::Quantity;

use crate::state::is_managed_resource;
use crate::{Error, SystemReserved};

/// One `reservedMemory` entry of the kubelet configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryReservation {
    /// The NUMA node.
    pub numa_node: usize,
    /// Resource name (`memory`, `hugepages-<size>`) to amount.
    pub limits: BTreeMap<String, Quantity>,
}

/// Validates `reservedMemory` and converts it to bytes per NUMA node, as the kubelet does before
/// creating the Static policy: every referenced NUMA node must exist; per memory kind, the sum
/// over NUMA nodes must equal what Node Allocatable reserves (kube-reserved + system-reserved +
/// the hard eviction threshold, computed by the caller as `node_allocatable_reservation`).
/// Every machine node gets an entry (empty when nothing is reserved there); a later reservation
/// of the same node and kind replaces an earlier one.
pub fn system_reserved_memory(
    numa_nodes: &[usize],
    node_allocatable_reservation: &BTreeMap<String, Quantity>,
    reservations: &[MemoryReservation],
) -> Result<SystemReserved, Error> {
    let mut totals: BTreeMap<&str, Quantity> = BTreeMap::new();
    for reservation in reservations {
        if !numa_nodes.contains(&reservation.numa_node) {
            return Err(Error::ReservationUnknownNuma {
                node: reservation.numa_node,
            });
        }
        for (resource, q) in &reservation.limits {
            let total = match totals.get(resource.as_str()) {
                Some(sum) => q.checked_add(sum).ok_or_else(|| Error::QuantityNotInt64 {
                    resource: resource.clone(),
                })?,
                None => q.clone(),
            };
            totals.insert(resource, total);
        }
    }
    let mut kinds: Vec<&str> = totals.keys().copied().collect();
    kinds.extend(
        node_allocatable_reservation
            .keys()
            .map(String::as_str)
            .filter(|r| is_managed_resource(r)),
    );
    kinds.sort_unstable();
    kinds.dedup();
    for kind in kinds {
        let zero = Quantity::zero();
        let allocatable = node_allocatable_reservation.get(kind).unwrap_or(&zero);
        let reserved = totals.get(kind).unwrap_or(&zero);
        if allocatable != reserved {
            return Err(Error::ReservationMismatch {
                resource: kind.to_string(),
                reserved: reserved.canonical_string(),
                allocatable: allocatable.canonical_string(),
            });
        }
    }
    let mut converted: SystemReserved = numa_nodes.iter().map(|&n| (n, BTreeMap::new())).collect();
    for reservation in reservations {
        for (resource, q) in &reservation.limits {
            let value = q.as_i64().ok_or(Error::ReservationNotInt64 {
                resource: resource.clone(),
            })?;
            converted
                .entry(reservation.numa_node)
                .or_default()
                .insert(resource.clone(), value as u64);
        }
    }
    Ok(converted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        s.parse().expect("quantity")
    }

    fn reservation(node: usize, pairs: &[(&str, &str)]) -> MemoryReservation {
        MemoryReservation {
            numa_node: node,
            limits: pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect(),
        }
    }

    #[test]
    fn sums_must_match_node_allocatable() {
        let allocatable = BTreeMap::from([
            ("memory".to_string(), q("1Gi")),
            ("cpu".to_string(), q("1")),
        ]);
        let ok = [
            reservation(0, &[("memory", "512Mi")]),
            reservation(1, &[("memory", "512Mi")]),
        ];
        let converted = system_reserved_memory(&[0, 1, 2], &allocatable, &ok).expect("valid");
        assert_eq!(converted[&0]["memory"], 512 << 20);
        assert!(converted[&2].is_empty());
        let short = [reservation(0, &[("memory", "512Mi")])];
        let err = system_reserved_memory(&[0, 1], &allocatable, &short).expect_err("512Mi != 1Gi");
        assert_eq!(
            err.to_string(),
            "the total amount \"512Mi\" of type \"memory\" is not equal to the value \"1Gi\" determined by Node Allocatable feature"
        );
    }

    #[test]
    fn hugepages_reserved_without_allocatable_and_unknown_nodes_fail() {
        let allocatable = BTreeMap::from([("memory".to_string(), q("1Gi"))]);
        let extra = [reservation(
            0,
            &[("memory", "1Gi"), ("hugepages-1Gi", "1Gi")],
        )];
        assert!(matches!(
            system_reserved_memory(&[0], &allocatable, &extra),
            Err(Error::ReservationMismatch { .. })
        ));
        let unknown = [reservation(3, &[("memory", "1Gi")])];
        assert_eq!(
            system_reserved_memory(&[0], &allocatable, &unknown)
                .expect_err("node 3")
                .to_string(),
            "the reserved memory configuration references a NUMA node 3 that does not exist on this machine"
        );
    }
}
