//! The static-policy conformance table: every scenario under
//! `tests/conformance/kubelet/static_policy/`, run the way upstream's test function named in the
//! file's `Expected.upstream.test` runs it, by one runner that reports every failing case.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use allot_cpumanager::policy_static::{
    ContainerView, CpuQuantity, PodView, PolicyError, SmtAlignmentError, StaticPolicy,
};
use allot_cpumanager::state::CpuManagerState;
use allot_kubelet_config::{
    CpuReservation, KubeletConfiguration, TopologyManagerPolicy, ValidateOptions,
};
use allot_quantity::Quantity;
use allot_topology::{CpuSet, CpuTopology, NodeTopology};
use serde_json::Value;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/static_policy"
);

/// Upstream cases whose transcription contradicts upstream's code, with the reason.
const KNOWN_DEVIATIONS: &[(&str, &str)] = &[];

struct Scenario {
    topology: NodeTopology,
    config: KubeletConfiguration,
    state: CpuManagerState,
    pods: Vec<Value>,
    expected: Value,
}

fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| e.to_string())?;
    let mut topology = None;
    let mut config = None;
    let mut state = CpuManagerState::default();
    let mut pods = Vec::new();
    let mut expected = None;
    for doc in docs {
        match doc["kind"].as_str().unwrap_or_default() {
            "NodeTopology" => {
                topology = Some(serde_json::from_value(doc).map_err(|e| format!("topology: {e}"))?)
            }
            "KubeletConfiguration" => {
                config = Some(serde_json::from_value(doc).map_err(|e| format!("config: {e}"))?)
            }
            "NodeState" => state = cpu_state(&doc["cpuManager"])?,
            "Pod" => pods.push(doc),
            "Expected" => expected = Some(doc),
            other => return Err(format!("unexpected kind {other:?}")),
        }
    }
    Ok(Scenario {
        topology: topology.ok_or("no NodeTopology")?,
        config: config.ok_or("no KubeletConfiguration")?,
        state,
        pods,
        expected: expected.ok_or("no Expected")?,
    })
}

fn cpus(v: &Value) -> Result<CpuSet, String> {
    CpuSet::parse(v.as_str().unwrap_or_default()).map_err(|e| e.to_string())
}

fn cpu_state(v: &Value) -> Result<CpuManagerState, String> {
    let mut state = CpuManagerState::with_default(cpus(&v["defaultCpuSet"])?);
    if let Some(entries) = v["entries"].as_object() {
        for (pod, containers) in entries {
            for (name, set) in containers.as_object().into_iter().flatten() {
                state.set_cpu_set(pod, name, cpus(set)?);
            }
        }
    }
    Ok(state)
}

fn quantity(v: &Value) -> Option<Quantity> {
    v.as_str().and_then(|s| Quantity::parse(s).ok())
}

