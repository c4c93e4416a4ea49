//! `run(…)` values: a command started without a shell, under a time limit and an output
//! limit, that leaves nothing running behind it.
//!
//! # Nothing a run starts outlives it
//!
//! A command is in its own process group, but a process group is not enough: a descendant
//! can leave it (`setsid`, `setpgid`) and its parent can exit, handing it to `init`, where
//! nothing would find it again. So, on Linux, for as long as at least one command runs, the
//! ctxpack process is a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): an orphaned
//! descendant is re-parented to ctxpack instead of `init`, and stays in ctxpack's own process
//! tree. When the command ends, by exiting, at its time limit, or because the run is
//! abandoned (an error or a panic unwinding through it), every process of the run is killed
//! with `SIGKILL` and every one re-parented to ctxpack is reaped, so no zombie stays either.
//! A process that survives because its parent exited normally is killed too: a `run` value is
//! the command's output, and a daemon the command left behind would hold its pipes open and,
//! in a long-lived server, end as a zombie of ctxpack.
//!
//! The processes of a run are found in `/proc`: while ctxpack is a subreaper, only inside its
//! own process tree, so nothing else is ever signalled (if the `prctl` is refused, anywhere,
//! by the group and the marker below). They are those that descend from
//! - the command itself, or a process already seen to belong to the run (the run looks every
//!   [`OBSERVE_EVERY`] while it waits, and remembers each process by pid *and* start time, so a
//!   recycled pid is never mistaken for one of them), or
//! - a process in the command's process group, until the command is reaped, or
//! - a process whose environment carries the run's own [`MARKER`] entry, which every
//!   descendant inherits unless it clears its environment: this finds an orphan whose parent
//!   exited between two looks, even after `setsid`.
//!
//! Only a descendant that clears its environment, leaves the process group, and is orphaned
//! between two looks could escape; so could one that is itself a subreaper's child (a
//! container runtime, `systemd --user`), which is no longer the run's to kill.
//!
//! Elsewhere on Unix the command's process group is killed, as before.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ctxpack_plan::{PlanError, RunRequest, Text, Value};

/// The environment variable that marks every process of one run (see the module docs).
pub const MARKER: &str = "CTXPACK_RUN";

