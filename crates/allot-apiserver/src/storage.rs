//! Durable storage of the store's event log.
//!
//! Every change the in-memory [`Store`] makes is an [`Event`] with the next resourceVersion.
//! A [`Backend`] persists those events in order; replaying them through the store's own write
//! operations rebuilds exactly the same objects, resourceVersions and uids, because the store
//! assigns them from counters that advance once per event. The server acknowledges a write only
//! after [`Backend::append`] returned, so an acknowledged write is on disk.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use allot_api::load::Object;
use allot_api::load::{LoadOptions, RawDocument, SourceMap, decode_object};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::Error;

/// One persisted event, as written to the log.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The resourceVersion the change produced.
    pub rv: u64,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The object after the change (before it, for `DELETED`).
    pub object: serde_json::Value,
}

impl Record {
    /// The record of a store event.
    pub fn of(event: &Event) -> Record {
        Record {
            rv: event.resource_version,
            event_type: event_type_name(event.event_type).to_string(),
            object: event.object.to_json(),
        }
    }
}

/// The watch name of an event type.
pub fn event_type_name(event_type: EventType) -> &'static str {
    match event_type {
        EventType::Added => "ADDED",
        EventType::Modified => "MODIFIED",
        EventType::Deleted => "DELETED",
    }
}

/// The outcome of a commit: how the store's resourceVersions of the committed changes ended up.
#[derive(Debug, Default)]
pub struct Committed {
    /// (resourceVersion the change had in the store before the commit, the object as committed)
    /// for every change whose committed object differs from what the writer saw: the response
    /// to a write must show the committed object.
    pub renumbered: Vec<(u64, Stored)>,
    /// Whether the store took in other servers' object changes while committing, between
    /// changes of this commit (controllers that track what they have seen must start over).
    pub rebased: bool,
}

/// Where objects are kept durably. A write changes the in-memory [`Store`] under the server's
/// lock, then [`Backend::commit`] makes the change durable before it is acknowledged.
pub trait Backend: Send {
    /// Makes the store's new changes durable. `rebase`: whether changes that lost a race with
    /// another server may be re-applied on top of that server's (API writes), or must be
    /// refused (controllers). On an error the store holds exactly what is durable, except
    /// after a fatal error ([`Error::is_fatal`]).
    fn commit(&mut self, store: &mut Store, rebase: bool) -> Result<Committed, Error>;
    /// Applies changes that other servers committed; returns whether the store changed.
    fn sync(&mut self, _store: &mut Store) -> Result<bool, Error> {
        Ok(false)
    }
    /// The oldest resourceVersion a watch may start from (older ones get 410 Gone).
    fn oldest_resource_version(&self) -> u64 {
        0
    }
    /// Whether this server runs the controllers (leader election; always with one server).
    fn is_leader(&self) -> bool {
        true
    }
    /// Counts the times the store was rebuilt from a new list of shared storage (etcd compacted
    /// the revisions its watch still needed). Watches of the store from before a rebuild end,
    /// as kube-apiserver's watch cache ends its watchers when it re-lists.
    fn epoch(&self) -> u64 {
        0
    }
    /// What a read that must see every write acknowledged so far (by any server), or at least
    /// resourceVersion `at_least`, waits for without the server's lock, before
    /// [`Backend::sync`]; `None`: the store is always current (the embedded log).
    /// kube-apiserver serves reads without resourceVersion from etcd.
    fn read_barrier(&self, _at_least: Option<u64>) -> Option<ReadBarrier> {
        None
    }
}

/// Waits until the writes shared storage has committed so far can be applied to the store.
pub type ReadBarrier = Box<dyn FnOnce() -> Result<(), ReadError> + Send>;

/// Why a [`ReadBarrier`] gave up.
#[derive(Debug)]
pub enum ReadError {
    /// The store did not reach revision `wanted` in time (it is at `current`).
    TooLarge {
        /// Shared storage's revision when the read came in.
        wanted: u64,
        /// The newest revision the store can apply.
        current: u64,
    },
    /// Shared storage did not answer.
    Unavailable(String),
}

