//! The server's repositories and tokens as rows, shared by every process on the database.

use std::path::{Path, PathBuf};

use ctxpack_store::StoreError;
use ctxpack_store::registry::{RegistryRows, RepoRow, TokenRow};

use crate::Database;

/// The registry's rows in PostgreSQL.
#[derive(Clone, Debug)]
pub struct PgRegistry {
    pub(crate) db: Database,
}

fn repo_row(row: &postgres::Row) -> RepoRow {
    RepoRow {
        name: row.get(0),
        path: PathBuf::from(row.get::<_, String>(1)),
        created: row.get(2),
        url: row.get(3),
        git_dir: row.get::<_, Option<String>>(4).map(PathBuf::from),
        common_dir: row.get::<_, Option<String>>(5).map(PathBuf::from),
    }
}

fn token_row(row: &postgres::Row) -> TokenRow {
    TokenRow {
        id: row.get(0),
        name: row.get(1),
        digest: row.get(2),
        repo: row.get(3),
        scope: row.get(4),
        created: row.get(5),
        expires: row.get(6),
        revoked: row.get(7),
    }
}

const TOKEN_COLUMNS: &str = "id, name, digest, repo, scope, created, expires, revoked";

impl RegistryRows for PgRegistry {
    fn add_repo(&self, row: &RepoRow) -> Result<(), StoreError> {
        let (path, git_dir, common_dir) = row.stored_paths(Path::new(""))?;
        let added = self.db.with(|c| {
            c.execute(
                "INSERT INTO ctxpack_repos (name, path, created, url, git_dir, common_dir)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                &[
                    &row.name,
                    &path,
                    &row.created,
                    &row.url,
                    &git_dir,
                    &common_dir,
                ],
            )
            .map_err(|e| self.db.error(&e))
        })?;
        if added == 0 {
            return Err(StoreError::Conflict {
                dir: PathBuf::new(),
                detail: format!("a repository named `{}` is already registered", row.name),
            });
        }
        Ok(())
    }

    fn remove_repo(&self, name: &str) -> Result<bool, StoreError> {
        self.db.with(|c| {
            let error = |e: postgres::Error| self.db.error(&e);
            let mut tx = c.transaction().map_err(error)?;
            let removed = tx
                .execute("DELETE FROM ctxpack_repos WHERE name = $1", &[&name])
                .map_err(error)?;
            tx.execute("DELETE FROM ctxpack_tokens WHERE repo = $1", &[&name])
                .map_err(error)?;
            tx.commit().map_err(error)?;
            Ok(removed > 0)
        })
    }

    fn repos(&self) -> Result<Vec<RepoRow>, StoreError> {
        self.db.with(|c| {
            let rows = c
                .query(
                    "SELECT name, path, created, url, git_dir, common_dir FROM ctxpack_repos ORDER BY name",
                    &[],
                )
                .map_err(|e| self.db.error(&e))?;
            Ok(rows.iter().map(repo_row).collect())
        })
    }

    fn repo(&self, name: &str) -> Result<Option<RepoRow>, StoreError> {
        self.db.with(|c| {
            let row = c
                .query_opt(
                    "SELECT name, path, created, url, git_dir, common_dir FROM ctxpack_repos WHERE name = $1",
                    &[&name],
                )
                .map_err(|e| self.db.error(&e))?;
            Ok(row.as_ref().map(repo_row))
        })
    }

    fn add_token(&self, row: &TokenRow) -> Result<(), StoreError> {
        let added = self.db.with(|c| {
            c.execute(
                "INSERT INTO ctxpack_tokens (id, name, digest, repo, scope, created, expires, revoked)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
                &[
                    &row.id,
                    &row.name,
                    &row.digest,
                    &row.repo,
                    &row.scope,
                    &row.created,
                    &row.expires,
                    &row.revoked,
                ],
            )
            .map_err(|e| self.db.error(&e))
        })?;
        if added == 0 {
            return Err(StoreError::Conflict {
                dir: PathBuf::new(),
                detail: format!("a token named `{}` already exists", row.name),
            });
        }
        Ok(())
    }

    fn token(&self, id: &str) -> Result<Option<TokenRow>, StoreError> {
        self.db.with(|c| {
            let row = c
                .query_opt(
                    &format!("SELECT {TOKEN_COLUMNS} FROM ctxpack_tokens WHERE id = $1"),
                    &[&id],
                )
                .map_err(|e| self.db.error(&e))?;
            Ok(row.as_ref().map(token_row))
        })
    }

    fn tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        self.db.with(|c| {
            let rows = c
                .query(
                    &format!("SELECT {TOKEN_COLUMNS} FROM ctxpack_tokens ORDER BY name"),
                    &[],
                )
                .map_err(|e| self.db.error(&e))?;
            Ok(rows.iter().map(token_row).collect())
        })
    }

    fn revoke_token(&self, name: &str, now: i64) -> Result<bool, StoreError> {
        let changed = self.db.with(|c| {
            c.execute(
                "UPDATE ctxpack_tokens SET revoked = $2 WHERE name = $1 AND revoked IS NULL",
                &[&name, &now],
            )
            .map_err(|e| self.db.error(&e))
        })?;
        Ok(changed > 0)
    }
}
