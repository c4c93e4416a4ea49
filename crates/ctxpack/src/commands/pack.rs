//! `ctxpack pack`, `ctxpack context pack` and `ctxpack query`: packs and raw hits from the
//! exact committed snapshot. `pack` starts from ctxpack's measured-best request and `context
//! pack` from the compatibility preset: the two presets of the API's one request type, with the
//! same flags.

use std::marker::PhantomData;

use clap::Args;
use ctxpack_api::config::{Config, Flags, Setting};
use ctxpack_api::plan::PlanRunRequest;
use ctxpack_api::{
    Budget, Error, Meter, PackOptions, PackPayload, PackScope, PayloadBudget, QueryRequest,
    RenderOptions, Selector, SnapshotPackRequest, render,
};

use crate::args::{Location, OutputArgs, named, parse_budget};
use crate::client::{Remote, ServerArgs};
use crate::commands::config;
use crate::output::{MAX_PAYLOAD_BYTES, note, progress, read_input, recorded};

/// The request a pack command starts from: one of the API's presets.
pub trait Preset {
    /// Whether configuration files and `CTXPACK_*` variables apply (flags always do).
    const CONFIGURED: bool;
    /// How an `--input` payload may write its budget.
    const PAYLOAD_BUDGET: PayloadBudget;

    /// The preset request, before the caller's flags.
    fn request() -> SnapshotPackRequest;
}

/// `ctxpack pack`: ctxpack's measured-best defaults ([`SnapshotPackRequest::default`]).
#[derive(Clone, Copy, Debug)]
pub struct Measured;

impl Preset for Measured {
    const CONFIGURED: bool = true;
    // As the command line takes it: "2k".
    const PAYLOAD_BUDGET: PayloadBudget = PayloadBudget::Suffixed;

    fn request() -> SnapshotPackRequest {
        SnapshotPackRequest::default()
    }
}

/// `ctxpack context pack`: the compatibility preset ([`SnapshotPackRequest::context_pack`]).
#[derive(Clone, Copy, Debug)]
pub struct SeedContract;

impl Preset for SeedContract {
    const CONFIGURED: bool = false;
    // The seed's contract: positive safe integers.
    const PAYLOAD_BUDGET: PayloadBudget = PayloadBudget::Integer;

    fn request() -> SnapshotPackRequest {
        SnapshotPackRequest::context_pack()
    }
}

