//! The event log: replay, torn tails, corruption, version 1 upgrade, empty logs in used
//! directories, and fault injection (bytes changed, cut and deleted anywhere).

use std::io::Write;

use proptest::prelude::*;

use super::*;

fn namespace(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// The records of a small history: namespaces created, one labelled, one deleted.
fn history(count: usize) -> (Store, Vec<Record>) {
    let mut store = Store::new();
    for i in 0..count {
        let object = stored_from_json(&namespace(&format!("ns-{i}"))).expect("decodes");
        store
            .create_stored(object, "2026-01-01T00:00:00Z")
            .expect("creates");
    }
    if count > 1 {
        let mut labelled = namespace("ns-0");
        labelled["metadata"]["labels"] = serde_json::json!({"team": "s4-702"});
        let object = stored_from_json(&labelled).expect("decodes");
        update_stored(&mut store, object).expect("updates");
        store
            .delete(&ObjectKey::new(Kind::Namespace, "", "ns-1"))
            .expect("deletes");
    }
    let records = store.events_since(0).iter().map(Record::of).collect();
    (store, records)
}

fn log_bytes(records: &[Record]) -> Vec<u8> {
    let mut bytes = allot_eventlog::HEADER.to_vec();
    bytes.extend(encode_records(records).expect("encodes"));
    bytes
}

fn load(bytes: &[u8]) -> Result<LoadedLog, Error> {
    load_records(bytes, Path::new("DIR/events.log"))
}

fn rvs(records: &[Record]) -> Vec<u64> {
    records.iter().map(|r| r.rv).collect()
}

#[test]
fn a_data_directory_has_one_owner() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = DirLock::acquire(dir.path()).expect("locks");
    let err = DirLock::acquire(dir.path()).expect_err("second lock refused");
    let message = err.to_string();
    assert!(
        message.contains(&format!("in use by process {}", std::process::id()))
            && message.contains("stop that allot serve first"),
        "{message}"
    );
    drop(held);
    DirLock::acquire(dir.path()).expect("free again once the owner is gone");
}

#[test]
fn replay_restores_resource_versions_and_uids_and_drops_a_torn_tail() {
    let (store, records) = history(3);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    let (mut log, none) = FileLog::open(&path).expect("opens");
    assert!(none.is_empty());
    log.append(&records).expect("appends");
    let good_len = std::fs::metadata(&path).expect("stat").len();
    // A torn write at the end is dropped on open, and counted.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(b"0000abcd {\"rv\":6,"))
        .expect("writes");
    let (log, loaded) = FileLog::open(&path).expect("reopens");
    assert_eq!(log.torn_bytes_dropped(), 17);
    assert_eq!(rvs(&loaded), rvs(&records));
    let replayed = replay(&loaded).expect("replays");
    assert_eq!(replayed.resource_version(), store.resource_version());
    let names = |s: &Store| -> Vec<(String, String)> {
        s.iter()
            .map(|(_, o)| (o.meta().name.clone(), o.meta().uid.clone()))
            .collect()
    };
    assert_eq!(names(&replayed), names(&store));
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), good_len);
}

#[test]
fn a_changed_byte_that_keeps_the_json_valid_refuses_with_offset_and_remedy() {
    // The reproduction: "s4-702" read back as "z4-702".
    let (_, records) = history(3);
    let mut bytes = log_bytes(&records);
    let text = String::from_utf8(bytes.clone()).expect("text");
    let at = text.find("s4-702").expect("there");
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    bytes[at] = b'z';
    let err = load(&bytes).expect_err("refused");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "DIR/events.log: corrupt record at byte {line_start}: record 4 checksum mismatch"
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "keep the 3 records before byte {line_start} and lose the rest: truncate -s {line_start} DIR/events.log"
        )),
        "{message}"
    );
}

#[test]
fn version_1_logs_are_rewritten_with_checksums() {
    let (store, records) = history(3);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(LOG_FILE);
    let mut v1 = Vec::new();
    for record in &records {
        serde_json::to_writer(&mut v1, record).expect("writes");
        v1.push(b'\n');
    }
    v1.extend_from_slice(b"{\"rv\":9"); // torn, as version 1 could leave it
    std::fs::write(&path, &v1).expect("writes");
    let (backend, replayed, _lock) = open(dir.path(), None, false).expect("opens");
    drop(backend);
    assert_eq!(replayed.resource_version(), store.resource_version());
    let bytes = std::fs::read(&path).expect("reads");
    assert_eq!(bytes, log_bytes(&records));
    assert!(!dir.path().join("events.log.tmp").exists());
}

