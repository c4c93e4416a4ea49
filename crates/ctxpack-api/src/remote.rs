//! Repositories a server registers by git URL. Each server process keeps its own bare clone
//! under its state directory (`checkouts/NAME.git`), made on first use, and fetches its
//! branches and tags before each index, so `POST …/index {"at": sha}` from a CI job finds a
//! commit pushed a moment ago.
//!
//! The URL is untrusted input and git is a powerful program, so:
//! - only `scheme://` URLs whose scheme the operator allow-lists are accepted (`https` by
//!   default); git itself enforces the same list (`GIT_ALLOW_PROTOCOL`), which also covers
//!   redirects and anything the remote names, and transports such as `ext::` are never
//!   allowed;
//! - git runs without the system's and the user's configuration, hooks, prompts, credential
//!   helpers or submodules, with the URL after `--`; a transfer slower than 1 KB/s for a
//!   minute fails, and git and everything it started are killed after [`GIT_TIMEOUT`];
//! - a clone is an empty bare repository that fetches the URL's branches and tags, so the
//!   URL is never written into the clone's configuration; it is made in a temporary
//!   directory and renamed into place, so a clone that fails half way leaves nothing a later
//!   request would trust;
//! - credentials in a URL never appear in an error (any `scheme://user:secret@` is shown
//!   as `scheme://…@`), though, as for any program, the URL is in git's arguments while it
//!   runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Hint, Result};

/// The schemes a server accepts when the operator names none.
pub const DEFAULT_SCHEMES: &[&str] = &["https"];

/// The longest a clone or fetch may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// Schemes git knows as transports; an allow-list may name only these.
const KNOWN_SCHEMES: &[&str] = &["https", "http", "ssh", "git", "file"];

/// One clone or fetch at a time per repository in this process.
static GIT: Mutex<BTreeMap<PathBuf, Arc<Mutex<()>>>> = Mutex::new(BTreeMap::new());

/// The lock of the clone at `dir`.
fn repo_lock(dir: &Path) -> Arc<Mutex<()>> {
    GIT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(dir.to_owned())
        .or_default()
        .clone()
}

/// Environment variables git may still see: where to find programs, proxies and
/// certificate authorities.
const PASSED: &[&str] = &[
    "PATH",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "SSH_AUTH_SOCK",
];

/// Checks an allow-list of schemes.
pub fn check_schemes(schemes: &[String]) -> Result<()> {
    for scheme in schemes {
        if !KNOWN_SCHEMES.contains(&scheme.as_str()) {
            return Err(Error::invalid_field(
                "allow-scheme",
                format!("`{scheme}` is not a git transport ctxpack allows"),
            )
            .with_hint(Hint::Advice(format!(
                "name one of {}",
                KNOWN_SCHEMES.join(", ")
            ))));
        }
    }
    Ok(())
}

/// `text` with the credentials of every URL in it left out, for messages: the user
/// information, whatever it holds (`scheme://user:se/cr@et@host` → `scheme://…@host`), and
/// every query string (`?access_token=…` → `?…`). A URL runs to the next whitespace, quote or
/// angle bracket; what precedes its last `@` is user information when it holds no `/` or holds
/// a `:` (a path with an `@` in it, `host/a@b`, is left as it is).
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || "'\"`<>".contains(c))
            .unwrap_or(tail.len());
        let (url, after) = tail.split_at(end);
        push_redacted(&mut out, url);
        rest = after;
    }
    out.push_str(rest);
    out
}

/// [`redact`] of `text`, with every occurrence of `url` (which may hold characters that end a
/// URL in free text, a space or a quote in its password) redacted whole first.
fn redact_naming(text: &str, url: &str) -> String {
    if url.is_empty() {
        return redact(text);
    }
    redact(&text.replace(url, &redact_whole(url)))
}

/// `url` redacted as one URL, whatever characters it holds.
fn redact_whole(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return redact(url);
    };
    let mut out = format!("{scheme}://");
    push_redacted(&mut out, rest);
    out
}

/// Pushes what follows a URL's `scheme://` with its user information and query string left
/// out (see [`redact`] for what counts as user information).
fn push_redacted(out: &mut String, rest: &str) {
    let (rest, query) = match rest.find('?') {
        Some(q) => (&rest[..q], true),
        None => (rest, false),
    };
    match rest.rfind('@') {
        Some(at) if !rest[..at].contains('/') || rest[..at].contains(':') => {
            out.push('…');
            out.push_str(&rest[at..]);
        }
        _ => out.push_str(rest),
    }
    if query {
        out.push_str("?…");
    }
}

