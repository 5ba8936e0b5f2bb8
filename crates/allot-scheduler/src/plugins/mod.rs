//! The in-tree plugins, one module each, and the registry that builds them by name.

pub mod balanced_allocation;
pub mod default_binder;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod gang_scheduling;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pair_counts;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod scheduling_gates;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_util;
pub mod volume_zone;

use serde::de::DeserializeOwned;

use crate::framework::{Plugin, PluginConfig};

/// What plugins need from the scheduler's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    /// DynamicResources' configuration.
    pub dra: dynamic_resources::Config,
}

/// Decodes a plugin's arguments (`null` gives the defaults).
fn args<T: DeserializeOwned + Default>(name: &str, value: &serde_json::Value) -> Result<T, String> {
    if value.is_null() {
        return Ok(T::default());
    }
    serde_json::from_value(value.clone()).map_err(|e| format!("plugin {name:?} args: {e}"))
}

/// Whether the registry has a plugin of this name.
pub fn exists(name: &str) -> bool {
    let features = Features {
        dra: crate::SchedulerConfig::default().plugin_features().dra,
    };
    match build(&PluginConfig::new(name), &features) {
        Ok(_) => true,
        Err(e) => !e.ends_with("does not exist"),
    }
}

/// Builds a plugin by name with its arguments (upstream's in-tree registry).
pub fn build(config: &PluginConfig, features: &Features) -> Result<Box<dyn Plugin>, String> {
    let name = config.name.as_str();
    let a = &config.args;
    Ok(match name {
        scheduling_gates::NAME => Box::new(scheduling_gates::SchedulingGates),
        priority_sort::NAME => Box::new(priority_sort::PrioritySort),
        node_unschedulable::NAME => Box::new(node_unschedulable::NodeUnschedulable),
        node_name::NAME => Box::new(node_name::NodeName),
        taint_toleration::NAME => Box::new(taint_toleration::TaintToleration),
        node_affinity::NAME => Box::new(node_affinity::NodeAffinity::new(args(name, a)?)),
        node_ports::NAME => Box::new(node_ports::NodePorts),
        node_resources_fit::NAME => Box::new(node_resources_fit::NodeResourcesFit::new(
            args(name, a)?,
            features.dra.extended_resource,
        )?),
        pod_topology_spread::NAME => {
            Box::new(pod_topology_spread::PodTopologySpread::new(args(name, a)?)?)
        }
        inter_pod_affinity::NAME => {
            Box::new(inter_pod_affinity::InterPodAffinity::new(args(name, a)?)?)
        }
        dynamic_resources::NAME => Box::new(dynamic_resources::DynamicResources::new(
            features.dra.clone(),
        )),
        balanced_allocation::NAME => {
            Box::new(balanced_allocation::BalancedAllocation::new(args(name, a)?))
        }
        image_locality::NAME => Box::new(image_locality::ImageLocality),
        default_preemption::NAME => {
            Box::new(default_preemption::DefaultPreemption::new(args(name, a)?)?)
        }
        default_binder::NAME => Box::new(default_binder::DefaultBinder),
        volume_restrictions::NAME => Box::new(volume_restrictions::VolumeRestrictions),
        node_volume_limits::NAME => Box::new(node_volume_limits::NodeVolumeLimits),
        volume_binding::NAME => Box::new(volume_binding::VolumeBinding),
        volume_zone::NAME => Box::new(volume_zone::VolumeZone),
        gang_scheduling::NAME => Box::new(gang_scheduling::GangScheduling::default()),
        other => return Err(format!("plugin {other:?} does not exist")),
    })
}
