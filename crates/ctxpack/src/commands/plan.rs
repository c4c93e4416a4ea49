//! `ctxpack plan run` and `ctxpack plan check`: context plans (seed 004) over a repository.
//!
//! The language, name resolution and the `ctx` semantics live in the pure [`ctxpack_plan`]
//! crate. This module is its IO: [`CliSources`] implements [`Sources`] with the rest of ctxpack
//! — `read` from the committed snapshot with gix (the worktree only with `worktree: true`,
//! never outside the repository), `query` through the index, `docs` through document stores,
//! `artifact` through the store, and `run` as a child process started without a shell, only
//! with `--allow-run`, under a time limit and an output limit. Every version of every ctx is
//! recorded in the ledger, linked to the version it extends.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use ctxpack_core::{Citation, Family, Format, Location, Meter, RenderOptions, View, Warning};
use ctxpack_core::{pack_json, render};
use ctxpack_index::git::{EntryKind, Repo, TreeEntry};
use ctxpack_plan::{
    BindOutcome, DocsRequest, EvalOptions, Event, Outcome, PlanError, QueryRequest, ReadRequest,
    RunRequest, Source, SourceError, SourceHit, Sources, StepKind, Text, Value, compile, evaluate,
    normalize_path, render_all,
};
use ctxpack_store::{RecordContext, Store, StoreError};
use serde_json::json;

use crate::cli::parse_view;
use crate::commands::docs::{VsearchRequest, open_store, vsearch};
use crate::commands::ledger;
use crate::commands::pack::query_hits;
use crate::commands::repo::Location as RepoLocation;
use crate::failure::{Failure, FailureKind};

/// The `ctxpack plan` subcommands.
#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Evaluate a plan and print the packs it emits.
    Run(RunArgs),
    /// Parse a plan and resolve its names without running anything.
    Check(CheckArgs),
}

/// Options of `plan run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (`.ctx`).
    pub file: PathBuf,
    /// Let `run(…)` start commands (never through a shell).
    #[arg(long)]
    pub allow_run: bool,
    /// Seconds a `run` command may take before it is killed.
    #[arg(long, default_value_t = RunLimits::DEFAULT_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub run_timeout: u64,
    /// Bytes of output a `run` command may produce; the rest is cut, with a note.
    #[arg(long, default_value_t = RunLimits::DEFAULT_MAX_OUTPUT)]
    pub run_max_output: usize,
    /// Output format: text, json or markdown.
    #[arg(long, default_value = "text", value_parser = parse_plan_format)]
    pub format: Format,
    /// How much of each hit to show: minimal, default or full.
    #[arg(long, default_value = "default", value_parser = parse_view)]
    pub view: View,
    /// Pretty-print JSON over several lines.
    #[arg(long)]
    pub pretty: bool,
    /// Also print the events of the run, in order (after the packs; in JSON under "trace").
    #[arg(long)]
    pub trace: bool,
    /// Do not record the versions in the ledger.
    #[arg(long)]
    pub no_ledger: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: RepoLocation,
}

/// Options of `plan check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plan file (`.ctx`).
    pub file: PathBuf,
}

fn parse_plan_format(s: &str) -> Result<Format, String> {
    match s {
        "text" => Ok(Format::Text),
        "json" => Ok(Format::Json),
        "markdown" => Ok(Format::Markdown),
        other => Err(format!(
            "unknown plan format `{other}`: expected one of text, json, markdown"
        )),
    }
}

impl PlanCommand {
    /// Whether a failure should also print the JSON envelope on stdout.
    pub fn wants_json(&self) -> bool {
        matches!(self, PlanCommand::Run(args) if args.format == Format::Json)
    }

    /// Runs the subcommand and returns what goes to stdout.
    pub fn run(self) -> Result<String, Failure> {
        match self {
            PlanCommand::Run(args) => run(&args),
            PlanCommand::Check(args) => check(&args),
        }
    }
}

/// The plan's text and the name its diagnostics show.
fn read_plan(file: &Path) -> Result<(String, String), Failure> {
    let bytes = std::fs::read(file).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            FailureKind::NotFound
        } else {
            FailureKind::InvalidInput
        };
        Failure::new(kind, format!("cannot read plan {}: {e}", file.display()))
    })?;
    let source = String::from_utf8(bytes)
        .map_err(|_| Failure::invalid(format!("plan {} is not UTF-8", file.display())))?;
    Ok((source, file.display().to_string()))
}