/// Options of `ctxpack pack` (and, with the compatibility preset's defaults, of `ctxpack context pack`).
#[derive(Debug, Args)]
pub struct PackArgs<P: Preset + Clone + Send + Sync + 'static> {
    /// The goal that drives selection.
    pub goal: Option<String>,
    /// A JSON payload `{"goal", "budget"?, "at"?}` from a file or `-` (stdin); `pack` also
    /// takes the budget as `--budget` does (`"2k"`).
    #[arg(long)]
    pub input: Option<String>,
    #[arg(long, value_parser = parse_budget, allow_negative_numbers = true, help = format!(
        "The budget in units of --meter: a positive integer, or with a k or m suffix (8k, 1.5k, 1m) [default: {}]",
        P::request().budget
    ))]
    pub budget: Option<Budget>,
    // No `default_value_t` here: clap keeps a default in a static that every preset would
    // share, so each default is stated in the help text and taken from the preset instead.
    #[arg(long, value_parser = named::<PackScope>(), help = format!(
        "durable (the snapshot alone); session, harness, evidence or all also merge the artifacts of that scope [default: {}]",
        P::request().scope
    ))]
    pub scope: Option<PackScope>,
    #[arg(long, help = format!(
        "HEAD, a full commit SHA or a unique hex prefix [default: {}]",
        P::request().at
    ))]
    pub at: Option<String>,
    #[arg(long, value_parser = named::<Meter>(), help = format!(
        "The budget's unit: {}, words (whitespace-separated words), chars (characters) or approx (characters / 4) [default: {}]",
        if Meter::Cl100k.is_built() {
            "o200k or cl100k (exact GPT-4o-family or GPT-4 tokens)"
        } else {
            "o200k (exact GPT-4o-family tokens)"
        },
        P::request().meter
    ))]
    pub meter: Option<Meter>,
    #[arg(long, value_parser = named::<Selector>(), help = format!(
        "How hits are chosen: coverage (relevance per token, favouring files not yet shown), diverse (one hit per file first, then fill), prefix (best first, stop at the first that does not fit) or skip (best first, skip what does not fit) [default: {}]",
        P::request().selector
    ))]
    pub selector: Option<Selector>,
    #[arg(long, value_name = "N", help = format!(
        "Offer exactly N retrieval candidates to selection [default: {}]",
        top_k_default(&P::request())
    ))]
    pub top_k: Option<usize>,
    #[arg(long, overrides_with = "no_index", help = if P::request().index {
        "Index the commit first when it is not indexed yet (the default)"
    } else {
        "Index the commit first when it is not indexed yet"
    })]
    pub index: bool,
    #[arg(long, overrides_with = "index", help = if P::request().index {
        "Do not index: an unindexed commit exits 3, naming the nearest indexed ancestor"
    } else {
        "Do not index: an unindexed commit exits 3, naming the nearest indexed ancestor (the default)"
    })]
    pub no_index: bool,
    /// Only files whose path matches one of these globs (git's wildmatch: `src/**`,
    /// `*.rs`); repeat the flag for several.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out files whose path matches one of these globs; repeat for several.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Pack the working tree as it is now: modified and untracked files (as git ignores
    /// them, and `.ctxpackignore`) over HEAD's snapshot, cited `path#L…@worktree`.
    #[arg(long, conflicts_with = "at")]
    pub worktree: bool,
    /// Pack in a session (any name, up to 128 characters): hits whose lines this session was
    /// shown before come back as one-line references, so the budget goes to new evidence.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// With --session: show every hit whole, even what the session was shown before.
    #[arg(long, requires = "session")]
    pub fresh: bool,
    /// With --session: show again what the session was shown under this citation or pack id
    /// (at least 4 hex digits), instead of searching; repeat for several.
    #[arg(long, value_name = "CITATION|PACK", requires = "session")]
    pub recall: Vec<String>,
    /// Do not record this pack in the ledger.
    #[arg(long)]
    pub no_ledger: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Format, view and pretty-printing.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Ask a ctxpack server instead.
    #[command(flatten)]
    pub remote: ServerArgs,
    #[arg(skip)]
    preset: PhantomData<P>,
}

/// How `--help` states a preset's pool.
fn top_k_default(request: &SnapshotPackRequest) -> String {
    match request.top_k.fixed() {
        Some(n) => n.to_string(),
        None => format!(
            "{}: one per 20 budget units, at least 30, widened while the pool runs out before the budget does",
            request.top_k
        ),
    }
}

/// Options of `ctxpack query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The goal to retrieve for.
    pub goal: String,
    /// HEAD, a full commit SHA or a unique hex prefix.
    #[arg(long, default_value_t = QueryRequest::default().at)]
    pub at: String,
    /// How many hits to show.
    #[arg(long, default_value_t = QueryRequest::default().top_k)]
    pub top_k: usize,
    /// The meter costs are shown in.
    #[arg(long, default_value_t = QueryRequest::default().meter, value_parser = named::<Meter>())]
    pub meter: Meter,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Ask a ctxpack server instead.
    #[command(flatten)]
    pub remote: ServerArgs,
}

