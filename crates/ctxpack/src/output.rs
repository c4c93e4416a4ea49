//! The terminal: stdout (or the `--output` file) for data, stderr for progress and notes.
//!
//! A command runs either in a process of its own, with the process's streams, or in process
//! ([`crate::cli::run_in_process`]), with buffers of its own: the calling thread holds them
//! for the command's length, and every function here reads and writes them instead.

use std::cell::RefCell;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use ctxpack_api::{Control, Error, ErrorKind, Hint, Progress, Recorded};

/// Set by `--quiet`: no progress and no notes on stderr (errors are still printed).
static QUIET: AtomicBool = AtomicBool::new(false);

/// Set by `--output`: the file the data goes to instead of stdout.
static OUTPUT: OnceLock<PathBuf> = OnceLock::new();

/// The streams and settings of a command run in process; never a terminal.
#[derive(Default)]
struct Streams {
    /// What the command reads as standard input (taken whole by the first read).
    stdin: Vec<u8>,
    /// What it wrote to standard output.
    stdout: Vec<u8>,
    /// What it wrote to standard error.
    stderr: Vec<u8>,
    quiet: bool,
    output: Option<PathBuf>,
}

thread_local! {
    /// The streams of the command this thread runs in process, if it runs one.
    static IN_PROCESS: RefCell<Option<Streams>> = const { RefCell::new(None) };
}

/// Runs `command` on this thread in process, with `stdin` as its standard input; returns its
/// value, and what it wrote to standard output and standard error.
pub(crate) fn with_streams<T>(
    stdin: Vec<u8>,
    command: impl FnOnce() -> T,
) -> (T, Vec<u8>, Vec<u8>) {
    /// Takes the streams back even when the command panics, so the thread is left clean.
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_PROCESS.with(|s| s.borrow_mut().take());
        }
    }
    let streams = Streams {
        stdin,
        ..Streams::default()
    };
    IN_PROCESS.with(|s| *s.borrow_mut() = Some(streams));
    let restore = Restore;
    let value = command();
    let streams = IN_PROCESS
        .with(|s| s.borrow_mut().take())
        .unwrap_or_default();
    drop(restore);
    (value, streams.stdout, streams.stderr)
}

/// Calls `f` on the in-process streams when this thread runs a command in process.
fn in_process<T>(f: impl FnOnce(&mut Streams) -> T) -> Option<T> {
    IN_PROCESS.with(|s| s.borrow_mut().as_mut().map(f))
}

/// Whether this thread runs a command in process.
pub(crate) fn runs_in_process() -> bool {
    in_process(|_| ()).is_some()
}

/// Prints what the argument parser says: help and the version on stdout, usage errors on
/// stderr.
pub(crate) fn parser_message(e: &clap::Error) {
    let printed = in_process(|s| {
        let text = e.render().to_string();
        let stream = if e.use_stderr() {
            &mut s.stderr
        } else {
            &mut s.stdout
        };
        stream.extend_from_slice(text.as_bytes());
    });
    if printed.is_none() {
        let _ = e.print();
    }
}

/// Whether `--quiet` was given.
fn quiet() -> bool {
    in_process(|s| s.quiet).unwrap_or_else(|| QUIET.load(Ordering::Relaxed))
}

/// Whether progress and terminal-only notes may be drawn on stderr.
fn stderr_is_terminal() -> bool {
    in_process(|_| false).unwrap_or_else(|| io::stderr().is_terminal())
}

/// The name of the store directory, inside which `--output` never writes.
const STORE_NAME: &str = ".ctxpack";

/// Silences progress and notes (`--quiet`).
pub fn set_quiet(quiet: bool) {
    if in_process(|s| s.quiet = quiet).is_none() {
        QUIET.store(quiet, Ordering::Relaxed);
    }
}

/// Sends the data to `file` instead of stdout (`--output`), once the file is checked: not a
/// store directory (`.ctxpack`, or the `store` given) or inside one, not a symbolic link, not
/// a directory, and in a directory that exists. Nothing is written until the command
/// succeeds; then the file is replaced whole ([`emit`]).
pub fn set_output(file: &Path, store: Option<&Path>) -> Result<(), Error> {
    let refuse = |why: String| Error::invalid_field("output", why);
    let name = file
        .file_name()
        .ok_or_else(|| refuse(format!("{} does not name a file", file.display())))?;
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let dir = dir.canonicalize().map_err(|e| {
        refuse(format!("cannot write {}: {e}", file.display()))
            .with_hint(Hint::Advice("give a file in an existing directory".into()))
    })?;
    let target = dir.join(name);
    let store = store.and_then(|s| s.canonicalize().ok());
    let in_store = target.components().any(|c| c.as_os_str() == STORE_NAME)
        || store.is_some_and(|s| target.starts_with(s));
    if in_store {
        return Err(refuse(format!(
            "{} is inside the store directory, which only ctxpack writes",
            file.display()
        ))
        .with_hint(Hint::Advice("write the output somewhere else".into())));
    }
    match std::fs::symlink_metadata(&target) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(refuse(format!(
                "{} is a symbolic link, which ctxpack does not write through",
                file.display()
            ))
            .with_hint(Hint::Advice(
                "give the file the link leads to, or another name".into(),
            )));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(refuse(format!("{} is not a regular file", file.display())));
        }
        _ => {}
    }
    if in_process(|s| s.output = Some(target.clone())).is_none() {
        let _ = OUTPUT.set(target);
    }
    Ok(())
}

