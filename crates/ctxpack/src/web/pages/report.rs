//! The quality page: an evaluation report's recall by ranker and budget, charted.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::web::html::{escape, page, thousands};

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
pub(crate) fn quality(repo: Option<&str>, report: Option<&Report>) -> String {
    let Some(report) = report else {
        return page(
            "Quality",
            repo,
            "<h1>Quality</h1><p>No evaluation report was given. Run <code>ctxpack eval history --format json \
             &gt; report.json</code> in the repository and start the view with <code>--eval-report report.json</code>.</p>",
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
    let mut body = format!(
        "<h1>Quality</h1><p>{} tasks; ctxpack's selector {}, meter {}.</p>",
        report.tasks,
        escape(&report.selector),
        escape(&report.meter)
    );
    body.push_str(&recall_chart(report, &budgets, &rankers));
    body.push_str(
        "<table class=\"quality\" id=\"quality\"><thead><tr><th>Ranker</th><th>Budget</th>\
         <th>File recall</th><th>Hit rate</th><th>MRR</th><th>Gold share</th></tr></thead><tbody>",
    );
    for row in &report.results {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            escape(&row.ranker),
            thousands(row.budget),
            row.file_recall,
            row.hit_rate,
            row.mrr,
            row.gold_share
        );
    }
    body.push_str("</tbody></table>");
    page("Quality", repo, &body)
}

/// File recall (0–1, vertical) against budget (evenly spaced, horizontal), a line per ranker.
fn recall_chart(report: &Report, budgets: &[u64], rankers: &[&str]) -> String {
    let (left, top, width, height) = (60.0, 20.0, 600.0, 260.0);
    let x = |i: usize| {
        if budgets.len() <= 1 {
            left + width / 2.0
        } else {
            left + width * i as f64 / (budgets.len() - 1) as f64
        }
    };
    let y = |v: f64| top + height * (1.0 - v.clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg class=\"chart\" id=\"recall\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"File recall by budget\">",
        left + width + 160.0,
        top + height + 50.0
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"></line>\
             <text class=\"axis\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{tick:.2}</text>",
            left + width,
            left - 8.0,
            y(tick) + 4.0,
            y = y(tick)
        );
    }
    for (i, budget) in budgets.iter().enumerate() {
        let _ = write!(
            svg,
            "<text class=\"axis\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x(i),
            top + height + 20.0,
            thousands(*budget)
        );
    }
    for (r, ranker) in rankers.iter().enumerate() {
        let points: Vec<String> = budgets
            .iter()
            .enumerate()
            .filter_map(|(i, budget)| {
                report
                    .results
                    .iter()
                    .find(|row| row.ranker == *ranker && row.budget == *budget)
                    .map(|row| format!("{:.1},{:.1}", x(i), y(row.file_recall)))
            })
            .collect();
        let _ = write!(
            svg,
            "<polyline class=\"series c{}\" data-ranker=\"{}\" points=\"{}\"></polyline>\
             <text class=\"legend c{}\" x=\"{}\" y=\"{}\">{}</text>",
            r % 8,
            escape(ranker),
            points.join(" "),
            r % 8,
            left + width + 16.0,
            top + 16.0 + 18.0 * r as f64,
            escape(ranker)
        );
    }
    let _ = write!(
        svg,
        "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">budget (tokens)</text></svg>",
        left + width / 2.0,
        top + height + 42.0
    );
    svg
}
