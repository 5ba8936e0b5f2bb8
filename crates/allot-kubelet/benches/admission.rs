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

criterion_group!(benches, bench);
criterion_main!(benches);