/// Writes the data to the `--output` file, atomically (a new file in the same directory,
/// renamed over the old one, so a reader sees the old content or the new, never a part), or
/// to stdout, where a closed pipe (`ctxpack … | head`) is a normal end, not an error.
/// Returns the exit code: 0, or why the output could not be written.
pub fn emit(output: &str) -> u8 {
    let file = in_process(|s| s.output.clone()).unwrap_or_else(|| OUTPUT.get().cloned());
    let Some(file) = file else {
        return emit_stdout(output);
    };
    match write_atomically(&file, output.as_bytes()) {
        Ok(()) => 0,
        Err(e) => {
            let error = Error::io(&file, &e).context("cannot write the output");
            error_note(&crate::exit::CliFailure::new(&error, None).lines());
            crate::exit::exit_code(error.kind())
        }
    }
}

/// Replaces `file` with `data` through a new file in the same directory.
fn write_atomically(file: &Path, data: &[u8]) -> io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let mut attempt = 0u32;
    let (temp, mut out) = loop {
        let temp = dir.join(format!(
            ".{name}.ctxpack-{}-{attempt}.tmp",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(out) => break (temp, out),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    // A file that is replaced keeps its permissions.
    let permissions = std::fs::symlink_metadata(file)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.permissions());
    let written = out
        .write_all(data)
        .and_then(|()| permissions.map_or(Ok(()), |p| out.set_permissions(p)))
        .and_then(|()| out.sync_all())
        .and_then(|()| {
            drop(out);
            // A link put in the file's place since it was checked is replaced, not followed.
            std::fs::rename(&temp, file)
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Writes to stdout whatever `--output` says (the failure envelope goes there); returns the
/// exit code, as [`emit`] does.
pub fn emit_stdout(output: &str) -> u8 {
    if in_process(|s| s.stdout.extend_from_slice(output.as_bytes())).is_some() {
        return 0;
    }
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(output.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            error_note(&format!("error: writing output: {e}\n"));
            crate::exit::exit_code(ErrorKind::Io)
        }
    }
}

/// Writes a note to stderr, unless `--quiet`.
pub fn note(text: &str) {
    if !quiet() {
        error_note(text);
    }
}

/// Writes an error to stderr, `--quiet` or not.
pub fn error_note(text: &str) {
    if in_process(|s| s.stderr.extend_from_slice(text.as_bytes())).is_none() {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
}

/// Standard input, to read as a stream.
pub fn stdin() -> Box<dyn Read> {
    match in_process(|s| std::mem::take(&mut s.stdin)) {
        Some(bytes) => Box::new(io::Cursor::new(bytes)),
        None => Box::new(io::stdin().lock()),
    }
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
        stdin().take(limit + 1).read_to_end(&mut buf)
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
        Recorded::Stored(id) if stderr_is_terminal() => {
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

/// A control whose progress draws a bar on stderr when it is a terminal and `--quiet` is not
/// given (and nothing otherwise): the phase, the count done and the total; `unit` names what
/// is counted.
pub fn progress(unit: &'static str) -> (Control, Bar) {
    if quiet() || !stderr_is_terminal() {
        return (Control::new(), Bar(None));
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} {wide_bar} {eta}")
            .expect("the template is valid"),
    );
    let shared = bar.clone();
    let phase = std::sync::Mutex::new("");
    let control = Control::new().with_progress(move |p: &Progress| {
        let bar = &shared;
        // Each phase counts from 0: its estimate starts afresh too.
        if let Ok(mut last) = phase.lock()
            && *last != p.phase
        {
            *last = p.phase;
            bar.reset();
        }
        bar.set_message(progress_line(p, unit));
        bar.set_length(p.total.unwrap_or(p.done));
        bar.set_position(p.done);
    });
    (control, Bar(Some(bar)))
}

/// What the progress line says: the phase and its counts, `chunking 256/700 files`.
fn progress_line(p: &Progress, unit: &str) -> String {
    match p.total {
        Some(total) => format!("{} {}/{total} {unit}", p.phase, p.done),
        None => format!("{} {} {unit}", p.phase, p.done),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_names_the_phase_and_counts() {
        let p = |done, total| Progress {
            phase: "chunking",
            done,
            total,
        };
        assert_eq!(
            progress_line(&p(256, Some(700)), "files"),
            "chunking 256/700 files"
        );
        assert_eq!(progress_line(&p(3, None), "tasks"), "chunking 3 tasks");
    }
}
