//! What the Memory Manager needs to know about a pod: plain data, built by the caller from the
//! object model (QoS class and pod-level resources are the caller's computation).

use std::collections::BTreeMap;

use allot_quantity::Quantity;

use crate::Error;
use crate::state::is_managed_resource;

/// One container's memory and hugepages requests in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerResources {
    /// The container name.
    pub name: String,
    /// An init container with `restartPolicy: Always` (a sidecar).
    pub restartable: bool,
    /// `memory` and `hugepages-*` requests in bytes.
    pub requests: BTreeMap<String, u64>,
}

impl ContainerResources {
    /// Keeps the memory and hugepages requests, as bytes (upstream `getRequestedResources`):
    /// other resources are ignored; a value that is not a whole number of bytes in `i64` is an
    /// error.
    pub fn from_requests(
        name: &str,
        restartable: bool,
        requests: &BTreeMap<String, Quantity>,
    ) -> Result<Self, Error> {
        let mut bytes = BTreeMap::new();
        for (resource, quantity) in requests {
            if !is_managed_resource(resource) {
                continue;
            }
            let value = quantity.as_i64().ok_or_else(|| Error::QuantityNotInt64 {
                resource: resource.clone(),
            })?;
            // Go converts with uint64(int64); a negative request wraps the same way.
            bytes.insert(resource.clone(), value as u64);
        }
        Ok(Self {
            name: name.to_string(),
            restartable,
            requests: bytes,
        })
    }
}

/// A pod as the Memory Manager sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodResources {
    /// The pod UID (the key of the state's entries).
    pub uid: String,
    /// Whether the pod's QoS class is Guaranteed; only those get exclusive memory.
    pub guaranteed: bool,
    /// Whether the pod sets `.spec.resources` with the PodLevelResources gate on but the
    /// PodLevelResourceManagers gate off: the Static policy then neither hints nor allocates.
    /// With both gates on the caller leaves this false and uses the pod-level entry points
    /// ([`crate::StaticPolicy::allocate_pod`]) in pod scope, or the per-container ones with
    /// empty requests for containers that are not Guaranteed on their own in container scope.
    pub pod_level_resources: bool,
    /// Init containers in spec order.
    pub init_containers: Vec<ContainerResources>,
    /// App containers in spec order.
    pub containers: Vec<ContainerResources>,
}

impl PodResources {
    /// Init then app containers.
    pub fn all_containers(&self) -> impl Iterator<Item = &ContainerResources> {
        self.init_containers.iter().chain(self.containers.iter())
    }

    /// Whether `name` is an init container without `restartPolicy: Always` (upstream
    /// `isRegularInitContainer`).
    pub fn is_regular_init_container(&self, name: &str) -> bool {
        self.init_containers
            .iter()
            .find(|c| c.name == name)
            .is_some_and(|c| !c.restartable)
    }

    /// The pod's effective requests (upstream `getPodRequestedResources`): per resource, the
    /// larger of (app containers + sidecars) and the peak of any init container on top of the
    /// sidecars started before it. Resources only init containers request are dropped, as
    /// upstream does.
    pub fn requested(&self) -> BTreeMap<String, u64> {
        let mut init_peak: BTreeMap<&str, u64> = BTreeMap::new();
        let mut sidecars: BTreeMap<&str, u64> = BTreeMap::new();
        for ctr in &self.init_containers {
            for (resource, &qty) in &ctr.requests {
                let peak = init_peak.entry(resource).or_insert(0);
                let side = sidecars.entry(resource).or_insert(0);
                if ctr.restartable {
                    *side = side.wrapping_add(qty);
                } else if side.wrapping_add(qty) > *peak {
                    *peak = side.wrapping_add(qty);
                }
            }
        }
        let mut apps: BTreeMap<&str, u64> = BTreeMap::new();
        for ctr in &self.containers {
            for (resource, &qty) in &ctr.requests {
                let sum = apps.entry(resource).or_insert(0);
                *sum = sum.wrapping_add(qty);
            }
        }
        apps.into_iter()
            .map(|(resource, app)| {
                let long_running = app.wrapping_add(sidecars.get(resource).copied().unwrap_or(0));
                let init = init_peak.get(resource).copied().unwrap_or(0);
                (resource.to_string(), long_running.max(init))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: u64 = 1 << 30;

    fn ctr(name: &str, restartable: bool, mem: u64, huge: u64) -> ContainerResources {
        ContainerResources {
            name: name.into(),
            restartable,
            requests: BTreeMap::from([
                ("memory".to_string(), mem * GI),
                ("hugepages-1Gi".to_string(), huge * GI),
            ]),
        }
    }

    fn pod(init: Vec<ContainerResources>, apps: Vec<ContainerResources>) -> PodResources {
        PodResources {
            uid: "pod".into(),
            guaranteed: true,
            pod_level_resources: false,
            init_containers: init,
            containers: apps,
        }
    }

    /// Upstream's Test_getPodRequestedResources table (memory / hugepages-1Gi).
    #[test]
    fn pod_requests_as_upstream_tables() {
        let p = pod(
            vec![ctr("i1", false, 4, 4), ctr("i2", false, 2, 2)],
            vec![ctr("a1", false, 1, 1), ctr("a2", false, 2, 2)],
        );
        assert_eq!(p.requested()["memory"], 4 * GI);
        let p = pod(
            vec![ctr("i1", false, 4, 4)],
            vec![ctr("a1", false, 2, 2), ctr("a2", false, 3, 3)],
        );
        assert_eq!(p.requested()["memory"], 5 * GI);
        let p = pod(
            vec![ctr("i1", false, 4, 2)],
            vec![ctr("a1", false, 2, 2), ctr("a2", false, 3, 2)],
        );
        assert_eq!(
            (p.requested()["memory"], p.requested()["hugepages-1Gi"]),
            (5 * GI, 4 * GI)
        );
        let p = pod(
            vec![ctr("s1", true, 2, 2), ctr("i2", false, 4, 4)],
            vec![ctr("a1", false, 1, 1), ctr("a2", false, 2, 2)],
        );
        assert_eq!(p.requested()["memory"], 6 * GI);
        let p = pod(
            vec![ctr("s1", true, 2, 2), ctr("i2", false, 4, 4)],
            vec![ctr("a1", false, 2, 2), ctr("a2", false, 3, 3)],
        );
        assert_eq!(p.requested()["hugepages-1Gi"], 7 * GI);
    }

    #[test]
    fn only_memory_and_hugepages_are_kept() {
        let requests: BTreeMap<String, Quantity> =
            [("cpu", "2"), ("memory", "1Gi"), ("hugepages-2Mi", "4Mi")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.parse().expect("quantity")))
                .collect();
        let c = ContainerResources::from_requests("c", false, &requests).expect("valid");
        assert_eq!(c.requests.len(), 2);
        assert_eq!(c.requests["hugepages-2Mi"], 4 << 20);
    }
}
