//! `allot simulate`'s capacity questions: `--fragmentation`, `--add-nodes`, `--remove-nodes`,
//! a `--what-if` workload and `--report`. The run keeps a usage recorder; the answers follow
//! the table, or make the `-o json|yaml` document (`allot.dev/v1alpha1 CapacityReport`).

use std::path::{Path, PathBuf};

use allot_api::core::v1::Pod;
use allot_api::load::Object;
use allot_sim::capacity::{Consolidation, ReasonGroup, ScaleUp, WorkloadFit};
use allot_sim::fragmentation::{Fragmentation, GivenShape};
use allot_sim::progress::{Phase, ProgressDisplay};
use allot_sim::report::Summary;
use allot_sim::run::session::{Session, SessionOptions};
use allot_sim::shape::NodeShape;
use allot_sim::usage::{Series, UsageRecorder};
use allot_store::{Kind, Stored};
use anyhow::Context;
use serde::Serialize;

use super::{Args, Filter, Output, print_input_errors, write_atomic, write_metadata};
use crate::files::Files;

/// Whether a capacity flag (beyond --what-if) is given.
pub(super) fn wanted(args: &Args) -> bool {
    args.fragmentation || !args.add_nodes.is_empty() || args.remove_nodes || args.report.is_some()
}

/// Whether `-o json|yaml` prints the capacity document instead of the object list.
fn answers_asked(args: &Args) -> bool {
    args.fragmentation || !args.add_nodes.is_empty() || args.remove_nodes || args.what_if.is_some()
}

/// A `--what-if` file: one Pod (copies of it), or a workload.
pub(super) enum WhatIfFile {
    /// Exactly one Pod and nothing else.
    Copies(Box<Pod>),
    /// Pods with their claims and templates, validated.
    Workload(Vec<Stored>),
}

/// Reads a `--what-if` file (or standard input).
pub(super) fn what_if_file(path: &Path) -> anyhow::Result<Result<WhatIfFile, String>> {
    let loaded =
        Files::new(vec![path.to_path_buf()], false).load(&allot_sim::input::load_options())?;
    if let Some(err) = loaded.errors.first() {
        return Ok(Err(err.to_string()));
    }
    if let [document] = loaded.documents.as_slice()
        && let Object::Pod(pod) = &document.object
    {
        return Ok(Ok(WhatIfFile::Copies(Box::new(pod.clone()))));
    }
    let input = match allot_sim::input::from_loaded(loaded) {
        Ok(input) => input,
        Err(err) => return Ok(Err(err.to_string())),
    };
    let objects = allot_sim::capacity::workload_objects(input.objects);
    let makes_pods = objects.iter().any(|o| {
        matches!(
            allot_sim::input::stored_key(o).kind,
            Kind::Pod
                | Kind::Deployment
                | Kind::ReplicaSet
                | Kind::StatefulSet
                | Kind::DaemonSet
                | Kind::Job
                | Kind::CronJob
        )
    });
    if !makes_pods {
        return Ok(Err(format!(
            "{}: expected at least one Pod or workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob), found none",
            path.display()
        )));
    }
    Ok(Ok(WhatIfFile::Workload(objects)))
}

/// The claim specs of `--shape` files.
fn given_shapes(paths: &[PathBuf]) -> Result<Vec<GivenShape>, allot_sim::SimError> {
    let mut out = Vec::new();
    for path in paths {
        let input = allot_sim::load_paths(&[path])?;
        for object in input.objects {
            let (meta, spec) = match &object {
                Stored::ResourceClaim(claim) => (&claim.metadata, claim.spec.clone()),
                Stored::ResourceClaimTemplate(template) => {
                    (&template.metadata, template.spec.spec.clone())
                }
                other => {
                    return Err(allot_sim::SimError::Input(vec![allot_sim::InputError {
                        file: path.display().to_string(),
                        line: 0,
                        kind: other.kind().name().to_string(),
                        object: other.meta().name.clone(),
                        field: String::new(),
                        message: "--shape takes ResourceClaims and ResourceClaimTemplates"
                            .to_string(),
                    }]));
                }
            };
            let namespace = if meta.namespace.is_empty() {
                "default".to_string()
            } else {
                meta.namespace.clone()
            };
            out.push(GivenShape {
                name: format!("{namespace}/{}", meta.name),
                namespace,
                spec,
            });
        }
    }
    Ok(out)
}

/// The `-o json|yaml` document.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CapacityDocument<'a> {
    api_version: &'static str,
    kind: &'static str,
    summary: &'a Summary,
    pending: &'a [ReasonGroup],
    #[serde(skip_serializing_if = "Option::is_none")]
    what_if: Option<&'a WorkloadFit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scale_up: Option<&'a ScaleUp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consolidation: Option<&'a Consolidation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fragmentation: Option<&'a Fragmentation>,
    usage: &'a Series,
}

