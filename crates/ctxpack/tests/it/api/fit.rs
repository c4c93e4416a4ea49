//! Budgets that cover the printed output, in process: the rendering a pack is fitted to,
//! the measured size JSON reports, the refused budget below the fixed part, the content
//! preset left as it was, and the enclosing lines shown with hits.

use ctxpack_api::{
    Budget, BudgetCovers, ErrorKind, Format, Meter, Pack, PackOptions, RenderOptions,
    SnapshotPackRequest, View, Workspace, pack_json, render,
};

use crate::api::fixture::{Fixture, Workspaces, budget_impls};

fn request(budget: u64, meter: Meter) -> SnapshotPackRequest {
    SnapshotPackRequest {
        goal: "enforce the budget".into(),
        budget: Budget::new(budget).expect("a budget"),
        meter,
        ..SnapshotPackRequest::default()
    }
}

fn shown(format: Format) -> RenderOptions {
    RenderOptions {
        format,
        view: View::Default,
        pretty: false,
    }
}

fn pack_shown(workspace: &Workspace, request: &SnapshotPackRequest, format: Format) -> Pack {
    let rendering = shown(format);
    workspace
        .snapshot_pack(
            request,
            &PackOptions {
                rendering: Some(&rendering),
                ..PackOptions::default()
            },
        )
        .expect("a pack")
        .pack
}

#[test]
fn the_printed_output_fits_and_json_reports_it() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    for format in [Format::Text, Format::Markdown, Format::Xml] {
        for meter in [Meter::O200k, Meter::Words, Meter::Chars] {
            for budget in [1500, 3000, 12000] {
                let pack = pack_shown(&workspace, &request(budget, meter), format);
                let printed = meter.count(&render(&pack, &shown(format)));
                assert!(printed <= budget, "{format} {meter} {budget}: {printed}");
                let fitted = pack.presentation.fitted.expect("fitted");
                assert_eq!((fitted.format, fitted.tokens), (format, printed));
                assert!(pack.used < printed);
                let json = pack_json(&pack, View::Default);
                assert_eq!(json["renderedTokens"], printed);
                assert_eq!(json["renderedFormat"], format.name());
                assert_eq!(json["contentTokens"], pack.used);
                // The counters' identities still hold after trimming.
                let c = &pack.counters;
                assert_eq!(c.unique_citations, pack.hits.len() + c.budget_rejected_hits);
            }
        }
    }
}

#[test]
fn json_and_the_library_default_fit_the_markdown_pack() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    let request = request(3000, Meter::O200k);
    let markdown = pack_shown(&workspace, &request, Format::Markdown);
    let json = pack_shown(&workspace, &request, Format::Json);
    let default = workspace
        .snapshot_pack(&request, &PackOptions::default())
        .expect("a pack")
        .pack;
    assert_eq!(json, markdown);
    assert_eq!(default, markdown);
    // `both` fits its text part.
    let both = pack_shown(&workspace, &request, Format::Both);
    assert_eq!(both, pack_shown(&workspace, &request, Format::Text));
    // The rendering recorded is the rendering fitted when no other is named.
    let xml = shown(Format::Xml);
    let recorded = workspace
        .snapshot_pack(
            &request,
            &PackOptions {
                record: Some(&xml),
                ..PackOptions::default()
            },
        )
        .expect("a pack")
        .pack;
    assert_eq!(
        recorded.presentation.fitted.map(|f| f.format),
        Some(Format::Xml)
    );
}

#[test]
fn a_budget_below_the_fixed_part_is_refused_naming_the_minimum() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    let error = workspace
        .snapshot_pack(&request(20, Meter::O200k), &PackOptions::default())
        .expect_err("20 tokens hold no header");
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert_eq!(error.field(), Some("budget"));
    let minimum: u64 = error
        .message()
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no minimum in {}", error.message()));
    assert!(minimum > 20);
    let pack = workspace
        .snapshot_pack(&request(minimum, Meter::O200k), &PackOptions::default())
        .expect("the minimum is enough")
        .pack;
    let printed = Meter::O200k.count(&render(&pack, &shown(Format::Markdown)));
    assert!(printed <= minimum);
}

#[test]
fn the_content_preset_counts_the_content_alone() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    let request = SnapshotPackRequest {
        goal: "enforce the budget".into(),
        index: true,
        ..SnapshotPackRequest::context_pack()
    };
    assert_eq!(request.budget_covers, BudgetCovers::Content);
    let pack = pack_shown(&workspace, &request, Format::Text);
    assert!(pack.presentation.fitted.is_none());
    assert!(
        pack_json(&pack, View::Default)
            .get("renderedTokens")
            .is_none()
    );
    assert!(pack.used <= 1200);
    assert!(Meter::Words.count(&render(&pack, &shown(Format::Text))) > pack.used);
}

