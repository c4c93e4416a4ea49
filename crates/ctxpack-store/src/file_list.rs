//! A whole manifest's file versions kept as one value beside its rows (format 13).
//!
//! A search of a snapshot is scoped to the file versions it lists. Read from the manifest's
//! rows, that is a walk over every path of the snapshot's base (some 150,000 rows, a third of a
//! pack's time, in a monorepo). So a snapshot stored whole also keeps its file versions' ids,
//! ascending, as one blob in its `snapshots` row: a search reads that row and looks up only the
//! paths its chain's deltas change. The blob is written in the transaction that writes the
//! rows, and what is read from it is checked against the snapshot's record exactly as a fold of
//! the rows is, so a blob changed outside ctxpack is damage on the read path. Rows changed under
//! an intact blob no longer touch a search (it reads none of them); `verify` compares the two.
//!
//! Encoding: each id's difference from the one before it (the first from 0) as an unsigned
//! LEB128 number. Ids are positive and listed once, so every difference is at least 1.

use std::collections::{BTreeMap, HashSet};

use rusqlite::{OptionalExtension, Transaction, params};

use crate::db::{Store, sql_error};
use crate::error::StoreError;
use crate::vector_blob::leb128;

/// The first format whose snapshots keep their file list.
pub(crate) const FILE_LISTS_FROM: i64 = 13;

/// What format 13 adds: the file list of each snapshot stored whole (NULL for one stored as
/// changes, and for one committed before, until the migration writes it).
pub(crate) const FORMAT_13: &str = "
ALTER TABLE snapshots ADD COLUMN file_ids BLOB;
";

/// A snapshot whose deltas change at most this many paths reads its base's file list
/// whatever the manifest's size.
const LOOKUPS_ALWAYS: usize = 32;

/// `ids` (any order) as a file list.
pub(crate) fn encode(ids: impl IntoIterator<Item = i64>) -> Vec<u8> {
    let mut ids: Vec<i64> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::with_capacity(ids.len() * 2);
    let mut previous = 0i64;
    for id in ids {
        leb128(&mut out, id.wrapping_sub(previous).cast_unsigned());
        previous = id;
    }
    out
}

/// The ids of a file list, ascending; `None` when `bytes` are not what [`encode`] writes for
/// positive ids (a step of 0, a number written longer than it is or past 64 bits, an id past
/// `i64::MAX`, a number cut off at the end).
pub(crate) fn decode(bytes: &[u8]) -> Option<Vec<i64>> {
    // Every id takes at least a byte: the list is never longer than its bytes.
    let mut out = Vec::with_capacity(bytes.len().min(1 << 20));
    let mut previous = 0i64;
    let mut step = 0u64;
    let mut shift = 0u32;
    for &byte in bytes {
        let low = u64::from(byte & 0x7f);
        if shift > 63 || (shift == 63 && low > 1) {
            return None;
        }
        // A last byte of 0 after others would write the same number longer than it is.
        if byte == 0 && shift > 0 {
            return None;
        }
        step |= low << shift;
        if byte & 0x80 != 0 {
            shift += 7;
            continue;
        }
        let step_i64 = i64::try_from(step).ok().filter(|s| *s > 0)?;
        previous = previous.checked_add(step_i64)?;
        out.push(previous);
        step = 0;
        shift = 0;
    }
    (shift == 0).then_some(out)
}

/// Writes the file list of snapshot `sha`: `ids`, the file versions it lists when it is stored
/// whole; NULL when it is stored as changes (`None`).
pub(crate) fn write_file_list(
    tx: &Transaction<'_>,
    sha: &str,
    ids: Option<impl IntoIterator<Item = i64>>,
) -> rusqlite::Result<()> {
    let list = ids.map(encode);
    tx.execute(
        "UPDATE snapshots SET file_ids = ?2 WHERE sha = ?1",
        params![sha, list],
    )?;
    Ok(())
}

