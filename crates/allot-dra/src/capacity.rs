//! Consumable capacity: how much of each device capacity a request consumes, and whether it
//! still fits (`DRAConsumableCapacity`).

use std::collections::BTreeMap;

use allot_api::resource::v1::{
    CapacityRequestPolicy, CapacityRequestPolicyRange, CapacityRequirements, Device,
};
use allot_quantity::{Format, Quantity};

/// Consumed amounts per capacity, keyed by the name as the device publishes it.
pub(crate) type Consumed = BTreeMap<String, Quantity>;

/// Why a capacity request could not be evaluated at all (as opposed to "does not fit").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CapacityError {
    /// The request (or its rounding) leaves the range the policy arithmetic can represent.
    NotRepresentable(String),
    /// One capacity requested both with and without the driver domain.
    RequestedTwice(String),
}

fn qualify(name: &str, driver: &str) -> String {
    if name.contains('/') {
        name.to_string()
    } else {
        format!("{driver}/{name}")
    }
}

/// Maps each requested capacity to the device's published name for it; `Ok(None)` when the
/// device lacks one of them.
fn resolve_requests<'r>(
    request: Option<&'r CapacityRequirements>,
    device: &Device,
    driver: &str,
) -> Result<Option<BTreeMap<String, &'r Quantity>>, CapacityError> {
    let mut resolved = BTreeMap::new();
    let Some(request) = request else {
        return Ok(Some(resolved));
    };
    for (name, value) in &request.requests {
        let wanted = qualify(name, driver);
        let published = if device.capacity.contains_key(name) {
            Some(name.clone())
        } else {
            device
                .capacity
                .keys()
                .find(|key| qualify(key, driver) == wanted)
                .cloned()
        };
        let Some(published) = published else {
            return Ok(None);
        };
        if resolved.insert(published, value).is_some() {
            return Err(CapacityError::RequestedTwice(name.clone()));
        }
    }
    Ok(Some(resolved))
}

/// What a request consumes of every capacity of `device`, or `Ok(None)` when the device does
/// not have a requested capacity or a policy rejects the amount. Checking that it still fits
/// is [`fits`].
pub(crate) fn consumption(
    request: Option<&CapacityRequirements>,
    device: &Device,
    driver: &str,
) -> Result<Option<Consumed>, CapacityError> {
    let Some(requested) = resolve_requests(request, device, driver)? else {
        return Ok(None);
    };
    let mut consumed = Consumed::new();
    for (name, capacity) in &device.capacity {
        let amount = consumed_amount(
            requested.get(name).copied(),
            &capacity.value,
            capacity.request_policy.as_ref(),
        )
        .map_err(|()| CapacityError::NotRepresentable(name.clone()))?;
        consumed.insert(name.clone(), amount);
    }
    for (name, capacity) in &device.capacity {
        if let Some(amount) = consumed.get(name)
            && violates_policy(amount, capacity.request_policy.as_ref())
        {
            return Ok(None);
        }
    }
    Ok(Some(consumed))
}

/// Whether `consumed` on top of what is already used (`used`) stays within each capacity.
pub(crate) fn fits(consumed: &Consumed, used: Option<&Consumed>, device: &Device) -> bool {
    // Amounts are only added up (and cloned) when both sides have one.
    device.capacity.iter().all(|(name, capacity)| {
        match (consumed.get(name), used.and_then(|used| used.get(name))) {
            (Some(mine), Some(used)) => mine.clone() + used <= capacity.value,
            (Some(amount), None) | (None, Some(amount)) => *amount <= capacity.value,
            (None, None) => Quantity::zero() <= capacity.value,
        }
    })
}

fn consumed_amount(
    requested: Option<&Quantity>,
    total: &Quantity,
    policy: Option<&CapacityRequestPolicy>,
) -> Result<Quantity, ()> {
    let Some(requested) = requested else {
        return Ok(policy
            .and_then(|policy| policy.default.clone())
            .unwrap_or_else(|| total.clone()));
    };
    let Some(policy) = policy else {
        return Ok(requested.clone());
    };
    if let Some(range) = &policy.valid_range
        && let Some(min) = &range.min
    {
        return round_up_range(requested, min, range);
    }
    if !policy.valid_values.is_empty() {
        return Ok(policy
            .valid_values
            .iter()
            .find(|value| requested <= *value)
            .cloned()
            .unwrap_or_else(|| requested.clone()));
    }
    Ok(requested.clone())
}

