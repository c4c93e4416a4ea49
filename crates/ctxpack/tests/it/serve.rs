//! `ctxpack serve` as a real process on a loopback port: every scope against every endpoint,
//! refused tokens (missing, malformed, wrong, expired, revoked, another repository's), body and
//! rate limits, `Origin` and `Host` on `/mcp`, the tools each scope lists, roots, the ledger's
//! token names, metrics and probes, graceful shutdown, the connection limits and timeouts that
//! keep slow clients from holding the server, and `--server` answers equal to the local
//! command's.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ctxpack_api::server::{Scope, ServerRegistry, TokenRequest};
use ctxpack_pg::Scratch;
use ctxpack_testkit::Script;
use serde_json::{Value, json};

const BUDGET_RS: &str = "//! Budget enforcement.\n\n/// Admits a hit only if it fits the remaining budget.\npub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n    cost <= remaining\n}\n";
const RETRY_RS: &str = "//! The HTTP client.\n\n/// Retries a request with exponential backoff.\npub fn retry_with_backoff(attempts: u32) -> u32 {\n    attempts * 2\n}\n";
const CACHE_RS: &str = "//! A cache of parsed files.\n\n/// Evicts the least recently used entry when the cache is full.\npub fn evict_lru(len: usize, cap: usize) -> bool {\n    len >= cap\n}\n";

/// Runs git in `repo`; its commits get a fixed date, so every fixture has the same commits.
pub(crate) fn git(repo: &Path, args: &[&str]) -> String {
    let date = ctxpack_testkit::git::date(100);
    ctxpack_testkit::git::git_env(
        repo,
        args,
        &[("GIT_AUTHOR_DATE", &date), ("GIT_COMMITTER_DATE", &date)],
    )
}

/// A repository of two commits at `repo`; returns their SHAs, oldest first.
fn repository(repo: &Path) -> [String; 2] {
    let built = Script::new()
        .write("src/budget.rs", BUDGET_RS)
        .write("src/retry.rs", RETRY_RS)
        .commit("budget and retry")
        .write("src/cache.rs", CACHE_RS)
        .write(
            "src/retry.rs",
            format!(
                "{RETRY_RS}\n/// The backoff cap in seconds.\npub const MAX_BACKOFF: u32 = 60;\n"
            ),
        )
        .commit("cache, backoff cap")
        .build();
    built.checkout_at(repo);
    [built.commits()[0].clone(), built.commits()[1].clone()]
}

/// Runs `ctxpack ARGS` with extra environment variables.
pub(crate) fn ctxpack(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
        .args(args)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("ctxpack runs");
    (
        out.status.code().expect("exited normally"),
        String::from_utf8(out.stdout).expect("UTF-8"),
        String::from_utf8(out.stderr).expect("UTF-8"),
    )
}

/// A server state with repositories `app` (two commits) and `other`, and one token per case.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) state: PathBuf,
    pub(crate) app: PathBuf,
    pub(crate) shas: [String; 2],
    tokens: BTreeMap<&'static str, String>,
    /// When the `expiring` token (one second) was made.
    expiring_made: Instant,
    database: Option<Scratch>,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        Fixture::with(None)
    }

    /// The fixture with its registry and ledger in the PostgreSQL database `database`.
    fn with(database: Option<Scratch>) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let app = base.join("roots/app");
        let shas = repository(&app);
        let other = base.join("roots/other");
        repository(&other);
        let state = base.join("state");
        // Set up in process, as `ctxpack serve repo add` and `serve token create` would (the
        // commands themselves are tested in `token_commands_never_show_a_secret_twice`).
        let registry = match &database {
            Some(db) => ServerRegistry::open_database(db.url(), &state),
            None => ServerRegistry::open(&state, true),
        }
        .expect("the registry opens");
        for (name, path) in [("app", &app), ("other", &other)] {
            registry.add_repo(name, path).expect("registers");
        }
        let mut tokens = BTreeMap::new();
        let expiring_made = Instant::now();
        for (name, repo, scope, expires_in) in [
            ("read", "app", Scope::Read, None),
            ("write", "app", Scope::Write, None),
            ("admin", "app", Scope::Admin, None),
            ("foreign", "other", Scope::Admin, None),
            ("expiring", "app", Scope::Admin, Some(1)),
            ("revoked", "app", Scope::Admin, None),
        ] {
            let made = registry
                .create_token(&TokenRequest {
                    name: name.into(),
                    repo: repo.into(),
                    scope,
                    expires_in,
                })
                .expect("a token");
            tokens.insert(name, made.secret);
        }
        registry.revoke_token("revoked").expect("revokes");
        Fixture {
            dir,
            state,
            app,
            shas,
            tokens,
            expiring_made,
            database,
        }
    }

    /// The environment that points the command line at the fixture's database.
    fn env(&self) -> Vec<(&'static str, &str)> {
        self.database
            .iter()
            .map(|db| ("CTXPACK_DATABASE", db.url()))
            .collect()
    }

    pub(crate) fn token(&self, name: &str) -> &str {
        &self.tokens[name]
    }

    /// Waits until the `expiring` token has expired: expiry is kept in whole seconds, so
    /// 1.1 s after it was made.
    fn wait_for_expiry(&self) {
        let expired = self.expiring_made + Duration::from_millis(1100);
        std::thread::sleep(expired.saturating_duration_since(Instant::now()));
    }

    /// Starts a server over the fixture's state with `extra` arguments, serving every
    /// repository of the fixture.
    pub(crate) fn serve(&self, extra: &[&str]) -> Server {
        let root = self.dir.path().canonicalize().expect("canonical");
        self.serve_under(&root.join("roots"), extra)
    }

    /// Starts a server over the fixture's database with a state directory (a cache) of its
    /// own, optionally with a failpoint armed.
    fn serve_on(&self, state: &str, failpoint: Option<&str>) -> Server {
        self.serve_at(&self.dir.path().join(state), failpoint)
    }

    /// Starts a server over the state directory `state`, optionally with a failpoint armed.
    fn serve_at(&self, state: &Path, failpoint: Option<&str>) -> Server {
        let root = self.dir.path().canonicalize().expect("canonical");
        let mut command = Command::new(env!("CARGO_BIN_EXE_ctxpack"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--state"])
            .arg(state)
            .arg("--root")
            .arg(root.join("roots"))
            .envs(self.env());
        if let Some(failpoint) = failpoint {
            command.env("CTXPACK_FAILPOINT", failpoint);
        }
        Server::start(command)
    }

    /// Starts a server over the fixture's state serving what lies under `root`.
    fn serve_under(&self, root: &Path, extra: &[&str]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ctxpack"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--state"])
            .arg(&self.state)
            .arg("--root")
            .arg(root)
            .envs(self.env())
            .args(extra);
        Server::start(command)
    }
}

pub(crate) struct Server {
    child: Child,
    pub(crate) address: String,
    log: Option<std::thread::JoinHandle<String>>,
}

/// One HTTP answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

impl Server {
    /// Sends one request on a fresh connection and reads the whole answer.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let mut stream = TcpStream::connect(&self.address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            head.push_str(&format!("Host: {}\r\n", self.address));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("write head");
        let _ = stream.write_all(body.as_bytes());
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let text = String::from_utf8(raw).expect("UTF-8 answer");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let headers: BTreeMap<String, String> = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect();
        let body = if headers
            .get("transfer-encoding")
            .is_some_and(|v| v == "chunked")
        {
            dechunk(body)
        } else {
            body.to_owned()
        };
        Answer {
            status,
            headers,
            body,
        }
    }

    pub(crate) fn call(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> Answer {
        let bearer = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer));
        }
        self.request(method, path, &headers, body)
    }

    /// `POST /v1/repos/app/index` of the commit `sha` with `token`.
    pub(crate) fn index(&self, token: &str, sha: &str) -> Answer {
        let body = json!({"at": sha}).to_string();
        self.call("POST", "/v1/repos/app/index", Some(token), &body)
    }

    /// One JSON-RPC request to `/mcp`.
    fn mcp(&self, token: &str, extra: &[(&str, &str)], message: &Value) -> Answer {
        let bearer = format!("Bearer {token}");
        let mut headers = vec![
            ("Authorization", bearer.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ];
        headers.extend_from_slice(extra);
        self.request("POST", "/mcp", &headers, &message.to_string())
    }

    /// Stops the server with SIGTERM and returns its exit code and log.
    fn stop(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let code = self.child.wait().expect("the server exits").code();
        let log = self
            .log
            .take()
            .map(|h| h.join().expect("log"))
            .unwrap_or_default();
        (code, log)
    }
}

impl Server {
    /// Starts `ctxpack serve` as `command` says and reads where it listens.
    fn start(mut command: Command) -> Server {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let mut line = String::new();
        stderr
            .read_line(&mut line)
            .expect("the server says where it listens");
        let address = line
            .trim()
            .rsplit("://")
            .next()
            .expect("an address")
            .to_owned();
        // Keep reading the log so the server never blocks on a full pipe.
        let log = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            rest
        });
        Server {
            child,
            address,
            log: Some(log),
        }
    }

    /// Waits for a server that exits by itself; returns its exit code and log.
    fn stop_dead(mut self) -> (Option<i32>, String) {
        let code = self.child.wait().expect("the server exits").code();
        let log = self
            .log
            .take()
            .map(|h| h.join().expect("log"))
            .unwrap_or_default();
        (code, log)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    out
}

#[test]
fn every_scope_against_every_endpoint() {
    every_scope(&Fixture::new());
}

/// The same with the registry and the ledger in PostgreSQL.
#[test]
fn every_scope_against_every_endpoint_on_postgres() {
    let Some(db) = postgres() else { return };
    let fx = Fixture::with(Some(db));
    every_scope(&fx);
    // The ledger is in the database: the state directory holds no ledger file.
    assert!(!fx.state.join("stores/app/ledger").exists());
}

