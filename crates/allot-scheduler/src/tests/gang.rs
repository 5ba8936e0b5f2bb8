//! Gang scheduling (GangScheduling: PreEnqueue, Reserve, Permit) over the whole scheduler.

use super::*;
use allot_api::scheduling::v1beta1::PodGroup;

fn group(name: &str, min_count: u32) -> String {
    format!(
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  schedulingPolicy:\n    gang: {{minCount: {min_count}}}\n"
    )
}

/// A gang member of 100m CPU (so CPUs never decide where it fits).
fn member(name: &str, group: &str, extra: &str) -> String {
    pod(
        name,
        "100m",
        &format!("  schedulingGroup: {{podGroupName: {group}}}\n{extra}"),
    )
}

fn with_claim(name: &str) -> Vec<String> {
    vec![claim(&format!("{name}-gpu"), 1)]
}

fn gpu_member(name: &str, group: &str, extra: &str) -> Vec<String> {
    let mut docs = with_claim(name);
    docs.push(member(
        name,
        group,
        &format!("{extra}{}", claim_ref(&[&format!("{name}-gpu")])),
    ));
    docs
}

fn two_gpus() -> Vec<String> {
    vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice("node-a", &[("gpu-0", "a"), ("gpu-1", "a")], false),
    ]
}

fn allocated(rt: &Runtime, claim: &str) -> bool {
    rt.store
        .get::<ResourceClaim>("default", claim)
        .is_some_and(|c| c.status.allocation.is_some())
}

fn bound(rt: &Runtime, pods: &[&str]) -> usize {
    pods.iter().filter(|p| node_of(rt, p).is_some()).count()
}

#[test]
fn a_gang_that_fits_binds_together() {
    let mut docs = two_gpus();
    docs.push(group("g", 2));
    docs.extend(gpu_member("w-0", "g", ""));
    docs.extend(gpu_member("w-1", "g", ""));
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(bound(&rt, &["w-0", "w-1"]), 2);
    let (status, reason, _) = group_condition(&rt, "g");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Scheduled"));
}