/// Puts the committed object in place of what a write returned, when the commit renumbered it.
pub trait Renumber {
    /// Replaces `self` by its committed version.
    fn renumber(&mut self, committed: &Committed);
}

impl Renumber for Stored {
    fn renumber(&mut self, committed: &Committed) {
        let rv = self.meta().resource_version.parse::<u64>().ok();
        if let Some(rv) = rv
            && let Some((_, object)) = committed.renumbered.iter().find(|(old, _)| *old == rv)
        {
            *self = object.clone();
        }
    }
}

/// Opens the storage a server was configured with and loads its objects: etcd when
/// `etcd` is given, else the event log under `data_dir` (which stays locked by this process:
/// a second server on the same directory is refused with a clear message).
pub fn open(
    data_dir: &Path,
    etcd: Option<&crate::etcd::EtcdOptions>,
) -> Result<(Box<dyn Backend>, Store, DirLock), Error> {
    let lock = DirLock::acquire(data_dir)?;
    if let Some(options) = etcd {
        let (backend, store) = crate::etcd::EtcdBackend::open(options)?;
        return Ok((Box::new(backend), store, lock));
    }
    let mut log = FileLog::open(&data_dir.join("events.log"))?;
    let records = log.load()?;
    let store = replay(&records)?;
    Ok((Box::new(log), store, lock))
}

/// An exclusive lock on a data directory (`DIR/lock`, holding the owner's pid), released when
/// the process ends, however it ends.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Locks `dir/lock`, or says which process holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock, Error> {
        let path = dir.join("lock");
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                let holder = holder.trim();
                return Err(Error::Locked {
                    path: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "another process".into()
                    } else {
                        format!("process {holder}")
                    },
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(DirLock { _file: file })
    }
}

/// An append-only file of JSON lines, fsync'd after every append. A torn last line (a crash in
/// the middle of a write, never acknowledged) is cut off when the log is opened.
#[derive(Debug)]
pub struct FileLog {
    path: PathBuf,
    file: File,
    /// The newest resourceVersion in the file.
    persisted: u64,
}

impl FileLog {
    /// Opens (or creates) the log at `path`.
    pub fn open(path: &Path) -> Result<FileLog, Error> {
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(FileLog {
            path: path.to_path_buf(),
            file,
            persisted: 0,
        })
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source,
        }
    }
    /// Every record written so far, oldest first.
    pub fn load(&mut self) -> Result<Vec<Record>, Error> {
        self.file.seek(SeekFrom::Start(0)).map_err(|e| self.io(e))?;
        let mut reader = BufReader::new(&self.file);
        let mut records = Vec::new();
        let mut good_len: u64 = 0;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| self.io(e))?;
            if n == 0 {
                break;
            }
            if line.last() != Some(&b'\n') {
                // A torn write: it was never acknowledged.
                break;
            }
            let record: Record = serde_json::from_slice(&line).map_err(|e| Error::CorruptLog {
                path: self.path.clone(),
                offset: good_len,
                message: e.to_string(),
            })?;
            self.persisted = record.rv;
            records.push(record);
            good_len += n as u64;
        }
        drop(reader);
        let len = self.file.metadata().map_err(|e| self.io(e))?.len();
        if len != good_len {
            self.file.set_len(good_len).map_err(|e| self.io(e))?;
            self.file.sync_all().map_err(|e| self.io(e))?;
        }
        Ok(records)
    }

    /// Appends records durably.
    pub fn append(&mut self, records: &[Record]) -> Result<(), Error> {
        if records.is_empty() {
            return Ok(());
        }
        let mut buffer = Vec::new();
        for record in records {
            serde_json::to_writer(&mut buffer, record).map_err(|e| Error::CorruptLog {
                path: self.path.clone(),
                offset: 0,
                message: e.to_string(),
            })?;
            buffer.push(b'\n');
        }
        self.file.write_all(&buffer).map_err(|e| self.io(e))?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        if let Some(last) = records.last() {
            self.persisted = last.rv;
        }
        Ok(())
    }
}