/// How often a waiting run looks for the processes its command started.
pub const OBSERVE_EVERY: Duration = Duration::from_millis(100);

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
/// under `limits`. A command still running at the time limit is killed and reported; whatever
/// it started is killed when it ends, however it ends.
pub fn run_command(
    request: &RunRequest,
    cwd: &Path,
    limits: RunLimits,
) -> Result<Value, PlanError> {
    let Some((program, args)) = request.argv.split_first() else {
        return Err(PlanError::SourceRefused("the command is empty".into()));
    };
    let marker = tree::marker();
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env(MARKER, &marker)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so one signal reaches all that stay in it (cargo's test binaries).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // Before the spawn, so an orphan is re-parented to ctxpack however early it is orphaned;
    // dropped last (declared first), after the run has reaped its processes.
    let reaper = tree::Subreaper::enable();
    let child = command
        .spawn()
        .map_err(|e| PlanError::SourceFailed(format!("cannot start `{}`: {e}", request.command)))?;
    let mut run = Run {
        tree: tree::Tree::new(&child, &marker, &reaper),
        child,
        reaped: false,
        ended: false,
    };
    let (tx, rx) = mpsc::channel();
    for (n, stream) in [
        run.child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        run.child
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
    let mut looked = Instant::now();
    let status = loop {
        match run.child.try_wait() {
            Ok(Some(status)) => {
                run.reaped = true;
                break status;
            }
            Ok(None) if Instant::now() >= deadline => {
                run.end();
                return Err(PlanError::SourceFailed(format!(
                    "`{}` was killed at its time limit of {} s",
                    request.command,
                    limits.timeout.as_secs()
                )));
            }
            Ok(None) => {
                std::thread::sleep(Duration::from_millis(10));
                if looked.elapsed() >= OBSERVE_EVERY {
                    run.tree.observe();
                    looked = Instant::now();
                }
            }
            Err(e) => {
                run.end();
                return Err(PlanError::SourceFailed(format!(
                    "waiting for `{}`: {e}",
                    request.command
                )));
            }
        }
    };
    // What the command left running is killed now, which closes the pipes it held.
    run.end();
    drop(run);
    drop(reaper);
    // A process that escaped (see the module docs) may still hold a pipe: wait a little, not
    // forever.
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

/// A started command and the processes it starts; ending it (at the latest when it is
/// dropped) kills and reaps them all.
struct Run {
    child: Child,
    tree: tree::Tree,
    /// Whether the command has been reaped: its pid, which is also its group's id, may then
    /// be another process's, so it is no longer signalled by number.
    reaped: bool,
    ended: bool,
}

impl Run {
    /// Kills every process of the run that is still there, and reaps the command.
    fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.tree.end(!self.reaped);
        // The command itself is the `Child`'s to reap (std keeps its status, and does not
        // signal a pid it has already reaped).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(target_os = "linux")]
mod tree {
    //! The processes of a run on Linux: found in `/proc`, killed, reaped (see the module docs
    //! of `command`).

    use std::collections::{BTreeMap, BTreeSet};
    use std::process::Child;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, PoisonError};
    use std::time::{Duration, Instant};

    use rustix::process::{
        Pid, RawPid, Signal, WaitOptions, child_subreaper, getpid, kill_process,
        kill_process_group, set_child_subreaper, waitpid,
    };

    /// How long ending a run waits for its processes to die and be reaped; a process in an
    /// uninterruptible sleep may outlast it, and is left to the kernel.
    const REAP_WAIT: Duration = Duration::from_secs(5);

    /// A marker value no other run of this process, or of another ctxpack process, uses.
    pub(super) fn marker() -> String {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        format!(
            "{}.{}",
            getpid().as_raw_nonzero(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// How many runs hold the subreaper, and whether it was ctxpack that turned it on.
    struct Reaper {
        runs: usize,
        ours: bool,
        on: bool,
    }

    /// The subreaper attribute is the whole process's, and runs may overlap (the MCP server,
    /// tests): the first run turns it on, the last turns it off, unless it was on already.
    static REAPER: Mutex<Reaper> = Mutex::new(Reaper {
        runs: 0,
        ours: false,
        on: false,
    });

    /// ctxpack is a child subreaper while one of these lives.
    pub(super) struct Subreaper {
        /// Whether the process really is a subreaper (the `prctl` may be refused).
        on: bool,
    }

    impl Subreaper {
        pub(super) fn enable() -> Subreaper {
            let mut reaper = REAPER.lock().unwrap_or_else(PoisonError::into_inner);
            if reaper.runs == 0 {
                let already = matches!(child_subreaper(), Ok(Some(_)));
                reaper.ours = !already && set_child_subreaper(Some(getpid())).is_ok();
                reaper.on = already || reaper.ours;
            }
            reaper.runs += 1;
            Subreaper { on: reaper.on }
        }
    }

    impl Drop for Subreaper {
        fn drop(&mut self) {
            let mut reaper = REAPER.lock().unwrap_or_else(PoisonError::into_inner);
            reaper.runs -= 1;
            if reaper.runs == 0 && reaper.ours {
                let _ = set_child_subreaper(None);
                reaper.ours = false;
                reaper.on = false;
            }
        }
    }

    /// A process as `/proc/PID/stat` shows it.
    #[derive(Clone, Copy, Debug)]
    struct Proc {
        ppid: RawPid,
        pgid: RawPid,
        /// Clock ticks after boot: with the pid, it names one process, never a recycled pid.
        start: u64,
        zombie: bool,
    }

    /// Every process `/proc` lists now, by pid.
    fn scan() -> BTreeMap<RawPid, Proc> {
        let mut procs = BTreeMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return procs;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<RawPid>().ok())
            else {
                continue;
            };
            if let Some(proc) = stat(pid) {
                procs.insert(pid, proc);
            }
        }
        procs
    }

    /// A process's `/proc/PID/stat`, or `None` once it is gone.
    fn stat(pid: RawPid) -> Option<Proc> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name is in parentheses and may hold spaces and parentheses itself.
        let after = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // Fields 3 (state), 4 (ppid), 5 (pgrp) and 22 (starttime) of proc(5).
        Some(Proc {
            zombie: matches!(*fields.first()?, "Z" | "X"),
            ppid: fields.get(1)?.parse().ok()?,
            pgid: fields.get(2)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    /// Whether a process's environment holds `entry` (`NAME=value`).
    fn carries(pid: RawPid, entry: &[u8]) -> bool {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == entry))
    }

    /// The processes of one run.
    pub(super) struct Tree {
        /// The command's pid, which is also its process group's id.
        root: RawPid,
        /// `MARKER=value`, as it appears in `/proc/PID/environ`.
        entry: Vec<u8>,
        /// Whether ctxpack is a subreaper, so all of the run stays in its process tree.
        contained: bool,
        /// The processes seen to belong to the run: pid and start time.
        known: BTreeMap<RawPid, u64>,
        /// Whether the command's group id is still the run's: not once the command is reaped
        /// (its pid may then be recycled into a new group, which would match).
        group: bool,
    }

    impl Tree {
        pub(super) fn new(child: &Child, marker: &str, reaper: &Subreaper) -> Tree {
            let root = Pid::from_child(child).as_raw_nonzero().get();
            let mut tree = Tree {
                root,
                entry: format!("{}={marker}", super::MARKER).into_bytes(),
                contained: reaper.on,
                known: BTreeMap::new(),
                group: true,
            };
            // Not yet reaped, so its pid cannot have been recycled.
            if let Some(proc) = stat(root) {
                tree.known.insert(root, proc.start);
            }
            tree
        }

        /// Remembers the processes that belong to the run now.
        pub(super) fn observe(&mut self) {
            let procs = scan();
            self.known = self.members(&procs);
        }

        /// The processes of the run in `procs`: the descendants of every known process, of
        /// every process in the command's group (while the command is not reaped) and of
        /// every one carrying the marker.
        fn members(&self, procs: &BTreeMap<RawPid, Proc>) -> BTreeMap<RawPid, u64> {
            let me = getpid().as_raw_nonzero().get();
            let mut children: BTreeMap<RawPid, Vec<RawPid>> = BTreeMap::new();
            for (&pid, proc) in procs {
                children.entry(proc.ppid).or_default().push(pid);
            }
            let descendants = |roots: Vec<RawPid>| {
                let mut seen = BTreeSet::new();
                let mut stack = roots;
                while let Some(pid) = stack.pop() {
                    if pid != me && seen.insert(pid) {
                        stack.extend(children.get(&pid).into_iter().flatten());
                    }
                }
                seen
            };
            // Where the run's processes can be: ctxpack's own tree while it is a subreaper.
            let scope = if self.contained {
                descendants(children.get(&me).cloned().unwrap_or_default())
            } else {
                procs.keys().copied().collect()
            };
            let roots: Vec<RawPid> = scope
                .iter()
                .copied()
                .filter(|pid| {
                    let proc = &procs[pid];
                    self.known.get(pid) == Some(&proc.start)
                        || (self.group && proc.pgid == self.root)
                        || carries(*pid, &self.entry)
                })
                .collect();
            descendants(roots)
                .into_iter()
                .filter_map(|pid| Some((pid, procs.get(&pid)?.start)))
                .collect()
        }

        /// Kills every process of the run and reaps those re-parented to ctxpack, until none
        /// is left (or [`REAP_WAIT`] has passed). The command itself is left for its
        /// `Child` to reap.
        pub(super) fn end(&mut self, group_is_ours: bool) {
            let me = getpid().as_raw_nonzero().get();
            // The group first, in one signal, so it stops forking while the tree is walked.
            // Once the command is reaped, what is left of its group is found as known, or by
            // the marker, not by a group id that may have been recycled.
            self.group = group_is_ours;
            if group_is_ours && let Some(group) = Pid::from_raw(self.root) {
                let _ = kill_process_group(group, Signal::KILL);
            }
            let deadline = Instant::now() + REAP_WAIT;
            loop {
                let procs = scan();
                let members = self.members(&procs);
                let mut pending = false;
                for &pid in members.keys() {
                    let proc = procs[&pid];
                    let Some(process) = Pid::from_raw(pid) else {
                        continue;
                    };
                    if !proc.zombie {
                        let _ = kill_process(process, Signal::KILL);
                        pending = true;
                    } else if pid == self.root {
                        // The `Child`'s to reap; a zombie already.
                    } else if proc.ppid == me {
                        let _ = waitpid(Some(process), WaitOptions::NOHANG);
                        pending = true;
                    } else if members.contains_key(&proc.ppid) {
                        // Re-parented to ctxpack once its dying parent is gone.
                        pending = true;
                    }
                }
                // Remembered, so a process whose parent dies in between is still found.
                self.known = members;
                if !pending || Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod tree {
    //! Elsewhere, the processes of a run are its command's process group.

    use std::process::Child;

    /// Nothing marks a run's processes here.
    pub(super) fn marker() -> String {
        String::new()
    }

    /// No subreaper here.
    pub(super) struct Subreaper;

    impl Subreaper {
        pub(super) fn enable() -> Subreaper {
            Subreaper
        }
    }

    /// The command's process group.
    pub(super) struct Tree {
        #[cfg(unix)]
        group: rustix::process::Pid,
    }

    impl Tree {
        pub(super) fn new(child: &Child, _marker: &str, _reaper: &Subreaper) -> Tree {
            #[cfg(not(unix))]
            let _ = child;
            Tree {
                #[cfg(unix)]
                group: rustix::process::Pid::from_child(child),
            }
        }

        pub(super) fn observe(&mut self) {}

        pub(super) fn end(&mut self, group_is_ours: bool) {
            #[cfg(unix)]
            if group_is_ours {
                use rustix::process::{Signal, kill_process_group};
                let _ = kill_process_group(self.group, Signal::KILL);
            }
            #[cfg(not(unix))]
            let _ = group_is_ours;
        }
    }
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
