//! kubectl for the end-to-end tests: `ALLOT_KUBECTL` (a path), else `kubectl` on PATH, and it
//! must be kubectl 1.37. The README's test command, `cargo xtask test`, provisions kubectl 1.37
//! and sets ALLOT_KUBECTL; without a kubectl 1.37 the tests fail and say so (they never skip).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// What to do when a tool is missing.
pub const PROVISION: &str = "run the README's test command, `cargo xtask test`, which provisions kubectl 1.37 and etcd into target/tools/ (or `cargo xtask tools` for the variables to set by hand)";

/// The kubectl to drive `allot serve` with; panics with the remedy when there is no kubectl
/// 1.37.
pub fn find() -> PathBuf {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let (path, source) = match std::env::var_os("ALLOT_KUBECTL").filter(|p| !p.is_empty())
            {
                Some(path) => (PathBuf::from(path), "ALLOT_KUBECTL"),
                None => (PathBuf::from("kubectl"), "PATH (ALLOT_KUBECTL is not set)"),
            };
            let output = Command::new(&path).args(["version", "--client"]).output();
            let text = match output {
                Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
                _ => {
                    return Err(format!(
                        "kubectl not found ({} from {source} does not run): {PROVISION}",
                        path.display()
                    ));
                }
            };
            let version = text
                .lines()
                .find_map(|l| l.strip_prefix("Client Version: "))
                .unwrap_or("unknown")
                .trim()
                .to_string();
            if version.starts_with("v1.37.") {
                Ok(path)
            } else {
                Err(format!(
                    "{} from {source} is kubectl {version}; the tests need kubectl 1.37: {PROVISION}",
                    path.display()
                ))
            }
        })
        .clone()
        .unwrap_or_else(|message| panic!("{message}"))
}