/// A scratch database, or `None` (with a note) when no server is configured outside CI.
fn postgres() -> Option<Scratch> {
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    match std::env::var("CTXPACK_TEST_DATABASE") {
        Ok(url) if !url.is_empty() => Some(Scratch::create(&url).expect("a scratch database")),
        _ => {
            assert!(
                !in_ci,
                "CI=true but CTXPACK_TEST_DATABASE is not set: .ci/run must start PostgreSQL"
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!("note: skipping a PostgreSQL server test: set CTXPACK_TEST_DATABASE");
            }
            None
        }
    }
}

fn every_scope(fx: &Fixture) {
    let server = fx.serve(&[]);
    let [first, head] = &fx.shas;
    // Index both commits with the write token; a read token may not.
    for sha in [first, head] {
        let answer = server.index(fx.token("write"), sha);
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.json()["sha"], json!(sha));
    }
    let pack_body = json!({"goal": "retry with backoff", "budget": 600}).to_string();
    let packed = server.call(
        "POST",
        "/v1/repos/app/pack?format=json",
        Some(fx.token("read")),
        &pack_body,
    );
    assert_eq!(packed.status, 200, "{packed:?}");
    assert_eq!(packed.headers["content-type"], "application/json");
    let id = packed.headers["x-ctxpack-pack-id"].clone();
    assert!(
        packed.json()["hits"][0]["citation"]
            .as_str()
            .expect("a citation")
            .starts_with("src/retry.rs#L")
    );

    let endpoints: Vec<(&str, String, String, &str)> = vec![
        (
            "POST",
            "/v1/repos/app/pack".into(),
            pack_body.clone(),
            "read",
        ),
        (
            "POST",
            "/v1/repos/app/query".into(),
            json!({"goal": "cache"}).to_string(),
            "read",
        ),
        (
            "GET",
            "/v1/repos/app/snapshots".into(),
            String::new(),
            "read",
        ),
        ("GET", "/v1/repos/app/ledger".into(), String::new(), "read"),
        (
            "GET",
            format!("/v1/repos/app/ledger/{id}"),
            String::new(),
            "read",
        ),
        (
            "POST",
            "/v1/repos/app/index".into(),
            json!({"at": head}).to_string(),
            "write",
        ),
        (
            "POST",
            "/v1/repos/app/tools/status".into(),
            "{}".into(),
            "read",
        ),
        (
            "POST",
            "/v1/repos/app/tools/query".into(),
            json!({"goal": "cache"}).to_string(),
            "read",
        ),
        (
            "POST",
            "/v1/repos/app/tools/index".into(),
            json!({"at": head}).to_string(),
            "write",
        ),
    ];
    fx.wait_for_expiry();
    let mut unauthorized = Vec::new();
    let mut forbidden = Vec::new();
    for (method, path, body, needs) in &endpoints {
        for token in ["read", "write", "admin", "foreign", "expiring", "revoked"] {
            let answer = server.call(method, path, Some(fx.token(token)), body);
            let expected = match token {
                "expiring" | "revoked" => 401,
                "foreign" => 403,
                "read" if *needs == "write" => 403,
                _ => 200,
            };
            assert_eq!(
                answer.status, expected,
                "{token} {method} {path}: {answer:?}"
            );
            match answer.status {
                401 => unauthorized.push(answer.body),
                403 => forbidden.push(answer.body),
                _ => {}
            }
        }
        for bad in [None, Some("garbage"), Some("ctxp_000000000000_0000")] {
            let answer = server.call(method, path, bad, body);
            assert_eq!(answer.status, 401, "{bad:?} {path}");
            assert_eq!(answer.headers["www-authenticate"], "Bearer");
            unauthorized.push(answer.body);
        }
        // A token whose secret is wrong in its last digit.
        let mut wrong = fx.token("admin").to_owned();
        let last = wrong.pop().expect("a digit");
        wrong.push(if last == '0' { '1' } else { '0' });
        assert_eq!(server.call(method, path, Some(&wrong), body).status, 401);
    }
    // Another repository's name, registered or not, is refused alike: nothing is revealed.
    for path in ["/v1/repos/other/snapshots", "/v1/repos/nope/snapshots"] {
        let answer = server.call("GET", path, Some(fx.token("admin")), "");
        assert_eq!(answer.status, 403, "{path}");
        forbidden.push(answer.body);
    }
    unauthorized.dedup();
    forbidden.dedup();
    assert_eq!(unauthorized.len(), 1, "{unauthorized:?}");
    assert_eq!(forbidden.len(), 1, "{forbidden:?}");

    // Every pack answered is in the ledger under its token's name.
    let log = server.call(
        "GET",
        "/v1/repos/app/ledger?limit=50",
        Some(fx.token("read")),
        "",
    );
    let entries = log.json();
    let surfaces: Vec<&str> = entries
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["surface"].as_str().expect("a surface"))
        .collect();
    assert!(
        surfaces.contains(&"serve:read") && surfaces.contains(&"serve:write"),
        "{surfaces:?}"
    );
    // A read token never indexes: an unindexed commit is reported, not indexed.
    git(&fx.app, &["commit", "-q", "--allow-empty", "-m", "empty"]);
    let answer = server.call(
        "POST",
        "/v1/repos/app/pack",
        Some(fx.token("read")),
        &json!({"goal": "x"}).to_string(),
    );
    assert_eq!(answer.status, 404, "{answer:?}");
    assert_eq!(answer.json()["error"]["exitCode"], 3);
    // Bad requests are 400 with the field named.
    let answer = server.call(
        "POST",
        "/v1/repos/app/pack",
        Some(fx.token("read")),
        r#"{"goal": "x", "budget": -1}"#,
    );
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(
        answer.json()["error"]["message"]
            .as_str()
            .expect("a message")
            .contains("budget")
    );
    let answer = server.call(
        "POST",
        "/v1/repos/app/pack",
        Some(fx.token("read")),
        "{not json",
    );
    assert_eq!(answer.status, 400);

    // A malformed or unknown query parameter is invalid input in the envelope too.
    for path in [
        "/v1/repos/app/ledger?limit=abc",
        "/v1/repos/app/ledger?limit=0",
        "/v1/repos/app/ledger?limit=1001",
        "/v1/repos/app/snapshots?limit=5",
        "/v1/repos/app/pack?dropped=true",
    ] {
        let method = if path.contains("pack") { "POST" } else { "GET" };
        let answer = server.call(method, path, Some(fx.token("read")), "{}");
        assert_eq!(answer.status, 400, "{path}: {answer:?}");
        assert_eq!(answer.json()["error"]["exitCode"], 2, "{path}");
    }

    // Tools over JSON: an unknown tool is 404, a tool's failure is its envelope.
    let answer = server.call(
        "POST",
        "/v1/repos/app/tools/nope",
        Some(fx.token("admin")),
        "{}",
    );
    assert_eq!(answer.status, 404, "{answer:?}");
    let answer = server.call(
        "POST",
        "/v1/repos/app/tools/query",
        Some(fx.token("read")),
        &json!({"goal": "x", "at": "not-a-commit"}).to_string(),
    );
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(answer.json()["error"]["exitCode"], 2);
    let answer = server.call(
        "POST",
        "/v1/repos/app/tools/status",
        Some(fx.token("read")),
        "[]",
    );
    assert_eq!(answer.status, 400, "{answer:?}");

    // Probes and metrics need no token.
    assert_eq!(server.call("GET", "/healthz", None, "").status, 200);
    let ready = server.call("GET", "/readyz", None, "");
    assert_eq!(ready.json(), json!({"ready": true, "repos": 2}));
    let metrics = server.call("GET", "/metrics", None, "").body;
    assert!(
        metrics.contains("ctxpack_http_responses_total{route=\"pack\",status=\"200\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("ctxpack_pack_seconds_count"), "{metrics}");
    assert!(metrics.contains("ctxpack_index_files_total"), "{metrics}");

    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("shutting down"), "{log}");
    // No secret ever reaches the log.
    for token in fx.tokens.values() {
        assert!(!log.contains(&token[5..]), "a token in the log");
    }
}

