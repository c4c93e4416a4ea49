//! `ctxpack serve`: one server for a team — packs, indexing and the ledger over a JSON HTTP
//! API and the Model Context Protocol over streamable HTTP — and its registry commands
//! (`serve repo …`, `serve token …`).
//!
//! The server is a front end like the command line: each request is checked (bearer token,
//! scope, rate, body size), turned into an API request and run on a blocking thread; the API
//! decides everything else. Its state directory holds the registry (repositories and token
//! digests) and one store per repository; a repository is served only while its path lies
//! under one of the `--root`s the operator allows.

mod http;
mod listen;
mod mcp;
mod metrics;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use ctxpack_api::Error;
use ctxpack_api::server::{Scope, ServerRegistry, TokenRequest};

use crate::host::{Access, Limiter, bind, runtime};
use crate::output::note;

/// Options of `ctxpack serve`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    /// Manage what the server serves instead of serving.
    #[command(subcommand)]
    pub command: Option<ServeCommand>,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,
    /// The server's state directory: its registry and one store per repository [default:
    /// $XDG_STATE_HOME/ctxpack/server, or ~/.local/state/ctxpack/server].
    #[arg(long, global = true)]
    pub state: Option<PathBuf>,
    /// Keep the registry and the ledger in this PostgreSQL database
    /// (`postgres://user@host/name`; give the password in CTXPACK_DATABASE rather than here,
    /// where other users see it) [default: CTXPACK_DATABASE, else the state directory].
    #[arg(long, global = true, value_name = "URL")]
    pub database: Option<String>,
    /// Serve only repositories under this directory; repeat for several. At least one.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// A git URL scheme repositories may be registered and fetched by (https, http, ssh,
    /// git, file); repeat for several [default: https].
    #[arg(long = "allow-scheme", value_name = "SCHEME", global = true)]
    pub schemes: Vec<String>,
    /// A browser origin allowed to call `/mcp` (`https://app.example.com:443`); repeat for
    /// several. Requests from any other origin are refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub origins: Vec<String>,
    /// A host name clients may address `/mcp` by, beyond localhost; repeat for several.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Refuse request bodies larger than this many bytes (413).
    #[arg(long, default_value_t = 4 << 20)]
    pub max_body_bytes: usize,
    /// Requests per second each token may make (bursts of as many); over it, 429.
    #[arg(long, default_value_t = 50)]
    pub rate_limit: u32,
    /// Packs each token may record in the ledger a day (UTC), counted by each server process;
    /// past it, a request that would record one is answered 429 before anything is built.
    #[arg(long, value_name = "N", default_value_t = ctxpack_api::LEDGER_QUOTA_PER_DAY)]
    pub ledger_quota: u64,
    /// Seconds a connection has to send a request's headers (over TLS, to finish its handshake
    /// first); a kept-alive connection gets as long to start its next request. Past it, the
    /// connection is closed: a client that never finishes cannot hold it.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub header_timeout: u64,
    /// Seconds a request's body has to arrive once its headers have, and more as it comes at
    /// --body-min-rate; a slower one is answered 408, its connection closed and the request
    /// logged.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub body_timeout: u64,
    /// The slowest a long body may come, in bytes a second (0, or 1024 and up): every this many
    /// bytes received give it one second more than --body-timeout (0: the whole body within
    /// --body-timeout).
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 10)]
    pub body_min_rate: u64,
    /// Connections the server holds at once; at the limit it stops accepting until one closes
    /// (new ones wait in the listening socket's backlog). Keep it below the open-file limit.
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_connections: usize,
    /// Connections one client address may hold at once; more are closed as they are accepted.
    /// Behind a reverse proxy every client has the proxy's address: raise it.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub max_connections_per_ip: usize,
    /// Seconds a SIGTERM or SIGINT waits for requests in flight before the server drops them
    /// and exits (0, logged): a client that never finishes its request cannot keep it alive.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub shutdown_timeout: u64,
    /// Serve HTTPS with this PEM certificate chain (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Show the charts of this evaluation report (`ctxpack eval … --format json`) on the web
    /// view's quality page.
    #[arg(long, value_name = "FILE")]
    pub eval_report: Option<PathBuf>,
    /// Log format on stderr: text or json (one object per line).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

