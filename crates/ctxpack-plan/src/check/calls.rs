//! A source call's arguments checked: each one known, given once, of the kind it takes and
//! within its range, and a `read` path kept inside the repository.

use std::collections::BTreeMap;

use crate::ast::{Arg, Call, Literal};
use crate::diag::{Diagnostic, Span};
use crate::shell::split_command;
use crate::sources::{DocsRequest, QueryRequest, ReadRequest, RunRequest};

use super::{Checker, DEFAULT_TOP, Source};

impl Checker {
    pub(super) fn source(&mut self, call: &Call) -> Option<Source> {
        let function = call.function.name.as_str();
        let (positional, named): (&[&str], &[&str]) = match function {
            "read" => (&["path"], &["lines", "at", "worktree"]),
            "query" => (&["goal"], &["top", "at"]),
            "docs" => (
                &["store", "collection", "field", "query"],
                &["filter", "top"],
            ),
            "artifact" => (&["id"], &[]),
            "text" => (&["text"], &[]),
            "run" => (&["command"], &[]),
            _ => {
                self.error(
                    Diagnostic::error(format!("unknown source `{function}`"), call.function.span)
                        .with_help("sources are read, query, docs, artifact, text and run"),
                );
                return None;
            }
        };
        let args = self.args(call, positional, named)?;
        let errors = self.diagnostics.len();
        let source = match function {
            "read" => {
                let path = self.path(args.positional[0]);
                let lines = args.named.get("lines").and_then(|a| self.lines(a));
                let at = args.named.get("at").and_then(|a| self.at(a));
                let worktree = args
                    .named
                    .get("worktree")
                    .and_then(|a| self.boolean(a))
                    .unwrap_or(false);
                if worktree && let Some(arg) = args.named.get("at") {
                    self.error(Diagnostic::error(
                        "`at` and `worktree: true` exclude each other",
                        arg.value.span,
                    ));
                }
                Source::Read(ReadRequest {
                    path: path?,
                    lines,
                    at,
                    worktree,
                })
            }
            "query" => Source::Query(QueryRequest {
                goal: self.string(args.positional[0])?,
                top: self.top(args.named.get("top").copied()),
                at: args.named.get("at").and_then(|a| self.at(a)),
            }),
            "docs" => {
                let strings: Vec<Option<String>> =
                    args.positional.iter().map(|a| self.string(a)).collect();
                let filter = args.named.get("filter").and_then(|a| match &a.value.value {
                    Literal::Json(v @ serde_json::Value::Object(_)) => Some(v.clone()),
                    other => {
                        self.error(kind_error("filter", "a JSON object", other, a));
                        None
                    }
                });
                let top = self.top(args.named.get("top").copied());
                let [Some(store), Some(collection), Some(field), Some(query)] =
                    <[Option<String>; 4]>::try_from(strings).ok()?
                else {
                    return None;
                };
                Source::Docs(DocsRequest {
                    store,
                    collection,
                    field,
                    query,
                    filter,
                    top,
                })
            }
            "artifact" => Source::Artifact(self.string(args.positional[0])?),
            "text" => Source::Text(self.string(args.positional[0])?),
            _ => Source::Run(self.command(args.positional[0])?),
        };
        (self.diagnostics.len() == errors).then_some(source)
    }

