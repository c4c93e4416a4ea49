//! Approximate vector indexes: declaring them, and building or updating their files from the
//! field's vector file whenever it is rewritten.
//!
//! An index is trained once (k-means over a sample, [`ivf::train`]) and then kept up to date
//! row by row: when the vector file changes, rows whose rowid and codes the old file holds
//! keep their list, new rows join their nearest list, and rows gone from the vector file
//! leave. It is trained again only when the rows number more than twice, or fewer than half,
//! the rows it was trained on.

use std::collections::HashMap;

use ctxpack_docs::embed::{DIM, EMBEDDER_ID, Vector, fnv1a64};
use ctxpack_docs::ivf;
use ctxpack_store::Store;
use ctxpack_store::docs::ann::{AnnData, AnnDeclaration, parse_entry};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::parse_field;
use crate::error::{Error, Result};
use crate::workspace::Workspace;

/// Declare an approximate (inverted-file) index of a field's vectors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["collection", "field"]))]
pub struct AnnRequest {
    /// The collection.
    pub collection: String,
    /// The string field whose vectors are indexed (a dotted path).
    pub field: String,
    /// How many lists to cluster the vectors into (0: about the square root of their number).
    pub lists: u32,
    /// How many lists a search reads (0: about √(10 × lists)).
    pub probes: u32,
    /// Wait for another writer instead of failing.
    #[schemars(skip)]
    pub wait: bool,
}

/// A declared index and the state of its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnIndexInfo {
    /// The field.
    pub field: String,
    /// Lists and probes as declared (0: the default).
    pub declared: (u32, u32),
    /// Lists, probes and rows of its file, when one is current.
    pub built: Option<(usize, usize, usize)>,
}

impl AnnIndexInfo {
    /// `{"field":…,"lists":…,"probes":…,"rows":…,"current":…}`.
    pub fn to_json(&self) -> Value {
        let (lists, probes, rows) = self.built.unwrap_or_default();
        json!({
            "field": self.field,
            "lists": lists,
            "probes": probes,
            "rows": rows,
            "current": self.built.is_some(),
        })
    }
}

impl std::fmt::Display for AnnIndexInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.built {
            Some((lists, probes, rows)) => write!(
                f,
                "{}\t{rows} rows in {lists} lists, {probes} probed",
                self.field
            ),
            None => write!(
                f,
                "{}\tnot current: `ctxpack docs vsync` on the field builds it",
                self.field
            ),
        }
    }
}

/// The probes a search reads for a declaration over an index of `lists` lists.
pub(super) fn probes(declaration: &AnnDeclaration, lists: usize) -> usize {
    match declaration.probes {
        0 => ivf::default_probes(lists),
        p => p as usize,
    }
    .clamp(1, lists.max(1))
}

fn info(store: &Store, collection: &str, declaration: AnnDeclaration) -> Result<AnnIndexInfo> {
    let built = store
        .open_ann_file(collection, &declaration.field, DIM)?
        .filter(|f| f.is_current())
        .map(|f| (f.lists(), probes(&declaration, f.lists()), f.len()));
    Ok(AnnIndexInfo {
        declared: (declaration.lists, declaration.probes),
        field: declaration.field,
        built,
    })
}

impl Workspace {
    /// Declares an approximate index of a field (or changes its lists and probes) and builds
    /// it from the field's current vectors. Searches with long queries then read the lists
    /// nearest the query instead of every vector; `vsearch --exact` still scans them all.
    pub fn create_ann(&self, request: &AnnRequest) -> Result<AnnIndexInfo> {
        parse_field(&request.field)?;
        if request.lists as usize > ivf::MAX_LISTS {
            return Err(Error::invalid_field(
                "lists",
                format!(
                    "{} lists is more than the {} an index may have; give fewer, or 0 for about the square root of the rows",
                    request.lists,
                    ivf::MAX_LISTS
                ),
            ));
        }
        let mut writer = self.doc_writer("creating a vector index", request.wait, false)?;
        let (collection, field) = (request.collection.as_str(), request.field.as_str());
        let built = (|| {
            writer.require_collection(collection)?;
            writer.declare_ann(collection, field, request.lists, request.probes)?;
            sync_files(&mut writer, collection, field)?;
            let declaration = writer
                .ann_declaration(collection, field)?
                .ok_or_else(|| Error::internal("a vector index just declared is gone"))?;
            info(&writer, collection, declaration)
        })();
        writer.finish(built)
    }

    /// Removes the approximate index of a field; returns whether one was declared.
    pub fn drop_ann(&self, request: &AnnRequest) -> Result<bool> {
        let mut writer = self.doc_writer("dropping a vector index", request.wait, false)?;
        let dropped = writer
            .require_collection(&request.collection)
            .and_then(|()| writer.drop_ann(&request.collection, &request.field))
            .map_err(Error::from);
        writer.finish(dropped)
    }

