//! Artifacts: session notes, harness output and evidence stored beside the snapshots, which
//! packs merge by scope.

use ctxpack_index::indexer::{IndexOptions, STORED_CHUNKER, prepare_text};
use ctxpack_store::NewFile;
use ctxpack_store::artifacts::{Added, ArtifactRow, NewArtifact};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Hint, Result};
use crate::workspace::Workspace;

/// The scope an artifact belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactScope {
    /// Notes of the current session.
    Session,
    /// Output of the agent's harness.
    Harness,
    /// Logs and results that support a claim (CI output, test runs).
    Evidence,
}

impl ArtifactScope {
    /// `session`, `harness` or `evidence`.
    pub fn name(self) -> &'static str {
        match self {
            ArtifactScope::Session => "session",
            ArtifactScope::Harness => "harness",
            ArtifactScope::Evidence => "evidence",
        }
    }
}

impl std::str::FromStr for ArtifactScope {
    type Err = Error;

    fn from_str(s: &str) -> Result<ArtifactScope> {
        match s {
            "session" => Ok(ArtifactScope::Session),
            "harness" => Ok(ArtifactScope::Harness),
            "evidence" => Ok(ArtifactScope::Evidence),
            other => Err(Error::invalid_field(
                "scope",
                format!("unknown artifact scope `{other}`: expected session, harness or evidence"),
            )),
        }
    }
}

/// Store an artifact (its content is given beside the request).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactAddRequest {
    /// session: notes of the current session; harness: output of the agent's harness;
    /// evidence: logs and results that support a claim (CI output, test runs).
    pub scope: ArtifactScope,
    /// Its id (letters, digits, `-`, `_`, `.`; default: the first 16 hex digits of the
    /// content's SHA-256). Reusing an id for different content is a conflict.
    #[serde(default)]
    pub id: Option<String>,
    /// Where it came from, e.g. `ci`; names its source family when no id is given.
    #[serde(default)]
    pub source_id: Option<String>,
    /// A human title, shown with its chunks.
    #[serde(default)]
    pub title: Option<String>,
    /// A file name such as `build.log` or `notes.md`, used to choose how the text is chunked.
    #[serde(default)]
    pub name: Option<String>,
    /// The largest accepted size in bytes.
    #[serde(default = "default_max_bytes")]
    #[schemars(skip)]
    pub max_bytes: u64,
    /// Wait for another writer instead of failing.
    #[serde(default)]
    #[schemars(skip)]
    pub wait: bool,
}

/// 4 MiB.
fn default_max_bytes() -> u64 {
    ArtifactAddRequest::DEFAULT_MAX_BYTES
}

impl ArtifactAddRequest {
    /// The default size limit: 4 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 4 * 1024 * 1024;

    /// A request for `scope` with every other field at its default.
    pub fn new(scope: ArtifactScope) -> ArtifactAddRequest {
        ArtifactAddRequest {
            scope,
            id: None,
            source_id: None,
            title: None,
            name: None,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            wait: false,
        }
    }
}

/// A stored artifact, as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactInfo {
    /// Its id.
    pub id: String,
    /// Its scope.
    pub scope: String,
    /// Where it came from.
    pub source_id: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// The source family its chunks belong to (`artifact:<id>` or `evidence:<id>`).
    pub family: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// SHA-256 of its content.
    pub sha256: String,
    /// Unix seconds when it was added.
    pub created_at: i64,
}

impl From<ArtifactRow> for ArtifactInfo {
    fn from(a: ArtifactRow) -> ArtifactInfo {
        let kind = if a.scope == "evidence" {
            "evidence"
        } else {
            "artifact"
        };
        ArtifactInfo {
            family: format!("{kind}:{}", a.family_id),
            id: a.id,
            scope: a.scope,
            source_id: a.source_id,
            title: a.title,
            bytes: a.bytes,
            sha256: a.content_hash,
            created_at: a.created_at,
        }
    }
}

fn check_id(id: &str, field: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_field(
            field,
            format!(
                "`{id}` is not valid: use 1 to 128 letters, digits, `-`, `_` or `.`, not starting with `.`"
            ),
        ))
    }
}

