//! The committed corpus of a fuzz target of `fuzz/` (`fuzz/corpus/<target>/`), replayed by a
//! crate's test through the function the target calls, so every input the corpus keeps (seeds
//! and what runs found) stays checked by a plain `cargo test`. A dev-dependency only.

use std::path::{Path, PathBuf};

/// The files of `fuzz/corpus/<target>/`, in name order. Fails when there are fewer than
/// `at_least` (a missing corpus is not an empty one).
pub fn files(target: &str, at_least: usize) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(
        files.len() >= at_least.max(1),
        "{}: {} files, fewer than the corpus has ({at_least})",
        dir.display(),
        files.len()
    );
    files
}

/// Runs `check` on every file of `fuzz/corpus/<target>/` (at least `at_least` of them); a
/// panic names the file it came from.
pub fn replay(target: &str, at_least: usize, check: impl Fn(&[u8])) {
    for file in files(target, at_least) {
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&bytes)));
        assert!(outcome.is_ok(), "{} breaks an invariant", file.display());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_corpus_is_read_in_name_order_and_a_missing_one_fails() {
        let files = super::files("protobuf", 2);
        assert!(files.windows(2).all(|w| w[0] < w[1]));
        assert!(std::panic::catch_unwind(|| super::files("no-such-target", 0)).is_err());
        assert!(std::panic::catch_unwind(|| super::files("protobuf", 100_000)).is_err());
        let broken = std::panic::catch_unwind(|| super::replay("protobuf", 1, |_| panic!("no")));
        assert!(broken.is_err());
    }
}
