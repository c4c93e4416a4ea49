//! What `verify` checks of a field's vector file against the rows it was made from.

use crate::db::Store;
use crate::error::StoreError;

impl Store {
    /// Compares every current vector file with the embeddings it copies; a file that claims
    /// to be current but holds other bytes would give wrong answers.
    pub(crate) fn verify_vectors(
        &self,
        problems: &mut Vec<crate::verify::Problem>,
    ) -> Result<(), StoreError> {
        let e = |err| crate::db::sql_error(&self.dir, err);
        let has_table: bool = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'vector_generations'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(e)?
            > 0;
        if !has_table {
            return Ok(());
        }
        let fields: Vec<(String, String, String)> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT DISTINCT g.collection, g.field, e.embedder \
                     FROM vector_generations g JOIN embeddings e \
                     ON e.collection = g.collection AND e.field = g.field \
                     WHERE length(e.vector) > 0",
                )
                .map_err(e)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(e)?
                .collect::<Result<_, _>>()
                .map_err(e)?
        };
        for (collection, field, embedder) in fields {
            // The table's vectors as they read; a blob that cannot be read is left out here,
            // since the embeddings' own check reports it.
            let mut table = std::collections::HashMap::new();
            let mut lengths = std::collections::BTreeSet::new();
            {
                let mut stmt = self
                    .conn
                    .prepare(
                        "SELECT rowid, vector FROM embeddings \
                         WHERE collection = ?1 AND field = ?2 AND embedder = ?3 \
                         AND length(vector) > 0",
                    )
                    .map_err(e)?;
                let mut rows = stmt.query([&collection, &field, &embedder]).map_err(e)?;
                while let Some(r) = rows.next().map_err(e)? {
                    let blob: Vec<u8> = r.get(1).map_err(e)?;
                    if let Ok(vector) = crate::vector_blob::decode(&blob) {
                        lengths.insert(vector.len());
                        table.insert(r.get::<_, i64>(0).map_err(e)?, vector.into_owned());
                    }
                }
            }
            let mut differs = 0u64;
            for bytes in lengths {
                self.scan_vector_file(&collection, &field, &embedder, bytes, false, |row| {
                    if table.get(&row.rowid).map(Vec::as_slice) != Some(row.vector) {
                        differs += 1;
                    }
                    Ok::<_, StoreError>(())
                })?;
            }
            if differs > 0 {
                problems.push(crate::verify::Problem {
                    part: "vectors",
                    detail: format!(
                        "the vector file of {collection}.{field} differs from the embeddings in {differs} rows"
                    ),
                    file_id: None,
                });
            }
        }
        self.verify_ann(problems)
    }
}
