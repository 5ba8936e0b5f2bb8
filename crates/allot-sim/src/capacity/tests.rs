use super::*;
use proptest::prelude::*;

const CLASS: &str = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.example.com\"'}\n";

/// Nodes with `gpus` plain GPUs each.
fn nodes(names: &[&str], gpus: usize) -> String {
    let mut out = String::new();
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

/// `count` pods, each with one claim for one GPU, labelled `app: work`.
fn pods(prefix: &str, count: usize) -> String {
    let mut out = String::from(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: one}\nspec:\n  spec:\n    devices:\n      requests: [{name: g, exactly: {deviceClassName: gpu}}]\n",
    );
    for i in 0..count {
        out.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {prefix}{i}, labels: {{app: work}}}}\nspec:\n  containers: [{{name: c, resources: {{claims: [{{name: g}}]}}}}]\n  resourceClaims: [{{name: g, resourceClaimTemplateName: one}}]\n"
        ));
    }
    out
}

/// A shape of nodes with `gpus` GPUs at `cost`.
fn shape(name: &str, gpus: usize, cost: f64) -> NodeShape {
    let mut text = format!(
        "apiVersion: allot.dev/v1alpha1\nkind: NodeShape\nmetadata: {{name: {name}}}\nspec: {{cost: {cost}}}\n"
    );
    text.push_str(&nodes(&["$(NODE_NAME)"], gpus));
    NodeShape::parse(&format!("{name}.yaml"), &text).expect("valid shape")
}

fn input(text: &str) -> Input {
    crate::load_texts(&[("cluster.yaml", text)]).expect("valid input")
}

fn unfit_with(input: &Input, shapes: &[NodeShape], counts: &[usize]) -> usize {
    let nodes = make_nodes(shapes, counts).expect("nodes");
    trial(input, &nodes, &[], &mut |_| {})
        .expect("runs")
        .unfit
        .len()
}

#[test]
fn scale_up_finds_the_smallest_count_and_places_pods_on_it() {
    // One node of two GPUs, five one-GPU pods: three pending; nodes of two GPUs: two needed.
    let text = format!("{CLASS}{}{}", nodes(&["a"], 2), pods("p", 5));
    let input = input(&text);
    let shapes = [shape("big", 2, 1.0)];
    let answer = scale_up(&input, &shapes, &[], &mut |_| {}).expect("runs");
    assert_eq!(answer.unfit_before.len(), 3);
    assert!(answer.found);
    assert_eq!(answer.counts, [2]);
    assert_eq!(answer.nodes, ["big-1", "big-2"]);
    assert_eq!(answer.placements.len(), 3);
    assert!(answer.placements.iter().all(|p| p.node.starts_with("big-")));
    // The search: nothing, then the estimate (one node takes two of the three), then one
    // fewer.
    assert_eq!(answer.estimates, [Some(2)]);
    let tried: Vec<Vec<usize>> = answer.probes.iter().map(|p| p.counts.clone()).collect();
    assert_eq!(tried, [vec![0], vec![2], vec![1]]);
    assert_eq!(unfit_with(&input, &shapes, &[1]), 1);
}

/// The counts a search of one shape probes, from `estimate`.
fn searched(
    input: &Input,
    shape: NodeShape,
    bound: usize,
    estimate: Option<usize>,
) -> (Option<usize>, Vec<usize>) {
    let shapes = numbered_past(input, &[shape]);
    let mut progress = |_: Progress| {};
    let mut search = Search {
        input,
        shapes: &shapes,
        workload: &[],
        probes: Vec::new(),
        progress: &mut progress,
        made: HashMap::new(),
    };
    let found = search
        .single(0, bound, estimate)
        .expect("runs")
        .ok()
        .map(|(n, _)| n);
    (found, search.probes.iter().map(|p| p.counts[0]).collect())
}

