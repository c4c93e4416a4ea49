//! Runs the masker over every text file under a directory and reports what it would redact:
//! the false-positive check of `docs/security.md` ("Secret masking"), run by hand on a pinned
//! external source tree, never by the test suite.
//!
//! ```text
//! cargo run --release -p ctxpack-core --example mask_tree -- /path/to/tree
//! ```
//!
//! Prints one line per changed line (`path:line: [kind] masked line`, then the original line
//! when the file kept its line count), then a summary. Files that are not UTF-8 or contain a
//! NUL byte are skipped as binary, like the indexer does.

// A command-line report: printing is its purpose.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ctxpack_core::Masker;

fn main() {
    let Some(root) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: mask_tree DIR");
        std::process::exit(2);
    };
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    let masker = Masker::new();
    let (mut scanned, mut bytes, mut binary, mut flagged) = (0_u64, 0_u64, 0_u64, 0_u64);
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    // Time spent masking alone, without reading files.
    let mut masking = std::time::Duration::ZERO;
    for path in &files {
        let Ok(raw) = std::fs::read(path) else {
            continue;
        };
        let Ok(text) = String::from_utf8(raw) else {
            binary += 1;
            continue;
        };
        if text.contains('\0') {
            binary += 1;
            continue;
        }
        scanned += 1;
        bytes += text.len() as u64;
        let started = std::time::Instant::now();
        let (masked, counts) = masker.mask(&text);
        masking += started.elapsed();
        if counts.is_empty() {
            continue;
        }
        flagged += 1;
        for (kind, n) in &counts {
            *kinds.entry(kind.clone()).or_insert(0) += n;
        }
        let shown = path.strip_prefix(&root).unwrap_or(path).display();
        let before: Vec<&str> = text.lines().collect();
        let after: Vec<&str> = masked.lines().collect();
        let aligned = before.len() == after.len();
        for (i, line) in after.iter().enumerate() {
            if !line.contains("[REDACTED:") {
                continue;
            }
            println!("{shown}:{}: {}", i + 1, clip(line));
            if aligned {
                println!("    was: {}", clip(before[i]));
            }
        }
    }
    let total: u64 = kinds.values().sum();
    println!(
        "scanned {scanned} text files ({bytes} bytes), skipped {binary} binary; \
         {total} redactions in {flagged} files"
    );
    for (kind, n) in &kinds {
        println!("  {kind}: {n}");
    }
    let secs = masking.as_secs_f64();
    println!(
        "masking took {secs:.2} s ({:.0} MB/s)",
        bytes as f64 / 1e6 / secs.max(1e-9)
    );
}

/// Every regular file under `dir` outside `.git`, not following symbolic links.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        // A clone's `.git` holds packed history, not the files of the commit.
        if kind.is_dir() && entry.file_name() != ".git" {
            walk(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

/// At most 200 characters of a line, for a readable report.
fn clip(line: &str) -> String {
    let clipped: String = line.trim().chars().take(200).collect();
    clipped
}