fn group_condition(rt: &Runtime, name: &str) -> (String, String, String) {
    let group = rt.store.get::<PodGroup>("default", name).unwrap();
    let c = group
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodGroupScheduled")
        .expect("PodGroupScheduled");
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[test]
fn pre_enqueue_waits_for_the_pod_group_and_min_count_pods() {
    let mut docs = vec![NODES.to_string()];
    docs.push(member("w-0", "g", ""));
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    // No PodGroup yet: not tried (no condition written).
    assert_eq!(node_of(&rt, "w-0"), None);
    let pod = rt.store.get::<Pod>("default", "w-0").unwrap();
    assert!(pod.status.conditions.is_empty());
    // The group wants two pods: still not tried.
    let loaded = load_str("g.yaml", &group("g", 2), &LoadOptions::default());
    for doc in loaded.documents {
        let mut object = doc.object;
        allot_api::defaults::default_object(&mut object);
        rt.store
            .create_stored(Stored::from_object(object).unwrap(), "t")
            .unwrap();
    }
    settle(&mut rt);
    assert_eq!(node_of(&rt, "w-0"), None);
    // The second pod completes the gang: both bind.
    let loaded = load_str("p.yaml", &member("w-1", "g", ""), &LoadOptions::default());
    for doc in loaded.documents {
        let mut object = doc.object;
        allot_api::defaults::default_object(&mut object);
        rt.store
            .create_stored(Stored::from_object(object).unwrap(), "t")
            .unwrap();
    }
    settle(&mut rt);
    assert_eq!(bound(&rt, &["w-0", "w-1"]), 2);
}

#[test]
fn pre_enqueue_messages_are_upstreams() {
    let mut cache = crate::cache::Cache::default();
    let mut store = store_of(&[member("w-0", "g", "")]);
    cache.sync(&store);
    let pod = store.get::<Pod>("default", "w-0").unwrap().clone();
    let mut plugin = plugins::gang_scheduling::GangScheduling::default();
    use crate::framework::PreEnqueuePlugin;
    assert_eq!(
        plugin.pre_enqueue(&cache, &pod).message(),
        "waiting for pod's pod group \"g\" to appear in scheduling queue"
    );
    let loaded = load_str("g.yaml", &group("g", 2), &LoadOptions::default());
    for doc in loaded.documents {
        store
            .create_stored(Stored::from_object(doc.object).unwrap(), "t")
            .unwrap();
    }
    cache.sync(&store);
    assert!(cache.pod_group("default", "g").is_some());
    assert_eq!(
        plugin.pre_enqueue(&cache, &pod).message(),
        "waiting for minCount pods from a gang to appear in scheduling queue"
    );
}

/// Two of three members fit (two GPUs): they wait at Permit holding their devices, nobody
/// binds; at the timeout (five minutes) they are rejected and unreserved, and a pod waiting for
/// a GPU gets one while they back off.
#[test]
fn a_gang_that_does_not_fit_binds_nothing_and_frees_its_devices_at_the_timeout() {
    let mut docs = two_gpus();
    docs.push(group("g", 3));
    docs.extend(gpu_member("w-0", "g", ""));
    docs.extend(gpu_member("w-1", "g", ""));
    docs.extend(gpu_member("w-2", "g", ""));
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    let gang = ["w-0", "w-1", "w-2"];
    assert_eq!(bound(&rt, &gang), 0);
    // Two members hold the two GPUs while they wait.
    let held = ["w-0-gpu", "w-1-gpu", "w-2-gpu"]
        .iter()
        .filter(|c| allocated(&rt, c))
        .count();
    assert_eq!(held, 2);
    // A plain pod that wants a GPU cannot have one yet.
    let mut more = with_claim("solo");
    more.push(pod("solo", "1", &claim_ref(&["solo-gpu"])));
    let text = more.join("\n---\n");
    for doc in load_str("solo.yaml", &text, &LoadOptions::default()).documents {
        let mut object = doc.object;
        allot_api::defaults::default_object(&mut object);
        rt.store
            .create_stored(Stored::from_object(object).unwrap(), "t")
            .unwrap();
    }
    settle(&mut rt);
    assert_eq!(node_of(&rt, "solo"), None);
    rt.advance_to(SimTime::ZERO.plus_seconds(299), 100_000)
        .unwrap();
    assert_eq!(bound(&rt, &gang), 0);
    assert_eq!(node_of(&rt, "solo"), None);
    rt.advance_to(SimTime::ZERO.plus_seconds(300), 100_000)
        .unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
    assert_eq!(bound(&rt, &gang), 0);
    // The gang let go of its devices: the plain pod has one.
    assert_eq!(node_of(&rt, "solo").as_deref(), Some("node-a"));
    let timed_out: Vec<String> = ["w-0", "w-1"].iter().map(|p| message(&rt, p)).collect();
    for m in &timed_out {
        assert_eq!(
            m,
            "rejected due to timeout after waiting 5m0s at plugin GangScheduling"
        );
    }
    // Later attempts never bind part of the gang.
    rt.advance_to(SimTime::ZERO.plus_seconds(1800), 100_000)
        .unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
    assert_eq!(bound(&rt, &gang), 0);
    let (status, reason, _) = group_condition(&rt, "g");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "Unschedulable")
    );
}

/// minCount below the number of pods: the first minCount bind together, the rest one by one.
#[test]
fn members_beyond_min_count_bind_on_their_own() {
    let mut docs = two_gpus();
    docs.push(group("g", 2));
    docs.extend(gpu_member("w-0", "g", ""));
    docs.extend(gpu_member("w-1", "g", ""));
    docs.extend(gpu_member("w-2", "g", ""));
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(bound(&rt, &["w-0", "w-1", "w-2"]), 2);
}

mod properties {
    //! Random gangs on a cluster with a random number of GPUs: a gang is either bound to at
    //! least its minCount or not at all, at every checkpoint; when the GPUs suffice for every
    //! member that can run (CPUs never limit: members ask for 100m), a gang that timed out holds
    //! no device at the timeout (its members back off, and nothing else of it can fit).

    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct GangSpec {
        size: usize,
        min_count: usize,
        /// One member asks for a zone no node has.
        infeasible: bool,
    }

