//! API-server defaulting for the kinds of this crate (upstream `pkg/apis/resource/v1/defaults.go`
//! and the `+default` markers of the types).
//!
//! Defaulting is pure: `DeviceTaint.timeAdded`, which upstream sets to the current time, is left
//! unset because time is not an input here.

pub mod workloads;

use crate::load::Object;
use crate::resource::v1::{
    DeviceAllocationMode, DeviceClaim, DeviceToleration, DeviceTolerationOperator,
    ResourceClaimSpec,
};
use crate::resource::v1alpha3::{
    RESOURCE_POOL_STATUS_REQUEST_LIMIT_DEFAULT, ResourcePoolStatusRequestSpec,
};

/// Defaults one decoded object in place.
pub fn default_object(object: &mut Object) {
    match object {
        Object::ResourceClaim(claim) => default_resource_claim_spec(&mut claim.spec),
        Object::ResourceClaimTemplate(template) => {
            default_resource_claim_spec(&mut template.spec.spec)
        }
        Object::ResourcePoolStatusRequest(request) => {
            default_resource_pool_status_request_spec(&mut request.spec)
        }
        Object::RoleBinding(binding) => {
            default_rbac_binding(&mut binding.role_ref, &mut binding.subjects)
        }
        Object::ClusterRoleBinding(binding) => {
            default_rbac_binding(&mut binding.role_ref, &mut binding.subjects)
        }
        other => workloads::default_object(other),
    }
}

/// Upstream's rbac/v1 defaults: a binding's `roleRef.apiGroup` and its users' and groups'
/// `apiGroup` are `rbac.authorization.k8s.io` when empty.
pub fn default_rbac_binding(
    role_ref: &mut crate::rbac::v1::RoleRef,
    subjects: &mut [crate::rbac::v1::Subject],
) {
    const GROUP: &str = "rbac.authorization.k8s.io";
    if role_ref.api_group.is_empty() {
        role_ref.api_group = GROUP.into();
    }
    for subject in subjects {
        if subject.api_group.is_empty() && matches!(subject.kind.as_str(), "User" | "Group") {
            subject.api_group = GROUP.into();
        }
    }
}

/// Defaults a claim spec: every request's allocation mode (`ExactCount`), count (1 for
/// `ExactCount`) and toleration operators (`Equal`).
pub fn default_resource_claim_spec(spec: &mut ResourceClaimSpec) {
    default_device_claim(&mut spec.devices);
}

/// Defaults the requests of a [`DeviceClaim`].
pub fn default_device_claim(claim: &mut DeviceClaim) {
    for request in &mut claim.requests {
        if let Some(exactly) = &mut request.exactly {
            default_mode_and_count(&mut exactly.allocation_mode, &mut exactly.count);
            exactly
                .tolerations
                .iter_mut()
                .for_each(default_device_toleration);
        }
        for sub in &mut request.first_available {
            default_mode_and_count(&mut sub.allocation_mode, &mut sub.count);
            sub.tolerations
                .iter_mut()
                .for_each(default_device_toleration);
        }
    }
}

fn default_mode_and_count(mode: &mut Option<DeviceAllocationMode>, count: &mut Option<i64>) {
    let mode = mode.get_or_insert(DeviceAllocationMode::ExactCount);
    if *mode == DeviceAllocationMode::ExactCount && count.unwrap_or(0) == 0 {
        *count = Some(1);
    }
}

/// Defaults a toleration's operator to `Equal`.
pub fn default_device_toleration(toleration: &mut DeviceToleration) {
    if toleration.operator.is_none() {
        toleration.operator = Some(DeviceTolerationOperator::Equal);
    }
}

/// Defaults a pool status request's `limit` to 100.
pub fn default_resource_pool_status_request_spec(spec: &mut ResourcePoolStatusRequestSpec) {
    if spec.limit.is_none() {
        spec.limit = Some(RESOURCE_POOL_STATUS_REQUEST_LIMIT_DEFAULT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::v1::{DeviceRequest, DeviceSubRequest, ExactDeviceRequest};

    fn claim(exactly: ExactDeviceRequest, sub: DeviceSubRequest) -> ResourceClaimSpec {
        ResourceClaimSpec {
            devices: DeviceClaim {
                requests: vec![
                    DeviceRequest {
                        name: "a".into(),
                        exactly: Some(exactly),
                        ..Default::default()
                    },
                    DeviceRequest {
                        name: "b".into(),
                        first_available: vec![sub],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        }
    }

    #[test]
    fn exact_count_and_count_one_are_defaulted() {
        let mut spec = claim(
            ExactDeviceRequest {
                tolerations: vec![DeviceToleration::default()],
                ..Default::default()
            },
            DeviceSubRequest::default(),
        );
        default_resource_claim_spec(&mut spec);
        let exactly = spec.devices.requests[0].exactly.as_ref().unwrap();
        assert_eq!(
            exactly.allocation_mode,
            Some(DeviceAllocationMode::ExactCount)
        );
        assert_eq!(exactly.count, Some(1));
        assert_eq!(
            exactly.tolerations[0].operator,
            Some(DeviceTolerationOperator::Equal)
        );
        let sub = &spec.devices.requests[1].first_available[0];
        assert_eq!(sub.allocation_mode, Some(DeviceAllocationMode::ExactCount));
        assert_eq!(sub.count, Some(1));
    }

    #[test]
    fn mode_all_gets_no_count_and_explicit_count_stays() {
        let mut spec = claim(
            ExactDeviceRequest {
                allocation_mode: Some(DeviceAllocationMode::All),
                ..Default::default()
            },
            DeviceSubRequest {
                count: Some(3),
                ..Default::default()
            },
        );
        default_resource_claim_spec(&mut spec);
        assert_eq!(
            spec.devices.requests[0].exactly.as_ref().unwrap().count,
            None
        );
        assert_eq!(spec.devices.requests[1].first_available[0].count, Some(3));
    }
}
