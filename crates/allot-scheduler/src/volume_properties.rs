//! Property tests of the volume plugins: random small clusters (nodes in zones), local and zonal
//! PersistentVolumes of two WaitForFirstConsumer classes (one without a provisioner, one with a
//! CSI provisioner limited to some zones), claims (some pre-bound to a volume), and pods using
//! zero to two claims (claims may be shared), scheduled to the end. No pod may run on a node its
//! volumes' node affinity excludes, no volume may be bound to two claims nor a claim to two
//! volumes, every binding must agree on both sides, and the result is the same on every run.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use allot_api::load::{LoadOptions, load_str};
use allot_runtime::Runtime;
use proptest::prelude::*;

use super::*;
use crate::plugins::volume_util::{pod_claims, volume_fits_node};

const ZONES: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
struct VolSpec {
    /// `Some(node)`: local to that node; `None`: zonal.
    node: Option<usize>,
    zone: usize,
    gib: u32,
}

#[derive(Debug, Clone)]
struct ClaimSpec {
    gib: u32,
    /// Local class (no provisioner) or the CSI one.
    local: bool,
    /// Pre-bound to this volume (`spec.volumeName` and the volume's claimRef).
    prebound: Option<usize>,
}

#[derive(Debug, Clone)]
struct Scenario {
    nodes: Vec<usize>,
    volumes: Vec<VolSpec>,
    claims: Vec<ClaimSpec>,
    /// Per pod, indexes of the claims it uses.
    pods: Vec<Vec<usize>>,
    /// The zones the CSI class allows.
    allowed: Vec<usize>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(0..3usize, 1..5),
        prop::collection::vec((prop::option::of(0..5usize), 0..3usize, 1..4u32), 0..7),
        prop::collection::vec(
            (
                1..4u32,
                prop::bool::ANY,
                prop::option::weighted(0.2, 0..7usize),
            ),
            0..7,
        ),
        prop::collection::vec(prop::collection::vec(0..7usize, 0..3), 1..8),
        prop::collection::btree_set(0..3usize, 1..3),
    )
        .prop_map(|(nodes, vols, claims, pods, allowed)| {
            let volumes: Vec<VolSpec> = vols
                .into_iter()
                .map(|(node, zone, gib)| {
                    let node = node.filter(|n| *n < nodes.len());
                    VolSpec {
                        zone: node.map(|n| nodes[n]).unwrap_or(zone),
                        node,
                        gib,
                    }
                })
                .collect();
            let mut used = BTreeSet::new();
            let claims: Vec<ClaimSpec> = claims
                .into_iter()
                .map(|(gib, local, prebound)| ClaimSpec {
                    gib,
                    local,
                    prebound: prebound.filter(|v| *v < volumes.len() && used.insert(*v)),
                })
                .collect();
            let pods = pods
                .into_iter()
                .map(|p| {
                    let set: BTreeSet<usize> =
                        p.into_iter().filter(|c| *c < claims.len()).collect();
                    set.into_iter().collect()
                })
                .collect();
            Scenario {
                nodes,
                volumes,
                claims,
                pods,
                allowed: allowed.into_iter().collect(),
            }
        })
}

fn render(s: &Scenario) -> String {
    let mut docs = Vec::new();
    for (i, zone) in s.nodes.iter().enumerate() {
        docs.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}, topology.kubernetes.io/zone: {}}}}}\nstatus: {{allocatable: {{cpu: '8', memory: 64Gi, pods: '110'}}}}\n",
            ZONES[*zone]
        ));
        docs.push(format!(
            "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {{name: n{i}}}\nspec: {{drivers: [{{name: csi.example.com, nodeID: n{i}, topologyKeys: [topology.kubernetes.io/zone]}}]}}\n"
        ));
    }
    let allowed: Vec<&str> = s.allowed.iter().map(|z| ZONES[*z]).collect();
    docs.push("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n".into());
    docs.push(format!(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: csi}}\nprovisioner: csi.example.com\nvolumeBindingMode: WaitForFirstConsumer\nallowedTopologies: [{{matchLabelExpressions: [{{key: topology.kubernetes.io/zone, values: [{}]}}]}}]\n",
        allowed.join(", ")
    ));
    for (i, v) in s.volumes.iter().enumerate() {
        let (key, value) = match v.node {
            Some(n) => ("kubernetes.io/hostname", format!("n{n}")),
            None => ("topology.kubernetes.io/zone", ZONES[v.zone].to_string()),
        };
        let class = if v.node.is_some() { "local" } else { "csi" };
        let claim_ref = s
            .claims
            .iter()
            .position(|c| c.prebound == Some(i))
            .map(|c| format!("  claimRef: {{namespace: default, name: c{c}}}\n"))
            .unwrap_or_default();
        docs.push(format!(
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: v{i}}}\nspec:\n  capacity: {{storage: {}Gi}}\n  accessModes: [ReadWriteOnce]\n  storageClassName: {class}\n  local: {{path: /mnt/v{i}}}\n{claim_ref}  nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: {key}, operator: In, values: [{value}]}}]}}]}}}}\n",
            v.gib
        ));
    }
    for (i, c) in s.claims.iter().enumerate() {
        let class = match c.prebound {
            Some(v) if s.volumes[v].node.is_some() => "local",
            Some(_) => "csi",
            None if c.local => "local",
            None => "csi",
        };
        let volume = c
            .prebound
            .map(|v| format!("  volumeName: v{v}\n"))
            .unwrap_or_default();
        docs.push(format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: c{i}, namespace: default}}\nspec:\n  accessModes: [ReadWriteOnce]\n  storageClassName: {class}\n{volume}  resources: {{requests: {{storage: {}Gi}}}}\n",
            c.gib
        ));
    }
    for (i, claims) in s.pods.iter().enumerate() {
        let volumes: Vec<String> = claims
            .iter()
            .map(|c| format!("{{name: c{c}, persistentVolumeClaim: {{claimName: c{c}}}}}"))
            .collect();
        docs.push(format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: default}}\nspec:\n  containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]\n  volumes: [{}]\n",
            volumes.join(", ")
        ));
    }
    docs.join("---\n")
}