    /// The approximate indexes of a collection, by field.
    pub fn ann_indexes(&self, collection: &str) -> Result<Vec<AnnIndexInfo>> {
        let store = self.open_document_store()?;
        store.require_collection(collection)?;
        store
            .ann_declarations(collection)?
            .into_iter()
            .map(|d| info(&store, collection, d))
            .collect()
    }
}

/// Brings the derived files of `field` up to date: its vector file, then its approximate
/// index when one is declared.
pub(super) fn sync_files(store: &mut Store, collection: &str, field: &str) -> Result<()> {
    store.sync_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?;
    refresh(store, collection, field)?;
    Ok(())
}

/// Makes the index file of `field` current when one is declared and the field's vector file
/// is current; returns whether it wrote one.
pub(super) fn refresh(store: &mut Store, collection: &str, field: &str) -> Result<bool> {
    let Some(declaration) = store.ann_declaration(collection, field)? else {
        return Ok(false);
    };
    let Some(mut vectors) =
        store.open_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?
    else {
        return Ok(false);
    };
    let old = store.open_ann_file(collection, field, DIM)?;
    if old.as_ref().is_some_and(|f| f.is_current()) || vectors.load_rowids().is_none() {
        return Ok(false);
    }
    let rows = vectors.len();
    if rows == 0 {
        return Ok(false);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wanted = match declaration.lists {
        0 => ivf::default_lists(rows),
        l => l as usize,
    };
    let trained_on = |f: &ctxpack_store::docs::ann::AnnFile| f.trained() as usize;
    // The old file's centroids and lists, when it is near enough in size to keep them.
    let (centroids, trained, known) = match old {
        Some(f) if trained_on(&f) / 2 <= rows && rows <= trained_on(&f).saturating_mul(2) => {
            let mut known: HashMap<i64, (u32, u64)> = HashMap::with_capacity(f.len());
            let mut list = Vec::new();
            for j in 0..f.lists() {
                let read = f.visit_list(j, &mut list, |entry| {
                    let (rowid, ..) = parse_entry(entry);
                    known.insert(rowid, (j as u32, fnv1a64(&entry[8..])));
                });
                if !read {
                    return Ok(false);
                }
            }
            (f.centroids().to_vec(), f.trained(), known)
        }
        _ => {
            let stride = ivf::sample_stride(rows, wanted);
            let mut sample = Vec::new();
            let mut block = Vec::new();
            for b in 0..vectors.blocks() {
                let (first, n) = vectors.block_rows(b);
                if !vectors.read_block(b, None, &mut block) {
                    return Ok(false);
                }
                for i in (0..n).filter(|i| (first + i) % stride == 0) {
                    sample.extend((0..DIM).map(|d| component(&block, n, d, i)));
                }
            }
            let centroids = ivf::train(&sample, DIM, wanted, threads);
            (centroids, rows as u64, HashMap::new())
        }
    };
    let mut data = AnnData {
        dim: DIM,
        centroids,
        trained,
        lists: Vec::with_capacity(rows),
        rowids: Vec::with_capacity(rows),
        scales: Vec::with_capacity(rows),
        slacks: Vec::with_capacity(rows),
        codes: Vec::with_capacity(rows * DIM),
    };
    let (mut block, mut matrix, mut pending) = (Vec::new(), Vec::new(), Vec::new());
    let mut row = Vec::with_capacity(DIM);
    // Scale, slack and codes, as an entry of the file holds them after its rowid.
    let mut entry = vec![0u8; 8 + DIM];
    for b in 0..vectors.blocks() {
        let (first, n) = vectors.block_rows(b);
        if !vectors.read_block(b, None, &mut block) {
            return Ok(false);
        }
        matrix.clear();
        pending.clear();
        for i in 0..n {
            let Some(rowid) = vectors.rowid(first + i) else {
                return Ok(false);
            };
            row.clear();
            row.extend((0..DIM).map(|d| component(&block, n, d, i)));
            let (scale, slack) = ivf::quantize(&row, &mut entry[8..]);
            entry[..4].copy_from_slice(&scale.to_le_bytes());
            entry[4..8].copy_from_slice(&slack.to_le_bytes());
            let list = match known.get(&rowid) {
                Some(&(list, hash)) if hash == fnv1a64(&entry) => list,
                _ => {
                    pending.push(data.lists.len());
                    matrix.extend_from_slice(&row);
                    0
                }
            };
            data.lists.push(list);
            data.rowids.push(rowid);
            data.scales.push(scale);
            data.slacks.push(slack);
            data.codes.extend_from_slice(&entry[8..]);
        }
        let assigned = ivf::assign(&data.centroids, DIM, &matrix, threads);
        for (&at, list) in pending.iter().zip(assigned) {
            data.lists[at] = list;
        }
    }
    store.write_ann_file(collection, field, &vectors, &data)?;
    Ok(true)
}

/// Component `d` of row `i` of a block of `rows` rows stored column by column.
fn component(block: &[u8], rows: usize, d: usize, i: usize) -> f32 {
    let at = (d * rows + i) * 4;
    f32::from_le_bytes([block[at], block[at + 1], block[at + 2], block[at + 3]])
}
