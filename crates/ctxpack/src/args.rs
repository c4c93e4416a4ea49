//! Arguments that several commands share, and the value parsers of the API's types.

use std::path::PathBuf;

use clap::Args;
use ctxpack_api::config::Flags;
use ctxpack_api::{
    Access, Budget, Error, Format, Meter, RenderOptions, Selector, View, Workspace,
    WorkspaceOptions,
};

/// `--cwd` and `--store`: which repository and store a command works on.
#[derive(Clone, Debug, Args)]
pub struct Location {
    /// Run against the repository containing this path.
    #[arg(long, default_value = ".")]
    pub cwd: PathBuf,
    /// The store directory (default: `.ctxpack` at the repository root).
    #[arg(long)]
    pub store: Option<PathBuf>,
}

impl Location {
    /// Opens the workspace, read-write (the command line may write).
    pub fn workspace(&self) -> Result<Workspace, Error> {
        Workspace::open(WorkspaceOptions {
            cwd: self.cwd.clone(),
            store: self.store.clone(),
            access: Access::ReadWrite,
            caller: None,
        })
    }
}

/// Options shared by every command that prints a pack. A flag left out takes the
/// configured value (`ctxpack config`), then the built-in default.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output format: text, json, both, markdown or xml [default: text].
    #[arg(long, value_parser = named::<Format>())]
    pub format: Option<Format>,
    /// How much to show: minimal (each hit's citation and text), default (and a summary of
    /// what was dropped) or full (and symbols, costs, ranks, tiers, counters and more of the
    /// dropped) [default: default].
    #[arg(long, value_parser = named::<View>())]
    pub view: Option<View>,
    /// Pretty-print JSON over several lines (default: one canonical line).
    #[arg(long)]
    pub pretty: bool,
}

impl OutputArgs {
    /// The render options these flags select, the rest built in.
    pub fn render_options(&self) -> RenderOptions {
        let defaults = RenderOptions::default();
        RenderOptions {
            format: self.format.unwrap_or(defaults.format),
            view: self.view.unwrap_or(defaults.view),
            pretty: self.pretty || defaults.pretty,
        }
    }

    /// Whether the flags ask for JSON.
    pub fn is_json(&self) -> bool {
        self.format == Some(Format::Json)
    }

    /// `flags` with the output flags given: format, view and `--pretty`.
    pub fn flags(&self, flags: Flags) -> Flags {
        Flags {
            format: self.format,
            view: self.view,
            pretty: self.pretty.then_some(true),
            ..flags
        }
    }
}

/// A value parser for any type whose `FromStr` error explains itself (meters, selectors,
/// formats, views, budgets, scopes).
pub fn parse<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    s.parse().map_err(|e: T::Err| e.to_string())
}

/// A value with a fixed set of names: the flag's parser offers them to completions and help.
pub trait Named: std::str::FromStr + Copy + Send + Sync + 'static {
    /// Every value, in the order help lists them.
    fn all() -> &'static [Self];
    /// The name a flag takes.
    fn name(self) -> &'static str;
}

macro_rules! named {
    ($($ty:ty),*) => {$(
        impl Named for $ty {
            fn all() -> &'static [Self] {
                &<$ty>::ALL
            }
            fn name(self) -> &'static str {
                <$ty>::name(self)
            }
        }
    )*};
}
named!(Format, View, Meter, Selector, ctxpack_api::PackScope);

/// The parser of a [`Named`] flag: [`parse`]'s messages, and the names as possible values, so
/// shell completions offer them.
#[derive(Clone, Copy, Debug)]
pub struct NamedParser<T>(std::marker::PhantomData<T>);

/// The parser of a [`Named`] flag.
pub fn named<T: Named>() -> NamedParser<T> {
    NamedParser(std::marker::PhantomData)
}

impl<T> clap::builder::TypedValueParser for NamedParser<T>
where
    T: Named,
    T::Err: std::fmt::Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let parse: fn(&str) -> Result<T, String> = parse::<T>;
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            T::all()
                .iter()
                .map(|v| clap::builder::PossibleValue::new(v.name())),
        ))
    }
}

/// A format flag that takes only some formats.
pub fn parse_format_among(s: &str, allowed: &[Format]) -> Result<Format, String> {
    match parse::<Format>(s) {
        Ok(format) if allowed.contains(&format) => Ok(format),
        _ => {
            let names: Vec<&str> = allowed.iter().map(|f| f.name()).collect();
            Err(format!(
                "unknown format `{s}`: expected one of {}",
                names.join(", ")
            ))
        }
    }
}

/// A budget as the command line takes it: a positive integer, or a number with a `k` or `m`
/// suffix ([`Budget::parse_suffixed`]). JSON payloads, MCP arguments and library requests take
/// plain integers only.
pub fn parse_budget(s: &str) -> Result<Budget, String> {
    Budget::parse_suffixed(s).map_err(|e| e.to_string())
}
