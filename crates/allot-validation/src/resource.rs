//! resource.k8s.io validation (upstream `pkg/apis/resource/validation/validation.go`, plus the
//! declarative rules of the v1 types' `+k8s:` tags).

use std::collections::{BTreeMap, BTreeSet};

use allot_api::Quantity;
use allot_api::resource::v1::*;
use allot_api::resource::v1alpha3::{
    RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX, ResourcePoolStatusRequest,
};

use crate::cel::{CelCompiler, CelErrorKind, ExpressionKind};
use crate::core::validate_node_selector;
use crate::field::{BadValue, FieldError, child, index, key};
use crate::meta::{name_is_dns_subdomain, validate_object_meta, validate_template_object_meta};
use crate::names::*;

/// Shared state while validating one claim spec.
struct ClaimContext<'a> {
    cel: &'a dyn CelCompiler,
    /// Total estimated cost of the claim's derived attribute expressions.
    derived_cost: u64,
    /// Attribute names referenced by constraints, by request reference ("" = all requests).
    constraint_attributes: BTreeMap<String, BTreeSet<String>>,
}

/// Request names of a claim and, for `firstAvailable` requests, their subrequest names.
struct RequestNames(BTreeMap<String, Option<BTreeSet<String>>>);

impl RequestNames {
    fn gather(claim: &DeviceClaim) -> Self {
        let mut names = BTreeMap::new();
        for request in &claim.requests {
            if request.first_available.is_empty() {
                names.insert(request.name.clone(), None);
            } else {
                let subs = request
                    .first_available
                    .iter()
                    .map(|s| s.name.clone())
                    .collect();
                names.insert(request.name.clone(), Some(subs));
            }
        }
        RequestNames(names)
    }

    fn has(&self, reference: &str) -> bool {
        let segments: Vec<&str> = reference.split('/').collect();
        match segments.as_slice() {
            [request] => self.0.contains_key(*request),
            [request, sub] => {
                matches!(self.0.get(*request), Some(Some(subs)) if subs.contains(*sub))
            }
            _ => false,
        }
    }
}

/// `validateSlice`: the size check short-circuits.
fn validate_slice<T>(
    items: &[T],
    max: Option<usize>,
    path: &str,
    mut item: impl FnMut(&T, &str) -> Vec<FieldError>,
) -> Vec<FieldError> {
    if let Some(max) = max
        && items.len() > max
    {
        return vec![FieldError::too_many(path, items.len(), max)];
    }
    let mut errs = Vec::new();
    for (i, value) in items.iter().enumerate() {
        errs.extend(item(value, &index(path, i)));
    }
    errs
}

/// `validateSet`: like [`validate_slice`], then duplicates by key.
fn validate_set<T, K: Ord + Into<BadValue> + Clone>(
    items: &[T],
    max: Option<usize>,
    path: &str,
    item: impl FnMut(&T, &str) -> Vec<FieldError>,
    key_of: impl Fn(&T) -> K,
) -> Vec<FieldError> {
    if let Some(max) = max
        && items.len() > max
    {
        return vec![FieldError::too_many(path, items.len(), max)];
    }
    let mut errs = validate_slice(items, None, path, item);
    let mut seen = BTreeSet::new();
    for (i, value) in items.iter().enumerate() {
        let k = key_of(value);
        if !seen.insert(k.clone()) {
            errs.push(FieldError::duplicate(&index(path, i), k));
        }
    }
    errs
}

/// Upstream truncates long map keys in paths.
fn truncate_key(key: &str, max: usize) -> String {
    let max = max.max(16);
    if key.len() <= max || !key.is_ascii() {
        return key.to_string();
    }
    let remaining = max - 3;
    format!(
        "{}...{}",
        &key[..remaining.div_ceil(2)],
        &key[key.len() - remaining / 2..]
    )
}

const ATTRIBUTE_KEY_MAX: usize = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH;

// ---------------------------------------------------------------------------------------------
// ResourceClaim, ResourceClaimTemplate
// ---------------------------------------------------------------------------------------------

/// Validates a ResourceClaim (metadata, spec and, when present, status).
pub fn validate_resource_claim(claim: &ResourceClaim, cel: &dyn CelCompiler) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&claim.metadata, true, name_is_dns_subdomain, "metadata");
    errs.extend(validate_resource_claim_spec(&claim.spec, "spec", cel));
    let names = RequestNames::gather(&claim.spec.devices);
    errs.extend(validate_resource_claim_status(
        &claim.status,
        &names,
        "status",
    ));
    errs
}

/// Validates a ResourceClaimTemplate.
pub fn validate_resource_claim_template(
    template: &ResourceClaimTemplate,
    cel: &dyn CelCompiler,
) -> Vec<FieldError> {
    let mut errs =
        validate_object_meta(&template.metadata, true, name_is_dns_subdomain, "metadata");
    errs.extend(validate_template_object_meta(
        &template.spec.metadata,
        "spec.metadata",
    ));
    errs.extend(validate_resource_claim_spec(
        &template.spec.spec,
        "spec.spec",
        cel,
    ));
    errs
}

/// Validates a claim spec at `path`.
pub fn validate_resource_claim_spec(
    spec: &ResourceClaimSpec,
    path: &str,
    cel: &dyn CelCompiler,
) -> Vec<FieldError> {
    validate_device_claim(&spec.devices, &child(path, "devices"), cel)
}

fn gather_constraint_attributes(
    constraints: &[DeviceConstraint],
) -> BTreeMap<String, BTreeSet<String>> {
    let mut attrs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for constraint in constraints {
        let Some(name) = constraint
            .match_attribute
            .as_ref()
            .or(constraint.distinct_attribute.as_ref())
        else {
            continue;
        };
        if constraint.requests.is_empty() {
            attrs.entry(String::new()).or_default().insert(name.clone());
        } else {
            for request in &constraint.requests {
                attrs
                    .entry(request.clone())
                    .or_default()
                    .insert(name.clone());
            }
        }
    }
    attrs
}

fn validate_device_claim(
    claim: &DeviceClaim,
    path: &str,
    cel: &dyn CelCompiler,
) -> Vec<FieldError> {
    let names = RequestNames::gather(claim);
    let mut ctx = ClaimContext {
        cel,
        derived_cost: 0,
        constraint_attributes: gather_constraint_attributes(&claim.constraints),
    };
    let mut errs = validate_set(
        &claim.requests,
        Some(DEVICE_REQUESTS_MAX_SIZE),
        &child(path, "requests"),
        |request, p| validate_device_request(request, p, &mut ctx),
        |request| request.name.clone(),
    );
    errs.extend(validate_slice(
        &claim.constraints,
        Some(DEVICE_CONSTRAINTS_MAX_SIZE),
        &child(path, "constraints"),
        |constraint, p| validate_device_constraint(constraint, p, &names),
    ));
    errs.extend(validate_slice(
        &claim.config,
        Some(DEVICE_CONFIG_MAX_SIZE),
        &child(path, "config"),
        |config, p| {
            let mut errs = validate_request_refs(&config.requests, &child(p, "requests"), &names);
            errs.extend(validate_device_configuration(config.opaque.as_ref(), p));
            errs
        },
    ));
    if ctx.derived_cost > DEVICE_CLAIM_DERIVED_ATTRIBUTE_CEL_MAX_COST {
        errs.push(FieldError::forbidden(
            path,
            "too complex, total cost of derived attribute CEL expressions in the claim exceeds cost limit",
        ));
    }
    errs
}

