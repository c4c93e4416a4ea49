//! `ctxpack.toml` files and their precedence: five levels (flag, environment, repository
//! file, user file, default), the repository file's trust rule, and every way a file or a
//! variable can be wrong — each a typed error that names the file and the key.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ctxpack_api::config::{
    Config, ConfigOptions, Flags, Key, MAX_CONFIG_BYTES, REPOSITORY_FILE, Setting, Source,
    user_file,
};
use ctxpack_api::plan::PlanRunRequest;
use ctxpack_api::{
    Budget, Error, ErrorKind, Format, Hint, Meter, RenderOptions, Selector, SnapshotPackRequest,
    View,
};
use serde_json::json;

use crate::api::fixture::Fixture;

/// A repository and a home directory beside it (outside the repository).
struct Setup {
    repo: Fixture,
    home: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            repo: Fixture::new(),
            home: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The user file (under the home directory's `.config`).
    fn user_path(&self) -> PathBuf {
        self.home.path().join(".config/ctxpack/config.toml")
    }

    /// The repository file.
    fn repository_path(&self) -> PathBuf {
        self.repo.path().join(REPOSITORY_FILE)
    }

    /// Writes the user file.
    fn user(&self, text: &str) -> &Setup {
        let path = self.user_path();
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
        self
    }

    /// Writes the repository file.
    fn repository(&self, text: &str) -> &Setup {
        self.repo.write(REPOSITORY_FILE, text);
        self
    }

    /// Where to look, with these variables.
    fn options(&self, env: &[(&str, &str)]) -> ConfigOptions {
        ConfigOptions {
            cwd: self.repo.path().to_owned(),
            user_file: Some(self.user_path()),
            home: Some(self.home.path().to_owned()),
            environment: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
                .collect(),
            flags: Flags::default(),
        }
    }

    /// Loads with these variables.
    fn load(&self, env: &[(&str, &str)]) -> Result<Config, Error> {
        Config::load(&self.options(env))
    }
}

/// The advice of an error's hint.
fn advice(error: &Error) -> &str {
    match error.hint() {
        Some(Hint::Advice(text)) => text,
        other => panic!("{error}: no advice but {other:?}"),
    }
}

/// Asserts that `error` is invalid input whose message names every one of `words`.
fn assert_invalid(error: &Error, words: &[&str]) {
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    for word in words {
        assert!(error.message().contains(word), "{word:?} in {error}");
    }
}

#[test]
fn each_level_beats_the_levels_below_it() {
    let default = SnapshotPackRequest::default().budget.get();
    // (user file, repository file, CTXPACK_BUDGET, flag, the budget that wins, its source)
    type Case = (
        Option<u64>,
        Option<u64>,
        Option<&'static str>,
        Option<u64>,
        u64,
        &'static str,
    );
    let cases: [Case; 9] = [
        (None, None, None, None, default, "default"),
        (Some(100), None, None, None, 100, "user"),
        (Some(100), Some(200), None, None, 200, "repository"),
        (Some(100), Some(200), Some("300"), None, 300, "environment"),
        (Some(100), Some(200), Some("300"), Some(400), 400, "flag"),
        (None, Some(200), None, None, 200, "repository"),
        (Some(100), None, Some("300"), None, 300, "environment"),
        (None, None, None, Some(400), 400, "flag"),
        (Some(100), Some(200), None, Some(400), 400, "flag"),
    ];
    for (user, repository, variable, flag, expected, source) in cases {
        let what = format!("{user:?} {repository:?} {variable:?} {flag:?}");
        let s = Setup::new();
        if let Some(budget) = user {
            s.user(&format!("budget = {budget}\n"));
        }
        if let Some(budget) = repository {
            s.repository(&format!("budget = {budget}\n"));
        }
        let env: Vec<(&str, &str)> = variable
            .map(|v| ("CTXPACK_BUDGET", v))
            .into_iter()
            .collect();
        // One call resolves every level, the flags a front end parsed among them.
        let flags = Flags {
            budget: flag.map(|b| Budget::new(b).expect("valid")),
            ..Flags::default()
        };
        let config = Config::load(&ConfigOptions {
            flags: flags.clone(),
            ..s.options(&env)
        })
        .expect(&what);
        // The flags alone, as `context pack` takes them: no file or variable is read.
        assert_eq!(
            Config::from_flags(&flags).budget,
            flag.map(|b| Setting::flag(Budget::new(b).expect("valid"))),
            "{what}"
        );
        let request = config.apply_pack(SnapshotPackRequest::default());
        assert_eq!(request.budget.get(), expected, "{what}");
        let effective = config.effective(
            &SnapshotPackRequest::default(),
            &RenderOptions::default(),
            &PlanRunRequest::default(),
        );
        let setting = effective.get("budget").expect("budget is listed");
        assert_eq!(setting.value, json!(expected), "{what}");
        assert_eq!(setting.source.name(), source, "{what}");
        let expected_source = match source {
            "user" => Source::User(s.user_path()),
            "repository" => Source::Repository(s.repository_path()),
            "environment" => Source::Environment("CTXPACK_BUDGET".into()),
            "flag" => Source::Flag,
            _ => Source::Default,
        };
        assert_eq!(setting.source, expected_source, "{what}");
    }
}

#[test]
fn every_key_is_read_from_files_and_variables_and_applied() {
    let s = Setup::new();
    s.user(
        "store = \"~/stores/ctxpack\"\nallow_run = true\nrun_timeout = 5\nrun-max-output = 4096\nview = \"full\"\n",
    );
    s.repository(
        "budget = \"8k\"\nmeter = \"chars\"\nselector = \"diverse\"\ntop-k = 12\ninclude = [\"src/**\", \"*.md\"]\nexclude = \"**/*.snap\"\nformat = \"markdown\"\n",
    );
    let config = s
        .load(&[
            ("CTXPACK_PRETTY", "yes"),
            ("CTXPACK_SELECTOR", "prefix"),
            ("CTXPACK_VIEW", ""),
            ("CTXPACK_MCP_PYTHON", "not a key: ignored"),
        ])
        .expect("loads");
    let request = config.apply_pack(SnapshotPackRequest {
        goal: "kept".into(),
        ..SnapshotPackRequest::default()
    });
    assert_eq!(request.goal, "kept");
    assert_eq!(request.budget.get(), 8000);
    assert_eq!(request.meter, Meter::Chars);
    assert_eq!(request.selector, Selector::Prefix);
    assert_eq!(request.include, ["src/**", "*.md"]);
    assert_eq!(request.exclude, ["**/*.snap"]);
    let rendering = config.apply_render(RenderOptions::default());
    assert_eq!(
        rendering,
        RenderOptions {
            format: Format::Markdown,
            // An empty variable counts as unset: the user file's view stands.
            view: View::Full,
            pretty: true,
        }
    );
    let plan = config.apply_plan(PlanRunRequest::default());
    assert_eq!(
        plan,
        PlanRunRequest {
            allow_run: true,
            run_timeout_secs: 5,
            run_max_output: 4096,
        }
    );
    assert_eq!(
        config.store_dir(),
        Some(s.home.path().join("stores/ctxpack").as_path())
    );

    let report = config.report(
        &SnapshotPackRequest::default(),
        &RenderOptions::default(),
        &PlanRunRequest::default(),
    );
    let json = report.to_json();
    let keys: Vec<&str> = json["settings"]
        .as_object()
        .expect("settings")
        .keys()
        .map(String::as_str)
        .collect();
    let all: Vec<&str> = Key::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(keys, all, "every key, in order");
    let repository = s.repository_path().display().to_string();
    assert_eq!(
        json["settings"]["top_k"],
        json!({"value": 12, "source": "repository", "origin": repository})
    );
    assert_eq!(
        json["settings"]["selector"],
        json!({"value": "prefix", "source": "environment", "origin": "CTXPACK_SELECTOR"})
    );
    assert_eq!(json["settings"]["pretty"]["value"], json!(true));
    assert_eq!(json["files"]["repository"]["found"], json!(true));
    assert_eq!(
        json["files"]["user"]["path"],
        json!(s.user_path().display().to_string())
    );
    let text = report.to_string();
    assert!(
        text.contains(&format!("# repository file: {repository}\n")),
        "{text}"
    );
    assert!(text.contains("meter = \"chars\""), "{text}");
    assert!(text.contains("# environment CTXPACK_SELECTOR\n"), "{text}");
    assert!(text.contains("allow_run = true"), "{text}");

    // For packs, the plan-run keys are left out.
    let for_packs = report.settings.clone().for_packs();
    assert!(for_packs.get("allow_run").is_none());
    assert!(for_packs.get("store").is_some());
}

#[test]
fn a_repository_file_may_not_choose_the_store_or_what_runs() {
    for (line, key) in [
        ("store = \"/tmp/elsewhere\"", "store"),
        ("allow_run = true", "allow_run"),
        ("allow-run = true", "allow-run"),
        ("run_timeout = 86400", "run_timeout"),
        ("run_max_output = 1", "run_max_output"),
    ] {
        let s = Setup::new();
        s.repository(&format!("budget = 100\n{line}\n"));
        let error = s.load(&[]).expect_err(line);
        let path = s.repository_path().display().to_string();
        assert_invalid(&error, &[&format!("`{key}`"), &path, "may not set"]);
        assert!(
            advice(&error).contains(&format!("remove `{key}`")),
            "{error:?}"
        );
        assert!(
            advice(&error).contains(&s.user_path().display().to_string()),
            "the advice names the user file: {error:?}"
        );
        // The same key in the user file is the user's choice.
        s.repository("budget = 100\n").user(&format!("{line}\n"));
        s.load(&[]).expect(line);
    }
}

#[test]
fn an_unknown_key_is_refused_with_the_closest_known_one() {
    // (file, the key the error names, the advice)
    let cases = [
        ("budjet = 100\n", "`budjet`", "did you mean `budget`?"),
        (
            "selecter = \"skip\"\n",
            "`selecter`",
            "did you mean `selector`?",
        ),
        ("topk = 3\n", "`topk`", "did you mean `top_k`?"),
        (
            "[pack]\nbudget = 100\n",
            "`pack.budget`",
            "did you mean `budget`? Keys go at the top level",
        ),
        (
            "colour = \"blue\"\n",
            "`colour`",
            "the keys are budget, meter, selector",
        ),
    ];
    for (text, key, expected) in cases {
        for user in [false, true] {
            let s = Setup::new();
            if user {
                s.user(text);
            } else {
                s.repository(text);
            }
            let error = s.load(&[]).expect_err(text);
            let path = if user {
                s.user_path()
            } else {
                s.repository_path()
            };
            assert_invalid(&error, &["unknown key", key, &path.display().to_string()]);
            assert!(advice(&error).contains(expected), "{text}: {error:?}");
        }
    }
}

#[test]
fn malformed_files_and_values_are_refused_naming_the_file_and_key() {
    // (repository file, what the message says)
    let cases: [(&[u8], &[&str]); 13] = [
        (b"budget = \n", &["not valid TOML", "line 1, column"]),
        (
            b"meter = \"o200k\"\nmeter = \"words\"\n",
            &["not valid TOML", "line 2"],
        ),
        (b"budget = 100\x80\n", &["not UTF-8"]),
        (b"budget = true\n", &["`budget`", "an integer or a string"]),
        (b"budget = 0\n", &["`budget`", "positive integer, got 0"]),
        (b"budget = -5\n", &["`budget`", "positive integer, got -5"]),
        (b"budget = 12.5\n", &["`budget`", "whole number"]),
        (
            b"meter = \"furlongs\"\n",
            &["`meter`", "unknown meter `furlongs`"],
        ),
        (
            b"selector = 3\n",
            &["`selector`", "must be a string, not integer"],
        ),
        (b"top_k = 0\n", &["`top_k`", "at least 1"]),
        (b"include = [1]\n", &["`include`", "array of glob strings"]),
        (b"exclude = [\"\"]\n", &["`exclude`", "empty glob"]),
        (b"pretty = \"maybe\"\n", &["`pretty`", "true or false"]),
    ];
    for (text, words) in cases {
        let what = String::from_utf8_lossy(text).into_owned();
        let s = Setup::new();
        std::fs::write(s.repository_path(), text).expect("write");
        let error = s.load(&[]).expect_err(&what);
        let path = s.repository_path().display().to_string();
        let mut words = words.to_vec();
        words.push(&path);
        assert_invalid(&error, &words);
        assert_eq!(error.field(), None, "a file is not a request field: {what}");
    }
    // A user file that is a directory is no configuration.
    let s = Setup::new();
    std::fs::create_dir_all(s.user_path()).expect("mkdir");
    assert_invalid(
        &s.load(&[]).expect_err("a directory"),
        &["not a regular file"],
    );
}

#[test]
fn a_bad_variable_is_refused_naming_it() {
    // (variable, value, what the message says)
    let cases = [
        ("CTXPACK_BUDGET", "lots", "positive integer"),
        ("CTXPACK_METER", "furlongs", "unknown meter"),
        ("CTXPACK_TOP_K", "-1", "at least 1"),
        ("CTXPACK_RUN_TIMEOUT", "86401", "from 1 to 86400"),
        ("CTXPACK_ALLOW_RUN", "perhaps", "true or false"),
        ("CTXPACK_FORMAT", "yaml", "unknown format"),
    ];
    let s = Setup::new();
    for (variable, value, words) in cases {
        let error = s.load(&[(variable, value)]).expect_err(variable);
        assert_invalid(&error, &[variable, words]);
        assert!(advice(&error).contains(variable), "{error:?}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        let mut options = s.options(&[]);
        options.environment.insert(
            "CTXPACK_STORE".into(),
            OsString::from_vec(b"/tmp/\xff".to_vec()),
        );
        let error = Config::load(&options).expect_err("not UTF-8");
        assert_invalid(&error, &["CTXPACK_STORE", "not UTF-8"]);
    }
    // Globs are comma-separated in a variable.
    let config = s
        .load(&[("CTXPACK_INCLUDE", "src/**, docs/*.md")])
        .expect("loads");
    let request = config.apply_pack(SnapshotPackRequest::default());
    assert_eq!(request.include, ["src/**", "docs/*.md"]);
}

#[test]
fn budgets_take_integers_and_suffixed_strings() {
    // (value in the file, CTXPACK_BUDGET, the budget)
    let cases = [
        ("8000", None, 8000),
        ("\"8k\"", None, 8000),
        ("\"8K\"", None, 8000),
        ("\"1.5k\"", None, 1500),
        ("\"2m\"", None, 2_000_000),
        ("\"12000\"", None, 12_000),
        ("8000", Some("2k"), 2000),
        ("8000", Some(" 750 "), 750),
    ];
    for (value, variable, expected) in cases {
        let s = Setup::new();
        s.user(&format!("budget = {value}\n"));
        let env: Vec<(&str, &str)> = variable
            .map(|v| ("CTXPACK_BUDGET", v))
            .into_iter()
            .collect();
        let config = s.load(&env).expect(value);
        assert_eq!(
            config
                .apply_pack(SnapshotPackRequest::default())
                .budget
                .get(),
            expected,
            "{value} {variable:?}"
        );
    }
    for value in [
        "\"8x\"",
        "\"0k\"",
        "\"k\"",
        "\"1.0005k\"",
        "\"-2k\"",
        "\"9999999999m\"",
    ] {
        let s = Setup::new();
        s.user(&format!("budget = {value}\n"));
        let error = s.load(&[]).expect_err(value);
        assert_invalid(&error, &["`budget`", "is not a budget"]);
    }
}

#[test]
fn an_oversized_file_is_refused_before_it_is_parsed() {
    let limit = usize::try_from(MAX_CONFIG_BYTES).expect("small");
    let s = Setup::new();
    // Exactly at the limit: a comment and a key.
    let key = "budget = 100\n";
    let comment = format!("#{}\n", "x".repeat(limit - key.len() - 2));
    s.repository(&format!("{comment}{key}"));
    assert_eq!(
        std::fs::metadata(s.repository_path()).expect("file").len(),
        MAX_CONFIG_BYTES
    );
    let config = s.load(&[]).expect("a file at the limit loads");
    assert_eq!(config.budget.map(|b| b.value.get()), Some(100));
    // One byte over.
    for user in [false, true] {
        let s = Setup::new();
        let text = format!("{comment}{key}\n");
        if user {
            s.user(&text);
        } else {
            s.repository(&text);
        }
        let error = s.load(&[]).expect_err("over the limit");
        assert_invalid(&error, &["over the limit", &MAX_CONFIG_BYTES.to_string()]);
    }
}

#[cfg(unix)]
#[test]
fn a_repository_file_is_never_read_through_a_link() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("elsewhere.toml");
    std::fs::write(&target, "budget = 100\n").expect("write");
    for link_to in [target.clone(), PathBuf::from("inside.toml")] {
        let s = Setup::new();
        s.repo.write("inside.toml", "budget = 100\n");
        symlink(&link_to, s.repository_path()).expect("symlink");
        let error = s.load(&[]).expect_err("a link");
        assert_invalid(
            &error,
            &["symbolic link", &s.repository_path().display().to_string()],
        );
    }
    // A link to nothing is refused too (it is still a link).
    let s = Setup::new();
    symlink("/nonexistent/ctxpack.toml", s.repository_path()).expect("symlink");
    assert_invalid(
        &s.load(&[]).expect_err("a dangling link"),
        &["symbolic link"],
    );
    // The user's own file may be a link (dotfiles are often kept elsewhere).
    let s = Setup::new();
    std::fs::create_dir_all(s.user_path().parent().expect("parent")).expect("mkdir");
    symlink(&target, s.user_path()).expect("symlink");
    let config = s.load(&[]).expect("the user's link is followed");
    assert_eq!(
        config.budget.map(|b| (b.value.get(), b.source)),
        Some((100, Source::User(s.user_path())))
    );
}

#[test]
fn files_that_are_not_there_and_places_outside_a_repository() {
    let s = Setup::new();
    let config = s.load(&[]).expect("no files is fine");
    assert_eq!(
        config,
        Config {
            files: config.files.clone(),
            ..Config::default()
        }
    );
    let files = &config.files;
    assert_eq!(files.user.as_ref().map(|f| f.found), Some(false));
    assert_eq!(
        files.repository.as_ref().map(|f| (f.path.clone(), f.found)),
        Some((s.repository_path(), false))
    );
    // Below the root, the root's file is read.
    s.repository("view = \"minimal\"\n");
    s.repo.write("src/lib.rs", "");
    let config = Config::load(&ConfigOptions {
        cwd: s.repo.path().join("src"),
        ..s.options(&[])
    })
    .expect("loads");
    assert_eq!(config.view.map(|v| v.value), Some(View::Minimal));
    // Outside a repository there is no repository file (a stray ctxpack.toml is not read).
    let plain = tempfile::tempdir().expect("tempdir");
    std::fs::write(plain.path().join(REPOSITORY_FILE), "store = \"/x\"\n").expect("write");
    let config = Config::load(&ConfigOptions {
        cwd: plain.path().to_owned(),
        ..ConfigOptions::default()
    })
    .expect("loads");
    assert_eq!(config.files.repository, None);
    assert_eq!(config.files.user, None);
    // A cwd that does not exist is the request field `cwd`.
    let error = Config::load(&ConfigOptions {
        cwd: plain.path().join("missing"),
        ..ConfigOptions::default()
    })
    .expect_err("no such directory");
    assert_eq!(
        (error.kind(), error.field()),
        (ErrorKind::InvalidInput, Some("cwd"))
    );
}

#[test]
fn the_user_file_lives_under_the_xdg_config_directory() {
    let os = |s: &str| OsString::from(s);
    let cases: [(Option<OsString>, Option<OsString>, Option<&str>); 5] = [
        (
            Some(os("/xdg")),
            Some(os("/home/u")),
            Some("/xdg/ctxpack/config.toml"),
        ),
        (
            None,
            Some(os("/home/u")),
            Some("/home/u/.config/ctxpack/config.toml"),
        ),
        // A relative XDG_CONFIG_HOME is ignored, as the specification says.
        (
            Some(os("rel")),
            Some(os("/home/u")),
            Some("/home/u/.config/ctxpack/config.toml"),
        ),
        (Some(os("")), None, None),
        (None, None, None),
    ];
    for (xdg, home, expected) in cases {
        assert_eq!(
            user_file(xdg.as_deref(), home.as_deref()),
            expected.map(PathBuf::from),
            "{xdg:?} {home:?}"
        );
    }
}

#[test]
fn a_store_in_the_user_file_is_absolute_or_under_home() {
    let s = Setup::new();
    s.user("store = \"relative/store\"\n");
    let error = s.load(&[]).expect_err("relative");
    assert_invalid(&error, &["`store`", "absolute path"]);
    s.user("store = \"/srv/ctxpack\"\n");
    let config = s.load(&[]).expect("absolute");
    assert_eq!(config.store_dir(), Some(Path::new("/srv/ctxpack")));
    // A variable is taken like the flag: relative to the current directory.
    let config = s
        .load(&[("CTXPACK_STORE", "relative/store")])
        .expect("variable");
    let expected = std::env::current_dir().expect("cwd").join("relative/store");
    assert_eq!(config.store_dir(), Some(expected.as_path()));
    assert_eq!(
        config.store.map(|s| s.source),
        Some(Source::Environment("CTXPACK_STORE".into()))
    );
}

#[test]
fn sources_round_trip_through_their_names() {
    let sources = [
        Source::Flag,
        Source::Environment("CTXPACK_METER".into()),
        Source::Repository("/r/ctxpack.toml".into()),
        Source::User("/h/.config/ctxpack/config.toml".into()),
        Source::Default,
    ];
    for source in sources {
        let origin = source.origin();
        assert_eq!(
            Source::from_parts(source.name(), origin.as_deref()),
            Some(source.clone())
        );
    }
    assert_eq!(Source::from_parts("flag", Some("x")), None);
    assert_eq!(Source::from_parts("gossip", None), None);
    let names: BTreeMap<&str, &str> = Key::ALL.iter().map(|k| (k.name(), k.variable())).collect();
    for (name, variable) in names {
        assert_eq!(variable, format!("CTXPACK_{}", name.to_uppercase()));
        assert_eq!(
            Key::parse(&name.replace('_', "-")).map(Key::name),
            Some(name)
        );
    }
}