/// A client that never finishes its request cannot keep a stopped server alive: after SIGTERM
/// the server waits `--shutdown-timeout` seconds for requests in flight, then drops them and
/// exits 0, saying so. (The test bounds its own wait: a server still running a minute after the
/// signal fails it.)
#[test]
fn a_stalled_request_does_not_keep_a_stopped_server_alive() {
    let fx = Fixture::new();
    let mut server = fx.serve(&["--shutdown-timeout", "1"]);
    // Half a request line, never finished.
    let mut stalled = TcpStream::connect(&server.address).expect("connect");
    stalled.write_all(b"GET /healthz HT").expect("write");
    // The request is in flight before the signal.
    std::thread::sleep(Duration::from_millis(300));
    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let mut exited = None;
    for _ in 0..600 {
        if let Some(status) = server.child.try_wait().expect("wait") {
            exited = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = exited.expect("the server exits within a minute of SIGTERM");
    assert_eq!(status.code(), Some(0));
    let log = server
        .log
        .take()
        .map(|h| h.join().expect("log"))
        .unwrap_or_default();
    assert!(log.contains("shutdown deadline passed"), "{log}");
    drop(stalled);
}

/// Credentials in a git URL never reach a message: user information whatever it holds (a `/`
/// or an `@` in the password) and every query string, whether the URL is refused or git fails
/// to reach it.
#[test]
fn credentials_in_a_git_url_never_show() {
    let state = tempfile::tempdir().expect("tempdir");
    let state = state.path().to_str().expect("a UTF-8 path");
    for url in [
        "https://alice:s3cret/PW@127.0.0.1:9/x.git",
        "https://alice:s3cret@PW@127.0.0.1:9/x.git",
        "https://127.0.0.1:9/x.git?access_token=s3cret",
        "https://alice:s3cret/PW@127.0.0.1:9",
    ] {
        let (code, out, err) = ctxpack(
            &["serve", "repo", "add", "x", "--url", url, "--state", state],
            &[],
        );
        assert_ne!(code, 0, "{url}: {out}");
        assert!(!format!("{out}{err}").contains("s3cret"), "{url}: {err}");
        assert!(!err.contains("PW@"), "{url}: {err}");
    }
}

/// What a server answers reaches the terminal with its control characters shown, never obeyed:
/// a hostile or broken server cannot clear the screen or retitle the window through
/// `--server`, in an answer or in an error.
#[test]
fn the_client_shows_a_servers_controls() {
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    let bodies = [
        ("200 OK", "text/plain", "\u{1b}[2Jcleared\u{7}\n".to_owned()),
        (
            "400 Bad Request",
            "application/json",
            json!({"error": {"code": "invalid_input", "exitCode": 2,
                             "message": "bad \u{1b}]0;owned\u{7}", "hint": "\u{1b}[31mred"}})
            .to_string(),
        ),
    ];
    let answers = std::thread::spawn(move || {
        for (status, kind, body) in bodies {
            let (mut stream, _) = listener.accept().expect("a connection");
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
            let answer = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(answer.as_bytes()).expect("answer");
        }
    });
    for expected in [0, 2] {
        let (code, out, err) = ctxpack(
            &["status", "--server", &url, "--repo", "app"],
            &[("CTXPACK_TOKEN", "ctxp_test")],
        );
        assert_eq!(code, expected, "{out}{err}");
        for printed in [&out, &err] {
            assert!(
                !printed.contains('\u{1b}') && !printed.contains('\u{7}'),
                "{printed:?}"
            );
        }
        assert!(
            out.contains("␛[2Jcleared␇") || err.contains("␛]0;owned␇"),
            "{out}{err}"
        );
    }
    answers.join().expect("the fake server");
}

/// A team server packs committed snapshots only, on every route: no token reads the server's
/// working tree (its uncommitted edits, its untracked files) or a file of the checkout by
/// name, and the tools it lists offer neither.
#[test]
fn no_token_reads_the_servers_working_tree() {
    let fx = Fixture::new();
    // The server's checkout has an uncommitted edit and an untracked file.
    std::fs::write(
        fx.app.join("src/cache.rs"),
        "/// zanzibar-uncommitted eviction\npub fn evict_zanzibar() {}\n",
    )
    .expect("edit");
    std::fs::write(
        fx.app.join("notes.jsonl"),
        "{\"text\": \"zanzibar-untracked\"}\n",
    )
    .expect("untracked");
    let server = fx.serve(&[]);
    let head = fx.shas[1].clone();
    assert_eq!(server.index(fx.token("write"), &head).status, 200);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    for scope in ["read", "write"] {
        let tools = server.mcp(fx.token(scope), &[], &list).json();
        for tool in tools["result"]["tools"].as_array().expect("tools") {
            let properties = &tool["inputSchema"]["properties"];
            match tool["name"].as_str() {
                Some("repo_context_pack") => assert!(properties.get("worktree").is_none()),
                Some("docs_import") => assert!(properties.get("file").is_none()),
                _ => {}
            }
        }
    }
    let call = |token: &str, name: &str, arguments: Value| {
        server.mcp(
            token,
            &[],
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}}),
        )
    };
    for scope in ["read", "write"] {
        let packed = call(
            fx.token(scope),
            "repo_context_pack",
            json!({"goal": "zanzibar eviction", "worktree": true}),
        );
        assert_eq!(packed.json()["result"]["isError"], true, "{packed:?}");
        assert!(
            packed.body.contains("committed snapshots only"),
            "{packed:?}"
        );
        assert!(!packed.body.contains("zanzibar-uncommitted"), "{packed:?}");
        let routed = server.call(
            "POST",
            "/v1/repos/app/tools/repo_context_pack",
            Some(fx.token(scope)),
            &json!({"goal": "zanzibar eviction", "worktree": true}).to_string(),
        );
        assert_eq!(routed.status, 400, "{routed:?}");
        assert!(!routed.body.contains("zanzibar-uncommitted"), "{routed:?}");
    }
    let imported = call(
        fx.token("write"),
        "docs_import",
        json!({"path": "kb", "collection": "notes", "file": "notes.jsonl"}),
    );
    assert_eq!(imported.json()["result"]["isError"], true, "{imported:?}");
    assert!(
        imported.body.contains("from the request only"),
        "{imported:?}"
    );
    let found = call(
        fx.token("read"),
        "vsearch",
        json!({"path": "kb", "collection": "notes", "field": "text", "query": "zanzibar"}),
    );
    assert!(!found.body.contains("zanzibar-untracked"), "{found:?}");
    // The committed snapshot is still packed.
    let packed = call(
        fx.token("read"),
        "repo_context_pack",
        json!({"goal": "evict"}),
    );
    assert_eq!(packed.json()["result"]["isError"], false, "{packed:?}");
    assert!(!packed.body.contains("zanzibar"), "{packed:?}");
}