impl Backend for FileLog {
    fn commit(&mut self, store: &mut Store, _rebase: bool) -> Result<Committed, Error> {
        let records: Vec<Record> = store
            .events_since(self.persisted)
            .iter()
            .map(Record::of)
            .collect();
        self.append(&records)?;
        Ok(Committed::default())
    }
}

/// Decodes a stored object's JSON (strictly, as the API types define it).
pub fn stored_from_json(value: &serde_json::Value) -> Result<Stored, String> {
    let api_version = value
        .get("apiVersion")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = value
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let raw = RawDocument {
        file: "request".into(),
        line: 1,
        api_version,
        kind,
        value: value.clone(),
        source_map: SourceMap::default(),
    };
    let object: Object = decode_object(&raw, &LoadOptions::default()).map_err(|e| e.to_string())?;
    Stored::from_object(object).ok_or_else(|| format!("kind {} is not served", raw.kind))
}

/// Replays records into an empty store; checks that every record gets its resourceVersion back.
pub fn replay(records: &[Record]) -> Result<Store, Error> {
    let mut store = Store::new();
    for record in records {
        let corrupt = |message: String| Error::Replay {
            rv: record.rv,
            message,
        };
        let object = stored_from_json(&record.object).map_err(corrupt)?;
        let key = key_of(&object);
        match record.event_type.as_str() {
            "ADDED" => {
                let now = object.meta().creation_timestamp.clone().unwrap_or_default();
                store
                    .create_stored(object, &now)
                    .map_err(|e| corrupt(e.to_string()))?;
            }
            "MODIFIED" => {
                let mut object = object;
                object.meta_mut().resource_version.clear();
                update_stored(&mut store, object).map_err(|e| corrupt(e.to_string()))?;
            }
            "DELETED" => {
                store.delete(&key).map_err(|e| corrupt(e.to_string()))?;
            }
            other => return Err(corrupt(format!("unknown event type {other}"))),
        }
        if store.resource_version() != record.rv {
            return Err(corrupt(format!(
                "replay reached resourceVersion {}",
                store.resource_version()
            )));
        }
    }
    Ok(store)
}

/// The key of a stored object.
pub fn key_of(object: &Stored) -> ObjectKey {
    let kind = object.kind();
    let namespace = if kind.namespaced() {
        object.meta().namespace.clone()
    } else {
        String::new()
    };
    ObjectKey::new(kind, namespace, object.meta().name.clone())
}

/// Replaces a stored object of any kind (see [`Store::update`]).
pub fn update_stored(store: &mut Store, object: Stored) -> Result<Stored, allot_store::StoreError> {
    store.update_stored(object)
}

/// Kinds by name, for replay error messages and lookups.
pub fn kind_by_name(name: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn namespace(name: &str) -> serde_json::Value {
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
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
    fn replay_restores_resource_versions_and_uids() {
        let mut store = Store::new();
        for name in ["a", "b", "c"] {
            let object = stored_from_json(&namespace(name)).expect("decodes");
            store
                .create_stored(object, "2026-01-01T00:00:00Z")
                .expect("creates");
        }
        store
            .delete(&ObjectKey::new(Kind::Namespace, "", "b"))
            .expect("deletes");
        let records: Vec<Record> = store.events_since(0).iter().map(Record::of).collect();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        let mut log = FileLog::open(&path).expect("opens");
        log.append(&records).expect("appends");
        let good_len = std::fs::metadata(&path).expect("stat").len();
        // A torn write at the end is dropped on open.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"{\"rv\":5,"))
            .expect("writes");
        let mut log = FileLog::open(&path).expect("reopens");
        let loaded = log.load().expect("loads");
        assert_eq!(loaded.len(), 4);
        let replayed = replay(&loaded).expect("replays");
        assert_eq!(replayed.resource_version(), 4);
        let names: Vec<(String, String)> = replayed
            .iter()
            .map(|(_, o)| (o.meta().name.clone(), o.meta().uid.clone()))
            .collect();
        let original: Vec<(String, String)> = store
            .iter()
            .map(|(_, o)| (o.meta().name.clone(), o.meta().uid.clone()))
            .collect();
        assert_eq!(names, original);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), good_len);
    }
}
