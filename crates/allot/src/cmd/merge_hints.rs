//! `allot node merge-hints`: the Topology Manager's decision for given provider hints.
//!
//! Input: the JSON document of `allot_topologymanager::document` (`{"policy", "options",
//! "numaNodes", "distances", "providersHints"}`, as in tests/conformance/kubelet/topology_manager
//! and examples/node/merge-hints.json). Output: `{"bestHint": {"affinity", "preferred"},
//! "admit"}` with `-o json|yaml`, or a short explanation. Exit 0 when admitted, 1 when the policy
//! rejects (with the reason), 2 on bad input or configuration (a NUMA id that is not one of
//! `numaNodes` names its field).

use std::path::PathBuf;

use allot_topologymanager::{DocumentError, TopologyAffinityError, TopologyHint};
use serde::Serialize;

/// Merge topology hints as the kubelet's Topology Manager does, and say whether it would admit.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The hints document (JSON), or a directory holding one; `-` reads standard input.
    #[arg(
        short = 'f',
        long = "filename",
        visible_alias = "file",
        value_name = "FILE|-"
    )]
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
    /// The same as YAML.
    Yaml,
}

/// The output document.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Decision {
    best_hint: TopologyHint,
    admit: bool,
}

/// Runs the subcommand and returns the exit code.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let files = crate::files::Files::new(vec![args.file.clone()], false);
    let (name, text) = files.text("hints document")?;
    let decision = match allot_topologymanager::decide(&text) {
        Ok(decision) => decision,
        Err(DocumentError::Decode(message)) => anyhow::bail!("decoding {name}: {message}"),
        Err(err) => anyhow::bail!("{name}: {err}"),
    };
    let document = Decision {
        best_hint: decision.best_hint.clone(),
        admit: decision.admit,
    };
    match args.output {
        Output::Json => crate::out::print_json(&document)?,
        Output::Yaml => crate::out::print_yaml(&document)?,
        Output::Text => {
            let text = if decision.admit {
                format!("admit: best hint {}\n", decision.best_hint)
            } else {
                let rejection = TopologyAffinityError {
                    policy: decision.policy,
                    container: None,
                    best_hint: decision.best_hint.clone(),
                    providers_hints: decision.providers.clone(),
                };
                format!(
                    "reject: {} ({rejection})\n{}\n",
                    rejection.reason(),
                    rejection.explain()
                )
            };
            crate::out::print(&text)?;
        }
    }
    Ok(if decision.admit { 0 } else { 1 })
}
