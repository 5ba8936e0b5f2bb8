//! The feature gates allot knows, with one definition of their defaults for `allot simulate`
//! and `allot serve`: Kubernetes 1.37's default for each gate, except where allot documents an
//! extension (it turns on every DRA feature it implements, alpha ones included, so that the
//! example manifests run as written). `--feature-gates` and `SimulationOptions.featureGates`
//! set gates over these defaults, as kube-apiserver's and kube-scheduler's flag does
//! (`Name=true,Other=false`, plus `AllAlpha=` and `AllBeta=`).
//!
//! Key design decision: one table ([`GATES`]) lists every gate with its stage, upstream's 1.37
//! default and allot's default; the allocator's [`allot_dra::Features`], the help text and the
//! start-up log line are all made from it, so the two commands cannot drift apart.

#![deny(missing_docs)]

use std::collections::BTreeMap;

use allot_dra::Features;

/// A gate's maturity, as upstream prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Alpha: off upstream.
    Alpha,
    /// Beta.
    Beta,
    /// Generally available.
    Ga,
}

impl Stage {
    fn label(self) -> &'static str {
        match self {
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
            Stage::Ga => "GA",
        }
    }
}

/// One gate: name, stage, upstream's 1.37 default and allot's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// Upstream's name.
    pub name: &'static str,
    /// Its stage in Kubernetes 1.37.
    pub stage: Stage,
    /// Its default in Kubernetes 1.37.
    pub upstream_default: bool,
    /// Its default in allot (different from upstream's only where documented).
    pub default: bool,
}

const fn gate(name: &'static str, stage: Stage, upstream_default: bool, default: bool) -> Gate {
    Gate {
        name,
        stage,
        upstream_default,
        default,
    }
}

/// Every gate allot knows, in name order.
pub const GATES: &[Gate] = &[
    gate("DRAAdminAccess", Stage::Beta, true, true),
    gate("DRAConsumableCapacity", Stage::Beta, true, true),
    gate("DRADerivedAttributes", Stage::Alpha, false, true),
    gate("DRADeviceBindingConditions", Stage::Beta, true, true),
    gate("DRADeviceCompatibilityGroups", Stage::Alpha, false, true),
    gate("DRADeviceTaints", Stage::Beta, true, true),
    gate("DRAExtendedResource", Stage::Beta, true, true),
    gate("DRAListTypeAttributes", Stage::Alpha, false, true),
    gate("DRANodeAllocatableResources", Stage::Alpha, false, true),
    gate("DRAOptionalNodeOperations", Stage::Alpha, false, true),
    gate("DRAPartitionableDevices", Stage::Beta, true, true),
    gate("DRAPrioritizedList", Stage::Ga, true, true),
    gate("DRAResourceClaimDeviceStatus", Stage::Ga, true, true),
    gate("DRAWorkloadResourceClaims", Stage::Beta, false, true),
    gate("ResourceHealthStatus", Stage::Beta, true, true),
];

/// The gates in effect: every known gate with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureGates {
    values: BTreeMap<&'static str, bool>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates {
            values: GATES.iter().map(|g| (g.name, g.default)).collect(),
        }
    }
}

impl FeatureGates {
    /// allot's defaults.
    pub fn defaults() -> FeatureGates {
        FeatureGates::default()
    }

    /// Kubernetes 1.37's defaults, without allot's extensions.
    pub fn upstream() -> FeatureGates {
        FeatureGates {
            values: GATES.iter().map(|g| (g.name, g.upstream_default)).collect(),
        }
    }

    /// Sets one gate; an unknown name is refused with upstream's message.
    pub fn set(&mut self, name: &str, enabled: bool) -> Result<(), String> {
        match self.values.get_mut(name) {
            Some(value) => {
                *value = enabled;
                Ok(())
            }
            None => Err(format!("unrecognized feature gate: {name}")),
        }
    }

    /// Whether a gate is on (unknown gates are off).
    pub fn enabled(&self, name: &str) -> bool {
        self.values.get(name).copied().unwrap_or(false)
    }

