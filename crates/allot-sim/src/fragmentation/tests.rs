use super::*;

/// Nodes `names`, each with `gpus` plain GPUs of the class `gpu` (two NUMA nodes' worth of
/// devices, numbered), as manifests.
fn gpu_nodes(names: &[&str], gpus: usize) -> String {
    let mut out = String::from(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.example.com\"'}\n",
    );
    for name in names {
        out.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\nstatus:\n  capacity: {{cpu: '16', memory: 64Gi, pods: '110'}}\n  allocatable: {{cpu: '16', memory: 64Gi, pods: '110'}}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {name}-gpus}}\nspec:\n  driver: gpu.example.com\n  nodeName: {name}\n  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}\n  devices:\n"
        ));
        for i in 0..gpus {
            out.push_str(&format!("  - name: gpu-{i}\n"));
        }
    }
    out
}

/// A pod with a claim from template `template`, pinned to `node` by node selector (or free).
fn pod(name: &str, template: &str, node: Option<&str>) -> String {
    let selector = node.map_or(String::new(), |n| {
        format!("  nodeSelector: {{kubernetes.io/hostname: {n}}}\n")
    });
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n{selector}  containers: [{{name: c, resources: {{claims: [{{name: g}}]}}}}]\n  resourceClaims: [{{name: g, resourceClaimTemplateName: {template}}}]\n"
    )
}

fn template(name: &str, count: u32) -> String {
    format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {{name: {name}}}\nspec:\n  spec:\n    devices:\n      requests: [{{name: g, exactly: {{deviceClassName: gpu, count: {count}}}}}]\n"
    )
}

/// Runs the cluster and measures it: the one place that calls the API.
fn check(text: &str, options: &Options) -> Fragmentation {
    let input = crate::load_texts(&[("cluster.yaml", text)]).expect("valid input");
    let outcome = crate::run(&input, &mut |_| {}).expect("runs");
    fragmentation(
        &outcome.store,
        &|node| Some(input.node_setup(node)),
        &input.features,
        options,
    )
}

fn class<'a>(f: &'a Fragmentation, name: &str) -> &'a ClassFragmentation {
    f.classes.iter().find(|c| c.class == name).expect("class")
}

#[test]
fn free_devices_and_shape_fits_per_node_and_class() {
    let mut text = gpu_nodes(&["a", "b"], 4);
    text.push_str(&template("one", 1));
    text.push_str(&template("two", 2));
    // Three one-GPU pods on a, one two-GPU pod on b.
    for i in 0..3 {
        text.push_str(&pod(&format!("p{i}"), "one", Some("a")));
    }
    text.push_str(&pod("q", "two", Some("b")));
    let f = check(&text, &Options::default());
    let gpu = class(&f, "gpu");
    assert_eq!(
        (gpu.devices, gpu.allocated, gpu.free, gpu.blocked),
        (8, 5, 3, 0)
    );
    assert_eq!(gpu.free_units, 3.0);
    // The two shapes: three claims of "one", one of "two".
    assert_eq!(
        f.shapes
            .iter()
            .map(|s| (s.name.as_str(), s.claims))
            .collect::<Vec<_>>(),
        [("default/one", 3), ("default/two", 1)]
    );
    assert_eq!(gpu.largest_shape.as_deref(), Some("default/two"));
    // a has one GPU left (no pair), b two (one pair): one stranded of three.
    let fits: Vec<(&str, usize)> = gpu
        .fits
        .iter()
        .map(|f| (f.shape.as_str(), f.copies))
        .collect();
    assert_eq!(fits, [("default/one", 3), ("default/two", 1)]);
    assert_eq!(gpu.stranded_units, 1.0);
    assert_eq!(gpu.score, 0.3333);
    let a = &f.nodes[0];
    assert_eq!(a.node, "a");
    assert_eq!(a.classes[0].free, 1);
    assert_eq!(a.classes[0].stranded_units, 1.0);
    assert_eq!(f.nodes[1].classes[0].stranded_units, 0.0);
}

