//! The terminal: stdout for data, stderr for progress and notes.

use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use ctxpack_api::{Control, Error, ErrorKind, Progress, Recorded};

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

/// Reads a file, or standard input for `-`.
pub fn read_input(input: &str) -> Result<Vec<u8>, Error> {
    if input == "-" {
        let mut buf = Vec::new();
        io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(Path::new("<stdin>"), &e))?;
        Ok(buf)
    } else {
        let path = Path::new(input);
        std::fs::read(path).map_err(|e| {
            let kind = if e.kind() == io::ErrorKind::NotFound {
                ErrorKind::NotFound
            } else {
                ErrorKind::InvalidInput
            };
            Error::new(kind, format!("cannot read {}: {e}", path.display()))
        })
    }
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