/// A plan error as a failure whose message is the compiler-style rendering.
fn plan_failure(error: &PlanError, file: &str, source: &str) -> Failure {
    let rendered = error.render(file, source);
    let message = rendered
        .strip_prefix("error: ")
        .unwrap_or(&rendered)
        .trim_end();
    Failure::invalid(message)
}

fn warn(text: &str) {
    use std::io::Write as _;
    let _ = write!(std::io::stderr(), "{text}");
}

/// Runs `plan check`.
pub fn check(args: &CheckArgs) -> Result<String, Failure> {
    let (source, file) = read_plan(&args.file)?;
    let checked = compile(&source).map_err(|e| plan_failure(&e, &file, &source))?;
    if !checked.warnings.is_empty() {
        warn(&render_all(&checked.warnings, &file, &source));
    }
    let steps = &checked.program.steps;
    let count = |f: fn(&StepKind) -> bool| steps.iter().filter(|s| f(&s.kind)).count();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let flow = checked
        .program
        .flow
        .as_deref()
        .map(|f| format!("flow {f}: "))
        .unwrap_or_default();
    Ok(format!(
        "{file}: ok ({flow}{}, {}, {}, {}, {})\n",
        plural(count(|k| matches!(k, StepKind::Bind { .. })), "binding"),
        plural(count(|k| matches!(k, StepKind::Ctx(_))), "ctx"),
        plural(count(|k| matches!(k, StepKind::Append { .. })), "append"),
        plural(count(|k| matches!(k, StepKind::Emit { .. })), "emit"),
        plural(checked.warnings.len(), "warning"),
    ))
}

/// Runs `plan run`.
pub fn run(args: &RunArgs) -> Result<String, Failure> {
    let (source, file) = read_plan(&args.file)?;
    let checked = compile(&source).map_err(|e| plan_failure(&e, &file, &source))?;
    if !checked.warnings.is_empty() {
        warn(&render_all(&checked.warnings, &file, &source));
    }
    let repo = args.location.repo()?;
    let store_dir = args.location.store_dir(&repo);
    let dirty = repo.is_dirty();
    let sources = CliSources::new(
        repo,
        &args.location,
        store_dir.clone(),
        RunLimits {
            timeout: Duration::from_secs(args.run_timeout),
            max_output: args.run_max_output,
        },
    );
    let mut outcome = evaluate(
        &checked.program,
        &sources,
        &EvalOptions {
            allow_run: args.allow_run,
        },
    )
    .map_err(|e| plan_failure(&e, &file, &source))?;
    for event in &outcome.trace {
        if let Event::Bind {
            name,
            outcome: BindOutcome::Failed { error },
            ..
        } = event
        {
            warn(&format!(
                "warning: `{name}` is unbound and contributes nothing: {error}\n"
            ));
        }
    }
    // Committed reads leave uncommitted changes out; say so in every pack, as `pack` does.
    let reads_commits =
        checked.program.steps.iter().any(
            |s| matches!(&s.kind, StepKind::Bind { source: Source::Read(r), .. } if !r.worktree),
        );
    if dirty && reads_commits {
        for version in &mut outcome.versions {
            version.built.pack.warnings.push(Warning::DirtyWorktree);
        }
    }
    let options = RenderOptions {
        format: args.format,
        view: args.view,
        pretty: args.pretty,
    };
    let ids = if args.no_ledger {
        vec![None; outcome.versions.len()]
    } else {
        record_versions(&store_dir, &outcome, &options)
    };
    Ok(output(
        &outcome,
        &ids,
        checked.program.flow.as_deref(),
        args,
        &options,
    ))
}

/// Records every version in order, each linked to the record of the version it extends.
fn record_versions(
    store_dir: &Path,
    outcome: &Outcome,
    options: &RenderOptions,
) -> Vec<Option<String>> {
    let mut ids: Vec<Option<String>> = Vec::with_capacity(outcome.versions.len());
    for version in &outcome.versions {
        let parent = version.parent.and_then(|p| ids[p].clone());
        let context = RecordContext {
            surface: "plan".into(),
            rendered: ledger::rendered(options),
            parent,
            pretty: options.pretty,
            output: None,
        };
        let record = ledger::record(store_dir, &version.built.pack, &context);
        ids.push(record.map(|r| r.id));
    }
    ids
}

