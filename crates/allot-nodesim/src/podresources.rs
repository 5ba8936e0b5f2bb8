//! The `allot.dev/resources` pod annotation: what each container was given, in the shape of
//! the kubelet's PodResources API (`v1.PodResources` in proto3 JSON field names).
//!
//! As upstream's PodResources `List`, `cpuIds` are the container's exclusive CPUs (none for
//! containers in the shared pool), `memory` the Memory Manager's blocks, `devices` the Device
//! Manager's devices with their NUMA nodes, and `dynamicResources` the DRA devices of the
//! claims the container references. As an extension, a DRA device carries a `topology` when
//! its ResourceSlice publishes an integer NUMA node attribute (`numaNode` or `numa`, with or
//! without a domain; `numaNode` wins).

use std::collections::BTreeMap;

use allot_api::core::v1::Pod;
use allot_api::resource::v1::{Device, DeviceRequestAllocationResult};
use allot_kubelet::PodAdmission;
use serde::Serialize;

use crate::claims::PodClaim;

/// The pod annotation holding the per-container assignment.
pub const RESOURCES_ANNOTATION: &str = "allot.dev/resources";

/// The memory blocks of one container: `(memoryType, size, NUMA nodes)` per block.
pub(crate) type Blocks = Vec<(String, u64, Vec<usize>)>;

/// The NUMA node of a DRA device, from its attributes.
pub(crate) fn device_numa(device: &Device) -> Option<i64> {
    let named = |wanted: &str| {
        device
            .attributes
            .iter()
            .filter(|(name, _)| {
                name.as_str() == wanted || name.rsplit_once('/').is_some_and(|(_, n)| n == wanted)
            })
            .find_map(|(_, v)| v.int_value)
    };
    named("numaNode").or_else(|| named("numa"))
}

/// `{"nodes": [{"ID": ...}, ...]}`.
#[derive(Serialize)]
struct Topology {
    nodes: Vec<NumaNode>,
}

#[derive(Serialize)]
struct NumaNode {
    #[serde(rename = "ID")]
    id: i64,
}

fn topology(nodes: impl IntoIterator<Item = i64>) -> Topology {
    Topology {
        nodes: nodes.into_iter().map(|id| NumaNode { id }).collect(),
    }
}

/// `v1.PodResources` as the annotation holds it.
#[derive(Serialize)]
struct PodResources<'a> {
    name: &'a str,
    namespace: &'a str,
    containers: Vec<ContainerResources<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerResources<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    devices: Vec<ContainerDevices<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cpu_ids: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    memory: Vec<ContainerMemory>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dynamic_resources: Vec<DynamicResource<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerDevices<'a> {
    resource_name: &'a str,
    device_ids: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    topology: Option<Topology>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerMemory {
    memory_type: String,
    size: u64,
    topology: Topology,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DynamicResource<'a> {
    claim_name: &'a str,
    claim_namespace: &'a str,
    claim_resources: Vec<ClaimResource<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaimResource<'a> {
    driver_name: &'a str,
    pool_name: &'a str,
    device_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    topology: Option<Topology>,
}

/// A DRA device of a container, with its NUMA node when its slice publishes one.
fn claim_resource<'a, 'd>(
    r: &'a DeviceRequestAllocationResult,
    device_of: &dyn Fn(&str, &str, &str) -> Option<&'d Device>,
) -> ClaimResource<'a> {
    ClaimResource {
        driver_name: &r.driver,
        pool_name: &r.pool,
        device_name: &r.device,
        topology: device_of(&r.driver, &r.pool, &r.device)
            .and_then(device_numa)
            .map(|numa| topology([numa])),
    }
}