/// Rounds up to `min + n·step`; an error when that leaves the `i64` range.
fn round_up_range(
    requested: &Quantity,
    min: &Quantity,
    range: &CapacityRequestPolicyRange,
) -> Result<Quantity, ()> {
    if requested < min {
        return Ok(min.clone());
    }
    let Some(step) = &range.step else {
        return Ok(requested.clone());
    };
    let (scale, format) = if step.is_integer() && min.is_integer() && requested.is_integer() {
        (0, step.format())
    } else {
        (-3, step.format())
    };
    let as_scaled = |q: &Quantity| -> Result<i128, ()> {
        let v = q.scaled_value(scale);
        if v == i64::MAX || v == i64::MIN {
            Err(())
        } else {
            Ok(i128::from(v))
        }
    };
    let req = as_scaled(requested)?;
    let step_v = as_scaled(step)?;
    let min_v = as_scaled(min)?;
    if step_v <= 0 {
        return Ok(requested.clone());
    }
    let added = req - min_v;
    let mut n = added / step_v;
    if added % step_v != 0 {
        n += 1;
    }
    let value = min_v + step_v * n;
    let value = i64::try_from(value).map_err(|_| ())?;
    if value == i64::MAX {
        return Err(());
    }
    Ok(if scale == 0 {
        Quantity::from_i64(value, format)
    } else {
        Quantity::from_milli(value, format)
    })
}

fn violates_policy(amount: &Quantity, policy: Option<&CapacityRequestPolicy>) -> bool {
    let Some(policy) = policy else {
        return false;
    };
    if policy.default.as_ref() == Some(amount) {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if let Some(max) = &range.max
            && amount > max
        {
            return true;
        }
        if let (Some(step), Some(min)) = (&range.step, &range.min) {
            let scale = if step.is_integer() && min.is_integer() && amount.is_integer() {
                0
            } else {
                -3
            };
            let step_v = i128::from(step.scaled_value(scale));
            let min_v = i128::from(min.scaled_value(scale));
            let amount_v = i128::from(amount.scaled_value(scale));
            if step_v > 0 && (amount_v - min_v) % step_v != 0 {
                return true;
            }
        }
        return false;
    }
    if !policy.valid_values.is_empty() {
        return !policy.valid_values.iter().any(|value| value == amount);
    }
    false
}

/// Adds `consumed` into `into`.
pub(crate) fn add_into(into: &mut Consumed, consumed: &Consumed) {
    for (name, amount) in consumed {
        match into.get_mut(name) {
            Some(total) => *total += amount,
            None => {
                into.insert(name.clone(), amount.clone());
            }
        }
    }
}

/// Subtracts `consumed` from `from`; returns whether everything left is zero.
pub(crate) fn sub_from(from: &mut Consumed, consumed: &Consumed) -> bool {
    for (name, amount) in consumed {
        if let Some(total) = from.get_mut(name) {
            *total -= amount;
        }
    }
    from.values().all(Quantity::is_zero)
}

/// A plain integer quantity (used for display in explanations).
#[allow(dead_code)]
pub(crate) fn int(value: i64) -> Quantity {
    Quantity::from_i64(value, Format::DecimalSI)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        text.parse().unwrap()
    }

    fn range(min: &str, step: Option<&str>) -> CapacityRequestPolicyRange {
        CapacityRequestPolicyRange {
            min: Some(q(min)),
            max: None,
            step: step.map(q),
        }
    }

    #[test]
    fn range_rounds_up_to_the_next_step() {
        assert_eq!(
            round_up_range(&q("5Gi"), &q("1Gi"), &range("1Gi", Some("2Gi"))).unwrap(),
            q("5Gi")
        );
        assert_eq!(
            round_up_range(&q("4Gi"), &q("1Gi"), &range("1Gi", Some("2Gi"))).unwrap(),
            q("5Gi")
        );
        assert_eq!(
            round_up_range(&q("1"), &q("2"), &range("2", Some("2"))).unwrap(),
            q("2")
        );
        assert!(
            round_up_range(&q("9223372036854775807"), &q("0"), &range("0", Some("2"))).is_err()
        );
    }

    #[test]
    fn policy_checks_step_and_max() {
        let policy = CapacityRequestPolicy {
            default: Some(q("1Gi")),
            valid_values: vec![],
            valid_range: Some(CapacityRequestPolicyRange {
                min: Some(q("1Gi")),
                max: Some(q("4Gi")),
                step: Some(q("1Gi")),
            }),
        };
        assert!(!violates_policy(&q("2Gi"), Some(&policy)));
        assert!(violates_policy(&q("5Gi"), Some(&policy)));
        assert!(violates_policy(&q("1536Mi"), Some(&policy)));
    }
}