    fn args<'a>(
        &mut self,
        call: &'a Call,
        positional: &[&str],
        named: &[&str],
    ) -> Option<CallArgs<'a>> {
        let function = &call.function.name;
        let mut out = CallArgs {
            positional: Vec::new(),
            named: BTreeMap::new(),
        };
        let mut ok = true;
        for arg in &call.args {
            match &arg.name {
                None if !out.named.is_empty() => {
                    self.error(
                        Diagnostic::error(
                            "a positional argument after a named one",
                            arg.value.span,
                        )
                        .with_help("positional arguments come first"),
                    );
                    ok = false;
                }
                None if out.positional.len() == positional.len() => {
                    self.error(
                        Diagnostic::error(
                            format!(
                                "`{function}` takes {} positional argument{} ({})",
                                positional.len(),
                                if positional.len() == 1 { "" } else { "s" },
                                positional.join(", ")
                            ),
                            arg.value.span,
                        )
                        .with_label("one too many"),
                    );
                    ok = false;
                }
                None => out.positional.push(arg),
                Some(name) if !named.contains(&name.name.as_str()) => {
                    let help = if named.is_empty() {
                        format!("`{function}` takes no named arguments")
                    } else {
                        format!("its named arguments are {}", named.join(", "))
                    };
                    self.error(
                        Diagnostic::error(
                            format!("`{function}` has no argument `{}`", name.name),
                            name.span,
                        )
                        .with_help(help),
                    );
                    ok = false;
                }
                Some(name) => {
                    if out.named.insert(name.name.as_str(), arg).is_some() {
                        self.error(Diagnostic::error(
                            format!("`{}` is given twice", name.name),
                            name.span,
                        ));
                        ok = false;
                    }
                }
            }
        }
        if out.positional.len() < positional.len() && ok {
            let missing = &positional[out.positional.len()..];
            let close = Span::new(call.span.end.saturating_sub(1), call.span.end);
            self.error(Diagnostic::error(
                format!(
                    "`{function}` needs {} positional argument{} ({}); missing {}",
                    positional.len(),
                    if positional.len() == 1 { "" } else { "s" },
                    positional.join(", "),
                    missing.join(", ")
                ),
                close,
            ));
            ok = false;
        }
        ok.then_some(out)
    }

    fn string(&mut self, arg: &Arg) -> Option<String> {
        match &arg.value.value {
            Literal::Str(s) => Some(s.clone()),
            other => {
                self.error(kind_error("this argument", "a string", other, arg));
                None
            }
        }
    }

    fn boolean(&mut self, arg: &Arg) -> Option<bool> {
        match &arg.value.value {
            Literal::Bool(b) => Some(*b),
            other => {
                self.error(kind_error("worktree", "true or false", other, arg));
                None
            }
        }
    }

    fn top(&mut self, arg: Option<&Arg>) -> usize {
        let Some(arg) = arg else {
            return DEFAULT_TOP;
        };
        match &arg.value.value {
            Literal::Int(n) if *n >= 1 => usize::try_from(*n).unwrap_or(usize::MAX),
            Literal::Int(_) => {
                self.error(Diagnostic::error(
                    "`top` must be at least 1",
                    arg.value.span,
                ));
                DEFAULT_TOP
            }
            other => {
                self.error(kind_error("top", "a number", other, arg));
                DEFAULT_TOP
            }
        }
    }

    fn lines(&mut self, arg: &Arg) -> Option<(u32, u32)> {
        let span = arg.value.span;
        let Literal::Range(a, b) = arg.value.value else {
            self.error(kind_error(
                "lines",
                "a line range like `1..80`",
                &arg.value.value,
                arg,
            ));
            return None;
        };
        let (Ok(a), Ok(b)) = (u32::try_from(a), u32::try_from(b)) else {
            self.error(Diagnostic::error("the line range is too large", span));
            return None;
        };
        if a == 0 {
            self.error(Diagnostic::error("lines are numbered from 1", span));
            return None;
        }
        if a > b {
            self.error(
                Diagnostic::error(format!("the line range {a}..{b} is empty"), span)
                    .with_help("write the first line, then the last: both are included"),
            );
            return None;
        }
        Some((a, b))
    }

    fn at(&mut self, arg: &Arg) -> Option<String> {
        let at = self.string(arg)?;
        let hex = (4..=40).contains(&at.len()) && at.bytes().all(|b| b.is_ascii_hexdigit());
        if at == "HEAD" || hex {
            Some(at)
        } else {
            self.error(
                Diagnostic::error(format!("`{at}` is not a commit `at` accepts"), arg.value.span)
                    .with_help("`at` takes HEAD, a full commit SHA or a unique hex prefix (branch and tag names are refused)"),
            );
            None
        }
    }

    fn path(&mut self, arg: &Arg) -> Option<String> {
        let raw = self.string(arg)?;
        match normalize_path(&raw) {
            Ok(path) => Some(path),
            Err(why) => {
                self.error(
                    Diagnostic::error(
                        format!("path `{raw}` is outside the repository"),
                        arg.value.span,
                    )
                    .with_label(why)
                    .with_help("`read` takes a path relative to the repository root"),
                );
                None
            }
        }
    }

    fn command(&mut self, arg: &Arg) -> Option<RunRequest> {
        match &arg.value.value {
            Literal::Str(command) => match split_command(command) {
                Ok(argv) => Some(RunRequest {
                    command: command.clone(),
                    argv,
                }),
                Err(e) => {
                    self.error(
                        Diagnostic::error(e.to_string(), arg.value.span)
                            .with_help("commands run without a shell: quote with '…' or \"…\""),
                    );
                    None
                }
            },
            Literal::Json(serde_json::Value::Array(items)) => {
                let argv: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect();
                match argv {
                    Some(argv) if !argv.is_empty() => Some(RunRequest {
                        command: argv.join(" "),
                        argv,
                    }),
                    _ => {
                        self.error(Diagnostic::error(
                            "a command array holds the program and its arguments as strings",
                            arg.value.span,
                        ));
                        None
                    }
                }
            }
            other => {
                self.error(kind_error("run", "a command string", other, arg));
                None
            }
        }
    }
}

struct CallArgs<'a> {
    positional: Vec<&'a Arg>,
    named: BTreeMap<&'a str, &'a Arg>,
}

fn kind_error(what: &str, expected: &str, found: &Literal, arg: &Arg) -> Diagnostic {
    let what = match &arg.name {
        Some(name) => format!("`{}`", name.name),
        None => what.to_owned(),
    };
    Diagnostic::error(
        format!("{what} expects {expected}, found {}", found.describe()),
        arg.value.span,
    )
}

/// Normalises a repository-relative path: `.` and empty components dropped, `..` applied.
/// Absolute paths and paths that climb above the root are refused with the reason.
pub fn normalize_path(raw: &str) -> Result<String, &'static str> {
    if raw.is_empty() {
        return Err("the path is empty");
    }
    if raw.starts_with('/') || raw.starts_with('\\') || raw.get(1..2) == Some(":") {
        return Err("absolute paths are refused");
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("it climbs above the repository root");
                }
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err("it names the repository root, not a file");
    }
    Ok(parts.join("/"))
}
