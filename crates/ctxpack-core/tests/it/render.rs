//! Every format and view of one representative pack, as snapshots.

use ctxpack_core::{
    Budget, Candidate, Family, Format, Location, Pack, PackRequest, RedactionSummary,
    RenderOptions, Selector, SnapshotInfo, Tier, View, Warning, render,
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
    // A candidate had a key masked; no hit shows it.
    let mut masked = RedactionSummary::default();
    masked.add("aws_access_key", 1);
    pack.set_redactions(masked);
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

/// Content with control characters, and what text, Markdown and XML show instead: one visible
/// character for each control (the `render` module docs give the rule).
const CONTROLS: &[(&str, &str)] = &[
    // Clear the screen, then retitle the window.
    ("\x1b[2J\x1b]0;pwned\x07", "␛[2J␛]0;pwned␇"),
    // A CRLF line ending stays; a lone CR could overwrite the line, so it is shown.
    ("crlf\r\nstays", "crlf\r\nstays"),
    ("safe\rforged", "safe␍forged"),
    ("tab\tstays", "tab\tstays"),
    ("nul\0 bs\x08 del\x7f", "nul␀ bs␈ del␡"),
    // C1 controls (here CSI, the 8-bit `ESC [`) have no pictures.
    ("c1 \u{9b}31m \u{85}", "c1 \u{FFFD}31m \u{FFFD}"),
    // What is not a control is left alone, control pictures included.
    ("ünïcödé ␛ \u{a0}", "ünïcödé ␛ \u{a0}"),
];

/// The control characters a terminal would act on in `out`: everything below U+0020 but tab,
/// line feed and a CR that ends a line, DEL, and U+0080–U+009F.
fn raw_controls(out: &str) -> Vec<char> {
    let mut found = Vec::new();
    let mut chars = out.chars().peekable();
    while let Some(ch) = chars.next() {
        let crlf = ch == '\r' && chars.peek() == Some(&'\n');
        if (ch.is_control() && !matches!(ch, '\t' | '\n') && !crlf) || ch == '\u{7f}' {
            found.push(ch);
        }
    }
    found
}

/// A pack with one hit whose text is `text`.
fn one_hit_pack(text: &str) -> Pack {
    Pack::build(
        PackRequest {
            goal: "g".into(),
            budget: Budget::new(1000).expect("valid"),
            meter: Meter::Chars,
            selector: Selector::Diverse,
        },
        vec![Candidate::new("a.txt#L1-L1@abc", text, Meter::Chars)],
    )
}

#[test]
fn control_characters_in_content_are_shown_not_sent() {
    for &(content, shown) in CONTROLS {
        let pack = one_hit_pack(content);
        for format in [Format::Text, Format::Markdown, Format::Xml] {
            let out = render(
                &pack,
                &RenderOptions {
                    format,
                    view: View::Minimal,
                    pretty: false,
                },
            );
            assert!(
                out.contains(&format!("{shown}\n")),
                "{format} of {content:?}: {out:?}"
            );
            assert_eq!(raw_controls(&out), [], "{format} of {content:?}: {out:?}");
        }
        // One character for one: the shown text is as long as the costed one.
        assert_eq!(
            shown.chars().count(),
            content.chars().count(),
            "{content:?}"
        );
        let json: serde_json::Value = serde_json::from_str(&render(
            &pack,
            &RenderOptions {
                format: Format::Json,
                ..Default::default()
            },
        ))
        .expect("json");
        assert_eq!(json["hits"][0]["text"], content, "JSON keeps {content:?}");
    }
}

#[test]
fn no_field_from_content_reaches_a_terminal_with_its_controls() {
    const ESCAPE: &str = "\x1b[2J\x1b]0;pwned\x07";
    let field = |name: &str| format!("{name} {ESCAPE}");
    let mut hit = Candidate::new(field("citation"), field("text"), Meter::Words)
        .with_family(Family(field("family")));
    hit.title = Some(field("title"));
    hit.location = Some(Location {
        path: field("path.rs"),
        start_line: 1,
        end_line: 2,
        symbol: Some(field("symbol")),
    });
    let mut over = Candidate::new(field("dropped"), "too long ".repeat(50), Meter::Words);
    over.cost = 1000;
    let mut pack = Pack::build(
        PackRequest {
            goal: field("goal"),
            budget: Budget::new(100).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Diverse,
        },
        vec![hit, over],
    );
    pack.snapshot = Some(SnapshotInfo {
        requested_ref: field("ref"),
        resolved_sha: field("sha"),
        selection: "exact".into(),
        status: "indexed".into(),
        branch: Some(field("branch")),
        detached: false,
        worktree_dirty: false,
    });
    pack.warnings.push(Warning::Notice(field("warning")));
    for format in [Format::Text, Format::Both, Format::Markdown, Format::Xml] {
        for view in View::ALL {
            let out = render(
                &pack,
                &RenderOptions {
                    format,
                    view,
                    pretty: false,
                },
            );
            assert_eq!(raw_controls(&out), [], "{format} {view}: {out}");
            assert!(
                out.contains("text ␛[2J␛]0;pwned␇"),
                "{format} {view}: {out}"
            );
        }
    }
    // The full text view shows every field that has a line of its own.
    let text = render(
        &pack,
        &RenderOptions {
            format: Format::Text,
            view: View::Full,
            pretty: false,
        },
    );
    for name in [
        "goal", "ref", "sha", "warning", "citation", "family", "symbol", "title", "dropped",
    ] {
        assert!(
            text.contains(&format!("{name} ␛[2J␛]0;pwned␇")),
            "{name}: {text}"
        );
    }
    // JSON is the original, controls and all (serde escapes them as `\u001b`).
    let json = render(
        &pack,
        &RenderOptions {
            format: Format::Json,
            view: View::Full,
            pretty: false,
        },
    );
    assert_eq!(raw_controls(&json), []);
    let json: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(json["goal"], field("goal"));
    assert_eq!(json["hits"][0]["text"], field("text"));
    assert_eq!(json["hits"][0]["citation"], field("citation"));
}

/// A file span candidate whose text is exactly its lines.
fn span(path: &str, start: u32, end: u32, symbol: Option<&str>) -> Candidate {
    let text: String = (start..=end)
        .map(|n| format!("line {n} of {path}\n"))
        .collect();
    let mut c = Candidate::new(
        format!("{path}#L{start}-L{end}@3fa9c1e"),
        text,
        Meter::Words,
    )
    .with_family(Family(format!("document:{path}")));
    c.location = Some(Location {
        path: path.into(),
        start_line: start,
        end_line: end,
        symbol: symbol.map(Into::into),
    });
    c
}

fn grouped_pack() -> Pack {
    let cands = vec![
        span("src/b.rs", 10, 12, Some("admit")),
        span("src/a.rs", 1, 3, None),
        span("src/b.rs", 13, 15, Some("select")),
        span("src/b.rs", 14, 16, Some("select")),
        span("src/b.rs", 30, 31, Some("later")),
    ];
    let mut pack = Pack::build(
        PackRequest {
            goal: "grouping".into(),
            budget: Budget::new(1000).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Skip,
        },
        cands,
    );
    pack.presentation.enclosing.insert(
        ctxpack_core::Citation("src/b.rs#L10-L12@3fa9c1e".into()),
        ctxpack_core::Enclosing {
            line: 4,
            text: "impl Selector {".into(),
        },
    );
    pack
}

#[test]
fn hits_are_grouped_by_file_and_touching_spans_merged() {
    let pack = grouped_pack();
    for format in [Format::Text, Format::Markdown, Format::Xml] {
        let out = render(
            &pack,
            &RenderOptions {
                format,
                view: View::Default,
                pretty: false,
            },
        );
        insta::assert_snapshot!(format!("grouped_{}", format.name()), out);
    }
    // Presentation only: the JSON hits are the pack's, one per hit, unchanged.
    let json = ctxpack_core::pack_json(&pack, View::Default);
    assert_eq!(json["hits"].as_array().expect("hits").len(), 5);
    assert_eq!(json["hits"][0]["citation"], "src/b.rs#L10-L12@3fa9c1e");
}

#[test]
fn a_span_whose_text_does_not_match_its_lines_is_not_merged() {
    let mut a = span("src/a.rs", 1, 3, None);
    let b = span("src/a.rs", 4, 6, None);
    a.text = "one folded line\n".into();
    let pack = Pack::build(
        PackRequest {
            goal: "g".into(),
            budget: Budget::new(1000).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Skip,
        },
        vec![a, b],
    );
    let out = render(&pack, &RenderOptions::default());
    assert!(out.contains("[src/a.rs#L1-L3@3fa9c1e]"), "{out}");
    assert!(out.contains("[src/a.rs#L4-L6@3fa9c1e]"), "{out}");
}

#[test]
fn drops_are_summarised_and_the_full_view_names_a_tenth_of_the_budgets_worth() {
    let cands: Vec<Candidate> = (0..9)
        .map(|i| span(&format!("src/f{i}.rs"), 1, 40, None))
        .collect();
    let pack = Pack::build(
        PackRequest {
            goal: "drops".into(),
            budget: Budget::new(250).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Skip,
        },
        cands,
    );
    assert_eq!(pack.dropped.len(), 8);
    let text = |view| {
        render(
            &pack,
            &RenderOptions {
                format: Format::Text,
                view,
                pretty: false,
            },
        )
    };
    let summary: String = text(View::Default)
        .lines()
        .filter(|l| l.starts_with("dropped:"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!("drop_summary", summary);
    // One per 200 units of the budget, at least FIRST_DROPPED: 5 of the 8 at 250 words.
    let full = text(View::Full);
    assert_eq!(
        full.lines()
            .filter(|l| l.starts_with("dropped: src/"))
            .count(),
        5
    );
    assert!(
        full.contains("dropped: and 3 more (the JSON output lists every one)"),
        "{full}"
    );
}

#[test]
fn an_empty_pack_says_why() {
    let build = |cands: Vec<Candidate>| {
        Pack::build(
            PackRequest {
                goal: "nothing".into(),
                budget: Budget::new(5).expect("valid"),
                meter: Meter::Words,
                selector: Selector::Skip,
            },
            cands,
        )
    };
    let mut out = String::new();
    let none = build(Vec::new());
    let mut masked = build(vec![span("src/a.rs", 1, 40, None)]);
    masked.candidate_redactions.add("aws_access_key", 2);
    for pack in [none, masked] {
        for format in [Format::Text, Format::Markdown, Format::Xml] {
            out.push_str(&render(
                &pack,
                &RenderOptions {
                    format,
                    view: View::Minimal,
                    pretty: false,
                },
            ));
            out.push_str("----\n");
        }
    }
    insta::assert_snapshot!("empty_packs", out);
}

#[test]
fn a_pack_the_pool_could_not_fill_says_so() {
    let pack = Pack::build(
        PackRequest {
            goal: "g".into(),
            budget: Budget::new(1000).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Skip,
        },
        vec![span("src/a.rs", 1, 3, None)],
    );
    let out = render(&pack, &RenderOptions::default());
    assert!(
        out.contains("note: every candidate offered (1) is in the pack and budget is left"),
        "{out}"
    );
}

#[test]
fn markup_is_the_wrapping_without_the_text() {
    let c = span("src/a.rs", 1, 3, Some("f"));
    let md = ctxpack_core::markup(
        &c,
        &RenderOptions {
            format: Format::Json,
            view: View::Default,
            pretty: false,
        },
        Meter::Words,
    );
    assert!(md.contains("`src/a.rs#L1-L3@3fa9c1e`"), "{md}");
    assert!(md.contains("```rust"), "{md}");
    assert!(!md.contains("line 1 of"), "{md}");
}

/// One line of a file goes on its citation's line (inline code in Markdown, inside the
/// element's line in XML); an inline span is delimited by more backticks than it holds.
#[test]
fn one_line_goes_on_its_citations_line() {
    let mut line = span("src/a.rs", 7, 7, None);
    line.text = "let s = `tick` + x;\n".into();
    let pack = Pack::build(
        PackRequest {
            goal: "one line".into(),
            budget: Budget::new(1000).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Skip,
        },
        vec![line],
    );
    let shown = |format| {
        render(
            &pack,
            &RenderOptions {
                format,
                view: View::Default,
                pretty: false,
            },
        )
    };
    let md = shown(Format::Markdown);
    assert!(
        md.contains("\n`src/a.rs#L7-L7@3fa9c1e`: ``let s = `tick` + x;``\n"),
        "{md}"
    );
    assert!(!md.contains("```"), "{md}");
    let xml = shown(Format::Xml);
    assert!(
        xml.contains("<file citation=\"src/a.rs#L7-L7@3fa9c1e\">let s = `tick` + x;\n</file>"),
        "{xml}"
    );
}

/// XML carries text full of `&` and `<` raw in a CDATA section (which a `]]>` in the text
/// cannot close early), and escapes text with few of them.
#[test]
fn xml_carries_code_in_cdata_when_that_is_shorter() {
    let mut code = span("src/a.rs", 1, 2, None);
    code.text = "fn f(a: &Vec<u8>, b: &Vec<u8>) -> bool {\n    a[..]]]>b[..] }\n".into();
    let mut prose = span("src/b.rs", 1, 2, None);
    prose.text = "Tom & Jerry\nsecond line\n".into();
    let pack = Pack::build(
        PackRequest {
            goal: "xml".into(),
            budget: Budget::new(1000).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Skip,
        },
        vec![code, prose],
    );
    let xml = render(
        &pack,
        &RenderOptions {
            format: Format::Xml,
            view: View::Default,
            pretty: false,
        },
    );
    assert!(
        xml.contains("<![CDATA[fn f(a: &Vec<u8>, b: &Vec<u8>) -> bool {\n    a[..]]]]]><![CDATA[>b[..] }\n]]></file>"),
        "{xml}"
    );
    assert!(
        xml.contains("Tom &amp; Jerry\nsecond line\n</file>"),
        "{xml}"
    );
}

/// Counts agree with their nouns: "1 hit", "2 hits".
#[test]
fn the_markdown_header_says_1_hit_and_2_hits() {
    for (files, says) in [(1, "\n1 hit ·"), (2, "\n2 hits ·")] {
        let cands: Vec<Candidate> = (0..files)
            .map(|i| span(&format!("src/f{i}.rs"), 1, 3, None))
            .collect();
        let pack = Pack::build(
            PackRequest {
                goal: "nouns".into(),
                budget: Budget::new(1000).expect("valid"),
                meter: Meter::Words,
                selector: Selector::Skip,
            },
            cands,
        );
        assert_eq!(pack.hits.len(), files);
        let markdown = render(
            &pack,
            &RenderOptions {
                format: Format::Markdown,
                view: View::Default,
                pretty: false,
            },
        );
        assert!(markdown.contains(says), "{markdown}");
    }
}

/// A pack counts the masks it shows: a candidate's secret that no shown hit holds counts among
/// the candidates' only, and a marker a hit spells beyond what masking did is not counted.
#[test]
fn redactions_count_what_the_hits_show() {
    let shown = Candidate::new(
        "src/a.rs#L1-L2@abc",
        "key = [REDACTED:aws_access_key]\nnote = [REDACTED:aws_access_key]\n",
        Meter::Words,
    );
    let mut pack = Pack::build(
        PackRequest {
            goal: "keys".into(),
            budget: Budget::new(100).expect("valid"),
            meter: Meter::Words,
            selector: Selector::Skip,
        },
        vec![shown],
    );
    let mut masked = RedactionSummary::default();
    // One shown (the other marker is the repository's own text), two in candidates left out,
    // one of a kind no hit shows.
    masked.add("aws_access_key", 1);
    masked.add("github_token", 3);
    pack.set_redactions(masked);
    assert_eq!(pack.redactions.total(), 1);
    assert_eq!(pack.redactions.by_kind.get("aws_access_key"), Some(&1));
    assert_eq!(pack.candidate_redactions.total(), 4);
    let json = ctxpack_core::pack_json(&pack, View::Default);
    assert_eq!(
        json["redactionSummary"],
        serde_json::json!({"total": 1, "byKind": {"aws_access_key": 1}, "candidates": 4})
    );
}

proptest::proptest! {
    /// `visible` keeps every character but a control a terminal would act on, and replaces
    /// each of those by one visible character, however the controls and multi-byte characters
    /// (C1 controls share their first UTF-8 byte with ordinary text such as `©`) mix.
    #[test]
    fn visible_replaces_exactly_the_controls(
        s in "[a-z\u{0}-\u{1f}\u{7f}-\u{a0}©é\r\n\t ␛]{0,160}",
    ) {
        let shown = ctxpack_core::visible(&s);
        proptest::prop_assert!(raw_controls(&shown).is_empty(), "{:?}", shown);
        let (before, after): (Vec<char>, Vec<char>) = (s.chars().collect(), shown.chars().collect());
        proptest::prop_assert_eq!(before.len(), after.len());
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            let crlf = *b == '\r' && before.get(i + 1) == Some(&'\n');
            let control = (b.is_control() && !matches!(b, '\t' | '\n') && !crlf) || *b == '\u{7f}';
            proptest::prop_assert_eq!(control, a != b, "{:?} at {} of {:?}", b, i, s);
        }
    }
}
