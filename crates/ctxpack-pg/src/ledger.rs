//! A repository's ledger as rows: records appended in one transaction with their texts, and
//! read back by page, by id prefix and whole.

use std::path::PathBuf;

use ctxpack_core::Pack;
use ctxpack_store::ledger::{INDEXED_GOAL_CHARS, indexed_goal, replay, text_matches};
use ctxpack_store::{
    Ledger, LedgerContents, LedgerPage, LedgerQuery, LedgerRecord, LedgerStore, RecordContext,
    StoreError,
};

use crate::Database;

/// One repository's ledger in PostgreSQL: a record row per pack, its texts by hash; a record
/// and its texts are written in one transaction, so a record is never without its texts.
#[derive(Clone, Debug)]
pub struct PgLedger {
    pub(crate) db: Database,
    pub(crate) repo: String,
}

impl PgLedger {
    fn label(&self) -> PathBuf {
        PathBuf::from(format!("{} (ledger of {})", self.db.inner.label, self.repo))
    }

    /// The records a query's rows hold in their first column; one that cannot be read is
    /// damage, which a page or a lookup by id cannot skip.
    fn records(
        &self,
        query: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<LedgerRecord>, StoreError> {
        let rows = self
            .db
            .with(|c| c.query(query, params).map_err(|e| self.db.error(&e)))?;
        rows.iter()
            .map(|row| {
                serde_json::from_str(row.get(0)).map_err(|e| StoreError::Corrupt {
                    dir: self.label(),
                    detail: format!("a ledger record cannot be read: {e}"),
                })
            })
            .collect()
    }
}

impl LedgerStore for PgLedger {
    fn append(&self, pack: &Pack, context: &RecordContext) -> Result<LedgerRecord, StoreError> {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let record = Ledger::record(pack, context, time);
        let mut texts: Vec<(&str, &str)> = pack
            .hits
            .iter()
            .zip(&record.hits)
            .map(|(hit, ledger_hit)| (ledger_hit.text.as_str(), hit.candidate.text.as_str()))
            .collect();
        if let (Some(hash), Some(output)) = (&record.output, &context.output) {
            texts.push((hash.as_str(), output.as_str()));
        }
        let line = serde_json::to_string(&record).expect("a ledger record serializes");
        let time = i64::try_from(record.time).unwrap_or(i64::MAX);
        self.db.with(|c| {
            let error = |e: postgres::Error| self.db.error(&e);
            let mut tx = c.transaction().map_err(error)?;
            let insert = tx
                .prepare(
                    "INSERT INTO ctxpack_ledger_texts (repo, hash, text) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                )
                .map_err(error)?;
            for (hash, text) in &texts {
                tx.execute(&insert, &[&self.repo, hash, text])
                    .map_err(error)?;
            }
            tx.execute(
                "INSERT INTO ctxpack_ledger (repo, id, time, record, goal)
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    &self.repo,
                    &record.id,
                    &time,
                    &line,
                    &indexed_goal(&record.goal).0,
                ],
            )
            .map_err(error)?;
            tx.commit().map_err(error)
        })?;
        Ok(record)
    }

    fn read(&self) -> Result<LedgerContents, StoreError> {
        let rows = self.db.with(|c| {
            c.query(
                "SELECT record FROM ctxpack_ledger WHERE repo = $1 ORDER BY seq",
                &[&self.repo],
            )
            .map_err(|e| self.db.error(&e))
        })?;
        let mut contents = LedgerContents::default();
        for (i, row) in rows.iter().enumerate() {
            match serde_json::from_str::<LedgerRecord>(row.get(0)) {
                Ok(record) => contents.records.push(record),
                Err(_) => contents.torn.push(i + 1),
            }
        }
        Ok(contents)
    }

    fn page(&self, query: &LedgerQuery) -> Result<LedgerPage, StoreError> {
        // Times and goals of every record, newest first (short rows: a goal column keeps the
        // start of a long goal; a record written before goals had their column, or whose goal
        // is longer than its column when the query filters on goals, is read for its goal, and
        // left out if it cannot be read, as `read` reports it), then the page's records alone.
        let cap = i32::try_from(INDEXED_GOAL_CHARS).unwrap_or(i32::MAX);
        let rows = self.db.with(|c| {
            c.query(
                "SELECT seq, time, goal,
                        CASE WHEN goal IS NULL OR ($2 AND char_length(goal) >= $3) THEN record END
                 FROM ctxpack_ledger WHERE repo = $1 ORDER BY seq DESC",
                &[&self.repo, &query.goal.is_some(), &cap],
            )
            .map_err(|e| self.db.error(&e))
        })?;
        let listed: Vec<(i64, u64, String)> = rows
            .iter()
            .filter_map(|row| {
                let time = u64::try_from(row.get::<_, i64>(1)).unwrap_or(0);
                let goal = match row.get::<_, Option<&str>>(3) {
                    None => row.get::<_, Option<String>>(2)?,
                    Some(record) => serde_json::from_str::<LedgerRecord>(record).ok()?.goal,
                };
                Some((row.get(0), time, goal))
            })
            .collect();
        let (page, total) = query.select(listed.iter().map(|(_, t, g)| (*t, g.as_str())));
        let seqs: Vec<i64> = page.iter().map(|&p| listed[p].0).collect();
        let records = self.records(
            "SELECT record FROM ctxpack_ledger WHERE seq = ANY($1) ORDER BY seq DESC",
            &[&seqs],
        )?;
        Ok(LedgerPage {
            records,
            total,
            torn: Vec::new(),
        })
    }

    fn find(&self, prefix: &str) -> Result<LedgerContents, StoreError> {
        let records = self.records(
            "SELECT record FROM ctxpack_ledger
             WHERE repo = $1 AND starts_with(id, $2) ORDER BY seq",
            &[&self.repo, &prefix],
        )?;
        Ok(LedgerContents {
            records,
            torn: Vec::new(),
        })
    }

    fn text(&self, hash: &str) -> Result<String, StoreError> {
        let text: Option<String> = self.db.with(|c| {
            let row = c
                .query_opt(
                    "SELECT text FROM ctxpack_ledger_texts WHERE repo = $1 AND hash = $2",
                    &[&self.repo, &hash],
                )
                .map_err(|e| self.db.error(&e))?;
            Ok(row.map(|r| r.get(0)))
        })?;
        let corrupt = |detail: String| StoreError::Corrupt {
            dir: self.label(),
            detail,
        };
        match text {
            Some(text) if text_matches(hash, &text) => Ok(text),
            Some(_) => Err(corrupt(format!(
                "ledger text {hash} does not match its hash"
            ))),
            None => Err(corrupt(format!("ledger text {hash} is missing"))),
        }
    }

    fn replay(&self, record: &LedgerRecord) -> Result<Pack, StoreError> {
        replay(record, &self.label(), |hash| self.text(hash))
    }
}
