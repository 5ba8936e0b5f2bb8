//! Replays every input of the committed fuzz corpus (`fuzz/corpus/cel/`) through the fuzz
//! target's body, which asserts the evaluator's invariants.

use std::path::Path;

#[test]
fn cel_fuzz_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/cel");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{}: no corpus", dir.display());
    for path in inputs {
        let data = std::fs::read(&path).expect("read corpus file");
        // A panic names the input it came from.
        let outcome = std::panic::catch_unwind(|| allot_cel::fuzzing::compile_and_eval(&data));
        assert!(outcome.is_ok(), "{}", path.display());
    }
}
