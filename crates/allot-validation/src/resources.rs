//! Resource requirements of pods, as upstream's `validateResourceRequirements`
//! (pkg/apis/core/validation): resource names, quantities that are never negative (and whole
//! for integer resources), requests not above limits (equal to them for resources that cannot
//! be overcommitted), huge pages; for the containers, the init containers, the pod-level
//! resources (only cpu, memory and huge pages, and not below what the containers ask) and the
//! pod overhead (validated as limits).

use std::collections::BTreeMap;

use allot_api::core::v1::{Container, PodSpec, ResourceList, ResourceRequirements};
use allot_quantity::Quantity;

use crate::field::{BadValue, FieldError, child, index, key};
use crate::names::is_qualified_name;

const HUGE_PAGES_PREFIX: &str = "hugepages-";
const REQUESTS_HUGE_PAGES_PREFIX: &str = "requests.hugepages-";
const DEFAULT_NAMESPACE_PREFIX: &str = "kubernetes.io/";
const REQUESTS_PREFIX: &str = "requests.";
const NEGATIVE: &str = "must be greater than or equal to 0";

/// Resource names the system knows (upstream's `standardResources`).
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resources counted in whole units (upstream's `integerResources`).
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// The pod-level resources (upstream's `SupportedPodLevelResources`, in its sorted order).
const POD_LEVEL_RESOURCES: &[&str] = &["cpu", "hugepages-", "memory"];

fn is_huge_pages(name: &str) -> bool {
    name.starts_with(HUGE_PAGES_PREFIX)
}

fn is_standard_resource(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name)
        || name.starts_with(HUGE_PAGES_PREFIX)
        || name.starts_with(REQUESTS_HUGE_PAGES_PREFIX)
}

fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_huge_pages(name)
}

/// In the `kubernetes.io/` namespace, or unprefixed.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains(DEFAULT_NAMESPACE_PREFIX)
}

fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with(REQUESTS_PREFIX)
        && is_qualified_name(&format!("{REQUESTS_PREFIX}{name}")).is_empty()
}

fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended(name)
}

fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_huge_pages(name)
}

/// Upstream's `validateResourceName`.
fn validate_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = is_qualified_name(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, BadValue::Raw(name.to_string()), msg))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('/') && !is_standard_resource(name) {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(name.to_string()),
            "must be a standard resource type or fully qualified",
        ));
    }
    errs
}