fn output(
    outcome: &Outcome,
    ids: &[Option<String>],
    flow: Option<&str>,
    args: &RunArgs,
    options: &RenderOptions,
) -> String {
    if args.format == Format::Json {
        let packs: Vec<serde_json::Value> = outcome
            .emitted
            .iter()
            .map(|&i| {
                let v = &outcome.versions[i];
                let mut entry = json!({"ctx": v.ctx.name(), "version": v.number});
                if let (Some(id), serde_json::Value::Object(map)) = (&ids[i], &mut entry) {
                    map.insert("id".into(), json!(id));
                }
                if let serde_json::Value::Object(map) = &mut entry {
                    map.insert("pack".into(), pack_json(&v.built.pack, options.view));
                }
                entry
            })
            .collect();
        let mut value = json!({"flow": flow, "packs": packs});
        if args.trace
            && let serde_json::Value::Object(map) = &mut value
        {
            let trace: Vec<_> = outcome.trace.iter().map(Event::to_json).collect();
            map.insert("trace".into(), serde_json::Value::Array(trace));
        }
        let mut out = if args.pretty {
            serde_json::to_string_pretty(&value)
        } else {
            serde_json::to_string(&value)
        }
        .expect("a JSON value always serializes");
        out.push('\n');
        return out;
    }
    let markdown = args.format == Format::Markdown;
    let mut out = String::new();
    for (n, &i) in outcome.emitted.iter().enumerate() {
        let v = &outcome.versions[i];
        if n > 0 {
            out.push('\n');
        }
        let id = ids[i]
            .as_ref()
            .map(|id| format!(", pack {}", &id[..12]))
            .unwrap_or_default();
        if markdown {
            let _ = writeln!(
                out,
                "<!-- ctxpack plan: emit {} v{}{id} -->",
                v.ctx.name(),
                v.number
            );
        } else {
            let _ = writeln!(out, "=== emit {} v{}{id} ===", v.ctx.name(), v.number);
        }
        out.push_str(&render(&v.built.pack, options));
    }
    if args.trace {
        if markdown {
            out.push_str("\n## Trace\n\n");
        } else {
            out.push_str("\n=== trace ===\n");
        }
        for (n, event) in outcome.trace.iter().enumerate() {
            if markdown {
                let _ = writeln!(out, "{}. `{event}`", n + 1);
            } else {
                let _ = writeln!(out, "{:>3}. {event}", n + 1);
            }
        }
    }
    out
}

/// The limits of a `run` command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimits {
    /// How long it may run before it is killed.
    pub timeout: Duration,
    /// How many bytes of output are kept.
    pub max_output: usize,
}

impl RunLimits {
    /// 60 seconds.
    pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
    /// 1 MiB.
    pub const DEFAULT_MAX_OUTPUT: usize = 1 << 20;
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            timeout: Duration::from_secs(Self::DEFAULT_TIMEOUT_SECS),
            max_output: Self::DEFAULT_MAX_OUTPUT,
        }
    }
}

/// The plan's sources over a repository, its store and child processes.
pub struct CliSources<'a> {
    repo: Repo,
    root: PathBuf,
    location: &'a RepoLocation,
    store_dir: PathBuf,
    limits: RunLimits,
    /// Tree listings by commit, so several reads of one commit walk its tree once.
    trees: RefCell<HashMap<String, Vec<TreeEntry>>>,
}

