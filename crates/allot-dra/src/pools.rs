//! Gathering the resource pools visible from a node, as upstream's `GatherPools`, in
//! lexicographic order.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use allot_api::core::v1::Node;
use allot_api::resource::v1::{CounterSet, ResourceSlice};

use crate::nodes::node_matches;
use crate::{Error, Features};

/// One resource pool as the allocator sees it.
#[derive(Debug)]
pub(crate) struct Pool<'a> {
    pub driver: &'a str,
    pub name: &'a str,
    /// Not all slices of the current generation were published yet.
    pub incomplete: bool,
    /// Why devices of this pool cannot be used (duplicate names, bad counter references).
    pub invalid: Option<String>,
    /// Slices with devices that target the node, sorted by name.
    pub slices: Vec<&'a ResourceSlice>,
    /// Slices of the same generation with devices that do not target the node; they matter for
    /// counters consumed by allocated devices.
    pub slices_not_targeting: Vec<&'a ResourceSlice>,
    /// Counter sets by name.
    pub counter_sets: BTreeMap<&'a str, &'a CounterSet>,
}

impl Pool<'_> {
    /// The pool's id as upstream prints it: `driver/pool`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.driver, self.name)
    }

    fn has_binding_conditions(&self) -> bool {
        self.slices.iter().any(|slice| {
            slice
                .spec
                .devices
                .iter()
                .any(|device| !device.binding_conditions.is_empty())
        })
    }
}

type PoolKey<'a> = (&'a str, &'a str);

/// Collects the pools that provide devices accessible from `node`.
///
/// Outdated slices are ignored. Pools come out sorted by driver and pool name, those with
/// binding conditions last; slices within a pool are sorted by name (input position breaks
/// ties).
pub(crate) fn gather_pools<'a>(
    slices: &'a [&'a ResourceSlice],
    node: &Node,
    features: &Features,
) -> Result<Vec<Pool<'a>>, Error> {
    // Per pool: the slices of the newest generation seen so far.
    let mut pools: HashMap<PoolKey<'a>, Vec<&'a ResourceSlice>, crate::cel::FxBuild> =
        HashMap::default();
    for &slice in slices {
        let spec = &slice.spec;
        if !features.partitionable_devices
            && (spec.per_device_node_selection.is_some() || !spec.shared_counters.is_empty())
        {
            continue;
        }
        let relevant = if !spec.shared_counters.is_empty() {
            // Slices with shared counters are needed regardless of their node selection.
            true
        } else if spec
            .node_name
            .as_deref()
            .is_some_and(|name| !name.is_empty())
            || spec.all_nodes == Some(true)
            || spec.node_selector.is_some()
        {
            node_matches(
                node,
                spec.node_name.as_deref(),
                spec.all_nodes == Some(true),
                spec.node_selector.as_ref(),
            )
            .map_err(|message| Error::NodeSelection {
                what: format!("slice {}", slice.metadata.name),
                message,
            })?
        } else if spec.per_device_node_selection == Some(true) {
            let mut any = false;
            for device in &spec.devices {
                let matched = node_matches(
                    node,
                    device.node_name.as_deref(),
                    device.all_nodes == Some(true),
                    device.node_selector.as_ref(),
                )
                .map_err(|message| Error::NodeSelection {
                    what: format!("device {} in slice {}", device.name, slice.metadata.name),
                    message,
                })?;
                if matched {
                    any = true;
                    break;
                }
            }
            any
        } else {
            // Some unknown future way of selecting nodes: skip, other pools may still work.
            false
        };
        if relevant {
            add_slice(&mut pools, slice);
        }
    }

    let mut result = Vec::with_capacity(pools.len());
    for ((driver, name), mut pool_slices) in pools {
        pool_slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let first = pool_slices[0];
        let expected = first.spec.pool.resource_slice_count;
        let generation = first.spec.pool.generation;
        if pool_slices.len() as i64 == expected {
            result.push(build_pool(driver, name, pool_slices, None, features));
            continue;
        }
        // Some slices may have been filtered out because they are not for this node; look at
        // the whole pool before calling it incomplete.
        let mut all_slices = Vec::new();
        let mut obsolete = false;
        for &slice in slices {
            if slice.spec.driver != driver || slice.spec.pool.name != name {
                continue;
            }
            match slice.spec.pool.generation.cmp(&generation) {
                std::cmp::Ordering::Equal => all_slices.push(slice),
                std::cmp::Ordering::Greater => {
                    obsolete = true;
                    break;
                }
                std::cmp::Ordering::Less => {}
            }
        }
        if obsolete {
            // The driver is replacing this generation; ignore the old device information.
            continue;
        }
        if all_slices.len() as i64 != expected {
            result.push(Pool {
                driver,
                name,
                incomplete: true,
                invalid: None,
                slices: Vec::new(),
                slices_not_targeting: Vec::new(),
                counter_sets: BTreeMap::new(),
            });
            continue;
        }
        result.push(build_pool(
            driver,
            name,
            pool_slices,
            Some(all_slices),
            features,
        ));
    }
    // Lexicographic order; pools whose devices have binding conditions go last.
    result.sort_by(|a, b| {
        a.has_binding_conditions()
            .cmp(&b.has_binding_conditions())
            .then_with(|| a.driver.cmp(b.driver))
            .then_with(|| a.name.cmp(b.name))
    });
    Ok(result)
}

