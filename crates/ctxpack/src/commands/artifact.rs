//! `ctxpack artifact`: evidence that belongs to the store rather than to a snapshot.

use std::fmt::Write;

use clap::{Args, Subcommand};
use ctxpack_index::indexer::{IndexOptions, STORED_CHUNKER, prepare_text};
use ctxpack_store::artifacts::{Added, ArtifactRow, NewArtifact, SCOPES};
use ctxpack_store::{NewFile, Store, StoreError, WriterLock};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::commands::repo::Location;
use crate::failure::{Failure, FailureKind};

/// `ctxpack artifact …`.
#[derive(Debug, Subcommand)]
pub enum ArtifactCommand {
    /// Store a text file (or stdin) as an artifact of a scope.
    Add(AddArgs),
    /// List artifacts.
    List(ListArgs),
    /// Print an artifact's (masked) text.
    Show(IdArgs),
    /// Remove an artifact; packs no longer see it.
    Rm(IdArgs),
}

/// Options of `artifact add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The file to store, or `-` for stdin.
    pub file: String,
    /// `session`, `harness` or `evidence`.
    #[arg(long)]
    pub scope: String,
    /// Its id (default: a hash of its content).
    #[arg(long)]
    pub id: Option<String>,
    /// Where it came from (names its source family when no --id is given).
    #[arg(long)]
    pub source_id: Option<String>,
    /// A human title.
    #[arg(long)]
    pub title: Option<String>,
    /// Refuse artifacts larger than this many bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    pub max_bytes: u64,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// Options of `artifact list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this scope.
    #[arg(long)]
    pub scope: Option<String>,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// An artifact id.
#[derive(Debug, Args)]
pub struct IdArgs {
    /// The artifact id.
    pub id: String,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

impl ArtifactCommand {
    /// Whether failures should be JSON envelopes.
    pub fn wants_json(&self) -> bool {
        matches!(self, ArtifactCommand::List(args) if args.format == "json")
    }

    /// Runs the command.
    pub fn run(
        &self,
        read_input: &dyn Fn(&str) -> Result<Vec<u8>, Failure>,
    ) -> Result<String, Failure> {
        match self {
            ArtifactCommand::Add(args) => add(args, read_input),
            ArtifactCommand::List(args) => list(args),
            ArtifactCommand::Show(args) => show(args),
            ArtifactCommand::Rm(args) => rm(args),
        }
    }
}

fn check_scope(scope: &str) -> Result<(), Failure> {
    if SCOPES.contains(&scope) {
        Ok(())
    } else {
        Err(Failure::invalid(format!(
            "unknown artifact scope `{scope}`: expected session, harness or evidence"
        )))
    }
}

fn check_id(id: &str, what: &str) -> Result<(), Failure> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Failure::invalid(format!(
            "{what} `{id}` is not valid: use 1 to 128 letters, digits, `-`, `_` or `.`, not starting with `.`"
        )))
    }
}

fn open(location: &Location) -> Result<Store, Failure> {
    Ok(Store::open(&location.resolve_store_dir()?)?)
}

/// An artifact to add, as every surface (the CLI, the MCP server) gives it.
#[derive(Clone, Debug)]
pub struct ArtifactRequest<'a> {
    /// `session`, `harness` or `evidence`.
    pub scope: &'a str,
    /// Its id (default: the first 16 hex digits of the content's SHA-256).
    pub id: Option<&'a str>,
    /// Where it came from.
    pub source_id: Option<&'a str>,
    /// A human title.
    pub title: Option<&'a str>,
    /// A file name, used to choose the chunker (a language, or line windows).
    pub name: Option<&'a str>,
    /// The largest accepted size in bytes.
    pub max_bytes: u64,
    /// Wait for another writer instead of failing.
    pub wait: bool,
}