/// QoS as upstream's `ComputePodQOS` for pods without pod-level resources (none of these
/// scenarios has them): Guaranteed when every container has CPU and memory limits and the summed
/// requests equal the summed limits.
fn is_guaranteed(pod: &Value) -> bool {
    let mut requests: std::collections::BTreeMap<&str, Quantity> = Default::default();
    let mut limits: std::collections::BTreeMap<&str, Quantity> = Default::default();
    let mut guaranteed = true;
    let spec = &pod["spec"];
    let all = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(spec["initContainers"].as_array().into_iter().flatten());
    for c in all {
        let res = &c["resources"];
        for (kind, map) in [("requests", &mut requests), ("limits", &mut limits)] {
            let mut found = BTreeSet::new();
            for name in ["cpu", "memory"] {
                if let Some(q) = quantity(&res[kind][name]).filter(|q| q.sign() > 0) {
                    found.insert(name);
                    let sum = map.get(name).cloned().unwrap_or_default() + q;
                    map.insert(name, sum);
                }
            }
            if kind == "limits" && found.len() != 2 {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return false;
    }
    guaranteed
        && requests.len() == limits.len()
        && requests.iter().all(|(k, v)| limits.get(k) == Some(v))
}

fn container_view(c: &Value) -> ContainerView {
    ContainerView {
        name: c["name"].as_str().unwrap_or_default().to_string(),
        cpu_request: quantity(&c["resources"]["requests"]["cpu"]).map(|q| CpuQuantity {
            value: q.value(),
            milli: q.milli_value(),
        }),
        restartable: c["restartPolicy"].as_str() == Some("Always"),
    }
}

fn pod_view(pod: &Value) -> PodView {
    let list = |key: &str| -> Vec<ContainerView> {
        pod["spec"][key]
            .as_array()
            .into_iter()
            .flatten()
            .map(container_view)
            .collect()
    };
    PodView {
        uid: pod["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        guaranteed: is_guaranteed(pod),
        init_containers: list("initContainers"),
        containers: list("containers"),
    }
}

fn policy(s: &Scenario) -> Result<StaticPolicy, String> {
    let cfg = s
        .config
        .validate_with(ValidateOptions {
            allow_zero_cpu_reservation: true,
        })
        .map_err(|e| format!("config: {e}"))?;
    let (num, reserved) = match &cfg.reserved_cpus {
        CpuReservation::Explicit(set) => (set.len(), set.iter().copied().collect::<CpuSet>()),
        CpuReservation::Count(n) => (*n as usize, CpuSet::new()),
    };
    let topo = CpuTopology::new(&s.topology).map_err(|e| format!("topology: {e}"))?;
    StaticPolicy::new(
        topo,
        num,
        &reserved,
        cfg.cpu_manager_options,
        cfg.topology_manager_policy == TopologyManagerPolicy::SingleNumaNode,
    )
    .map_err(|e| format!("policy: {e}"))
}

fn check_default(state: &CpuManagerState, expected: &Value, what: &str) -> Result<(), String> {
    let want = cpus(&expected["cpuManager"]["defaultCpuSet"])?;
    if state.default_cpu_set != want {
        return Err(format!(
            "{what}: default set {} != expected {want}",
            state.default_cpu_set
        ));
    }
    Ok(())
}

fn check_error(err: &PolicyError, exp: &Value) -> Result<(), String> {
    match exp["reason"].as_str() {
        Some("SMTAlignmentError") => {
            let want: SmtAlignmentError = serde_json::from_value(exp["errorDetail"].clone())
                .map_err(|e| format!("errorDetail: {e}"))?;
            match err {
                PolicyError::SmtAlignment(got) if *got == want => Ok(()),
                other => Err(format!("got error {other:?}, want {want:?}")),
            }
        }
        _ => {
            let want = exp["error"].as_str().unwrap_or_default();
            if err.to_string() == want {
                Ok(())
            } else {
                Err(format!("got error {err:?} ({err}), want {want:?}"))
            }
        }
    }
}

fn run(path: &Path) -> Result<(), String> {
    let mut s = load(path)?;
    let test = s.expected["upstream"]["test"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let exp = s.expected.clone();
    let mut policy = policy(&s)?;
    match test.as_str() {
        "TestStaticPolicyStart" | "TestStaticPolicyStartWithResvList" => {
            let got = policy.start(&mut s.state);
            match (got, exp["start"]["error"].as_str()) {
                (Ok(()), None) => check_default(&s.state, &exp["state"], "after start"),
                (Err(e), Some(want)) if e.to_string() == want => Ok(()),
                (got, want) => Err(format!("start: got {got:?}, want error {want:?}")),
            }
        }
        "TestStaticPolicyAdd" | "TestStaticPolicyAddWithResvList" => {
            let pod = s.pods.first().ok_or("no pod")?;
            let view = pod_view(pod);
            let container = view.containers.first().ok_or("no container")?.clone();
            let before = s.state.default_cpu_set.clone();
            let got = policy.allocate(&mut s.state, &view, &container, None);
            let pexp = &exp["pods"][0];
            let cexp = &pexp["containers"][0];
            match (got, pexp["admitted"].as_bool()) {
                (Err(e), Some(false)) => check_error(&e, pexp),
                (Ok(result), Some(true)) => {
                    let want = cpus(&cexp["cpus"])?;
                    if cexp["exclusive"].as_bool() == Some(true) {
                        match result {
                            Some(got) if got == want => Ok(()),
                            other => Err(format!("allocated {other:?}, want {want}")),
                        }
                    } else if result.is_some()
                        || s.state.cpu_set(&view.uid, &container.name).is_some()
                    {
                        Err(format!("unexpected exclusive assignment {result:?}"))
                    } else if want != before || s.state.default_cpu_set != before {
                        Err(format!(
                            "shared pool changed: {} (expected {want})",
                            s.state.default_cpu_set
                        ))
                    } else {
                        Ok(())
                    }
                }
                (got, admitted) => Err(format!("got {got:?}, expected admitted={admitted:?}")),
            }
        }
        "TestStaticPolicyAddWithUncoreAlignment" => {
            let pod = s.pods.first().ok_or("no pod")?;
            let view = pod_view(pod);
            let mut all = CpuSet::new();
            let mut first = None;
            for c in &view.containers {
                let got = policy
                    .allocate(&mut s.state, &view, c, None)
                    .map_err(|e| format!("allocate {}: {e}", c.name))?
                    .unwrap_or_default();
                if first.is_none() {
                    first = Some(got.clone());
                }
                all.union_with(&got);
            }
            let pexp = &exp["pods"][0];
            if let Some(want) = pexp["containers"][0].get("cpus") {
                let want = cpus(want)?;
                if first.as_ref() != Some(&want) {
                    return Err(format!("appContainer-0 got {first:?}, want {want}"));
                }
            }
            if pexp["uncoreCacheIDsAsserted"].as_bool() != Some(false) {
                let got: BTreeSet<u64> = all
                    .iter()
                    .filter_map(|c| policy.topology().cpu_info(c))
                    .map(|i| u64::from(i.uncore_cache))
                    .collect();
                let want: BTreeSet<u64> = pexp["uncoreCacheIDs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64)
                    .collect();
                if got != want {
                    return Err(format!("uncore caches {got:?}, want {want:?} (cpus {all})"));
                }
            }
            Ok(())
        }
        "TestStaticPolicyRemove" => {
            let pod = exp["remove"]["podUID"].as_str().unwrap_or_default();
            let container = exp["remove"]["container"].as_str().unwrap_or_default();
            policy.remove_container(&mut s.state, pod, container);
            if s.state.cpu_set(pod, container).is_some() {
                return Err("container still assigned after remove".into());
            }
            check_default(&s.state, &exp["state"], "after remove")
        }
        "TestStaticPolicyReuseCPUs" | "TestStaticPolicyDoNotReuseCPUs" => {
            let pod = s.pods.first().ok_or("no pod")?;
            let view = pod_view(pod);
            let strict = test == "TestStaticPolicyDoNotReuseCPUs";
            for c in view.init_containers.iter().chain(&view.containers) {
                let got = policy.allocate(&mut s.state, &view, c, None);
                if strict && let Err(e) = got {
                    return Err(format!("allocate {}: {e}", c.name));
                }
            }
            check_default(&s.state, &exp["state"], "after allocation")?;
            if let Some(after) = exp.get("afterRemove") {
                let pod = after["remove"]["podUID"].as_str().unwrap_or_default();
                let container = after["remove"]["container"].as_str().unwrap_or_default();
                policy.remove_container(&mut s.state, pod, container);
                check_default(&s.state, &after["state"], "after remove")?;
            }
            Ok(())
        }
        other => Err(format!("unknown upstream test {other:?}")),
    }
}

#[test]
fn static_policy_conformance() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(DIR)
        .expect("conformance dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut deviations = Vec::new();
    for f in &files {
        let name = f
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let result = run(f);
        match KNOWN_DEVIATIONS.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => {
                if result.is_ok() {
                    failures.push(format!("{name}: listed as a deviation ({why}) but passes"));
                } else {
                    deviations.push(name);
                }
            }
            None => {
                if let Err(e) = result {
                    failures.push(format!("{name}: {e}"));
                }
            }
        }
    }
    println!(
        "static policy conformance: {}/{} pass, {} known deviations",
        files.len() - failures.len() - deviations.len(),
        files.len(),
        deviations.len()
    );
    assert_eq!(files.len(), 73, "expected 73 scenarios");
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}
