//! Compatibility groups (`DRADeviceCompatibilityGroups`): devices drawing from the same counter
//! set may be allocated together only if their groups on that set intersect.
//!
//! A device that declares no groups on a counter set only goes together with other devices
//! that declare none there, so the running state keeps "every member declared no groups" apart
//! from "the intersection of the members' groups is empty".

/// The running state of one counter set: what the devices placed on it so far allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Groups {
    /// Every device placed so far declared no groups.
    NoneDeclared,
    /// The intersection of the (non-empty) group lists of the devices placed so far; sorted.
    Common(Vec<String>),
}

impl Groups {
    /// The state after the first device, which declares `groups` (sorted, deduplicated).
    pub(crate) fn first(groups: &[String]) -> Self {
        if groups.is_empty() {
            Groups::NoneDeclared
        } else {
            Groups::Common(groups.to_vec())
        }
    }

    /// Whether a device declaring `groups` may join.
    pub(crate) fn admits(&self, groups: &[String]) -> bool {
        match self {
            Groups::NoneDeclared => groups.is_empty(),
            Groups::Common(common) => common.iter().any(|group| groups.contains(group)),
        }
    }

    /// The state after a device declaring `groups` joined (which [`Groups::admits`] accepted).
    pub(crate) fn join(&self, groups: &[String]) -> Self {
        match self {
            Groups::NoneDeclared => Groups::NoneDeclared,
            Groups::Common(_) if groups.is_empty() => self.clone(),
            Groups::Common(common) => Groups::Common(
                common
                    .iter()
                    .filter(|group| groups.contains(group))
                    .cloned()
                    .collect(),
            ),
        }
    }

    /// Whether some member declared groups (the state the gate-off skip protects).
    pub(crate) fn declared(&self) -> bool {
        matches!(self, Groups::Common(_))
    }
}

/// Folds a device into an optional state (`None`: no member yet).
pub(crate) fn fold(state: Option<&Groups>, groups: &[String]) -> Groups {
    match state {
        None => Groups::first(groups),
        Some(state) => state.join(groups),
    }
}

/// Whether a device may join an optional state.
pub(crate) fn admits(state: Option<&Groups>, groups: &[String]) -> bool {
    state.is_none_or(|state| state.admits(groups))
}

/// A device's groups per counter set it consumes from: sorted, without duplicates.
pub(crate) fn device_groups(
    device: &allot_api::resource::v1::Device,
) -> Vec<(String, Vec<String>)> {
    device
        .consumes_counters
        .iter()
        .map(|consumption| {
            let mut groups = consumption.compatibility_groups.clone();
            groups.sort();
            groups.dedup();
            (consumption.counter_set.clone(), groups)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(groups: &[&str]) -> Vec<String> {
        groups.iter().map(|g| g.to_string()).collect()
    }

    #[test]
    fn groups_must_intersect_across_all_members() {
        let state = fold(None, &g(&["a", "b"]));
        assert!(admits(Some(&state), &g(&["b", "c"])));
        let state = fold(Some(&state), &g(&["b", "c"]));
        assert_eq!(state, Groups::Common(g(&["b"])));
        assert!(!admits(Some(&state), &g(&["a", "c"])));
        assert!(admits(Some(&state), &g(&["b"])));
    }

    #[test]
    fn no_groups_only_goes_with_no_groups() {
        let none = fold(None, &[]);
        assert!(admits(Some(&none), &[]));
        assert!(!admits(Some(&none), &g(&["mig"])));
        let mig = fold(None, &g(&["mig"]));
        assert!(!admits(Some(&mig), &[]));
        assert!(!admits(Some(&mig), &g(&["vgpu"])));
        assert!(admits(None, &g(&["vgpu"])));
        assert!(mig.declared());
        assert!(!none.declared());
    }
}
