//! `ctxpack index`: build the snapshot of a commit.

use clap::Args;
use ctxpack_api::{Error, IndexRequest};

use crate::args::Location;
use crate::client::{Remote, ServerArgs};
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
    /// Index on a ctxpack server instead (a write token in CTXPACK_TOKEN).
    #[command(flatten)]
    pub remote: ServerArgs,
}

/// Runs `ctxpack index`.
pub fn run(args: &IndexArgs) -> Result<String, Error> {
    let request = IndexRequest {
        at: args.at.clone(),
        rebuild: args.rebuild,
        wait: args.wait,
        max_file_bytes: args.max_file_bytes,
    };
    if let Some(remote) = Remote::from_args(&args.remote)? {
        if args.rebuild {
            return Err(Error::invalid(
                "--rebuild is local: it repairs this machine's store, not a server's",
            ));
        }
        return remote.post("index", &[("format", args.format.clone())], &request);
    }
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
        format!("{report}\n")
    })
}
