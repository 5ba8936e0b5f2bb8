//! Time per pod admission (Topology Manager merge plus CPU, Memory and Device Managers) on the
//! 2-socket, 256-CPU, 8-NUMA-node topology of bench/kubelet, and on a 12-CPU machine.

use allot_kubelet::{Checkpoints, Node, Scenario};
use allot_kubelet_config::ValidateOptions;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

const LARGE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../bench/kubelet/topoDualSocketMultiNumaPerSocketHTLarge.yaml"
));
const SMALL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../bench/kubelet/topoDualSocketHT.yaml"
));

fn scenario(topology: &str, policy: &str, options: &str, cpus: u32) -> Scenario {
    let text = format!(
        "{topology}\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0-1\"\ntopologyManagerPolicy: {policy}\ncpuManagerPolicyOptions: {{{options}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns, uid: p}}\nspec:\n  containers:\n  - name: c\n    resources: {{requests: {{cpu: \"{cpus}\", memory: 1Gi}}, limits: {{cpu: \"{cpus}\", memory: 1Gi}}}}\n"
    );
    Scenario::parse("bench.yaml", &text).expect("scenario")
}

fn node(s: &Scenario) -> Node {
    Node::start(
        s.topology.clone(),
        &s.config,
        ValidateOptions::default(),
        &Checkpoints::default(),
    )
    .expect("node")
}

fn bench(c: &mut Criterion) {
    let cases = [
        (
            "large/packed/best-effort/16",
            scenario(LARGE, "best-effort", "", 16),
        ),
        (
            "large/distributed/restricted/48",
            scenario(
                LARGE,
                "restricted",
                "full-pcpus-only: \"true\", distribute-cpus-across-numa: \"true\"",
                48,
            ),
        ),
        (
            "small/packed/single-numa-node/4",
            scenario(SMALL, "single-numa-node", "", 4),
        ),
    ];
    for (name, s) in &cases {
        let pod = s.pods[0].clone();
        c.bench_function(&format!("admit/{name}"), |b| {
            b.iter_batched(
                || node(s),
                |mut n| {
                    let r = n.admit(&pod);
                    assert!(r.admitted);
                    n
                },
                BatchSize::SmallInput,
            )
        });
    }
}

/// The parts of one admission on the large machine: CPU hints, the hint merge, the CPU pick.
fn parts(c: &mut Criterion) {
    let s = scenario(LARGE, "best-effort", "", 16);
    let n = node(&s);
    let allot_kubelet::CpuPolicy::Static(policy) = &n.cpu else {
        return;
    };
    let available = policy.available_cpus(&n.cpu_state);
    let empty = allot_topology::CpuSet::new();
    c.bench_function("parts/large/cpu-hints/16", |b| {
        b.iter(|| policy.generate_cpu_topology_hints(&available, &empty, 16))
    });
    let hints = policy.generate_cpu_topology_hints(&available, &empty, 16);
    let providers = vec![allot_topologymanager::ProviderHints::from([(
        "cpu".to_string(),
        Some(hints),
    )])];
    c.bench_function("parts/large/merge/best-effort", |b| {
        b.iter(|| n.topology_manager.merge(&providers))
    });
    let numa0 = available.intersection(&policy.topology().cpus_in_numa_nodes(&[0]));
    c.bench_function("parts/large/take-packed/16-of-numa0", |b| {
        b.iter(|| policy.take_by_topology(&numa0, 16))
    });
}

criterion_group!(benches, bench, parts);
criterion_main!(benches);
