//! `allot allocate`: run the DRA structured allocator on a scenario file.
//!
//! Exit codes: 0 when every claim is allocated, 1 when the claims do not fit on the node
//! (with an explanation), 2 when the input is at fault.

use std::path::PathBuf;

use allot_dra::{AllocationInput, CelCache, Explanation, GaveUp, Outcome, Scenario};
use serde_json::{Value, json};

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table: claim, request, device, pool, node.
    Table,
    /// The JSON document described in `allot allocate --help`.
    Json,
    /// The same document as YAML.
    Yaml,
}

/// Allocate devices for ResourceClaims on one node, as kube-scheduler's DRA plugin would.
///
/// The scenario holds DeviceClasses, ResourceSlices, ResourceClaims (allocated ones hold
/// devices in use), Nodes, Namespaces and DeviceTaintRules, plus optionally one
/// `apiVersion: allot.dev/v1alpha1, kind: AllocationOptions` document with `node`,
/// `featureGates`, `claims` (the `namespace/name` list to allocate; default: every
/// unallocated claim in file order), `maxSearchSteps` and `maxSearchMemory` (the search's
/// budget; default 2,000,000 steps, a fraction of a second, and 64Mi). `-o json` prints
/// `{"result", "error", "allocations": [{"claim", "allocation"}], "explanation"}`; `result`
/// is `allocated`, `unschedulable`, `gaveUp` (the budget ran out before an answer; the
/// explanation says how far it got) or `error`.
/// Exit code 0: allocated; 1: unschedulable or gave up; 2: error.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario: a multi-document YAML file, a directory of them (their objects together),
    /// or `-` for standard input; repeat -f for more files.
    #[arg(
        short = 'f',
        long = "filename",
        required = true,
        value_name = "FILE|DIR|-"
    )]
    pub files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: Format,
    /// The node to allocate for (default: AllocationOptions.node, else the only Node).
    #[arg(long)]
    pub node: Option<String>,
    /// Feature gates as `Name=true|false,...`, applied after the scenario's.
    #[arg(long = "feature-gates")]
    pub feature_gates: Option<String>,
}

/// What one run produced, before formatting.
enum Answer {
    Allocated {
        node: String,
        allocations: Vec<(String, allot_dra::AllocationResult)>,
    },
    Unschedulable(Explanation),
    GaveUp(GaveUp),
    Error(String),
}

/// The objects of every file together; a file's error names it. At most one file may hold an
/// AllocationOptions document.
fn scenario(texts: &[(String, String)]) -> Result<Scenario, String> {
    let mut merged = Scenario::default();
    let mut options_from: Option<&str> = None;
    for (name, text) in texts {
        let one = Scenario::parse(text).map_err(|err| format!("{name}: {err}"))?;
        if one.options != Default::default() {
            if let Some(first) = options_from {
                return Err(format!(
                    "{name}: a second AllocationOptions document (the first is in {first})"
                ));
            }
            options_from = Some(name);
            merged.options = one.options;
        }
        merged.nodes.extend(one.nodes);
        merged.namespaces.extend(one.namespaces);
        merged.classes.extend(one.classes);
        merged.slices.extend(one.slices);
        merged.claims.extend(one.claims);
        merged.taint_rules.extend(one.taint_rules);
        merged.expected = merged.expected.or(one.expected);
    }
    Ok(merged)
}

