//! kubectl for the end-to-end tests: `ALLOT_KUBECTL` (a path) or `kubectl` on PATH. Under CI a
//! missing kubectl fails the test (CI must run these tests); elsewhere the test is skipped with
//! a loud notice.

use std::path::PathBuf;
use std::process::Command;

/// The kubectl to drive `allot serve` with, or `None` to skip the test (never under CI).
pub fn find_or_skip() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ALLOT_KUBECTL").map(PathBuf::from)
        && path.exists()
    {
        return Some(path);
    }
    let on_path = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        return Some(PathBuf::from("kubectl"));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "kubectl not found: set ALLOT_KUBECTL or put kubectl on PATH (CI must run these tests)"
    );
    eprintln!("\n########## SKIPPED: kubectl not found (set ALLOT_KUBECTL) ##########\n");
    None
}
