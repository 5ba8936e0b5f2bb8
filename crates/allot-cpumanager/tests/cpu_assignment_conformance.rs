//! Upstream's CPU-assignment tables (tests/conformance/kubelet/cpu_assignment), run by one table
//! runner that reports every failing case by name.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use allot_cpumanager::{
    CpuAccumulator, CpuSortingStrategy, take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
};
use allot_topology::{CpuSet, CpuTopology, NodeTopology};
use serde_json::Value;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/cpu_assignment"
);
const TOPOLOGIES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topologies"
);

fn load_topology(
    cache: &mut BTreeMap<String, CpuTopology>,
    name: &str,
) -> Result<CpuTopology, String> {
    if let Some(t) = cache.get(name) {
        return Ok(t.clone());
    }
    let path = Path::new(TOPOLOGIES).join(format!("{name}.yaml"));
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let node = NodeTopology::from_yaml_str(&text).map_err(|e| format!("{name}: {e}"))?;
    let topo = CpuTopology::new(&node).map_err(|e| format!("{name}: {e}"))?;
    cache.insert(name.to_string(), topo.clone());
    Ok(topo)
}

fn str_field<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string field {key}"))
}

fn num_field(v: &Value, key: &str) -> Result<usize, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .map(|n| n as usize)
        .ok_or_else(|| format!("missing number field {key}"))
}

fn set_field(v: &Value, key: &str) -> Result<CpuSet, String> {
    CpuSet::parse(str_field(v, key)?).map_err(|e| e.to_string())
}

fn sort_field(v: &Value) -> Result<CpuSortingStrategy, String> {
    match v.get("cpu_sorting_strategy").and_then(Value::as_str) {
        None => Ok(CpuSortingStrategy::Packed),
        Some(s) => s
            .parse()
            .map_err(|e: allot_cpumanager::TakeError| e.to_string()),
    }
}

/// Runs one case; `Ok(())` when it matches, else a description of the difference.
fn run_case(case: &Value, cache: &mut BTreeMap<String, CpuTopology>) -> Result<(), String> {
    let topo = load_topology(cache, str_field(case, "topology")?)?;
    let input = case.get("input").ok_or("missing input")?;
    let expected = case.get("expected").ok_or("missing expected")?;
    let available = set_field(input, "available_cpus")?;
    let sort = sort_field(input)?;
    match str_field(case, "kind")? {
        "take_by_topology" => {
            let n = num_field(input, "num_cpus")?;
            let flag = |k: &str| input.get(k).and_then(Value::as_bool).unwrap_or(false);
            let got = match str_field(input, "algorithm")? {
                "packed" => take_by_topology_numa_packed(
                    &topo,
                    &available,
                    n,
                    sort,
                    flag("prefer_align_by_uncore_cache"),
                ),
                "distributed" => take_by_topology_numa_distributed(
                    &topo,
                    &available,
                    n,
                    num_field(input, "cpu_group_size")?,
                    sort,
                    flag("align_by_socket"),
                ),
                other => return Err(format!("unknown algorithm {other}")),
            };
            let want_cpus = set_field(expected, "cpus")?;
            let want_err = expected.get("error").and_then(Value::as_str);
            match (&got, want_err) {
                (Ok(cpus), None) if *cpus == want_cpus => Ok(()),
                (Err(e), Some(msg)) if e.to_string() == msg => Ok(()),
                _ => Err(format!(
                    "got {got:?}, want cpus {want_cpus} error {want_err:?}"
                )),
            }
        }
        "accumulator_query" => {
            let acc = CpuAccumulator::new(&topo, &available, 0, sort);
            let mut got = match str_field(input, "query")? {
                "free_cpus" => acc.free_cpus(),
                "free_cores" => acc.free_cores(),
                "free_sockets" => acc.free_sockets(),
                "free_numa_nodes" => acc.free_numa_nodes(),
                "free_uncore_caches" => acc.free_uncore_caches(),
                other => return Err(format!("unknown query {other}")),
            };
            let mut want: Vec<u32> = expected
                .get("ids")
                .and_then(Value::as_array)
                .ok_or("missing ids")?
                .iter()
                .map(|v| v.as_u64().map(|n| n as u32).ok_or("bad id"))
                .collect::<Result<_, _>>()?;
            if input
                .get("compare_unordered")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                got.sort_unstable();
                want.sort_unstable();
            }
            if got == want {
                Ok(())
            } else {
                Err(format!("got {got:?}, want {want:?}"))
            }
        }
        "accumulator_take" => {
            let mut acc =
                CpuAccumulator::new(&topo, &available, num_field(input, "num_cpus")?, sort);
            for take in input
                .get("takes")
                .and_then(Value::as_array)
                .ok_or("missing takes")?
            {
                let set =
                    CpuSet::parse(take.as_str().ok_or("bad take")?).map_err(|e| e.to_string())?;
                acc.take(&set);
            }
            let got = (acc.is_satisfied(), acc.is_failed(), acc.num_cpus_needed());
            let want = (
                expected
                    .get("satisfied")
                    .and_then(Value::as_bool)
                    .ok_or("missing satisfied")?,
                expected
                    .get("failed")
                    .and_then(Value::as_bool)
                    .ok_or("missing failed")?,
                expected
                    .get("num_cpus_needed")
                    .and_then(Value::as_i64)
                    .ok_or("missing num_cpus_needed")?,
            );
            if got == want {
                Ok(())
            } else {
                Err(format!("got {got:?}, want {want:?}"))
            }
        }
        other => Err(format!("unknown kind {other}")),
    }
}

#[test]
fn cpu_assignment_conformance() {
    let mut files: Vec<_> = fs::read_dir(CASES)
        .expect("conformance directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut cache = BTreeMap::new();
    let mut failures = Vec::new();
    for path in &files {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let outcome = fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
            .and_then(|case| run_case(&case, &mut cache));
        if let Err(why) = outcome {
            failures.push(format!("{name}: {why}"));
        }
    }
    println!(
        "cpu_assignment conformance: {}/{} pass",
        files.len() - failures.len(),
        files.len()
    );
    assert_eq!(files.len(), 116, "expected 116 conformance cases");
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
