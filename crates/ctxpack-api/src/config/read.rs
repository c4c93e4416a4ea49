//! Reading configuration: files found and read within their limits, each value parsed to its
//! key's type, and the errors that name the file, the key and what to do.

use super::*;

/// The text of a string value, or `expected`.
pub(super) fn text<'a>(raw: Raw<'a>, expected: &str) -> std::result::Result<&'a str, String> {
    match raw {
        Raw::Text(s) => Ok(s.trim()),
        Raw::Toml(toml::Value::String(s)) => Ok(s),
        Raw::Toml(other) => Err(format!("must be {expected}, not {}", other.type_str())),
    }
}

pub(super) fn budget(raw: Raw<'_>) -> std::result::Result<Budget, String> {
    let parsed = match raw {
        Raw::Toml(toml::Value::Integer(i)) => match u64::try_from(*i) {
            Ok(v) => Budget::new(v),
            Err(_) => Err(ValueError::Negative(i.to_string())),
        },
        Raw::Toml(toml::Value::Float(x)) => serde_json::Number::from_f64(*x).map_or_else(
            || Err(ValueError::NotWhole(x.to_string())),
            |n| Budget::from_json(&Json::Number(n)),
        ),
        raw => Budget::parse_suffixed(text(raw, "an integer or a string such as \"8k\"")?),
    };
    parsed.map_err(|e| format!("is not a budget: {e}"))
}

pub(super) fn named<T>(raw: Raw<'_>) -> std::result::Result<T, String>
where
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    text(raw, "a string")?
        .parse()
        .map_err(|e: T::Err| format!("is not valid: {e}"))
}

pub(super) fn count(raw: Raw<'_>, min: usize, max: usize) -> std::result::Result<usize, String> {
    let range = || {
        if max == usize::MAX {
            format!("must be an integer of at least {min}")
        } else {
            format!("must be an integer from {min} to {max}")
        }
    };
    let value = match raw {
        Raw::Toml(toml::Value::Integer(i)) => usize::try_from(*i).ok(),
        Raw::Text(s) => s.trim().parse::<usize>().ok(),
        Raw::Toml(other) => return Err(format!("{}, not {}", range(), other.type_str())),
    };
    match value {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(range()),
    }
}

/// Globs: an array of strings (or one string) in a file; comma-separated in a variable.
pub(super) fn globs(raw: Raw<'_>) -> std::result::Result<Vec<String>, String> {
    let globs: Vec<String> = match raw {
        Raw::Text(s) => s.split(',').map(|g| g.trim().to_owned()).collect(),
        Raw::Toml(toml::Value::String(s)) => vec![s.clone()],
        Raw::Toml(toml::Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "must be an array of glob strings, not of {}",
                    other.type_str()
                )),
            })
            .collect::<std::result::Result<_, _>>()?,
        Raw::Toml(other) => {
            return Err(format!(
                "must be an array of glob strings, not {}",
                other.type_str()
            ));
        }
    };
    if globs.iter().any(|g| g.trim().is_empty()) {
        return Err("has an empty glob".into());
    }
    Ok(globs)
}

pub(super) fn boolean(raw: Raw<'_>) -> std::result::Result<bool, String> {
    match raw {
        Raw::Toml(toml::Value::Boolean(b)) => Ok(*b),
        Raw::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(format!("must be true or false, not `{}`", s.trim())),
        },
        Raw::Toml(other) => Err(format!("must be true or false, not {}", other.type_str())),
    }
}

/// A store directory. In the user file it must be absolute or start with `~/`; a variable
/// is taken like a flag, relative to the current directory.
pub(super) fn store(
    raw: Raw<'_>,
    source: &Source,
    options: &ConfigOptions,
) -> std::result::Result<PathBuf, String> {
    let given = text(raw, "a path")?;
    if given.is_empty() {
        return Err("is empty".into());
    }
    if let Source::User(_) = source {
        if let Some(rest) = given.strip_prefix("~/") {
            return match &options.home {
                Some(home) => Ok(home.join(rest)),
                None => Err("starts with `~/`, and no home directory is known".into()),
            };
        }
        if !Path::new(given).is_absolute() {
            return Err(format!(
                "must be an absolute path (or start with `~/`), not `{given}`"
            ));
        }
    }
    std::path::absolute(given).map_err(|e| format!("is not a usable path: {e}"))
}

/// The repository's working-tree root, when `cwd` is inside one.
pub(super) fn repository_root(cwd: &Path) -> Result<Option<PathBuf>> {
    let cwd = cwd.canonicalize().map_err(|e| {
        Error::invalid_field("cwd", format!("{}: {e}", cwd.display())).with_hint(Hint::Advice(
            "give an existing directory inside the repository".into(),
        ))
    })?;
    Ok(Repo::discover(&cwd)
        .ok()
        .and_then(|repo| repo.workdir())
        .map(|root| crate::workspace::resolve(&root)))
}