fn validate_device_request(
    request: &DeviceRequest,
    path: &str,
    ctx: &mut ClaimContext<'_>,
) -> Vec<FieldError> {
    let mut errs = validate_dns1123_label(&request.name, &child(path, "name"));
    let has_first = !request.first_available.is_empty();
    match (&request.exactly, has_first) {
        (None, false) => errs.push(FieldError::required(
            path,
            "exactly one of `exactly` or `firstAvailable` is required",
        )),
        (Some(_), true) => errs.push(FieldError::invalid(
            path,
            BadValue::Null,
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        )),
        (None, true) => errs.extend(validate_set(
            &request.first_available,
            Some(FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE),
            &child(path, "firstAvailable"),
            |sub, p| validate_device_sub_request(sub, p, ctx, &request.name),
            |sub| sub.name.clone(),
        )),
        (Some(exactly), false) => errs.extend(validate_exact_device_request(
            exactly,
            &child(path, "exactly"),
            ctx,
            &request.name,
        )),
    }
    errs
}

fn validate_exact_device_request(
    request: &ExactDeviceRequest,
    path: &str,
    ctx: &mut ClaimContext<'_>,
    request_name: &str,
) -> Vec<FieldError> {
    let mut errs =
        validate_device_class_name(&request.device_class_name, &child(path, "deviceClassName"));
    errs.extend(validate_selectors(
        &request.selectors,
        &child(path, "selectors"),
        ctx.cel,
    ));
    errs.extend(validate_derived_attributes(
        &request.derived_attributes,
        &child(path, "derivedAttributes"),
        ctx,
        request_name,
    ));
    errs.extend(validate_allocation_mode(
        request.allocation_mode.as_ref(),
        request.count,
        path,
    ));
    errs.extend(validate_tolerations(
        &request.tolerations,
        &child(path, "tolerations"),
    ));
    errs
}

fn validate_device_sub_request(
    sub: &DeviceSubRequest,
    path: &str,
    ctx: &mut ClaimContext<'_>,
    parent: &str,
) -> Vec<FieldError> {
    let mut errs = validate_dns1123_label(&sub.name, &child(path, "name"));
    errs.extend(validate_device_class_name(
        &sub.device_class_name,
        &child(path, "deviceClassName"),
    ));
    errs.extend(validate_selectors(
        &sub.selectors,
        &child(path, "selectors"),
        ctx.cel,
    ));
    errs.extend(validate_derived_attributes(
        &sub.derived_attributes,
        &child(path, "derivedAttributes"),
        ctx,
        &format!("{parent}/{}", sub.name),
    ));
    errs.extend(validate_allocation_mode(
        sub.allocation_mode.as_ref(),
        sub.count,
        path,
    ));
    errs.extend(validate_tolerations(
        &sub.tolerations,
        &child(path, "tolerations"),
    ));
    errs
}

fn validate_tolerations(tolerations: &[DeviceToleration], path: &str) -> Vec<FieldError> {
    validate_slice(
        tolerations,
        Some(DEVICE_TOLERATIONS_MAX_LENGTH),
        path,
        validate_device_toleration,
    )
}

fn validate_allocation_mode(
    mode: Option<&DeviceAllocationMode>,
    count: Option<i64>,
    path: &str,
) -> Vec<FieldError> {
    let count_path = child(path, "count");
    let count = count.unwrap_or(0);
    match mode {
        Some(DeviceAllocationMode::All) => {
            if count != 0 {
                return vec![FieldError::invalid(
                    &count_path,
                    count,
                    "must not be specified when allocationMode is 'All'",
                )];
            }
        }
        Some(DeviceAllocationMode::ExactCount) => {
            if count <= 0 {
                return vec![FieldError::invalid(
                    &count_path,
                    count,
                    "must be greater than zero",
                )];
            }
        }
        Some(DeviceAllocationMode::Other(other)) => {
            return vec![FieldError::not_supported(
                &child(path, "allocationMode"),
                other.as_str(),
                &["All", "ExactCount"],
            )];
        }
        None => {
            return vec![FieldError::not_supported(
                &child(path, "allocationMode"),
                "",
                &["All", "ExactCount"],
            )];
        }
    }
    Vec::new()
}

fn validate_device_class_name(name: &str, path: &str) -> Vec<FieldError> {
    if name.is_empty() {
        vec![FieldError::required(path, "")]
    } else {
        validate_dns1123_subdomain(name, path)
    }
}

fn validate_selectors(
    selectors: &[DeviceSelector],
    path: &str,
    cel: &dyn CelCompiler,
) -> Vec<FieldError> {
    validate_slice(
        selectors,
        Some(DEVICE_SELECTORS_MAX_SIZE),
        path,
        |selector, p| validate_selector(selector, p, cel),
    )
}

fn validate_selector(
    selector: &DeviceSelector,
    path: &str,
    cel: &dyn CelCompiler,
) -> Vec<FieldError> {
    match &selector.cel {
        None => vec![FieldError::required(&child(path, "cel"), "")],
        Some(expr) => {
            let (errs, _) = validate_cel_expression(
                &expr.expression,
                &child(path, "cel.expression"),
                cel,
                ExpressionKind::Selector,
            );
            errs
        }
    }
}

/// Compiles an expression, checks its length and cost; returns the errors and the cost.
fn validate_cel_expression(
    expression: &str,
    path: &str,
    cel: &dyn CelCompiler,
    kind: ExpressionKind,
) -> (Vec<FieldError>, u64) {
    if expression.len() > CEL_SELECTOR_EXPRESSION_MAX_LENGTH {
        return (
            vec![FieldError::too_long(
                path,
                CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
            )],
            0,
        );
    }
    match cel.compile(expression, kind) {
        Err(err) => {
            let error = match err.kind {
                CelErrorKind::Required => FieldError::required(path, err.detail),
                CelErrorKind::Invalid => FieldError::invalid(path, expression, err.detail),
                CelErrorKind::Internal => FieldError::internal(path, err.detail),
            };
            (vec![error], 0)
        }
        Ok(cost) => {
            let limit = match kind {
                ExpressionKind::Selector => CEL_SELECTOR_EXPRESSION_MAX_COST,
                ExpressionKind::DerivedAttribute => CEL_SELECTOR_EXPRESSION_MAX_COST
                    .min(DEVICE_CLAIM_DERIVED_ATTRIBUTE_CEL_MAX_COST),
            };
            let errs = if cost > limit {
                vec![FieldError::forbidden(
                    path,
                    "too complex, exceeds cost limit",
                )]
            } else {
                Vec::new()
            };
            (errs, cost)
        }
    }
}