/// Upstream's `validateContainerResourceName`.
fn validate_container_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = validate_resource_name(name, path);
    if !name.contains('/') {
        if !is_standard_container_resource(name) {
            errs.push(FieldError::invalid(
                path,
                BadValue::Raw(name.to_string()),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(name.to_string()),
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// Upstream's `validatePodResourceName`.
fn validate_pod_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let errs = validate_resource_name(name, path);
    if !errs.is_empty() {
        return errs;
    }
    if matches!(name, "cpu" | "memory") || is_huge_pages(name) {
        return errs;
    }
    vec![FieldError::not_supported(
        path,
        BadValue::Raw(name.to_string()),
        POD_LEVEL_RESOURCES,
    )]
}

/// Upstream's `ValidateResourceQuantityValue`: never negative, whole for integer resources.
fn validate_quantity_value(name: &str, quantity: &Quantity, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if quantity.sign() < 0 {
        errs.push(FieldError::invalid(path, quantity.to_string(), NEGATIVE));
    }
    // Upstream prints the quantity's Go struct here; its text is clearer.
    if is_integer_resource(name) && quantity.milli_value() % 1000 != 0 {
        errs.push(FieldError::invalid(
            path,
            quantity.to_string(),
            "must be an integer",
        ));
    }
    errs
}

/// Whether a huge page quantity is a whole number of pages (upstream's
/// `IsHugePageResourceValueDivisible`).
fn huge_pages_divisible(name: &str, quantity: &Quantity) -> bool {
    let Some(size) = name
        .strip_prefix(HUGE_PAGES_PREFIX)
        .and_then(|s| Quantity::parse(s).ok())
    else {
        return false;
    };
    if size.sign() <= 0 || size.milli_value() % 1000 != 0 {
        return false;
    }
    quantity.value() % size.value() == 0
}

fn validate_huge_pages_value(name: &str, quantity: &Quantity, path: &str) -> Option<FieldError> {
    (is_huge_pages(name) && !huge_pages_divisible(name, quantity)).then(|| {
        FieldError::invalid(
            path,
            quantity.to_string(),
            format!("{quantity} is not positive integer multiple of {name}"),
        )
    })
}

/// Upstream's `validateResourceRequirements` with the given name check (the claims are checked
/// with the pod's claim references).
fn validate_requirements(
    limits: &ResourceList,
    requests: &ResourceList,
    name_check: fn(&str, &str) -> Vec<FieldError>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let limits_path = child(path, "limits");
    let requests_path = child(path, "requests");
    let (mut cpu_or_memory, mut huge_pages) = (false, false);
    for (name, quantity) in limits {
        let item = key(&limits_path, name);
        errs.extend(name_check(name, &item));
        errs.extend(validate_quantity_value(name, quantity, &item));
        if is_huge_pages(name) {
            huge_pages = true;
            errs.extend(validate_huge_pages_value(name, quantity, &item));
        }
        cpu_or_memory |= matches!(name.as_str(), "cpu" | "memory");
    }
    for (name, quantity) in requests {
        let item = key(&requests_path, name);
        errs.extend(name_check(name, &item));
        errs.extend(validate_quantity_value(name, quantity, &item));
        match limits.get(name) {
            Some(limit) if quantity != limit && !overcommit_allowed(name) => {
                errs.push(FieldError::invalid(
                    &requests_path,
                    quantity.to_string(),
                    format!("must be equal to {name} limit of {limit}"),
                ));
            }
            Some(limit) if quantity > limit => {
                errs.push(FieldError::invalid(
                    &requests_path,
                    quantity.to_string(),
                    format!("must be less than or equal to {name} limit of {limit}"),
                ));
            }
            Some(_) => {}
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                &limits_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        if is_huge_pages(name) {
            huge_pages = true;
            errs.extend(validate_huge_pages_value(name, quantity, &item));
        }
        cpu_or_memory |= matches!(name.as_str(), "cpu" | "memory");
    }
    if huge_pages && !cpu_or_memory {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    errs
}

fn container_errors(container: &Container, path: &str) -> Vec<FieldError> {
    let Some(resources) = &container.resources else {
        return Vec::new();
    };
    validate_requirements(
        &resources.limits,
        &resources.requests,
        validate_container_resource_name,
        &child(path, "resources"),
    )
}

/// The resource requirements of a pod spec: containers, init containers, pod-level resources
/// and overhead. `path` is the spec's path (`spec`).
pub fn validate_pod_spec_resources(spec: &PodSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (list, containers) in [
        ("initContainers", &spec.init_containers),
        ("containers", &spec.containers),
    ] {
        for (i, container) in containers.iter().enumerate() {
            errs.extend(container_errors(container, &index(&child(path, list), i)));
        }
    }
    if let Some(resources) = &spec.resources {
        errs.extend(validate_pod_resources(
            spec,
            resources,
            &child(path, "resources"),
        ));
    }
    if !spec.overhead.is_empty() {
        // Upstream validates the overhead as the limits of a container.
        errs.extend(validate_requirements(
            &spec.overhead,
            &ResourceList::new(),
            validate_container_resource_name,
            &child(path, "overhead"),
        ));
    }
    errs
}

/// Upstream's `validatePodResources`: no claims, the names pod-level resources support, and
/// consistency with the containers.
fn validate_pod_resources(
    spec: &PodSpec,
    resources: &ResourceRequirements,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !resources.claims.is_empty() {
        errs.push(FieldError::forbidden(
            &child(path, "claims"),
            "claims cannot be set for Resources at pod-level",
        ));
    }
    errs.extend(validate_requirements(
        &resources.limits,
        &resources.requests,
        validate_pod_resource_name,
        path,
    ));
    // Pod-level requests are at least what the containers ask together.
    let requests_path = child(path, "requests");
    let zero = Quantity::zero();
    for (name, containers) in aggregate_container_requests(spec) {
        let pod = resources.requests.get(&name).unwrap_or(&zero);
        if containers > *pod {
            errs.push(FieldError::invalid(
                &key(&requests_path, &name),
                pod.to_string(),
                format!(
                    "must be greater than or equal to aggregate container requests of {containers}"
                ),
            ));
        }
    }
    // No container's limit above the pod's. (Upstream's path puts the resource name before
    // `limits`: `spec.resources.containers[0][cpu].limits`.)
    for (i, container) in spec.containers.iter().enumerate() {
        let Some(container_resources) = &container.resources else {
            continue;
        };
        for (name, limit) in &container_resources.limits {
            let Some(pod_limit) = resources.limits.get(name) else {
                continue;
            };
            if limit > pod_limit {
                let item = child(&key(&index(&child(path, "containers"), i), name), "limits");
                errs.push(FieldError::invalid(
                    &item,
                    limit.to_string(),
                    format!("must be less than or equal to pod limits of {pod_limit}"),
                ));
            }
        }
    }
    errs
}

fn requests_of(container: &Container) -> ResourceList {
    container
        .resources
        .as_ref()
        .map(|r| r.requests.clone())
        .unwrap_or_default()
}

fn add_into(total: &mut BTreeMap<String, Quantity>, more: &ResourceList) {
    for (name, quantity) in more {
        let sum = total
            .get(name)
            .map_or_else(|| quantity.clone(), |q| q + quantity);
        total.insert(name.clone(), sum);
    }
}

fn max_into(total: &mut BTreeMap<String, Quantity>, other: &ResourceList) {
    for (name, quantity) in other {
        if total.get(name).is_none_or(|q| quantity > q) {
            total.insert(name.clone(), quantity.clone());
        }
    }
}

/// What the containers ask together (upstream's `AggregateContainerRequests`): the regular
/// containers and the sidecars side by side, or the largest init container (with the sidecars
/// started before it), whichever is more.
fn aggregate_container_requests(spec: &PodSpec) -> BTreeMap<String, Quantity> {
    let mut requests = BTreeMap::new();
    for container in &spec.containers {
        add_into(&mut requests, &requests_of(container));
    }
    let mut sidecars = BTreeMap::new();
    let mut init = BTreeMap::new();
    for container in &spec.init_containers {
        let own = requests_of(container);
        let during = if container.restart_policy.as_deref() == Some("Always") {
            add_into(&mut requests, &own);
            add_into(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut during = sidecars.clone();
            add_into(&mut during, &own);
            during
        };
        max_into(&mut init, &during);
    }
    max_into(&mut requests, &init);
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[(&str, &str)]) -> ResourceList {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn check(limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Vec<String> {
        texts(&validate_requirements(
            &list(limits),
            &list(requests),
            validate_container_resource_name,
            "r",
        ))
    }

    #[test]
    fn negative_quantities_are_refused() {
        assert_eq!(
            check(&[], &[("cpu", "-1")]),
            ["r.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"]
        );
        assert_eq!(
            check(&[("memory", "-1Gi")], &[]),
            ["r.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0"]
        );
    }

    #[test]
    fn requests_may_not_exceed_limits() {
        assert_eq!(
            check(&[("cpu", "1")], &[("cpu", "2")]),
            ["r.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"]
        );
        assert!(check(&[("cpu", "2")], &[("cpu", "1")]).is_empty());
        // Extended resources cannot be overcommitted.
        assert_eq!(
            check(&[("example.com/gpu", "2")], &[("example.com/gpu", "1")]),
            ["r.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2"]
        );
        assert_eq!(
            check(&[], &[("example.com/gpu", "1")]),
            ["r.limits: Required value: Limit must be set for non overcommitable resources"]
        );
        assert_eq!(
            check(&[("example.com/gpu", "500m")], &[]),
            ["r.limits[example.com/gpu]: Invalid value: \"500m\": must be an integer"]
        );
    }

    #[test]
    fn resource_names_follow_upstream() {
        assert_eq!(
            check(&[("gpu", "1")], &[]),
            [
                "r.limits[gpu]: Invalid value: gpu: must be a standard resource type or fully qualified",
                "r.limits[gpu]: Invalid value: gpu: must be a standard resource for containers",
            ]
        );
        assert_eq!(
            check(&[("pods", "1")], &[]),
            ["r.limits[pods]: Invalid value: pods: must be a standard resource for containers"]
        );
        assert!(check(&[("example.com/gpu", "1")], &[("example.com/gpu", "1")]).is_empty());
    }

    #[test]
    fn huge_pages_are_whole_pages_and_need_cpu_or_memory() {
        assert_eq!(
            check(&[("hugepages-2Mi", "3Mi")], &[("hugepages-2Mi", "3Mi")]),
            [
                "r.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
                "r.requests[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
                "r: Forbidden: HugePages require cpu or memory",
            ]
        );
        assert!(
            check(
                &[("hugepages-2Mi", "4Mi"), ("memory", "1Gi")],
                &[("hugepages-2Mi", "4Mi")]
            )
            .is_empty()
        );
    }

    fn container(name: &str, requests: &[(&str, &str)], sidecar: bool) -> Container {
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: list(requests),
                ..ResourceRequirements::default()
            }),
            restart_policy: sidecar.then(|| "Always".to_string()),
            ..Container::default()
        }
    }

    #[test]
    fn pod_level_resources_cover_the_containers() {
        let spec = PodSpec {
            init_containers: vec![
                container("side", &[("cpu", "1")], true),
                container("init", &[("cpu", "3")], false),
            ],
            containers: vec![container("app", &[("cpu", "1"), ("memory", "1Gi")], false)],
            resources: Some(ResourceRequirements {
                requests: list(&[("cpu", "2"), ("example.com/x", "1")]),
                limits: list(&[("memory", "512Mi")]),
                ..ResourceRequirements::default()
            }),
            overhead: list(&[("cpu", "-100m")]),
            ..PodSpec::default()
        };
        // Sidecar 1 + app 1 = 2 running together; the init container needs 3 + 1 beside the
        // sidecar: 4.
        assert_eq!(
            texts(&validate_pod_spec_resources(&spec, "spec")),
            [
                "spec.resources.requests[example.com/x]: Unsupported value: example.com/x: supported values: \"cpu\", \"hugepages-\", \"memory\"",
                "spec.resources.limits: Required value: Limit must be set for non overcommitable resources",
                "spec.resources.requests[cpu]: Invalid value: \"2\": must be greater than or equal to aggregate container requests of 4",
                "spec.resources.requests[memory]: Invalid value: \"0\": must be greater than or equal to aggregate container requests of 1Gi",
                "spec.overhead.limits[cpu]: Invalid value: \"-100m\": must be greater than or equal to 0",
            ]
        );
    }
}