/// The request a pack command asks for, and the configuration it was built with: the
/// preset, then the configuration (for `pack`; `context pack` keeps its contract and takes
/// flags alone), then the flags given, then `--input`.
fn request<P: Preset + Clone + Send + Sync + 'static>(
    args: &PackArgs<P>,
) -> Result<(SnapshotPackRequest, Config), Error> {
    let flags = args.output.flags(Flags {
        budget: args.budget,
        meter: args.meter,
        selector: args.selector,
        top_k: args.top_k,
        include: (!args.include.is_empty()).then(|| args.include.clone()),
        exclude: (!args.exclude.is_empty()).then(|| args.exclude.clone()),
        ..Flags::default()
    });
    let mut config = if P::CONFIGURED {
        config::load(&args.location, flags)?
    } else {
        Config::from_flags(&config::with_store(&args.location, flags))
    };
    let preset = P::request();
    let index = if args.no_index {
        false
    } else {
        args.index || preset.index
    };
    let request = SnapshotPackRequest {
        scope: args.scope.unwrap_or(preset.scope),
        goal: args.goal.clone().unwrap_or_default(),
        at: args.at.clone().unwrap_or(preset.at.clone()),
        worktree: args.worktree,
        session: args.session.clone(),
        fresh: args.fresh,
        recall: args.recall.clone(),
        index,
        ..config.apply_pack(preset)
    };
    let Some(input) = &args.input else {
        return Ok((request, config));
    };
    if args.goal.is_some() || args.budget.is_some() || args.at.is_some() {
        return Err(Error::invalid(
            "--input cannot be combined with a positional goal, --budget or --at; put goal, budget and at in the JSON payload",
        ));
    }
    let payload = PackPayload::parse(
        &read_input(input, MAX_PAYLOAD_BYTES, None)?,
        P::PAYLOAD_BUDGET,
    )?;
    let request = payload.apply(request);
    if config
        .budget
        .as_ref()
        .is_none_or(|s| s.value != request.budget)
    {
        config.budget = Some(Setting::flag(request.budget));
    }
    Ok((request, config))
}

/// Runs `ctxpack pack` or `ctxpack context pack`. Indexing a commit on the way shows the
/// index progress line on a terminal and its summary on stderr. The ledger records the
/// effective configuration with the pack.
pub fn run<P: Preset + Clone + Send + Sync + 'static>(args: &PackArgs<P>) -> Result<String, Error> {
    // A local pack masks its goal and what it shows: the rules compile while the configuration,
    // the repository and the store are read. A pack from a server masks nothing here.
    if args.remote.server.is_none() {
        ctxpack_api::prepare_masking();
    }
    let (request, config) = request(args)?;
    let rendering = config.apply_render(RenderOptions::default());
    if let Some(remote) = Remote::from_args(&args.remote)? {
        if args.worktree || args.no_ledger {
            return Err(Error::invalid(
                "--worktree and --no-ledger are local: a server packs committed snapshots and records every pack",
            ));
        }
        return remote.post(
            "pack",
            &[
                ("format", rendering.format.name().to_owned()),
                ("view", rendering.view.name().to_owned()),
                ("pretty", rendering.pretty.to_string()),
            ],
            &request,
        );
    }
    let effective = config
        .effective(&request, &rendering, &PlanRunRequest::default())
        .for_packs();
    let workspace = config::workspace(&args.location, &config, effective)?;
    let (control, bar) = progress("files");
    let built = workspace.snapshot_pack_with(
        &request,
        &PackOptions {
            record: (!args.no_ledger).then_some(&rendering),
            index_if_missing: false,
            rendering: Some(&rendering),
        },
        &control,
    );
    drop(bar);
    let built = built?;
    if let Some(indexed) = &built.indexed {
        note(&format!("{indexed}\n"));
    }
    recorded(&built.recorded);
    Ok(render(&built.pack, &rendering))
}

/// Runs `ctxpack query`: raw hits with their score breakdown.
pub fn query(args: &QueryArgs) -> Result<String, Error> {
    let request = QueryRequest {
        goal: args.goal.clone(),
        at: args.at.clone(),
        top_k: args.top_k,
        meter: args.meter,
    };
    if let Some(remote) = Remote::from_args(&args.remote)? {
        return remote.post("query", &[("format", args.format.clone())], &request);
    }
    crate::present::query(&args.location.workspace()?, &request, args.format == "json")
}