#[test]
fn scale_up_gallops_and_bisects() {
    // Five pending one-GPU pods, nodes of one GPU: 1, 2, 4 do not fit, 5 (the bound) does.
    // The input's node is named like an added one: the added ones are numbered past it.
    let text = format!("{CLASS}{}{}", nodes(&["one-1"], 1), pods("p", 6));
    let input = input(&text);
    assert_eq!(
        searched(&input, shape("one", 1, 1.0), 5, None),
        (Some(5), vec![1, 2, 4, 5])
    );
    // From a low estimate: up by 1, 2; from a high one: down by 1, 2, then bisection.
    assert_eq!(
        searched(&input, shape("one", 1, 1.0), 5, Some(2)),
        (Some(5), vec![2, 3, 5, 4])
    );
    assert_eq!(
        searched(&input, shape("one", 1, 1.0), 9, Some(9)),
        (Some(5), vec![9, 8, 6, 2, 4, 5])
    );
    let answer = scale_up(&input, &[shape("one", 1, 1.0)], &[], &mut |_| {}).expect("runs");
    assert_eq!(answer.counts, [5]);
    assert_eq!(answer.estimates, [Some(5)]);
    assert_eq!(answer.nodes.first().map(String::as_str), Some("one-2"));
    let tried: Vec<usize> = answer.probes.iter().map(|p| p.counts[0]).collect();
    assert_eq!(tried, [0, 5, 4]);
    // Seven pending: 1, 2, 4, 7 (the bound), then 5, 6 by bisection.
    let text = format!("{CLASS}{}{}", nodes(&["a"], 1), pods("p", 8));
    let input = crate::load_texts(&[("cluster.yaml", &text)]).expect("valid");
    assert_eq!(
        searched(&input, shape("one", 1, 1.0), 7, None),
        (Some(7), vec![1, 2, 4, 7, 5, 6])
    );
}

#[test]
fn scale_up_prefers_the_cheapest_mix() {
    // Three pending one-GPU pods: three small (cost 3) or two big (cost 3) alone; one big and
    // one small together cost 2.5.
    let text = format!("{CLASS}{}{}", nodes(&["a"], 1), pods("p", 4));
    let input = input(&text);
    let shapes = [shape("small", 1, 1.0), shape("big", 2, 1.5)];
    let answer = scale_up(&input, &shapes, &[], &mut |_| {}).expect("runs");
    assert!(answer.found);
    assert_eq!(answer.counts, [1, 1]);
    assert_eq!(answer.cost, 2.5);
    assert!(!answer.budget_exhausted);
    assert_eq!(unfit_with(&input, &shapes, &[1, 1]), 0);
    assert!(unfit_with(&input, &shapes, &[0, 1]) > 0);
}

#[test]
fn scale_up_says_what_never_fits() {
    // A pod asking for three GPUs never fits on nodes of two.
    let mut text = format!("{CLASS}{}", nodes(&["a"], 2));
    text.push_str("---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: three}\nspec:\n  spec:\n    devices:\n      requests: [{name: g, exactly: {deviceClassName: gpu, count: 3}}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: huge}\nspec:\n  containers: [{name: c, resources: {claims: [{name: g}]}}]\n  resourceClaims: [{name: g, resourceClaimTemplateName: three}]\n");
    let input = input(&text);
    let answer = scale_up(&input, &[shape("big", 2, 1.0)], &[], &mut |_| {}).expect("runs");
    assert!(!answer.found);
    assert_eq!(answer.still_unfit.len(), 1);
    assert_eq!(answer.still_unfit[0].pod, "default/huge");
    assert!(
        answer.still_unfit[0].reason.contains("Unschedulable"),
        "{:?}",
        answer.still_unfit
    );
}

#[test]
fn scale_up_for_a_workload() {
    let text = format!("{CLASS}{}", nodes(&["a"], 1));
    let input = input(&text);
    let work = crate::load_texts(&[("work.yaml", &pods("w", 3))]).expect("valid");
    let workload = workload_objects(work.objects);
    assert_eq!(workload_pods(&workload).len(), 3);
    let answer = scale_up(&input, &[shape("one", 1, 1.0)], &workload, &mut |_| {}).expect("runs");
    assert_eq!(answer.counts, [2]);
}

#[test]
fn consolidation_removes_what_the_rest_can_hold() {
    // Three nodes of four GPUs, four one-GPU pods: one node holds them all.
    let text = format!("{CLASS}{}{}", nodes(&["a", "b", "c"], 4), pods("p", 4));
    let input = input(&text);
    let answer = consolidate(&input, usize::MAX, &mut |_| {}).expect("runs");
    assert_eq!(answer.removable.len(), 2, "{answer:?}");
    assert_eq!(answer.tried.len(), 3);
    let removed: BTreeSet<String> = answer.removable.iter().cloned().collect();
    let session = Session::start(
        &input,
        SessionOptions {
            without_nodes: Some(&removed),
            ..Default::default()
        },
        &mut |_| {},
    )
    .expect("runs");
    assert!(judge(session.store()).unfit.is_empty());
}

