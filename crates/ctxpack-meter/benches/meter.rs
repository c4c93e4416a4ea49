//! Counting throughput of every meter, in bytes per second on one core.
//!
//! Run with `cargo bench -p ctxpack-meter`. The input is the committed tokenizer corpus
//! (prose, code, JSON, Markdown, CJK, emoji, …) concatenated, so the figure reflects mixed text.
//! `cl100k` is measured only with `--features cl100k`.

use ctxpack_meter::Meter;
use divan::counter::BytesCount;

fn main() {
    divan::main();
}

fn corpus() -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("the corpus directory is committed")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !name.starts_with('.') && name != "expected.json"
        })
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("corpus files are UTF-8"))
        .collect()
}

#[divan::bench(args = Meter::BUILT)]
fn count(bencher: divan::Bencher<'_, '_>, meter: Meter) {
    let text = corpus();
    // Build the tokenizer tables outside the measurement.
    meter.count("warm up");
    bencher
        .counter(BytesCount::of_str(&text))
        .bench(|| meter.count(divan::black_box(&text)));
}
