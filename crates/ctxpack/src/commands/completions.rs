//! `ctxpack completions SHELL` and `ctxpack man`: generated from the command line's own
//! definition, so they always match it.

use clap::{Args, CommandFactory};
use clap_complete::Shell;
use ctxpack_api::Error;

use crate::cli::Cli;

/// Options of `ctxpack completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The completion script for a shell.
pub fn completions(args: &CompletionsArgs) -> Result<String, Error> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "ctxpack", &mut out);
    text(out)
}

/// The man page, in roff.
pub fn man() -> Result<String, Error> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| Error::internal(format!("cannot render the man page: {e}")))?;
    text(out)
}

fn text(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|e| Error::internal(format!("generated text: {e}")))
}
