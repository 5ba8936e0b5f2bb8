use super::*;
use allot_api::core::v1::PodSchedulingGroup;
use allot_api::resource::v1::AllocationResult;
use allot_api::scheduling::v1beta1::PodGroupResourceClaim;
use allot_runtime::{Runtime, SimTime};

fn template(ns: &str, name: &str) -> ResourceClaimTemplate {
    let mut t = ResourceClaimTemplate::default();
    t.metadata.namespace = ns.into();
    t.metadata.name = name.into();
    t.spec.metadata.labels.insert("team".into(), "ml".into());
    t
}

fn pod(ns: &str, name: &str, claims: &[(&str, Option<&str>, Option<&str>)]) -> Pod {
    let mut p = Pod::default();
    p.metadata.namespace = ns.into();
    p.metadata.name = name.into();
    p.spec.resource_claims = claims
        .iter()
        .map(|(n, claim, template)| PodResourceClaim {
            name: n.to_string(),
            resource_claim_name: claim.map(String::from),
            resource_claim_template_name: template.map(String::from),
        })
        .collect();
    p
}

fn run(store: Store, workload: bool) -> Runtime {
    let controller = ResourceClaimController::new(ResourceClaimControllerConfig {
        workload_resource_claims: workload,
    });
    let mut rt = Runtime::new(store, vec![Box::new(controller)], SimTime::ZERO);
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 10_000)
        .unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
    rt
}

#[test]
fn generate_name_truncates_both_parts_in_proportion() {
    assert_eq!(generate_name("pod", "gpu"), "pod-gpu-");
    let long = generate_name(&"p".repeat(60), &"c".repeat(30));
    assert!(long.len() <= MAX_GENERATE_NAME_BASE, "{long}");
    assert_eq!(long, format!("{}-{}", "p".repeat(37), "c".repeat(18)));
}

#[test]
fn a_template_claim_is_generated_owned_and_recorded() {
    let mut store = Store::new();
    store.create(template("ns", "gpu-template"), "t").unwrap();
    store
        .create(
            pod("ns", "trainer", &[("gpu", None, Some("gpu-template"))]),
            "t",
        )
        .unwrap();
    let rt = run(store, false);
    let pod = rt.store.get::<Pod>("ns", "trainer").unwrap();
    let status = &pod.status.resource_claim_statuses;
    assert_eq!(status.len(), 1);
    let name = status[0].resource_claim_name.clone().unwrap();
    assert!(
        name.starts_with("trainer-gpu-") && name.len() == "trainer-gpu-".len() + 5,
        "{name}"
    );
    let claim = rt.store.get::<ResourceClaim>("ns", &name).unwrap();
    assert_eq!(claim.metadata.annotations[POD_CLAIM_NAME_ANNOTATION], "gpu");
    assert_eq!(claim.metadata.labels["team"], "ml");
    assert_eq!(claim.metadata.owner_references[0].kind, "Pod");
    assert_eq!(claim.metadata.owner_references[0].uid, pod.metadata.uid);
    // Idempotent: exactly one claim.
    assert_eq!(rt.store.list::<ResourceClaim>().count(), 1);
}

#[test]
fn a_missing_template_waits_until_it_is_created() {
    let mut store = Store::new();
    store
        .create(pod("ns", "p", &[("gpu", None, Some("later"))]), "t")
        .unwrap();
    let mut rt = run(store, false);
    assert_eq!(rt.store.list::<ResourceClaim>().count(), 0);
    rt.store.create(template("ns", "later"), "t").unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    assert_eq!(rt.store.list::<ResourceClaim>().count(), 1);
}

#[test]
fn a_finished_pod_releases_and_deletes_its_generated_claim() {
    let mut store = Store::new();
    store.create(template("ns", "t1"), "t").unwrap();
    store
        .create(pod("ns", "p", &[("gpu", None, Some("t1"))]), "t")
        .unwrap();
    let mut rt = run(store, false);
    let name = rt
        .store
        .list::<ResourceClaim>()
        .next()
        .unwrap()
        .metadata
        .name
        .clone();
    // The scheduler allocates and reserves it.
    let p = rt.store.get::<Pod>("ns", "p").unwrap().clone();
    rt.store
        .modify::<ResourceClaim, _>("ns", &name, |c| {
            c.status.allocation = Some(AllocationResult::default());
            c.status.reserved_for.push(pod_reference(&p));
        })
        .unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    assert!(
        rt.store
            .get::<ResourceClaim>("ns", &name)
            .unwrap()
            .status
            .allocation
            .is_some()
    );
    rt.store
        .modify::<Pod, _>("ns", "p", |p| p.status.phase = Some("Succeeded".into()))
        .unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    assert!(rt.store.get::<ResourceClaim>("ns", &name).is_none());
}