fn attribute_used_by_constraint(
    name: &str,
    request: &str,
    attrs: &BTreeMap<String, BTreeSet<String>>,
) -> bool {
    let used_by = |reference: &str| attrs.get(reference).is_some_and(|set| set.contains(name));
    if used_by("") || used_by(request) {
        return true;
    }
    match request.split_once('/') {
        Some((parent, _)) => used_by(parent),
        None => false,
    }
}

fn validate_derived_attributes(
    attrs: &[DeviceDerivedAttribute],
    path: &str,
    ctx: &mut ClaimContext<'_>,
    request: &str,
) -> Vec<FieldError> {
    validate_set(
        attrs,
        Some(DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE),
        path,
        |attr, p| {
            let mut errs = Vec::new();
            let name_path = child(p, "name");
            if attr.name.is_empty() {
                errs.push(FieldError::required(&name_path, ""));
            } else {
                errs.extend(validate_fully_qualified_name(&attr.name, &name_path));
                if !attribute_used_by_constraint(&attr.name, request, &ctx.constraint_attributes) {
                    errs.push(FieldError::invalid(
                        &name_path,
                        attr.name.as_str(),
                        "must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request",
                    ));
                }
            }
            let expr_path = child(p, "expression");
            if attr.expression.is_empty() {
                errs.push(FieldError::required(&expr_path, ""));
            } else {
                let (cel_errs, cost) = validate_cel_expression(
                    &attr.expression,
                    &expr_path,
                    ctx.cel,
                    ExpressionKind::DerivedAttribute,
                );
                ctx.derived_cost = ctx.derived_cost.saturating_add(cost);
                errs.extend(cel_errs);
            }
            errs
        },
        |attr| attr.name.clone(),
    )
}

fn validate_device_constraint(
    constraint: &DeviceConstraint,
    path: &str,
    names: &RequestNames,
) -> Vec<FieldError> {
    let mut errs = validate_request_refs(&constraint.requests, &child(path, "requests"), names);
    // As upstream: `matchAttribute` wins when both are set (the one-of is only documented).
    match (&constraint.match_attribute, &constraint.distinct_attribute) {
        (Some(name), _) => {
            errs.extend(validate_fully_qualified_name(name, &child(path, "matchAttribute")))
        }
        (None, Some(name)) => errs.extend(validate_fully_qualified_name(
            name,
            &child(path, "distinctAttribute"),
        )),
        (None, None) => errs.push(FieldError::required(
            path,
            "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set",
        )),
    }
    errs
}

fn validate_request_refs(refs: &[String], path: &str, names: &RequestNames) -> Vec<FieldError> {
    validate_set(
        refs,
        Some(DEVICE_REQUESTS_MAX_SIZE),
        path,
        |reference, p| validate_request_ref(reference, p, names),
        Clone::clone,
    )
}

fn validate_request_ref(reference: &str, path: &str, names: &RequestNames) -> Vec<FieldError> {
    const MSG: &str = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";
    let segments: Vec<&str> = reference.split('/').collect();
    if segments.len() > 2 {
        return vec![FieldError::invalid(path, reference, MSG)];
    }
    let mut errs = Vec::new();
    for segment in segments {
        errs.extend(validate_dns1123_label(segment, path));
    }
    if !names.has(reference) {
        errs.push(FieldError::invalid(path, reference, MSG));
    }
    errs
}

fn validate_device_configuration(
    opaque: Option<&OpaqueDeviceConfiguration>,
    path: &str,
) -> Vec<FieldError> {
    let Some(opaque) = opaque else {
        return vec![FieldError::required(&child(path, "opaque"), "")];
    };
    let path = child(path, "opaque");
    let mut errs = validate_driver_name(&opaque.driver, &child(&path, "driver"));
    errs.extend(validate_raw_extension(
        &opaque.parameters,
        &child(&path, "parameters"),
        OPAQUE_PARAMETERS_MAX_LENGTH,
    ));
    errs
}

fn validate_raw_extension(value: &serde_json::Value, path: &str, max: usize) -> Vec<FieldError> {
    match value {
        serde_json::Value::Null => vec![FieldError::required(path, "")],
        serde_json::Value::Object(_) => {
            let length = serde_json::to_string(value).map(|s| s.len()).unwrap_or(0);
            if length > max {
                vec![FieldError::too_long(path, max)]
            } else {
                Vec::new()
            }
        }
        _ => vec![FieldError::invalid(
            path,
            "<value omitted>",
            "must be a valid JSON object",
        )],
    }
}

fn validate_device_toleration(toleration: &DeviceToleration, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !toleration.key.is_empty() {
        errs.extend(validate_label_name(&toleration.key, &child(path, "key")));
    }
    let operator_path = child(path, "operator");
    match &toleration.operator {
        Some(DeviceTolerationOperator::Exists) => {
            if !toleration.value.is_empty() {
                errs.push(FieldError::invalid(
                    &child(path, "value"),
                    toleration.value.as_str(),
                    "must be empty for operator `Exists`",
                ));
            }
        }
        Some(DeviceTolerationOperator::Equal) => {
            errs.extend(validate_label_value(
                &toleration.value,
                &child(path, "value"),
            ));
        }
        None => errs.push(FieldError::required(&operator_path, "")),
        Some(DeviceTolerationOperator::Other(op)) if op.is_empty() => {
            errs.push(FieldError::required(&operator_path, ""))
        }
        Some(DeviceTolerationOperator::Other(op)) => errs.push(FieldError::not_supported(
            &operator_path,
            op.as_str(),
            &["Equal", "Exists"],
        )),
    }
    if let Some(DeviceTaintEffect::Other(effect)) = &toleration.effect
        && !effect.is_empty()
    {
        errs.push(FieldError::not_supported(
            &child(path, "effect"),
            effect.as_str(),
            &["NoExecute", "NoSchedule", "None"],
        ));
    }
    errs
}