#[test]
fn mcp_lists_and_runs_the_tools_of_the_token_scope() {
    let fx = Fixture::new();
    let server = fx.serve(&["--allow-origin", "http://localhost:3000"]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let names = |token: &str| -> Vec<String> {
        let answer = server.mcp(token, &[], &list);
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.json()["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    let read = names(fx.token("read"));
    let write = names(fx.token("write"));
    assert!(read.contains(&"repo_context_pack".to_owned()), "{read:?}");
    assert!(!read.contains(&"index".to_owned()), "{read:?}");
    assert!(write.contains(&"index".to_owned()), "{write:?}");
    assert_eq!(names(fx.token("admin")), write);
    assert!(read.iter().all(|t| write.contains(t)));

    let call = |token: &str, name: &str, arguments: Value| {
        server.mcp(
            token,
            &[],
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}}),
        )
    };
    // A read token cannot index: a protocol error, as for an unlisted tool.
    let refused = call(fx.token("read"), "index", json!({}));
    assert_eq!(refused.json()["error"]["code"], -32602, "{refused:?}");
    let indexed = call(fx.token("write"), "index", json!({"at": fx.shas[1]}));
    assert_eq!(
        indexed.json()["result"]["isError"],
        json!(false),
        "{indexed:?}"
    );
    let packed = call(
        fx.token("read"),
        "repo_context_pack",
        json!({"goal": "evict the least recently used entry"}),
    );
    let result = &packed.json()["result"];
    assert_eq!(result["isError"], json!(false), "{packed:?}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .expect("text")
            .contains("src/cache.rs")
    );
    // The token decides the repository: paths stay inside it.
    let outside = call(
        fx.token("write"),
        "docs_insert",
        json!({"path": "/etc/ctxpack", "collection": "c", "document": {"a": 1}}),
    );
    assert_eq!(
        outside.json()["result"]["isError"],
        json!(true),
        "{outside:?}"
    );
    assert!(!Path::new("/etc/ctxpack").exists());

    // Origin: a browser page from elsewhere is refused; an allowed origin is served.
    let foreign = server.mcp(
        fx.token("read"),
        &[("Origin", "https://evil.example")],
        &list,
    );
    assert_eq!(foreign.status, 403, "{foreign:?}");
    let allowed = server.mcp(
        fx.token("read"),
        &[("Origin", "http://localhost:3000")],
        &list,
    );
    assert_eq!(allowed.status, 200, "{allowed:?}");
    // Host: a DNS-rebinding name is refused.
    let rebound = server.request(
        "POST",
        "/mcp",
        &[
            ("Host", "attacker.example"),
            ("Authorization", &format!("Bearer {}", fx.token("read"))),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &list.to_string(),
    );
    assert_eq!(rebound.status, 403, "{rebound:?}");
    // No token, no MCP.
    let bare = server.request(
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        &list.to_string(),
    );
    assert_eq!(bare.status, 401);
}

#[test]
fn body_and_rate_limits() {
    let fx = Fixture::new();
    let server = fx.serve(&["--max-body-bytes", "1000", "--rate-limit", "3"]);
    let big = json!({"goal": "x".repeat(2000)}).to_string();
    let answer = server.call("POST", "/v1/repos/app/pack", Some(fx.token("admin")), &big);
    assert_eq!(answer.status, 413, "{answer:?}");
    let mcp = server.mcp(fx.token("write"), &[], &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x".repeat(2000)}}));
    assert_eq!(mcp.status, 413, "{mcp:?}");
    // The bucket holds three requests; the fourth in the same instant waits.
    let statuses: Vec<Answer> = (0..6)
        .map(|_| server.call("GET", "/v1/repos/app/snapshots", Some(fx.token("read")), ""))
        .collect();
    let limited = statuses.iter().find(|a| a.status == 429).expect("a 429");
    let wait: u64 = limited.headers["retry-after"].parse().expect("seconds");
    assert!(wait >= 1);
    // Another token has its own bucket.
    assert_eq!(
        server
            .call(
                "GET",
                "/v1/repos/app/snapshots",
                Some(fx.token("write")),
                ""
            )
            .status,
        200
    );
}

#[test]
fn repositories_outside_the_roots_are_not_served() {
    let fx = Fixture::new();
    // Only `app`'s own directory is allowed: `other` is registered but outside.
    let server = fx.serve_under(&fx.app, &[]);
    let answer = server.call(
        "GET",
        "/v1/repos/other/snapshots",
        Some(fx.token("foreign")),
        "",
    );
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(
        answer.json()["error"]["message"]
            .as_str()
            .expect("message")
            .contains("outside the roots")
    );
    assert!(
        !fx.state.join("stores/other").exists(),
        "nothing was created for it"
    );
    assert_eq!(
        server
            .call("GET", "/v1/repos/app/snapshots", Some(fx.token("read")), "")
            .status,
        200
    );
    // A server with no root refuses to start.
    let (code, _, err) = ctxpack(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--state",
            fx.state.to_str().expect("UTF-8"),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--root"), "{err}");
}

#[test]
fn the_command_line_as_a_client_prints_what_the_local_command_prints() {
    let fx = Fixture::new();
    let server = fx.serve(&[]);
    let url = format!("http://{}", server.address);
    let app = fx.app.to_str().expect("UTF-8");
    let goals = [
        "how are budgets enforced",
        "retry with exponential backoff",
        "evict the least recently used cache entry",
        "backoff cap in seconds",
        "HTTP client",
    ];
    for (i, sha) in fx.shas.iter().enumerate() {
        // Index locally and on the server, then compare each goal in two formats.
        let (code, _, err) = ctxpack(&["index", "--at", sha, "--cwd", app], &[]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(server.index(fx.token("write"), sha).status, 200);
        for goal in goals {
            for format in ["markdown", "json"] {
                let budget = if i == 0 { "400" } else { "900" };
                let args = [
                    "pack", goal, "--at", sha, "--budget", budget, "--format", format, "--cwd", app,
                ];
                let local = ctxpack(&args, &[]);
                let mut remote_args = args.to_vec();
                remote_args.extend(["--server", &url, "--repo", "app"]);
                let remote = ctxpack(&remote_args, &[("CTXPACK_TOKEN", fx.token("read"))]);
                assert_eq!(local.0, 0, "{}", local.2);
                assert_eq!(remote.0, 0, "{}", remote.2);
                assert_eq!(local.1, remote.1, "{goal} at {sha} as {format}");
            }
        }
    }
    let remote = |args: &[&str], token: &str| {
        let mut all = args.to_vec();
        all.extend(["--server", &url, "--repo", "app"]);
        ctxpack(&all, &[("CTXPACK_TOKEN", token)])
    };
    // status, query, log and show answer as they do locally (log and show differ only in
    // which ledger they read: compare their shapes).
    for args in [
        vec!["status", "--format", "json", "--cwd", app],
        vec!["query", "retry", "--format", "json", "--cwd", app],
        vec!["query", "retry", "--cwd", app],
    ] {
        let local = ctxpack(&args, &[]);
        let served = remote(&args, fx.token("read"));
        assert_eq!(served.0, 0, "{}", served.2);
        if args[0] == "status" {
            // The stores differ (paths, sizes, times); HEAD and the snapshots' commits do not.
            let shas = |text: &str| -> (Value, Vec<Value>) {
                let status: Value = serde_json::from_str(text).expect("JSON");
                let snapshots = status["snapshots"]
                    .as_array()
                    .expect("snapshots")
                    .iter()
                    .map(|s| s["sha"].clone())
                    .collect();
                (status["head"].clone(), snapshots)
            };
            assert_eq!(shas(&local.1), shas(&served.1));
        } else {
            assert_eq!(local.1, served.1, "{args:?}");
        }
    }
    let (code, log, err) = remote(&["log", "--format", "json"], fx.token("read"));
    assert_eq!(code, 0, "{err}");
    let entries: Value = serde_json::from_str(&log).expect("JSON");
    let id = entries[0]["id"].as_str().expect("an id").to_owned();
    assert_eq!(entries[0]["surface"], "serve:read");
    let (code, shown, err) = remote(&["show", &id[..12], "--format", "json"], fx.token("read"));
    assert_eq!(code, 0, "{err}");
    assert!(shown.starts_with('{'), "{shown}");
    // Failures come back as the local command's: message, hint and exit code.
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let local = ctxpack(
        &["pack", "x", "--at", unknown, "--no-index", "--cwd", app],
        &[],
    );
    let served = remote(
        &["pack", "x", "--at", unknown, "--no-index"],
        fx.token("read"),
    );
    assert_eq!(local.0, served.0);
    assert_eq!(
        local.2.lines().next(),
        served.2.lines().next(),
        "{}",
        served.2
    );
    let refused = remote(&["status"], "ctxp_nope");
    assert_eq!(refused.0, 2, "{}", refused.2);
    assert!(refused.2.contains("bearer token"), "{}", refused.2);
    let (code, _, err) = ctxpack(&["status", "--server", &url, "--repo", "app"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CTXPACK_TOKEN"), "{err}");
    let (code, _, err) = remote(&["pack", "x", "--worktree"], fx.token("read"));
    assert_eq!(code, 2, "{err}");
}

/// Against a server, a commit the server has not indexed is indexed on the server: the hint
/// says how, with this server's address, and `ctxpack index --server` does it with a write
/// token (a read token is refused), printing what a local `ctxpack index` prints.
#[test]
fn a_commit_the_server_has_not_indexed_is_indexed_with_index_server() {
    let fx = Fixture::new();
    let server = fx.serve(&[]);
    let url = format!("http://{}", server.address);
    let sha = fx.shas[1].as_str();
    let remote = |args: &[&str], token: &str| {
        let mut all = args.to_vec();
        all.extend(["--server", &url, "--repo", "app"]);
        ctxpack(&all, &[("CTXPACK_TOKEN", token)])
    };
    let pack = ["pack", "retry", "--at", sha];
    let (code, _, err) = remote(&pack, fx.token("read"));
    assert_eq!(code, 3, "{err}");
    let expected = format!(
        "hint: index it on the server with a write token: `CTXPACK_TOKEN=<write token> ctxpack index --server {url} --repo app --at {sha}`"
    );
    assert!(err.contains(&expected), "{err}");

    let index = ["index", "--at", sha];
    let (code, _, err) = remote(&index, fx.token("read"));
    assert_eq!(code, 2, "a read token does not index: {err}");
    assert!(err.contains("this token does not allow that"), "{err}");
    let (code, out, err) = remote(&index, fx.token("write"));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("indexed {}", &sha[..12])), "{out}");
    let (code, out, err) = remote(
        &["index", "--at", sha, "--format", "json"],
        fx.token("write"),
    );
    assert_eq!(code, 0, "{err}");
    let summary: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(summary["sha"], sha);
    assert_eq!(summary["alreadyIndexed"], true);
    let (code, _, err) = remote(&pack, fx.token("read"));
    assert_eq!(code, 0, "{err}");
}

#[test]
fn token_commands_never_show_a_secret_twice() {
    let fx = Fixture::new();
    let state = fx.state.to_str().expect("UTF-8");
    let (code, listed, err) = ctxpack(&["serve", "token", "list", "--state", state], &[]);
    assert_eq!(code, 0, "{err}");
    let tokens: Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(tokens.as_array().expect("a list").len(), fx.tokens.len());
    for secret in fx.tokens.values() {
        assert!(!listed.contains(&secret[18..]), "a secret is listed");
    }
    let revoked = tokens
        .as_array()
        .expect("a list")
        .iter()
        .find(|t| t["name"] == "revoked")
        .expect("revoked");
    assert!(revoked["revoked"].is_i64());
    // Names are unique; unknown repositories and bad scopes are refused.
    let (code, _, err) = ctxpack(
        &[
            "serve", "token", "create", "--repo", "app", "--name", "read", "--state", state,
        ],
        &[],
    );
    assert_eq!(code, 5, "{err}");
    let (code, _, err) = ctxpack(
        &[
            "serve", "token", "create", "--repo", "nope", "--name", "n", "--state", state,
        ],
        &[],
    );
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = ctxpack(
        &[
            "serve", "token", "create", "--repo", "app", "--name", "n", "--scope", "root",
            "--state", state,
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    // A duration that is not one is refused with a message, whatever its characters.
    for expires in ["5é", "é", "0d", "1.5h", "99999999999999999999d"] {
        let (code, _, err) = ctxpack(
            &[
                "serve",
                "token",
                "create",
                "--repo",
                "app",
                "--name",
                "n",
                "--expires",
                expires,
                "--state",
                state,
            ],
            &[],
        );
        assert_eq!(code, 2, "{expires}: {err}");
        assert!(err.contains("is not a duration"), "{expires}: {err}");
    }
    let (code, _, err) = ctxpack(&["serve", "token", "revoke", "nope", "--state", state], &[]);
    assert_eq!(code, 3, "{err}");
    // Removing a repository removes its tokens and its store, nothing else.
    let (code, _, err) = ctxpack(&["serve", "repo", "remove", "other", "--state", state], &[]);
    assert_eq!(code, 0, "{err}");
    let (_, listed, _) = ctxpack(&["serve", "token", "list", "--state", state], &[]);
    assert!(!listed.contains("\"foreign\""), "{listed}");
    assert!(fx.dir.path().join("roots/other/.git").exists());
    let (code, _, err) = ctxpack(
        &[
            "serve",
            "repo",
            "add",
            "x",
            "/nonexistent/dir",
            "--state",
            state,
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
}

/// A server of the fixture over HTTPS with a new self-signed certificate for `localhost`,
/// started with `extra` arguments too; and the certificate, with the path it was written to.
fn serve_tls(fx: &Fixture, extra: &[&str]) -> (Server, rcgen::Certificate, PathBuf) {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("a certificate");
    let cert_path = fx.dir.path().join("cert.pem");
    let key_path = fx.dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.pem()).expect("write");
    std::fs::write(&key_path, signing_key.serialize_pem()).expect("write");
    let mut args = extra.to_vec();
    args.extend([
        "--tls-cert",
        cert_path.to_str().expect("UTF-8"),
        "--tls-key",
        key_path.to_str().expect("UTF-8"),
    ]);
    (fx.serve(&args), cert, cert_path)
}

#[test]
fn tls_serves_https_and_a_silent_client_holds_up_no_one() {
    let fx = Fixture::new();
    let (server, _, cert_path) = serve_tls(&fx, &[]);
    let port = server.address.rsplit(':').next().expect("a port");
    let url = format!("https://localhost:{port}");
    // A client that connects and never speaks.
    let _silent = TcpStream::connect(&server.address).expect("connect");
    let ca = cert_path.to_str().expect("UTF-8");
    let status = |env: &[(&str, &str)]| {
        ctxpack(
            &[
                "status", "--format", "json", "--server", &url, "--repo", "app",
            ],
            env,
        )
    };
    let (code, out, err) = status(&[
        ("CTXPACK_TOKEN", fx.token("read")),
        ("CTXPACK_SERVER_CA", ca),
    ]);
    assert_eq!(code, 0, "{err}");
    let status_json: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(status_json["head"], json!(fx.shas[1]));
    // Without the authority the certificate is refused.
    let (code, _, err) = status(&[("CTXPACK_TOKEN", fx.token("read"))]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot reach the server"), "{err}");
    // Plain HTTP gets no answer from the TLS port.
    let mut stream = TcpStream::connect(&server.address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    assert!(!String::from_utf8_lossy(&raw).contains("200 OK"));
    // A key that does not fit the certificate is refused at start.
    let other = rcgen::KeyPair::generate().expect("a key");
    let other_path = fx.dir.path().join("other.pem");
    std::fs::write(&other_path, other.serialize_pem()).expect("write");
    let (code, _, err) = ctxpack(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--root",
            "/",
            "--state",
            fx.state.to_str().expect("UTF-8"),
            "--tls-cert",
            ca,
            "--tls-key",
            other_path.to_str().expect("UTF-8"),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--tls-key"), "{err}");
}

#[test]
fn two_servers_share_a_state_and_a_killed_indexer_leaves_no_half_snapshot() {
    let fx = Fixture::new();
    let reader = fx.serve(&[]);
    // The second process dies (as `kill -9` would) after the lexical commit of its first index
    // run, before the snapshot is committed.
    let indexer = fx.serve_at(&fx.state, Some("index:lexical-committed:2"));
    let [first, head] = &fx.shas;
    let index = |server: &Server, sha: &str| server.index(fx.token("write"), sha);
    assert_eq!(index(&indexer, first).status, 200);
    // The other process packs what the first indexed.
    let pack = |sha: &str| {
        let body = json!({"goal": "retry with backoff", "at": sha, "index": false}).to_string();
        reader.call(
            "POST",
            "/v1/repos/app/pack?format=json",
            Some(fx.token("read")),
            &body,
        )
    };
    assert_eq!(pack(first).status, 200);
    // The indexer dies part-way through the second commit: no answer comes back.
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| index(&indexer, head)));
    assert!(died.is_err() || died.as_ref().is_ok_and(|a| a.status != 200));
    let (code, _) = indexer.stop_dead();
    assert_ne!(code, Some(0));
    // No half snapshot is visible: the head is not indexed, the first still packs.
    assert_eq!(pack(head).status, 404);
    assert_eq!(pack(first).status, 200);
    let status = reader.call("GET", "/v1/repos/app/snapshots", Some(fx.token("read")), "");
    let shas: Vec<String> = status.json()["snapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .map(|s| s["sha"].as_str().expect("a sha").to_owned())
        .collect();
    assert_eq!(shas, vec![first.clone()]);
    // The next index of that commit, by the surviving process, completes.
    let again = index(&reader, head);
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(pack(head).status, 200);
    let (code, out, err) = ctxpack(
        &[
            "verify",
            "--store",
            fx.state.join("stores/app").to_str().expect("UTF-8"),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_postgres_backed_server_packs_what_the_embedded_one_packs() {
    let Some(db) = postgres() else { return };
    let fx = Fixture::new();
    let embedded = fx.serve(&[]);
    // A second server over the same repository, its registry and ledger in PostgreSQL.
    let state = fx.dir.path().join("pg-state");
    let state_arg = state.to_str().expect("UTF-8");
    let env = [("CTXPACK_DATABASE", db.url())];
    let app = fx.app.to_str().expect("UTF-8");
    let (code, _, err) = ctxpack(
        &["serve", "repo", "add", "app", app, "--state", state_arg],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    let (code, write, err) = ctxpack(
        &[
            "serve", "token", "create", "--repo", "app", "--scope", "write", "--name", "w",
            "--state", state_arg,
        ],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxpack"));
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--state",
            state_arg,
            "--root",
            app,
        ])
        .envs(env);
    let indexer = Server::start(command);
    // The packs come from another process on the database, with a cache of its own that
    // starts empty: it copies each published snapshot before packing it.
    let cache = fx.dir.path().join("pg-cache");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxpack"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--root", app, "--state"])
        .arg(&cache)
        .envs(env);
    let postgres = Server::start(command);
    let goals = [
        "how are budgets enforced",
        "retry with exponential backoff",
        "HTTP client",
        "evict the least recently used entry",
        "cache of parsed files",
        "backoff cap",
        "remaining budget",
        "cost of a hit",
        "attempts doubled",
        "cache capacity",
        "what happens when the cache is full",
        "admit a hit",
        "exponential",
        "MAX_BACKOFF",
        "enforce_budget",
        "retry_with_backoff",
        "evict_lru",
        "budget and retry",
        "seconds",
        "parsed files LRU",
    ];
    let write = write.trim();
    for sha in &fx.shas {
        assert_eq!(embedded.index(fx.token("write"), sha).status, 200);
        assert_eq!(indexer.index(write, sha).status, 200);
        for goal in goals {
            for (format, budget) in [("json", 700), ("markdown", 1500)] {
                let path = format!("/v1/repos/app/pack?format={format}");
                let body = json!({"goal": goal, "at": sha, "budget": budget}).to_string();
                let a = embedded.call("POST", &path, Some(fx.token("write")), &body);
                let b = postgres.call("POST", &path, Some(write), &body);
                assert_eq!(a.status, 200, "{a:?}");
                assert_eq!(a.body, b.body, "{goal} at {sha} as {format}");
            }
        }
    }
    // Both ledgers hold every pack: 2 commits × 20 goals × 2 formats.
    let count = |server: &Server, token: &str| {
        server
            .call("GET", "/v1/repos/app/ledger?limit=1000", Some(token), "")
            .json()
            .as_array()
            .expect("entries")
            .len()
    };
    assert_eq!(count(&embedded, fx.token("read")), 80);
    assert_eq!(count(&postgres, write), 80);
}

#[test]
fn postgres_is_the_system_of_record_for_snapshots() {
    let Some(db) = postgres() else { return };
    let fx = Fixture::with(Some(db));
    // Two processes with their own state directories (their own caches) on one database; the
    // first dies (as `kill -9` would) inside its second publication, before it commits.
    let indexer = fx.serve_on("state-a", Some("publish:files-written:2"));
    let reader = fx.serve_on("state-b", None);
    // The same commits (fixed dates) served from an embedded store.
    let embedded = Fixture::new();
    assert_eq!(embedded.shas, fx.shas);
    let plain = embedded.serve(&[]);
    let [first, head] = &fx.shas;
    let index = |server: &Server, sha: &str| server.index(fx.token("write"), sha);
    assert_eq!(index(&indexer, first).status, 200);
    // The reader never indexed: it copies the published snapshot into its cache and packs
    // exactly what an embedded server packs from its own index.
    assert_eq!(plain.index(embedded.token("write"), first).status, 200);
    for goal in [
        "how are budgets enforced",
        "retry with exponential backoff",
        "HTTP client",
    ] {
        let body = json!({"goal": goal, "at": first, "index": false, "budget": 900}).to_string();
        let a = reader.call(
            "POST",
            "/v1/repos/app/pack?format=json",
            Some(fx.token("read")),
            &body,
        );
        let b = plain.call(
            "POST",
            "/v1/repos/app/pack?format=json",
            Some(embedded.token("read")),
            &body,
        );
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(a.body, b.body, "{goal}");
    }
    assert!(
        fx.dir.path().join("state-b/stores/app").exists(),
        "the reader's cache"
    );
    // The indexer dies publishing the second commit: nothing of it is visible anywhere.
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| index(&indexer, head)));
    assert!(died.is_err() || died.as_ref().is_ok_and(|a| a.status != 200));
    let (code, _) = indexer.stop_dead();
    assert_ne!(code, Some(0));
    let pack_head = |server: &Server| {
        let body = json!({"goal": "cache", "at": head, "index": false}).to_string();
        server.call("POST", "/v1/repos/app/pack", Some(fx.token("read")), &body)
    };
    let refused = pack_head(&reader);
    assert_eq!(refused.status, 404, "{refused:?}");
    assert!(
        refused.json()["error"]["hint"]
            .as_str()
            .expect("a hint")
            .contains(&first[..12])
    );
    // The dead indexer's cache holds the commit, but a process over it packs only what the
    // database says is indexed.
    let revived = fx.serve_on("state-a", None);
    assert_eq!(pack_head(&revived).status, 404);
    let listed = |server: &Server| -> Vec<String> {
        let status = server.call("GET", "/v1/repos/app/snapshots", Some(fx.token("read")), "");
        status.json()["snapshots"]
            .as_array()
            .expect("snapshots")
            .iter()
            .map(|s| s["sha"].as_str().expect("a sha").to_owned())
            .collect()
    };
    assert_eq!(
        listed(&revived),
        vec![first.clone()],
        "status lists what is published"
    );
    // The next index of that commit, by the other process, completes; then both pack it.
    assert_eq!(index(&reader, head).status, 200);
    let a = pack_head(&reader);
    let b = pack_head(&revived);
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body, b.body);
}

#[test]
fn artifacts_are_shared_through_the_database() {
    let Some(db) = postgres() else { return };
    let fx = Fixture::with(Some(db));
    let a = fx.serve_on("state-a", None);
    let b = fx.serve_on("state-b", None);
    let head = &fx.shas[1];
    assert_eq!(a.index(fx.token("write"), head).status, 200);
    let log = "running 3 tests\ntest budget::overflow ... FAILED\nthread panicked: budget exceeded by 12 tokens\n";
    let add = |server: &Server, content: &str| {
        let body = json!({"id": "ci-log", "scope": "evidence", "content": content}).to_string();
        server.call(
            "POST",
            "/v1/repos/app/tools/artifact_add",
            Some(fx.token("write")),
            &body,
        )
    };
    let added = add(&a, log);
    assert_eq!(added.status, 200, "{added:?}");
    // The other process, which never saw it, packs it as evidence.
    let body = json!({"goal": "budget overflow test failed", "scope": "evidence", "at": head, "index": false}).to_string();
    let packed = b.call(
        "POST",
        "/v1/repos/app/pack?format=json",
        Some(fx.token("read")),
        &body,
    );
    assert_eq!(packed.status, 200, "{packed:?}");
    assert!(packed.body.contains("evidence:ci-log#L"), "{}", packed.body);
    // The same id with other content is a conflict on any process; the same content is not.
    let conflict = add(&b, "something else\n");
    assert_eq!(conflict.status, 409, "{conflict:?}");
    assert_eq!(add(&b, log).status, 200);
}

#[test]
fn document_stores_live_with_the_server_and_are_shared_through_the_database() {
    let tool = |server: &Server, name: &str, token: &str, args: Value| {
        server.call(
            "POST",
            &format!("/v1/repos/app/tools/{name}"),
            Some(token),
            &args.to_string(),
        )
    };
    let insert = |id: u32, text: &str| json!({"path": "kb", "collection": "notes", "document": {"_id": id, "text": text}});
    let search = json!({"path": "kb", "collection": "notes", "field": "text", "query": "budget overflow", "k": 10});
    let ids = |answer: &Answer| -> Vec<u64> {
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.json()["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|hit| hit["id"].as_u64().expect("an id"))
            .collect()
    };

    // Embedded: a write creates the store under the server's state, never in the checkout,
    // and a name that is not a plain relative name is refused.
    let fx = Fixture::new();
    let server = fx.serve(&[]);
    let write = fx.token("write");
    let added = tool(
        &server,
        "docs_insert",
        write,
        insert(1, "the budget overflows"),
    );
    assert_eq!(added.status, 200, "{added:?}");
    assert!(fx.state.join("documents/app/kb/ctxpack.sqlite").exists());
    assert!(!fx.app.join("kb").exists());
    for bad in ["../kb", "/tmp/kb", ".hidden", "kb/vectors", "kb\\x"] {
        let mut args = insert(2, "x");
        args["path"] = json!(bad);
        let refused = tool(&server, "docs_insert", write, args);
        assert_eq!(refused.status, 400, "{bad}: {refused:?}");
        let message = refused.json()["error"]["message"].to_string();
        assert!(message.contains("not a document store name"), "{refused:?}");
    }
    assert_eq!(
        ids(&tool(&server, "vsearch", fx.token("read"), search.clone())),
        [1]
    );
    // A read token may search but not write.
    let refused = tool(&server, "docs_insert", fx.token("read"), insert(2, "x"));
    assert_eq!(refused.status, 403, "{refused:?}");
    drop(server);

    // PostgreSQL: two processes with their own caches; one dies after writing its cache and
    // before publishing, which leaves nothing of that write anywhere.
    let Some(db) = postgres() else { return };
    let fx = Fixture::with(Some(db));
    let write = fx.token("write");
    let a = fx.serve_on("state-a", Some("docs:written:2"));
    let b = fx.serve_on("state-b", None);
    assert_eq!(
        tool(&a, "docs_insert", write, insert(1, "the budget overflows")).status,
        200
    );
    assert_eq!(ids(&tool(&b, "vsearch", write, search.clone())), [1]);
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tool(
            &a,
            "docs_insert",
            write,
            insert(2, "a budget overflow, never published"),
        )
    }));
    assert!(died.is_err() || died.as_ref().is_ok_and(|a| a.status != 200));
    let (code, _) = a.stop_dead();
    assert_ne!(code, Some(0));
    assert_eq!(ids(&tool(&b, "vsearch", write, search.clone())), [1]);
    // The dead process's cache holds the write but is not trusted: it is filled again.
    let revived = fx.serve_on("state-a", None);
    assert_eq!(ids(&tool(&revived, "vsearch", write, search.clone())), [1]);
    // A process that dies writing a store's first documents leaves no store anywhere.
    let c = fx.serve_on("state-c", Some("docs:written:1"));
    let mut first = insert(1, "never published");
    first["path"] = json!("fresh");
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tool(&c, "docs_insert", write, first.clone())
    }));
    assert!(died.is_err() || died.as_ref().is_ok_and(|a| a.status != 200));
    let (code, _) = c.stop_dead();
    assert_ne!(code, Some(0));
    let mut fresh = search.clone();
    fresh["path"] = json!("fresh");
    for server in [&b, &fx.serve_on("state-c", None)] {
        let answer = tool(server, "vsearch", write, fresh.clone());
        assert_eq!(answer.status, 404, "{answer:?}");
    }
    // Writes through either process, embeddings included, are seen by both alike.
    assert_eq!(
        tool(
            &b,
            "docs_insert",
            write,
            insert(3, "budget overflow handling")
        )
        .status,
        200
    );
    let synced = tool(
        &revived,
        "vsync",
        write,
        json!({"path": "kb", "collection": "notes", "field": "text"}),
    );
    assert_eq!(synced.status, 200, "{synced:?}");
    let (x, y) = (
        tool(&b, "vsearch", write, search.clone()),
        tool(&revived, "vsearch", write, search.clone()),
    );
    assert_eq!(ids(&x), [3, 1]);
    assert_eq!(x.body, y.body);
    let pack =
        json!({"path": "kb", "collection": "notes", "field": "text", "query": "budget overflow"});
    let (x, y) = (
        tool(&b, "context_pack", write, pack.clone()),
        tool(&revived, "context_pack", write, pack),
    );
    assert_eq!(x.status, 200, "{x:?}");
    assert_eq!(x.body, y.body);
}

#[test]
fn repositories_registered_by_git_url_are_cloned_and_fetched_before_each_index() {
    let fx = Fixture::new();
    let state = fx.state.to_str().expect("UTF-8");
    // The fixture's `other` repository, served by URL only.
    let origin = fx
        .dir
        .path()
        .canonicalize()
        .expect("canonical")
        .join("roots/other");
    let url = format!("file://{}", origin.display());
    let add = |name: &str, url: &str, schemes: &[&str]| {
        let mut args = vec!["serve", "repo", "add", name, "--url", url, "--state", state];
        for scheme in schemes {
            args.extend(["--allow-scheme", scheme]);
        }
        ctxpack(&args, &[])
    };
    // Only allow-listed schemes; never a transport that runs a program.
    let (code, _, err) = add("remote", &url, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("scheme `file` is not allowed"), "{err}");
    let marker = fx.dir.path().join("pwned");
    let ext = format!("ext::sh -c touch% {}", marker.display());
    let (code, _, err) = add("evil", &ext, &["file"]);
    assert_eq!(code, 2, "{err}");
    assert!(!marker.exists());
    let (code, _, err) = add("evil", &ext, &["ext"]);
    assert_eq!(code, 2, "{err}");
    assert!(!marker.exists());
    let (code, _, err) = add("gone", "file:///nonexistent/repo", &["file"]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("git clone of file:///nonexistent/repo failed"),
        "{err}"
    );
    let (code, out, err) = add("remote", &url, &["file"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).expect("JSON")["url"],
        json!(url)
    );
    let (code, out, err) = ctxpack(
        &[
            "serve",
            "token",
            "create",
            "--repo",
            "remote",
            "--scope",
            "write",
            "--name",
            "remote-ci",
            "--state",
            state,
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let token = out.trim().to_owned();

    let server = fx.serve(&["--allow-scheme", "file"]);
    let head = git(&origin, &["rev-parse", "HEAD"]);
    let index = |sha: &str| {
        server.call(
            "POST",
            "/v1/repos/remote/index",
            Some(&token),
            &json!({"at": sha}).to_string(),
        )
    };
    assert_eq!(index(&head).status, 200);
    // A commit pushed to the origin after the clone: the index request fetches it first.
    std::fs::write(
        origin.join("src/quota.rs"),
        "/// Refuses a request once the tenant's quota is spent.\npub fn within_quota(used: u64, quota: u64) -> bool { used < quota }\n",
    )
    .expect("write");
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "quota"]);
    let pushed = git(&origin, &["rev-parse", "HEAD"]);
    let indexed = index(&pushed);
    assert_eq!(indexed.status, 200, "{indexed:?}");
    let body = json!({"goal": "tenant quota", "at": pushed, "index": false}).to_string();
    let packed = server.call(
        "POST",
        "/v1/repos/remote/pack?format=json",
        Some(&token),
        &body,
    );
    assert_eq!(packed.status, 200, "{packed:?}");
    assert!(packed.body.contains("src/quota.rs"), "{}", packed.body);
    drop(server);
    // A server that does not allow the scheme serves nothing of it.
    let strict = fx.serve(&[]);
    let refused = strict.call("POST", "/v1/repos/remote/pack", Some(&token), &body);
    assert_eq!(refused.status, 400, "{refused:?}");
    // Removing the repository removes the server's clone, whose configuration never held
    // the URL.
    drop(strict);
    let config = std::fs::read_to_string(fx.state.join("checkouts/remote.git/config"))
        .expect("the clone's configuration");
    assert!(!config.contains(&origin.display().to_string()), "{config}");
    let (code, _, err) = ctxpack(
        &["serve", "repo", "remove", "remote", "--state", state],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!fx.state.join("checkouts/remote.git").exists());
}

/// How long a test of the connection limits waits for the server to act; a server that never
/// does fails the test after this instead of hanging it. Far above every limit the tests set.
const PATIENCE: Duration = Duration::from_secs(30);

/// The address the test client connects from, and another loopback address: Linux answers on
/// all of 127.0.0.0/8, so two addresses are two clients to the server.
const HERE: std::net::Ipv4Addr = std::net::Ipv4Addr::new(127, 0, 0, 1);
const ELSEWHERE: std::net::Ipv4Addr = std::net::Ipv4Addr::new(127, 0, 0, 2);

/// A connection to `server` from the loopback address `from`, whose reads give up after
/// [`PATIENCE`].
fn connect_from(server: &Server, from: std::net::Ipv4Addr) -> TcpStream {
    let target: std::net::SocketAddr = server.address.parse().expect("a socket address");
    // std cannot choose a connection's source address; tokio's socket can.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(std::net::SocketAddr::new(from.into(), 0))
            .expect("bind the source address");
        let stream = tokio::time::timeout(PATIENCE, socket.connect(target))
            .await
            .expect("connects in time")
            .expect("connect");
        stream.into_std().expect("a blocking stream")
    });
    stream.set_nonblocking(false).expect("blocking");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("read timeout");
    stream
        .set_write_timeout(Some(PATIENCE))
        .expect("write timeout");
    stream
}

