//! Property tests: random small clusters and pods (labels, zones, taints, CPU capacity, pod
//! limits, required pod anti-affinity, DoNotSchedule topology spread, host ports), scheduled
//! to the end; no placement may break a required anti-affinity, a spread constraint, a taint,
//! a host port or the node's capacity, and the result is the same on every run.

use std::collections::BTreeMap;

use allot_api::core::v1::Pod;
use allot_api::load::{LoadOptions, load_str};
use allot_runtime::Runtime;
use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
struct NodeSpec {
    zone: usize,
    milli_cpu: i64,
    max_pods: i64,
    tainted: bool,
}

#[derive(Debug, Clone)]
struct PodSpec {
    app: usize,
    milli_cpu: i64,
    /// Required anti-affinity against its own app on this topology key.
    anti: Option<&'static str>,
    tolerates: bool,
    host_port: Option<i32>,
}

#[derive(Debug, Clone)]
struct Scenario {
    nodes: Vec<NodeSpec>,
    pods: Vec<PodSpec>,
    /// Per app, the maxSkew of the zone spread every pod of the app carries.
    spread: [Option<i32>; 2],
}

const APPS: [&str; 2] = ["web", "db"];
const ZONES: [&str; 3] = ["a", "b", "c"];

fn scenario() -> impl Strategy<Value = Scenario> {
    let node = (
        0..3usize,
        prop::sample::select(vec![1000i64, 2000, 4000]),
        prop::sample::select(vec![2i64, 110]),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(zone, milli_cpu, max_pods, tainted)| NodeSpec {
            zone,
            milli_cpu,
            max_pods,
            tainted,
        });
    let pod = (
        0..2usize,
        prop::sample::select(vec![0i64, 500, 1000, 2000]),
        prop::sample::select(vec![None, Some("kubernetes.io/hostname"), Some("zone")]),
        prop::bool::ANY,
        prop::sample::select(vec![None, Some(8080), Some(8081)]),
    )
        .prop_map(|(app, milli_cpu, anti, tolerates, host_port)| PodSpec {
            app,
            milli_cpu,
            anti,
            tolerates,
            host_port,
        });
    let skew = prop::sample::select(vec![None, Some(1), Some(2)]);
    (
        prop::collection::vec(node, 1..6),
        prop::collection::vec(pod, 1..14),
        skew.clone(),
        skew,
    )
        .prop_map(|(nodes, pods, s0, s1)| Scenario {
            nodes,
            pods,
            spread: [s0, s1],
        })
}

fn render(s: &Scenario) -> String {
    let mut docs = Vec::new();
    for (i, n) in s.nodes.iter().enumerate() {
        let taints = if n.tainted {
            "spec: {taints: [{key: t, value: x, effect: NoSchedule}]}\n"
        } else {
            ""
        };
        docs.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}, zone: {}}}}}\n{taints}status: {{allocatable: {{cpu: {}m, memory: 64Gi, pods: \"{}\"}}}}\n",
            ZONES[n.zone], n.milli_cpu, n.max_pods
        ));
    }
    for (i, p) in s.pods.iter().enumerate() {
        let app = APPS[p.app];
        let mut spec = String::new();
        if let Some(key) = p.anti {
            spec.push_str(&format!(
                "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - {{labelSelector: {{matchLabels: {{app: {app}}}}}, topologyKey: {key}}}\n"
            ));
        }
        if let Some(skew) = s.spread[p.app] {
            spec.push_str(&format!(
                "  topologySpreadConstraints:\n  - {{maxSkew: {skew}, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: {app}}}}}}}\n"
            ));
        }
        if p.tolerates {
            spec.push_str(
                "  tolerations: [{key: t, operator: Equal, value: x, effect: NoSchedule}]\n",
            );
        }
        let ports = match p.host_port {
            Some(port) => format!(", ports: [{{containerPort: 80, hostPort: {port}}}]"),
            None => String::new(),
        };
        docs.push(format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i:02}, namespace: default, labels: {{app: {app}}}}}\nspec:\n  containers: [{{name: c, resources: {{requests: {{cpu: {}m}}}}{ports}}}]\n{spec}",
            p.milli_cpu
        ));
    }
    docs.join("---\n")
}

