//! `allot gen --nodes N --devices-per-node D --pods P [-o DIR]`: a generated cluster for scale
//! tests (Nodes, one NodeTopology, a GPU DeviceClass, ResourceSlices, a ResourceClaimTemplate,
//! Pods), as one YAML stream on stdout or as files in a folder.

use std::io::Write;
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
    /// Write `00-classes.yaml`, `10-nodes.yaml`, `20-slices.yaml` and `30-pods.yaml` here
    /// (split into numbered files of 1000 documents when larger) instead of printing one
    /// stream.
    #[arg(short = 'o', long = "output-dir")]
    pub output_dir: Option<PathBuf>,
}

fn yaml_stream(documents: &[serde_json::Value]) -> anyhow::Result<String> {
    let mut out = String::new();
    for document in documents {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(document).context("rendering YAML")?);
    }
    Ok(out)
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let documents = cluster(GenOptions {
        nodes: args.nodes,
        devices_per_node: args.devices_per_node,
        pods: args.pods,
    });
    match &args.output_dir {
        None => {
            let text = yaml_stream(&documents)?;
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.context("writing the output")?,
            }
        }
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
                    let name = if chunks.len() == 1 {
                        file.to_string()
                    } else {
                        file.replace(".yaml", &format!("-{index:04}.yaml"))
                    };
                    let path = dir.join(name);
                    std::fs::write(&path, yaml_stream(chunk)?)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
            eprintln!("wrote {} documents to {}", documents.len(), dir.display());
        }
    }
    Ok(0)
}