fn add_slice<'a>(
    pools: &mut HashMap<PoolKey<'a>, Vec<&'a ResourceSlice>, crate::cel::FxBuild>,
    slice: &'a ResourceSlice,
) {
    let key = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
    let entry = pools.entry(key).or_default();
    match entry
        .first()
        .map(|first| slice.spec.pool.generation.cmp(&first.spec.pool.generation))
    {
        None | Some(std::cmp::Ordering::Equal) => entry.push(slice),
        Some(std::cmp::Ordering::Greater) => {
            entry.clear();
            entry.push(slice);
        }
        Some(std::cmp::Ordering::Less) => {}
    }
}

fn invalid_pool<'a>(driver: &'a str, name: &'a str, reason: String) -> Pool<'a> {
    Pool {
        driver,
        name,
        incomplete: false,
        invalid: Some(reason),
        slices: Vec::new(),
        slices_not_targeting: Vec::new(),
        counter_sets: BTreeMap::new(),
    }
}

fn build_pool<'a>(
    driver: &'a str,
    name: &'a str,
    slices: Vec<&'a ResourceSlice>,
    all_slices: Option<Vec<&'a ResourceSlice>>,
    features: &Features,
) -> Pool<'a> {
    let (device_slices, counter_slices): (Vec<_>, Vec<_>) = if features.partitionable_devices {
        slices
            .iter()
            .partition(|slice| slice.spec.shared_counters.is_empty())
    } else {
        (slices.clone(), Vec::new())
    };
    if let Some(duplicate) = first_duplicate_name(&device_slices) {
        return invalid_pool(driver, name, format!("duplicate device name {duplicate}"));
    }
    if !features.partitionable_devices {
        return Pool {
            driver,
            name,
            incomplete: false,
            invalid: None,
            slices: device_slices,
            slices_not_targeting: Vec::new(),
            counter_sets: BTreeMap::new(),
        };
    }
    let mut counter_sets = BTreeMap::new();
    for slice in &counter_slices {
        for set in &slice.spec.shared_counters {
            if counter_sets.insert(set.name.as_str(), set).is_some() {
                return invalid_pool(
                    driver,
                    name,
                    format!("duplicate counter set name {}", set.name),
                );
            }
        }
    }
    if let Err(reason) = validate_counter_consumption(&counter_sets, &slices) {
        return invalid_pool(driver, name, reason);
    }
    let mut slices_not_targeting = Vec::new();
    if let Some(all_slices) = all_slices
        && all_slices.len() != slices.len()
    {
        let targeting: BTreeSet<&str> = slices
            .iter()
            .map(|slice| slice.metadata.name.as_str())
            .collect();
        slices_not_targeting = all_slices
            .into_iter()
            .filter(|slice| !targeting.contains(slice.metadata.name.as_str()))
            .collect();
        if let Err(reason) = validate_counter_consumption(&counter_sets, &slices_not_targeting) {
            return invalid_pool(driver, name, reason);
        }
    }
    Pool {
        driver,
        name,
        incomplete: false,
        invalid: None,
        slices: device_slices,
        slices_not_targeting,
        counter_sets,
    }
}

/// The first device name (in slice order) that an earlier device of the pool already has.
///
/// Pools almost never have one, so the common case is proved cheaply: the names' 64-bit hashes,
/// sorted, have no two equal (then no two names are equal). Only when two hashes are equal
/// does a set of the names themselves find the duplicate.
fn first_duplicate_name<'a>(slices: &[&'a ResourceSlice]) -> Option<&'a str> {
    use std::hash::BuildHasher;
    let build = crate::cel::FxBuild::default();
    let mut hashes: Vec<u64> = slices
        .iter()
        .flat_map(|slice| &slice.spec.devices)
        .map(|device| build.hash_one(device.name.as_str()))
        .collect();
    hashes.sort_unstable();
    if !hashes.windows(2).any(|pair| pair[0] == pair[1]) {
        return None;
    }
    let mut names: HashSet<&str, crate::cel::FxBuild> = HashSet::default();
    slices
        .iter()
        .flat_map(|slice| &slice.spec.devices)
        .map(|device| device.name.as_str())
        .find(|name| !names.insert(name))
}

fn validate_counter_consumption(
    counter_sets: &BTreeMap<&str, &CounterSet>,
    slices: &[&ResourceSlice],
) -> Result<(), String> {
    for slice in slices {
        for device in &slice.spec.devices {
            for consumption in &device.consumes_counters {
                let Some(set) = counter_sets.get(consumption.counter_set.as_str()) else {
                    return Err(format!("counter set {} not found", consumption.counter_set));
                };
                for counter in consumption.counters.keys() {
                    if !set.counters.contains_key(counter) {
                        return Err(format!(
                            "counter {counter} not found in counter set {}",
                            set.name
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::resource::v1::Device;

    fn slice(names: &[&str]) -> ResourceSlice {
        let mut slice = ResourceSlice::default();
        slice.spec.devices = names
            .iter()
            .map(|name| Device {
                name: name.to_string(),
                ..Default::default()
            })
            .collect();
        slice
    }

    #[test]
    fn first_duplicate_name_is_found_across_slices_in_order() {
        let (a, b) = (
            slice(&["gpu-0", "gpu-1", "gpu-2"]),
            slice(&["gpu-3", "gpu-1"]),
        );
        assert_eq!(first_duplicate_name(&[&a]), None);
        assert_eq!(first_duplicate_name(&[&a, &b]), Some("gpu-1"));
        let c = slice(&["x", "y", "y", "x"]);
        assert_eq!(first_duplicate_name(&[&c]), Some("y"));
        assert_eq!(first_duplicate_name(&[]), None);
    }
}