    /// Applies `--feature-gates` as kube-apiserver parses it: `Name=bool` pairs separated by
    /// commas, booleans as Go's `strconv.ParseBool`, `AllAlpha=` and `AllBeta=` first (they set
    /// every alpha or beta gate, then the named gates win).
    pub fn apply_flag(&mut self, flag: &str) -> Result<(), String> {
        let mut pairs = Vec::new();
        for item in flag.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| format!("missing bool value for {item}"))?;
            let (name, value) = (name.trim(), value.trim());
            let enabled = parse_bool(value).ok_or_else(|| {
                format!(
                    "invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
                )
            })?;
            pairs.push((name, enabled));
        }
        for (name, enabled) in &pairs {
            let stage = match *name {
                "AllAlpha" => Stage::Alpha,
                "AllBeta" => Stage::Beta,
                _ => continue,
            };
            for gate in GATES.iter().filter(|g| g.stage == stage) {
                self.values.insert(gate.name, *enabled);
            }
        }
        for (name, enabled) in pairs {
            if name != "AllAlpha" && name != "AllBeta" {
                self.set(name, enabled)?;
            }
        }
        Ok(())
    }

    /// The allocator's gates.
    pub fn dra(&self) -> Features {
        let mut features = Features::default();
        for name in Features::GATES {
            // Every allocator gate is in the table (a test checks it).
            let _ = features.set(name, self.enabled(name));
        }
        features
    }

    /// The gates in effect, as `Name=true,...` in name order (for the start-up log).
    pub fn summary(&self) -> String {
        self.values
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The gates that differ from Kubernetes 1.37's defaults.
    pub fn differences_from_upstream(&self) -> Vec<(&'static str, bool)> {
        let upstream = FeatureGates::upstream();
        self.values
            .iter()
            .filter(|(name, value)| upstream.values.get(*name) != Some(value))
            .map(|(name, value)| (*name, *value))
            .collect()
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The help of `--feature-gates`: one line per gate as kube-apiserver's help prints them, with
/// allot's default and, where it differs, upstream's.
pub fn help() -> String {
    let mut text = String::from(
        "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n",
    );
    text.push_str("AllAlpha=true|false (ALPHA - default=false)\n");
    text.push_str("AllBeta=true|false (BETA - default=false)\n");
    for gate in GATES {
        text.push_str(&format!(
            "{}=true|false ({} - default={}",
            gate.name,
            gate.stage.label(),
            gate.default
        ));
        if gate.default != gate.upstream_default {
            text.push_str(&format!(
                "; Kubernetes 1.37: {}, allot extension",
                gate.upstream_default
            ));
        }
        text.push_str(")\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allocator_gate_is_in_the_table_in_name_order() {
        for name in Features::GATES {
            assert!(GATES.iter().any(|g| g.name == *name), "{name}");
        }
        let names: Vec<&str> = GATES.iter().map(|g| g.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn upstream_defaults_are_the_allocator_s_1_37_defaults() {
        assert_eq!(FeatureGates::upstream().dra(), Features::kubernetes_1_37());
        // allot's defaults turn on every allocator feature it implements.
        assert_eq!(FeatureGates::defaults().dra(), Features::all());
    }

    #[test]
    fn the_flag_parses_as_kube_s() {
        let mut gates = FeatureGates::defaults();
        gates
            .apply_flag("DRADerivedAttributes=false, DRAAdminAccess=F")
            .expect("parses");
        assert!(!gates.enabled("DRADerivedAttributes"));
        assert!(!gates.enabled("DRAAdminAccess"));
        assert!(!gates.dra().derived_attributes);
        assert_eq!(
            gates.apply_flag("NoSuchGate=true").unwrap_err(),
            "unrecognized feature gate: NoSuchGate"
        );
        assert_eq!(
            gates.apply_flag("DRAAdminAccess=maybe").unwrap_err(),
            "invalid value of DRAAdminAccess=maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax"
        );
        assert_eq!(
            gates.apply_flag("DRAAdminAccess").unwrap_err(),
            "missing bool value for DRAAdminAccess"
        );
        // AllAlpha=false gives upstream's defaults here; a named gate still wins.
        let mut upstream = FeatureGates::defaults();
        upstream
            .apply_flag("DRAListTypeAttributes=true,AllAlpha=false")
            .expect("parses");
        let mut expected = FeatureGates::upstream();
        expected.set("DRAListTypeAttributes", true).expect("known");
        expected
            .set("DRAWorkloadResourceClaims", true)
            .expect("known");
        assert_eq!(upstream, expected);
    }

    #[test]
    fn help_lists_every_gate_with_both_defaults_where_they_differ() {
        let help = help();
        for gate in GATES {
            assert!(
                help.contains(&format!("{}=true|false", gate.name)),
                "{help}"
            );
        }
        assert!(help.contains(
            "DRADerivedAttributes=true|false (ALPHA - default=true; Kubernetes 1.37: false, allot extension)"
        ));
        assert!(help.contains("DRAAdminAccess=true|false (BETA - default=true)\n"));
    }
}
