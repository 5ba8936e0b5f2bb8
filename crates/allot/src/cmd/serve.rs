//! `allot serve`: a Kubernetes-compatible API server on a durable store under a data directory.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

/// Arguments of `allot serve`.
#[derive(Debug, Parser)]
pub struct Args {
    /// Where objects, the kubeconfig and the tokens file are kept.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: String,
    /// How many resourceVersions back a watch may start before it gets 410 Gone.
    #[arg(long, default_value_t = 10_000)]
    pub watch_window: u64,
    /// Seconds between watch bookmarks.
    #[arg(long, default_value_t = 60)]
    pub bookmark_interval_seconds: u64,
}

/// Serves until killed; prints the kubeconfig path once listening.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let mut options = allot_apiserver::ServeOptions::new(args.data_dir);
    options.listen = args.listen;
    options.watch_window = args.watch_window;
    options.bookmark_interval =
        std::time::Duration::from_secs(args.bookmark_interval_seconds.max(1));
    allot_apiserver::serve_blocking(options, |server| {
        let address = server
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let mut out = std::io::stdout();
        let _ = writeln!(out, "serving on http://{address}");
        let _ = writeln!(out, "kubeconfig: {}", server.kubeconfig().display());
        let _ = out.flush();
    })?;
    Ok(0)
}
