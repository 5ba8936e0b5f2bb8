//! Every file of the `allocate` fuzz target's committed corpus (fuzz/corpus/allocate) replays
//! through the fuzz entry point (`allot_dra::fuzzing::check`) without breaking an invariant.

#[test]
fn the_allocate_fuzz_corpus_replays() {
    allot_fuzz_corpus::replay("allocate", 20, allot_dra::fuzzing::check);
}
