//! `ctxpack config` and configuration precedence on the command line: each value with where
//! it came from, the repository file's trust rule and typos as exit 2 with advice, and `pack`
//! taking its defaults from the configuration with the flags given winning. Precedence and
//! every fault are tested in process in `ctxpack-api` (`tests/it/config.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ctxpack_api::config::Key;
use serde_json::{Value, json};

use crate::Run;
use crate::pack::{Fixture, project};

/// A repository and a home directory of its own, so no configuration of the machine's user
/// or environment leaks in.
struct Setup {
    repo: Fixture,
    home: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            repo: project().0,
            home: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The user file, under `$XDG_CONFIG_HOME`.
    fn user_path(&self) -> PathBuf {
        self.home.path().join("xdg/ctxpack/config.toml")
    }

    /// The repository file.
    fn repository_path(&self) -> PathBuf {
        canonical(self.repo.path()).join("ctxpack.toml")
    }

    fn user(&self, text: &str) {
        let path = self.user_path();
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn repository(&self, text: &str) {
        self.repo.write("ctxpack.toml", text);
    }

    /// Runs `ctxpack ARGS --cwd ROOT` with only these `CTXPACK_*` variables.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ctxpack"));
        command
            .args(args)
            .arg("--cwd")
            .arg(self.repo.path())
            .stdin(Stdio::null())
            .env("NO_COLOR", "1")
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("xdg"));
        for key in Key::ALL {
            command.env_remove(key.variable());
        }
        command.envs(env.iter().copied());
        let out = command.output().expect("ctxpack runs");
        Run {
            code: out.status.code().expect("exited normally, not by a signal"),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().expect("canonical")
}

/// The JSON a successful run printed.
fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.transcript());
    serde_json::from_str(&run.stdout).expect("stdout is JSON")
}

#[test]
fn config_shows_each_value_with_its_source() {
    let s = Setup::new();
    s.user("view = \"minimal\"\nallow_run = true\nbudget = 100\n");
    s.repository("budget = \"8k\"\ninclude = [\"src/**\"]\n");
    let env = [("CTXPACK_METER", "chars")];
    let store = s.home.path().join("store");
    let store = store.to_str().expect("UTF-8");

    let run = s.run(&["config", "--store", store], &env);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let user = s.user_path().display().to_string();
    let repository = s.repository_path().display().to_string();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], format!("# user file: {user}"));
    assert_eq!(lines[1], format!("# repository file: {repository}"));
    // (line start, its source)
    let expected = [
        ("budget = 8000 ", format!("# repository {repository}")),
        (
            "meter = \"chars\" ",
            "# environment CTXPACK_METER".to_owned(),
        ),
        (
            "include = [\"src/**\"] ",
            format!("# repository {repository}"),
        ),
        ("view = \"minimal\" ", format!("# user {user}")),
        ("allow_run = true ", format!("# user {user}")),
        (&format!("store = \"{store}\" "), "# flag".to_owned()),
        ("exclude = [] ", "# default".to_owned()),
    ];
    for (start, source) in expected {
        let line = lines
            .iter()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in\n{}", run.stdout));
        assert!(line.ends_with(&source), "{line:?} ends with {source:?}");
    }
    assert_eq!(lines.len(), 2 + Key::ALL.len(), "{}", run.stdout);
    assert_eq!(run.stderr, "");

    let config = json_of(&s.run(&["config", "--format", "json"], &env));
    assert_eq!(
        config["files"],
        json!({
            "user": {"path": user, "found": true},
            "repository": {"path": repository, "found": true},
        })
    );
    assert_eq!(
        config["settings"]["budget"],
        json!({"value": 8000, "source": "repository", "origin": repository})
    );
    assert_eq!(
        config["settings"]["meter"],
        json!({"value": "chars", "source": "environment", "origin": "CTXPACK_METER"})
    );
    assert_eq!(
        config["settings"]["store"],
        json!({"value": null, "source": "default"})
    );
    assert_eq!(config["settings"]["format"]["source"], "default");
}

#[test]
fn a_repository_file_that_sets_the_store_exits_2_naming_key_and_file() {
    let s = Setup::new();
    s.repository("budget = 100\nstore = \"/tmp/elsewhere\"\n");
    let run = s.run(&["config"], &[]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    let repository = s.repository_path().display().to_string();
    assert!(
        run.stderr.starts_with(&format!(
            "error: configuration file {repository} sets `store`"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("\nhint: remove `store` from"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
    let run = s.run(&["config", "--format", "json"], &[]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    let envelope: Value = serde_json::from_str(&run.stdout).expect("an envelope");
    assert_eq!(envelope["error"]["code"], "invalid_input");
    assert_eq!(envelope["error"]["exitCode"], 2);
    // The same key in the user file is the user's to set.
    s.repository("budget = 100\n");
    s.user("store = \"/tmp/elsewhere\"\n");
    let config = json_of(&s.run(&["config", "--format", "json"], &[]));
    assert_eq!(config["settings"]["store"]["value"], "/tmp/elsewhere");
    assert_eq!(config["settings"]["store"]["source"], "user");
}

#[test]
fn a_mistyped_key_or_value_exits_2_with_advice() {
    let s = Setup::new();
    s.user("budjet = 5\n");
    let run = s.run(&["config"], &[]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("unknown key `budjet`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: did you mean `budget`?"),
        "{}",
        run.stderr
    );
    s.user("budget = 5\n");
    let run = s.run(&["config"], &[("CTXPACK_BUDGET", "lots")]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.contains("CTXPACK_BUDGET"), "{}", run.stderr);
    s.repository("budget = \n");
    let run = s.run(&["config"], &[]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("not valid TOML: line 1"),
        "{}",
        run.stderr
    );
}

#[test]
fn pack_takes_its_defaults_from_the_configuration_and_the_flags_win() {
    let s = Setup::new();
    assert_eq!(s.run(&["index"], &[]).code, 0);
    s.user("budget = 1100\n");
    s.repository("budget = 1200\nformat = \"json\"\n");
    // (CTXPACK_BUDGET, --budget, the budget of the pack, its source)
    let cases = [
        (None, None, 1200, "repository"),
        (Some("1500"), None, 1500, "environment"),
        (Some("1500"), Some("2k"), 2000, "flag"),
        (None, Some("3000"), 3000, "flag"),
    ];
    for (variable, flag, budget, source) in cases {
        let mut args = vec!["pack", "budget enforcement"];
        if let Some(flag) = flag {
            args.extend(["--budget", flag]);
        }
        let env: Vec<(&str, &str)> = variable
            .map(|v| ("CTXPACK_BUDGET", v))
            .into_iter()
            .collect();
        let pack = json_of(&s.run(&args, &env));
        assert_eq!(pack["budget"], budget, "{variable:?} {flag:?}");
        // The ledger records the effective configuration with its sources.
        let ledger = std::fs::read_to_string(s.repo.path().join(".ctxpack/ledger/packs.jsonl"))
            .expect("the pack was recorded");
        let record: Value =
            serde_json::from_str(ledger.lines().last().expect("a record")).expect("JSON");
        let recorded = record["config"]
            .as_array()
            .expect("a configuration")
            .iter()
            .find(|s| s["key"] == "budget")
            .expect("the budget");
        assert_eq!(recorded["value"], budget, "{variable:?} {flag:?}");
        assert_eq!(recorded["source"], source, "{variable:?} {flag:?}");
    }
    // A flag beats the configured format too.
    let run = s.run(&["pack", "budget enforcement", "--format", "text"], &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.starts_with("goal: budget enforcement\n"),
        "{}",
        run.stdout
    );
}