/// Subcommands of `ctxpack serve`.
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// Register, unregister and list repositories.
    #[command(subcommand)]
    Repo(RepoCommand),
    /// Create, list and revoke access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `ctxpack serve repo …`.
#[derive(Debug, Subcommand)]
pub enum RepoCommand {
    /// Register the git repository containing PATH, or at the git URL --url, as NAME.
    Add {
        /// Its name in URLs and tokens.
        name: String,
        /// A path inside the repository.
        #[arg(required_unless_present = "url", conflicts_with = "url")]
        path: Option<PathBuf>,
        /// The repository's git URL (with a scheme --allow-scheme allows): each server
        /// process keeps a bare clone of it in its state directory and fetches it before
        /// each index.
        #[arg(long)]
        url: Option<String>,
    },
    /// Unregister a repository: delete its tokens and its store.
    Remove {
        /// The repository's name.
        name: String,
    },
    /// List the registered repositories.
    List,
}

/// `ctxpack serve token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it (once: only its digest is kept).
    Create {
        /// The registered repository it grants access to.
        #[arg(long)]
        repo: String,
        /// read (packs, queries, snapshots, ledger), write (also indexing) or admin.
        #[arg(long, default_value = "read", value_parser = ["read", "write", "admin"])]
        scope: String,
        /// A unique name, recorded in the ledger with every pack the token asks for.
        #[arg(long)]
        name: String,
        /// Expire after this long: a number with s, m, h, d or w (30d, 12h) [default: never].
        #[arg(long, value_parser = parse_duration)]
        expires: Option<u64>,
    },
    /// List tokens (never their secrets).
    List,
    /// Revoke a token by name: refused from the next request on.
    Revoke {
        /// The token's name.
        name: String,
    },
}

impl ServeArgs {
    fn state_dir(&self) -> Result<PathBuf, Error> {
        if let Some(state) = &self.state {
            return Ok(state.clone());
        }
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state"))
            })
            .ok_or_else(|| {
                Error::invalid_field("state", "neither XDG_STATE_HOME nor HOME is set")
            })?;
        Ok(base.join("ctxpack").join("server"))
    }

    /// The registry: in the database when one is named, else in the state directory
    /// (created when `create` is set).
    fn registry(&self, state: &Path, create: bool) -> Result<ServerRegistry, Error> {
        let url = self.database.clone().or_else(|| {
            std::env::var("CTXPACK_DATABASE")
                .ok()
                .filter(|u| !u.is_empty())
        });
        let registry = match url {
            Some(url) => {
                ServerRegistry::open_database(&url, state).map_err(|e| e.with_field("database"))
            }
            None => ServerRegistry::open(state, create),
        }?;
        if self.schemes.is_empty() {
            Ok(registry)
        } else {
            registry.with_schemes(self.schemes.clone())
        }
    }
}

/// `30d`, `12h`, `90m`, `45s` in seconds ([`ctxpack_api::parse_duration`]), more than none.
fn parse_duration(s: &str) -> Result<u64, String> {
    ctxpack_api::parse_duration(s)
        .filter(|seconds| *seconds > 0)
        .ok_or_else(|| {
            format!("`{s}` is not a duration: give a positive number with s, m, h, d or w")
        })
}

/// Runs `ctxpack serve` or one of its registry commands.
pub fn run(args: &ServeArgs) -> Result<String, Error> {
    let state = args.state_dir()?;
    match &args.command {
        Some(ServeCommand::Repo(command)) => repo(args, &state, command),
        Some(ServeCommand::Token(command)) => token(&args.registry(&state, false)?, command),
        None => serve(args, &state),
    }
}

