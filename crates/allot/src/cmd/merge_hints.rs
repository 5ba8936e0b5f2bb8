//! `allot node merge-hints`: the Topology Manager's decision for given provider hints.
//!
//! Input (JSON): `{"policy", "options", "numaNodes", "distances", "providersHints"}` as in
//! tests/conformance/kubelet/topology_manager. Output: `{"bestHint": {"affinity", "preferred"},
//! "admit"}` with `-o json`, or a short explanation. Exit 0 when admitted, 1 when the policy
//! rejects (with the reason), 2 on bad input or configuration.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use allot_topologymanager::{
    Error, NumaInfo, Policy, PolicyOptions, ProviderHints, TopologyAffinityError, TopologyHint,
    merge,
};
use anyhow::Context;
use serde::{Deserialize, Serialize};

/// Merge topology hints as the kubelet's Topology Manager does, and say whether it would admit.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The hints file (JSON); `-` reads standard input.
    #[arg(short = 'f', long = "file")]
    pub file: PathBuf,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Output formats of `merge-hints`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A sentence for people.
    Text,
    /// `{"bestHint": {...}, "admit": bool}`.
    Json,
}

/// The input document.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Input {
    policy: String,
    #[serde(default)]
    options: BTreeMap<String, String>,
    numa_nodes: Vec<usize>,
    #[serde(default)]
    distances: Option<BTreeMap<usize, Vec<u64>>>,
    #[serde(default)]
    providers_hints: Vec<Option<ProviderHints>>,
}

/// The output document.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Decision {
    best_hint: TopologyHint,
    admit: bool,
}

/// Runs the merge on `input`: the decision, or the configuration error upstream would report.
fn decide(input: &Input) -> Result<(Decision, Vec<ProviderHints>, Policy), Error> {
    let policy: Policy = input.policy.parse()?;
    // The options are checked for every policy (the kubelet skips them only when it does not
    // start a Topology Manager at all): an admin asking about a configuration wants to know.
    let options = PolicyOptions::parse(&input.options)?;
    let numa = NumaInfo::new(&input.numa_nodes, input.distances.as_ref(), &options)?;
    if policy != Policy::None && numa.nodes().len() > options.max_allowable_numa_nodes {
        return Err(Error::TooManyNumaNodes {
            count: numa.nodes().len(),
            max: options.max_allowable_numa_nodes,
        });
    }
    let providers: Vec<ProviderHints> = input
        .providers_hints
        .iter()
        .map(|p| p.clone().unwrap_or_default())
        .collect();
    let (best_hint, admit) = merge(policy, &options, &numa, &providers);
    Ok((Decision { best_hint, admit }, providers, policy))
}

/// Runs the subcommand and returns the exit code.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let text = if args.file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading standard input")?;
        text
    } else {
        std::fs::read_to_string(&args.file)
            .with_context(|| format!("reading {}", args.file.display()))?
    };
    let input: Input =
        serde_json::from_str(&text).with_context(|| format!("decoding {}", args.file.display()))?;
    let (decision, providers, policy) = decide(&input).with_context(|| {
        format!(
            "configuring the Topology Manager from {}",
            args.file.display()
        )
    })?;
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&decision)?),
        Output::Text => {
            if decision.admit {
                println!("admit: best hint {}", decision.best_hint);
            } else {
                let rejection = TopologyAffinityError {
                    policy,
                    container: None,
                    best_hint: decision.best_hint.clone(),
                    providers_hints: providers,
                };
                println!("reject: {} ({rejection})", rejection.reason());
                println!("{}", rejection.explain());
            }
        }
    }
    Ok(if decision.admit { 0 } else { 1 })
}
