//! `--controllers`: which of `allot serve`'s control-plane loops run, spelled as
//! kube-controller-manager's flag (`*` for every loop that is on by default, `NAME` to enable
//! one, `-NAME` to disable one; the first mention of a name decides), so that a real component
//! can take a loop over without both doing the work: `--controllers=*,-scheduler` for a real
//! kube-scheduler, `*,-resourceclaim,-scheduler` when kube-controller-manager's claim
//! controller runs too.
//! The loops kube-controller-manager also has carry its names (and its aliases); allot's own
//! are `scheduler` (kube-scheduler) and `kubelet` (the simulated nodes' agents).

use std::collections::BTreeSet;

/// One loop: its name, other names it answers to, and what it is.
pub struct Loop {
    /// The name (kube-controller-manager's, where it has the controller).
    pub name: &'static str,
    /// Other accepted names (kube-controller-manager's aliases, and the short form).
    pub aliases: &'static [&'static str],
    /// One line of help.
    pub help: &'static str,
}

/// Every loop `--controllers` can name, in the order they run.
pub const LOOPS: &[Loop] = &[
    Loop {
        name: "resourceclaim-controller",
        aliases: &["resource-claim-controller", "resourceclaim"],
        help: "creates ResourceClaims from pods' templates, reserves and releases them",
    },
    Loop {
        name: "scheduler",
        aliases: &["kube-scheduler"],
        help: "kube-scheduler: places pods, allocates their claims, binds them",
    },
    Loop {
        name: "kubelet",
        aliases: &["kubelets", "nodes"],
        help: "the simulated nodes' kubelets: admission, DRA prepare, pod status",
    },
    Loop {
        name: "device-taint-eviction-controller",
        aliases: &["device-taint-eviction"],
        help: "evicts pods from tainted devices",
    },
    Loop {
        name: "resourcepoolstatusrequest-controller",
        aliases: &["resourcepoolstatusrequest"],
        help: "answers ResourcePoolStatusRequests",
    },
    Loop {
        name: "deployment-controller",
        aliases: &["deployment"],
        help: "rolls Deployments out through ReplicaSets",
    },
    Loop {
        name: "replicaset-controller",
        aliases: &["replicaset"],
        help: "keeps ReplicaSets' pods at their replica count",
    },
    Loop {
        name: "statefulset-controller",
        aliases: &["statefulset"],
        help: "creates StatefulSets' ordinal pods and their claims",
    },
    Loop {
        name: "persistentvolume-binder-controller",
        aliases: &["persistentvolume-binder"],
        help: "binds and provisions Immediate PersistentVolumeClaims, keeps volumes' phases",
    },
    Loop {
        name: "daemonset-controller",
        aliases: &["daemonset"],
        help: "runs one pod of each DaemonSet per eligible node",
    },
    Loop {
        name: "job-controller",
        aliases: &["job"],
        help: "runs Jobs' pods to completion, with backoff and failure policies",
    },
    Loop {
        name: "cronjob-controller",
        aliases: &["cronjob"],
        help: "creates Jobs on CronJobs' schedules",
    },
    Loop {
        name: "garbage-collector-controller",
        aliases: &["garbagecollector"],
        help: "deletes dependents of deleted owners (background and foreground)",
    },
    Loop {
        name: "namespace-controller",
        aliases: &["namespace"],
        help: "empties and removes terminating namespaces",
    },
    Loop {
        name: "clusterrole-aggregation-controller",
        aliases: &["clusterrole-aggregation"],
        help: "aggregates ClusterRoles by label",
    },
];

/// The loops that run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enabled {
    names: BTreeSet<&'static str>,
}

impl Default for Enabled {
    /// `*`: every loop.
    fn default() -> Self {
        Enabled {
            names: LOOPS.iter().map(|l| l.name).collect(),
        }
    }
}

fn canonical(name: &str) -> Option<&'static str> {
    LOOPS
        .iter()
        .find(|l| l.name == name || l.aliases.contains(&name))
        .map(|l| l.name)
}

impl Enabled {
    /// Parses the flag's list (already split at commas), as kube-controller-manager reads
    /// its own: an unknown name is an error.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Enabled, String> {
        let mut choices: Vec<(&'static str, bool)> = Vec::new();
        let mut star = false;
        for item in items {
            let item = item.as_ref().trim();
            if item == "*" {
                star = true;
                continue;
            }
            let (name, on) = match item.strip_prefix('-') {
                Some(rest) => (rest, false),
                None => (item, true),
            };
            let Some(name) = canonical(name) else {
                return Err(format!(
                    "{name:?} is not in the list of known controllers ({})",
                    LOOPS.iter().map(|l| l.name).collect::<Vec<_>>().join(", ")
                ));
            };
            if !choices.iter().any(|(n, _)| *n == name) {
                choices.push((name, on));
            }
        }
        let names = LOOPS
            .iter()
            .map(|l| l.name)
            .filter(|name| match choices.iter().find(|(n, _)| n == name) {
                Some((_, on)) => *on,
                None => star,
            })
            .collect();
        Ok(Enabled { names })
    }

    /// Whether the loop named (canonically) `name` runs.
    pub fn runs(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The running loops' names, in run order.
    pub fn names(&self) -> Vec<&'static str> {
        LOOPS
            .iter()
            .map(|l| l.name)
            .filter(|n| self.names.contains(n))
            .collect()
    }
}

/// The `--controllers` help text's list of names.
pub fn help() -> String {
    LOOPS
        .iter()
        .map(|l| {
            let aliases = if l.aliases.is_empty() {
                String::new()
            } else {
                format!(" (also {})", l.aliases.join(", "))
            };
            format!("{}{aliases}: {}", l.name, l.help)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_kube_controller_manager_does() {
        let all = Enabled::parse(&["*"]).expect("star");
        assert_eq!(all, Enabled::default());
        let without = Enabled::parse(&["*", "-resourceclaim", "-scheduler"]).expect("minus");
        assert!(!without.runs("resourceclaim-controller"));
        assert!(!without.runs("scheduler"));
        assert!(without.runs("kubelet"));
        // Without `*` only the named ones run; aliases name the same loop.
        let only = Enabled::parse(&["resource-claim-controller", "namespace"]).expect("named");
        assert_eq!(
            only.names(),
            ["resourceclaim-controller", "namespace-controller"]
        );
        // The first mention decides, as upstream's IsControllerEnabled reads the list.
        let first = Enabled::parse(&["-scheduler", "*", "scheduler"]).expect("first");
        assert!(!first.runs("scheduler"));
        assert!(
            Enabled::parse(&[] as &[&str])
                .expect("empty")
                .names()
                .is_empty()
        );
        let err = Enabled::parse(&["*", "-garbage"]).expect_err("unknown");
        assert!(
            err.starts_with("\"garbage\" is not in the list of known controllers"),
            "{err}"
        );
    }
}
