//! Discovery of a machine's `NodeTopology` from Linux sysfs. This is the crate's only I/O.
//!
//! What is read, relative to the sysfs root (normally `/sys`):
//! - `devices/system/cpu/online` (else each `cpuN/online`, cpu0 counting as online when absent);
//!   offline CPUs are left out, as cadvisor leaves them out.
//! - `devices/system/cpu/cpuN/topology/{core_id,physical_package_id}` (a CPU without them is
//!   skipped, as cadvisor skips it).
//! - `devices/system/cpu/cpuN/cache/indexK/{level,id,shared_cpu_list}`: the level-3 cache is the
//!   uncore cache; its `id`, else the lowest CPU of `shared_cpu_list`. Without an L3 the socket
//!   id is used, as the kubelet does when cadvisor reports no uncore cache.
//! - `devices/system/node/nodeN/{cpulist,meminfo,distance}` and
//!   `nodeN/hugepages/hugepages-<size>kB/nr_hugepages`. Without a node directory every CPU is on
//!   NUMA node 0, as cadvisor assumes.
//!
//! Core ids: sysfs `core_id` is only unique within a package (and is often sparse, e.g. hybrid
//! CPUs). cadvisor groups threads by (NUMA node, package, `core_id`), not by die; the kubelet names
//! each core by its lowest thread id (`getUniqueCoreID`). The same is done here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::{ByteSize, CpuInfo, CpuSet, NodeTopology, NumaDistance, NumaNode, TopologyError};

/// Errors from sysfs discovery (the crate's error type).
pub type DiscoverError = TopologyError;

