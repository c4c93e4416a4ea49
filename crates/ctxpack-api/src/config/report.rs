//! The effective configuration: each setting with where it came from, as `config show` prints
//! it and a ledger record keeps it.

use std::fmt;
use std::path::PathBuf;

use ctxpack_core::RedactionSummary;
use ctxpack_store::ledger::LedgerSetting;
use serde_json::{Map, Value as Json, json};

use super::keys::{Key, Source};
use crate::error::{Error, ErrorKind, Result};

/// A configuration file that was looked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFile {
    /// Where.
    pub path: PathBuf,
    /// Whether it was there (and was read).
    pub found: bool,
}

/// The configuration files that were looked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigFiles {
    /// The user file; `None` when there is no place for one (no configuration or home
    /// directory is known).
    pub user: Option<ConfigFile>,
    /// The repository file; `None` outside a repository's working tree.
    pub repository: Option<ConfigFile>,
}

/// One key's effective value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectiveSetting {
    /// The key's name ([`Key::name`]).
    pub key: String,
    /// The value as JSON (`null`: not set, the workspace decides).
    pub value: Json,
    /// Where it came from.
    pub source: Source,
}

/// The effective configuration a pack was built with: what a ledger record keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EffectiveConfig {
    /// The settings, in [`Key::ALL`] order.
    pub settings: Vec<EffectiveSetting>,
}

impl EffectiveConfig {
    /// The setting of the key named `key`.
    pub fn get(&self, key: &str) -> Option<&EffectiveSetting> {
        self.settings.iter().find(|s| s.key == key)
    }

    /// Only the settings that concern packs (without the plan-run keys).
    pub fn for_packs(mut self) -> EffectiveConfig {
        self.settings
            .retain(|s| Key::parse(&s.key).is_none_or(|k| !k.is_plan_key()));
        self
    }

    /// Only the settings that concern plan runs (a plan states its packs' own budgets, meters
    /// and selectors).
    pub fn for_plans(mut self) -> EffectiveConfig {
        self.settings
            .retain(|s| Key::parse(&s.key).is_some_and(|k| k.is_plan_key() || k == Key::Store));
        self
    }

    /// `{"budget": {"value": 8000, "source": "user", "origin": "/…/config.toml"}, …}` in key
    /// order.
    pub fn to_json(&self) -> Json {
        let mut map = Map::new();
        for s in &self.settings {
            let mut entry = Map::new();
            entry.insert("value".into(), s.value.clone());
            entry.insert("source".into(), json!(s.source.name()));
            if let Some(origin) = s.source.origin() {
                entry.insert("origin".into(), json!(origin));
            }
            map.insert(s.key.clone(), Json::Object(entry));
        }
        Json::Object(map)
    }

    /// The settings as a ledger record keeps them, with any secret in a value masked.
    pub(crate) fn to_ledger(&self) -> Vec<LedgerSetting> {
        self.settings
            .iter()
            .map(|s| {
                let mut value = s.value.clone();
                mask_strings(&mut value);
                LedgerSetting {
                    key: s.key.clone(),
                    value,
                    source: s.source.name().to_owned(),
                    origin: s.source.origin(),
                }
            })
            .collect()
    }

    /// The settings a ledger record kept; a source this build does not know is damage.
    pub(crate) fn from_ledger(settings: &[LedgerSetting]) -> Result<EffectiveConfig> {
        let settings = settings
            .iter()
            .map(|s| {
                let source =
                    Source::from_parts(&s.source, s.origin.as_deref()).ok_or_else(|| {
                        Error::new(
                            ErrorKind::Damaged,
                            format!(
                                "a ledger record gives `{}` the unknown configuration source `{}`",
                                s.key, s.source
                            ),
                        )
                    })?;
                Ok(EffectiveSetting {
                    key: s.key.clone(),
                    value: s.value.clone(),
                    source,
                })
            })
            .collect::<Result<_>>()?;
        Ok(EffectiveConfig { settings })
    }
}

pub(super) fn mask_strings(value: &mut Json) {
    match value {
        Json::String(s) => *s = crate::mask::text(s, &mut RedactionSummary::default()),
        Json::Array(items) => items.iter_mut().for_each(mask_strings),
        Json::Object(map) => map.values_mut().for_each(mask_strings),
        _ => {}
    }
}

/// What `ctxpack config` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigReport {
    /// The files looked for.
    pub files: ConfigFiles,
    /// Every key's effective value and source.
    pub settings: EffectiveConfig,
}

impl ConfigReport {
    /// `{"files": {"user": {"path", "found"} | null, "repository": …}, "settings": {…}}`.
    pub fn to_json(&self) -> Json {
        let file = |f: &Option<ConfigFile>| {
            f.as_ref().map_or(
                Json::Null,
                |f| json!({"path": f.path.to_string_lossy(), "found": f.found}),
            )
        };
        json!({
            "files": {
                "user": file(&self.files.user),
                "repository": file(&self.files.repository),
            },
            "settings": self.settings.to_json(),
        })
    }
}

/// The files as comments, then one `key = value` line per key (valid TOML, so a line can be
/// copied into a file) with its source as a comment.
impl fmt::Display for ConfigReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = |name: &str, file: &Option<ConfigFile>, none: &str| match file {
            Some(ConfigFile { path, found: true }) => format!("# {name}: {}", path.display()),
            Some(ConfigFile { path, found: false }) => {
                format!("# {name}: {} (not found)", path.display())
            }
            None => format!("# {name}: none ({none})"),
        };
        writeln!(
            f,
            "{}",
            file(
                "user file",
                &self.files.user,
                "no configuration or home directory is known"
            )
        )?;
        writeln!(
            f,
            "{}",
            file(
                "repository file",
                &self.files.repository,
                "not in a git working tree"
            )
        )?;
        let lines: Vec<(String, &Source)> = self
            .settings
            .settings
            .iter()
            .map(|s| {
                let line = if s.value.is_null() {
                    format!("# {} is not set", s.key)
                } else {
                    format!("{} = {}", s.key, s.value)
                };
                (line, &s.source)
            })
            .collect();
        let width = lines
            .iter()
            .map(|(l, _)| l.chars().count())
            .filter(|&w| w <= 40)
            .max()
            .unwrap_or(0);
        for (line, source) in lines {
            writeln!(f, "{line:<width$}  # {source}")?;
        }
        Ok(())
    }
}
