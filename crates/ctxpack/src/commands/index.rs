//! `ctxpack index`: build the snapshot of a commit.

use std::io::IsTerminal;

use clap::Args;
use ctxpack_index::git::Repo;
use ctxpack_index::indexer::{IndexOptions, IndexReport, index_commit};
use ctxpack_store::{Store, WriterLock};
use serde_json::json;

use crate::commands::repo::Location;
use crate::failure::Failure;

/// Options of `ctxpack index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The commit to index: HEAD, a full SHA or a unique hex prefix.
    #[arg(long, default_value = "HEAD")]
    pub at: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Rebuild the lexical index from the stored chunks (after it was damaged or deleted).
    #[arg(long)]
    pub rebuild: bool,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
    /// Skip files larger than this many bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_file_bytes: u64,
    /// Output format of the summary: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Indexes `sha` into the store at `dir`, creating the store if needed, with a progress bar
/// on stderr when it is a terminal.
pub fn index_into(
    repo: &Repo,
    dir: &std::path::Path,
    sha: &str,
    wait: bool,
    options: &IndexOptions,
) -> Result<IndexReport, Failure> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::new(
            crate::failure::FailureKind::Internal,
            format!("cannot create store directory {}: {e}", dir.display()),
        )
    })?;
    let lock = WriterLock::acquire(dir, wait)?;
    let mut store = Store::open_or_create(dir)?;
    let report = run_with_progress(repo, &mut store, sha, options)?;
    drop(lock);
    Ok(report)
}

fn run_with_progress(
    repo: &Repo,
    store: &mut Store,
    sha: &str,
    options: &IndexOptions,
) -> Result<IndexReport, Failure> {
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} chunking {pos}/{len} files {wide_bar} {eta}",
            )
            .expect("the template is valid"),
        );
        Some(bar)
    } else {
        None
    };
    let mut progress = |done: usize, total: usize| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    };
    let report = index_commit(repo, store, sha, options, &mut progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(report?)
}

/// The one-line summary of an index run.
pub fn summary(r: &IndexReport) -> String {
    let short = r.sha.get(..12).unwrap_or(&r.sha);
    if r.already_indexed {
        return format!(
            "snapshot {short} is already indexed: {} files, {} chunks",
            r.files, r.chunks
        );
    }
    let skipped: u64 = r.skipped.values().sum();
    let reasons: Vec<String> = r.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let reasons = if reasons.is_empty() {
        String::new()
    } else {
        format!(" ({})", reasons.join(", "))
    };
    format!(
        "indexed {short}: {} files ({} new, {} reused), {} chunks, {skipped} skipped{reasons}, {:.2} s",
        r.files, r.processed, r.reused, r.chunks, r.seconds
    )
}

/// Runs `ctxpack index`.
pub fn run(args: &IndexArgs) -> Result<String, Failure> {
    let repo = args.location.repo()?;
    let sha = repo.resolve(&args.at)?;
    let dir = args.location.store_dir(&repo);
    if args.rebuild {
        std::fs::create_dir_all(&dir).map_err(|e| {
            Failure::new(
                crate::failure::FailureKind::Internal,
                format!("cannot create store directory {}: {e}", dir.display()),
            )
        })?;
        let lock = WriterLock::acquire(&dir, args.wait)?;
        let (mut store, moved) = Store::rebuild(&dir, &lock)?;
        if let Some(aside) = moved {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "the unreadable database was moved to {} and the store starts afresh",
                aside.display()
            );
        }
        let report = run_with_progress(
            &repo,
            &mut store,
            &sha,
            &IndexOptions {
                max_file_bytes: args.max_file_bytes,
                ..IndexOptions::default()
            },
        )?;
        drop(lock);
        return Ok(render(args, &report));
    }
    let options = IndexOptions {
        max_file_bytes: args.max_file_bytes,
        ..IndexOptions::default()
    };
    let report = index_into(&repo, &dir, &sha, args.wait, &options)?;
    Ok(render(args, &report))
}

fn render(args: &IndexArgs, r: &IndexReport) -> String {
    if args.format == "json" {
        let v = json!({
            "sha": r.sha,
            "alreadyIndexed": r.already_indexed,
            "files": r.files,
            "processed": r.processed,
            "reused": r.reused,
            "chunks": r.chunks,
            "skipped": r.skipped,
            "seconds": (r.seconds * 1000.0).round() / 1000.0,
        });
        format!("{v}\n")
    } else {
        format!("{}\n", summary(r))
    }
}
