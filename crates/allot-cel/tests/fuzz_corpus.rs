//! Replays every input of the committed fuzz corpus (`fuzz/corpus/cel/`) through the fuzz
//! target's body, which asserts the evaluator's invariants.

#[test]
fn cel_fuzz_corpus_replays() {
    allot_fuzz_corpus::replay("cel", 20, allot_cel::fuzzing::compile_and_eval);
}