#[test]
fn a_shared_claim_is_deallocated_when_its_last_consumer_goes() {
    let mut store = Store::new();
    let mut claim = ResourceClaim::default();
    claim.metadata.namespace = "ns".into();
    claim.metadata.name = "shared".into();
    store.create(claim, "t").unwrap();
    let a = store
        .create(pod("ns", "a", &[("c", Some("shared"), None)]), "t")
        .unwrap();
    let b = store
        .create(pod("ns", "b", &[("c", Some("shared"), None)]), "t")
        .unwrap();
    store
        .modify::<ResourceClaim, _>("ns", "shared", |c| {
            c.status.allocation = Some(AllocationResult::default());
            c.status.reserved_for = vec![pod_reference(&a), pod_reference(&b)];
        })
        .unwrap();
    let mut rt = run(store, false);
    rt.store
        .delete(&ObjectKey::new(Kind::Pod, "ns", "a"))
        .unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    let c = rt.store.get::<ResourceClaim>("ns", "shared").unwrap();
    assert_eq!(c.status.reserved_for.len(), 1);
    assert!(c.status.allocation.is_some());
    rt.store
        .delete(&ObjectKey::new(Kind::Pod, "ns", "b"))
        .unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    let c = rt.store.get::<ResourceClaim>("ns", "shared").unwrap();
    assert!(c.status.reserved_for.is_empty());
    assert!(
        c.status.allocation.is_none(),
        "unreserved claims are deallocated"
    );
}

#[test]
fn a_deleted_claim_nobody_uses_is_deallocated_and_released() {
    let mut store = Store::new();
    let mut claim = ResourceClaim::default();
    claim.metadata.namespace = "ns".into();
    claim.metadata.name = "mine".into();
    claim
        .metadata
        .finalizers
        .push(allot_api::resource::v1::FINALIZER.into());
    store.create(claim, "t").unwrap();
    let a = store
        .create(pod("ns", "a", &[("c", Some("mine"), None)]), "t")
        .unwrap();
    store
        .modify::<ResourceClaim, _>("ns", "mine", |c| {
            c.status.allocation = Some(AllocationResult::default());
            c.status.reserved_for = vec![pod_reference(&a)];
            c.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
        })
        .unwrap();
    // Still in use: the finalizer stays.
    let mut rt = run(store, false);
    let c = rt.store.get::<ResourceClaim>("ns", "mine").unwrap();
    assert_eq!(c.metadata.finalizers.len(), 1);
    assert!(c.status.allocation.is_some());
    rt.store
        .delete(&ObjectKey::new(Kind::Pod, "ns", "a"))
        .unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    let c = rt.store.get::<ResourceClaim>("ns", "mine").unwrap();
    assert!(
        c.metadata.finalizers.is_empty(),
        "{:?}",
        c.metadata.finalizers
    );
    assert!(c.status.allocation.is_none());
    assert!(c.status.reserved_for.is_empty());
}

#[test]
fn a_pre_scheduled_pod_gets_allocated_claims_reserved() {
    let mut store = Store::new();
    let mut claim = ResourceClaim::default();
    claim.metadata.namespace = "ns".into();
    claim.metadata.name = "mine".into();
    claim.status.allocation = Some(AllocationResult::default());
    let other = store
        .create(pod("ns", "other", &[("c", Some("mine"), None)]), "t")
        .unwrap();
    claim.status.reserved_for = vec![pod_reference(&other)];
    store.create(claim, "t").unwrap();
    let mut p = pod("ns", "bound", &[("c", Some("mine"), None)]);
    p.spec.node_name = Some("node-1".into());
    store.create(p, "t").unwrap();
    let rt = run(store, false);
    let c = rt.store.get::<ResourceClaim>("ns", "mine").unwrap();
    let names: Vec<_> = c
        .status
        .reserved_for
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["other", "bound"]);
}

#[test]
fn an_allocated_claim_that_was_never_reserved_keeps_its_allocation() {
    // Upstream deallocates only on the transition from used to unused: a claim given with an
    // allocation and no consumer (a pre-scheduled pod's claim) must survive until the pod
    // reserves it.
    let mut store = Store::new();
    let mut claim = ResourceClaim::default();
    claim.metadata.namespace = "ns".into();
    claim.metadata.name = "preallocated".into();
    claim.status.allocation = Some(AllocationResult::default());
    store.create(claim, "t").unwrap();
    let mut p = pod("ns", "bound", &[("c", Some("preallocated"), None)]);
    p.spec.node_name = Some("node-1".into());
    store.create(p, "t").unwrap();
    let rt = run(store, false);
    let c = rt.store.get::<ResourceClaim>("ns", "preallocated").unwrap();
    assert!(c.status.allocation.is_some(), "deallocated before use");
    let names: Vec<_> = c
        .status
        .reserved_for
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["bound"]);
}