fn json_line(value: &impl serde::Serialize) -> String {
    format!(
        "{}\n",
        serde_json::to_string(value).expect("registry rows serialize")
    )
}

fn repo(args: &ServeArgs, state: &Path, command: &RepoCommand) -> Result<String, Error> {
    match command {
        RepoCommand::Add { name, path, url } => {
            let registry = args.registry(state, true)?;
            let info = match (path, url) {
                (_, Some(url)) => registry.add_repo_url(name, url)?,
                (Some(path), None) => registry.add_repo(name, path)?,
                (None, None) => return Err(Error::invalid("give a PATH or --url")),
            };
            Ok(json_line(&info))
        }
        RepoCommand::Remove { name } => {
            args.registry(state, false)?.remove_repo(name)?;
            Ok(String::new())
        }
        RepoCommand::List => Ok(json_line(&args.registry(state, false)?.repos()?)),
    }
}

fn token(registry: &ServerRegistry, command: &TokenCommand) -> Result<String, Error> {
    match command {
        TokenCommand::Create {
            repo,
            scope,
            name,
            expires,
        } => {
            let token = registry.create_token(&TokenRequest {
                name: name.clone(),
                repo: repo.clone(),
                scope: Scope::parse(scope).unwrap_or(Scope::Read),
                expires_in: *expires,
            })?;
            note(&format!(
                "token `{}` for `{}` at scope {}: shown once, keep it secret\n",
                token.info.name, token.info.repo, token.info.scope
            ));
            Ok(format!("{}\n", token.secret))
        }
        TokenCommand::List => Ok(json_line(&registry.tokens()?)),
        TokenCommand::Revoke { name } => {
            registry.revoke_token(name)?;
            Ok(String::new())
        }
    }
}

/// Everything a request handler needs, shared by every request.
pub(crate) struct App {
    pub(crate) access: Arc<Access>,
    pub(crate) metrics: metrics::Metrics,
    pub(crate) max_body_bytes: usize,
    /// How long a request's body may take to arrive once its headers have, and how much longer
    /// as its bytes come.
    pub(crate) body_pace: listen::BodyPace,
}

fn serve(args: &ServeArgs, state: &Path) -> Result<String, Error> {
    if args.roots.is_empty() {
        return Err(Error::invalid_field(
            "root",
            "no root is allowed: give --root DIR for each directory whose repositories the server may serve",
        ));
    }
    let mut roots = Vec::new();
    for root in &args.roots {
        roots.push(
            root.canonicalize()
                .map_err(|e| Error::invalid_field("root", format!("{}: {e}", root.display())))?,
        );
    }
    if args.rate_limit == 0 {
        return Err(Error::invalid_field("rate_limit", "must be at least 1"));
    }
    if args.ledger_quota == 0 {
        return Err(Error::invalid_field("ledger_quota", "must be at least 1"));
    }
    let limits = limits(args)?;
    // A rate under 1 KiB a second would let one 4 MiB body hold a connection for hours.
    if (1..MIN_BODY_RATE).contains(&args.body_min_rate) {
        return Err(Error::invalid_field(
            "body_min_rate",
            format!(
                "must be 0 (the whole body within --body-timeout) or at least {MIN_BODY_RATE} bytes a second"
            ),
        ));
    }
    let body_pace = listen::BodyPace {
        timeout: timeout("body_timeout", args.body_timeout)?,
        min_rate: args.body_min_rate,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(crate::tls::server_config(cert, key)?),
        _ => None,
    };
    let report = crate::web::ui::read_report(args.eval_report.as_ref())?;
    init_logs(&args.log_format);
    let app = Arc::new(App {
        access: Arc::new(Access {
            registry: args
                .registry(state, true)?
                .with_ledger_quota(args.ledger_quota),
            roots,
            limiter: Limiter::new(args.rate_limit),
        }),
        metrics: metrics::Metrics::default(),
        max_body_bytes: args.max_body_bytes,
        body_pace,
    });
    let runtime = runtime()?;
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    hosts.extend(args.hosts.iter().cloned());
    let mcp = mcp::service(app.clone(), &hosts, &args.origins, args.max_body_bytes);
    let web = Arc::new(crate::web::Web::new(
        crate::web::Site::Server(app.access.clone()),
        args.origins.clone(),
        report,
        tls.is_some(),
    ));
    // The last reference is dropped here, outside the runtime: a database client closes its
    // connection by blocking, which a runtime's own threads may not do.
    let keep = app.clone();
    let router = http::router(app, mcp, crate::web::router(web));
    let served = runtime.block_on(async {
        let (listener, local) = bind(args.listen).await?;
        // The first line on stderr says where to connect (port 0 picks a free port).
        let scheme = if tls.is_some() { "https" } else { "http" };
        note(&format!("ctxpack serve: listening on {scheme}://{local}\n"));
        tracing::info!(address = %local, scheme, "listening");
        let tls = tls.map(tokio_rustls::TlsAcceptor::from);
        // The signal starts the graceful shutdown, and the deadline on it.
        listen::serve(listener, tls, router, limits, shutdown()).await;
        Ok::<(), Error>(())
    });
    // In-flight requests have finished; blocking work still running gets a moment to end.
    runtime.shutdown_timeout(Duration::from_secs(5));
    drop(keep);
    served?;
    tracing::info!("stopped");
    Ok(String::new())
}

