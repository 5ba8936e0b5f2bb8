use super::*;
use proptest::prelude::*;

/// Two sockets of one NUMA node each, two uncore caches on the first, two threads per core.
fn machine() -> NodeTopology {
    let mut cpus = Vec::new();
    for id in 0..12u32 {
        let core = id / 2;
        let socket = u32::from(core >= 4);
        cpus.push(serde_json::json!({
            "id": id, "core": core, "socket": socket, "numa": socket,
            "uncoreCache": if socket == 0 { core / 2 } else { 2 },
        }));
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "NodeTopology",
        "metadata": {"name": "n"},
        "cpus": cpus,
        "numaNodes": [{"id": 0, "memory": "8Gi"}, {"id": 1, "memory": "8Gi"}],
    }))
    .expect("a machine")
}

/// Devices on NUMA 0 and 1, one without a NUMA node, one on a NUMA node without CPUs.
fn devices(owners: &[Option<Owner>]) -> Vec<Device> {
    let numas = [Some(0), Some(1), None, Some(7), Some(0)];
    owners
        .iter()
        .enumerate()
        .map(|(i, owner)| Device {
            label: format!("gpu.example.com gpu-{i}"),
            numa: numas[i % numas.len()],
            owner: owner.clone(),
        })
        .collect()
}

fn picture<'a>(
    topology: &'a NodeTopology,
    cpus: &[Owner],
    device_owners: &[Option<Owner>],
) -> Picture<'a> {
    Picture {
        name: "node-<1>@a".into(),
        topology,
        cpus: topology
            .cpus
            .iter()
            .zip(cpus.iter().cycle())
            .map(|(c, o)| (c.id, o.clone()))
            .collect(),
        devices: devices(device_owners),
        rejected: Vec::new(),
    }
}

#[test]
fn the_template_filled_in_is_the_drawing() {
    let topology = machine();
    let a = Owner::Exclusive("ns/a".into(), "c".into());
    let b = Owner::Pod("ns/b".into());
    let p = picture(
        &topology,
        &[Owner::Reserved, Owner::Shared, a.clone(), Owner::Shared],
        &[Some(b.clone()), None, Some(a), None, Some(b)],
    );
    let drawn = svg(&p);
    let filled = template(&p).fill(&p.name, &paint(&p));
    assert_eq!(filled, drawn);
    assert!(drawn.starts_with("<svg class=\"machine\""), "{drawn}");
    assert!(drawn.contains("node-&lt;1&gt;&#64;a"), "{drawn}");
    assert_eq!(drawn.matches("class=\"cpu\"").count(), 12);
    assert_eq!(drawn.matches("class=\"device\"").count(), 5);
    assert_eq!(drawn.matches("class=\"cache\"").count(), 3);
    assert_eq!(drawn.matches("class=\"legend\"").count(), 4);
    assert!(drawn.contains("devices without a NUMA node"));
    assert!(drawn.contains("<title>gpu.example.com gpu-1: free</title>"));
    assert!(drawn.contains("<title>gpu.example.com gpu-0: ns/b</title>"));
    assert!(drawn.contains("<title>CPU 2: ns/a/c</title>"));
    // The template has no owner in it, only slots; the name and height are placeholders.
    let t = template(&p);
    assert!(!t.body.contains("ns/a") && t.body.contains("@f0@") && t.body.contains("@h@"));
}

#[test]
fn a_drawing_lists_the_pods_not_admitted() {
    let topology = machine();
    let mut p = picture(&topology, &[Owner::Shared], &[]);
    p.rejected.push(Rejected {
        pod: "ns/big".into(),
        reason: "UnexpectedAdmissionError".into(),
        message: "not <enough>".into(),
    });
    let drawn = svg(&p);
    assert!(drawn.contains("not admitted"));
    assert!(drawn.contains("ns/big (UnexpectedAdmissionError): not &lt;enough&gt;"));
    assert!(!drawn.contains("class=\"device\""));
}

fn owner() -> impl Strategy<Value = Owner> {
    prop_oneof![
        Just(Owner::Reserved),
        Just(Owner::Shared),
        Just(Owner::Unknown),
        (0..4u8).prop_map(|i| Owner::Exclusive(format!("ns/p{i}"), "c".into())),
        (0..4u8).prop_map(|i| Owner::PodShared(format!("ns/p{i}"))),
        (0..4u8).prop_map(|i| Owner::Pod(format!("ns/<q{i}>&"))),
    ]
}

proptest! {
    /// Whoever holds what: one layout's template filled in with a node's owners is that
    /// node's drawing.
    #[test]
    fn any_owners_fill_the_template_into_the_drawing(
        cpus in proptest::collection::vec(owner(), 1..12),
        devices in proptest::collection::vec(proptest::option::of(owner()), 0..9),
    ) {
        let topology = machine();
        let p = picture(&topology, &cpus, &devices);
        prop_assert_eq!(template(&p).fill(&p.name, &paint(&p)), svg(&p));
    }
}