fn decide(args: &Args) -> anyhow::Result<Answer> {
    let files = crate::files::Files::new(args.files.clone(), args.recursive);
    let texts = files.texts()?;
    if texts.is_empty() {
        anyhow::bail!("no scenario found: the directories hold no .yaml, .yml or .json file");
    }
    let scenario = match scenario(&texts) {
        Ok(scenario) => scenario,
        Err(message) => return Ok(Answer::Error(message)),
    };
    let prepared = (|| -> Result<_, allot_dra::Error> {
        let mut features = scenario.features()?;
        if let Some(flag) = &args.feature_gates {
            features.apply_flag(flag)?;
        }
        let node = scenario.node(args.node.as_deref())?;
        let claims = scenario.claims_to_allocate()?;
        Ok((features, node, claims, scenario.budget()?))
    })();
    let (features, node, claims, budget) = match prepared {
        Ok(prepared) => prepared,
        Err(err) => return Ok(Answer::Error(err.to_string())),
    };
    let allocated = scenario.allocated_claims(&claims);
    let input: AllocationInput<'_> = scenario.input(node, &claims, &allocated);
    Ok(
        match allot_dra::allocate_within(&input, &features, &CelCache::default(), &budget) {
            Ok(Outcome::Allocated(results)) => Answer::Allocated {
                node: node.metadata.name.clone(),
                allocations: claims
                    .iter()
                    .map(allot_dra::display_claim)
                    .zip(results)
                    .collect(),
            },
            Ok(Outcome::Unschedulable(explanation)) => Answer::Unschedulable(explanation),
            Ok(Outcome::GaveUp(gave_up)) => Answer::GaveUp(gave_up),
            Err(err) => Answer::Error(err.to_string()),
        },
    )
}

fn document(answer: &Answer) -> anyhow::Result<Value> {
    Ok(match answer {
        Answer::Allocated { allocations, .. } => {
            let allocations: Vec<Value> = allocations
                .iter()
                .map(|(claim, allocation)| {
                    Ok(json!({"claim": claim, "allocation": serde_json::to_value(allocation)?}))
                })
                .collect::<anyhow::Result<_>>()?;
            json!({"result": "allocated", "error": null, "allocations": allocations, "explanation": null})
        }
        Answer::Unschedulable(explanation) => json!({
            "result": "unschedulable",
            "error": null,
            "allocations": [],
            "explanation": serde_json::to_value(explanation)?,
        }),
        Answer::GaveUp(gave_up) => json!({
            "result": "gaveUp",
            "error": null,
            "allocations": [],
            "explanation": serde_json::to_value(gave_up)?,
        }),
        Answer::Error(message) => {
            json!({"result": "error", "error": message, "allocations": [], "explanation": null})
        }
    })
}

fn table(answer: &Answer) -> String {
    match answer {
        Answer::Allocated { node, allocations } => {
            let mut rows = vec![[
                "CLAIM".to_string(),
                "REQUEST".into(),
                "DEVICE".into(),
                "POOL".into(),
                "NODE".into(),
            ]];
            for (claim, allocation) in allocations {
                let node_column = if allocation.node_selector.is_some() {
                    node.clone()
                } else {
                    "*".to_string()
                };
                for result in &allocation.devices.results {
                    rows.push([
                        claim.clone(),
                        result.request.to_string(),
                        format!("{}/{}", result.driver, result.device),
                        result.pool.to_string(),
                        node_column.clone(),
                    ]);
                }
            }
            let widths: Vec<usize> = (0..5)
                .map(|i| rows.iter().map(|row| row[i].len()).max().unwrap_or(0))
                .collect();
            let mut out = String::new();
            for row in rows {
                let line: Vec<String> = row
                    .iter()
                    .zip(&widths)
                    .map(|(cell, width)| format!("{cell:<width$}"))
                    .collect();
                out.push_str(line.join("   ").trim_end());
                out.push('\n');
            }
            out
        }
        Answer::Unschedulable(explanation) => format!("unschedulable: {explanation}"),
        Answer::GaveUp(gave_up) => format!("{gave_up}\n"),
        Answer::Error(message) => format!("error: {message}\n"),
    }
}

/// Runs the command and returns the exit code.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let answer = decide(&args)?;
    let code = match &answer {
        Answer::Allocated { .. } => 0,
        Answer::Unschedulable(_) | Answer::GaveUp(_) => 1,
        Answer::Error(_) => 2,
    };
    match args.output {
        Format::Table => {
            let text = table(&answer);
            if code == 2 {
                elog!("{}", text.trim_end())
            } else {
                crate::out::print(&text)?
            }
        }
        Format::Json => crate::out::print_json(&document(&answer)?)?,
        Format::Yaml => crate::out::print_yaml(&document(&answer)?)?,
    }
    Ok(code)
}