/// Refuses `url` unless it is a `scheme://` URL with an allowed scheme.
pub(crate) fn check_url(url: &str, schemes: &[String]) -> Result<()> {
    let refuse =
        |why: String| {
            Err(Error::invalid_field("url", why).with_hint(Hint::Advice(format!(
            "give a URL such as https://git.example.com/team/app.git; this server allows {}",
            if schemes.is_empty() {
                "no scheme (start it with --allow-scheme)".to_owned()
            } else {
                schemes.join(", ")
            }
        ))))
        };
    if url.len() > 2048 || url.chars().any(char::is_control) || url.starts_with('-') {
        return refuse("not a git URL".into());
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return refuse(format!("{} is not a scheme:// URL", redact_whole(url)));
    };
    if rest.is_empty() {
        return refuse(format!("{} names no repository", redact_whole(url)));
    }
    if !schemes.iter().any(|s| s == scheme) {
        return refuse(format!(
            "the scheme `{scheme}` is not allowed on this server"
        ));
    }
    Ok(())
}

/// Makes sure `dir` holds a bare clone of `url`, cloning it when missing.
pub(crate) fn ensure_clone(url: &str, dir: &Path, schemes: &[String]) -> Result<()> {
    check_url(url, schemes)?;
    if dir.join("HEAD").is_file() {
        return Ok(());
    }
    let lock = repo_lock(dir);
    let _one = lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if dir.join("HEAD").is_file() {
        return Ok(());
    }
    let parent = dir
        .parent()
        .ok_or_else(|| Error::internal("a clone directory has no parent"))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| Error::io(parent, &e).context("cannot create the clone directory"))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temporary = Temporary(parent.join(format!(".clone-{}-{nanos}", std::process::id())));
    std::fs::create_dir(&temporary.0).map_err(|e| Error::io(&temporary.0, &e))?;
    let target = temporary.0.join("repo.git");
    let target_arg = target.to_string_lossy().into_owned();
    run_git(
        schemes,
        url,
        None,
        "clone",
        &["init", "--quiet", "--bare", "--", &target_arg],
    )?;
    fetch_into(url, &target, schemes, "clone")?;
    // HEAD follows the URL's default branch.
    let head = run_git(
        schemes,
        url,
        Some(&target),
        "clone",
        &["ls-remote", "--symref", "--", url, "HEAD"],
    )?;
    if let Some(branch) = head
        .lines()
        .find_map(|l| l.strip_prefix("ref: ")?.split_once('\t'))
        .map(|(r, _)| r.to_owned())
        .filter(|r| r.starts_with("refs/heads/") && !r.contains(['\n', ' ']))
    {
        run_git(
            schemes,
            url,
            Some(&target),
            "clone",
            &["symbolic-ref", "HEAD", &branch],
        )?;
    }
    match std::fs::rename(&target, dir) {
        Ok(()) => Ok(()),
        // Another process cloned it first.
        Err(_) if dir.join("HEAD").is_file() => Ok(()),
        Err(e) => Err(Error::io(dir, &e)),
    }
}

/// A directory removed with everything in it when dropped.
struct Temporary(PathBuf);

