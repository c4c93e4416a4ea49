//! Prometheus metrics of `ctxpack serve`, in the text exposition format at `/metrics`:
//! responses by route and status, the pack latency histogram, and indexing throughput.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Upper bounds of the latency histograms' buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        for (bound, count) in BUCKETS.iter().zip(&mut self.counts) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {count}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum {}", self.sum);
        let _ = writeln!(out, "{name}_count {}", self.count);
    }
}

#[derive(Default)]
struct Inner {
    responses: BTreeMap<(&'static str, u16), u64>,
    packs: Histogram,
    indexes: Histogram,
    files_indexed: u64,
}

/// The server's counters.
#[derive(Default)]
pub(crate) struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// One response on `route` with `status`.
    pub(crate) fn count(&self, route: &'static str, status: u16) {
        self.with(|m| *m.responses.entry((route, status)).or_default() += 1);
    }

    /// One pack answered in `seconds`.
    pub(crate) fn pack_seconds(&self, seconds: f64) {
        self.with(|m| m.packs.observe(seconds));
    }

    /// One index request that took `seconds` and read `files` file versions.
    pub(crate) fn indexed(&self, seconds: f64, files: u64) {
        self.with(|m| {
            m.indexes.observe(seconds);
            m.files_indexed += files;
        });
    }

    /// The text exposition.
    pub(crate) fn render(&self) -> String {
        self.with(|m| {
            let mut out = String::new();
            out.push_str("# HELP ctxpack_http_responses_total HTTP responses by route and status.\n# TYPE ctxpack_http_responses_total counter\n");
            for ((route, status), count) in &m.responses {
                let _ = writeln!(
                    out,
                    "ctxpack_http_responses_total{{route=\"{route}\",status=\"{status}\"}} {count}"
                );
            }
            m.packs.render(
                &mut out,
                "ctxpack_pack_seconds",
                "Time to build and render a pack over HTTP.",
            );
            m.indexes.render(
                &mut out,
                "ctxpack_index_seconds",
                "Time of an index request.",
            );
            let _ = writeln!(
                out,
                "# HELP ctxpack_index_files_total File versions read and chunked by index requests.\n# TYPE ctxpack_index_files_total counter\nctxpack_index_files_total {}",
                m.files_indexed
            );
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Metrics;

    #[test]
    fn buckets_are_cumulative() {
        let metrics = Metrics::default();
        metrics.pack_seconds(0.003);
        metrics.pack_seconds(0.3);
        metrics.count("pack", 200);
        let text = metrics.render();
        assert!(
            text.contains("ctxpack_pack_seconds_bucket{le=\"0.005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("ctxpack_pack_seconds_bucket{le=\"0.5\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("ctxpack_pack_seconds_count 2\n"), "{text}");
        assert!(text.contains("ctxpack_http_responses_total{route=\"pack\",status=\"200\"} 1\n"));
    }
}