/// The migration to format 13: every snapshot stored whole gets its file list, from its rows.
pub(crate) fn write_file_lists(tx: &Transaction<'_>, has_bases: bool) -> rusqlite::Result<()> {
    tx.execute_batch(FORMAT_13)?;
    let wholes: Vec<String> = {
        let whole = if has_bases { "WHERE base IS NULL" } else { "" };
        let mut stmt = tx.prepare(&format!("SELECT sha FROM snapshots {whole}"))?;
        stmt.query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?
    };
    let mut ids =
        tx.prepare("SELECT file_id FROM manifest WHERE snapshot = ?1 AND file_id IS NOT NULL")?;
    for sha in wholes {
        let listed: Vec<i64> = ids
            .query_map([&sha], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        write_file_list(tx, &sha, Some(listed))?;
    }
    Ok(())
}

impl Store {
    /// The file list of snapshot `sha`, if it keeps one (stored whole, format 13 on).
    pub(crate) fn file_list(&self, sha: &str) -> Result<Option<Vec<i64>>, StoreError> {
        if self.format_version() < FILE_LISTS_FROM {
            return Ok(None);
        }
        let blob: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT file_ids FROM snapshots WHERE sha = ?1")
            .and_then(|mut s| s.query_row([sha], |r| r.get(0)).optional())
            .map_err(|e| sql_error(&self.dir, e))?
            .flatten();
        blob.map(|bytes| {
            decode(&bytes).ok_or_else(|| StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!(
                    "the file list of snapshot {sha} is not one ctxpack writes: the store was changed outside ctxpack"
                ),
            })
        })
        .transpose()
    }

    /// The file versions listed by the snapshot whose chain ends at `whole` (stored whole) with
    /// `changed` folded from the deltas above it: `whole`'s file list less the versions of the
    /// paths a delta changes, plus the deltas' versions. `None` when `whole` keeps no file
    /// list, or when the deltas change so many paths that a walk of the rows is cheaper.
    pub(crate) fn listed_from_file_list(
        &self,
        whole: &str,
        changed: &BTreeMap<String, Option<i64>>,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        let Some(mut ids) = self.file_list(whole)? else {
            return Ok(None);
        };
        // A lookup costs about as much as reading a dozen rows in a walk; a few dozen are
        // cheap whatever the manifest's size.
        if changed.len() > LOOKUPS_ALWAYS && changed.len().saturating_mul(12) > ids.len() {
            return Ok(None);
        }
        // Prepared whatever the deltas change: a store whose manifest table is gone is damaged,
        // even where its file lists would do.
        let mut entry = self
            .conn
            .prepare_cached("SELECT file_id FROM manifest WHERE snapshot = ?1 AND path = ?2")
            .map_err(|e| sql_error(&self.dir, e))?;
        if !changed.is_empty() {
            let mut replaced = HashSet::new();
            for path in changed.keys() {
                let id: Option<Option<i64>> = entry
                    .query_row(params![whole, path], |r| r.get(0))
                    .optional()
                    .map_err(|e| sql_error(&self.dir, e))?;
                replaced.extend(id.flatten());
            }
            ids.retain(|id| !replaced.contains(id));
            ids.extend(changed.values().filter_map(|id| *id));
        }
        Ok(Some(ids))
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};
    use proptest::prelude::*;

    #[test]
    fn a_list_is_its_ids_ascending_once() {
        assert_eq!(decode(&encode([5, 1, 300, 5])), Some(vec![1, 5, 300]));
        assert_eq!(encode([1, 2, 130]), vec![1, 1, 0x80, 0x01]);
        assert_eq!(decode(&[]), Some(vec![]));
        assert_eq!(decode(&encode([i64::MAX])), Some(vec![i64::MAX]));
    }

    #[test]
    fn bytes_no_list_has_are_refused() {
        // A step of 0 (an id twice), a number cut off, one past 64 bits, an id past i64::MAX,
        // a number written longer than it is.
        assert_eq!(decode(&[1, 0]), None);
        assert_eq!(decode(&[0x81, 0x00]), None);
        assert_eq!(decode(&[0x81]), None);
        assert_eq!(decode(&[0xff; 11]), None);
        let mut past = encode([i64::MAX]);
        past.push(1);
        assert_eq!(decode(&past), None);
        assert_eq!(
            decode(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02]),
            None
        );
    }

    proptest! {
        #[test]
        fn a_list_reads_back_as_written(ids in proptest::collection::vec(1i64..i64::MAX, 0..200)) {
            let mut expected = ids.clone();
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(decode(&encode(ids)), Some(expected));
        }

        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Some(ids) = decode(&bytes) {
                prop_assert!(ids.windows(2).all(|w| w[0] < w[1]) && ids.iter().all(|id| *id > 0));
                prop_assert_eq!(encode(ids), bytes);
            }
        }
    }
}