/// Reads `stream` until the server closes it (end of stream or a reset): what it sent, and
/// whether it closed the connection before a read waited [`PATIENCE`] in vain.
fn read_until_closed(stream: &mut impl Read) -> (String, bool) {
    let mut got = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => got.extend_from_slice(&buffer[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (String::from_utf8_lossy(&got).into_owned(), false);
            }
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), true),
        }
    }
}

/// `GET /healthz` on a connection from `from`, closed after the answer: whether it was 200.
fn healthy_from(server: &Server, from: std::net::Ipv4Addr) -> bool {
    let mut stream = connect_from(server, from);
    if stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let (answer, _) = read_until_closed(&mut stream);
    answer.starts_with("HTTP/1.1 200")
}

/// A connection that sent part of a request's headers and nothing more.
fn holding(server: &Server, from: std::net::Ipv4Addr) -> TcpStream {
    let mut stream = connect_from(server, from);
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("write part of the headers");
    stream
}

/// A client that connects and never speaks, or never finishes its headers, is disconnected
/// after `--header-timeout`, so it cannot hold a connection (a file descriptor) for long.
#[test]
fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let fx = Fixture::new();
    let server = fx.serve(&["--header-timeout", "1"]);
    let mut silent = connect_from(&server, HERE);
    let mut partial = holding(&server, HERE);
    for (what, stream) in [("silent", &mut silent), ("partial", &mut partial)] {
        let (answer, closed) = read_until_closed(stream);
        assert!(closed, "the {what} client is still connected");
        assert!(!answer.contains(" 200 "), "{what}: {answer}");
    }
    assert!(healthy_from(&server, HERE));
}

