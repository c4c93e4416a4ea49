//! The quality page: an evaluation report's recall by ranker and budget, charted.

use maud::{Markup, html};
use serde::Deserialize;

use crate::web::html::{page, thousands};

/// An evaluation report, as `ctxpack eval --format json` writes it.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Report {
    pub(crate) tasks: usize,
    pub(crate) selector: String,
    pub(crate) meter: String,
    pub(crate) results: Vec<ReportRow>,
}

/// One ranker at one budget.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReportRow {
    pub(crate) ranker: String,
    pub(crate) budget: u64,
    pub(crate) file_recall: f64,
    pub(crate) hit_rate: f64,
    pub(crate) mrr: f64,
    /// Named `tokenPrecision` in reports written before it was renamed.
    #[serde(alias = "tokenPrecision")]
    pub(crate) gold_share: f64,
}

/// The quality page: recall by budget for each ranker of an evaluation report.
pub(crate) fn quality(repo: Option<&str>, report: Option<&Report>) -> Markup {
    let Some(report) = report else {
        return page(
            "Quality",
            repo,
            html! {
                h1 { "Quality" }
                p {
                    "No evaluation report was given. Run "
                    code { "ctxpack eval history --format json > report.json" }
                    " in the repository and start the view with "
                    code { "--eval-report report.json" } "."
                }
            },
        );
    };
    let mut budgets: Vec<u64> = report.results.iter().map(|r| r.budget).collect();
    budgets.sort_unstable();
    budgets.dedup();
    let mut rankers: Vec<&str> = Vec::new();
    for row in &report.results {
        if !rankers.contains(&row.ranker.as_str()) {
            rankers.push(&row.ranker);
        }
    }
    let body = html! {
        h1 { "Quality" }
        p {
            (report.tasks) " tasks; ctxpack's selector " (report.selector) ", meter "
            (report.meter) "."
        }
        (recall_chart(report, &budgets, &rankers))
        table.quality #quality {
            thead { tr {
                th { "Ranker" } th { "Budget" } th { "File recall" } th { "Hit rate" }
                th { "MRR" } th { "Gold share" }
            } }
            tbody {
                @for row in &report.results {
                    tr {
                        td { (row.ranker) }
                        td { (thousands(row.budget)) }
                        td { (format!("{:.3}", row.file_recall)) }
                        td { (format!("{:.3}", row.hit_rate)) }
                        td { (format!("{:.3}", row.mrr)) }
                        td { (format!("{:.3}", row.gold_share)) }
                    }
                }
            }
        }
    };
    page("Quality", repo, body)
}

/// File recall (0–1, vertical) against budget (evenly spaced, horizontal), a line per ranker.
fn recall_chart(report: &Report, budgets: &[u64], rankers: &[&str]) -> Markup {
    let (left, top, width, height) = (60.0, 20.0, 600.0, 260.0);
    let x = |i: usize| {
        if budgets.len() <= 1 {
            left + width / 2.0
        } else {
            left + width * i as f64 / (budgets.len() - 1) as f64
        }
    };
    let y = |v: f64| top + height * (1.0 - v.clamp(0.0, 1.0));
    let one = |v: f64| format!("{v:.1}");
    let points = |ranker: &str| -> String {
        let points: Vec<String> = budgets
            .iter()
            .enumerate()
            .filter_map(|(i, budget)| {
                report
                    .results
                    .iter()
                    .find(|row| row.ranker == ranker && row.budget == *budget)
                    .map(|row| format!("{:.1},{:.1}", x(i), y(row.file_recall)))
            })
            .collect();
        points.join(" ")
    };
    html! {
        svg.chart #recall viewBox={ "0 0 " (left + width + 160.0) " " (top + height + 50.0) }
            role="img" aria-label="File recall by budget" {
            @for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
                line.grid x1=(left) x2=(left + width) y1=(one(y(tick))) y2=(one(y(tick))) {}
                text.axis x=(left - 8.0) y=(one(y(tick) + 4.0)) text-anchor="end" {
                    (format!("{tick:.2}"))
                }
            }
            @for (i, budget) in budgets.iter().enumerate() {
                text.axis x=(one(x(i))) y=(top + height + 20.0) text-anchor="middle" {
                    (thousands(*budget))
                }
            }
            @for (r, ranker) in rankers.iter().enumerate() {
                polyline class={ "series c" (r % 8) } data-ranker=(ranker) points=(points(ranker)) {}
                text class={ "legend c" (r % 8) } x=(left + width + 16.0)
                    y=(top + 16.0 + 18.0 * r as f64) { (ranker) }
            }
            text.axis x=(left + width / 2.0) y=(top + height + 42.0) text-anchor="middle" {
                "budget (tokens)"
            }
        }
    }
}
