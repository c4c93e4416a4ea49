//! Configuration: defaults for ctxpack's options from a repository's `ctxpack.toml`, the
//! user's own `config.toml` and `CTXPACK_*` environment variables, each value kept with where
//! it came from.
//!
//! Precedence, highest first: flags (a front end records what its caller gave explicitly as
//! [`Source::Flag`] settings), the environment, the repository file, the user file, and
//! last the request types' `Default` impls — never restated here: a key that no level sets
//! leaves the request as the caller built it.
//!
//! A repository file arrives with a cloned repository, so it is untrusted. It may set only
//! how packs are ranked and presented ([`Key::repository_may_set`]: budget, meter, selector,
//! pool size, include and exclude globs, format, view); a repository file that sets where the
//! store is or whether plans may run commands is refused with an error naming the key and the
//! file, never silently ignored. It is read only from a regular file at the repository root,
//! never through a symbolic link, and no configuration file is read past
//! [`MAX_CONFIG_BYTES`].
//!
//! ```
//! use std::collections::BTreeMap;
//!
//! use ctxpack_api::SnapshotPackRequest;
//! use ctxpack_api::config::{Config, ConfigOptions, Flags, Source};
//!
//! let dir = tempfile::tempdir()?;
//! let user = dir.path().join("config.toml");
//! std::fs::write(&user, "budget = \"8k\"\nmeter = \"o200k\"\n")?;
//! let config = Config::load(&ConfigOptions {
//!     cwd: dir.path().to_owned(),
//!     user_file: Some(user.clone()),
//!     environment: BTreeMap::from([("CTXPACK_METER".into(), "chars".into())]),
//!     // A flag the caller gave beats every file and variable.
//!     flags: Flags {
//!         selector: Some("prefix".parse()?),
//!         ..Flags::default()
//!     },
//!     ..ConfigOptions::default()
//! })?;
//!
//! let request = config.apply_pack(SnapshotPackRequest::default());
//! assert_eq!(request.budget.get(), 8000);
//! assert_eq!(request.meter.name(), "chars");
//! assert_eq!(request.selector.name(), "prefix");
//! assert_eq!(config.budget.map(|s| s.source), Some(Source::User(user)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use ctxpack_core::{Budget, Format, Meter, RenderOptions, Selector, ValueError, View};
use ctxpack_index::git::Repo;
use serde_json::{Value as Json, json};

use crate::error::{Error, Hint, Result};
use crate::plan::PlanRunRequest;
use crate::snapshot::SnapshotPackRequest;

mod keys;
mod read;
pub(crate) mod report;

pub use keys::{Key, Source};
use read::*;
pub use report::*;

/// The repository file's name, at the root of the repository's working tree.
pub const REPOSITORY_FILE: &str = "ctxpack.toml";

/// The most a configuration file may hold: 64 KiB (a configuration is a few lines).
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// A value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Setting<T> {
    /// A value the caller gave explicitly (a flag), which beats every other level.
    pub fn flag(value: T) -> Setting<T> {
        Setting {
            value,
            source: Source::Flag,
        }
    }
}

/// Where to look for configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigOptions {
    /// A path inside the repository whose `ctxpack.toml` is read (default `.`); outside a
    /// repository no repository file is read.
    pub cwd: PathBuf,
    /// The user file (see [`user_file`]); `None` reads none.
    pub user_file: Option<PathBuf>,
    /// The home directory, which a `store` of `~/…` in the user file is relative to.
    pub home: Option<PathBuf>,
    /// Environment variables. Only the `CTXPACK_*` variables of [`Key::variable`] are read;
    /// an empty one counts as unset.
    pub environment: BTreeMap<String, OsString>,
    /// What the caller was given explicitly (a front end's flags), which beats every other
    /// level.
    pub flags: Flags,
}

