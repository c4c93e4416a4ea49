//! New file versions chunked, masked and costed on every core, and written to the store in
//! the order they were listed.

use std::sync::mpsc;

use ctxpack_core::Masker;
use ctxpack_meter::Meter;
use ctxpack_store::{NewChunk, NewFile, Store, failpoint};

use crate::chunk::{chunk, graph};
use crate::error::IndexError;
use crate::git::{ObjectReader, Repo};

use super::{IndexOptions, IndexPhase, Pace, Reporter, STORED_CHUNKER};

/// A file's chunks, or the reason it was skipped after reading it.
pub type Chunked = Result<Vec<NewChunk>, &'static str>;

/// A file as a worker leaves it: chunked, and what it imports (encoded for the store) when it
/// was.
type Worked = (Chunked, Option<String>);

/// How many files wait between two stages of the chunking pipeline, per worker thread: with
/// blobs of at most `max_file_bytes`, what the pipeline holds is bounded by this, the worker
/// count and one write batch.
const IN_FLIGHT_PER_THREAD: usize = 4;

/// Reads, decodes, chunks, masks and costs the new file versions, and writes them to the
/// database in batches as they complete, in their order (so their ids are the same on every
/// run). One thread reads blobs, worker threads chunk them, and this thread writes them (and
/// their lexical entries, to the writer the store holds open) and reports the `chunking`
/// phase; each stage waits for the next when it is a bounded number of files ahead, so memory
/// holds a window of the commit, never all of it. Returns the id of each version.
pub(super) fn chunk_and_write(
    repo: &Repo,
    store: &mut Store,
    files: &mut [NewFile],
    options: &IndexOptions,
    report: &mut Reporter<'_>,
) -> Result<Vec<i64>, IndexError> {
    // Only a file too large to chunk is skipped before it is read.
    let to_read: Vec<(usize, String)> = (0..files.len())
        .filter(|&i| files[i].skip_reason.is_none())
        .map(|i| (i, files[i].blob.clone()))
        .collect();
    report.start(IndexPhase::Chunking, to_read.len())?;
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, to_read.len().max(1));
    let masker = Masker::new();
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let mut ids: Vec<i64> = Vec::with_capacity(files.len());
    // Results wait here until every file before them is done; `done[i]` once file i is.
    let mut done: Vec<bool> = files.iter().map(|f| f.skip_reason.is_some()).collect();
    let mut outcome: Result<(), IndexError> = Ok(());
    // Writes the versions from the last one written up to `upto` (all of them done).
    let mut flush =
        |files: &mut [NewFile], ids: &mut Vec<i64>, upto: usize| -> Result<(), IndexError> {
            let from = ids.len();
            if upto == from {
                return Ok(());
            }
            let batch: Vec<NewFile> = files[from..upto]
                .iter_mut()
                .map(|f| NewFile {
                    chunks: std::mem::take(&mut f.chunks),
                    ..f.clone()
                })
                .collect();
            ids.extend(store.insert_files(&batch, STORED_CHUNKER)?);
            failpoint("index:files-written");
            Ok(())
        };
    std::thread::scope(|scope| {
        let cap = threads * IN_FLIGHT_PER_THREAD;
        let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Vec<u8>)>(cap);
        let (done_tx, done_rx) =
            mpsc::sync_channel::<(usize, u64, Result<Worked, IndexError>)>(cap);
        // Dropped with the last worker, so the reader stops when they do.
        let work_rx = std::sync::Arc::new(std::sync::Mutex::new(work_rx));
        let source = repo.source();
        let reader_done = done_tx.clone();
        scope.spawn(move || {
            let mut reader = match ObjectReader::open(source) {
                Ok(reader) => reader,
                Err(e) => {
                    let _ = reader_done.send((0, 0, Err(e)));
                    return;
                }
            };
            for (index, blob) in to_read {
                match reader.read_blob(&blob) {
                    Ok(bytes) => {
                        if work_tx.send((index, bytes)).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = reader_done.send((index, 0, Err(e)));
                        break;
                    }
                }
            }
        });
        for _ in 0..threads {
            let (work_rx, done_tx, paths, masker) =
                (work_rx.clone(), done_tx.clone(), &paths, &masker);
            scope.spawn(move || {
                loop {
                    let next = work_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok((index, bytes))) = next else {
                        break;
                    };
                    let worked = chunk_file(&paths[index], &bytes, options, masker);
                    if done_tx
                        .send((index, bytes.len() as u64, Ok(worked)))
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop((work_rx, done_tx));
        let mut next = 0;
        let mut pace = Pace::new();
        // Every result counts one file; the loop ends when the last worker has finished, or
        // at the first failure (dropping the receiver stops the workers and the reader).
        for (index, bytes, result) in done_rx {
            let step = result.and_then(|(chunked, imports)| {
                files[index].imports = imports;
                match chunked {
                    Ok(chunks) => files[index].chunks = chunks,
                    Err(reason) => files[index].skip_reason = Some(reason.to_owned()),
                }
                let text_bytes: u64 = files[index]
                    .chunks
                    .iter()
                    .map(|c| c.text.len() as u64)
                    .sum();
                done[index] = true;
                while next < files.len() && done[next] {
                    next += 1;
                }
                if pace.tick(text_bytes) {
                    flush(files, &mut ids, next)?;
                }
                report.step(bytes)
            });
            if step.is_err() {
                outcome = step;
                break;
            }
        }
    });
    outcome?;
    flush(files, &mut ids, files.len())?;
    report.finish()?;
    Ok(ids)
}

/// Decodes, chunks, masks and costs one text the way indexing does (for artifacts): the reason
/// it cannot be indexed (`binary`, `invalid_utf8`) otherwise.
pub fn prepare_text(name: &str, bytes: &[u8], options: &IndexOptions) -> Chunked {
    chunk_file(name, bytes, options, &Masker::new()).0
}

/// A file chunked, masked and costed, and what it imports ([`graph::file_imports`] of its
/// stored chunks, encoded for the store) when it was chunked: worked out once here rather
/// than by every pack that ranks the file among its best.
fn chunk_file(path: &str, bytes: &[u8], options: &IndexOptions, masker: &Masker) -> Worked {
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return (Err("binary"), None);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return (Err("invalid_utf8"), None);
    };
    let mut imports = Vec::new();
    let chunks: Vec<NewChunk> = chunk(path, text, &options.chunk)
        .into_iter()
        .map(|c| {
            let (masked, redactions) = masker.mask(&c.text);
            // Imports read from the file's parse are those of the text as it was; a chunk
            // that masking changed is parsed as stored, as a pack would.
            imports.push(c.imports.filter(|_| redactions.is_empty()));
            let text = masked.into_owned();
            let mut costs = [None; 5];
            let mut o200k_lines = None;
            for (i, meter) in Meter::ALL.iter().enumerate() {
                if !options.meters.contains(meter) {
                    continue;
                }
                // `o200k` is counted line by line (one count), so a pack that cuts the chunk
                // to some of its lines need not count them again.
                costs[i] = Some(
                    if *meter == Meter::O200k
                        && let Some(lines) = meter.count_lines(&text)
                    {
                        let total = lines.total();
                        o200k_lines = Some(lines);
                        total
                    } else {
                        meter.count(&text)
                    },
                );
            }
            // An enclosing line is shown only as it is: one that masking would change is not
            // kept.
            let shown = |opening: Option<(u32, String)>| {
                opening.filter(|(_, line)| masker.mask(line).1.is_empty())
            };
            // An opening line inside the chunk is read back from its stored text, so it is
            // kept only when that text shows it as it is.
            let stored_line = |at: u32| {
                text.split_inclusive('\n')
                    .nth(usize::try_from(at - c.start_line).unwrap_or(usize::MAX))
                    .map(|l| l.trim_end_matches(['\n', '\r']))
            };
            let inside = c
                .inside
                .into_iter()
                .map(|i| {
                    let opening = shown(i.opening).filter(|(at, line)| {
                        *at < c.start_line || stored_line(*at) == Some(line.as_str())
                    });
                    (i.line, opening)
                })
                .collect();
            NewChunk {
                start_line: c.start_line,
                end_line: c.end_line,
                symbol: c.symbol,
                text,
                costs,
                redactions,
                enclosing: shown(c.enclosing),
                inside: Some(inside),
                o200k_lines,
            }
        })
        .collect();
    let imports =
        graph::file_imports_known(path, chunks.iter().map(|c| c.text.as_str()).zip(imports));
    (Ok(chunks), Some(graph::encode_imports(&imports)))
}