/// A connection kept alive after an answer gets `--header-timeout` to start its next request,
/// then is closed: an idle connection cannot be held forever either.
#[test]
fn an_idle_keep_alive_connection_is_closed() {
    let fx = Fixture::new();
    let server = fx.serve(&["--header-timeout", "1"]);
    let mut stream = connect_from(&server, HERE);
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .expect("write");
    let (answer, closed) = read_until_closed(&mut stream);
    assert!(closed, "the idle connection is still open: {answer}");
    // The request was answered, on a connection kept alive (no `Connection: close`).
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nok\n"), "{answer}");
    assert!(
        !answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
}

/// Over TLS too: a client that never finishes its handshake, or finishes it and never finishes
/// its headers, is disconnected after `--header-timeout`.
#[test]
fn a_tls_client_that_never_finishes_its_headers_is_disconnected() {
    let fx = Fixture::new();
    let (server, cert, _) = serve_tls(&fx, &["--header-timeout", "1"]);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).expect("a root");
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let config = std::sync::Arc::new(config);
    let tls = |stream: TcpStream| {
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
        let client = rustls::ClientConnection::new(config.clone(), name).expect("a client");
        rustls::StreamOwned::new(client, stream)
    };

    // The handshake completes and a whole request is answered: TLS works.
    let mut whole = tls(connect_from(&server, HERE));
    whole
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("write");
    let (answer, _) = read_until_closed(&mut whole);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // Silent before the handshake, and part of the headers after it; both are connected
    // before either is read, so their timeouts run side by side.
    let mut silent = connect_from(&server, HERE);
    let mut partial = tls(connect_from(&server, HERE));
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        .expect("write");
    partial.flush().expect("flush");
    let (_, closed) = read_until_closed(&mut silent);
    assert!(closed, "the silent client is still connected");
    let (answer, closed) = read_until_closed(&mut partial);
    assert!(closed, "the partial client is still connected: {answer}");
    assert!(!answer.contains(" 200 "), "{answer}");
}