    fn gang_spec() -> impl Strategy<Value = GangSpec> {
        (1usize..=4, any::<bool>())
            .prop_flat_map(|(size, infeasible)| {
                (Just(size), 1..=size, Just(infeasible && size > 1))
            })
            .prop_map(|(size, min_count, infeasible)| GangSpec {
                size,
                min_count,
                infeasible,
            })
    }

    fn member_names(g: usize, spec: &GangSpec) -> Vec<String> {
        (0..spec.size).map(|i| format!("g{g}-{i}")).collect()
    }

    fn scenario(gangs: &[GangSpec], gpus: [usize; 3]) -> Vec<String> {
        let mut docs = vec![NODES.to_string(), GPU_CLASS.to_string()];
        for (node, count) in ["node-a", "node-b", "node-c"].iter().zip(gpus) {
            if count == 0 {
                continue;
            }
            let names: Vec<(String, &str)> =
                (0..count).map(|i| (format!("gpu-{i}"), "a")).collect();
            let devices: Vec<(&str, &str)> = names.iter().map(|(n, s)| (n.as_str(), *s)).collect();
            docs.push(slice(node, &devices, false));
        }
        for (g, spec) in gangs.iter().enumerate() {
            docs.push(group(&format!("g{g}"), spec.min_count as u32));
            for (i, name) in member_names(g, spec).iter().enumerate() {
                let extra = if spec.infeasible && i == 0 {
                    "  nodeSelector: {zone: z9}\n"
                } else {
                    ""
                };
                docs.extend(gpu_member(name, &format!("g{g}"), extra));
            }
        }
        docs
    }

    fn check_all_or_nothing(rt: &Runtime, gangs: &[GangSpec]) -> Result<(), TestCaseError> {
        for (g, spec) in gangs.iter().enumerate() {
            let names = member_names(g, spec);
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let n = bound(rt, &refs);
            prop_assert!(
                n == 0 || n >= spec.min_count,
                "gang g{g} (minCount {}) has {n} pods bound",
                spec.min_count
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn gangs_bind_all_or_nothing_and_free_what_they_held(
            gangs in prop::collection::vec(gang_spec(), 1..=3),
            gpus in [0usize..=4, 0usize..=4, 0usize..=4],
        ) {
            let mut rt = runtime(store_of(&scenario(&gangs, gpus)));
            rt.run_due(100_000).unwrap();
            prop_assert!(rt.errors().is_empty(), "{:?}", rt.errors());
            check_all_or_nothing(&rt, &gangs)?;
            let feasible: usize = gangs
                .iter()
                .map(|g| g.size - usize::from(g.infeasible))
                .sum();
            let plenty = gpus.iter().sum::<usize>() >= feasible;
            // Gangs unbound just before the timeout.
            rt.advance_to(SimTime::ZERO.plus_seconds(299), 100_000).unwrap();
            check_all_or_nothing(&rt, &gangs)?;
            let unbound: Vec<usize> = (0..gangs.len())
                .filter(|&g| {
                    let names = member_names(g, &gangs[g]);
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    bound(&rt, &refs) == 0
                })
                .collect();
            rt.advance_to(SimTime::ZERO.plus_seconds(300), 100_000).unwrap();
            prop_assert!(rt.errors().is_empty(), "{:?}", rt.errors());
            check_all_or_nothing(&rt, &gangs)?;
            if plenty {
                for &g in &unbound {
                    for name in member_names(g, &gangs[g]) {
                        prop_assert!(
                            !allocated(&rt, &format!("{name}-gpu")),
                            "{name} of timed-out gang g{g} still holds a device"
                        );
                    }
                }
            }
            for t in [301, 900, 2000] {
                rt.advance_to(SimTime::ZERO.plus_seconds(t), 100_000).unwrap();
                prop_assert!(rt.errors().is_empty(), "{:?}", rt.errors());
                check_all_or_nothing(&rt, &gangs)?;
            }
        }
    }
}
