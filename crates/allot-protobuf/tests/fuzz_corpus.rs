//! Every file of the `protobuf` fuzz target's committed corpus (fuzz/corpus/protobuf) replays
//! through the fuzz entry point (`allot_protobuf::fuzzing::check`), and decodes into the typed
//! Pod without a panic, as the fuzz target does; the typed readers agree with serde's.

#[test]
fn the_protobuf_fuzz_corpus_replays() {
    allot_fuzz_corpus::replay("protobuf", 40, |bytes| {
        allot_protobuf::fuzzing::check(bytes);
        let body = allot_protobuf::fuzzing::pod_body(bytes);
        let _ = allot_protobuf::decode::<allot_api::core::v1::Pod>(&body);
    });
    // The seeds are whole Pods: they decode.
    for seed in ["seed-0", "seed-1"] {
        let path = allot_fuzz_corpus::files("protobuf", 40)
            .into_iter()
            .find(|f| f.ends_with(seed))
            .unwrap_or_else(|| panic!("{seed} is in the corpus"));
        let body = allot_protobuf::fuzzing::pod_body(&std::fs::read(&path).expect("reads"));
        let pod = allot_protobuf::decode::<allot_api::core::v1::Pod>(&body)
            .unwrap_or_else(|e| panic!("{seed}: {e}"));
        // And the typed reader reads them itself, not through serde.
        let typed = allot_protobuf::fuzzing::typed_only::<allot_api::core::v1::Pod>(&body)
            .unwrap_or_else(|e| panic!("{seed}: the typed reader stops: {e}"));
        assert_eq!(typed, pod, "{seed}");
    }
}