fn group_setup(store: &mut Store) {
    store.create(template("ns", "pg-template"), "t").unwrap();
    let mut group = PodGroup::default();
    group.metadata.namespace = "ns".into();
    group.metadata.name = "training-group".into();
    group.spec.resource_claims = vec![PodGroupResourceClaim {
        name: "pg-claim-template".into(),
        resource_claim_name: None,
        resource_claim_template_name: Some("pg-template".into()),
    }];
    store.create(group, "t").unwrap();
    for name in ["w1", "w2"] {
        let mut p = pod(
            "ns",
            name,
            &[("pg-claim-template", None, Some("pg-template"))],
        );
        p.spec.scheduling_group = Some(PodSchedulingGroup {
            pod_group_name: "training-group".into(),
        });
        store.create(p, "t").unwrap();
    }
}

#[test]
fn pod_group_claims_are_generated_once_and_shared() {
    let mut store = Store::new();
    group_setup(&mut store);
    let rt = run(store, true);
    let claims: Vec<_> = rt.store.list::<ResourceClaim>().collect();
    assert_eq!(claims.len(), 1);
    let name = &claims[0].metadata.name;
    assert!(name.starts_with("training-group-pg-claim-template-"));
    assert_eq!(claims[0].metadata.owner_references[0].kind, "PodGroup");
    for p in ["w1", "w2"] {
        let pod = rt.store.get::<Pod>("ns", p).unwrap();
        assert_eq!(
            pod.status.resource_claim_statuses[0]
                .resource_claim_name
                .as_ref(),
            Some(name)
        );
    }
}

#[test]
fn pod_group_claims_are_not_generated_without_the_feature() {
    let mut store = Store::new();
    group_setup(&mut store);
    let rt = run(store, false);
    assert_eq!(rt.store.list::<ResourceClaim>().count(), 0);
    assert!(
        rt.store
            .get::<Pod>("ns", "w1")
            .unwrap()
            .status
            .resource_claim_statuses
            .is_empty()
    );
}

#[test]
fn a_deleted_pod_releases_and_deletes_its_extended_resource_claim() {
    let mut store = Store::new();
    let p = store.create(pod("ns", "p", &[]), "t").unwrap();
    let mut claim = ResourceClaim::default();
    claim.metadata.namespace = "ns".into();
    claim.metadata.name = "p-extended-resources-abcde".into();
    claim.metadata.annotations.insert(
        allot_api::resource::v1::EXTENDED_RESOURCE_CLAIM_ANNOTATION.into(),
        "true".into(),
    );
    claim.metadata.owner_references = vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: "p".into(),
        uid: p.metadata.uid.clone(),
        controller: Some(true),
        block_owner_deletion: None,
    }];
    claim.status.allocation = Some(AllocationResult::default());
    claim.status.reserved_for.push(pod_reference(&p));
    store.create(claim, "t").unwrap();
    store
        .modify::<Pod, _>("ns", "p", |p| {
            p.status.extended_resource_claim_status = Some(serde_json::json!({
                "requestMappings": [],
                "resourceClaimName": "p-extended-resources-abcde"
            }));
        })
        .unwrap();
    assert_eq!(
        extended_resource_claim_name(store.get::<Pod>("ns", "p").unwrap()).as_deref(),
        Some("p-extended-resources-abcde")
    );
    let mut rt = run(store, false);
    // While the pod lives, the claim stays allocated and reserved.
    let kept = rt
        .store
        .get::<ResourceClaim>("ns", "p-extended-resources-abcde")
        .unwrap();
    assert_eq!(kept.status.reserved_for.len(), 1);
    rt.store
        .delete(&ObjectKey::new(Kind::Pod, "ns", "p"))
        .unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    assert!(
        rt.store
            .get::<ResourceClaim>("ns", "p-extended-resources-abcde")
            .is_none()
    );
}

