use proptest::prelude::*;

use super::*;

fn log(records: &[&str]) -> Vec<u8> {
    let mut out = HEADER.to_vec();
    for record in records {
        encode(record.as_bytes(), &mut out).expect("encodes");
    }
    out
}

/// The records handed over (offset, text) and the outcome.
type Read = (Vec<(u64, String)>, Result<Scanned, ScanError<()>>);

fn read(bytes: &[u8]) -> Read {
    let mut records = Vec::new();
    let result = scan(bytes, |offset, record| {
        records.push((offset, String::from_utf8_lossy(record).into_owned()));
        Ok(())
    });
    (records, result)
}

#[test]
fn a_log_reads_back_with_offsets() {
    let bytes = log(&[r#"{"rv":1}"#, r#"{"rv":2}"#]);
    let (records, result) = read(&bytes);
    let first = HEADER.len() as u64;
    assert_eq!(
        records,
        [
            (first, r#"{"rv":1}"#.to_string()),
            (first + 18, r#"{"rv":2}"#.to_string())
        ]
    );
    assert_eq!(
        result.expect("reads"),
        Scanned {
            format: Format::Checksummed,
            records: 2,
            valid_len: bytes.len() as u64,
            torn_bytes: 0
        }
    );
    // The line format: checksum, space, record.
    let text = String::from_utf8(bytes).expect("text");
    assert_eq!(
        text.lines().nth(1),
        Some(format!("{:08x} {{\"rv\":1}}", checksum(br#"{"rv":1}"#)).as_str())
    );
}

#[test]
fn a_torn_last_record_is_dropped_and_counted() {
    let whole = log(&[r#"{"rv":1}"#, r#"{"rv":2}"#]);
    for cut in 1..18 {
        let bytes = &whole[..whole.len() - cut];
        let (records, result) = read(bytes);
        let scanned = result.expect("a torn tail is not an error");
        assert_eq!(records.len(), 1, "cut {cut}");
        assert_eq!(scanned.torn_bytes, 18 - cut as u64, "cut {cut}");
        assert_eq!(scanned.valid_len + scanned.torn_bytes, bytes.len() as u64);
    }
    // A header cut short: nothing was acknowledged.
    let (records, result) = read(&HEADER[..5]);
    assert!(records.is_empty());
    assert_eq!(result.expect("torn").torn_bytes, 5);
}

#[test]
fn one_changed_byte_is_corruption_at_its_record() {
    // The issue's case: a byte that keeps the JSON valid ("s4-702" read back as "z4-702").
    let bytes = log(&[r#"{"name":"a"}"#, r#"{"name":"s4-702"}"#, r#"{"name":"c"}"#]);
    let text = String::from_utf8(bytes.clone()).expect("text");
    let at = text.find("s4-702").expect("there");
    let mut changed = bytes.clone();
    changed[at] = b'z';
    let (records, result) = read(&changed);
    assert_eq!(records.len(), 1);
    let Err(ScanError::Corrupt {
        offset,
        record,
        problem: Problem::ChecksumMismatch { .. },
    }) = result
    else {
        panic!("corruption expected, got {result:?}");
    };
    assert_eq!(record, 2);
    assert_eq!(offset, records[0].0 + 22);
    // The last record too: a whole line is never a torn write.
    let mut last = bytes.clone();
    let end = last.len() - 3;
    last[end] = b'd';
    assert!(matches!(
        read(&last).1,
        Err(ScanError::Corrupt { record: 3, .. })
    ));
}

#[test]
fn headers_and_checksum_fields_are_checked() {
    let mut bad_header = log(&[r#"{"rv":1}"#]);
    bad_header[0] = b'A';
    assert!(matches!(
        read(&bad_header).1,
        Err(ScanError::Corrupt {
            offset: 0,
            problem: Problem::UnknownHeader,
            ..
        })
    ));
    // A header whose first byte became `{` is not a version-1 log.
    let mut brace = log(&[]);
    brace[0] = b'{';
    assert!(matches!(
        read(&brace).1,
        Err(ScanError::Corrupt {
            problem: Problem::UnknownHeader,
            ..
        })
    ));
    let mut no_checksum = HEADER.to_vec();
    no_checksum.extend_from_slice(b"{\"rv\":1}\n");
    assert!(matches!(
        read(&no_checksum).1,
        Err(ScanError::Corrupt {
            problem: Problem::NoChecksum,
            ..
        })
    ));
    // Uppercase hex is not how checksums are written.
    let mut upper = HEADER.to_vec();
    upper.extend_from_slice(b"ABCDEF12 {}\n");
    assert!(matches!(
        read(&upper).1,
        Err(ScanError::Corrupt {
            problem: Problem::NoChecksum,
            ..
        })
    ));
    assert_eq!(encode(b"a\nb", &mut Vec::new()), Err(EncodeError::Newline));
}

#[test]
fn version_1_logs_read_as_legacy() {
    let bytes = b"{\"rv\":1}\n{\"rv\":2}\n{\"rv\"";
    let (records, result) = read(bytes);
    assert_eq!(records.len(), 2);
    let scanned = result.expect("reads");
    assert_eq!(scanned.format, Format::Legacy);
    assert_eq!(scanned.torn_bytes, 5);
    assert_eq!(read(b"").1.expect("empty").format, Format::Empty);
}

#[test]
fn a_refused_record_stops_the_scan_at_its_offset() {
    let bytes = log(&[r#"{"rv":1}"#, "not json"]);
    let result = scan(&bytes[..], |_, record| {
        if record.starts_with(b"{") {
            Ok(())
        } else {
            Err("does not decode")
        }
    });
    let Err(ScanError::Rejected { record, error, .. }) = result else {
        panic!("refusal expected");
    };
    assert_eq!((record, error), (2, "does not decode"));
}

/// Every file of the fuzz target's committed corpus (fuzz/corpus/store_log) replays through
/// the fuzz entry point without breaking an invariant.
#[test]
fn the_fuzz_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/store_log");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .collect::<Result<Vec<_>, _>>()
        .expect("lists");
    assert!(!entries.is_empty(), "{} is empty", dir.display());
    for entry in entries {
        let bytes = std::fs::read(entry.path()).expect("reads");
        fuzzing::scan_bytes(&bytes);
    }
}

fn records() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[ -~]{0,40}", 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any byte changed anywhere: the fuzz invariants hold, and a change inside a whole record
    /// is never accepted.
    #[test]
    fn a_changed_byte_is_never_accepted(records in records(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let refs: Vec<&str> = records.iter().map(String::as_str).collect();
        let mut bytes = log(&refs);
        let at = at.index(bytes.len());
        let changed = bytes[at] != byte;
        bytes[at] = byte;
        fuzzing::scan_bytes(&bytes);
        let (read_back, result) = read(&bytes);
        if changed {
            // The changed record is not among those read back.
            let kept: Vec<&str> = read_back.iter().map(|(_, r)| r.as_str()).collect();
            prop_assert!(kept.len() <= refs.len());
            prop_assert!(result.is_err() || kept.len() < refs.len() || at < HEADER.len());
            prop_assert_eq!(&kept[..], &refs[..kept.len()]);
        }
    }

    /// A log cut anywhere reads back the whole records before the cut, and counts the rest.
    #[test]
    fn a_cut_log_keeps_its_whole_records(records in records(), cut in any::<prop::sample::Index>()) {
        let refs: Vec<&str> = records.iter().map(String::as_str).collect();
        let bytes = log(&refs);
        let cut = cut.index(bytes.len() + 1);
        let (read_back, result) = read(&bytes[..cut]);
        let scanned = result.expect("a cut is a torn tail");
        let kept: Vec<&str> = read_back.iter().map(|(_, r)| r.as_str()).collect();
        prop_assert_eq!(&kept[..], &refs[..kept.len()]);
        prop_assert_eq!(scanned.valid_len + scanned.torn_bytes, cut as u64);
        let whole = log(&refs[..kept.len()]).len();
        prop_assert!(cut < HEADER.len() || scanned.valid_len as usize == whole);
    }

    /// Arbitrary bytes, with or without a header in front: never a panic, every invariant.
    #[test]
    fn arbitrary_bytes_keep_the_invariants(mut bytes in prop::collection::vec(any::<u8>(), 0..200), header in any::<bool>()) {
        if header {
            let mut with = HEADER.to_vec();
            with.append(&mut bytes);
            bytes = with;
        }
        fuzzing::scan_bytes(&bytes);
    }
}