#[test]
fn fitting_is_deterministic() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    let request = request(2000, Meter::O200k);
    let first = pack_shown(&workspace, &request, Format::Text);
    for _ in 0..3 {
        assert_eq!(pack_shown(&workspace, &request, Format::Text), first);
    }
}

/// Whole chunks (a budget at which nothing is cut) that start inside an `impl` show its line.
#[test]
fn a_hit_inside_a_definition_shows_its_opening_line() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    let pack = pack_shown(&workspace, &request(12_000, Meter::O200k), Format::Text);
    let inside: Vec<_> = pack
        .hits
        .iter()
        .filter_map(|h| {
            let enclosing = pack.presentation.enclosing.get(&h.candidate.citation)?;
            Some((h.candidate.location.clone()?, enclosing.clone()))
        })
        .collect();
    assert!(!inside.is_empty(), "no hit starts inside a definition");
    for (location, enclosing) in &inside {
        assert!(enclosing.line < location.start_line);
        assert!(
            enclosing.text.starts_with("impl Budget") || enclosing.text.contains("pub fn enforce_"),
            "{enclosing:?}"
        );
    }
    let text = render(&pack, &shown(Format::Text));
    assert!(text.contains("inside (line 5): impl Budget"), "{text}");
    // A hit cut to the lines that match, inside a method, shows the method's line.
    let cut = pack_shown(&workspace, &request(4000, Meter::O200k), Format::Text);
    let text = render(&cut, &shown(Format::Text));
    assert!(text.contains("): pub fn enforce_"), "{text}");
}

/// The enclosing lines come from what indexing recorded with each chunk (for its first line
/// and, where it changes, its later ones), so a pack parses no file for them; a chunk stored
/// without one (by an older format) is worked out from the file at pack time, with the same
/// result.
#[test]
fn enclosing_lines_come_from_the_index_and_older_chunks_are_parsed() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    let text = || {
        let pack = pack_shown(&workspace, &request(12_000, Meter::O200k), Format::Text);
        render(&pack, &shown(Format::Text))
    };
    let before = text();
    assert!(before.contains("inside (line 5): impl Budget"), "{before}");
    let conn = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("open");
    let recorded = |sql: &str| conn.execute(sql, []).expect("the update runs");
    // What is shown is what was recorded: change the record and the output follows.
    assert!(
        recorded(
            "UPDATE chunks SET enclosing_text = 'impl RecordedBudget {' \
             WHERE enclosing_text LIKE 'impl Budget%'"
        ) > 0
    );
    let from_index = text();
    assert!(
        from_index.contains("inside (line 5): impl RecordedBudget {"),
        "{from_index}"
    );
    assert!(
        !from_index.contains("inside (line 5): impl Budget"),
        "{from_index}"
    );
    // A hit cut to start inside its chunk: the line is what the chunk recorded for its later
    // lines, and without that record (a chunk of format 8) a parse finds the same.
    let cut = || {
        let pack = pack_shown(&workspace, &request(4000, Meter::O200k), Format::Text);
        render(&pack, &shown(Format::Text))
    };
    let before_cut = cut();
    assert!(before_cut.contains("): pub fn enforce_"), "{before_cut}");
    // Recorded as all inside what the chunk starts in, the cut shows that line instead.
    assert!(recorded("UPDATE chunks SET inside = '[]' WHERE inside LIKE '[[%'") > 0);
    let from_index = cut();
    assert!(!from_index.contains("): pub fn enforce_"), "{from_index}");
    assert!(
        from_index.contains("): impl RecordedBudget {"),
        "{from_index}"
    );
    assert!(recorded("UPDATE chunks SET inside = NULL") > 0);
    assert_eq!(cut(), before_cut);
    // Chunks without a record are parsed, and show what the index would have recorded.
    assert!(recorded("UPDATE chunks SET enclosing_line = NULL, enclosing_text = NULL") > 0);
    assert_eq!(text(), before);
}

/// What `pack`'s printed output in `format` adds around its evidence, and the whole output.
fn around_the_evidence(pack: &Pack, format: Format) -> (u64, u64) {
    ctxpack_api::around_the_evidence(pack, &shown(format))
}

/// The budgets and formats the share around the evidence is held to.
const AROUND_BUDGETS: [u64; 3] = [1000, 2000, 8000];
const AROUND_FORMATS: [Format; 3] = [Format::Markdown, Format::Text, Format::Xml];