fn validate_device_taint(taint: &DeviceTaint, path: &str) -> Vec<FieldError> {
    let mut errs = validate_label_name(&taint.key, &child(path, "key"));
    if !taint.value.is_empty() {
        errs.extend(validate_label_value(&taint.value, &child(path, "value")));
    }
    if let DeviceTaintEffect::Other(effect) = &taint.effect {
        if effect.is_empty() {
            errs.push(FieldError::required(&child(path, "effect"), ""));
        } else {
            errs.push(FieldError::not_supported(
                &child(path, "effect"),
                effect.as_str(),
                &["NoExecute", "NoSchedule", "None"],
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// ResourceClaim status
// ---------------------------------------------------------------------------------------------

fn validate_resource_claim_status(
    status: &ResourceClaimStatus,
    names: &RequestNames,
    path: &str,
) -> Vec<FieldError> {
    let reserved_path = child(path, "reservedFor");
    let mut errs = validate_set(
        &status.reserved_for,
        Some(RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE),
        &reserved_path,
        |reference, p| {
            let mut errs = Vec::new();
            for (field, value) in [
                ("resource", &reference.resource),
                ("name", &reference.name),
                ("uid", &reference.uid),
            ] {
                if value.is_empty() {
                    errs.push(FieldError::required(&child(p, field), ""));
                }
            }
            errs
        },
        |reference| reference.uid.clone(),
    );
    let allocated: BTreeSet<(String, String, String, Option<String>)> = status
        .allocation
        .iter()
        .flat_map(|a| a.devices.results.iter())
        .map(|r| {
            (
                r.driver.to_string(),
                r.pool.to_string(),
                r.device.to_string(),
                r.share_id.clone(),
            )
        })
        .collect();
    errs.extend(validate_set(
        &status.devices,
        None,
        &child(path, "devices"),
        |device, p| validate_device_status(device, p, &allocated),
        |device| {
            format!(
                "{}/{}/{}{}",
                device.driver,
                device.pool,
                device.device,
                device
                    .share_id
                    .as_deref()
                    .map(|s| format!("/{s}"))
                    .unwrap_or_default()
            )
        },
    ));
    if !status.reserved_for.is_empty() && status.allocation.is_none() {
        errs.push(FieldError::forbidden(
            &reserved_path,
            "may not be specified when `allocated` is not set",
        ));
    }
    if let Some(allocation) = &status.allocation {
        errs.extend(validate_allocation_result(
            allocation,
            &child(path, "allocation"),
            names,
        ));
    }
    errs
}

fn validate_device_status(
    device: &AllocatedDeviceStatus,
    path: &str,
    allocated: &BTreeSet<(String, String, String, Option<String>)>,
) -> Vec<FieldError> {
    let mut errs = validate_driver_name(&device.driver, &child(path, "driver"));
    errs.extend(validate_pool_name(&device.pool, &child(path, "pool")));
    errs.extend(validate_dns1123_label(
        &device.device,
        &child(path, "device"),
    ));
    if let Some(share) = &device.share_id {
        errs.extend(validate_uid(share, &child(path, "shareID")));
    }
    let id = (
        device.driver.clone(),
        device.pool.clone(),
        device.device.clone(),
        device.share_id.clone(),
    );
    if !allocated.contains(&id) {
        errs.push(FieldError::invalid(
            path,
            format!("{}/{}/{}", device.driver, device.pool, device.device),
            "must be an allocated device in the claim",
        ));
    }
    if device.conditions.len() > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS {
        errs.push(FieldError::too_many(
            &child(path, "conditions"),
            device.conditions.len(),
            ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS,
        ));
    }
    errs.extend(crate::meta::validate_conditions(
        &device.conditions,
        &child(path, "conditions"),
    ));
    if let Some(data) = &device.data {
        errs.extend(validate_raw_extension(
            data,
            &child(path, "data"),
            ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH,
        ));
    }
    if let Some(network) = &device.network_data {
        let network_path = child(path, "networkData");
        if network.interface_name.len() > NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH {
            errs.push(FieldError::too_long(
                &child(&network_path, "interfaceName"),
                NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH,
            ));
        }
        if network.hardware_address.len() > NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH {
            errs.push(FieldError::too_long(
                &child(&network_path, "hardwareAddress"),
                NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH,
            ));
        }
        errs.extend(validate_set(
            &network.ips,
            Some(NETWORK_DEVICE_DATA_MAX_IPS),
            &child(&network_path, "ips"),
            |ip, p| validate_interface_address(ip, p),
            Clone::clone,
        ));
    }
    errs
}

fn validate_interface_address(address: &str, path: &str) -> Vec<FieldError> {
    let valid = address.split_once('/').is_some_and(|(ip, prefix)| {
        match (ip.parse::<std::net::IpAddr>(), prefix.parse::<u8>()) {
            (Ok(std::net::IpAddr::V4(_)), Ok(bits)) => bits <= 32,
            (Ok(std::net::IpAddr::V6(_)), Ok(bits)) => bits <= 128,
            _ => false,
        }
    });
    if valid {
        Vec::new()
    } else {
        vec![FieldError::invalid(
            path,
            address,
            "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
        )]
    }
}

fn validate_allocation_result(
    allocation: &AllocationResult,
    path: &str,
    names: &RequestNames,
) -> Vec<FieldError> {
    let devices = child(path, "devices");
    let mut errs = validate_slice(
        &allocation.devices.results,
        Some(ALLOCATION_RESULTS_MAX_SIZE),
        &child(&devices, "results"),
        |result, p| validate_device_request_allocation_result(result, p, names),
    );
    errs.extend(validate_slice(
        &allocation.devices.config,
        Some(2 * DEVICE_CONFIG_MAX_SIZE),
        &child(&devices, "config"),
        |config, p| {
            let mut errs = Vec::new();
            if let AllocationConfigSource::Other(source) = &config.source {
                if source.is_empty() {
                    errs.push(FieldError::required(&child(p, "source"), ""));
                } else {
                    errs.push(FieldError::not_supported(
                        &child(p, "source"),
                        source.as_str(),
                        &["FromClaim", "FromClass"],
                    ));
                }
            }
            errs.extend(validate_request_refs(
                &config.requests,
                &child(p, "requests"),
                names,
            ));
            errs.extend(validate_device_configuration(config.opaque.as_ref(), p));
            errs
        },
    ));
    if let Some(selector) = &allocation.node_selector {
        errs.extend(validate_node_selector(
            selector,
            &child(path, "nodeSelector"),
        ));
    }
    errs
}

fn validate_device_request_allocation_result(
    result: &DeviceRequestAllocationResult,
    path: &str,
    names: &RequestNames,
) -> Vec<FieldError> {
    let mut errs = validate_request_ref(&result.request, &child(path, "request"), names);
    errs.extend(validate_driver_name(&result.driver, &child(path, "driver")));
    errs.extend(validate_pool_name(&result.pool, &child(path, "pool")));
    errs.extend(validate_dns1123_label(
        &result.device,
        &child(path, "device"),
    ));
    errs.extend(validate_binding_parameters(
        &result.binding_conditions,
        &result.binding_failure_conditions,
        path,
    ));
    errs.extend(validate_tolerations(
        &result.tolerations,
        &child(path, "tolerations"),
    ));
    if let Some(share) = &result.share_id {
        errs.extend(validate_uid(share, &child(path, "shareID")));
    }
    errs.extend(validate_skip_node_operations(
        &result.skip_node_operations,
        &child(path, "skipNodeOperations"),
    ));
    errs
}

// ---------------------------------------------------------------------------------------------
// DeviceClass
// ---------------------------------------------------------------------------------------------

/// Validates a DeviceClass.
pub fn validate_device_class(class: &DeviceClass, cel: &dyn CelCompiler) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&class.metadata, false, name_is_dns_subdomain, "metadata");
    errs.extend(validate_slice(
        &class.spec.selectors,
        Some(DEVICE_SELECTORS_MAX_SIZE),
        "spec.selectors",
        |selector, p| validate_selector(selector, p, cel),
    ));
    errs.extend(validate_slice(
        &class.spec.config,
        Some(DEVICE_CONFIG_MAX_SIZE),
        "spec.config",
        |config, p| validate_device_configuration(config.opaque.as_ref(), p),
    ));
    if let Some(name) = &class.spec.extended_resource_name
        && !is_extended_resource_name(name)
    {
        errs.push(FieldError::invalid(
            "spec.extendedResourceName",
            name.as_str(),
            "must be a valid extended resource name",
        ));
    }
    errs
}

/// Upstream `IsExtendedResourceName`: not native (has a domain outside `kubernetes.io`), not
/// `requests.`-prefixed, and a qualified name once prefixed with `requests.`.
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}")).is_empty()
}

// ---------------------------------------------------------------------------------------------
// ResourceSlice
// ---------------------------------------------------------------------------------------------

/// Validates a ResourceSlice.
pub fn validate_resource_slice(slice: &ResourceSlice) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&slice.metadata, false, name_is_dns_subdomain, "metadata");
    errs.extend(validate_resource_slice_spec(&slice.spec, "spec"));
    errs
}