impl<'a> CliSources<'a> {
    /// Sources over `repo`, with the store at `store_dir`.
    pub fn new(
        repo: Repo,
        location: &'a RepoLocation,
        store_dir: PathBuf,
        limits: RunLimits,
    ) -> CliSources<'a> {
        CliSources {
            root: repo.root(),
            repo,
            location,
            store_dir,
            limits,
            trees: RefCell::new(HashMap::new()),
        }
    }

    fn read_commit(&self, path: &str, at: &str) -> Result<(String, String), SourceError> {
        let sha = self
            .repo
            .resolve(at)
            .map_err(|e| SourceError::Refused(e.to_string()))?;
        let short = &sha[..7];
        let mut trees = self.trees.borrow_mut();
        if !trees.contains_key(&sha) {
            let entries = self
                .repo
                .tree_entries(&sha)
                .map_err(|e| SourceError::Failed(e.to_string()))?;
            trees.insert(sha.clone(), entries);
        }
        let entries = &trees[&sha];
        let Ok(i) = entries.binary_search_by(|e| e.path.as_str().cmp(path)) else {
            let dir = format!("{path}/");
            return Err(SourceError::Failed(
                if entries.iter().any(|e| e.path.starts_with(&dir)) {
                    format!("`{path}` is a directory at {short}, not a file")
                } else {
                    format!("no file `{path}` at {short}")
                },
            ));
        };
        let entry = &entries[i];
        match entry.kind {
            EntryKind::File => {}
            EntryKind::Symlink => {
                return Err(SourceError::Failed(format!(
                    "`{path}` is a symbolic link at {short}; links are not followed"
                )));
            }
            EntryKind::Submodule => {
                return Err(SourceError::Failed(format!(
                    "`{path}` is a submodule at {short}, not a file"
                )));
            }
        }
        let bytes = self
            .repo
            .read_blob(&entry.id)
            .map_err(|e| SourceError::Failed(e.to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| SourceError::Failed(format!("`{path}` at {short} is not UTF-8 text")))?;
        Ok((text, sha))
    }

    fn read_worktree(&self, path: &str) -> Result<String, SourceError> {
        if path == ".git" || path.starts_with(".git/") {
            return Err(SourceError::Refused(format!(
                "`{path}` is inside the git directory"
            )));
        }
        let root = std::fs::canonicalize(&self.root)
            .map_err(|e| SourceError::Failed(format!("{}: {e}", self.root.display())))?;
        let full = match std::fs::canonicalize(root.join(path)) {
            Ok(full) => full,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SourceError::Failed(format!(
                    "no file `{path}` in the worktree"
                )));
            }
            Err(e) => return Err(SourceError::Failed(format!("`{path}`: {e}"))),
        };
        // A symbolic link may point anywhere; only what resolves inside the root is read.
        if !full.starts_with(&root) {
            return Err(SourceError::Refused(format!(
                "`{path}` resolves outside the repository"
            )));
        }
        if !full.is_file() {
            return Err(SourceError::Failed(format!(
                "`{path}` is not a file in the worktree"
            )));
        }
        let bytes =
            std::fs::read(&full).map_err(|e| SourceError::Failed(format!("`{path}`: {e}")))?;
        String::from_utf8(bytes)
            .map_err(|_| SourceError::Failed(format!("`{path}` is not UTF-8 text")))
    }
}

/// A failure of a shared command function as a source error: bad input refuses the plan,
/// anything else (a missing store, an unindexed snapshot) leaves the name unbound.
fn source_error(failure: Failure) -> SourceError {
    let mut message = failure.message;
    if let Some(hint) = failure.hint {
        let _ = write!(message, " ({hint})");
    }
    if failure.kind == FailureKind::InvalidInput {
        SourceError::Refused(message)
    } else {
        SourceError::Failed(message)
    }
}

/// Lines `a..=b` (1-based) of `text`, with the last line actually taken.
fn slice_lines(
    text: &str,
    lines: Option<(u32, u32)>,
    path: &str,
) -> Result<(String, u32, u32), SourceError> {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let total = u32::try_from(all.len()).unwrap_or(u32::MAX);
    let Some((a, b)) = lines else {
        return Ok((text.to_owned(), 1, total.max(1)));
    };
    if a > total {
        return Err(SourceError::Failed(format!(
            "`{path}` has {total} lines; the range starts at line {a}"
        )));
    }
    let end = b.min(total);
    Ok((all[(a - 1) as usize..end as usize].concat(), a, end))
}