#[test]
fn a_claim_generated_before_is_found_by_its_owner_and_not_made_again() {
    let mut store = Store::new();
    store.create(template("ns", "gpu-template"), "t").unwrap();
    let p = store
        .create(
            pod("ns", "trainer", &[("gpu", None, Some("gpu-template"))]),
            "t",
        )
        .unwrap();
    let owned = |name: &str, uid: &str| {
        let mut claim = ResourceClaim::default();
        claim.metadata.namespace = "ns".into();
        claim.metadata.name = name.into();
        claim
            .metadata
            .annotations
            .insert(POD_CLAIM_NAME_ANNOTATION.into(), "gpu".into());
        claim.metadata.owner_references = vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "trainer".into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: None,
        }];
        claim
    };
    // One claim of another owner (same name, older uid) and the pod's own, given in the input.
    store.create(owned("a-stale", "old-uid"), "t").unwrap();
    store.create(owned("b-mine", &p.metadata.uid), "t").unwrap();
    let rt = run(store, false);
    let pod = rt.store.get::<Pod>("ns", "trainer").unwrap();
    assert_eq!(
        pod.status.resource_claim_statuses[0]
            .resource_claim_name
            .as_deref(),
        Some("b-mine")
    );
    // Nothing new was generated (the stale claim's owner is gone, so it is deleted).
    let names: Vec<&str> = rt
        .store
        .list::<ResourceClaim>()
        .map(|c| c.metadata.name.as_str())
        .collect();
    assert_eq!(names, vec!["b-mine"]);
}

/// The controller as it was before events were filtered: every pod event wakes the pod and
/// the claims it names, every claim event the claim.
struct WakeAll(ResourceClaimController);

impl Controller for WakeAll {
    fn name(&self) -> &'static str {
        "wake-all"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        let ns = event.key.namespace.as_str();
        match &event.object {
            Stored::Pod(pod) => {
                let mut keys = vec![event.key.clone()];
                keys.extend(
                    pod_claim_names(store, pod)
                        .into_iter()
                        .filter_map(|(_, name)| name)
                        .chain(extended_resource_claim_name(pod))
                        .map(|name| ObjectKey::new(Kind::ResourceClaim, ns, name)),
                );
                keys
            }
            Stored::ResourceClaim(_) => vec![event.key.clone()],
            _ => self.0.keys_for(event, store),
        }
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        self.0.reconcile(store, key, ctx)
    }
}

/// Runs `setup`'s store and then `steps` (each followed by a run until idle) with the
/// filtering controller and with [`WakeAll`]; both must end with the same objects. Returns the
/// reconciles of both.
fn same_as_waking_everything(
    setup: impl Fn(&mut Store),
    steps: &[&dyn Fn(&mut Store)],
    workload: bool,
) -> (u64, u64) {
    let config = ResourceClaimControllerConfig {
        workload_resource_claims: workload,
    };
    let mut outcomes = Vec::new();
    for wake_all in [false, true] {
        let mut store = Store::new();
        setup(&mut store);
        let controller: Box<dyn Controller> = if wake_all {
            Box::new(WakeAll(ResourceClaimController::new(config)))
        } else {
            Box::new(ResourceClaimController::new(config))
        };
        let mut rt = Runtime::new(store, vec![controller], SimTime::ZERO);
        rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 10_000)
            .unwrap();
        for step in steps {
            step(&mut rt.store);
            rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 10_000)
                .unwrap();
        }
        assert!(rt.errors().is_empty(), "{:?}", rt.errors());
        let objects: Vec<(ObjectKey, Stored)> = rt
            .store
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        outcomes.push((objects, rt.reconciles()));
    }
    assert_eq!(outcomes[0].0, outcomes[1].0);
    (outcomes[0].1, outcomes[1].1)
}

