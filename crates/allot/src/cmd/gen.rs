//! `allot gen --nodes N --devices-per-node D --pods P [-o yaml|json] [--output-dir DIR]`: a
//! generated cluster for scale tests (Nodes, one NodeTopology, a GPU DeviceClass,
//! ResourceSlices, a ResourceClaimTemplate, Pods), as one YAML stream (or a JSON `v1 List`) on
//! stdout or as files in a folder. The old spelling `-o DIR` still writes to DIR, with a
//! deprecation warning.

use std::path::PathBuf;

use allot_sim::generate::{DOCUMENTS_PER_TEXT, GenOptions, cluster};
use anyhow::Context;

/// Generate a cluster for scale tests.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Nodes.
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// GPUs per node.
    #[arg(long = "devices-per-node", default_value_t = 8)]
    pub devices_per_node: usize,
    /// Pods; as many as there are GPUs ask for one through the claim template.
    #[arg(long, default_value_t = 80)]
    pub pods: usize,
    /// Output format: yaml (a multi-document stream) or json (one `v1 List`). `-o DIR` (the
    /// old spelling of --output-dir) is deprecated.
    #[arg(
        short = 'o',
        long = "output",
        default_value = "yaml",
        value_name = "yaml|json"
    )]
    pub output: String,
    /// Write `00-classes.yaml`, `10-nodes.yaml`, `20-slices.yaml` and `30-pods.yaml` here
    /// (`.json` with -o json; split into numbered files of 1000 documents when larger)
    /// instead of printing to stdout.
    #[arg(long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

/// The output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Yaml,
    Json,
}

impl Format {
    fn render(self, documents: &[serde_json::Value]) -> anyhow::Result<String> {
        match self {
            Format::Yaml => {
                let mut out = String::new();
                for document in documents {
                    out.push_str("---\n");
                    out.push_str(&serde_saphyr::to_string(document).context("rendering YAML")?);
                }
                Ok(out)
            }
            Format::Json => {
                let list = serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": documents,
                    "metadata": {"resourceVersion": ""},
                });
                Ok(format!("{}\n", serde_json::to_string_pretty(&list)?))
            }
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Yaml => ".yaml",
            Format::Json => ".json",
        }
    }
}

/// The format and output folder from `-o` and `--output-dir`, accepting the deprecated
/// `-o DIR`.
fn destination(args: &Args) -> anyhow::Result<(Format, Option<PathBuf>)> {
    match args.output.as_str() {
        "yaml" => Ok((Format::Yaml, args.output_dir.clone())),
        "json" => Ok((Format::Json, args.output_dir.clone())),
        dir if args.output_dir.is_none() && !dir.is_empty() => {
            elog!(
                "warning: `allot gen -o DIR` is deprecated: use --output-dir {dir} (-o is the output format, yaml or json)"
            );
            Ok((Format::Yaml, Some(PathBuf::from(dir))))
        }
        other => anyhow::bail!("-o {other:?}: the output format is yaml or json"),
    }
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let (format, output_dir) = destination(&args)?;
    let documents = cluster(GenOptions {
        nodes: args.nodes,
        devices_per_node: args.devices_per_node,
        pods: args.pods,
    });
    match &output_dir {
        None => crate::out::print(&format.render(&documents)?)?,
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let kind = |d: &serde_json::Value| d["kind"].as_str().unwrap_or_default().to_string();
            let groups: [(&str, &[&str]); 4] = [
                (
                    "00-classes.yaml",
                    &["DeviceClass", "ResourceClaimTemplate", "NodeTopology"],
                ),
                ("10-nodes.yaml", &["Node"]),
                ("20-slices.yaml", &["ResourceSlice"]),
                ("30-pods.yaml", &["Pod"]),
            ];
            for (file, kinds) in groups {
                let selected: Vec<serde_json::Value> = documents
                    .iter()
                    .filter(|d| kinds.contains(&kind(d).as_str()))
                    .cloned()
                    .collect();
                // The YAML parser takes at most 1024 documents per stream: big groups are split
                // into numbered files.
                let chunks: Vec<&[serde_json::Value]> =
                    selected.chunks(DOCUMENTS_PER_TEXT).collect();
                for (index, chunk) in chunks.iter().enumerate() {
                    let stem = file.trim_end_matches(".yaml");
                    let name = if chunks.len() == 1 {
                        format!("{stem}{}", format.extension())
                    } else {
                        format!("{stem}-{index:04}{}", format.extension())
                    };
                    let path = dir.join(name);
                    std::fs::write(&path, format.render(chunk)?)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
            elog!(
                "wrote {} to {}",
                crate::out::count(documents.len(), "document", "documents"),
                dir.display()
            );
        }
    }
    Ok(0)
}