/// The values a front end parsed from its own flags, each one given beating every file and
/// variable (its source is [`Source::Flag`]). A front end passes them to [`Config::load`] (or
/// [`Config::from_flags`], which reads nothing else) instead of layering them itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `--budget`.
    pub budget: Option<Budget>,
    /// `--meter`.
    pub meter: Option<Meter>,
    /// `--selector`.
    pub selector: Option<Selector>,
    /// `--top-k`.
    pub top_k: Option<usize>,
    /// `--include` (replaces the configured globs when given).
    pub include: Option<Vec<String>>,
    /// `--exclude` (replaces the configured globs when given).
    pub exclude: Option<Vec<String>>,
    /// `--format`.
    pub format: Option<Format>,
    /// `--view`.
    pub view: Option<View>,
    /// `--pretty`.
    pub pretty: Option<bool>,
    /// `--store`.
    pub store: Option<PathBuf>,
    /// `--allow-run`.
    pub allow_run: Option<bool>,
    /// `--run-timeout`, in seconds.
    pub run_timeout_secs: Option<u64>,
    /// `--run-max-output`, in bytes.
    pub run_max_output: Option<usize>,
}

impl Default for ConfigOptions {
    fn default() -> Self {
        ConfigOptions {
            cwd: PathBuf::from("."),
            user_file: None,
            home: None,
            environment: BTreeMap::new(),
            flags: Flags::default(),
        }
    }
}

impl ConfigOptions {
    /// This process's configuration for `cwd`: the user file under `$XDG_CONFIG_HOME` or
    /// `$HOME`, and the process's `CTXPACK_*` variables.
    pub fn from_process(cwd: impl Into<PathBuf>) -> ConfigOptions {
        let home = std::env::var_os("HOME");
        ConfigOptions {
            cwd: cwd.into(),
            user_file: user_file(
                std::env::var_os("XDG_CONFIG_HOME").as_deref(),
                home.as_deref(),
            ),
            home: home.filter(|h| !h.is_empty()).map(PathBuf::from),
            environment: Key::ALL
                .into_iter()
                .filter_map(|k| Some((k.variable().to_owned(), std::env::var_os(k.variable())?)))
                .collect(),
            flags: Flags::default(),
        }
    }
}

/// The user file: `$XDG_CONFIG_HOME/ctxpack/config.toml` when that variable is an absolute
/// path, otherwise `$HOME/.config/ctxpack/config.toml`; `None` when neither is known.
pub fn user_file(xdg_config_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    fn absolute(dir: Option<&OsStr>) -> Option<&Path> {
        dir.map(Path::new).filter(|d| d.is_absolute())
    }
    absolute(xdg_config_home)
        .map(Path::to_owned)
        .or_else(|| absolute(home).map(|h| h.join(".config")))
        .map(|dir| dir.join("ctxpack").join("config.toml"))
}

/// The configuration: every key some level set, with its source.
///
/// Load it with [`Config::load`] (the caller's flags among its sources), then apply it to the
/// request a command starts from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// The budget of `pack`.
    pub budget: Option<Setting<Budget>>,
    /// The meter of `pack`.
    pub meter: Option<Setting<Meter>>,
    /// The selector of `pack`.
    pub selector: Option<Setting<Selector>>,
    /// How many retrieval candidates `pack` offers to selection.
    pub top_k: Option<Setting<usize>>,
    /// Globs a packed file's path must match one of (they replace the request's).
    pub include: Option<Setting<Vec<String>>>,
    /// Globs that leave files out (they replace the request's).
    pub exclude: Option<Setting<Vec<String>>>,
    /// The output format.
    pub format: Option<Setting<Format>>,
    /// The view.
    pub view: Option<Setting<View>>,
    /// Whether JSON is pretty-printed.
    pub pretty: Option<Setting<bool>>,
    /// The store directory (never from a repository file).
    pub store: Option<Setting<PathBuf>>,
    /// Whether a plan's `run(…)` may start commands (never from a repository file).
    pub allow_run: Option<Setting<bool>>,
    /// Seconds a plan's `run` command may take (never from a repository file).
    pub run_timeout_secs: Option<Setting<u64>>,
    /// Bytes of output a plan's `run` command may produce (never from a repository file).
    pub run_max_output: Option<Setting<usize>>,
    /// The files that were looked for.
    pub files: ConfigFiles,
}

