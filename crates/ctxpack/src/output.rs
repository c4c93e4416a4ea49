//! The terminal: stdout for data, stderr for progress and notes.

use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use ctxpack_api::{Control, Error, ErrorKind, Hint, Progress, Recorded};

/// Writes to stdout; a closed pipe (`ctxpack … | head`) is a normal end, not an error.
pub fn emit(output: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(output.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            note(&format!("error: writing output: {e}\n"));
            ExitCode::from(crate::exit::exit_code(ErrorKind::Io))
        }
    }
}

/// Writes a note to stderr (nothing else prints there).
pub fn note(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// The most `select --input` reads: 256 MiB of candidates.
pub const MAX_CANDIDATES_BYTES: u64 = 256 * 1024 * 1024;

/// The most a `pack --input` payload or a document from standard input may be: 16 MiB.
pub const MAX_PAYLOAD_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a file, or standard input for `-`: at most `limit` bytes, so that no input (a huge
/// file, `/dev/zero`, an endless pipe) makes it read or hold more. `limit_field` names the
/// request field that sets the limit, when the caller can raise it.
pub fn read_input(input: &str, limit: u64, limit_field: Option<&str>) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    let read = if input == "-" {
        io::stdin().lock().take(limit + 1).read_to_end(&mut buf)
    } else {
        let path = Path::new(input);
        let file = std::fs::File::open(path).map_err(|e| {
            let kind = if e.kind() == io::ErrorKind::NotFound {
                ErrorKind::NotFound
            } else {
                ErrorKind::InvalidInput
            };
            Error::new(kind, format!("cannot read {}: {e}", path.display()))
        })?;
        file.take(limit + 1).read_to_end(&mut buf)
    };
    read.map_err(|e| Error::invalid(format!("cannot read {input}: {e}")))?;
    if buf.len() as u64 > limit {
        let message = format!("{input} is over the limit of {limit} bytes");
        return Err(match limit_field {
            Some(field) => Error::invalid_field(field, message).with_hint(Hint::RaiseLimit),
            None => Error::invalid(message),
        });
    }
    Ok(buf)
}

/// Reports how recording a pack went: its id on a terminal, a warning when it failed.
pub fn recorded(recorded: &Recorded) {
    match recorded {
        Recorded::Stored(id) if io::stderr().is_terminal() => {
            note(&format!(
                "recorded pack {} (ctxpack show {})\n",
                &id[..12],
                &id[..12]
            ));
        }
        Recorded::Failed(e) => note(&format!("warning: the pack was not recorded: {e}\n")),
        _ => {}
    }
}

/// A control whose progress draws a bar on stderr when it is a terminal (and nothing
/// otherwise); `unit` names what is counted.
pub fn progress(unit: &'static str) -> (Control, Bar) {
    if !io::stderr().is_terminal() {
        return (Control::new(), Bar(None));
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg}} {{pos}}/{{len}} {unit} {{wide_bar}} {{eta}}"
        ))
        .expect("the template is valid"),
    );
    let shared = bar.clone();
    let control = Control::new().with_progress(move |p: &Progress| {
        let bar = &shared;
        bar.set_message(p.phase);
        bar.set_length(p.total.unwrap_or(p.done));
        bar.set_position(p.done);
    });
    (control, Bar(Some(bar)))
}

/// A progress bar, cleared when dropped.
pub struct Bar(Option<indicatif::ProgressBar>);

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
