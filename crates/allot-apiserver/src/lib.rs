//! `allot serve`: a Kubernetes-compatible API server that kubectl drives unmodified.
//!
//! Key design decision: the objects live in the same in-memory [`allot_store::Store`] the
//! control-plane loops of `allot simulate` use, and durability comes from persisting the store's
//! own event log (one record per resourceVersion) through a [`storage::Backend`] before a write
//! is acknowledged. Restart replays the log through the store's write operations, which rebuilds
//! identical resourceVersions and uids. The cost: all objects must fit in memory and the whole
//! log is replayed at start (no snapshots yet); writes are serialised behind one lock, so
//! throughput is bounded by one fsync per write. The control-plane loops (ResourceClaim
//! controller, scheduler, device-taint eviction) run on their own thread on the real clock and
//! borrow the same store under the same lock, so their writes are persisted and watched like
//! API writes.

#![deny(missing_docs)]

pub mod aggregation;
pub mod apply;
pub mod auth;
pub mod controllers;
pub mod decode;
pub mod discovery;
pub mod etcd;
pub mod events;
pub mod events_v1;
pub mod kinds_admission;
pub mod lease;
pub mod legacy_token_tracking;
pub mod media;
pub mod metrics;
pub mod namespace;
pub mod nodes;
pub mod openapi;
pub mod openapi_pb;
pub mod patch;
pub mod patch_kinds;
pub mod pods;
pub mod printers;
pub mod query;
pub mod rbac;
pub mod rbac_kinds;
pub mod request_log;
pub mod resources;
pub mod scale;
pub mod scheduler_config;
pub mod selector;
pub mod server;
pub mod storage;
mod subresources;
pub mod tls;
#[cfg(test)]
mod typed_body_tests;
pub mod ui;
pub mod versions;

use std::path::PathBuf;

pub use server::{ServeOptions, Server};

/// Errors of the API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The event log holds a record that does not parse.
    #[error("{path}: corrupt record at byte {offset}: {message}")]
    CorruptLog {
        /// The log file.
        path: PathBuf,
        /// Where the record starts.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// The event log is missing or empty in a data directory an earlier server used.
    #[error(
        "{log}: {state}, but {sign} shows that this data directory was used before: its objects are lost, and allot serve will not start an empty cluster in their place. Restore the data directory from a backup, or start with --allow-empty-store to begin with an empty cluster"
    )]
    EmptyStore {
        /// The log file.
        log: PathBuf,
        /// `missing` or `empty`.
        state: &'static str,
        /// What shows the directory was used (`DIR/pki` or `DIR/tokens.csv`).
        sign: PathBuf,
    },
    /// `allot serve --from`: the objects could not be pre-loaded (nothing was served).
    #[error("--from: {message}")]
    Preload {
        /// Why.
        message: String,
    },
    /// A record could not be replayed into the store.
    #[error("replaying resourceVersion {rv}: {message}")]
    Replay {
        /// The record's resourceVersion.
        rv: u64,
        /// What went wrong.
        message: String,
    },
    /// Another process serves from the data directory.
    #[error(
        "{path}: in use by {holder} (its lock file is {path}/lock): stop that allot serve first, or use another --data-dir"
    )]
    Locked {
        /// The data directory.
        path: PathBuf,
        /// Who holds it.
        holder: String,
    },
    /// etcd refused or failed a request (the write was not made).
    #[error("etcd {endpoints}: {message}")]
    Etcd {
        /// The endpoints.
        endpoints: String,
        /// What went wrong.
        message: String,
    },
    /// The etcd watch that keeps this server's objects current stopped for good.
    #[error("etcd watch: {message}")]
    EtcdWatch {
        /// Why.
        message: String,
    },
    /// A write lost a race with another server's write of the same object.
    #[error("{key}: {message}")]
    Conflict {
        /// The object.
        key: allot_store::ObjectKey,
        /// What happened.
        message: String,
        /// The object is gone.
        not_found: bool,
        /// The object was created meanwhile.
        exists: bool,
    },
    /// The TLS certificates could not be created or loaded.
    #[error("{path}: {message}")]
    Tls {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A tokens file line does not parse.
    #[error("{path}:{line}: {message}")]
    TokenFile {
        /// The tokens file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The listen address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl Error {
    /// Whether the storage may now disagree with the server's objects, so that the server must
    /// refuse every further write (a failed append to the log); other errors fail one write.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Error::Io { .. }
                | Error::CorruptLog { .. }
                | Error::Replay { .. }
                | Error::EtcdWatch { .. }
        )
    }
}

/// Opens the data directory, binds, calls `ready` with the server (to print the kubeconfig path),
/// then serves until the process ends. Builds its own tokio runtime, so callers need none.
pub fn serve_blocking(options: ServeOptions, ready: impl FnOnce(&Server)) -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| Error::Io {
            path: PathBuf::from("<tokio runtime>"),
            source,
        })?;
    runtime.block_on(async move {
        let server = Server::bind(options).await?;
        ready(&server);
        server.run().await
    })
}