impl Workspace {
    /// Stores `content` as an artifact and returns its id. The same id with the same content is
    /// a no-op; with other content it is a conflict.
    pub fn add_artifact(&self, request: &ArtifactAddRequest, content: &[u8]) -> Result<String> {
        if let Some(id) = &request.id {
            check_id(id, "id")?;
        }
        if let Some(source) = &request.source_id {
            check_id(source, "source_id")?;
        }
        if content.len() as u64 > request.max_bytes {
            return Err(Error::invalid_field(
                "max_bytes",
                format!(
                    "the artifact is {} bytes, over the limit of {}",
                    content.len(),
                    request.max_bytes
                ),
            )
            .with_hint(Hint::RaiseLimit));
        }
        let hash: String = Sha256::digest(content)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let id = request.id.clone().unwrap_or_else(|| hash[..16].to_owned());
        let name = request.name.as_deref().unwrap_or(id.as_str());
        let chunks = prepare_text(name, content, &IndexOptions::default()).map_err(|reason| {
            Error::invalid(format!(
                "the artifact cannot be stored: it is {}",
                if reason == "binary" {
                    "binary"
                } else {
                    "not valid UTF-8"
                }
            ))
        })?;
        let family_id = request
            .id
            .clone()
            .or_else(|| request.source_id.clone())
            .unwrap_or_else(|| id.clone());
        let artifact = NewArtifact {
            row: ArtifactRow {
                id: id.clone(),
                scope: request.scope.name().to_owned(),
                source_id: request.source_id.clone(),
                title: request
                    .title
                    .as_deref()
                    .map(|t| crate::mask::text(t, &mut ctxpack_core::RedactionSummary::default())),
                family_id,
                content_hash: hash.clone(),
                bytes: content.len() as u64,
                created_at: 0,
                file_id: 0,
            },
            file: NewFile {
                path: format!("{}{id}", ctxpack_index::retrieve::ARTIFACT_PREFIX),
                blob: hash,
                bytes: content.len() as u64,
                skip_reason: None,
                chunks,
                imports: None,
            },
        };
        // With a database as the system of record, the cache starts from what it holds, and
        // the artifact is published once stored.
        if let Some(record) = &self.snapshots {
            self.sync_artifacts(record)?;
        }
        let mut writer = self.writer("storing an artifact", request.wait, true)?;
        // The same id with the same content is already there: nothing to do.
        let added = writer
            .store
            .add_artifact(&artifact, STORED_CHUNKER)
            .and_then(|added| match &self.snapshots {
                Some(record) => record.publish_artifact(&artifact, STORED_CHUNKER),
                None => Ok(added),
            });
        let (Added::Stored | Added::Unchanged) = added.map_err(|e| {
            let conflict = matches!(e, ctxpack_store::StoreError::Conflict { .. });
            let error = Error::from(e);
            if conflict {
                error.with_hint(Hint::RemoveArtifact { id: id.clone() })
            } else {
                error
            }
        })?;
        Ok(id)
    }

    /// The artifacts, of one scope or all (none when there is no store yet).
    pub fn artifacts(&self, scope: Option<ArtifactScope>) -> Result<Vec<ArtifactInfo>> {
        if let Some(record) = &self.snapshots {
            self.sync_artifacts(record)?;
        }
        let rows = match self.try_open_store()? {
            Some(store) => store.artifacts(scope.map(ArtifactScope::name))?,
            None => Vec::new(),
        };
        Ok(rows.into_iter().map(ArtifactInfo::from).collect())
    }

    /// An artifact and its stored (masked) text.
    pub fn artifact(&self, id: &str) -> Result<(ArtifactInfo, String)> {
        if let Some(record) = &self.snapshots {
            self.sync_artifacts(record)?;
        }
        let store = self.open_store()?;
        let row = find(&store, id)?;
        let text = store.artifact_text(&row)?;
        Ok((row.into(), text))
    }

    /// Removes an artifact; packs no longer see it.
    pub fn remove_artifact(&self, id: &str) -> Result<()> {
        if let Some(record) = &self.snapshots {
            self.require_write("removing an artifact")?;
            if !record.remove_artifact(id)? {
                return Err(
                    Error::not_found(format!("no artifact `{id}`")).with_hint(Hint::ListArtifacts)
                );
            }
            return self.sync_artifacts(record);
        }
        let mut writer = self.writer("removing an artifact", false, false)?;
        find(&writer.store, id)?;
        writer.store.remove_artifact(id)?;
        Ok(())
    }
}

fn find(store: &ctxpack_store::Store, id: &str) -> Result<ArtifactRow> {
    store.artifact(id)?.ok_or_else(|| {
        Error::not_found(format!("no artifact `{id}`")).with_hint(Hint::ListArtifacts)
    })
}