#[test]
fn waking_only_for_work_ends_where_waking_for_everything_does() {
    // A template pod that gets allocated, reserved, bound and finishes.
    let allocate = |store: &mut Store| {
        let p = store.get::<Pod>("ns", "p").unwrap().clone();
        let name = p.status.resource_claim_statuses[0]
            .resource_claim_name
            .clone()
            .unwrap();
        store
            .modify::<ResourceClaim, _>("ns", &name, |c| {
                c.status.allocation = Some(AllocationResult::default());
                c.status.reserved_for.push(pod_reference(&p));
            })
            .unwrap();
        store
            .modify::<Pod, _>("ns", "p", |p| p.spec.node_name = Some("n".into()))
            .unwrap();
        store
            .modify::<Pod, _>("ns", "p", |p| p.status.phase = Some("Running".into()))
            .unwrap();
    };
    let finish = |store: &mut Store| {
        store
            .modify::<Pod, _>("ns", "p", |p| p.status.phase = Some("Succeeded".into()))
            .unwrap();
    };
    let (filtered, all) = same_as_waking_everything(
        |store| {
            store.create(template("ns", "t1"), "t").unwrap();
            store
                .create(pod("ns", "p", &[("gpu", None, Some("t1"))]), "t")
                .unwrap();
        },
        &[&allocate, &finish],
        false,
    );
    // One reconcile makes the claim and records it, one deletes it at the end; the echoes of
    // those writes and the other loops' updates wake nothing.
    assert_eq!(filtered, 2, "against {all} when waking for everything");
    assert!(all > 2 * filtered);

    // Shared and pre-scheduled claims, consumers going away.
    let delete_a = |store: &mut Store| {
        store.delete(&ObjectKey::new(Kind::Pod, "ns", "a")).unwrap();
    };
    let add_bound = |store: &mut Store| {
        let mut p = pod("ns", "bound", &[("c", Some("shared"), None)]);
        p.spec.node_name = Some("node-1".into());
        store.create(p, "t").unwrap();
    };
    let delete_all = |store: &mut Store| {
        for name in ["b", "bound"] {
            store
                .delete(&ObjectKey::new(Kind::Pod, "ns", name))
                .unwrap();
        }
    };
    same_as_waking_everything(
        |store| {
            let mut claim = ResourceClaim::default();
            claim.metadata.namespace = "ns".into();
            claim.metadata.name = "shared".into();
            store.create(claim, "t").unwrap();
            let a = store
                .create(pod("ns", "a", &[("c", Some("shared"), None)]), "t")
                .unwrap();
            let b = store
                .create(pod("ns", "b", &[("c", Some("shared"), None)]), "t")
                .unwrap();
            store
                .modify::<ResourceClaim, _>("ns", "shared", |c| {
                    c.status.allocation = Some(AllocationResult::default());
                    c.status.reserved_for = vec![pod_reference(&a), pod_reference(&b)];
                })
                .unwrap();
        },
        &[&delete_a, &add_bound, &delete_all],
        false,
    );

    // PodGroup claims, with and without the feature, and the group going away.
    let delete_group = |store: &mut Store| {
        store
            .delete(&ObjectKey::new(Kind::PodGroup, "ns", "training-group"))
            .unwrap();
    };
    for workload in [false, true] {
        same_as_waking_everything(group_setup, &[&delete_group], workload);
    }
}

#[test]
fn the_echo_of_its_own_write_wakes_nothing() {
    let mut store = Store::new();
    store.create(template("ns", "t1"), "t").unwrap();
    store
        .create(pod("ns", "p", &[("gpu", None, Some("t1"))]), "t")
        .unwrap();
    let mut controller = ResourceClaimController::new(ResourceClaimControllerConfig::default());
    let added = store.events_since(0).last().unwrap().clone();
    assert_eq!(
        controller.keys_for(&added, &store),
        vec![ObjectKey::new(Kind::Pod, "ns", "p")]
    );
    let before = store.resource_version();
    let ctx = Context { now: SimTime::ZERO };
    controller.reconcile(&mut store, &added.key, &ctx).unwrap();
    // The claim was created and the pod's status records it: neither event is work.
    let events = store.events_since(before).to_vec();
    assert_eq!(events.len(), 2);
    for event in &events {
        assert!(controller.keys_for(event, &store).is_empty(), "{event:?}");
    }
    // The claim losing its template-made claim status would be work again.
    store
        .modify::<Pod, _>("ns", "p", |p| p.status.resource_claim_statuses.clear())
        .unwrap();
    let cleared = store.events_since(0).last().unwrap().clone();
    assert_eq!(
        controller.keys_for(&cleared, &store),
        vec![cleared.key.clone()]
    );
}

#[test]
fn a_pod_bound_without_the_scheduler_gets_no_claim_for_extended_resources() {
    // Upstream only the scheduler's DynamicResources plugin makes the claim for extended
    // resources backed by DRA (in PreBind); the ResourceClaim controller never does, so a pod
    // created with spec.nodeName gets none (the kubelet then drops extended resources that
    // its node does not list from admission, KEP-5004).
    let mut store = Store::new();
    let mut p = pod("ns", "direct", &[]);
    p.spec.node_name = Some("node-1".into());
    let mut container = allot_api::core::v1::Container {
        name: "main".into(),
        ..Default::default()
    };
    container.resources.get_or_insert_default().requests.insert(
        "example.com/gpu".into(),
        allot_api::Quantity::parse("1").unwrap(),
    );
    p.spec.containers.push(container);
    store.create(p, "t").unwrap();
    let rt = run(store, false);
    assert_eq!(rt.store.list::<ResourceClaim>().count(), 0);
    assert_eq!(rt.reconciles(), 0);
}
