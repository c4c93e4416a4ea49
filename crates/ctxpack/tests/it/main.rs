//! The workspace's integration tests, one binary so that their tests run side by side: `api`
//! tests the library in process, the other modules run the `ctxpack` command line: in process
//! (`ctxpack::cli::run_in_process`, what the binary runs) unless the test needs what only a
//! process shows (a working directory, the environment, signals and kills, servers and their
//! clients), and `identity` checks that the binary answers what the command line answers in
//! process.

mod api;
mod config;
mod conveniences;
mod crash;
mod docs;
mod eval;
mod framing;
mod hostile;
mod identity;
mod ledger;
mod mcp;
mod output;
mod pack;
mod plan;
mod select;
mod serve;
mod ui;

use std::io::Write;
use std::process::{Command, Stdio};

/// What a run of the binary produced.
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// stdout and stderr with the exit code, for snapshots.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The commands that run only in a process of their own (they serve on its streams or run the
/// binary again by its path).
const OWN_PROCESS: &[&str] = &["mcp", "serve", "ui", "hook"];

/// Runs `ctxpack ARGS` with `stdin` as the binary would, in this process (in a `ctxpack`
/// process for the commands that need one).
pub fn ctxpack(args: &[&str], stdin: &[u8]) -> Run {
    if args.iter().any(|a| OWN_PROCESS.contains(a)) {
        return ctxpack_process(args, stdin);
    }
    let out = ctxpack::cli::run_in_process(args, stdin);
    Run {
        code: i32::from(out.code),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs the `ctxpack` binary with ARGS and `stdin`, and waits for it.
pub fn ctxpack_process(args: &[&str], stdin: &[u8]) -> Run {
    run_ctxpack(Command::new(env!("CARGO_BIN_EXE_ctxpack")), args, stdin)
}

/// Runs `ctxpack ARGS` in the directory `dir`, with nothing on standard input.
pub fn ctxpack_in(dir: &std::path::Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxpack"));
    command.current_dir(dir);
    run_ctxpack(command, args, b"")
}

fn run_ctxpack(mut command: Command, args: &[&str], stdin: &[u8]) -> Run {
    let mut child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1")
        .spawn()
        .expect("the ctxpack binary starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    // The process may exit before reading everything; a broken pipe here is fine.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    let out = child.wait_with_output().expect("ctxpack finishes");
    Run {
        code: out.status.code().expect("exited normally, not by a signal"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}