/// A raw value: from a file or from a variable.
#[derive(Clone, Copy)]
enum Raw<'a> {
    Toml(&'a toml::Value),
    Text(&'a str),
}

impl Config {
    /// Reads the user file, the repository file (when `options.cwd` is in a repository's
    /// working tree) and the environment. Missing files are fine; anything wrong in one that
    /// exists is invalid input naming the file and the key.
    pub fn load(options: &ConfigOptions) -> Result<Config> {
        let mut config = Config::default();
        if let Some(path) = &options.user_file {
            let text = read_config(path, false)?;
            if let Some(text) = &text {
                config.layer_file(text, &Source::User(path.clone()), options)?;
            }
            config.files.user = Some(ConfigFile {
                path: path.clone(),
                found: text.is_some(),
            });
        }
        if let Some(root) = repository_root(&options.cwd)? {
            let path = root.join(REPOSITORY_FILE);
            let text = read_config(&path, true)?;
            if let Some(text) = &text {
                config.layer_file(text, &Source::Repository(path.clone()), options)?;
            }
            config.files.repository = Some(ConfigFile {
                path,
                found: text.is_some(),
            });
        }
        config.layer_environment(options)?;
        config.layer_flags(&options.flags);
        Ok(config)
    }

    /// The configuration of `flags` alone: no file or variable is read (what `context pack`
    /// takes, as its contract says).
    pub fn from_flags(flags: &Flags) -> Config {
        let mut config = Config::default();
        config.layer_flags(flags);
        config
    }

    /// Sets every key `flags` gives, over whatever another level set.
    fn layer_flags(&mut self, flags: &Flags) {
        fn given<T: Clone>(slot: &mut Option<Setting<T>>, value: Option<&T>) {
            if let Some(value) = value {
                *slot = Some(Setting::flag(value.clone()));
            }
        }
        given(&mut self.budget, flags.budget.as_ref());
        given(&mut self.meter, flags.meter.as_ref());
        given(&mut self.selector, flags.selector.as_ref());
        given(&mut self.top_k, flags.top_k.as_ref());
        given(&mut self.include, flags.include.as_ref());
        given(&mut self.exclude, flags.exclude.as_ref());
        given(&mut self.format, flags.format.as_ref());
        given(&mut self.view, flags.view.as_ref());
        given(&mut self.pretty, flags.pretty.as_ref());
        given(&mut self.store, flags.store.as_ref());
        given(&mut self.allow_run, flags.allow_run.as_ref());
        given(&mut self.run_timeout_secs, flags.run_timeout_secs.as_ref());
        given(&mut self.run_max_output, flags.run_max_output.as_ref());
    }

    /// Sets every key a file names; a repository file may name only the keys
    /// [`Key::repository_may_set`].
    fn layer_file(&mut self, text: &str, source: &Source, options: &ConfigOptions) -> Result<()> {
        let path = source.origin().unwrap_or_default();
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| file_error(&path, syntax(&e, text), None))?;
        for (name, value) in &table {
            let Some(key) = Key::parse(name) else {
                return Err(unknown_key(&path, name, value));
            };
            if matches!(source, Source::Repository(_)) && !key.repository_may_set() {
                return Err(untrusted(&path, name, key, options));
            }
            self.set(key, Raw::Toml(value), source.clone(), options)
                .map_err(|why| file_error(&path, format!("`{name}` {why}"), None))?;
        }
        Ok(())
    }

    /// Sets every key whose variable is set and not empty.
    fn layer_environment(&mut self, options: &ConfigOptions) -> Result<()> {
        for key in Key::ALL {
            let variable = key.variable();
            let Some(raw) = options.environment.get(variable) else {
                continue;
            };
            let invalid = |why: String| {
                Error::invalid(format!("the environment variable {variable} {why}"))
                    .with_hint(Hint::Advice(format!("correct or unset {variable}")))
            };
            let Some(text) = raw.to_str() else {
                return Err(invalid("is not UTF-8".into()));
            };
            if text.trim().is_empty() {
                continue;
            }
            self.set(
                key,
                Raw::Text(text),
                Source::Environment(variable.to_owned()),
                options,
            )
            .map_err(invalid)?;
        }
        Ok(())
    }

    /// Sets `key` from a raw value; the error says what is wrong with the value.
    fn set(
        &mut self,
        key: Key,
        raw: Raw<'_>,
        source: Source,
        options: &ConfigOptions,
    ) -> std::result::Result<(), String> {
        fn put<T>(slot: &mut Option<Setting<T>>, value: T, source: Source) {
            *slot = Some(Setting { value, source });
        }
        match key {
            Key::Budget => put(&mut self.budget, budget(raw)?, source),
            Key::Meter => put(&mut self.meter, named(raw)?, source),
            Key::Selector => put(&mut self.selector, named(raw)?, source),
            Key::TopK => put(&mut self.top_k, count(raw, 1, usize::MAX)?, source),
            Key::Include => put(&mut self.include, globs(raw)?, source),
            Key::Exclude => put(&mut self.exclude, globs(raw)?, source),
            Key::Format => put(&mut self.format, named(raw)?, source),
            Key::View => put(&mut self.view, named(raw)?, source),
            Key::Pretty => put(&mut self.pretty, boolean(raw)?, source),
            Key::Store => {
                let path = store(raw, &source, options)?;
                put(&mut self.store, path, source);
            }
            Key::AllowRun => put(&mut self.allow_run, boolean(raw)?, source),
            Key::RunTimeout => {
                let max = usize::try_from(PlanRunRequest::MAX_TIMEOUT_SECS).unwrap_or(usize::MAX);
                put(
                    &mut self.run_timeout_secs,
                    count(raw, 1, max)? as u64,
                    source,
                );
            }
            Key::RunMaxOutput => put(&mut self.run_max_output, count(raw, 0, usize::MAX)?, source),
        }
        Ok(())
    }

    /// Where `key`'s value came from, when some level set it.
    pub fn source(&self, key: Key) -> Option<&Source> {
        fn of<T>(slot: &Option<Setting<T>>) -> Option<&Source> {
            slot.as_ref().map(|s| &s.source)
        }
        match key {
            Key::Budget => of(&self.budget),
            Key::Meter => of(&self.meter),
            Key::Selector => of(&self.selector),
            Key::TopK => of(&self.top_k),
            Key::Include => of(&self.include),
            Key::Exclude => of(&self.exclude),
            Key::Format => of(&self.format),
            Key::View => of(&self.view),
            Key::Pretty => of(&self.pretty),
            Key::Store => of(&self.store),
            Key::AllowRun => of(&self.allow_run),
            Key::RunTimeout => of(&self.run_timeout_secs),
            Key::RunMaxOutput => of(&self.run_max_output),
        }
    }

    /// `request` with every pack key that some level set; the rest is left as it is.
    pub fn apply_pack(&self, request: SnapshotPackRequest) -> SnapshotPackRequest {
        let mut request = request;
        if let Some(s) = &self.budget {
            request.budget = s.value;
        }
        if let Some(s) = &self.meter {
            request.meter = s.value;
        }
        if let Some(s) = &self.selector {
            request.selector = s.value;
        }
        if let Some(s) = &self.top_k {
            request.top_k = s.value.into();
        }
        if let Some(s) = &self.include {
            request.include.clone_from(&s.value);
        }
        if let Some(s) = &self.exclude {
            request.exclude.clone_from(&s.value);
        }
        request
    }

    /// `options` with the format, view and pretty-printing that some level set.
    pub fn apply_render(&self, options: RenderOptions) -> RenderOptions {
        RenderOptions {
            format: self.format.as_ref().map_or(options.format, |s| s.value),
            view: self.view.as_ref().map_or(options.view, |s| s.value),
            pretty: self.pretty.as_ref().map_or(options.pretty, |s| s.value),
        }
    }

    /// `request` with the plan-run keys that some level set.
    pub fn apply_plan(&self, request: PlanRunRequest) -> PlanRunRequest {
        PlanRunRequest {
            allow_run: self
                .allow_run
                .as_ref()
                .map_or(request.allow_run, |s| s.value),
            run_timeout_secs: self
                .run_timeout_secs
                .as_ref()
                .map_or(request.run_timeout_secs, |s| s.value),
            run_max_output: self
                .run_max_output
                .as_ref()
                .map_or(request.run_max_output, |s| s.value),
        }
    }

    /// The store directory some level set; `None` leaves the workspace's default.
    pub fn store_dir(&self) -> Option<&Path> {
        self.store.as_ref().map(|s| s.value.as_path())
    }

    /// Every key's effective value and source, once applied to the requests a command starts
    /// from (`pack`, `rendering`, `plan`: usually their defaults, or a preset).
    pub fn effective(
        &self,
        pack: &SnapshotPackRequest,
        rendering: &RenderOptions,
        plan: &PlanRunRequest,
    ) -> EffectiveConfig {
        let pack = self.apply_pack(pack.clone());
        let rendering = self.apply_render(*rendering);
        let plan = self.apply_plan(plan.clone());
        let settings = Key::ALL
            .into_iter()
            .map(|key| {
                let value = match key {
                    Key::Budget => json!(pack.budget.get()),
                    Key::Meter => json!(pack.meter.name()),
                    Key::Selector => json!(pack.selector.name()),
                    Key::TopK => json!(pack.top_k),
                    Key::Include => json!(pack.include),
                    Key::Exclude => json!(pack.exclude),
                    Key::Format => json!(rendering.format.name()),
                    Key::View => json!(rendering.view.name()),
                    Key::Pretty => json!(rendering.pretty),
                    Key::Store => self
                        .store_dir()
                        .map_or(Json::Null, |p| json!(p.to_string_lossy())),
                    Key::AllowRun => json!(plan.allow_run),
                    Key::RunTimeout => json!(plan.run_timeout_secs),
                    Key::RunMaxOutput => json!(plan.run_max_output),
                };
                EffectiveSetting {
                    key: key.name().to_owned(),
                    value,
                    source: self.source(key).cloned().unwrap_or(Source::Default),
                }
            })
            .collect();
        EffectiveConfig { settings }
    }

    /// What `ctxpack config` shows: the files looked for, and [`Config::effective`].
    pub fn report(
        &self,
        pack: &SnapshotPackRequest,
        rendering: &RenderOptions,
        plan: &PlanRunRequest,
    ) -> ConfigReport {
        ConfigReport {
            files: self.files.clone(),
            settings: self.effective(pack, rendering, plan),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_take_thousands_and_millions() {
        let cases = [
            ("8000", Some(8000)),
            ("8k", Some(8000)),
            ("8K", Some(8000)),
            (" 1.5k ", Some(1500)),
            ("2m", Some(2_000_000)),
            ("0.001k", Some(1)),
            ("0k", None),
            ("1.0001k", None),
            ("-8k", None),
            ("k", None),
            ("8kb", None),
            ("eightk", None),
            ("99999999999999999k", None),
        ];
        for (text, expected) in cases {
            assert_eq!(
                Budget::parse_suffixed(text).ok().map(Budget::get),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn typos_find_their_key() {
        let names: Vec<&str> = Key::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(closest("budjet", &names), Some("budget"));
        assert_eq!(closest("top-k", &names), Some("top_k"));
        assert_eq!(closest("selecter", &names), Some("selector"));
        assert_eq!(closest("colour", &names), None);
    }
}
