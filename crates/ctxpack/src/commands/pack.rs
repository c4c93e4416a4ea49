//! `ctxpack pack` (also `ctxpack context pack`) and `ctxpack query`: packs and raw hits from
//! the exact committed snapshot.

use clap::Args;
use ctxpack_api::{
    Budget, Error, Meter, PackOptions, PackPayload, PackScope, QueryRequest, Selector,
    SnapshotPackRequest, render,
};

use crate::args::{Location, OutputArgs, parse};
use crate::output::{MAX_PAYLOAD_BYTES, note, read_input, recorded};

/// Options of `ctxpack pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// The goal that drives selection.
    pub goal: Option<String>,
    /// A JSON payload `{"goal", "budget"?, "at"?}` from a file or `-` (stdin).
    #[arg(long)]
    pub input: Option<String>,
    #[arg(long, value_parser = parse::<Budget>, allow_negative_numbers = true, help = format!(
        "The budget, a positive integer in units of --meter [default: {}]",
        SnapshotPackRequest::default().budget
    ))]
    pub budget: Option<Budget>,
    /// durable (the snapshot alone); session, harness, evidence or all also merge the
    /// artifacts of that scope.
    #[arg(long, default_value_t = SnapshotPackRequest::default().scope, value_parser = parse::<PackScope>)]
    pub scope: PackScope,
    #[arg(long, help = format!(
        "HEAD, a full commit SHA or a unique hex prefix [default: {}]",
        SnapshotPackRequest::default().at
    ))]
    pub at: Option<String>,
    /// Budget unit: words, o200k, cl100k, chars or approx.
    #[arg(long, default_value_t = SnapshotPackRequest::default().meter, value_parser = parse::<Meter>)]
    pub meter: Meter,
    /// Selection policy: coverage, diverse (citation-diverse-v2), prefix or skip.
    #[arg(long, default_value_t = SnapshotPackRequest::default().selector, value_parser = parse::<Selector>)]
    pub selector: Selector,
    /// How many retrieval candidates are offered to selection.
    #[arg(long, default_value_t = SnapshotPackRequest::default().top_k)]
    pub top_k: usize,
    /// Index HEAD first when it is not indexed yet.
    #[arg(long)]
    pub index: bool,
    /// Do not record this pack in the ledger.
    #[arg(long)]
    pub no_ledger: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Format, view and pretty-printing.
    #[command(flatten)]
    pub output: OutputArgs,
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
    #[arg(long, default_value_t = QueryRequest::default().meter, value_parser = parse::<Meter>)]
    pub meter: Meter,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// The request `pack` asks for, after `--input` and the flags were reconciled.
fn request(args: &PackArgs) -> Result<SnapshotPackRequest, Error> {
    let request = SnapshotPackRequest {
        scope: args.scope,
        meter: args.meter,
        selector: args.selector,
        top_k: args.top_k,
        ..SnapshotPackRequest::default()
    };
    let Some(input) = &args.input else {
        return Ok(SnapshotPackRequest {
            goal: args.goal.clone().unwrap_or_default(),
            budget: args.budget.unwrap_or(request.budget),
            at: args.at.clone().unwrap_or(request.at.clone()),
            ..request
        });
    };
    if args.goal.is_some() || args.budget.is_some() || args.at.is_some() {
        return Err(Error::invalid(
            "--input cannot be combined with a positional goal, --budget or --at; put goal, budget and at in the JSON payload",
        ));
    }
    let payload = PackPayload::parse(&read_input(input, MAX_PAYLOAD_BYTES, None)?)?;
    Ok(payload.apply(request))
}

/// Runs `ctxpack pack`.
pub fn run(args: &PackArgs) -> Result<String, Error> {
    let request = request(args)?;
    let rendering = args.output.render_options();
    let built = args.location.workspace()?.snapshot_pack(
        &request,
        &PackOptions {
            record: (!args.no_ledger).then_some(&rendering),
            index_if_missing: args.index,
        },
    )?;
    if let Some(indexed) = &built.indexed {
        note(&format!("{indexed}\n"));
    }
    recorded(&built.recorded);
    Ok(render(&built.pack, &rendering))
}

/// Runs `ctxpack query`: raw hits with their score breakdown.
pub fn query(args: &QueryArgs) -> Result<String, Error> {
    let hits = args.location.workspace()?.query(&QueryRequest {
        goal: args.goal.clone(),
        at: args.at.clone(),
        top_k: args.top_k,
        meter: args.meter,
    })?;
    if args.format == "json" {
        return Ok(format!("{}\n", hits.to_json()));
    }
    Ok(hits.to_string())
}