fn validate_node_name(name: &str, path: &str) -> Vec<FieldError> {
    is_dns1123_subdomain(name)
        .into_iter()
        .map(|m| FieldError::invalid(path, name, m))
        .collect()
}

fn validate_resource_slice_spec(spec: &ResourceSliceSpec, path: &str) -> Vec<FieldError> {
    let mut errs = validate_driver_name(&spec.driver, &child(path, "driver"));
    let pool = child(path, "pool");
    errs.extend(validate_pool_name(&spec.pool.name, &child(&pool, "name")));
    if spec.pool.resource_slice_count <= 0 {
        errs.push(FieldError::invalid(
            &child(&pool, "resourceSliceCount"),
            spec.pool.resource_slice_count,
            "must be greater than zero",
        ));
    }
    if spec.pool.generation < 0 {
        errs.push(FieldError::invalid(
            &child(&pool, "generation"),
            spec.pool.generation,
            "must be greater than or equal to zero",
        ));
    }

    let mut set_fields = Vec::new();
    if let Some(node_name) = &spec.node_name {
        if node_name.is_empty() {
            errs.push(FieldError::invalid(
                &child(path, "nodeName"),
                "",
                "must be either unset or set to a non-empty string",
            ));
        } else {
            set_fields.push("`nodeName`");
            errs.extend(validate_node_name(node_name, &child(path, "nodeName")));
        }
    }
    if let Some(selector) = &spec.node_selector {
        set_fields.push("`nodeSelector`");
        let selector_path = child(path, "nodeSelector");
        errs.extend(validate_node_selector(selector, &selector_path));
        if selector.node_selector_terms.len() != 1 {
            errs.push(FieldError::invalid(
                &child(&selector_path, "nodeSelectorTerms"),
                BadValue::Raw(format!("{} terms", selector.node_selector_terms.len())),
                "must have exactly one node selector term",
            ));
        }
    }
    for (field, value) in [
        ("allNodes", spec.all_nodes),
        ("perDeviceNodeSelection", spec.per_device_node_selection),
    ] {
        match value {
            Some(true) => set_fields.push(if field == "allNodes" {
                "`allNodes`"
            } else {
                "`perDeviceNodeSelection`"
            }),
            Some(false) => errs.push(FieldError::invalid(
                &child(path, field),
                false,
                "must be either unset or set to true",
            )),
            None => {}
        }
    }
    const NODE_SELECTION: &str = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
    match set_fields.len() {
        0 => errs.push(FieldError::required(path, NODE_SELECTION)),
        1 => {}
        _ => errs.push(FieldError::invalid(
            path,
            format!("{{{}}}", set_fields.join(", ")),
            format!("{NODE_SELECTION}, but multiple fields are set"),
        )),
    }

    if !spec.shared_counters.is_empty() && !spec.devices.is_empty() {
        errs.push(FieldError::invalid(
            path,
            "",
            "only one of `sharedCounters` or `devices` is allowed",
        ));
    }

    let advanced = spec.devices.iter().any(|d| {
        !d.taints.is_empty()
            || !d.consumes_counters.is_empty()
            || d.attributes.values().any(DeviceAttribute::is_list)
    });
    let max_devices = if advanced {
        RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
    } else {
        RESOURCE_SLICE_MAX_DEVICES
    };
    errs.extend(validate_set(
        &spec.devices,
        Some(max_devices),
        &child(path, "devices"),
        |device, p| validate_device(device, p, spec.per_device_node_selection == Some(true)),
        |device| device.name.clone(),
    ));
    errs.extend(validate_set(
        &spec.shared_counters,
        Some(RESOURCE_SLICE_MAX_COUNTER_SETS),
        &child(path, "sharedCounters"),
        |set, p| {
            let mut errs = Vec::new();
            if set.name.is_empty() {
                errs.push(FieldError::required(&child(p, "name"), ""));
            } else {
                errs.extend(validate_dns1123_label(&set.name, &child(p, "name")));
            }
            errs.extend(validate_counters(
                &set.counters,
                RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
                &child(p, "counters"),
            ));
            errs
        },
        |set| set.name.clone(),
    ));
    if let Some(name) = &spec.partition_type_attribute {
        errs.extend(validate_partition_type_attribute(spec, name, path));
    }
    errs.extend(validate_skip_node_operations(
        &spec.skip_node_operations,
        &child(path, "skipNodeOperations"),
    ));
    errs
}

fn validate_counters(
    counters: &BTreeMap<String, Counter>,
    max: usize,
    path: &str,
) -> Vec<FieldError> {
    if counters.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    if counters.len() > max {
        return vec![FieldError::too_many(path, counters.len(), max)];
    }
    let mut errs = Vec::new();
    for name in counters.keys() {
        errs.extend(validate_dns1123_label(name, path));
    }
    errs
}

fn validate_partition_type_attribute(
    spec: &ResourceSliceSpec,
    name: &str,
    path: &str,
) -> Vec<FieldError> {
    let attr_path = child(path, "partitionTypeAttribute");
    let mut errs = validate_fully_qualified_name(name, &attr_path);
    let consumes = spec.devices.iter().any(|d| !d.consumes_counters.is_empty());
    if !consumes {
        errs.push(FieldError::invalid(
            &attr_path,
            name,
            "may only be set on a slice which declares devices that consume counters",
        ));
        return errs;
    }
    if !errs.is_empty() {
        return errs;
    }
    let bare = name.strip_prefix(&format!("{}/", spec.driver));
    for (i, device) in spec.devices.iter().enumerate() {
        if device.consumes_counters.is_empty() {
            continue;
        }
        let device_attr_path = key(
            &child(&index(&child(path, "devices"), i), "attributes"),
            name,
        );
        let attribute = device
            .attributes
            .get(name)
            .or_else(|| bare.and_then(|b| device.attributes.get(b)));
        match attribute {
            None => errs.push(FieldError::required(
                &device_attr_path,
                "device consumes counters and `partitionTypeAttribute` names this attribute, so it must be set",
            )),
            Some(attribute) if attribute.string_value.is_none() => errs.push(FieldError::invalid(
                &device_attr_path,
                BadValue::Raw(serde_json::to_string(attribute).unwrap_or_default()),
                "must be a string value because `partitionTypeAttribute` names this attribute",
            )),
            Some(_) => {}
        }
    }
    errs
}

