//! Finding evidence in git snapshots.
//!
//! [`git`] reads a commit strictly (no revision syntax), [`chunk`] cuts files on syntactic
//! boundaries with tree-sitter (line windows for other files), [`indexer`] writes a snapshot
//! to the store incrementally, and [`retrieve`] turns a goal into ranked candidates of one
//! snapshot for the pack engine.
//!
//! ```no_run
//! use ctxpack_index::{git::Repo, indexer::{index_commit, IndexOptions}, retrieve::retrieve};
//! use ctxpack_store::Store;
//!
//! let repo = Repo::discover(std::path::Path::new("."))?;
//! let sha = repo.resolve("HEAD")?;
//! let mut store = Store::open_or_create(&repo.root().join(".ctxpack"))?;
//! let _lock = store.lock(false)?;
//! index_commit(&repo, &mut store, &sha, &IndexOptions::default(), &mut |_, _, _| std::ops::ControlFlow::Continue(()))?;
//! let hits = retrieve(&store, &sha, &[], "how are budgets enforced", 30, ctxpack_meter::Meter::Words)?;
//! # Ok::<(), ctxpack_index::IndexError>(())
//! ```

pub mod chunk;
mod error;
pub mod eval;
pub mod git;
pub mod highlight;
pub mod history;
pub mod ignore;
pub mod indexer;
pub mod paths;
pub mod retrieve;
pub mod worktree;

pub use error::IndexError;