#[test]
fn consolidation_respects_a_budget_that_allows_no_disruption() {
    let mut text = format!("{CLASS}{}{}", nodes(&["a", "b"], 4), pods("p", 1));
    text.push_str("---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep}\nspec: {maxUnavailable: 0, selector: {matchLabels: {app: work}}}\n");
    let input = input(&text);
    let answer = consolidate(&input, usize::MAX, &mut |_| {}).expect("runs");
    // The empty node goes; the one with the pod stays because of the budget.
    assert_eq!(answer.removable.len(), 1, "{answer:?}");
    let blocked = answer
        .tried
        .iter()
        .find(|c| !c.removable)
        .expect("one kept");
    assert_eq!(blocked.pods, 1);
    assert!(
        blocked
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("default/keep")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// The suggested count makes everything fit, one fewer does not; removing the suggested
    /// nodes leaves nothing pending.
    #[test]
    fn suggested_nodes_are_enough_and_needed(existing in 1usize..3, pending in 1usize..6, per_node in 1usize..4) {
        let text = format!("{CLASS}{}{}", nodes(&["a"], existing), pods("p", existing + pending));
        let input = input(&text);
        let shapes = [shape("s", per_node, 1.0)];
        let answer = scale_up(&input, &shapes, &[], &mut |_| {}).expect("runs");
        prop_assert!(answer.found);
        prop_assert_eq!(answer.counts[0], pending.div_ceil(per_node));
        prop_assert_eq!(unfit_with(&input, &shapes, &answer.counts), 0);
        prop_assert!(unfit_with(&input, &shapes, &[answer.counts[0] - 1]) > 0);

        let names: Vec<String> = (0..3).map(|i| format!("n{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let text = format!("{CLASS}{}{}", nodes(&refs, per_node + 1), pods("q", pending));
        let input = crate::load_texts(&[("c.yaml", &text)]).expect("valid");
        let answer = consolidate(&input, usize::MAX, &mut |_| {}).expect("runs");
        let removed: BTreeSet<String> = answer.removable.iter().cloned().collect();
        let session = Session::start(&input, SessionOptions { without_nodes: Some(&removed), ..Default::default() }, &mut |_| {}).expect("runs");
        prop_assert!(judge(session.store()).unfit.is_empty());
        // Greedy: the rest cannot hold the pods without one more node... at least it keeps enough GPUs.
        prop_assert!((3 - removed.len()) * (per_node + 1) >= pending);
    }
}

#[test]
fn a_workload_fits_partly_with_reasons_grouped() {
    let text = format!("{CLASS}{}", nodes(&["a"], 2));
    let input = input(&text);
    let work = crate::load_texts(&[("work.yaml", &pods("w", 3))]).expect("valid");
    let answer = workload_fit(&input, &workload_objects(work.objects), &mut |_| {}).expect("runs");
    assert_eq!(answer.verdict, Verdict::Partly);
    assert_eq!((answer.pods, answer.placed.len()), (3, 2));
    assert_eq!(answer.reasons.len(), 1);
    assert_eq!(answer.reasons[0].pods.len(), 1);
    assert!(answer.displaced.is_empty());
    let none = workload_fit(
        &crate::load_texts(&[("c.yaml", CLASS)]).expect("valid"),
        &workload_objects(
            crate::load_texts(&[("w.yaml", &pods("w", 1))])
                .expect("valid")
                .objects,
        ),
        &mut |_| {},
    )
    .expect("runs");
    assert_eq!(none.verdict, Verdict::Not);
}

/// What a trial judges, run recorded (Ledger and EventRecorder) and unrecorded.
fn judged_both_ways(input: &Input) -> (String, String) {
    let judged = |unrecorded: bool| {
        let session = Session::start(
            input,
            SessionOptions {
                unrecorded,
                ..Default::default()
            },
            &mut |_| {},
        )
        .expect("the input runs");
        let trial = judge(session.store());
        format!("{:?}\n{:?}", trial.placements, trial.unfit)
    };
    (judged(false), judged(true))
}

#[test]
fn trials_without_events_place_as_recorded_runs_do() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut paths = Vec::new();
    for dir in ["examples/spec", "crates/allot/tests/simulate", "examples"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("listed").flatten() {
            paths.push(entry.path());
        }
    }
    paths.sort();
    let mut checked = 0;
    let mut with_unfit = 0;
    for path in paths {
        // Inputs that do not load (bad input on purpose, what-if pods alone) are not runs.
        let Ok(input) = crate::load_paths(std::slice::from_ref(&path)) else {
            continue;
        };
        let (recorded, unrecorded) = judged_both_ways(&input);
        assert_eq!(recorded, unrecorded, "{}", path.display());
        checked += 1;
        with_unfit += usize::from(!recorded.ends_with("[]"));
    }
    assert!(checked > 20, "only {checked} inputs ran");
    assert!(
        with_unfit > 3,
        "only {with_unfit} inputs leave pods unplaced"
    );
    // A crowded generated cluster: pods placed by claim templates, many left pending.
    let input = crate::generate::load_generated(crate::generate::GenOptions {
        nodes: 20,
        devices_per_node: 4,
        pods: 120,
    })
    .expect("generated");
    let (recorded, unrecorded) = judged_both_ways(&input);
    assert_eq!(recorded, unrecorded);
}