/// Schedules the scenario to the end: per pod, its node (or its message).
fn run(s: &Scenario) -> BTreeMap<String, Result<String, String>> {
    let loaded = load_str("p.yaml", &render(s), &LoadOptions::default());
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
        .list::<Pod>()
        .map(|p| {
            let placed = match &p.spec.node_name {
                Some(node) => Ok(node.clone()),
                None => Err(p
                    .status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == "PodScheduled")
                    .and_then(|c| c.message.clone())
                    .unwrap_or_default()),
            };
            (p.metadata.name.clone(), placed)
        })
        .collect()
}

/// Every invariant of a final placement; `Err` names the first broken one.
fn check(s: &Scenario, placed: &BTreeMap<String, Result<String, String>>) -> Result<(), String> {
    let node_of = |i: usize| -> Option<usize> {
        placed[&format!("p{i:02}")]
            .as_ref()
            .ok()
            .map(|n| n[1..].parse().unwrap())
    };
    let label = |n: usize, key: &str| -> String {
        if key == "zone" {
            ZONES[s.nodes[n].zone].to_string()
        } else {
            format!("n{n}")
        }
    };
    for (i, p) in s.pods.iter().enumerate() {
        let Some(n) = node_of(i) else {
            let message = placed[&format!("p{i:02}")].as_ref().unwrap_err();
            if !message.starts_with(&format!("0/{} nodes are available: ", s.nodes.len())) {
                return Err(format!("p{i:02}: message {message:?}"));
            }
            continue;
        };
        if s.nodes[n].tainted && !p.tolerates {
            return Err(format!("p{i:02} on n{n} despite its taint"));
        }
        for (j, q) in s.pods.iter().enumerate() {
            if i == j {
                continue;
            }
            let Some(m) = node_of(j) else { continue };
            if let Some(key) = p.anti
                && q.app == p.app
                && label(n, key) == label(m, key)
            {
                return Err(format!(
                    "p{i:02} on n{n} and p{j:02} on n{m} share {key} against anti-affinity"
                ));
            }
            if n == m && p.host_port.is_some() && p.host_port == q.host_port {
                return Err(format!(
                    "p{i:02} and p{j:02} both take host port {:?} on n{n}",
                    p.host_port
                ));
            }
        }
    }
    for (n, node) in s.nodes.iter().enumerate() {
        let on: Vec<usize> = (0..s.pods.len())
            .filter(|i| node_of(*i) == Some(n))
            .collect();
        let cpu: i64 = on.iter().map(|i| s.pods[*i].milli_cpu).sum();
        if cpu > node.milli_cpu || on.len() as i64 > node.max_pods {
            return Err(format!("n{n} over capacity: {cpu}m, {} pods", on.len()));
        }
    }
    for (app, skew) in s.spread.iter().enumerate() {
        let Some(skew) = skew else { continue };
        let mut counts: BTreeMap<usize, i32> = s.nodes.iter().map(|n| (n.zone, 0)).collect();
        for (i, p) in s.pods.iter().enumerate() {
            if p.app == app
                && let Some(n) = node_of(i)
            {
                *counts.get_mut(&s.nodes[n].zone).unwrap() += 1;
            }
        }
        let (min, max) = (
            counts.values().min().unwrap(),
            counts.values().max().unwrap(),
        );
        if max - min > *skew {
            return Err(format!(
                "{} spread {counts:?} breaks maxSkew {skew}",
                APPS[app]
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn placements_keep_every_hard_constraint(s in scenario()) {
        let placed = run(&s);
        if let Err(e) = check(&s, &placed) {
            prop_assert!(false, "{e}\n{placed:?}\n{}", render(&s));
        }
    }

    #[test]
    fn results_are_the_same_on_every_run(s in scenario()) {
        prop_assert_eq!(run(&s), run(&s));
    }
}
