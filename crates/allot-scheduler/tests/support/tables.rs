//! The loop shared by the scheduler's conformance runners: every YAML table of a folder,
//! each case run and counted as upstream's answer or as a documented deviation, one summary
//! line per table, and every failure listed at the end.

use std::path::{Path, PathBuf};

use allot_scheduler::framework::{PluginConfig, Profile};
use allot_scheduler::plugins;
use serde::de::DeserializeOwned;

/// What a runner tells the loop about its table type.
pub trait Table: DeserializeOwned {
    type Case;
    /// Where upstream's table comes from (must not be empty).
    fn source(&self) -> &[String];
    /// The name the summary line gives the table (the upstream test or plugin).
    fn title(&self) -> &str;
    fn cases(&self) -> &[Self::Case];
    fn case_name(case: &Self::Case) -> &str;
    /// Whether the case's expectation is a documented deviation from upstream.
    fn deviates(case: &Self::Case) -> bool;
}

/// Implements [`Table`] for a table struct with `source: Vec<String>`, `cases: Vec<Case>` and
/// the named title field, whose cases have `name: String` and `deviation: Option<String>`.
macro_rules! table {
    ($table:ty, $case:ty, $title:ident) => {
        impl tables::Table for $table {
            type Case = $case;
            fn source(&self) -> &[String] {
                &self.source
            }
            fn title(&self) -> &str {
                &self.$title
            }
            fn cases(&self) -> &[$case] {
                &self.cases
            }
            fn case_name(case: &$case) -> &str {
                &case.name
            }
            fn deviates(case: &$case) -> bool {
                case.deviation.is_some()
            }
        }
    };
}
pub(crate) use table;

/// The `.yaml` files of `dir`, in name order; fails when there are none.
fn table_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(Path::new(dir))
        .expect("conformance folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tables in {dir}");
    files
}

/// Runs every case of every table in `dir` through `run`; panics with every failure.
pub fn run_tables<T: Table>(dir: &str, run: impl Fn(&T, &T::Case) -> Result<(), String>) {
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for file in table_files(dir) {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(&file).expect("read");
        let table: T =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(!table.source().is_empty(), "{}: no source", file.display());
        let (mut passed, mut deviations) = (0, 0);
        for case in table.cases() {
            match run(&table, case) {
                Ok(()) if T::deviates(case) => deviations += 1,
                Ok(()) => passed += 1,
                Err(e) => failures.push(format!("{name} / {}: {e}", T::case_name(case))),
            }
        }
        summary.push(format!(
            "{} ({name}): {} cases, {passed} as upstream, {deviations} documented deviations",
            table.title(),
            table.cases().len()
        ));
    }
    eprintln!("{}", summary.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The profile a table runs its plugins in: these plugins, every node scored.
pub fn profile(plugins: Vec<PluginConfig>) -> Profile {
    Profile {
        scheduler_name: "default-scheduler".into(),
        plugins,
        percentage_of_nodes_to_score: 100,
        point_order: Vec::new(),
    }
}

/// The plugins' features in the tables: every DRA feature upstream's tests turn on.
pub fn features() -> plugins::Features {
    plugins::Features {
        dra: plugins::dynamic_resources::Config {
            features: allot_dra::Features::default(),
            binding_timeout_seconds: 600,
            extended_resource: true,
            node_allocatable_resources: true,
            allocation_budget: allot_dra::Budget::default(),
        },
    }
}