impl Sources for CliSources<'_> {
    fn read(&self, request: &ReadRequest) -> Result<Value, SourceError> {
        let path = normalize_path(&request.path).map_err(|why| {
            SourceError::Refused(format!(
                "path `{}` is outside the repository: {why}",
                request.path
            ))
        })?;
        let (text, title_of): (String, Box<dyn Fn(u32, u32) -> String>) = if request.worktree {
            let text = self.read_worktree(&path)?;
            let p = path.clone();
            (
                text,
                Box::new(move |a, b| format!("{p}#L{a}-L{b} (worktree)")),
            )
        } else {
            let (text, sha) = self.read_commit(&path, request.at.as_deref().unwrap_or("HEAD"))?;
            let p = path.clone();
            (text, Box::new(move |a, b| Citation::code(&p, a, b, &sha).0))
        };
        let (text, start, end) = slice_lines(&text, request.lines, &path)?;
        Ok(Value::Text(Text {
            text,
            title: Some(title_of(start, end)),
            location: Some(Location {
                path,
                start_line: start,
                end_line: end,
                symbol: None,
            }),
            artifact: None,
        }))
    }

    fn query(&self, request: &QueryRequest) -> Result<Value, SourceError> {
        let at = request.at.as_deref().unwrap_or("HEAD");
        let (_, hits) = query_hits(self.location, &request.goal, at, request.top, Meter::Chars)
            .map_err(source_error)?;
        Ok(Value::Hits(
            hits.into_iter()
                .map(|h| SourceHit {
                    citation: h.candidate.citation,
                    family: h.candidate.family,
                    text: h.candidate.text,
                    score: Some(f64::from(h.score)),
                    location: h.candidate.location,
                    title: h.candidate.title,
                    artifact: h.artifact,
                    redactions: h.redactions,
                })
                .collect(),
        ))
    }

    fn docs(&self, request: &DocsRequest) -> Result<Value, SourceError> {
        let dir = if Path::new(&request.store).is_absolute() {
            PathBuf::from(&request.store)
        } else {
            self.root.join(&request.store)
        };
        // Like `read`, a document store must be inside the repository (symlinks resolved).
        let root = std::fs::canonicalize(&self.root)
            .map_err(|e| SourceError::Failed(format!("{}: {e}", self.root.display())))?;
        match std::fs::canonicalize(&dir) {
            Ok(full) if full.starts_with(&root) => {}
            Ok(_) => {
                return Err(SourceError::Refused(format!(
                    "the document store `{}` is outside the repository",
                    request.store
                )));
            }
            Err(e) => {
                return Err(SourceError::Failed(format!(
                    "no document store `{}`: {e}",
                    request.store
                )));
            }
        }
        let store = open_store(&dir).map_err(source_error)?;
        let filter = request
            .filter
            .as_ref()
            .map(ctxpack_docs::filter::Filter::parse)
            .transpose()
            .map_err(|e| SourceError::Refused(format!("invalid filter: {e}")))?;
        let field = ctxpack_docs::document::field_path(&request.field)
            .map_err(|e| SourceError::Refused(format!("invalid field: {e}")))?;
        let found = vsearch(
            &store,
            &VsearchRequest {
                collection: &request.collection,
                field: &request.field,
                query: &request.query,
                k: request.top,
                filter: filter.as_ref(),
            },
        )
        .map_err(source_error)?;
        let collection = &request.collection;
        let hits = found
            .hits
            .into_iter()
            .filter_map(|h| {
                let document: serde_json::Value = serde_json::from_str(&h.document).ok()?;
                let text = ctxpack_docs::document::string_at(&document, &field)?.to_owned();
                let id = ctxpack_docs::document::id_value(&h.id_key);
                let citation = ctxpack_docs::context::citation(collection, &id);
                let key = citation
                    .0
                    .strip_prefix(&format!("doc:{collection}/"))
                    .unwrap_or(&h.id_key)
                    .to_owned();
                Some(SourceHit {
                    family: Family::collection(collection, &key),
                    citation,
                    text,
                    score: Some(h.score),
                    location: None,
                    title: None,
                    artifact: None,
                    redactions: Default::default(),
                })
            })
            .collect();
        Ok(Value::Hits(hits))
    }

    fn artifact(&self, id: &str) -> Result<Value, SourceError> {
        let store = match Store::open(&self.store_dir) {
            Ok(store) => store,
            Err(StoreError::NotFound { dir }) => {
                return Err(SourceError::Failed(format!(
                    "no artifact `{id}`: no store at {}",
                    dir.display()
                )));
            }
            Err(e) => return Err(SourceError::Failed(e.to_string())),
        };
        let row = store
            .artifact(id)
            .map_err(|e| SourceError::Failed(e.to_string()))?
            .ok_or_else(|| SourceError::Failed(format!("no artifact `{id}` in the store")))?;
        let text = store
            .artifact_text(&row)
            .map_err(|e| SourceError::Failed(e.to_string()))?;
        let title = match &row.title {
            Some(title) => format!("{title} ({}:{id})", row.scope),
            None => format!("{}:{id}", row.scope),
        };
        Ok(Value::Text(Text {
            text,
            title: Some(title),
            location: None,
            artifact: Some(id.to_owned()),
        }))
    }

    fn run(&self, request: &RunRequest) -> Result<Value, SourceError> {
        run_command(request, &self.root, self.limits)
    }
}

