//! `ctxpack select`: pack candidates given as JSON, without an index.

use std::path::PathBuf;

use clap::Args;
use ctxpack_api::{Access, Budget, Error, Meter, SelectRequest, Selector, Workspace, render};

use crate::args::{OutputArgs, named, parse};
use crate::output::{MAX_CANDIDATES_BYTES, read_input, recorded};

/// Options of `ctxpack select`.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Candidates file, or `-` for standard input.
    #[arg(long, short = 'i', default_value = "-")]
    input: String,
    /// A label for the pack (its goal).
    #[arg(long, default_value_t = SelectRequest::default().goal)]
    goal: String,
    /// The hard budget, a positive integer in units of --meter.
    #[arg(long, default_value_t = SelectRequest::default().budget, value_parser = parse::<Budget>, allow_negative_numbers = true)]
    budget: Budget,
    /// Budget unit: o200k, cl100k, words, chars or approx.
    #[arg(long, default_value_t = SelectRequest::default().meter, value_parser = named::<Meter>())]
    meter: Meter,
    /// Selection policy: coverage, diverse, prefix or skip.
    #[arg(long, default_value_t = SelectRequest::default().selector, value_parser = named::<Selector>())]
    selector: Selector,
    /// Record the pack in the ledger of this store directory (by default `select` records
    /// nothing: it has no repository).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Format, view and pretty-printing.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `ctxpack select`.
pub fn run(args: &SelectArgs) -> Result<String, Error> {
    let input = read_input(&args.input, MAX_CANDIDATES_BYTES, None)?;
    let request = SelectRequest {
        goal: args.goal.clone(),
        budget: args.budget,
        meter: args.meter,
        selector: args.selector,
    };
    let rendering = args.output.render_options();
    let pack = match &args.store {
        Some(dir) => {
            let (pack, record) = Workspace::for_store(dir, Access::ReadWrite)?
                .select(&request, &input, &rendering)?;
            recorded(&record);
            pack
        }
        None => ctxpack_api::select(&request, &input)?,
    };
    Ok(render(&pack, &rendering))
}