/// Stores an artifact in the store of `location` and returns its id. The same id with the
/// same content is a no-op; with other content it is a conflict (exit 5).
pub fn add_artifact(
    location: &Location,
    request: &ArtifactRequest<'_>,
    bytes: &[u8],
) -> Result<String, Failure> {
    check_scope(request.scope)?;
    if let Some(id) = request.id {
        check_id(id, "artifact id")?;
    }
    if let Some(source) = request.source_id {
        check_id(source, "source id")?;
    }
    if bytes.len() as u64 > request.max_bytes {
        return Err(Failure::invalid(format!(
            "the artifact is {} bytes, over the limit of {} (raise it with --max-bytes)",
            bytes.len(),
            request.max_bytes
        )));
    }
    let hash: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let id = request
        .id
        .map_or_else(|| hash[..16].to_owned(), str::to_owned);
    let name = request.name.unwrap_or(id.as_str());
    let chunks = prepare_text(name, bytes, &IndexOptions::default()).map_err(|reason| {
        Failure::invalid(format!(
            "the artifact cannot be stored: it is {}",
            if reason == "binary" {
                "binary"
            } else {
                "not valid UTF-8"
            }
        ))
    })?;
    let family_id = request
        .id
        .or(request.source_id)
        .map_or_else(|| id.clone(), str::to_owned);
    let artifact = NewArtifact {
        row: ArtifactRow {
            id: id.clone(),
            scope: request.scope.to_owned(),
            source_id: request.source_id.map(str::to_owned),
            title: request.title.map(str::to_owned),
            family_id,
            content_hash: hash.clone(),
            bytes: bytes.len() as u64,
            created_at: 0,
            file_id: 0,
        },
        file: NewFile {
            path: format!("{}{id}", ctxpack_index::retrieve::ARTIFACT_PREFIX),
            blob: hash,
            bytes: bytes.len() as u64,
            skip_reason: None,
            chunks,
        },
    };
    let dir = location.resolve_store_dir()?;
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::new(
            FailureKind::Internal,
            format!("cannot create store directory {}: {e}", dir.display()),
        )
    })?;
    let lock = WriterLock::acquire(&dir, request.wait)?;
    let mut store = Store::open_or_create(&dir)?;
    // The same id with the same content is already there: nothing to do.
    let (Added::Stored | Added::Unchanged) = store.add_artifact(&artifact, STORED_CHUNKER)?;
    drop(lock);
    Ok(id)
}

fn add(
    args: &AddArgs,
    read_input: &dyn Fn(&str) -> Result<Vec<u8>, Failure>,
) -> Result<String, Failure> {
    let bytes = read_input(&args.file)?;
    let request = ArtifactRequest {
        scope: &args.scope,
        id: args.id.as_deref(),
        source_id: args.source_id.as_deref(),
        title: args.title.as_deref(),
        name: (args.file != "-").then_some(args.file.as_str()),
        max_bytes: args.max_bytes,
        wait: args.wait,
    };
    Ok(format!(
        "{}\n",
        add_artifact(&args.location, &request, &bytes)?
    ))
}

fn list(args: &ListArgs) -> Result<String, Failure> {
    if let Some(scope) = &args.scope {
        check_scope(scope)?;
    }
    let rows = match open(&args.location) {
        Ok(store) => store.artifacts(args.scope.as_deref())?,
        Err(f) if f.kind == FailureKind::NotFound => Vec::new(),
        Err(f) => return Err(f),
    };
    if args.format == "json" {
        let v: Vec<_> = rows
            .iter()
            .map(|a| {
                json!({
                    "id": a.id,
                    "scope": a.scope,
                    "sourceId": a.source_id,
                    "title": a.title,
                    "family": family(a),
                    "bytes": a.bytes,
                    "sha256": a.content_hash,
                    "createdAt": a.created_at,
                })
            })
            .collect();
        return Ok(format!("{}\n", serde_json::Value::Array(v)));
    }
    let mut out = String::new();
    for a in &rows {
        let _ = writeln!(
            out,
            "{}  {:<8}  {:>8} bytes  {}{}",
            a.id,
            a.scope,
            a.bytes,
            family(a),
            a.title
                .as_deref()
                .map(|t| format!("  {t}"))
                .unwrap_or_default()
        );
    }
    Ok(out)
}

/// The source family an artifact's chunks belong to.
fn family(a: &ArtifactRow) -> String {
    let kind = if a.scope == "evidence" {
        "evidence"
    } else {
        "artifact"
    };
    format!("{kind}:{}", a.family_id)
}

fn find(store: &Store, id: &str) -> Result<ArtifactRow, Failure> {
    store.artifact(id)?.ok_or_else(|| {
        Failure::new(FailureKind::NotFound, format!("no artifact `{id}`"))
            .with_hint("list artifacts with `ctxpack artifact list`")
    })
}

fn show(args: &IdArgs) -> Result<String, Failure> {
    let store = open(&args.location)?;
    let artifact = find(&store, &args.id)?;
    Ok(store.artifact_text(&artifact)?)
}

fn rm(args: &IdArgs) -> Result<String, Failure> {
    let dir = args.location.resolve_store_dir()?;
    let lock = WriterLock::acquire(&dir, false).map_err(|e| match e {
        StoreError::Io { .. } => Failure::from(StoreError::NotFound { dir: dir.clone() }),
        e => e.into(),
    })?;
    let mut store = Store::open_or_create(&dir)?;
    find(&store, &args.id)?;
    store.remove_artifact(&args.id)?;
    drop(lock);
    Ok(format!("removed {}\n", args.id))
}
