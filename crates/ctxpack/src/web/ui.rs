//! `ctxpack ui`: the web view over the local store, on a loopback address, for one run.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use ctxpack_api::Error;
use ctxpack_api::server::random_secret;

use super::pages::Report;
use super::{Site, Web};
use crate::args::Location;
use crate::output::note;

/// Options of `ctxpack ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// The loopback address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Show the charts of this evaluation report (`ctxpack eval … --format json`).
    #[arg(long, value_name = "FILE")]
    pub eval_report: Option<PathBuf>,
    /// Do not open a browser: only print the address.
    #[arg(long)]
    pub no_open: bool,
    /// Which repository and store.
    #[command(flatten)]
    pub location: Location,
}

/// Reads an evaluation report for the quality page.
pub(crate) fn read_report(path: Option<&PathBuf>) -> Result<Option<Report>, Error> {
    let Some(path) = path else { return Ok(None) };
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io(path, &e).with_field("eval_report"))?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Error::invalid_field(
            "eval_report",
            format!("{} is not an evaluation report: {e}", path.display()),
        )
    })
}

/// Serves the web view until interrupted.
pub fn run(args: &UiArgs) -> Result<String, Error> {
    if !args.listen.ip().is_loopback() {
        return Err(Error::invalid_field(
            "listen",
            "ctxpack ui serves one person on this machine: give a loopback address (127.0.0.1 or ::1); a team uses `ctxpack serve`",
        ));
    }
    let workspace = args.location.workspace()?.with_caller("ui");
    let root = workspace.repo_root().ok_or_else(|| {
        Error::invalid_field(
            "cwd",
            "ctxpack ui shows a repository's ledger: run it inside one",
        )
    })?;
    let repo: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let repo = if repo.is_empty() || repo.starts_with('.') {
        "repo".to_owned()
    } else {
        repo
    };
    let report = read_report(args.eval_report.as_ref())?;
    let secret = random_secret()?;
    crate::host::runtime()?.block_on(async {
        let (listener, local) = crate::host::bind(args.listen).await?;
        let port = local.port();
        let mut origins = vec![format!("http://localhost:{port}")];
        origins.push(match local {
            SocketAddr::V4(a) => format!("http://{}:{port}", a.ip()),
            SocketAddr::V6(a) => format!("http://[{}]:{port}", a.ip()),
        });
        let address = format!("{}/ui/?secret={secret}", origins[1]);
        let web = Arc::new(Web::new(
            Site::Local(Box::new(super::Local {
                workspace,
                repo,
                secret: std::sync::Mutex::new(Some(secret)),
                origins,
            })),
            Vec::new(),
            report,
            false,
        ));
        let router = super::router(web).layer(axum::extract::DefaultBodyLimit::max(1 << 20));
        note(&format!("ctxpack ui: open {address}\n"));
        if !args.no_open {
            open_browser(&address);
        }
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| Error::internal(format!("the web view failed: {e}")))
    })?;
    Ok(String::new())
}

/// Opens `address` in the user's browser when one is at hand; the address is printed either
/// way.
fn open_browser(address: &str) {
    let opener = std::env::var_os("BROWSER").map(PathBuf::from).or_else(|| {
        ["xdg-open", "open"]
            .iter()
            .map(PathBuf::from)
            .find(|p| which(p))
    });
    if let Some(opener) = opener {
        let _ = std::process::Command::new(opener)
            .arg(address)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

fn which(program: &std::path::Path) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}
