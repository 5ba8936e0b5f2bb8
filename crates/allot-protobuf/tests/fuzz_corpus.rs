//! Every file of the `protobuf` fuzz target's committed corpus (fuzz/corpus/protobuf) replays
//! through the fuzz entry point (`allot_protobuf::fuzzing::check`), and decodes into the typed
//! Pod without a panic, as the fuzz target does.

#[test]
fn the_protobuf_fuzz_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/protobuf");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("lists").path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{} is empty", dir.display());
    let mut typed = 0;
    for path in paths {
        let bytes = std::fs::read(&path).expect("reads");
        allot_protobuf::fuzzing::check(&bytes);
        let body = allot_protobuf::fuzzing::pod_body(&bytes);
        typed += usize::from(allot_protobuf::decode::<allot_api::core::v1::Pod>(&body).is_ok());
    }
    // The seeds are whole Pods: at least they decode.
    assert!(typed >= 2, "only {typed} corpus files decode into a Pod");
}