/// Starts `request.argv` (no shell) in `cwd`, with stdin closed, and collects its output
/// under `limits`. A command still running at the time limit is killed and reported.
pub fn run_command(
    request: &RunRequest,
    cwd: &Path,
    limits: RunLimits,
) -> Result<Value, SourceError> {
    let Some((program, args)) = request.argv.split_first() else {
        return Err(SourceError::Refused("the command is empty".into()));
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a time-out kills what it started too (cargo's test binaries).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| SourceError::Failed(format!("cannot start `{}`: {e}", request.command)))?;
    let (tx, rx) = mpsc::channel();
    for (n, stream) in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(stream) = stream else { continue };
        let tx = tx.clone();
        let max = limits.max_output;
        std::thread::spawn(move || {
            let _ = tx.send((n, drain(stream, max)));
        });
    }
    drop(tx);
    let deadline = Instant::now() + limits.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill_tree(&mut child);
                let _ = child.wait();
                return Err(SourceError::Failed(format!(
                    "`{}` was killed at its time limit of {} s",
                    request.command,
                    limits.timeout.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                kill_tree(&mut child);
                return Err(SourceError::Failed(format!(
                    "waiting for `{}`: {e}",
                    request.command
                )));
            }
        }
    };
    // Something the command started may still hold its pipes open: wait a little, not forever.
    let mut streams: [(Vec<u8>, u64); 2] = Default::default();
    for _ in 0..2 {
        match rx.recv_timeout(Duration::from_secs(2)) {
            Ok((n, out)) => streams[n] = out,
            Err(_) => break,
        }
    }
    let [(stdout, out_total), (stderr, err_total)] = streams;
    let mut bytes = stdout;
    bytes.extend_from_slice(&stderr);
    let total = out_total + err_total;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > limits.max_output {
        let mut cut = limits.max_output;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    if total > limits.max_output as u64 {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = writeln!(
            text,
            "[output truncated: {total} bytes, the first {} kept]",
            limits.max_output
        );
    }
    let code = status
        .code()
        .map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit {c}"));
    if !status.success() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = writeln!(text, "[{code}]");
    }
    Ok(Value::Text(Text {
        text,
        title: Some(format!("run: {} ({code})", request.command)),
        location: None,
        artifact: None,
    }))
}

/// Reads a stream to its end, keeping the first `max` bytes; returns them and the total.
fn drain(mut stream: impl Read, max: usize) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut total = 0u64;
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (kept, total)
}

/// Kills the child and, on Unix, its whole process group.
fn kill_tree(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_slices() {
        let text = "a\nb\nc\n";
        type Case = (
            Option<(u32, u32)>,
            Result<(&'static str, u32, u32), &'static str>,
        );
        let cases: &[Case] = &[
            (None, Ok(("a\nb\nc\n", 1, 3))),
            (Some((2, 3)), Ok(("b\nc\n", 2, 3))),
            (Some((2, 99)), Ok(("b\nc\n", 2, 3))),
            (Some((3, 3)), Ok(("c\n", 3, 3))),
            (
                Some((4, 9)),
                Err("`f` has 3 lines; the range starts at line 4"),
            ),
        ];
        for (lines, expected) in cases {
            let got = slice_lines(text, *lines, "f").map_err(|e| e.to_string());
            let expected = expected
                .map(|(t, a, b)| (t.to_owned(), a, b))
                .map_err(str::to_owned);
            assert_eq!(got, expected, "{lines:?}");
        }
    }

    #[test]
    fn output_is_limited_and_failures_are_noted() {
        let request = RunRequest {
            command: "sh -c …".into(),
            argv: vec![
                "sh".into(),
                "-c".into(),
                "printf 'abcdefghij'; echo oops >&2; exit 3".into(),
            ],
        };
        let limits = RunLimits {
            timeout: Duration::from_secs(10),
            max_output: 4,
        };
        let value = run_command(&request, Path::new("."), limits).expect("runs");
        let Value::Text(text) = value else {
            panic!("a text")
        };
        assert_eq!(
            text.text,
            "abcd\n[output truncated: 15 bytes, the first 4 kept]\n[exit 3]\n"
        );
        assert_eq!(text.title.as_deref(), Some("run: sh -c … (exit 3)"));
    }
}
