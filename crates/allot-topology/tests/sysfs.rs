//! sysfs discovery against fake sysfs trees shaped like real machines.

use std::fs;
use std::path::Path;

use allot_topology::{ByteSize, CpuInfo, NodeTopology, discover};

/// One logical CPU of a fake machine.
struct Cpu {
    id: u32,
    core_id: u32,
    package: u32,
    online: bool,
    /// L3 cache: (id, shared_cpu_list); `None` for no L3.
    l3: Option<(u32, &'static str)>,
}

/// One NUMA node of a fake machine.
struct Node {
    id: u32,
    cpulist: &'static str,
    mem_kb: u64,
    hugepages: &'static [(u64, u64)],
    distance: &'static str,
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

/// Lays out a sysfs tree. `global_online` writes devices/system/cpu/online; otherwise each CPU
/// except cpu0 gets its own `online` file, as on kernels with hot-pluggable CPUs.
fn build(root: &Path, cpus: &[Cpu], nodes: &[Node], global_online: Option<&str>) {
    let cpu_dir = root.join("devices/system/cpu");
    fs::create_dir_all(&cpu_dir).expect("mkdir");
    if let Some(list) = global_online {
        write(&cpu_dir.join("online"), &format!("{list}\n"));
    }
    for cpu in cpus {
        let dir = cpu_dir.join(format!("cpu{}", cpu.id));
        if global_online.is_none() && cpu.id != 0 {
            write(&dir.join("online"), if cpu.online { "1\n" } else { "0\n" });
        }
        if !cpu.online {
            // Offline CPUs have no topology directory.
            fs::create_dir_all(&dir).expect("mkdir");
            continue;
        }
        write(&dir.join("topology/core_id"), &format!("{}\n", cpu.core_id));
        write(
            &dir.join("topology/physical_package_id"),
            &format!("{}\n", cpu.package),
        );
        // L1d and L2 are per core; they must not be mistaken for the uncore cache.
        write(&dir.join("cache/index0/level"), "1\n");
        write(&dir.join("cache/index0/id"), &format!("{}\n", cpu.core_id));
        write(&dir.join("cache/index2/level"), "2\n");
        write(&dir.join("cache/index2/id"), &format!("{}\n", cpu.core_id));
        if let Some((id, shared)) = cpu.l3 {
            write(&dir.join("cache/index3/level"), "3\n");
            write(&dir.join("cache/index3/id"), &format!("{id}\n"));
            write(
                &dir.join("cache/index3/shared_cpu_list"),
                &format!("{shared}\n"),
            );
        }
    }
    for node in nodes {
        let dir = root.join(format!("devices/system/node/node{}", node.id));
        write(&dir.join("cpulist"), &format!("{}\n", node.cpulist));
        write(
            &dir.join("meminfo"),
            &format!(
                "Node {} MemTotal:       {} kB\nNode {} MemFree:        1000 kB\n",
                node.id, node.mem_kb, node.id
            ),
        );
        write(&dir.join("distance"), &format!("{}\n", node.distance));
        for (size_kb, nr) in node.hugepages {
            write(
                &dir.join(format!("hugepages/hugepages-{size_kb}kB/nr_hugepages")),
                &format!("{nr}\n"),
            );
        }
    }
    // Unrelated entries that discovery must skip.
    fs::create_dir_all(cpu_dir.join("cpuidle")).expect("mkdir");
    fs::create_dir_all(root.join("devices/system/node/power")).expect("mkdir");
}

fn cpu(id: u32, core: u32, socket: u32, numa: u32, uncore_cache: u32) -> CpuInfo {
    CpuInfo {
        id,
        core,
        socket,
        numa,
        uncore_cache,
    }
}

fn discovered(cpus: &[Cpu], nodes: &[Node], online: Option<&str>) -> NodeTopology {
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path(), cpus, nodes, online);
    discover(dir.path()).expect("discover")
}

fn on(id: u32, core_id: u32, package: u32, l3: Option<(u32, &'static str)>) -> Cpu {
    Cpu {
        id,
        core_id,
        package,
        online: true,
        l3,
    }
}

#[test]
fn single_socket_smt() {
    // 4 cores x 2 threads; thread siblings are (i, i+4).
    let cpus: Vec<Cpu> = (0..8).map(|i| on(i, i % 4, 0, Some((0, "0-7")))).collect();
    let nodes = [Node {
        id: 0,
        cpulist: "0-7",
        mem_kb: 16 << 20,
        hugepages: &[(2048, 0)],
        distance: "10",
    }];
    let topo = discovered(&cpus, &nodes, Some("0-7"));
    let want: Vec<CpuInfo> = (0..8).map(|i| cpu(i, i % 4, 0, 0, 0)).collect();
    assert_eq!(topo.cpus, want);
    assert_eq!(topo.numa_nodes.len(), 1);
    assert_eq!(topo.numa_nodes[0].memory, Some(ByteSize(16 << 30)));
    assert_eq!(
        topo.numa_nodes[0].hugepages.get("hugepages-2Mi"),
        Some(&ByteSize(0))
    );
    assert_eq!(topo.numa_distance(0, 0), Some(10));
}

#[test]
fn two_sockets_per_socket_core_ids_become_unique() {
    // Each package numbers its cores 0 and 1; threads: package 0 = cpus 0,1,4,5; package 1 = 2,3,6,7.
    let layout = [
        (0, 0, 0),
        (1, 1, 0),
        (2, 0, 1),
        (3, 1, 1),
        (4, 0, 0),
        (5, 1, 0),
        (6, 0, 1),
        (7, 1, 1),
    ];
    let cpus: Vec<Cpu> = layout
        .iter()
        .map(|&(id, core, pkg)| {
            on(
                id,
                core,
                pkg,
                Some((pkg, if pkg == 0 { "0-1,4-5" } else { "2-3,6-7" })),
            )
        })
        .collect();
    let nodes = [
        Node {
            id: 0,
            cpulist: "0-1,4-5",
            mem_kb: 8 << 20,
            hugepages: &[(2048, 512), (1048576, 2)],
            distance: "10 21",
        },
        Node {
            id: 1,
            cpulist: "2-3,6-7",
            mem_kb: 8 << 20,
            hugepages: &[(2048, 0), (1048576, 0)],
            distance: "21 10",
        },
    ];
    let topo = discovered(&cpus, &nodes, Some("0-7"));
    let want = vec![
        cpu(0, 0, 0, 0, 0),
        cpu(1, 1, 0, 0, 0),
        cpu(2, 2, 1, 1, 1),
        cpu(3, 3, 1, 1, 1),
        cpu(4, 0, 0, 0, 0),
        cpu(5, 1, 0, 0, 0),
        cpu(6, 2, 1, 1, 1),
        cpu(7, 3, 1, 1, 1),
    ];
    assert_eq!(topo.cpus, want);
    assert_eq!(
        topo.numa_nodes[0].hugepages.get("hugepages-2Mi"),
        Some(&ByteSize(1 << 30))
    );
    assert_eq!(
        topo.numa_nodes[0].hugepages.get("hugepages-1Gi"),
        Some(&ByteSize(2 << 30))
    );
    assert_eq!(topo.numa_distance(0, 1), Some(21));
    assert_eq!(topo.numa_distance(1, 1), Some(10));
}

#[test]
fn sub_numa_clustering() {
    // 2 sockets x 2 NUMA nodes (SNC2) x 2 cores, no SMT; one L3 per socket.
    let cpus: Vec<Cpu> = (0..8)
        .map(|i| {
            let pkg = i / 4;
            on(
                i,
                i % 4,
                pkg,
                Some((pkg, if pkg == 0 { "0-3" } else { "4-7" })),
            )
        })
        .collect();
    let d = ["10 11 21 21", "11 10 21 21", "21 21 10 11", "21 21 11 10"];
    let nodes = [
        Node {
            id: 0,
            cpulist: "0-1",
            mem_kb: 4 << 20,
            hugepages: &[],
            distance: d[0],
        },
        Node {
            id: 1,
            cpulist: "2-3",
            mem_kb: 4 << 20,
            hugepages: &[],
            distance: d[1],
        },
        Node {
            id: 2,
            cpulist: "4-5",
            mem_kb: 4 << 20,
            hugepages: &[],
            distance: d[2],
        },
        Node {
            id: 3,
            cpulist: "6-7",
            mem_kb: 4 << 20,
            hugepages: &[],
            distance: d[3],
        },
    ];
    let topo = discovered(&cpus, &nodes, Some("0-7"));
    let want: Vec<CpuInfo> = (0..8).map(|i| cpu(i, i, i / 4, i / 2, i / 4)).collect();
    assert_eq!(topo.cpus, want);
    assert_eq!(topo.numa_distance(1, 0), Some(11));
    assert_eq!(topo.numa_distance(1, 3), Some(21));
    let view = allot_topology::CpuTopology::new(&topo).expect("view");
    assert_eq!(view.numa_nodes_in_sockets(&[1]).to_string(), "2-3");
}

#[test]
fn hybrid_p_and_e_cores_without_numa_directory() {
    // 2 P-cores with SMT (core_id 0 and 4), 4 E-cores (core_id 8..11); no node directory, so
    // everything is NUMA node 0; one shared L3 without an id file (shared_cpu_list gives it).
    let layout = [
        (0, 0),
        (1, 0),
        (2, 4),
        (3, 4),
        (4, 8),
        (5, 9),
        (6, 10),
        (7, 11),
    ];
    let cpus: Vec<Cpu> = layout
        .iter()
        .map(|&(id, core)| on(id, core, 0, Some((0, "0-7"))))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path(), &cpus, &[], Some("0-7"));
    for id in 0..8 {
        fs::remove_file(
            dir.path()
                .join(format!("devices/system/cpu/cpu{id}/cache/index3/id")),
        )
        .expect("rm");
    }
    let topo = discover(dir.path()).expect("discover");
    let want = vec![
        cpu(0, 0, 0, 0, 0),
        cpu(1, 0, 0, 0, 0),
        cpu(2, 2, 0, 0, 0),
        cpu(3, 2, 0, 0, 0),
        cpu(4, 4, 0, 0, 0),
        cpu(5, 5, 0, 0, 0),
        cpu(6, 6, 0, 0, 0),
        cpu(7, 7, 0, 0, 0),
    ];
    assert_eq!(topo.cpus, want);
    assert_eq!(topo.numa_nodes.len(), 1);
    assert_eq!(topo.numa_nodes[0].memory, None);
}

#[test]
fn offline_cpus_are_left_out() {
    // 4 cores x 2 threads, CPUs 3 and 7 (both threads of core 3) offline; no L3, so the uncore
    // cache falls back to the socket id. Once with the global online list, once per-CPU files.
    let cpus: Vec<Cpu> = (0..8)
        .map(|i| Cpu {
            id: i,
            core_id: i % 4,
            package: 1,
            online: i % 4 != 3,
            l3: None,
        })
        .collect();
    let nodes = [Node {
        id: 0,
        cpulist: "0-7",
        mem_kb: 1 << 20,
        hugepages: &[],
        distance: "10",
    }];
    let want: Vec<CpuInfo> = [0, 1, 2, 4, 5, 6]
        .iter()
        .map(|&i| cpu(i, i % 4, 1, 0, 1))
        .collect();
    assert_eq!(discovered(&cpus, &nodes, Some("0-2,4-6")).cpus, want);
    assert_eq!(discovered(&cpus, &nodes, None).cpus, want);
}

#[test]
fn cpu_without_topology_files_is_skipped_like_cadvisor() {
    let cpus = [on(0, 0, 0, None), on(1, 1, 0, None)];
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path(), &cpus, &[], Some("0-1"));
    fs::remove_file(dir.path().join("devices/system/cpu/cpu1/topology/core_id")).expect("rm");
    let topo = discover(dir.path()).expect("discover");
    assert_eq!(topo.cpus, vec![cpu(0, 0, 0, 0, 0)]);
}

#[test]
fn errors_name_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cpus = [on(0, 0, 0, None)];
    build(dir.path(), &cpus, &[], Some("0"));
    write(
        &dir.path().join("devices/system/cpu/cpu0/topology/core_id"),
        "zero\n",
    );
    let err = discover(dir.path()).expect_err("bad core_id").to_string();
    assert!(err.contains("core_id") && err.contains("zero"), "{err}");

    let empty = tempfile::tempdir().expect("tempdir");
    assert!(discover(empty.path()).is_err());
}

#[test]
fn this_machine_if_linux() {
    // On a Linux host the real /sys must be readable and give a valid topology.
    if Path::new("/sys/devices/system/cpu/online").exists() {
        let topo = discover(Path::new("/sys")).expect("discover /sys");
        assert!(!topo.cpus.is_empty());
        allot_topology::CpuTopology::new(&topo).expect("valid view");
    }
}
