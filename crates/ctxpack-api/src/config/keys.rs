//! The configuration's keys (what may be set, under which names) and the sources a value
//! comes from.

use std::fmt;
use std::path::PathBuf;

/// A configuration key: one name in a file, one `CTXPACK_*` variable, one flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// The budget of `pack` (an integer, or a string such as `"8k"`).
    Budget,
    /// The meter of `pack`.
    Meter,
    /// The selector of `pack`.
    Selector,
    /// How many retrieval candidates `pack` offers to selection.
    TopK,
    /// The globs a packed file's path must match one of.
    Include,
    /// The globs that leave a file out of a pack.
    Exclude,
    /// The output format of a pack.
    Format,
    /// The view of a pack.
    View,
    /// Whether JSON is pretty-printed.
    Pretty,
    /// The store directory.
    Store,
    /// Whether a plan's `run(…)` may start commands.
    AllowRun,
    /// Seconds a plan's `run` command may take.
    RunTimeout,
    /// Bytes of output a plan's `run` command may produce.
    RunMaxOutput,
}

impl Key {
    /// Every key, in the order `ctxpack config` lists them.
    pub const ALL: [Key; 13] = [
        Key::Budget,
        Key::Meter,
        Key::Selector,
        Key::TopK,
        Key::Include,
        Key::Exclude,
        Key::Format,
        Key::View,
        Key::Pretty,
        Key::Store,
        Key::AllowRun,
        Key::RunTimeout,
        Key::RunMaxOutput,
    ];

    /// The name in a configuration file: the flag's name with `_` for `-` (files accept either).
    pub fn name(self) -> &'static str {
        match self {
            Key::Budget => "budget",
            Key::Meter => "meter",
            Key::Selector => "selector",
            Key::TopK => "top_k",
            Key::Include => "include",
            Key::Exclude => "exclude",
            Key::Format => "format",
            Key::View => "view",
            Key::Pretty => "pretty",
            Key::Store => "store",
            Key::AllowRun => "allow_run",
            Key::RunTimeout => "run_timeout",
            Key::RunMaxOutput => "run_max_output",
        }
    }

    /// The environment variable that sets it: `CTXPACK_` and the name in capitals.
    pub fn variable(self) -> &'static str {
        match self {
            Key::Budget => "CTXPACK_BUDGET",
            Key::Meter => "CTXPACK_METER",
            Key::Selector => "CTXPACK_SELECTOR",
            Key::TopK => "CTXPACK_TOP_K",
            Key::Include => "CTXPACK_INCLUDE",
            Key::Exclude => "CTXPACK_EXCLUDE",
            Key::Format => "CTXPACK_FORMAT",
            Key::View => "CTXPACK_VIEW",
            Key::Pretty => "CTXPACK_PRETTY",
            Key::Store => "CTXPACK_STORE",
            Key::AllowRun => "CTXPACK_ALLOW_RUN",
            Key::RunTimeout => "CTXPACK_RUN_TIMEOUT",
            Key::RunMaxOutput => "CTXPACK_RUN_MAX_OUTPUT",
        }
    }

    /// Whether a repository's `ctxpack.toml` may set it: only ranking and presentation keys.
    /// Where ctxpack writes and what it runs are the user's to say.
    pub fn repository_may_set(self) -> bool {
        !matches!(
            self,
            Key::Store | Key::AllowRun | Key::RunTimeout | Key::RunMaxOutput
        )
    }

    /// Whether it concerns plan runs only (not the packs of `pack`).
    pub fn is_plan_key(self) -> bool {
        matches!(self, Key::AllowRun | Key::RunTimeout | Key::RunMaxOutput)
    }

    /// The key a file names: `top-k` and `top_k` are the same key.
    pub fn parse(name: &str) -> Option<Key> {
        let name = name.replace('-', "_");
        Key::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a setting's value came from, highest precedence first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Given explicitly by the caller: a flag, a payload field, a tool argument.
    Flag,
    /// The named `CTXPACK_*` environment variable.
    Environment(String),
    /// The repository's `ctxpack.toml` at this path.
    Repository(PathBuf),
    /// The user's configuration file at this path.
    User(PathBuf),
    /// Nothing set it: the request type's default.
    Default,
}

impl Source {
    /// `flag`, `environment`, `repository`, `user` or `default`.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Environment(_) => "environment",
            Source::Repository(_) => "repository",
            Source::User(_) => "user",
            Source::Default => "default",
        }
    }

    /// The variable or the file, for the sources that have one.
    pub fn origin(&self) -> Option<String> {
        match self {
            Source::Environment(variable) => Some(variable.clone()),
            Source::Repository(path) | Source::User(path) => {
                Some(path.to_string_lossy().into_owned())
            }
            Source::Flag | Source::Default => None,
        }
    }

    /// The source a [`name`](Source::name) and [`origin`](Source::origin) describe.
    pub fn from_parts(name: &str, origin: Option<&str>) -> Option<Source> {
        match (name, origin) {
            ("flag", None) => Some(Source::Flag),
            ("default", None) => Some(Source::Default),
            ("environment", Some(variable)) => Some(Source::Environment(variable.to_owned())),
            ("repository", Some(path)) => Some(Source::Repository(path.into())),
            ("user", Some(path)) => Some(Source::User(path.into())),
            _ => None,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.origin() {
            Some(origin) => write!(f, "{} {origin}", self.name()),
            None => f.write_str(self.name()),
        }
    }
}