#[test]
fn a_given_shape_is_measured_too_and_an_empty_cluster_is_not_fragmented() {
    let text = gpu_nodes(&["a"], 8);
    let spec: ResourceClaimSpec = serde_json::from_value(serde_json::json!({
        "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu", "count": 3}}]}
    }))
    .unwrap();
    let options = Options {
        shapes: vec![GivenShape {
            name: "three".into(),
            namespace: "default".into(),
            spec,
        }],
        ..Options::default()
    };
    let f = check(&text, &options);
    let gpu = class(&f, "gpu");
    assert_eq!(
        gpu.fits,
        [ShapeFit {
            shape: "three".into(),
            copies: 2
        }]
    );
    // Two of eight GPUs cannot serve a third copy.
    assert_eq!(
        (gpu.free_units, gpu.stranded_units, gpu.score),
        (8.0, 2.0, 0.25)
    );
    assert!(f.shapes[0].given);
    assert_eq!(f.shapes[0].description, "3×gpu");
}

const MIG: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: mig}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: v1
kind: Node
metadata: {name: a, labels: {kubernetes.io/hostname: a}}
status:
  allocatable: {cpu: '16', memory: 64Gi, pods: '110'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: a-counters}
spec:
  driver: gpu.example.com
  nodeName: a
  pool: {name: a, generation: 1, resourceSliceCount: 2}
  sharedCounters:
  - name: gpu-0
    counters: {slices: {value: "4"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: a-devices}
spec:
  driver: gpu.example.com
  nodeName: a
  pool: {name: a, generation: 1, resourceSliceCount: 2}
  devices:
  - name: gpu-0-whole
    attributes: {size: {int: 4}}
    consumesCounters: [{counterSet: gpu-0, counters: {slices: {value: "4"}}}]
  - name: gpu-0-half-0
    attributes: {size: {int: 2}}
    consumesCounters: [{counterSet: gpu-0, counters: {slices: {value: "2"}}}]
  - name: gpu-0-half-1
    attributes: {size: {int: 2}}
    consumesCounters: [{counterSet: gpu-0, counters: {slices: {value: "2"}}}]
  - name: gpu-0-quarter-0
    attributes: {size: {int: 1}}
    consumesCounters: [{counterSet: gpu-0, counters: {slices: {value: "1"}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: quarter}
spec:
  spec:
    devices:
      requests:
      - name: g
        exactly:
          deviceClassName: mig
          selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].size == 1'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: half}
spec:
  spec:
    devices:
      requests:
      - name: g
        exactly:
          deviceClassName: mig
          selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].size == 2'}}]
---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec:
  containers: [{name: c, resources: {claims: [{name: g}]}}]
  resourceClaims: [{name: g, resourceClaimTemplateName: quarter}]
"#;

#[test]
fn counters_block_partitions_and_count_as_fractions() {
    let mut text = MIG.to_string();
    // A half that never fits (its pod is pinned elsewhere) makes "half" a common shape.
    text.push_str("---\napiVersion: v1\nkind: Pod\nmetadata: {name: other}\nspec:\n  nodeSelector: {kubernetes.io/hostname: nowhere}\n  containers: [{name: c, resources: {claims: [{name: g}]}}]\n  resourceClaims: [{name: g, resourceClaimTemplateName: half}]\n");
    let f = check(MIG, &Options::default());
    let mig = class(&f, "mig");
    // The quarter is in use: the whole GPU is blocked, the halves (2+2 of 4 with 1 used: one
    // half still fits) — free are the two halves, blocked the whole.
    assert_eq!(
        (mig.devices, mig.allocated, mig.free, mig.blocked),
        (4, 1, 2, 1)
    );
    assert_eq!(mig.free_units, 0.75);
    let a = &f.nodes[0];
    assert_eq!(a.counters.len(), 1);
    assert_eq!(
        (a.counters[0].total.as_str(), a.counters[0].free.as_str()),
        ("4", "3")
    );
    let f = check(&text, &Options::default());
    let mig = class(&f, "mig");
    assert_eq!(mig.largest_shape.as_deref(), Some("default/half"));
    // One half fits in the 3 free slices; one slice is stranded: 0.25 of 0.75.
    assert_eq!(
        mig.fits
            .iter()
            .find(|f| f.shape == "default/half")
            .map(|f| f.copies),
        Some(1)
    );
    assert_eq!((mig.stranded_units, mig.score), (0.25, 0.3333));
}

const NIC: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic}
spec:
  selectors:
  - cel: {expression: 'device.driver == "nic.example.com"'}