fn validate_skip_node_operations(ops: &[SkipNodeOperation], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, op) in ops.iter().enumerate() {
        if let SkipNodeOperation::Other(value) = op {
            errs.push(FieldError::not_supported(
                &index(path, i),
                value.as_str(),
                &["*", "NodePrepareResources", "NodeUnprepareResources"],
            ));
        }
        if !seen.insert(op.as_str()) {
            errs.push(FieldError::duplicate(&index(path, i), op.as_str()));
        }
    }
    if seen.contains("NodePrepareResources")
        && !seen.contains("NodeUnprepareResources")
        && !seen.contains("*")
    {
        let listed: Vec<String> = ops.iter().map(|o| format!("{:?}", o.as_str())).collect();
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(format!("[{}]", listed.join(", "))),
            "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped",
        ));
    }
    errs
}

fn validate_device(
    device: &Device,
    path: &str,
    per_device_node_selection: bool,
) -> Vec<FieldError> {
    let mut errs = validate_dns1123_label(&device.name, &child(path, "name"));
    let combined = device.attributes.len() + device.capacity.len();
    if combined > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE {
        errs.push(FieldError::invalid(
            path,
            combined,
            format!(
                "the total number of attributes and capacities must not exceed {RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}"
            ),
        ));
    }
    let values: usize = device
        .attributes
        .values()
        .map(|a| {
            if a.is_list() {
                a.value_count() - scalar_count(a)
            } else {
                1
            }
        })
        .sum();
    if values > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE {
        errs.push(FieldError::invalid(
            path,
            values,
            format!(
                "the total number of attribute values must not exceed {RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE}"
            ),
        ));
    }
    let attributes = child(path, "attributes");
    for (name, attribute) in &device.attributes {
        errs.extend(validate_qualified_name(name, &attributes));
        errs.extend(validate_device_attribute(
            attribute,
            &key(&attributes, &truncate_key(name, ATTRIBUTE_KEY_MAX)),
        ));
    }
    let capacity = child(path, "capacity");
    let multi = device.allow_multiple_allocations == Some(true);
    for (name, cap) in &device.capacity {
        errs.extend(validate_qualified_name(name, &capacity));
        let cap_path = key(&capacity, &truncate_key(name, ATTRIBUTE_KEY_MAX));
        if let Some(policy) = &cap.request_policy {
            let policy_path = child(&cap_path, "requestPolicy");
            if multi {
                errs.extend(validate_request_policy(&cap.value, policy, &policy_path));
            } else {
                errs.push(FieldError::forbidden(
                    &policy_path,
                    "allowMultipleAllocations must be true",
                ));
            }
        }
    }
    errs.extend(validate_slice(
        &device.taints,
        Some(DEVICE_TAINTS_MAX_LENGTH),
        &child(path, "taints"),
        validate_device_taint,
    ));
    errs.extend(validate_set(
        &device.consumes_counters,
        Some(RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE),
        &child(path, "consumesCounters"),
        |consumption, p| {
            let mut errs = Vec::new();
            if consumption.counter_set.is_empty() {
                errs.push(FieldError::required(&child(p, "counterSet"), ""));
            } else {
                errs.extend(validate_dns1123_label(
                    &consumption.counter_set,
                    &child(p, "counterSet"),
                ));
            }
            errs.extend(validate_counters(
                &consumption.counters,
                RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
                &child(p, "counters"),
            ));
            errs.extend(validate_set(
                &consumption.compatibility_groups,
                Some(DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE),
                &child(p, "compatibilityGroups"),
                |group, gp| validate_dns1123_label(group, gp),
                Clone::clone,
            ));
            errs
        },
        |consumption| consumption.counter_set.clone(),
    ));

    if per_device_node_selection {
        let mut set_fields = Vec::new();
        if let Some(name) = &device.node_name {
            if name.is_empty() {
                errs.push(FieldError::invalid(
                    &child(path, "nodeName"),
                    "",
                    "must not be empty",
                ));
            } else {
                set_fields.push("`nodeName`");
                errs.extend(validate_node_name(name, &child(path, "nodeName")));
            }
        }
        if let Some(selector) = &device.node_selector {
            set_fields.push("`nodeSelector`");
            errs.extend(validate_node_selector(
                selector,
                &child(path, "nodeSelector"),
            ));
        }
        match device.all_nodes {
            Some(true) => set_fields.push("`allNodes`"),
            Some(false) => errs.push(FieldError::invalid(
                &child(path, "allNodes"),
                false,
                "must be either unset or set to true",
            )),
            None => {}
        }
        const MSG: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";
        match set_fields.len() {
            0 => errs.push(FieldError::required(path, MSG)),
            1 => {}
            _ => errs.push(FieldError::invalid(
                path,
                format!("{{{}}}", set_fields.join(", ")),
                MSG,
            )),
        }
    } else if device.node_name.is_some()
        || device.node_selector.is_some()
        || device.all_nodes.is_some()
    {
        errs.push(FieldError::invalid(
            path,
            BadValue::Null,
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ));
    }
    errs.extend(validate_binding_parameters(
        &device.binding_conditions,
        &device.binding_failure_conditions,
        path,
    ));
    errs.extend(validate_node_allocatable_resources(
        &device.node_allocatable_resources,
        &device.capacity,
        &child(path, "nodeAllocatableResources"),
    ));
    errs
}

/// The number of scalar fields set.
fn scalar_count(attribute: &DeviceAttribute) -> usize {
    usize::from(attribute.int_value.is_some())
        + usize::from(attribute.bool_value.is_some())
        + usize::from(attribute.string_value.is_some())
        + usize::from(attribute.version_value.is_some())
}

fn validate_device_attribute(attribute: &DeviceAttribute, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut fields = scalar_count(attribute);
    if let Some(value) = &attribute.string_value {
        errs.extend(validate_attribute_string(value, &child(path, "string")));
    }
    if let Some(value) = &attribute.version_value {
        errs.extend(validate_attribute_version(value, &child(path, "version")));
    }
    fields += usize::from(!attribute.bool_values.is_empty())
        + usize::from(!attribute.int_values.is_empty())
        + usize::from(!attribute.string_values.is_empty())
        + usize::from(!attribute.version_values.is_empty());
    for (i, value) in attribute.string_values.iter().enumerate() {
        errs.extend(validate_attribute_string(
            value,
            &index(&child(path, "strings"), i),
        ));
    }
    for (i, value) in attribute.version_values.iter().enumerate() {
        errs.extend(validate_attribute_version(
            value,
            &index(&child(path, "versions"), i),
        ));
    }
    match fields {
        0 => errs.push(FieldError::invalid(
            path,
            "",
            "exactly one value must be specified",
        )),
        1 => {}
        _ => errs.push(FieldError::invalid(
            path,
            BadValue::Raw(serde_json::to_string(attribute).unwrap_or_default()),
            "exactly one value must be specified",
        )),
    }
    errs
}