fn read(path: &Path) -> Result<String, TopologyError> {
    fs::read_to_string(path).map_err(|e| TopologyError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

fn read_opt(path: &Path) -> Result<Option<String>, TopologyError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TopologyError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

fn parse_num<T: std::str::FromStr>(path: &Path, text: &str) -> Result<T, TopologyError> {
    text.trim().parse().map_err(|_| TopologyError::Sysfs {
        path: path.display().to_string(),
        content: text.trim().to_string(),
        reason: "expected an integer".to_string(),
    })
}

fn parse_list(path: &Path, text: &str) -> Result<CpuSet, TopologyError> {
    CpuSet::parse(text).map_err(|e| TopologyError::Sysfs {
        path: path.display().to_string(),
        content: text.trim().to_string(),
        reason: e.to_string(),
    })
}

/// Numbered entries `<prefix>N` of a directory, ascending by N.
fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<(u32, PathBuf)>, TopologyError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(TopologyError::Io {
                path: dir.display().to_string(),
                message: e.to_string(),
            });
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| TopologyError::Io {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
            && let Ok(n) = rest.parse::<u32>()
        {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn online_cpus(cpu_dir: &Path) -> Result<CpuSet, TopologyError> {
    let online_path = cpu_dir.join("online");
    if let Some(text) = read_opt(&online_path)? {
        return parse_list(&online_path, &text);
    }
    let mut set = CpuSet::new();
    for (id, dir) in numbered_entries(cpu_dir, "cpu")? {
        let path = dir.join("online");
        let online = match read_opt(&path)? {
            Some(text) => parse_num::<u32>(&path, &text)? == 1,
            None => true,
        };
        if online {
            set.insert(id);
        }
    }
    Ok(set)
}

fn uncore_cache_id(cpu_path: &Path) -> Result<Option<u32>, TopologyError> {
    for (_, index) in numbered_entries(&cpu_path.join("cache"), "index")? {
        let level_path = index.join("level");
        let Some(level) = read_opt(&level_path)? else {
            continue;
        };
        if parse_num::<u32>(&level_path, &level)? != 3 {
            continue;
        }
        let id_path = index.join("id");
        if let Some(id) = read_opt(&id_path)? {
            return Ok(Some(parse_num(&id_path, &id)?));
        }
        let shared_path = index.join("shared_cpu_list");
        if let Some(shared) = read_opt(&shared_path)? {
            return Ok(parse_list(&shared_path, &shared)?.first());
        }
    }
    Ok(None)
}

fn meminfo_total(path: &Path, text: &str) -> Result<Option<ByteSize>, TopologyError> {
    for line in text.lines() {
        // "Node 0 MemTotal:       16329620 kB"
        let Some((_, rest)) = line.split_once("MemTotal:") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let value: u64 = parse_num(path, parts.next().unwrap_or(""))?;
        let factor = match parts.next() {
            Some("kB") => 1024,
            None => 1,
            Some(other) => {
                return Err(TopologyError::Sysfs {
                    path: path.display().to_string(),
                    content: line.trim().to_string(),
                    reason: format!("unknown unit {other:?}"),
                });
            }
        };
        return Ok(Some(ByteSize(value.saturating_mul(factor))));
    }
    Ok(None)
}

fn hugepages(node_dir: &Path) -> Result<BTreeMap<String, ByteSize>, TopologyError> {
    let mut out = BTreeMap::new();
    let dir = node_dir.join("hugepages");
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => {
            return Err(TopologyError::Io {
                path: dir.display().to_string(),
                message: e.to_string(),
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(|e| TopologyError::Io {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        let name = entry.file_name();
        let Some(size_kb) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hugepages-"))
            .and_then(|n| n.strip_suffix("kB"))
        else {
            continue;
        };
        let path = entry.path();
        let size: u64 = parse_num(&path, size_kb)?;
        let count_path = path.join("nr_hugepages");
        let count: u64 = parse_num(&count_path, &read(&count_path)?)?;
        let page = ByteSize(size.saturating_mul(1024));
        out.insert(
            format!("hugepages-{page}"),
            ByteSize(page.0.saturating_mul(count)),
        );
    }
    Ok(out)
}

/// Reads the machine topology under `sysfs_root` (normally `/sys`).
pub fn discover(sysfs_root: &Path) -> Result<NodeTopology, DiscoverError> {
    let cpu_dir = sysfs_root.join("devices/system/cpu");
    let node_dir = sysfs_root.join("devices/system/node");
    let online = online_cpus(&cpu_dir)?;

    // NUMA node of each CPU, and the nodes themselves.
    let mut numa_of: BTreeMap<u32, u32> = BTreeMap::new();
    let nodes = numbered_entries(&node_dir, "node")?;
    for (node, dir) in &nodes {
        let path = dir.join("cpulist");
        if let Some(text) = read_opt(&path)? {
            for cpu in &parse_list(&path, &text)? {
                numa_of.entry(cpu).or_insert(*node);
            }
        }
    }

    struct Raw {
        id: u32,
        core_id: u32,
        package: u32,
        numa: u32,
        uncore: Option<u32>,
    }
    let mut raws = Vec::new();
    for cpu in &online {
        let dir = cpu_dir.join(format!("cpu{cpu}"));
        let core_path = dir.join("topology/core_id");
        let package_path = dir.join("topology/physical_package_id");
        // cadvisor skips a CPU whose core or package id file is missing; so does this.
        let (Some(core_text), Some(package_text)) =
            (read_opt(&core_path)?, read_opt(&package_path)?)
        else {
            continue;
        };
        let core_id: i64 = parse_num(&core_path, &core_text)?;
        let package: i64 = parse_num(&package_path, &package_text)?;
        // Some platforms report -1 for an unknown package or core; treat it as 0 as cadvisor does.
        raws.push(Raw {
            id: cpu,
            core_id: u32::try_from(core_id).unwrap_or(0),
            package: u32::try_from(package).unwrap_or(0),
            numa: numa_of.get(&cpu).copied().unwrap_or(0),
            uncore: uncore_cache_id(&dir)?,
        });
    }
    if raws.is_empty() {
        return Err(TopologyError::NoCpus {
            path: cpu_dir.display().to_string(),
        });
    }

    // Unique core id: the lowest thread of each (NUMA node, package, core_id) group.
    let mut lowest: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    for r in &raws {
        let e = lowest.entry((r.numa, r.package, r.core_id)).or_insert(r.id);
        *e = (*e).min(r.id);
    }

    let mut topo = NodeTopology::new("");
    for r in &raws {
        topo.cpus.push(CpuInfo {
            id: r.id,
            core: lowest
                .get(&(r.numa, r.package, r.core_id))
                .copied()
                .unwrap_or(r.id),
            socket: r.package,
            numa: r.numa,
            uncore_cache: r.uncore.unwrap_or(r.package),
        });
    }

    // NUMA nodes: every node directory, or a single node 0 when there is none.
    let node_ids: Vec<u32> = if nodes.is_empty() {
        let ids: BTreeSet<u32> = topo.cpus.iter().map(|c| c.numa).collect();
        ids.into_iter().collect()
    } else {
        nodes.iter().map(|(n, _)| *n).collect()
    };
    for id in &node_ids {
        let mut node = NumaNode {
            id: *id,
            memory: None,
            hugepages: BTreeMap::new(),
            distances: Vec::new(),
            machine_info: None,
            derived: false,
        };
        if let Some((_, dir)) = nodes.iter().find(|(n, _)| n == id) {
            let meminfo = dir.join("meminfo");
            if let Some(text) = read_opt(&meminfo)? {
                node.memory = meminfo_total(&meminfo, &text)?;
            }
            node.hugepages = hugepages(dir)?;
            let distance = dir.join("distance");
            if let Some(text) = read_opt(&distance)? {
                for (i, d) in text.split_whitespace().enumerate() {
                    if let Some(other) = node_ids.get(i) {
                        node.distances.push(NumaDistance {
                            node: *other,
                            distance: parse_num(&distance, d)?,
                        });
                    }
                }
            }
        }
        topo.numa_nodes.push(node);
    }
    topo.validate()?;
    Ok(topo)
}