/// Schedules to the end; the final store.
fn run(s: &Scenario) -> Store {
    let loaded = load_str("v.yaml", &render(s), &LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut store = Store::new();
    for doc in loaded.documents {
        let mut object = doc.object;
        allot_api::defaults::default_object(&mut object);
        if let Some(stored) = Stored::from_object(object) {
            store
                .create_stored(stored, &SimTime::ZERO.rfc3339())
                .unwrap();
        }
    }
    let mut rt = Runtime::new(
        store,
        vec![Box::new(Scheduler::new(SchedulerConfig::default()))],
        SimTime::ZERO,
    );
    rt.run_due(100_000).unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
    rt.store
}

/// Every invariant of the final state; `Err` names the first broken one.
fn check(store: &Store) -> Result<(), String> {
    let mut claims_of_volume: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for claim in store.list::<PersistentVolumeClaim>() {
        let name = &claim.spec.volume_name;
        if name.is_empty() {
            continue;
        }
        claims_of_volume
            .entry(name.clone())
            .or_default()
            .push(claim.metadata.name.clone());
        let Some(pv) = store.get::<PersistentVolume>("", name) else {
            return Err(format!(
                "{} names missing volume {name}",
                claim.metadata.name
            ));
        };
        let bound_here = pv
            .spec
            .claim_ref
            .as_ref()
            .is_some_and(|r| r.name.as_deref() == Some(claim.metadata.name.as_str()));
        if !bound_here {
            return Err(format!(
                "{} names {name}, whose claimRef is {:?}",
                claim.metadata.name, pv.spec.claim_ref
            ));
        }
    }
    for (volume, claims) in &claims_of_volume {
        if claims.len() > 1 {
            return Err(format!("{volume} bound to {claims:?}"));
        }
    }
    for pod in store.list::<Pod>() {
        let Some(node_name) = &pod.spec.node_name else {
            continue;
        };
        let node = store
            .get::<Node>("", node_name)
            .ok_or_else(|| format!("{node_name} missing"))?;
        for (claim, _) in pod_claims(pod) {
            let c = store
                .get::<PersistentVolumeClaim>("default", &claim)
                .ok_or_else(|| format!("{claim} missing"))?;
            if c.spec.volume_name.is_empty() {
                return Err(format!("{} runs with unbound {claim}", pod.metadata.name));
            }
            let pv = store
                .get::<PersistentVolume>("", &c.spec.volume_name)
                .ok_or_else(|| format!("{} missing", c.spec.volume_name))?;
            if !volume_fits_node(pv, node) {
                return Err(format!(
                    "{} on {node_name} but its volume {} is elsewhere",
                    pod.metadata.name, pv.metadata.name
                ));
            }
        }
    }
    Ok(())
}

/// What the runs are compared by: each pod's node and each claim's volume.
fn outcome(store: &Store) -> Vec<(String, String)> {
    store
        .list::<Pod>()
        .map(|p| {
            (
                p.metadata.name.clone(),
                p.spec.node_name.clone().unwrap_or_default(),
            )
        })
        .chain(
            store
                .list::<PersistentVolumeClaim>()
                .map(|c| (c.metadata.name.clone(), c.spec.volume_name.clone())),
        )
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn placements_keep_volume_affinity_and_bindings_exclusive(s in scenario()) {
        let store = run(&s);
        if let Err(e) = check(&store) {
            prop_assert!(false, "{e}\n{:?}\n{}", outcome(&store), render(&s));
        }
    }

    #[test]
    fn volume_results_are_the_same_on_every_run(s in scenario()) {
        prop_assert_eq!(outcome(&run(&s)), outcome(&run(&s)));
    }
}
