//! Replays the `load` fuzz target's corpus (`fuzz/corpus/load/`) through the function the
//! target calls, so that every input it keeps (seeds and the crashes it found) stays checked by
//! a plain `cargo test`.

#[test]
fn every_corpus_file_loads_and_validates_within_the_invariants() {
    allot_fuzz_corpus::replay("load", 20, allot_validation::fuzzing::load_and_validate);
}
