//! `run(…)` values: a command started without a shell, under a time limit and an output
//! limit.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ctxpack_plan::{RunRequest, SourceError, Text, Value};

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
