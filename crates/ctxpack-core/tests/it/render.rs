//! Every format and view of one representative pack, as snapshots.

use ctxpack_core::{
    Budget, Candidate, Family, Format, Location, Pack, PackRequest, RenderOptions, Selector,
    SnapshotInfo, Tier, View, Warning, render,
};
use ctxpack_meter::Meter;

use crate::candidates;

fn sample_pack() -> Pack {
    let mut cands: Vec<Candidate> = [
        (
            "src/select.rs#L10-L42@3fa9c1e",
            "document:src/select.rs",
            9,
            false,
        ),
        ("notes", "artifact:notes", 4, true),
        (
            "src/select.rs#L10-L42@3fa9c1e",
            "document:src/select.rs",
            9,
            false,
        ),
        ("README.md#L1-L5@3fa9c1e", "document:README.md", 40, false),
        (
            "src/budget.rs#L1-L8@3fa9c1e",
            "document:src/budget.rs",
            6,
            false,
        ),
    ]
    .into_iter()
    .map(|(id, family, cost, pinned)| {
        let mut c = Candidate::new(id, format!("text of {id}"), Meter::Words)
            .with_family(Family(family.into()));
        c.cost = cost;
        if pinned {
            c = c.with_tier(Tier::Pinned);
        }
        c
    })
    .collect();
    cands[0].text =
        "fn select(budget: u64) -> Vec<Hit> {\n    // `used <= budget` always\n}".into();
    cands[0].location = Some(Location {
        path: "src/select.rs".into(),
        start_line: 10,
        end_line: 42,
        symbol: Some("select".into()),
    });
    cands[1].text = "Session note: budgets are <hard> & \"whole\".".into();
    cands[1].title = Some("session notes".into());
    cands[4].text = "```\nnested fence\n```\n".into();
    cands[4].location = Some(Location {
        path: "src/budget.rs".into(),
        start_line: 1,
        end_line: 8,
        symbol: None,
    });
    let mut pack = Pack::build(
        PackRequest {
            goal: "how are budgets enforced".into(),
            budget: Budget::new(20).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Diverse,
        },
        cands,
    );
    pack.snapshot = Some(SnapshotInfo {
        requested_ref: "HEAD".into(),
        resolved_sha: "3fa9c1e0d1b2c3d4e5f60718293a4b5c6d7e8f90".into(),
        selection: "exact".into(),
        status: "indexed".into(),
        branch: Some("main".into()),
        detached: false,
        worktree_dirty: true,
    });
    pack.warnings.push(Warning::DirtyWorktree);
    pack.redactions.add("aws_access_key", 1);
    pack
}

#[test]
fn every_format_and_view() {
    let pack = sample_pack();
    for format in Format::ALL {
        for view in View::ALL {
            let out = render(
                &pack,
                &RenderOptions {
                    format,
                    view,
                    pretty: false,
                },
            );
            insta::assert_snapshot!(format!("{}_{}", format.name(), view.name()), out);
        }
    }
}

#[test]
fn pretty_json_is_the_same_value() {
    let pack = sample_pack();
    let compact = render(
        &pack,
        &RenderOptions {
            format: Format::Json,
            view: View::Full,
            pretty: false,
        },
    );
    let pretty = render(
        &pack,
        &RenderOptions {
            format: Format::Json,
            view: View::Full,
            pretty: true,
        },
    );
    assert_eq!(compact.lines().count(), 1);
    assert!(pretty.lines().count() > 10);
    let a: serde_json::Value = serde_json::from_str(&compact).expect("json");
    let b: serde_json::Value = serde_json::from_str(&pretty).expect("json");
    assert_eq!(a, b);
}

#[test]
fn no_hit_fits_warning_is_exact() {
    let pack = Pack::build(
        PackRequest {
            goal: "g".into(),
            budget: Budget::new(1).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Diverse,
        },
        candidates("a/f/5"),
    );
    let text = render(&pack, &RenderOptions::default());
    assert!(
        text.contains("\nwarning: context pack budget admitted no complete hit\n"),
        "{text}"
    );
    let json = render(
        &pack,
        &RenderOptions {
            format: Format::Json,
            ..Default::default()
        },
    );
    assert!(json.contains(r#""warnings":["context pack budget admitted no complete hit"]"#));
}