#[test]
fn a_missing_or_empty_log_in_a_used_directory_refuses_to_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A fresh directory starts empty.
    drop(open(dir.path(), None, false).expect("a fresh directory opens"));
    std::fs::create_dir(dir.path().join("pki")).expect("mkdir");
    // Now the (header-only) log is empty in a used directory.
    let err = open(dir.path(), None, false).err().expect("refused");
    let message = err.to_string();
    assert!(
        message.contains("events.log: empty, but")
            && message.contains("pki shows that this data directory was used before")
            && message.contains("--allow-empty-store"),
        "{message}"
    );
    std::fs::remove_file(dir.path().join(LOG_FILE)).expect("removes");
    let err = open(dir.path(), None, false).err().expect("refused");
    assert!(
        err.to_string().contains("events.log: missing, but"),
        "{err}"
    );
    assert!(
        !dir.path().join(LOG_FILE).exists(),
        "a refused start creates nothing"
    );
    drop(open(dir.path(), None, true).expect("--allow-empty-store starts"));
    assert_eq!(
        std::fs::read(dir.path().join(LOG_FILE)).expect("reads"),
        allot_eventlog::HEADER
    );
}

/// How a fault changed the log.
#[derive(Debug, Clone)]
enum Fault {
    /// The byte at the offset XORed with a nonzero value.
    Flip(prop::sample::Index, u8),
    /// The log cut at the offset.
    Cut(prop::sample::Index),
    /// The bytes from the first offset, as many as the length, taken out.
    Delete(prop::sample::Index, usize),
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        (any::<prop::sample::Index>(), 1..=255u8).prop_map(|(i, x)| Fault::Flip(i, x)),
        any::<prop::sample::Index>().prop_map(Fault::Cut),
        (any::<prop::sample::Index>(), 1..200usize).prop_map(|(i, n)| Fault::Delete(i, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Fault injection against the log's replay: whatever byte is changed, cut or deleted, a
    /// log either loads a prefix of what was written (all of it, or its whole records before
    /// a torn tail, which is counted) and replays it, or is refused; it never loads a record
    /// that was changed.
    #[test]
    fn faults_never_replay_a_changed_record(count in 1..8usize, fault in fault()) {
        let (_, records) = history(count);
        let mut bytes = log_bytes(&records);
        let len = bytes.len();
        let first_changed = match fault {
            Fault::Flip(at, x) => {
                let at = at.index(len);
                bytes[at] ^= x;
                at
            }
            Fault::Cut(at) => {
                let at = at.index(len + 1);
                bytes.truncate(at);
                at
            }
            Fault::Delete(at, n) => {
                let at = at.index(len);
                let end = (at + n).min(len);
                bytes.drain(at..end);
                at
            }
        };
        match load(&bytes) {
            Ok(loaded) => {
                let kept = loaded.records.len();
                prop_assert!(kept <= records.len());
                prop_assert_eq!(rvs(&loaded.records), rvs(&records[..kept]));
                for (read, written) in loaded.records.iter().zip(&records) {
                    prop_assert_eq!(&read.object, &written.object);
                    prop_assert_eq!(&read.event_type, &written.event_type);
                }
                prop_assert_eq!(loaded.valid_len + loaded.torn_bytes, bytes.len() as u64);
                // Every whole record before the fault is still there.
                let intact = log_bytes(&records[..kept]).len();
                prop_assert!(loaded.valid_len as usize >= intact.min(first_changed) || first_changed < allot_eventlog::HEADER.len());
                if let Fault::Cut(_) = fault {
                    prop_assert!(first_changed < allot_eventlog::HEADER.len() || loaded.valid_len as usize == intact);
                }
                let store = replay(&loaded.records);
                prop_assert!(store.is_ok(), "{:?}", store.err());
            }
            Err(Error::CorruptLog { offset, .. }) => {
                prop_assert!(!matches!(fault, Fault::Cut(_)), "a cut is a torn tail");
                prop_assert!(offset as usize <= first_changed, "{offset} > {first_changed}");
            }
            Err(other) => prop_assert!(false, "unexpected {other}"),
        }
    }
}