fn validate_attribute_string(value: &str, path: &str) -> Vec<FieldError> {
    if value.len() > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH {
        vec![FieldError::too_long(
            path,
            DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH,
        )]
    } else {
        Vec::new()
    }
}

/// semver.org 2.0.0: `MAJOR.MINOR.PATCH[-pre][+build]`, numeric identifiers without leading zeros.
pub fn is_semver(value: &str) -> bool {
    fn numeric(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    }
    fn pre_release_part(s: &str) -> bool {
        !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && (numeric(s) || !s.bytes().all(|b| b.is_ascii_digit()))
    }
    fn build_part(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    }
    let (rest, build) = match value.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (value, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| numeric(p))
        && pre.is_none_or(|p| p.split('.').all(pre_release_part))
        && build.is_none_or(|b| b.split('.').all(build_part))
}

fn validate_attribute_version(value: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !is_semver(value) {
        errs.push(FieldError::invalid(
            path,
            value,
            "must be a string compatible with semver.org spec 2.0.0",
        ));
    }
    errs.extend(validate_attribute_string(value, path));
    errs
}

fn validate_request_policy(
    capacity: &Quantity,
    policy: &CapacityRequestPolicy,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !policy.valid_values.is_empty() && policy.valid_range.is_some() {
        errs.push(FieldError::forbidden(
            path,
            "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time",
        ));
        return errs;
    }
    if !policy.valid_values.is_empty() {
        let Some(default) = &policy.default else {
            errs.push(FieldError::required(
                &child(path, "default"),
                "required when validValues is defined",
            ));
            return errs;
        };
        let values_path = child(path, "validValues");
        for i in 1..policy.valid_values.len() {
            if policy.valid_values[i - 1] > policy.valid_values[i] {
                errs.push(FieldError::invalid(
                    &index(&values_path, i),
                    policy.valid_values[i].to_string(),
                    "values must be sorted in ascending order",
                ));
            }
        }
        let mut found_default = false;
        errs.extend(validate_set(
            &policy.valid_values,
            Some(CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS),
            &values_path,
            |option, p| {
                if option == default {
                    found_default = true;
                }
                if option > capacity {
                    vec![FieldError::invalid(
                        p,
                        option.to_string(),
                        format!("option is larger than capacity value: {capacity}"),
                    )]
                } else {
                    Vec::new()
                }
            },
            |option| option.value().to_string(),
        ));
        if !found_default
            && policy.valid_values.len() <= CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS
        {
            errs.push(FieldError::invalid(
                &values_path,
                default.to_string(),
                "default value is not valid according to the requestPolicy",
            ));
        }
    } else if let Some(range) = &policy.valid_range {
        let Some(default) = &policy.default else {
            errs.push(FieldError::required(
                &child(path, "default"),
                "required when validRange is defined",
            ));
            return errs;
        };
        errs.extend(validate_request_policy_range(
            default,
            capacity,
            range,
            &child(path, "validRange"),
        ));
    }
    errs
}

fn validate_request_policy_range(
    default: &Quantity,
    capacity: &Quantity,
    range: &CapacityRequestPolicyRange,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(min) = &range.min else {
        errs.push(FieldError::required(
            &child(path, "min"),
            "required when validRange is defined",
        ));
        return errs;
    };
    if min > capacity {
        errs.push(FieldError::invalid(
            &child(path, "min"),
            min.to_string(),
            format!("min is larger than capacity value: {capacity}"),
        ));
    }
    if default < min {
        errs.push(FieldError::invalid(
            &child(path, "default"),
            default.to_string(),
            format!("default is less than min: {min}"),
        ));
    }
    if let Some(max) = &range.max {
        if min > max {
            errs.push(FieldError::invalid(
                &child(path, "max"),
                min.to_string(),
                format!("min is larger than max: {max}"),
            ));
        }
        if max > capacity {
            errs.push(FieldError::invalid(
                &child(path, "max"),
                max.to_string(),
                format!("max is larger than capacity value: {capacity}"),
            ));
        }
        if default > max {
            errs.push(FieldError::invalid(
                &child(path, "default"),
                default.to_string(),
                format!("default is more than max: {max}"),
            ));
        }
    }
    if let Some(step) = &range.step {
        if step.sign() <= 0 {
            errs.push(FieldError::invalid(
                &child(path, "step"),
                step.to_string(),
                "must be greater than zero",
            ));
            return errs;
        }
        if let Some(added) = min.checked_add(step)
            && &added > capacity
        {
            errs.push(FieldError::invalid(
                &child(path, "step"),
                step.to_string(),
                format!("one step {added} is larger than capacity value: {capacity}"),
            ));
        }
        let mut unsafe_value = false;
        for (name, q) in [
            ("default", Some(default)),
            ("min", Some(min)),
            ("max", range.max.as_ref()),
            ("step", Some(step)),
        ] {
            if let Some(q) = q {
                if q.sign() < 0 {
                    errs.push(FieldError::invalid(
                        &child(path, name),
                        q.to_string(),
                        "must be greater than or equal to 0",
                    ));
                    unsafe_value = true;
                } else if q.as_i64().is_none() && q.value() == i64::MAX {
                    errs.push(FieldError::invalid(
                        &child(path, name),
                        q.to_string(),
                        "must not be larger than 9223372036854775807",
                    ));
                    unsafe_value = true;
                }
            }
        }
        if !unsafe_value {
            let step_path = child(path, "step");
            errs.extend(validate_step(default, min, step, &step_path));
            if let Some(max) = &range.max {
                errs.extend(validate_step(max, min, step, &step_path));
            }
        }
    }
    errs
}

fn validate_step(value: &Quantity, min: &Quantity, step: &Quantity, path: &str) -> Vec<FieldError> {
    let step_value = step.value();
    if step_value == 0 {
        return Vec::new();
    }
    if (value.value() - min.value()) % step_value != 0 {
        vec![FieldError::invalid(
            path,
            value.to_string(),
            format!("value is not a multiple of a given step ({step}) from ({min})"),
        )]
    } else {
        Vec::new()
    }
}

