//! Feature gates that change allocation, named as upstream names them.

use crate::Error;

/// The feature gates the allocator honours.
///
/// Field names are the snake_case of upstream's gate names without the `DRA` prefix;
/// [`Features::set`] takes the upstream names (`DRAPrioritizedList`, ...). Defaults are those
/// of Kubernetes 1.37.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// `DRAAdminAccess`: requests may ask for admin access to devices that are in use.
    pub admin_access: bool,
    /// `DRAPrioritizedList`: requests may list alternatives under `firstAvailable`.
    pub prioritized_list: bool,
    /// `DRADeviceTaints`: taints on devices keep them from being allocated unless tolerated.
    pub device_taints: bool,
    /// `DRAPartitionableDevices`: shared counters and per-device node selection.
    pub partitionable_devices: bool,
    /// `DRAConsumableCapacity`: devices allowing multiple allocations, capacity requests.
    pub consumable_capacity: bool,
    /// `DRADeviceBindingConditions`: devices with binding conditions may be allocated.
    pub device_binding_conditions: bool,
    /// `DRAResourceClaimDeviceStatus`: device status in claims (needed with binding conditions).
    pub resource_claim_device_status: bool,
    /// `DRAListTypeAttributes`: list-valued attributes with set semantics in constraints.
    pub list_type_attributes: bool,
    /// `DRADerivedAttributes`: attributes derived by CEL from a device's other attributes.
    pub derived_attributes: bool,
    /// `DRADeviceCompatibilityGroups`: devices sharing a counter set must share a group.
    pub device_compatibility_groups: bool,
    /// `DRAOptionalNodeOperations`: `skipNodeOperations` is copied into results.
    pub optional_node_operations: bool,
}

impl Default for Features {
    fn default() -> Self {
        Self::kubernetes_1_37()
    }
}

impl Features {
    /// Upstream's gate names, in the order of the fields above.
    pub const GATES: &'static [&'static str] = &[
        "DRAAdminAccess",
        "DRAPrioritizedList",
        "DRADeviceTaints",
        "DRAPartitionableDevices",
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "DRAResourceClaimDeviceStatus",
        "DRAListTypeAttributes",
        "DRADerivedAttributes",
        "DRADeviceCompatibilityGroups",
        "DRAOptionalNodeOperations",
    ];

    /// The defaults of Kubernetes 1.37: beta and GA gates on, alpha gates off.
    pub fn kubernetes_1_37() -> Self {
        Self {
            admin_access: true,
            prioritized_list: true,
            device_taints: true,
            partitionable_devices: true,
            consumable_capacity: true,
            device_binding_conditions: true,
            resource_claim_device_status: true,
            list_type_attributes: false,
            derived_attributes: false,
            device_compatibility_groups: false,
            optional_node_operations: false,
        }
    }

    /// Every gate on: what the newest allocator supports.
    pub fn all() -> Self {
        Self {
            admin_access: true,
            prioritized_list: true,
            device_taints: true,
            partitionable_devices: true,
            consumable_capacity: true,
            device_binding_conditions: true,
            resource_claim_device_status: true,
            list_type_attributes: true,
            derived_attributes: true,
            device_compatibility_groups: true,
            optional_node_operations: true,
        }
    }

    fn slot(&mut self, gate: &str) -> Option<&mut bool> {
        Some(match gate {
            "DRAAdminAccess" => &mut self.admin_access,
            "DRAPrioritizedList" => &mut self.prioritized_list,
            "DRADeviceTaints" => &mut self.device_taints,
            "DRAPartitionableDevices" => &mut self.partitionable_devices,
            "DRAConsumableCapacity" => &mut self.consumable_capacity,
            "DRADeviceBindingConditions" => &mut self.device_binding_conditions,
            "DRAResourceClaimDeviceStatus" => &mut self.resource_claim_device_status,
            "DRAListTypeAttributes" => &mut self.list_type_attributes,
            "DRADerivedAttributes" => &mut self.derived_attributes,
            "DRADeviceCompatibilityGroups" => &mut self.device_compatibility_groups,
            "DRAOptionalNodeOperations" => &mut self.optional_node_operations,
            _ => return None,
        })
    }

    /// Sets one gate by its upstream name.
    pub fn set(&mut self, gate: &str, enabled: bool) -> Result<(), Error> {
        match self.slot(gate) {
            Some(slot) => {
                *slot = enabled;
                Ok(())
            }
            None => Err(Error::UnknownFeatureGate {
                gate: gate.to_string(),
            }),
        }
    }

    /// Reads one gate by its upstream name.
    pub fn get(&self, gate: &str) -> Option<bool> {
        let mut copy = *self;
        copy.slot(gate).map(|slot| *slot)
    }

    /// Applies a `K=V,K=V` list as kube-scheduler's `--feature-gates` flag takes it.
    pub fn apply_flag(&mut self, flag: &str) -> Result<(), Error> {
        for item in flag
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let (gate, value) = item
                .split_once('=')
                .ok_or_else(|| Error::BadFeatureGateFlag {
                    item: item.to_string(),
                })?;
            let enabled = match value.trim() {
                "true" | "True" | "TRUE" | "1" => true,
                "false" | "False" | "FALSE" | "0" => false,
                _ => {
                    return Err(Error::BadFeatureGateFlag {
                        item: item.to_string(),
                    });
                }
            };
            self.set(gate.trim(), enabled)?;
        }
        Ok(())
    }

    /// Whether devices with binding conditions may be allocated (upstream's
    /// `DeviceBindingAndStatus`, which needs both gates).
    pub(crate) fn binding_and_status(&self) -> bool {
        self.device_binding_conditions && self.resource_claim_device_status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gate_name_round_trips() {
        for gate in Features::GATES {
            let mut features = Features::all();
            features.set(gate, false).unwrap();
            assert_eq!(features.get(gate), Some(false), "{gate}");
            assert_ne!(features, Features::all(), "{gate}");
        }
    }

    #[test]
    fn flag_parsing_rejects_garbage() {
        let mut features = Features::default();
        features
            .apply_flag("DRAListTypeAttributes=true, DRAAdminAccess=false")
            .unwrap();
        assert!(features.list_type_attributes);
        assert!(!features.admin_access);
        assert!(features.apply_flag("DRANope=true").is_err());
        assert!(features.apply_flag("DRAAdminAccess").is_err());
        assert!(features.apply_flag("DRAAdminAccess=maybe").is_err());
    }
}
