//! `ctxpack config`: the effective configuration, and where each value came from.

use std::path::Path;

use clap::Args;
use ctxpack_api::config::{Config, ConfigOptions, EffectiveConfig, Flags};
use ctxpack_api::plan::PlanRunRequest;
use ctxpack_api::{Access, Error, RenderOptions, SnapshotPackRequest, Workspace, WorkspaceOptions};

use crate::args::Location;

/// Options of `ctxpack config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Which repository (its `ctxpack.toml`) and store.
    #[command(flatten)]
    pub location: Location,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Runs `ctxpack config`: every key's effective value for `pack` and `plan run`, with its
/// source (flag, environment, repository, user or default) and the files looked for.
pub fn run(args: &ConfigArgs) -> Result<String, Error> {
    let report = load(&args.location, Flags::default())?.report(
        &SnapshotPackRequest::default(),
        &RenderOptions::default(),
        &PlanRunRequest::default(),
    );
    if args.format == "json" {
        return Ok(format!("{}\n", report.to_json()));
    }
    Ok(report.to_string())
}

/// The configuration of a command run in `location`, resolved by the API in one call: the
/// user file, the repository's `ctxpack.toml`, the `CTXPACK_*` variables, and the command's
/// `flags` with `--store` among them, each flag given beating every other level.
pub fn load(location: &Location, flags: Flags) -> Result<Config, Error> {
    Config::load(&ConfigOptions {
        flags: with_store(location, flags),
        ..ConfigOptions::from_process(&location.cwd)
    })
}

/// `flags` with the `--store` of `location`.
pub fn with_store(location: &Location, flags: Flags) -> Flags {
    Flags {
        store: location.store.clone(),
        ..flags
    }
}

/// The read-write workspace of `location` with the configured store, recording `effective`
/// with every pack it builds.
pub fn workspace(
    location: &Location,
    config: &Config,
    effective: EffectiveConfig,
) -> Result<Workspace, Error> {
    let workspace = Workspace::open(WorkspaceOptions {
        cwd: location.cwd.clone(),
        store: config.store_dir().map(Path::to_owned),
        access: Access::ReadWrite,
        caller: None,
    })?;
    Ok(workspace.with_config(effective))
}
