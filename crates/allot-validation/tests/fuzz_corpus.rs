//! Replays the `load` fuzz target's corpus (`fuzz/corpus/load/`) through the function the
//! target calls, so that every input it keeps (seeds and the crashes it found) stays checked by
//! a plain `cargo test`.

use std::path::Path;

#[test]
fn every_corpus_file_loads_and_validates_within_the_invariants() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/load");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "the corpus in {} is missing",
        dir.display()
    );
    for file in files {
        eprintln!("{}", file.display());
        let bytes = std::fs::read(&file).expect("a corpus file");
        let outcome = std::panic::catch_unwind(|| {
            allot_validation::fuzzing::load_and_validate(&bytes);
        });
        assert!(outcome.is_ok(), "{} breaks an invariant", file.display());
    }
}