/// What a printed pack adds around its evidence (header, notes, fences or tags, the drop
/// summary) costs at most a tenth of the budget, in each text format, from 1,000 up. Measured
/// on real code and prose (this project's own core crate and documentation, copied into a
/// fixture repository) for goals of several kinds.
#[test]
fn what_a_pack_adds_around_its_evidence_is_at_most_a_tenth_of_the_budget() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let f = Fixture::new();
    let mut copied = 0;
    for dir in [
        "crates/ctxpack-core/src",
        "crates/ctxpack-core/src/render",
        "docs",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).expect("a source directory") {
            let path = entry.expect("an entry").path();
            let wanted = path.extension().is_some_and(|e| e == "rs" || e == "md");
            if wanted {
                let name = path.file_name().expect("a name").to_string_lossy();
                let text = std::fs::read_to_string(&path).expect("a text file");
                f.write(&format!("{dir}/{name}"), &text);
                copied += 1;
            }
        }
    }
    assert!(copied > 20, "{copied} files");
    f.commit("sources");
    let workspace = f.workspace();
    let goals = [
        "add a config option to limit the budget",
        "mask secrets in hits before selection",
        "render the drop summary in markdown",
        "the coverage selector should prefer whole functions",
        "count tokens with the o200k meter",
    ];
    let mut failures = Vec::new();
    for format in AROUND_FORMATS {
        for budget in AROUND_BUDGETS {
            for goal in goals {
                let request = SnapshotPackRequest {
                    goal: goal.into(),
                    ..request(budget, Meter::O200k)
                };
                let pack = pack_shown(&workspace, &request, format);
                assert!(pack.hits.len() > 2, "{format} {budget} {goal}");
                let (around, printed) = around_the_evidence(&pack, format);
                if around * 10 > budget {
                    failures.push(format!(
                        "{format} at {budget}, `{goal}`: {around} of {printed} tokens around the evidence"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A goal pasted from a long commit message or issue does not crowd out the evidence: a brief
/// output repeats its first 120 characters (the JSON output keeps it whole), so a 1,000-token
/// pack of a 3,000-character goal still shows several hits, within its share around them.
#[test]
fn a_long_goal_is_cut_in_the_header_not_from_the_evidence() {
    let f = budget_impls(8);
    let workspace = f.workspace();
    let goal = format!(
        "enforce the budget {}",
        "when a cost exceeds what remains ".repeat(100)
    );
    assert!(goal.len() > 3000);
    for format in AROUND_FORMATS {
        let request = SnapshotPackRequest {
            goal: goal.clone(),
            ..request(1000, Meter::O200k)
        };
        let pack = pack_shown(&workspace, &request, format);
        assert!(pack.hits.len() > 2, "{format}: {} hits", pack.hits.len());
        let (around, _) = around_the_evidence(&pack, format);
        assert!(around <= 100, "{format}: {around}");
        let printed = render(&pack, &shown(format));
        let first: String = goal.chars().take(120).collect();
        assert!(
            printed.contains(&format!("{}…", first.trim_end())),
            "{printed}"
        );
        assert!(!printed.contains(&goal[..200]), "{format}");
        assert_eq!(pack_json(&pack, View::Default)["goal"], goal.as_str());
    }
}

/// The same measure on any repositories, for the figures in docs/mcp.md: the share of the
/// budget around the evidence (median and largest) per format and budget, over the subjects
/// of each repository's 20 latest commits as goals, packing each commit's parent. Run with
/// `CTXPACK_AROUND_REPOS=/path/a,/path/b cargo test -p ctxpack --test it api::fit::around_the_evidence_on -- --ignored --nocapture`.
#[test]
#[ignore = "a survey of the repositories CTXPACK_AROUND_REPOS names"]
fn around_the_evidence_on_repositories() {
    let repos = std::env::var("CTXPACK_AROUND_REPOS").expect("CTXPACK_AROUND_REPOS");
    let mut shares: std::collections::BTreeMap<(String, u64), Vec<f64>> = Default::default();
    for repo in repos.split(',') {
        let store = tempfile::tempdir().expect("a store");
        let workspace = Workspace::open(ctxpack_api::WorkspaceOptions {
            cwd: repo.into(),
            store: Some(store.path().to_owned()),
            access: ctxpack_api::Access::ReadWrite,
            caller: None,
        })
        .expect("the repository opens");
        let log = crate::api::fixture::git_in(
            std::path::Path::new(repo),
            &["log", "--no-merges", "-n", "20", "--format=%P %s"],
        );
        for line in log.lines() {
            let Some((parents, subject)) = line.split_once(' ') else {
                continue;
            };
            let parent = parents.split(' ').next().unwrap_or_default();
            for format in AROUND_FORMATS {
                for budget in AROUND_BUDGETS {
                    let request = SnapshotPackRequest {
                        goal: subject.into(),
                        at: parent.into(),
                        ..request(budget, Meter::O200k)
                    };
                    let pack = pack_shown(&workspace, &request, format);
                    let (around, _) = around_the_evidence(&pack, format);
                    shares
                        .entry((format.to_string(), budget))
                        .or_default()
                        .push(around as f64 / budget as f64);
                }
            }
        }
    }
    for ((format, budget), mut s) in shares {
        s.sort_by(f64::total_cmp);
        println!(
            "{format:8} {budget:5}: median {:.3}, largest {:.3} ({} packs)",
            s[s.len() / 2],
            s[s.len() - 1],
            s.len()
        );
    }
}