impl Drop for Temporary {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fetches the branches and tags of `url` into the bare clone `dir`.
pub(crate) fn fetch(url: &str, dir: &Path, schemes: &[String]) -> Result<()> {
    check_url(url, schemes)?;
    let lock = repo_lock(dir);
    let _one = lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    fetch_into(url, dir, schemes, "fetch")
}

fn fetch_into(url: &str, dir: &Path, schemes: &[String], what: &str) -> Result<()> {
    run_git(
        schemes,
        url,
        Some(dir),
        what,
        &[
            "fetch",
            "--quiet",
            "--prune",
            "--no-recurse-submodules",
            "--",
            url,
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        ],
    )
    .map(drop)
}

/// Runs git with only the allowed transports and nothing from the environment that could
/// run a program, waiting at most [`GIT_TIMEOUT`]; returns what it printed.
fn run_git(
    schemes: &[String],
    url: &str,
    git_dir: Option<&Path>,
    what: &str,
    args: &[&str],
) -> Result<String> {
    let mut command = Command::new("git");
    command.env_clear();
    for name in PASSED {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env("HOME", "/nonexistent")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "/bin/false")
        .env("SSH_ASKPASS", "/bin/false")
        .env("GIT_ALLOW_PROTOCOL", schemes.join(":"))
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(["-c", "credential.helper=", "-c", "gc.auto=0"])
        .args([
            "-c",
            "http.lowSpeedLimit=1000",
            "-c",
            "http.lowSpeedTime=60",
        ]);
    if let Some(dir) = git_dir {
        command.arg("--git-dir").arg(dir);
    }
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a timeout kills what git started too.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot run git to {what} {}: {e}", redact_whole(url)),
        )
        .with_hint(Hint::Advice(
            "install git: a repository registered by URL is cloned with it".into(),
        ))
    })?;
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                use std::io::Read;
                // At most 64 KiB is kept.
                let _ = (&mut pipe).take(64 * 1024).read_to_string(&mut text);
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
            text
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > GIT_TIMEOUT => {
                kill_group(&mut child);
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Error::new(ErrorKind::Io, format!("git {what}: {e}"))),
        }
    };
    // A helper git left behind may hold the pipes open: wait for them a moment at most.
    let joined = |handle: std::thread::JoinHandle<String>| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !handle.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if handle.is_finished() {
            handle.join().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let (printed, messages) = (joined(stdout), joined(stderr));
    match status {
        Some(status) if status.success() => Ok(printed),
        Some(_) => {
            // git's own reason, else its last words.
            let reason = messages
                .lines()
                .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
                .or_else(|| messages.lines().rev().find(|l| !l.trim().is_empty()))
                .unwrap_or("no message");
            Err(Error::new(
                ErrorKind::Io,
                redact_naming(&format!("git {what} of {url} failed: {reason}"), url),
            )
            .with_hint(Hint::Advice(
                "check the URL and that this server can reach it; the request can be repeated"
                    .into(),
            )))
        }
        None => Err(Error::new(
            ErrorKind::Io,
            format!(
                "git {what} of {} took longer than {} s and was stopped",
                redact_whole(url),
                GIT_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// Kills git and every process it started.
fn kill_group(child: &mut std::process::Child) {
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
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_refused_unless_their_scheme_is_allowed() {
        let https = vec!["https".to_owned()];
        assert!(check_url("https://git.example/app.git", &https).is_ok());
        for bad in [
            "file:///srv/app",
            "ext::sh -c touch% /tmp/pwned",
            "git@git.example:app.git",
            "/srv/app",
            "-uhttps://x",
            "https://",
            "https://git.example/a\nb",
        ] {
            assert!(check_url(bad, &https).is_err(), "{bad}");
        }
        assert!(check_url("file:///srv/app", &["file".to_owned()]).is_ok());
        assert!(check_schemes(&["ext".to_owned()]).is_err());
        assert!(check_schemes(&["https".to_owned(), "ssh".to_owned()]).is_ok());
    }

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            redact("https://me:secret@git.example/app.git"),
            "https://…@git.example/app.git"
        );
        assert_eq!(redact("https://git.example/a@b"), "https://git.example/a@b");
        assert_eq!(redact("not a url"), "not a url");
        assert_eq!(
            redact("fatal: unable to access 'https://u:p@h/x/': Could not resolve host"),
            "fatal: unable to access 'https://…@h/x/': Could not resolve host"
        );
        // Whatever the user information holds, and every query string.
        for (url, shown) in [
            ("https://alice:s3cret/PW@host/x.git", "https://…@host/x.git"),
            ("https://alice:p@ss@host/x.git", "https://…@host/x.git"),
            ("https://token@host/x.git", "https://…@host/x.git"),
            (
                "https://host/x.git?access_token=abc",
                "https://host/x.git?…",
            ),
            (
                "https://u:p@host/x.git?private_token=abc&b=c",
                "https://…@host/x.git?…",
            ),
        ] {
            assert_eq!(redact(url), shown, "{url}");
            assert_eq!(
                redact(&format!("cloning '{url}' failed")),
                format!("cloning '{shown}' failed")
            );
            assert_eq!(redact_whole(url), shown, "{url}");
        }
        // A password with a space or a quote, where the URL is known.
        let url = "https://alice:a b'c@host/x.git";
        let message = redact_naming(
            &format!("git clone of {url} failed: fatal: '{url}' not found"),
            url,
        );
        assert!(
            !message.contains("alice") && !message.contains("a b'c"),
            "{message}"
        );
        assert!(message.contains("https://…@host/x.git"), "{message}");
    }
}