fn validate_binding_parameters(
    conditions: &[String],
    failure: &[String],
    path: &str,
) -> Vec<FieldError> {
    let conditions_path = child(path, "bindingConditions");
    let failure_path = child(path, "bindingFailureConditions");
    let mut errs = validate_slice(
        conditions,
        Some(BINDING_CONDITIONS_MAX_SIZE),
        &conditions_path,
        |c, p| validate_label_name(c, p),
    );
    errs.extend(validate_slice(
        failure,
        Some(BINDING_FAILURE_CONDITIONS_MAX_SIZE),
        &failure_path,
        |c, p| validate_label_name(c, p),
    ));
    let mut seen = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        if !seen.insert(condition) {
            errs.push(FieldError::duplicate(
                &index(&conditions_path, i),
                condition,
            ));
        }
    }
    let mut seen_failure = BTreeSet::new();
    for (i, condition) in failure.iter().enumerate() {
        if !seen_failure.insert(condition) {
            errs.push(FieldError::duplicate(&index(&failure_path, i), condition));
        }
        if conditions.contains(condition) {
            errs.push(FieldError::invalid(
                &index(&failure_path, i),
                condition,
                "bindingFailureConditions must not overlap with bindingConditions",
            ));
        }
    }
    if conditions.is_empty() && !failure.is_empty() {
        errs.push(FieldError::invalid(
            &conditions_path,
            BadValue::Raw("[]".into()),
            "bindingConditions are required to use bindingFailureConditions",
        ));
    }
    if failure.is_empty() && !conditions.is_empty() {
        errs.push(FieldError::invalid(
            &failure_path,
            BadValue::Raw("[]".into()),
            "bindingFailureConditions are required to use bindingConditions",
        ));
    }
    errs
}

/// Node-allocatable resource names: standard names and hugepages.
fn is_node_allocatable_resource_name(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

fn validate_node_allocatable_resources(
    resources: &BTreeMap<String, NodeAllocatableResource>,
    capacity: &BTreeMap<String, DeviceCapacity>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (name, resource) in resources {
        let key_path = key(path, name);
        if !is_node_allocatable_resource_name(name) {
            errs.push(FieldError::invalid(
                &key_path,
                name.as_str(),
                "must be a node allocatable resource name",
            ));
        }
        if resource.mapping.is_none() && resource.overhead.is_none() {
            errs.push(FieldError::required(
                &key_path,
                "at least one of mapping or overhead must be set",
            ));
        }
        if let Some(mapping) = &resource.mapping {
            let mapping_path = child(&key_path, "mapping");
            if let Some(capacity_key) = &mapping.capacity_key {
                if capacity_key.is_empty() {
                    errs.push(FieldError::invalid(
                        &child(&mapping_path, "capacityKey"),
                        "",
                        "capacityKey must not be an empty string",
                    ));
                } else if !capacity.contains_key(capacity_key) {
                    errs.push(FieldError::not_found(
                        &child(&mapping_path, "capacityKey"),
                        capacity_key.as_str(),
                    ));
                }
                match &mapping.capacity_multiplier {
                    None => errs.push(FieldError::required(
                        &child(&mapping_path, "capacityMultiplier"),
                        "capacityMultiplier is required when capacityKey is set",
                    )),
                    Some(m) if m.sign() <= 0 => errs.push(FieldError::invalid(
                        &child(&mapping_path, "capacityMultiplier"),
                        m.to_string(),
                        "must be positive",
                    )),
                    Some(_) => {}
                }
            }
            if let Some(m) = &mapping.device_multiplier
                && m.sign() <= 0
            {
                errs.push(FieldError::invalid(
                    &child(&mapping_path, "deviceMultiplier"),
                    m.to_string(),
                    "must be positive",
                ));
            }
            if mapping.capacity_multiplier.is_some() && mapping.capacity_key.is_none() {
                errs.push(FieldError::required(
                    &child(&mapping_path, "capacityKey"),
                    "capacityKey is required when capacityMultiplier is set",
                ));
            }
        }
        if let Some(overhead) = &resource.overhead {
            let overhead_path = child(&key_path, "overhead");
            if overhead.per_pod.is_none() && overhead.per_container.is_none() {
                errs.push(FieldError::invalid(
                    &overhead_path,
                    "",
                    "at least one of perPod or perContainer must be set",
                ));
            }
            for (field, value) in [
                ("perPod", &overhead.per_pod),
                ("perContainer", &overhead.per_container),
            ] {
                if let Some(q) = value
                    && q.sign() < 0
                {
                    errs.push(FieldError::invalid(
                        &child(&overhead_path, field),
                        q.to_string(),
                        "must be non-negative",
                    ));
                }
            }
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// DeviceTaintRule, ResourcePoolStatusRequest
// ---------------------------------------------------------------------------------------------

/// Validates a DeviceTaintRule, including the spec's extension selectors (`deviceClassName`
/// and CEL `selectors`).
pub fn validate_device_taint_rule(
    rule: &DeviceTaintRule,
    cel: &dyn CelCompiler,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&rule.metadata, false, name_is_dns_subdomain, "metadata");
    if let Some(selector) = &rule.spec.device_selector {
        let path = "spec.deviceSelector";
        if let Some(class) = &selector.device_class_name {
            errs.extend(validate_device_class_name(
                class,
                &child(path, "deviceClassName"),
            ));
        }
        if let Some(driver) = &selector.driver {
            errs.extend(validate_driver_name(driver, &child(path, "driver")));
        }
        if let Some(pool) = &selector.pool {
            errs.extend(validate_pool_name(pool, &child(path, "pool")));
        }
        if let Some(device) = &selector.device {
            errs.extend(validate_dns1123_label(device, &child(path, "device")));
        }
        errs.extend(validate_selectors(
            &selector.selectors,
            &child(path, "selectors"),
            cel,
        ));
    }
    errs.extend(validate_device_taint(&rule.spec.taint, "spec.taint"));
    errs.extend(crate::meta::validate_conditions(
        &rule.status.conditions,
        "status.conditions",
    ));
    if rule.status.conditions.len() > DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS {
        errs.push(FieldError::too_many(
            "status.conditions",
            rule.status.conditions.len(),
            DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS,
        ));
    }
    errs
}

/// Validates a ResourcePoolStatusRequest.
pub fn validate_resource_pool_status_request(
    request: &ResourcePoolStatusRequest,
) -> Vec<FieldError> {
    let mut errs =
        validate_object_meta(&request.metadata, false, name_is_dns_subdomain, "metadata");
    let spec = &request.spec;
    if spec.driver.is_empty() {
        errs.push(FieldError::required("spec.driver", ""));
    } else {
        errs.extend(validate_dns1123_subdomain(&spec.driver, "spec.driver"));
    }
    if let Some(pool) = &spec.pool_name {
        errs.extend(validate_pool_name(pool, "spec.poolName"));
    }
    if let Some(limit) = spec.limit {
        if limit < 1 {
            errs.push(FieldError::invalid(
                "spec.limit",
                i64::from(limit),
                "must be greater than or equal to 1",
            ));
        } else if limit > RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX {
            errs.push(FieldError::invalid(
                "spec.limit",
                i64::from(limit),
                format!("must be less than or equal to {RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX}"),
            ));
        }
    }
    if let Some(attribute) = &spec.default_partition_type_attribute {
        errs.extend(validate_fully_qualified_name(
            attribute,
            "spec.defaultPartitionTypeAttribute",
        ));
    }
    errs
}
