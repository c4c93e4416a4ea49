//! The ctxpack store: what ctxpack indexed, kept in a directory.
//!
//! SQLite (bundled, WAL) is the system of record: snapshots, their manifests (path → file
//! version), chunk text and costs, and the format version. A tantivy index beside it
//! (`lexical/`) answers BM25 queries over chunk text, paths and symbols. Writes are atomic per
//! snapshot: chunks and their lexical entries are written first, and the snapshot row with its
//! manifest is committed last in one transaction, so a reader sees a snapshot whole or not at
//! all. One writer at a time holds `writer.lock`; readers never take it.
//!
//! ```no_run
//! use ctxpack_store::Store;
//!
//! let store = Store::open(std::path::Path::new(".ctxpack"))?;
//! for snapshot in store.snapshots()? {
//!     println!("{} {} files", snapshot.sha, snapshot.files);
//! }
//! # Ok::<(), ctxpack_store::StoreError>(())
//! ```

pub mod artifacts;
mod db;
mod digest;
pub mod docs;
mod error;
mod failpoint;
mod file_list;
mod gc;
mod guard;
pub mod ledger;
mod ledger_index;
mod lexical;
mod lock;
mod manifest;
pub mod registry;
mod scope;
pub mod session;
mod vector_blob;
pub mod verify;

pub use db::{
    ChunkHead, ChunkRow, FORMAT_VERSION, FileVersion, InsideRuns, NewChunk, NewFile, SnapshotRow,
    SnapshotStats, Store, TEST_MARKERS, checksum, has_test_marker,
};
pub use error::StoreError;
pub use failpoint::failpoint;
pub use gc::Reclaimed;
pub use guard::check_layout;
pub use ledger::{
    Ledger, LedgerContents, LedgerPage, LedgerQuery, LedgerRecord, LedgerSeen, LedgerStore,
    RecordContext,
};
pub use lexical::{ExtraDoc, FileSet, LexicalHit, QueryTerms, ScoreBreakdown, TermReader, analyze};
pub use lock::WriterLock;
pub use manifest::{Manifest, ManifestDigest, NewSnapshot};
pub use scope::ChunkStart;
pub use session::{
    FileSessions, MemorySessions, SessionKey, SessionLimits, SessionState, SessionStore, ShownRange,
};