/// The longest timeout a flag may set: a day is far beyond any request, and keeps deadlines
/// well inside what a clock can add.
const MAX_TIMEOUT_SECONDS: u64 = 86_400;

/// The most connections `--max-connections` may allow: far beyond any open-file limit.
const MAX_CONNECTIONS: usize = 1 << 20;

/// The lowest `--body-min-rate` other than 0, in bytes a second.
const MIN_BODY_RATE: u64 = 1024;

/// `seconds` of the flag `field` as a timeout: 1 to [`MAX_TIMEOUT_SECONDS`].
fn timeout(field: &str, seconds: u64) -> Result<Duration, Error> {
    if !(1..=MAX_TIMEOUT_SECONDS).contains(&seconds) {
        return Err(Error::invalid_field(
            field,
            format!("must be 1 to {MAX_TIMEOUT_SECONDS} seconds"),
        ));
    }
    Ok(Duration::from_secs(seconds))
}

/// The connection limits the flags set, checked.
fn limits(args: &ServeArgs) -> Result<listen::Limits, Error> {
    if !(1..=MAX_CONNECTIONS).contains(&args.max_connections) {
        return Err(Error::invalid_field(
            "max_connections",
            format!("must be 1 to {MAX_CONNECTIONS}"),
        ));
    }
    if args.max_connections_per_ip == 0 {
        return Err(Error::invalid_field(
            "max_connections_per_ip",
            "must be at least 1",
        ));
    }
    Ok(listen::Limits {
        header_timeout: timeout("header_timeout", args.header_timeout)?,
        max_connections: args.max_connections,
        max_connections_per_ip: args.max_connections_per_ip,
        shutdown_timeout: Duration::from_secs(args.shutdown_timeout),
    })
}

/// Resolves on SIGINT or SIGTERM: the server stops accepting and finishes in-flight requests.
async fn shutdown() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

fn init_logs(format: &str) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_max_level(tracing::Level::INFO);
    // A second server in one process (tests) keeps the first subscriber.
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d"), Ok(30 * 86_400));
        assert_eq!(parse_duration("12h"), Ok(12 * 3600));
        assert_eq!(parse_duration("90m"), Ok(5400));
        assert_eq!(parse_duration("45s"), Ok(45));
        assert_eq!(parse_duration("2w"), Ok(2 * 604_800));
        for bad in ["", "d", "0d", "-1d", "5", "5é", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