---
apiVersion: v1
kind: Node
metadata: {name: a, labels: {kubernetes.io/hostname: a}}
status:
  allocatable: {cpu: '16', memory: 64Gi, pods: '110'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: a-nics}
spec:
  driver: nic.example.com
  nodeName: a
  pool: {name: a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: eth1
    allowMultipleAllocations: true
    capacity:
      bandwidth:
        value: 10G
        requestPolicy: {default: 1G, validRange: {min: 1G, step: 1G}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: three-gig}
spec:
  spec:
    devices:
      requests:
      - name: n
        exactly: {deviceClassName: nic, capacity: {requests: {bandwidth: 3G}}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, resources: {claims: [{name: n}]}}]
  resourceClaims: [{name: n, resourceClaimTemplateName: three-gig}]
"#;

#[test]
fn consumable_capacity_is_shared_and_measured_by_what_is_left() {
    let f = check(NIC, &Options::default());
    let nic = class(&f, "nic");
    assert_eq!((nic.devices, nic.allocated, nic.free), (1, 1, 0));
    assert_eq!(nic.free_units, 0.7);
    // Two more 3G shares fit in the 7G left; 1G is stranded.
    assert_eq!(nic.fits[0].copies, 2);
    assert_eq!(nic.stranded_units, 0.1);
    let capacity = &f.nodes[0].capacity[0];
    assert_eq!(
        (capacity.total.as_str(), capacity.free.as_str()),
        ("10G", "7000000000")
    );
}

const CPUS: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: a, labels: {kubernetes.io/hostname: a}}
status:
  allocatable: {cpu: '8', memory: 32Gi, pods: '110'}
---
apiVersion: allot.dev/v1alpha1
kind: NodeTopology
metadata: {name: a}
cpus:
- {id: 0, core: 0, socket: 0, numa: 0}
- {id: 1, core: 1, socket: 0, numa: 0}
- {id: 2, core: 2, socket: 0, numa: 0}
- {id: 3, core: 3, socket: 0, numa: 0}
- {id: 4, core: 4, socket: 1, numa: 1}
- {id: 5, core: 5, socket: 1, numa: 1}
- {id: 6, core: 6, socket: 1, numa: 1}
- {id: 7, core: 7, socket: 1, numa: 1}
numaNodes:
- {id: 0, memory: 16Gi}
- {id: 1, memory: 16Gi}
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0"
---
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
"#;

#[test]
fn exclusive_cpus_that_cannot_be_handed_out_numa_aligned_are_stranded() {
    let f = check(CPUS, &Options::default());
    let cpus = f.nodes[0].cpus.as_ref().expect("static policy");
    // Seven allocatable (CPU 0 reserved), two taken by the pod.
    assert_eq!((cpus.allocatable, cpus.free), (7, 5));
    assert_eq!(cpus.free_by_numa.iter().map(|n| n.free).sum::<usize>(), 5);
    assert_eq!(
        f.cpus.sizes,
        [CpuSize {
            cpus: 2,
            containers: 1
        }]
    );
    // Five free CPUs: two NUMA-aligned pairs, one CPU stranded.
    assert_eq!(cpus.fits, [CpuFit { cpus: 2, copies: 2 }]);
    assert_eq!((f.cpus.free, f.cpus.stranded, f.cpus.score), (5, 1, 0.2));
    // A size of four: the pod took CPUs 1-2 of NUMA node 0, so only NUMA node 1 (4-7) can
    // still give four aligned CPUs; CPU 3 is stranded.
    let f = check(
        CPUS,
        &Options {
            cpu_sizes: vec![4],
            ..Options::default()
        },
    );
    assert_eq!(f.cpus.largest, Some(4));
    assert_eq!(
        f.cpus.fits,
        [CpuFit { cpus: 2, copies: 2 }, CpuFit { cpus: 4, copies: 1 }]
    );
    assert_eq!((f.cpus.stranded, f.cpus.score), (1, 0.2));
    assert_eq!(
        f.nodes[0].cpus.as_ref().map(|c| c.free_by_numa.clone()),
        Some(vec![
            NumaFree { numa: 0, free: 1 },
            NumaFree { numa: 1, free: 4 }
        ])
    );
}
