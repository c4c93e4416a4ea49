//! `ctxpack index`: build the snapshot of a commit.

use clap::Args;
use ctxpack_api::{Error, IndexRequest, IndexSummary};

use crate::cli::Location;
use crate::output::{note, progress};

/// Options of `ctxpack index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The commit to index: HEAD, a full SHA or a unique hex prefix.
    #[arg(long, default_value_t = IndexRequest::default().at)]
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
    #[arg(long, default_value_t = IndexRequest::default().max_file_bytes)]
    pub max_file_bytes: u64,
    /// Output format of the summary: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// The one-line summary of an index run.
pub fn summary(r: &IndexSummary) -> String {
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
pub fn run(args: &IndexArgs) -> Result<String, Error> {
    let request = IndexRequest {
        at: args.at.clone(),
        rebuild: args.rebuild,
        wait: args.wait,
        max_file_bytes: args.max_file_bytes,
    };
    let (control, bar) = progress("files");
    let report = args.location.workspace()?.index(&request, &control)?;
    drop(bar);
    if let Some(aside) = &report.moved_aside {
        note(&format!(
            "the unreadable database was moved to {} and the store starts afresh\n",
            aside.display()
        ));
    }
    Ok(if args.format == "json" {
        format!("{}\n", report.to_json())
    } else {
        format!("{}\n", summary(&report))
    })
}