/// Reads a configuration file, at most [`MAX_CONFIG_BYTES`]; `Ok(None)` when there is none.
/// An `untrusted` file (the repository's) is never read through a symbolic link.
pub(super) fn read_config(path: &Path, untrusted: bool) -> Result<Option<String>> {
    let shown = path.to_string_lossy();
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, &e)),
        Ok(meta) => meta,
    };
    let meta = if meta.file_type().is_symlink() {
        if untrusted {
            return Err(file_error(
                &shown,
                "is a symbolic link, and a repository's configuration is never read through one"
                    .into(),
                Some("replace the link with the file itself"),
            ));
        }
        match std::fs::metadata(path) {
            // A link to nothing is no file.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, &e)),
            Ok(meta) => meta,
        }
    } else {
        meta
    };
    // Checked before opening: opening a FIFO would block.
    if !meta.is_file() {
        return Err(file_error(&shown, "is not a regular file".into(), None));
    }
    let too_large = || {
        file_error(
            &shown,
            format!("is over the limit of {MAX_CONFIG_BYTES} bytes for a configuration file"),
            Some("a configuration holds a few settings: shorten it"),
        )
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
    #[cfg(unix)]
    if untrusted {
        // The file opened must be the file checked: a link swapped in since is refused.
        use std::os::unix::fs::MetadataExt as _;
        let opened = file.metadata().map_err(|e| Error::io(path, &e))?;
        if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
            return Err(file_error(&shown, "changed while it was read".into(), None));
        }
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, &e))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| file_error(&shown, "is not UTF-8".into(), None))
}

/// Invalid input in a configuration file.
pub(super) fn file_error(path: &str, what: String, advice: Option<&str>) -> Error {
    let error = Error::invalid(format!("configuration file {path} {what}"));
    match advice {
        Some(advice) => error.with_hint(Hint::Advice(advice.into())),
        None => error.with_hint(Hint::Advice(format!("correct {path}"))),
    }
}

/// A TOML syntax error as one line with its position.
pub(super) fn syntax(e: &toml::de::Error, text: &str) -> String {
    let message = e.message().trim_end_matches('\n').replace('\n', "; ");
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            format!("is not valid TOML: line {line}, column {column}: {message}")
        }
        None => format!("is not valid TOML: {message}"),
    }
}

/// An unknown key, with the closest known one.
pub(super) fn unknown_key(path: &str, name: &str, value: &toml::Value) -> Error {
    // A table (`[pack]`) holds keys that belong at the top level: suggest for its first one.
    let (shown, probe) = match value.as_table().and_then(|t| t.keys().next()) {
        Some(inner) => (format!("{name}.{inner}"), inner.as_str()),
        None => (name.to_owned(), name),
    };
    let names: Vec<&str> = Key::ALL.iter().map(|k| k.name()).collect();
    let advice = match closest(probe, &names) {
        Some(close) if Key::parse(probe).is_some() => {
            format!("did you mean `{close}`? Keys go at the top level, not in a table")
        }
        Some(close) => format!("did you mean `{close}`?"),
        None => format!("the keys are {}", names.join(", ")),
    };
    Error::invalid(format!(
        "configuration file {path} has the unknown key `{shown}`"
    ))
    .with_hint(Hint::Advice(advice))
}

/// A repository file that sets a key only the user may set.
pub(super) fn untrusted(path: &str, name: &str, key: Key, options: &ConfigOptions) -> Error {
    let allowed: Vec<&str> = Key::ALL
        .iter()
        .filter(|k| k.repository_may_set())
        .map(|k| k.name())
        .collect();
    let user = options.user_file.as_ref().map_or_else(
        || "your own configuration file".to_owned(),
        |p| p.display().to_string(),
    );
    Error::invalid(format!(
        "configuration file {path} sets `{name}`, which a repository's {REPOSITORY_FILE} may not set: it comes with the repository and is not trusted to choose where ctxpack writes or what it runs (it may set {})",
        allowed.join(", ")
    ))
    .with_hint(Hint::Advice(format!(
        "remove `{name}` from {path}; set it in {user}, with {}, or with a flag",
        key.variable()
    )))
}

/// The candidate closest to `name` by edit distance, when it is close enough to be a typo.
pub(super) fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let name = name.replace('-', "_").to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(&name, c), *c))
        .filter(|(d, c)| *d <= (c.len().max(name.len()) / 3).max(1))
        .min()
        .map(|(_, c)| c)
}
