//! `ctxpack completions SHELL` and `ctxpack man`: generated from the command line's own
//! definition, so they always match it.

use clap::Args;
use clap_complete::Shell;
use ctxpack_api::Error;

/// Options of `ctxpack completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The completion script for a shell, of the command line `cli` describes.
pub fn completions(args: &CompletionsArgs, mut cli: clap::Command) -> Result<String, Error> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "ctxpack", &mut out);
    text(out)
}

/// Options of `ctxpack man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A command (`pack`, `index`, `mcp`, …): its own page. Without one, the page of `ctxpack`
    /// itself, which lists the commands.
    pub command: Option<String>,
}

/// What every command's exit status means (the failure envelope's `exitCode`; the README's
/// table).
const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success (a closed standard output pipe also ends with 0).",
    ),
    (
        "1",
        "An internal error: a bug, or the operating system refused.",
    ),
    (
        "2",
        "Invalid input: malformed JSON or UTF-8, a bad budget, an unknown meter, selector, format, view or scope, an invalid reference, not a git repository, an input over its limit.",
    ),
    (
        "3",
        "Not found or unavailable: a missing input file, store or snapshot, an empty repository, a store locked by another writer.",
    ),
    (
        "4",
        "A damaged, unsafe or unsupported store: run `ctxpack verify --repair`.",
    ),
    ("5", "A conflict with stored data."),
];

/// The man page of `ctxpack`, or of one of its commands, in roff: name, synopsis,
/// description, options, subcommands, examples (where the command has them) and exit status;
/// `cli` describes the command line.
pub fn man(args: &ManArgs, cli: clap::Command) -> Result<String, Error> {
    let command = match &args.command {
        None => cli,
        Some(name) => {
            let Some(found) = cli.find_subcommand(name) else {
                let names: Vec<&str> = cli
                    .get_subcommands()
                    .map(clap::Command::get_name)
                    .filter(|n| *n != "help")
                    .collect();
                return Err(Error::invalid(format!(
                    "`ctxpack man`: no command `{name}`; one of: {}",
                    names.join(", ")
                )));
            };
            // The page is named as `man` finds it, ctxpack-pack(1), and its synopsis says how
            // the command is run: `ctxpack pack …`.
            found
                .clone()
                .display_name(format!("ctxpack-{name}"))
                .bin_name(format!("ctxpack {name}"))
        }
    };
    // The examples a command's --help shows after its options become their own section.
    let examples = command
        .get_after_help()
        .map(|text| text.to_string())
        .and_then(|text| text.strip_prefix("Examples:\n").map(str::to_owned));
    let mut out = Vec::new();
    clap_mangen::Man::new(command.after_help(None::<&str>))
        .render(&mut out)
        .map_err(|e| Error::internal(format!("cannot render the man page: {e}")))?;
    let mut page = text(out)?;
    if let Some(examples) = examples {
        page.push_str(".SH EXAMPLES\n");
        for line in examples.lines() {
            // `command    what it does`, or the command alone.
            let (example, what) = line.trim().split_once("  ").unwrap_or((line.trim(), ""));
            page.push_str(&format!(
                ".TP\n{}\n{}\n",
                roff_text(example),
                roff_text(what.trim())
            ));
        }
    }
    page.push_str(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in EXIT_STATUS {
        page.push_str(&format!(".TP\n{code}\n{}\n", roff_text(meaning)));
    }
    Ok(page)
}

/// Text as a roff line: a leading `.` or `'` escaped, backslashes doubled.
fn roff_text(text: &str) -> String {
    let text = text.replace('\\', "\\\\");
    if text.starts_with(['.', '\'']) {
        format!("\\&{text}")
    } else {
        text
    }
}

fn text(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|e| Error::internal(format!("generated text: {e}")))
}