/// Builds the annotation value.
pub(crate) fn annotation<'d>(
    pod: &Pod,
    admission: &PodAdmission,
    memory: &dyn Fn(&str) -> Blocks,
    device_plugin_numa: &BTreeMap<(String, String), Option<u32>>,
    claims: &[PodClaim],
    device_of: &dyn Fn(&str, &str, &str) -> Option<&'d Device>,
) -> String {
    let mut containers = Vec::new();
    // As upstream's List: app containers and restartable init containers (sidecars), not
    // init containers that run to completion.
    let completed_init = |name: &str| {
        pod.spec
            .init_containers
            .iter()
            .any(|c| c.name == name && c.restart_policy.as_deref() != Some("Always"))
    };
    for result in admission
        .containers
        .iter()
        .filter(|r| !completed_init(&r.name))
    {
        let mut devices = Vec::new();
        for (resource, ids) in &result.devices {
            let mut numa: Vec<i64> = ids
                .iter()
                .filter_map(|id| {
                    device_plugin_numa
                        .get(&(resource.clone(), id.clone()))
                        .copied()
                        .flatten()
                })
                .map(i64::from)
                .collect();
            numa.sort_unstable();
            numa.dedup();
            devices.push(ContainerDevices {
                resource_name: resource,
                device_ids: ids,
                topology: (!numa.is_empty()).then(|| topology(numa)),
            });
        }
        let cpu_ids: Vec<u64> = if result.exclusive {
            allot_topology::CpuSet::parse(&result.cpus)
                .map(|set| set.iter().map(u64::from).collect())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let memory: Vec<ContainerMemory> = memory(&result.name)
            .into_iter()
            .map(|(kind, size, nodes)| ContainerMemory {
                memory_type: kind,
                size,
                topology: topology(nodes.into_iter().map(|n| n as i64)),
            })
            .collect();
        let mut dynamic = Vec::new();
        let spec_container = pod
            .spec
            .init_containers
            .iter()
            .chain(&pod.spec.containers)
            .find(|sc| sc.name == result.name);
        if let Some(res) = spec_container.and_then(|sc| sc.resources.as_ref()) {
            for reference in &res.claims {
                let Some(pc) = claims.iter().find(|pc| pc.pod_claim_name == reference.name) else {
                    continue;
                };
                let Some(allocation) = &pc.claim.status.allocation else {
                    continue;
                };
                let mut resources = Vec::new();
                for r in &allocation.devices.results {
                    let top = r.request.split('/').next().unwrap_or_default();
                    if reference.request.as_deref().is_some_and(|want| want != top) {
                        continue;
                    }
                    resources.push(claim_resource(r, device_of));
                }
                dynamic.push(DynamicResource {
                    claim_name: &pc.claim.metadata.name,
                    claim_namespace: &pc.claim.metadata.namespace,
                    claim_resources: resources,
                });
            }
        }
        // The extended resource claim (DRAExtendedResource): the container's devices are those
        // of the requests its request mappings name.
        let extended = pod.status.extended_resource_claim_status.as_ref();
        let extended_name = extended
            .and_then(|s| s.get("resourceClaimName"))
            .and_then(|n| n.as_str());
        let requests: Vec<&str> = extended
            .and_then(|s| s.get("requestMappings"))
            .and_then(|m| m.as_array())
            .into_iter()
            .flatten()
            .filter(|m| m.get("containerName").and_then(|n| n.as_str()) == Some(&result.name))
            .filter_map(|m| m.get("requestName").and_then(|n| n.as_str()))
            .collect();
        if !requests.is_empty()
            && let Some(pc) = claims
                .iter()
                .find(|pc| Some(pc.claim.metadata.name.as_str()) == extended_name)
            && let Some(allocation) = &pc.claim.status.allocation
        {
            let resources = allocation
                .devices
                .results
                .iter()
                .filter(|r| requests.contains(&r.request.as_str()))
                .map(|r| claim_resource(r, device_of))
                .collect();
            dynamic.push(DynamicResource {
                claim_name: &pc.claim.metadata.name,
                claim_namespace: &pc.claim.metadata.namespace,
                claim_resources: resources,
            });
        }
        containers.push(ContainerResources {
            name: &result.name,
            devices,
            cpu_ids,
            memory,
            dynamic_resources: dynamic,
        });
    }
    let resources = PodResources {
        name: &pod.metadata.name,
        namespace: &pod.metadata.namespace,
        containers,
    };
    serde_json::to_string(&resources).unwrap_or_default()
}
