//! Puts the git commit the binary is built from into `ALLOT_GIT_COMMIT`, for `allot --version`.
//! Outside a git checkout (a source tarball, no `git` on PATH) the commit is "unknown"; the
//! environment variable `ALLOT_GIT_COMMIT` set at build time wins (for packagers).

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Asks cargo to run this script again when the git file behind `name` changes (HEAD moving to
/// another branch, the branch moving to another commit).
fn watch(dir: &Path, name: &str) {
    if let Some(path) = git(dir, &["rev-parse", "--git-path", name]) {
        let path = PathBuf::from(path);
        let path = if path.is_absolute() {
            path
        } else {
            dir.join(path)
        };
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=ALLOT_GIT_COMMIT");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let given = std::env::var("ALLOT_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty());
    let commit = given.or_else(|| {
        let commit = git(&dir, &["rev-parse", "--short=12", "HEAD"])?;
        watch(&dir, "HEAD");
        if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
            watch(&dir, &branch);
        }
        watch(&dir, "packed-refs");
        Some(commit)
    });
    println!(
        "cargo:rustc-env=ALLOT_GIT_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".to_string())
    );
}
