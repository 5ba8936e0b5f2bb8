//! Durable storage of the store's event log.
//!
//! Every change the in-memory [`Store`] makes is an [`Event`] with the next resourceVersion.
//! A [`Backend`] persists those events in order; replaying them through the store's own write
//! operations rebuilds exactly the same objects, resourceVersions and uids, because the store
//! assigns them from counters that advance once per event. The server acknowledges a write only
//! after [`Backend::append`] returned, so an acknowledged write is on disk.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
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
    /// The bytes of a torn last record dropped when the storage was opened (`/metrics`).
    fn torn_bytes_dropped(&self) -> u64 {
        0
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

/// The event log's file name under the data directory.
pub const LOG_FILE: &str = "events.log";

/// Opens the storage a server was configured with and loads its objects: etcd when
/// `etcd` is given, else the event log under `data_dir` (which stays locked by this process:
/// a second server on the same directory is refused with a clear message). A missing or
/// empty log in a directory an earlier server used (it holds `pki/` or `tokens.csv`) is
/// refused unless `allow_empty_store`: objects were lost, and an empty cluster must not start
/// silently in their place.
pub fn open(
    data_dir: &Path,
    etcd: Option<&crate::etcd::EtcdOptions>,
    allow_empty_store: bool,
) -> Result<(Box<dyn Backend>, Store, DirLock), Error> {
    let lock = DirLock::acquire(data_dir)?;
    if let Some(options) = etcd {
        let (backend, store) = crate::etcd::EtcdBackend::open(options)?;
        return Ok((Box::new(backend), store, lock));
    }
    let path = data_dir.join(LOG_FILE);
    let loaded = load_log(&path)?;
    if loaded.records.is_empty()
        && let Some(sign) = used_before(data_dir)
    {
        let state = if loaded.existed { "empty" } else { "missing" };
        if !allow_empty_store {
            return Err(Error::EmptyStore {
                log: path,
                state,
                sign: data_dir.join(sign),
            });
        }
        tracing::warn!(
            "{}: {state}, although {} shows the directory was used: starting an empty cluster (--allow-empty-store)",
            path.display(),
            data_dir.join(sign).display()
        );
    }
    let store = replay(&loaded.records)?;
    let log = FileLog::resume(&path, &loaded)?;
    Ok((Box::new(log), store, lock))
}

/// What in `data_dir` shows that a server used it before, if anything.
fn used_before(data_dir: &Path) -> Option<&'static str> {
    ["pki", "tokens.csv"]
        .into_iter()
        .find(|name| data_dir.join(name).exists())
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

/// The records of a log as read, and what reading found.
#[derive(Debug)]
pub struct LoadedLog {
    /// Every sound record, oldest first.
    pub records: Vec<Record>,
    /// The log's format (empty for a missing log).
    pub format: allot_eventlog::Format,
    /// Whether the file exists.
    pub existed: bool,
    /// The length of its sound part (header and whole records).
    pub valid_len: u64,
    /// The length of an incomplete last record after it (a write a crash cut short).
    pub torn_bytes: u64,
}

/// Reads the log at `path` (a missing one reads as empty).
pub fn load_log(path: &Path) -> Result<LoadedLog, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    match File::open(path) {
        Ok(file) => load_records(BufReader::new(file), path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LoadedLog {
            records: Vec::new(),
            format: allot_eventlog::Format::Empty,
            existed: false,
            valid_len: 0,
            torn_bytes: 0,
        }),
        Err(e) => Err(io(e)),
    }
}

/// Reads a log's records from `reader` (`path` names it in errors): every sound record, and
/// how long the incomplete last one is, if any. A record that fails its checksum, or does not
/// decode, is corruption: an error with its byte offset and the remedy.
pub fn load_records(reader: impl BufRead, path: &Path) -> Result<LoadedLog, Error> {
    let mut records = Vec::new();
    let scanned = allot_eventlog::scan(reader, |_, payload| {
        let record: Record = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
        records.push(record);
        Ok::<(), String>(())
    })
    .map_err(|err| {
        let (offset, record, problem) = match err {
            allot_eventlog::ScanError::Io(source) => {
                return Error::Io {
                    path: path.to_path_buf(),
                    source,
                };
            }
            allot_eventlog::ScanError::Corrupt {
                offset,
                record,
                problem,
            } => (offset, record, problem.to_string()),
            allot_eventlog::ScanError::Rejected {
                offset,
                record,
                error,
            } => (offset, record, format!("does not decode ({error})")),
        };
        corrupt(path, offset, record, &problem)
    })?;
    Ok(LoadedLog {
        records,
        format: scanned.format,
        existed: true,
        valid_len: scanned.valid_len,
        torn_bytes: scanned.torn_bytes,
    })
}