/// Runs the simulation and answers the capacity questions asked.
pub(super) fn run(
    args: &Args,
    filter: &Filter,
    input: &allot_sim::Input,
    workload: Option<Vec<Stored>>,
    display: &mut ProgressDisplay,
) -> anyhow::Result<u8> {
    let loaded = args
        .add_nodes
        .iter()
        .map(|p| NodeShape::read(p))
        .collect::<Result<Vec<_>, _>>()
        .and_then(|shapes| Ok((shapes, given_shapes(&args.shapes)?)));
    let (shapes, given) = match loaded {
        Ok(found) => found,
        Err(err) => {
            display.end();
            print_input_errors(&err);
            return Ok(2);
        }
    };
    display.start(Phase::Run, "");
    let recorder = UsageRecorder::new();
    let session = Session::start(
        input,
        SessionOptions {
            usage: Some(recorder.clone()),
            ..Default::default()
        },
        &mut |p| display.update(p),
    )?;
    let outcome = session.into_outcome();
    let series = recorder.series(outcome.end);
    let fragmentation = (args.fragmentation || args.report.is_some()).then(|| {
        let options = allot_sim::fragmentation::Options {
            shapes: given,
            cpu_sizes: args.cpu_sizes.clone(),
            ..Default::default()
        };
        allot_sim::fragmentation::fragmentation(
            &outcome.store,
            &|node| Some(input.node_setup(node)),
            &input.features,
            &options,
        )
    });
    let workload_fit = match &workload {
        Some(objects) if shapes.is_empty() => {
            display.start(Phase::Run, "the what-if workload");
            Some(allot_sim::capacity::workload_fit(
                input,
                objects,
                &mut |p| display.update(p),
            )?)
        }
        _ => None,
    };
    let scale_up = if shapes.is_empty() {
        None
    } else {
        display.start(Phase::Run, "scale-up search");
        Some(allot_sim::capacity::scale_up(
            input,
            &shapes,
            workload.as_deref().unwrap_or_default(),
            &mut |p| display.update(p),
        )?)
    };
    let consolidation = if args.remove_nodes {
        display.start(Phase::Run, "consolidation");
        Some(allot_sim::capacity::consolidate(
            input,
            args.remove_nodes_limit.unwrap_or(usize::MAX),
            &mut |p| display.update(p),
        )?)
    } else {
        None
    };
    display.start(Phase::Write, "");
    if let Some(dir) = &args.out {
        write_metadata(dir, &outcome.metadata_files)?;
    }
    let summary = allot_sim::report::summary(&outcome.store, outcome.end.seconds());
    let pending = allot_sim::capacity::pending_groups(&outcome.store);
    let document = CapacityDocument {
        api_version: "allot.dev/v1alpha1",
        kind: "CapacityReport",
        summary: &summary,
        pending: &pending,
        what_if: workload_fit.as_ref(),
        scale_up: scale_up.as_ref(),
        consolidation: consolidation.as_ref(),
        fragmentation: fragmentation.as_ref(),
        usage: &series,
    };
    match args.output {
        Output::Json if answers_asked(args) => crate::out::print_json(&document)?,
        Output::Yaml if answers_asked(args) => crate::out::print_yaml(&document)?,
        Output::Table | Output::Wide => {
            super::write_output(args, filter, input, &outcome.store, &outcome.report)?;
            let mut text = String::new();
            if let Some(answer) = &workload_fit {
                text.push_str(&allot_sim::answers::workload(answer));
            }
            if let Some(answer) = &scale_up {
                text.push_str(&allot_sim::answers::scale_up(answer));
            }
            if let Some(answer) = &consolidation {
                text.push_str(&allot_sim::answers::consolidation(answer));
            }
            if let (true, Some(f)) = (args.fragmentation, &fragmentation) {
                text.push_str(&allot_sim::answers::fragmentation(f));
            }
            crate::out::print(&text)?;
        }
        _ => super::write_output(args, filter, input, &outcome.store, &outcome.report)?,
    }
    if let Some(path) = &args.report {
        let title = format!(
            "allot simulate: {} nodes, {} pods",
            summary.nodes, summary.pods
        );
        let page = allot_sim::report::html(&allot_sim::report::Report {
            title,
            store: &outcome.store,
            summary: &summary,
            usage: Some(&series),
            fragmentation: fragmentation.as_ref(),
            pending: &pending,
            scale_up: scale_up.as_ref(),
            consolidation: consolidation.as_ref(),
            workload: workload_fit.as_ref(),
            live_resource_version: None,
            setup: Some(&|node| Some(input.node_setup(node))),
        });
        write_atomic(path, page.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    display.end();
    let failed_answer = workload_fit
        .as_ref()
        .is_some_and(|w| w.verdict == allot_sim::capacity::Verdict::Not)
        || scale_up.as_ref().is_some_and(|s| !s.found);
    super::finish(args, filter, display, &outcome, u8::from(failed_answer))
}