/// A request body that trickles in (a byte every 200 ms of a declared 1,000) is cut off after
/// `--body-timeout`, on every route that reads a body — the JSON API, `/mcp` and the web
/// view's forms: the client gets 408 (or, when the close races the answer, just the close),
/// and the server logs it.
#[test]
fn a_trickled_body_is_cut_off() {
    let fx = Fixture::new();
    let server = fx.serve(&["--body-timeout", "1"]);
    let bearer = format!("Bearer {}", fx.token("admin"));
    let json = ("Content-Type", "application/json");
    // The web view takes a form from its own pages only.
    let origin = format!("http://{}", server.address);
    let routes: [(&str, Vec<(&str, &str)>); 3] = [
        (
            "/v1/repos/app/pack",
            vec![("Authorization", bearer.as_str()), json],
        ),
        (
            "/mcp",
            vec![
                ("Authorization", bearer.as_str()),
                json,
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
        ),
        (
            "/ui/login",
            vec![
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Origin", origin.as_str()),
            ],
        ),
    ];
    // Each route waits out the body timeout; the three wait side by side.
    let server_ref = &server;
    std::thread::scope(|scope| {
        for (path, headers) in routes {
            scope.spawn(move || {
                let mut stream = connect_from(server_ref, HERE);
                let mut head = format!(
                    "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: 1000\r\n",
                    server_ref.address
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                stream.write_all(head.as_bytes()).expect("write the head");
                let mut writer = stream.try_clone().expect("a second handle");
                // At most 150 bytes (30 s): the trickle stops when the server has closed.
                let trickle = std::thread::spawn(move || {
                    for _ in 0..150 {
                        if writer.write_all(b" ").is_err() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(200));
                    }
                });
                let (answer, closed) = read_until_closed(&mut stream);
                assert!(
                    closed,
                    "{path}: the trickling client is still connected: {answer}"
                );
                assert!(
                    answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
                    "{path}: {answer}"
                );
                let _ = stream.shutdown(std::net::Shutdown::Both);
                trickle.join().expect("the trickle ends");
            });
        }
    });
    assert!(healthy_from(&server, HERE));
    // The metrics count them as what they were answered.
    let metrics = server.call("GET", "/metrics", None, "");
    assert!(
        metrics.body.contains("status=\"408\"} "),
        "{}",
        metrics.body
    );
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(log.matches("request body too slow").count(), 3, "{log}");
}

/// A long body that keeps coming faster than `--body-min-rate` is read to its end though it
/// takes longer than `--body-timeout`, while the same body held to `--body-timeout` alone
/// (`--body-min-rate 0`) is cut off: the minimum rate, not a whole-body deadline, is what a slow
/// link's long body must meet.
#[test]
fn a_body_that_keeps_its_minimum_rate_may_take_longer_than_the_body_timeout() {
    let fx = Fixture::new();
    let paced = fx.serve(&["--body-timeout", "1", "--body-min-rate", "1024"]);
    let whole = fx.serve(&["--body-timeout", "1", "--body-min-rate", "0"]);
    let token = fx.token("admin");
    // 6,000 bytes of JSON in ten parts 200 ms apart: about 2 s at 3,000 bytes a second.
    let mut body = json!({"goal": "the server's limits", "budget": 500}).to_string();
    body.push_str(&" ".repeat(6000 - body.len()));
    let send = |server: &Server| {
        let mut stream = connect_from(server, HERE);
        let head = format!(
            "POST /v1/repos/app/pack HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            server.address,
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("write the head");
        let mut writer = stream.try_clone().expect("a second handle");
        let parts: Vec<Vec<u8>> = body.as_bytes().chunks(600).map(<[u8]>::to_vec).collect();
        let pacer = std::thread::spawn(move || {
            for part in parts {
                if writer.write_all(&part).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let (answer, closed) = read_until_closed(&mut stream);
        pacer.join().expect("the body is sent");
        assert!(closed, "{answer}");
        answer
    };
    let (kept, cut) = std::thread::scope(|scope| {
        let kept = scope.spawn(|| send(&paced));
        let cut = scope.spawn(|| send(&whole));
        (
            kept.join().expect("the paced client"),
            cut.join().expect("the other client"),
        )
    });
    assert!(kept.starts_with("HTTP/1.1 200"), "{kept}");
    assert!(
        cut.is_empty() || cut.starts_with("HTTP/1.1 408"),
        "a body past --body-timeout was read: {cut}"
    );
    for server in [paced, whole] {
        let (code, log) = server.stop();
        assert_eq!(code, Some(0), "{log}");
    }
}

/// Connections from one address beyond `--max-connections-per-ip` are closed as they are
/// accepted, so one client holding connections open cannot take them all: another address is
/// still answered, and a connection that closes frees its place.
#[test]
fn one_address_cannot_hold_every_connection() {
    let fx = Fixture::new();
    let server = fx.serve(&["--max-connections-per-ip", "3", "--header-timeout", "60"]);
    let mut held: Vec<TcpStream> = (0..3).map(|_| holding(&server, HERE)).collect();
    for _ in 0..2 {
        let mut extra = connect_from(&server, HERE);
        let (answer, closed) = read_until_closed(&mut extra);
        assert!(closed, "a connection past the address's limit is open");
        assert!(answer.is_empty(), "{answer}");
    }
    assert!(healthy_from(&server, ELSEWHERE));
    // Once one of the held connections closes, the address is served again.
    drop(held.pop());
    let deadline = Instant::now() + PATIENCE;
    while !healthy_from(&server, HERE) {
        assert!(
            Instant::now() < deadline,
            "the address is refused after a connection closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(held);
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("connections from one address"), "{log}");
}

/// At `--max-connections` the server stops accepting: a new connection waits in the listening
/// socket's backlog, unanswered but not refused, and is served once a held one closes.
#[test]
fn a_full_server_answers_new_connections_once_one_closes() {
    let fx = Fixture::new();
    let server = fx.serve(&["--max-connections", "2", "--header-timeout", "60"]);
    let mut held: Vec<TcpStream> = (0..2).map(|_| holding(&server, HERE)).collect();
    let mut waiting = connect_from(&server, ELSEWHERE);
    waiting
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .expect("write");
    // Neither answered nor closed while both places are held.
    waiting
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("read timeout");
    let mut byte = [0; 1];
    match waiting.read(&mut byte) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) => {}
        other => panic!("a full server served or closed a new connection: {other:?}"),
    }
    drop(held.pop());
    waiting
        .set_read_timeout(Some(PATIENCE))
        .expect("read timeout");
    let (answer, closed) = read_until_closed(&mut waiting);
    assert!(closed, "{answer}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(held);
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
}

/// The connection limits are `serve` flags whose defaults `--help` shows, and a limit of 0
/// (or a timeout past a day) is refused at start with the flag's name, as `--rate-limit 0` is.
#[test]
fn connection_limits_have_documented_defaults_and_refuse_zero() {
    let (code, help, err) = ctxpack(&["serve", "--help"], &[]);
    assert_eq!(code, 0, "{err}");
    for (flag, default) in [
        ("--header-timeout <SECONDS>", "[default: 10]"),
        ("--body-timeout <SECONDS>", "[default: 30]"),
        ("--body-min-rate <BYTES>", "[default: 16384]"),
        ("--max-connections <N>", "[default: 512]"),
        ("--max-connections-per-ip <N>", "[default: 32]"),
    ] {
        let start = help.find(flag).unwrap_or_else(|| panic!("{flag}: {help}"));
        let rest = &help[start + flag.len()..];
        let end = rest.find("\n  -").unwrap_or(rest.len());
        assert!(rest[..end].contains(default), "{flag}: {}", &rest[..end]);
    }
    let state = tempfile::tempdir().expect("tempdir");
    let state = state.path().to_str().expect("UTF-8");
    for (flag, value) in [
        ("--header-timeout", "0"),
        ("--header-timeout", "86401"),
        ("--body-timeout", "0"),
        ("--body-timeout", "86401"),
        ("--body-min-rate", "100"),
        ("--max-connections", "0"),
        ("--max-connections-per-ip", "0"),
    ] {
        let (code, _, err) = ctxpack(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--root",
                "/",
                "--state",
                state,
                flag,
                value,
            ],
            &[],
        );
        assert_eq!(code, 2, "{flag} {value}: {err}");
        assert!(err.contains(flag), "{flag} {value}: {err}");
        assert!(err.contains("must be"), "{flag} {value}: {err}");
    }
}

#[test]
fn errors_name_the_servers_files_by_their_registered_names() {
    let fx = Fixture::new();
    let server = fx.serve(&[]);
    let base = fx.dir.path().canonicalize().expect("canonical");
    let leaks = |body: &str| {
        [
            base.display().to_string(),
            fx.dir.path().display().to_string(),
        ]
        .into_iter()
        .any(|path| body.contains(&path))
    };
    // Nothing is indexed yet: every surface's error says so without saying where.
    let goal = json!({"goal": "budget"}).to_string();
    let routed = server.call("POST", "/v1/repos/app/pack", Some(fx.token("read")), &goal);
    assert!(routed.status >= 400, "{routed:?}");
    let tool = server.call(
        "POST",
        "/v1/repos/app/tools/repo_context_pack",
        Some(fx.token("read")),
        &goal,
    );
    assert!(tool.status >= 400, "{tool:?}");
    let mcp = server.mcp(
        fx.token("read"),
        &[],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "repo_context_pack", "arguments": {"goal": "budget"}}}),
    );
    assert_eq!(mcp.json()["result"]["isError"], true, "{mcp:?}");
    let log = server.call("GET", "/v1/repos/app/ledger", Some(fx.token("read")), "");
    for (what, answer) in [
        ("pack", &routed),
        ("tool", &tool),
        ("mcp", &mcp),
        ("log", &log),
    ] {
        assert!(
            !leaks(&answer.body),
            "{what} names a server path: {answer:?}"
        );
    }
    assert!(
        routed.body.contains("app"),
        "the error names the repository: {routed:?}"
    );
}

#[test]
fn a_token_records_at_most_its_ledger_quota_a_day() {
    let fx = Fixture::new();
    let server = fx.serve(&["--ledger-quota", "2"]);
    let indexed = server.index(fx.token("write"), &fx.shas[1]);
    assert_eq!(indexed.status, 200, "{indexed:?}");
    let pack = |token: &str| {
        server.call(
            "POST",
            "/v1/repos/app/pack",
            Some(fx.token(token)),
            &json!({"goal": "budget"}).to_string(),
        )
    };
    for _ in 0..2 {
        let answer = pack("read");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(
            answer.headers.contains_key("x-ctxpack-pack-id"),
            "{answer:?}"
        );
    }
    let refused = pack("read");
    assert_eq!(refused.status, 429, "{refused:?}");
    assert!(refused.body.contains("2 packs today"), "{refused:?}");
    assert!(refused.body.contains("larger quota"), "{refused:?}");
    // Another token has its own quota; the ledger holds what was answered, no more.
    assert_eq!(pack("write").status, 200);
    let log = server.call(
        "GET",
        "/v1/repos/app/ledger?format=json&limit=100",
        Some(fx.token("read")),
        "",
    );
    assert_eq!(log.status, 200, "{log:?}");
    assert_eq!(log.json().as_array().map(Vec::len), Some(3), "{log:?}");
}

/// A server's sessions are its tokens', kept in the database: two processes on one database
/// answer a session alike, over the JSON API and over MCP, where the session is the one the
/// server issued at `initialize`; another token with the same session id sees nothing.
#[test]
fn two_server_processes_on_one_database_share_each_tokens_sessions() {
    let Some(db) = postgres() else { return };
    let fx = Fixture::with(Some(db));
    let a = fx.serve(&[]);
    let b = fx.serve_on("state-b", None);
    assert_eq!(a.index(fx.token("write"), &fx.shas[1]).status, 200);
    let goal = "evict the least recently used entry";

    // The JSON API: the session is a field of the request.
    let pack = |server: &Server, token: &str, extra: Value| {
        let mut body = json!({"goal": goal, "budget": 2000});
        for (k, v) in extra.as_object().expect("fields") {
            body[k] = v.clone();
        }
        let answer = server.call(
            "POST",
            "/v1/repos/app/pack?format=json",
            Some(token),
            &body.to_string(),
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.json()
    };
    let first = pack(&a, fx.token("read"), json!({"session": "s1"}));
    let hits = first["hits"].as_array().expect("hits").len();
    assert!(hits > 0, "{first}");
    let second = pack(&b, fx.token("read"), json!({"session": "s1"}));
    assert_eq!(second["session"]["references"], hits, "{second}");
    let id = second["hits"][0]["shownBefore"]["pack"]
        .as_str()
        .expect("a pack id");
    assert_eq!(
        a.call(
            "GET",
            &format!("/v1/repos/app/ledger/{id}"),
            Some(fx.token("read")),
            ""
        )
        .status,
        200,
        "the reference names the pack in the server's ledger"
    );
    let fresh = pack(
        &b,
        fx.token("read"),
        json!({"session": "s1", "fresh": true}),
    );
    assert_eq!(fresh["hits"], first["hits"]);
    // `recall` by the pack a reference names, on the other process, gives its text back.
    let recalled = pack(
        &b,
        fx.token("read"),
        json!({"session": "s1", "recall": [id]}),
    );
    // (A recalled range is its citation and text as shown, without the symbol around it.)
    let shown = |pack: &Value| -> Vec<(Value, Value)> {
        pack["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| (h["citation"].clone(), h["text"].clone()))
            .collect()
    };
    assert_eq!(shown(&recalled), shown(&first));
    // Another token's session of the same name has seen nothing.
    let theirs = pack(&b, fx.token("write"), json!({"session": "s1"}));
    assert_eq!(theirs["hits"], first["hits"]);

    // MCP: the server issues a session at initialize; the client sends it back.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let opened = a.mcp(fx.token("read"), &[], &initialize);
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened
        .headers
        .get("mcp-session-id")
        .expect("a session id at initialize")
        .clone();
    let call_with = |server: &Server, token: &str, session: Option<&str>, recall: &[&str]| {
        let extra: Vec<(&str, &str)> = session.iter().map(|s| ("Mcp-Session-Id", *s)).collect();
        let answer = server.mcp(
            token,
            &extra,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "repo_context_pack",
                "arguments": {"goal": goal, "budget": 2000, "recall": recall}}}),
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(
            session.is_none() || !answer.headers.contains_key("mcp-session-id"),
            "a session is issued once"
        );
        answer.json()["result"]["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_owned()
    };
    let call = |server: &Server, token: &str, session: Option<&str>| {
        call_with(server, token, session, &[])
    };
    let whole = call(&a, fx.token("read"), Some(&session));
    assert!(!whole.contains("Shown before"), "{whole}");
    let again = call(&b, fx.token("read"), Some(&session));
    assert!(again.contains("Shown before in this session:"), "{again}");
    assert!(!again.contains("fn evict"), "{again}");
    // `recall` by the pack a reference names gives the text back, on either process.
    let shown_in = again
        .split("in pack `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("a pack id");
    let recalled = call_with(&a, fx.token("read"), Some(&session), &[shown_in]);
    assert!(recalled.contains("fn evict"), "{recalled}");
    // A call outside the session, or by another token, is whole.
    assert_eq!(call(&b, fx.token("read"), None), whole);
    assert_eq!(call(&b, fx.token("write"), Some(&session)), whole);
}
