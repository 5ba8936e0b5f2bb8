//! Every file of the `allocate` fuzz target's committed corpus (fuzz/corpus/allocate) replays
//! through the fuzz entry point (`allot_dra::fuzzing::check`) without breaking an invariant.

#[test]
fn the_allocate_fuzz_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/allocate");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("lists").path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{} is empty", dir.display());
    for path in paths {
        let bytes = std::fs::read(&path).expect("reads");
        allot_dra::fuzzing::check(&bytes);
    }
}