/// The error of a corrupt log: where, what, and what to do.
fn corrupt(path: &Path, offset: u64, record: u64, problem: &str) -> Error {
    let what = if record == 0 {
        format!("the header {problem}")
    } else {
        format!("record {record} {problem}")
    };
    let keep = record.saturating_sub(1);
    Error::CorruptLog {
        path: path.to_path_buf(),
        offset,
        message: format!(
            "{what}: the log is corrupt, not torn (a crash only cuts the last record short), so allot serve will not start on it. Restore the data directory from a backup; or keep the {keep} records before byte {offset} and lose the rest: truncate -s {offset} {}",
            path.display()
        ),
    }
}

/// The bytes a batch of records appends to a checksummed log.
pub fn encode_records(records: &[Record]) -> Result<Vec<u8>, String> {
    let mut buffer = Vec::new();
    for record in records {
        let payload = serde_json::to_vec(record).map_err(|e| e.to_string())?;
        allot_eventlog::encode(&payload, &mut buffer).map_err(|e| e.to_string())?;
    }
    Ok(buffer)
}

/// An append-only file of checksummed records ([`allot_eventlog`]), fsync'd after every
/// append. Opening it drops a torn last record (a crash in the middle of a write, never
/// acknowledged) and says so; a version 1 log (JSON lines without checksums) is rewritten in
/// the checksummed format first.
#[derive(Debug)]
pub struct FileLog {
    path: PathBuf,
    file: File,
    /// The newest resourceVersion in the file.
    persisted: u64,
    /// The bytes of a torn last record dropped when the log was opened.
    torn_bytes_dropped: u64,
}

impl FileLog {
    /// Opens (or creates) the log at `path` and reads its records.
    pub fn open(path: &Path) -> Result<(FileLog, Vec<Record>), Error> {
        let loaded = load_log(path)?;
        let log = FileLog::resume(path, &loaded)?;
        Ok((log, loaded.records))
    }

    /// Makes the log at `path`, as read into `loaded`, ready for appends: drops a torn last
    /// record (with a warning that counts its bytes), rewrites a version 1 log in the
    /// checksummed format, gives a new or empty log its header. Each of these is durable
    /// before it returns (a rewrite goes through a temporary file and a rename).
    pub fn resume(path: &Path, loaded: &LoadedLog) -> Result<FileLog, Error> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let fresh = loaded.valid_len == 0;
        if loaded.format == allot_eventlog::Format::Legacy || fresh {
            let mut bytes = allot_eventlog::HEADER.to_vec();
            bytes.extend(
                encode_records(&loaded.records).map_err(|message| Error::CorruptLog {
                    path: path.to_path_buf(),
                    offset: 0,
                    message,
                })?,
            );
            replace_file(path, &bytes)?;
            if loaded.format == allot_eventlog::Format::Legacy {
                tracing::warn!(
                    "{}: rewrote the log's {} records in the checksummed format (it was written by an earlier allot without checksums)",
                    path.display(),
                    loaded.records.len()
                );
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        if loaded.torn_bytes > 0 {
            if !fresh && loaded.format == allot_eventlog::Format::Checksummed {
                file.set_len(loaded.valid_len).map_err(io)?;
                file.sync_all().map_err(io)?;
            }
            tracing::warn!(
                "{}: dropped a torn last record, {} bytes at byte {} (a write cut short by a crash, never acknowledged); {} records kept",
                path.display(),
                loaded.torn_bytes,
                loaded.valid_len,
                loaded.records.len()
            );
        }
        Ok(FileLog {
            path: path.to_path_buf(),
            file,
            persisted: loaded.records.last().map_or(0, |r| r.rv),
            torn_bytes_dropped: loaded.torn_bytes,
        })
    }

    /// The bytes of a torn last record dropped when the log was opened (0 if none).
    pub fn torn_bytes_dropped(&self) -> u64 {
        self.torn_bytes_dropped
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Appends records durably.
    pub fn append(&mut self, records: &[Record]) -> Result<(), Error> {
        if records.is_empty() {
            return Ok(());
        }
        let buffer = encode_records(records).map_err(|message| Error::CorruptLog {
            path: self.path.clone(),
            offset: 0,
            message,
        })?;
        self.file.write_all(&buffer).map_err(|e| self.io(e))?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        if let Some(last) = records.last() {
            self.persisted = last.rv;
        }
        Ok(())
    }
}

/// Replaces `path` by `bytes` atomically: a temporary file beside it, fsync, rename, fsync of
/// the directory.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let temporary = path.with_extension("log.tmp");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let mut file = File::create(&temporary).map_err(io(&temporary))?;
    file.write_all(bytes).map_err(io(&temporary))?;
    file.sync_all().map_err(io(&temporary))?;
    drop(file);
    std::fs::rename(&temporary, path).map_err(io(path))?;
    if let Some(dir) = path.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
    }
    Ok(())
}

impl Backend for FileLog {
    fn torn_bytes_dropped(&self) -> u64 {
        self.torn_bytes_dropped
    }
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
#[path = "storage_tests.rs"]
mod tests;
