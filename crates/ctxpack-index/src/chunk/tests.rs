use super::*;

/// Small limits so that short samples exercise grouping and splitting.
const SMALL: ChunkOptions = ChunkOptions {
    max_lines: 8,
    min_lines: 1,
    window: 4,
    overlap: 1,
};

type Expected<'a> = &'a [(u32, u32, Option<&'a str>)];

/// The enclosing line a chunk carries from indexing is the one `enclosing_lines` finds for
/// its first line from a parse of its own, in every language; and chunks that start inside
/// a definition have one.
#[test]
fn chunks_carry_the_enclosing_line_of_their_first_line() {
    let python = "class Shop:\n    def __init__(self):\n        self.items = []\n\n".to_owned()
        + &"    def add(self, item):\n        self.items.append(item)\n        return item\n\n"
            .repeat(12);
    let go = "package main\n\nfunc long() int {\n".to_owned()
        + &"\tx := 1\n\tx += 2\n".repeat(60)
        + "\treturn x\n}\n";
    let sources = [
        ("src/chunk.rs", include_str!("mod.rs").to_owned()),
        ("shop.py", python),
        ("main.go", go),
        ("README.md", "# A\n\ntext\n\n## B\n\nmore\n".repeat(20)),
    ];
    let mut with_enclosing = 0;
    for (path, text) in &sources {
        let options = ChunkOptions::default();
        let chunks = chunk(path, text, &options);
        let starts: Vec<u32> = chunks.iter().map(|c| c.start_line).collect();
        let expected = enclosing_lines(path, text, &starts);
        for (c, expected) in chunks.iter().zip(expected) {
            assert_eq!(c.enclosing, expected, "{path}:{}", c.start_line);
            with_enclosing += usize::from(c.enclosing.is_some());
        }
    }
    assert!(
        with_enclosing >= 3,
        "{with_enclosing} chunks start inside a definition"
    );
    let chunks = chunk(
        "src/chunk.rs",
        include_str!("mod.rs"),
        &ChunkOptions::default(),
    );
    assert!(
        chunks.iter().any(|c| c
            .enclosing
            .as_ref()
            .is_some_and(|(_, line)| line.starts_with("impl"))),
        "a chunk inside an impl block shows the impl line"
    );
}

/// Files of several languages whose definitions nest and run longer than a chunk: this
/// module's own source and its tests, a Python class, a long Go function, a TypeScript class.
fn nested_sources() -> [(&'static str, String); 5] {
    let python = "class Shop:\n    def __init__(self):\n        self.items = []\n\n".to_owned()
        + &"    def add(self, item):\n        self.items.append(item)\n        return item\n\n"
            .repeat(12)
        + "\ndef after():\n    return 1\n";
    let go = "package main\n\nfunc long() int {\n".to_owned()
        + &"\tx := 1\n\tx += 2\n".repeat(60)
        + "\treturn x\n}\n\nfunc next() int {\n\treturn 2\n}\n";
    let script = "export class Cart {\n".to_owned()
        + &"  add(item) {\n    this.items.push(item);\n    return item;\n  }\n".repeat(20)
        + "}\n\nexport function total(cart) {\n  return cart.items.length;\n}\n";
    [
        ("src/chunk.rs", include_str!("mod.rs").to_owned()),
        ("src/tests.rs", include_str!("tests.rs").to_owned()),
        ("shop.py", python),
        ("main.go", go),
        ("cart.ts", script),
    ]
}

/// A line inside a chunk gets, from a parse of the lines between the definition its chunk
/// starts in (or the chunk's first line) and itself, the enclosing line a parse of the whole
/// file gives; where the short parse finds none and the chunk starts inside a definition, the
/// caller parses the whole file, and that is rare.
#[test]
fn a_short_parse_from_the_chunks_definition_finds_what_a_whole_parse_does() {
    let (mut lines, mut whole) = (0, 0);
    for (path, text) in &nested_sources() {
        let every: Vec<u32> = (1..=u32::try_from(text.lines().count()).expect("lines")).collect();
        let whole_parse = enclosing_lines(path, text, &every);
        for c in chunk(path, text, &ChunkOptions::default()) {
            let from = c.enclosing.as_ref().map_or(c.start_line, |(line, _)| *line);
            // Every third line: a short parse per line is the test's cost.
            for line in (c.start_line + 1..=c.end_line).step_by(3) {
                let expected = whole_parse[line as usize - 1].clone();
                lines += 1;
                match enclosing_from(path, text, from, line, c.end_line) {
                    // Unsettled, or settled as none where an outer definition may hold it:
                    // the caller parses the whole file.
                    None => whole += 1,
                    Some(None) if c.enclosing.is_some() => whole += 1,
                    Some(short) => assert_eq!(short, expected, "{path}:{line} from {from}"),
                }
            }
        }
    }
    assert!(lines > 700, "{lines}");
    assert!(
        whole * 20 < lines,
        "{whole} of {lines} lines needed a whole parse"
    );
}

/// What a chunk records for each of its lines after the first ([`Chunk::inside`]) is what a
/// parse of the whole file says of that line, so a cut anywhere in it needs no parse.
#[test]
fn a_chunk_records_what_a_whole_parse_finds_for_each_of_its_lines() {
    let mut sources = nested_sources().to_vec();
    sources.push(("src/graph.rs", include_str!("graph.rs").to_owned()));
    sources.push((
        "README.md",
        "# Title\n\nText.\n\n## Part\n\nMore.\n".to_owned(),
    ));
    let mut changes = 0;
    for (path, text) in &sources {
        let every: Vec<u32> = (1..=u32::try_from(text.lines().count()).expect("lines")).collect();
        let whole_parse = enclosing_lines(path, text, &every);
        for c in chunk(path, text, &ChunkOptions::default()) {
            assert_eq!(
                c.enclosing,
                whole_parse[c.start_line as usize - 1],
                "{path}"
            );
            let mut current = c.enclosing.clone();
            let mut runs = c.inside.iter().peekable();
            for line in c.start_line + 1..=c.end_line {
                if let Some(run) = runs.next_if(|r| r.line == line) {
                    assert_ne!(
                        run.opening, current,
                        "{path}:{line}: a run that changes nothing"
                    );
                    current = run.opening.clone();
                    changes += 1;
                }
                assert_eq!(current, whole_parse[line as usize - 1], "{path}:{line}");
            }
            assert!(runs.next().is_none(), "{path}: runs outside the chunk");
        }
    }
    assert!(changes > 100, "{changes}");
}

/// Chunks `src` as `path` and compares (start, end, symbol) with `expected`, after checking
/// that the chunks cover the file.
fn check(path: &str, src: &str, options: ChunkOptions, expected: Expected<'_>) {
    let chunks = chunk(path, src, &options);
    assert_covers(src, &chunks);
    let actual: Vec<_> = chunks
        .iter()
        .map(|c| (c.start_line, c.end_line, c.symbol.as_deref()))
        .collect();
    assert_eq!(actual, expected, "{path}");
}

/// Every line in some chunk, in order, each chunk's text exactly its lines.
fn assert_covers(src: &str, chunks: &[Chunk]) {
    let lines: Vec<&str> = src.split_inclusive('\n').collect();
    if lines.is_empty() {
        assert!(chunks.is_empty(), "an empty file has no chunks");
        return;
    }
    let first = chunks.first().expect("a non-empty file has chunks");
    let last = chunks.last().expect("a non-empty file has chunks");
    assert_eq!(first.start_line, 1, "the first chunk starts at line 1");
    assert_eq!(
        last.end_line as usize,
        lines.len(),
        "the last chunk ends the file"
    );
    for pair in chunks.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(b.start_line > a.start_line, "{a:?} then {b:?}");
        assert!(b.end_line > a.end_line, "{a:?} then {b:?}");
        assert!(
            b.start_line <= a.end_line + 1,
            "a line is lost between {a:?} and {b:?}"
        );
    }
    for c in chunks {
        assert!(c.start_line <= c.end_line, "{c:?}");
        let expected: String = lines[c.start_line as usize - 1..c.end_line as usize].concat();
        assert_eq!(
            c.text, expected,
            "text of {}..={}",
            c.start_line, c.end_line
        );
    }
}

const RUST: &str = r#"use std::fmt;

/// A point.
#[derive(Debug)]
pub struct Point {
    x: i32,
}

impl Point {
    pub fn new() -> Self {
        Self { x: 0 }
    }

    /// Moves it.
    pub fn shift(&mut self) {
        self.x += 1;
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}
"#;

const PYTHON: &str = r#"import os


class Greeter(Base):
    """Says hello."""

    def __init__(self):
        self.name = "x"

    @staticmethod
    def hello():
        return "hi"


def main():
    Greeter().hello()
"#;

const JAVASCRIPT: &str = r#"import { a } from "a";

// Adds.
export function add(x, y) {
  return x + y;
}

const twice = (x) => add(x, x);

class Counter {
  constructor() {
    this.n = 0;
  }

  bump() {
    this.n += 1;
    return this.n;
  }
}
"#;

const TYPESCRIPT: &str = r#"export interface Shape {
  area(): number;
}

type Id = string;

export class Square implements Shape {
  constructor(private side: number) {}

  area(): number {
    return this.side * this.side;
  }

  /** The perimeter. */
  perimeter(): number {
    return 4 * this.side;
  }
}

namespace Geometry {
  export const unit = 1;
}
"#;

const TSX: &str = r#"import React from "react";

export function Hello({ name }: { name: string }) {
  return <div className="hello">Hello, {name}</div>;
}
"#;

const GO: &str = r#"package main

import "fmt"

// Server serves.
type Server struct {
	addr string
}

func (s *Server) Start() error {
	fmt.Println(s.addr)
	return nil
}

func main() {
	s := &Server{addr: ":80"}
	s.Start()
}
"#;

const JAVA: &str = r#"package demo;

import java.util.List;

/** A stack. */
public class Stack {
    private int size;

    public Stack() {
        this.size = 0;
    }

    /** Pushes. */
    public void push(int x) {
        size += 1;
    }
}
"#;

const C: &str = r#"#include <stdio.h>

/* A point. */
struct point {
    int x;
    int y;
};

typedef struct point point_t;

static int *make(int a) {
    static int v;
    v = a;
    return &v;
}

int main(void) {
    return *make(1);
}
"#;

const CPP: &str = r#"#include <string>

namespace shapes {

class Circle {
 public:
  double area() const {
    return 3.14 * r * r;
  }
  double r;
};

double Circle_perimeter(const Circle& c) {
  return 2 * 3.14 * c.r;
}

}  // namespace shapes
"#;

const MARKDOWN: &str = r#"Intro before any heading.

# Guide

Some words.

## Install

Run the installer.
Then run it again.
And once more.

## Usage

Use it.
"#;

const SAMPLES: &[(&str, &str)] = &[
    ("src/lib.rs", RUST),
    ("app/main.py", PYTHON),
    ("web/app.js", JAVASCRIPT),
    ("web/shape.ts", TYPESCRIPT),
    ("web/hello.tsx", TSX),
    ("cmd/main.go", GO),
    ("src/Stack.java", JAVA),
    ("src/point.c", C),
    ("src/circle.cpp", CPP),
    ("docs/guide.md", MARKDOWN),
    ("notes.txt", MARKDOWN),
];

fn small(max_lines: u32) -> ChunkOptions {
    ChunkOptions { max_lines, ..SMALL }
}

#[test]
fn default_options_are_the_documented_ones() {
    let options = ChunkOptions::default();
    assert_eq!(
        (
            options.max_lines,
            options.min_lines,
            options.window,
            options.overlap
        ),
        (60, 8, 40, 8)
    );
}

#[test]
fn languages_come_from_extensions() {
    let cases = [
        ("src/lib.rs", Some(Language::Rust)),
        ("a/b.PY", Some(Language::Python)),
        ("stubs/x.pyi", Some(Language::Python)),
        ("web/a.js", Some(Language::JavaScript)),
        ("web/a.mjs", Some(Language::JavaScript)),
        ("web/a.jsx", Some(Language::JavaScript)),
        ("web/a.ts", Some(Language::TypeScript)),
        ("web/a.d.ts", Some(Language::TypeScript)),
        ("web/a.tsx", Some(Language::Tsx)),
        ("main.go", Some(Language::Go)),
        ("A.java", Some(Language::Java)),
        ("x.c", Some(Language::C)),
        ("x.h", Some(Language::C)),
        ("x.cc", Some(Language::Cpp)),
        ("x.hpp", Some(Language::Cpp)),
        ("README.md", Some(Language::Markdown)),
        (r"docs\guide.markdown", Some(Language::Markdown)),
        ("Makefile", None),
        ("notes.txt", None),
        (".rs", None),
        ("dir.rs/file", None),
        ("", None),
        ("trailing.", None),
    ];
    for (path, expected) in cases {
        assert_eq!(language_of(path), expected, "{path:?}");
    }
}

#[test]
fn small_files_are_one_chunk_named_by_their_first_definition() {
    let default = ChunkOptions::default();
    let cases: &[(&str, &str, Expected<'_>)] = &[
        ("src/lib.rs", RUST, &[(1, 24, Some("Point"))]),
        ("app/main.py", PYTHON, &[(1, 16, Some("Greeter"))]),
        ("web/app.js", JAVASCRIPT, &[(1, 19, Some("add"))]),
        ("web/shape.ts", TYPESCRIPT, &[(1, 22, Some("Shape"))]),
        ("web/hello.tsx", TSX, &[(1, 5, Some("Hello"))]),
        ("cmd/main.go", GO, &[(1, 18, Some("Server"))]),
        ("src/Stack.java", JAVA, &[(1, 17, Some("Stack"))]),
        ("src/point.c", C, &[(1, 19, Some("point"))]),
        ("src/circle.cpp", CPP, &[(1, 17, Some("shapes"))]),
        ("docs/guide.md", MARKDOWN, &[(1, 15, Some("Guide"))]),
        ("notes.txt", MARKDOWN, &[(1, 15, None)]),
    ];
    for (path, src, expected) in cases {
        check(path, src, default, expected);
    }
}

#[test]
fn long_definitions_split_into_named_parts() {
    let cases: &[(&str, &str, Expected<'_>)] = &[
        (
            "src/lib.rs",
            RUST,
            &[
                (1, 8, Some("Point")),
                (9, 13, Some("Point::new")),
                (14, 19, Some("Point::shift")),
                (20, 24, Some("fmt::Display for Point")),
            ],
        ),
        (
            "app/main.py",
            PYTHON,
            &[
                (1, 3, None),
                (4, 9, Some("Greeter.__init__")),
                (10, 14, Some("Greeter.hello")),
                (15, 16, Some("main")),
            ],
        ),
        (
            "web/app.js",
            JAVASCRIPT,
            &[
                (1, 7, Some("add")),
                (8, 9, Some("twice")),
                (10, 14, Some("Counter.constructor")),
                (15, 19, Some("Counter.bump")),
            ],
        ),
        (
            "web/shape.ts",
            TYPESCRIPT,
            &[
                (1, 6, Some("Shape")),
                (7, 13, Some("Square.constructor")),
                (14, 19, Some("Square.perimeter")),
                (20, 22, Some("Geometry")),
            ],
        ),
        (
            "cmd/main.go",
            GO,
            &[
                (1, 4, None),
                (5, 9, Some("Server")),
                (10, 14, Some("Server.Start")),
                (15, 18, Some("main")),
            ],
        ),
        (
            "src/Stack.java",
            JAVA,
            &[
                (1, 4, None),
                (5, 12, Some("Stack.Stack")),
                (13, 17, Some("Stack.push")),
            ],
        ),
        (
            "src/point.c",
            C,
            &[
                (1, 8, Some("point")),
                (9, 16, Some("point_t")),
                (17, 19, Some("main")),
            ],
        ),
        (
            "src/circle.cpp",
            CPP,
            &[
                (1, 2, None),
                (3, 9, Some("shapes::Circle::area")),
                (10, 12, Some("shapes::Circle")),
                (13, 17, Some("shapes::Circle_perimeter")),
            ],
        ),
        (
            "docs/guide.md",
            MARKDOWN,
            &[
                (1, 6, Some("Guide")),
                (7, 12, Some("Install")),
                (13, 15, Some("Usage")),
            ],
        ),
    ];
    for (path, src, expected) in cases {
        check(path, src, SMALL, expected);
    }
}

#[test]
fn rust_trait_impls_name_their_methods_by_type() {
    let src = "\
impl<T: Debug> fmt::Display for Wrapper<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = 1;
        let b = 2;
        write!(f, \"{a}{b}\")
    }

    fn other(&self) -> u8 {
        let c = 3;
        c
    }
}
";
    check(
        "a.rs",
        src,
        ChunkOptions::default(),
        &[(1, 12, Some("fmt::Display for Wrapper"))],
    );
    check(
        "a.rs",
        src,
        SMALL,
        &[
            (1, 7, Some("Wrapper::fmt")),
            (8, 12, Some("Wrapper::other")),
        ],
    );
}

#[test]
fn comments_and_attributes_attach_to_the_next_item() {
    let src = "fn a() {}\n\n/// Doc.\n#[inline]\nfn b() {}\n";
    check(
        "a.rs",
        src,
        small(3),
        &[(1, 2, Some("a")), (3, 5, Some("b"))],
    );
    let src = "x = 1\n\n# Says hi.\n@decorator\ndef hi():\n    pass\n";
    check(
        "a.py",
        src,
        small(4),
        &[(1, 2, Some("x")), (3, 6, Some("hi"))],
    );
    let src = "package p\n\n// Run runs.\nfunc Run() {\n}\n";
    check("a.go", src, small(3), &[(1, 2, None), (3, 5, Some("Run"))]);
    // A comment at the end of an item's line stays with that item.
    let src = "fn a() {} // about a\nfn b() {\n}\n";
    check(
        "a.rs",
        src,
        small(2),
        &[(1, 1, Some("a")), (2, 3, Some("b"))],
    );
}

#[test]
fn items_sharing_a_line_never_share_a_chunk_boundary() {
    let src = "struct A; struct B;\nfn c() {\n    1;\n}\n";
    check(
        "a.rs",
        src,
        small(3),
        &[(1, 1, Some("A")), (2, 4, Some("c"))],
    );
    let src = "#[derive(Debug)] struct A {\n    x: u8,\n}\n";
    check("a.rs", src, small(3), &[(1, 3, Some("A"))]);
}

#[test]
fn function_bodies_split_into_statements_named_by_the_function() {
    let mut src = String::from("/// Big.\nfn big() {\n");
    for i in 0..20 {
        src.push_str(&format!("    let x{i} = {i};\n"));
    }
    src.push_str("}\n");
    let chunks = chunk("a.rs", &src, &SMALL);
    assert_covers(&src, &chunks);
    assert!(chunks.len() >= 3, "{chunks:?}");
    assert!(chunks.iter().all(|c| c.symbol.as_deref() == Some("big")));
    assert!(
        chunks.iter().all(|c| c.end_line - c.start_line < 8),
        "{chunks:?}"
    );
    assert!(chunks[0].text.starts_with("/// Big.\nfn big() {\n"));
}

/// A chunk holding the last part of a split definition and a whole definition of its own is
/// named after its own: the function appended after a class is not labelled with the class.
/// The part holding the split definition's first line keeps its name.
#[test]
fn a_definition_after_a_split_ones_tail_names_the_chunk() {
    let mut python = String::from("class Shop:\n    def big(self):\n");
    for i in 0..75 {
        python.push_str(&format!("        x{i} = {i}\n"));
    }
    python.push_str("        return x0\n\n\ndef appended_helper():\n    return 1\n");
    let mut rust = String::from("impl Shop {\n    fn big(&self) -> u32 {\n");
    for i in 0..75 {
        rust.push_str(&format!("        let x{i} = {i};\n"));
    }
    rust.push_str("        0\n    }\n}\n\nfn appended_helper() -> u32 {\n    1\n}\n");
    for (path, src, big) in [
        ("shop.py", &python, "Shop.big"),
        ("shop.rs", &rust, "Shop::big"),
    ] {
        let chunks = chunk(path, src, &ChunkOptions::default());
        assert_covers(src, &chunks);
        let [first, .., last] = chunks.as_slice() else {
            panic!("{path}: one chunk: {chunks:?}");
        };
        assert_eq!(first.symbol.as_deref(), Some(big), "{path}: {chunks:?}");
        assert!(last.text.contains("appended_helper"), "{path}: {chunks:?}");
        assert!(
            last.text.contains("x74"),
            "{path}: the tail shares the chunk: {chunks:?}"
        );
        assert_eq!(
            last.symbol.as_deref(),
            Some("appended_helper"),
            "{path}: {chunks:?}"
        );
    }
}

#[test]
fn nodes_without_children_become_windows_named_by_their_definition() {
    let mut src = String::from("const TEXT: &str = \"\n");
    for i in 0..10 {
        src.push_str(&format!("line {i}\n"));
    }
    src.push_str("\";\n");
    // 12 lines: windows of 4 lines stepping by 3.
    check(
        "a.rs",
        &src,
        SMALL,
        &[
            (1, 4, Some("TEXT")),
            (4, 7, Some("TEXT")),
            (7, 10, Some("TEXT")),
            (10, 12, Some("TEXT")),
        ],
    );
}

#[test]
fn c_and_cpp_names_come_from_declarators() {
    let src = "static int *make(int a) {\n    return 0;\n}\n";
    check("a.c", src, SMALL, &[(1, 3, Some("make"))]);
    let src = "typedef struct {\n    int y;\n} pt_t;\n";
    check("a.h", src, SMALL, &[(1, 3, Some("pt_t"))]);
    let src = "void Foo::set(int v) {\n    x = v;\n}\n";
    check("a.cpp", src, SMALL, &[(1, 3, Some("Foo::set"))]);
    let src = "template <typename T>\nT id(T x) {\n    return x;\n}\n";
    check("a.hpp", src, SMALL, &[(1, 4, Some("id"))]);
    let src = "int proto(void);\n#define MAX 3\n";
    check("a.h", src, SMALL, &[(1, 2, Some("proto"))]);
}

#[test]
fn script_names() {
    let src = "export default class Widget {\n  render() {}\n}\n";
    check("a.js", src, SMALL, &[(1, 3, Some("Widget"))]);
    let src = "module.exports = {\n  run: () => 1,\n};\n";
    check("a.js", src, SMALL, &[(1, 3, Some("module.exports"))]);
    let src = "const config = { a: 1 };\nlet helper = function () {};\n";
    check("a.js", src, SMALL, &[(1, 2, Some("helper"))]);
    let src = "declare module \"fs\" {\n  export function read(): void;\n}\n";
    check("a.ts", src, SMALL, &[(1, 3, Some("fs"))]);
    let src = "enum Color {\n  Red,\n}\n";
    check("a.ts", src, SMALL, &[(1, 3, Some("Color"))]);
}

#[test]
fn go_and_java_names() {
    let src = "package p\n\nfunc (b Box[T]) Get() T {\n\treturn b.v\n}\n";
    check("a.go", src, SMALL, &[(1, 5, Some("Box.Get"))]);
    let src = "package p\n\ntype (\n\tA int\n\tB string\n)\n";
    check("a.go", src, SMALL, &[(1, 6, Some("A"))]);
    let src = "package p\n\nconst Max = 3\n";
    check("a.go", src, SMALL, &[(1, 3, Some("Max"))]);
    let src = "interface Shape {\n    double area();\n}\n";
    check("Shape.java", src, SMALL, &[(1, 3, Some("Shape"))]);
    let src = "enum Color { RED }\n";
    check("Color.java", src, SMALL, &[(1, 1, Some("Color"))]);
}

#[test]
fn markdown_sections_are_named_by_their_headings() {
    let src = "\
Title
=====

Intro.

## Part A

a1
a2
a3

a4
a5
a6
a7

### Deeper

d1
d2
d3
";
    // The setext heading does not open a section; its text names the chunk that holds it.
    check(
        "a.md",
        src,
        SMALL,
        &[
            (1, 5, Some("Title")),
            (6, 11, Some("Part A")),
            (12, 16, Some("Part A")),
            (17, 21, Some("Deeper")),
        ],
    );
}

#[test]
fn files_without_a_language_get_overlapping_windows() {
    check(
        "notes.txt",
        MARKDOWN,
        SMALL,
        &[
            (1, 4, None),
            (4, 7, None),
            (7, 10, None),
            (10, 13, None),
            (13, 15, None),
        ],
    );
    let text: String = (1..=100).map(|i| format!("{i}\n")).collect();
    let chunks = chunk("data.csv", &text, &ChunkOptions::default());
    let ranges: Vec<_> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    assert_eq!(ranges, [(1, 40), (33, 72), (65, 100)]);
    assert_covers(&text, &chunks);
}

#[test]
fn empty_and_tiny_files() {
    assert!(chunk("a.rs", "", &SMALL).is_empty());
    assert!(chunk("a.txt", "", &SMALL).is_empty());
    check("a.rs", "\n", SMALL, &[(1, 1, None)]);
    check("a.rs", "\n\n\n", SMALL, &[(1, 3, None)]);
    check("a.md", "   ", SMALL, &[(1, 1, None)]);
    check("a.rs", "fn a() {}", SMALL, &[(1, 1, Some("a"))]);
}

#[test]
fn crlf_keeps_line_endings_and_boundaries() {
    for (path, src) in SAMPLES {
        let crlf = src.replace('\n', "\r\n");
        for options in [SMALL, ChunkOptions::default()] {
            let lf = chunk(path, src, &options);
            let cr = chunk(path, &crlf, &options);
            assert_covers(&crlf, &cr);
            let shape = |chunks: &[Chunk]| -> Vec<(u32, u32, Option<String>)> {
                chunks
                    .iter()
                    .map(|c| (c.start_line, c.end_line, c.symbol.clone()))
                    .collect()
            };
            assert_eq!(shape(&lf), shape(&cr), "{path}");
            assert!(cr.iter().all(|c| c.text.ends_with("\r\n")), "{path}");
        }
    }
}

#[test]
fn odd_bytes_and_endings() {
    // No trailing newline: the last line still counts.
    check(
        "a.rs",
        "fn a() {}\nfn b() {}",
        small(1),
        &[(1, 1, Some("a")), (2, 2, Some("b"))],
    );
    // A lone carriage return does not end a line.
    check(
        "a.rs",
        "fn a() {}\rfn b() {}\r",
        SMALL,
        &[(1, 1, Some("a"))],
    );
    check("a.txt", "a\rb\rc", SMALL, &[(1, 1, None)]);
    // NUL bytes and other control characters parse as errors, never panic.
    let src = "fn a() {\0}\n\0\0\0\nstruct \u{1}B;\n";
    let chunks = chunk("a.rs", src, &SMALL);
    assert_covers(src, &chunks);
    // Non-ASCII names are cut on character boundaries.
    let name = "é".repeat(400);
    let src = format!("fn {name}() {{}}\n");
    let chunks = chunk("a.rs", &src, &SMALL);
    assert_covers(&src, &chunks);
    let symbol = chunks[0].symbol.as_deref().expect("a function name");
    assert_eq!(symbol.chars().count(), MAX_SYMBOL_CHARS);
}

#[test]
fn odd_options_are_made_safe() {
    let odd = [
        ChunkOptions {
            max_lines: 0,
            min_lines: 0,
            window: 0,
            overlap: 0,
        },
        ChunkOptions {
            max_lines: 1,
            min_lines: 50,
            window: 3,
            overlap: 9,
        },
        ChunkOptions {
            max_lines: u32::MAX,
            min_lines: u32::MAX,
            window: u32::MAX,
            overlap: u32::MAX,
        },
    ];
    for options in odd {
        for (path, src) in SAMPLES {
            let chunks = chunk(path, src, &options);
            assert_covers(src, &chunks);
        }
    }
}

#[test]
fn small_chunks_merge_into_a_neighbour_that_has_room() {
    // `c` alone would be a 1-line chunk; it joins `b`'s chunk, which has room.
    let src = "fn a() {\n    1;\n    2;\n}\nfn b() {\n    3;\n}\nfn c() {}\n";
    let options = ChunkOptions {
        max_lines: 4,
        min_lines: 2,
        window: 4,
        overlap: 1,
    };
    check(
        "a.rs",
        src,
        options,
        &[(1, 4, Some("a")), (5, 8, Some("b"))],
    );
}

#[test]
fn sample_grammars_parse_cleanly() {
    for (path, src) in SAMPLES {
        let Some(language) = language_of(path) else {
            continue;
        };
        let mut parser = Parser::new();
        parser
            .set_language(&grammar(language))
            .expect("the grammar is compatible");
        let tree = parser.parse(src, None).expect("no cancellation");
        assert!(!tree.root_node().has_error(), "{path}");
    }
}

/// Checks both the public result and that the syntactic spans are valid by themselves (the
/// windows fallback in `chunk` would otherwise hide a bug).
fn assert_chunks_well(path: &str, src: &str, options: &ChunkOptions) {
    let chunks = chunk(path, src, options);
    assert_covers(src, &chunks);
    if let Some(language) = language_of(path)
        && !src.is_empty()
    {
        let lines = Lines::new(src);
        let limits = Limits::new(options);
        let (cx, tree) = parse(language, src, &lines, limits).expect("a tree");
        let spans = syntactic_spans(&cx, &tree);
        assert!(covers(&spans, lines.count() - 1), "{path}: {spans:?}");
        for pair in spans.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if !a.window || !b.window {
                assert_eq!(
                    b.start,
                    a.end + 1,
                    "{path}: syntactic chunks do not overlap"
                );
            }
        }
    }
}

#[test]
fn every_line_is_covered_in_order() {
    let options = [
        ChunkOptions::default(),
        SMALL,
        small(1),
        small(2),
        small(3),
        ChunkOptions {
            max_lines: 5,
            min_lines: 3,
            window: 2,
            overlap: 1,
        },
    ];
    for (path, src) in SAMPLES {
        for options in &options {
            assert_chunks_well(path, src, options);
        }
    }
}

#[test]
fn chunking_is_deterministic() {
    for (path, src) in SAMPLES {
        assert_eq!(chunk(path, src, &SMALL), chunk(path, src, &SMALL), "{path}");
    }
}

/// A small deterministic generator (64-bit LCG), so mutations are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % bound.max(1)
    }
}

/// Deterministic mutations of `src`: truncations, deleted and duplicated lines, inserted
/// junk (brackets, quotes, comment openers, CR, NUL) and shuffled lines.
fn mutations(src: &str, rng: &mut Lcg) -> Vec<String> {
    const JUNK: &[&str] = &[
        "{", "}", "(", ")", "[", "]", "\"", "'", "/*", "*/", "//", "#", "\r", "\0", "\n", "<", ">",
        "`", "```", "\\", "é", "fn ", "def ", "class ", ":", ";", "\t",
    ];
    let mut out = Vec::new();
    let boundaries: Vec<usize> = src.char_indices().map(|(i, _)| i).collect();
    for _ in 0..6 {
        let cut = boundaries[rng.next(boundaries.len())];
        out.push(src[..cut].to_owned());
        out.push(src[cut..].to_owned());
    }
    let lines: Vec<&str> = src.split_inclusive('\n').collect();
    for _ in 0..4 {
        let mut deleted = lines.clone();
        deleted.remove(rng.next(deleted.len()));
        out.push(deleted.concat());
        let mut doubled = lines.clone();
        let at = rng.next(doubled.len());
        doubled.insert(at, lines[at]);
        out.push(doubled.concat());
    }
    for _ in 0..12 {
        let mut mangled = src.to_owned();
        for _ in 0..1 + rng.next(4) {
            let at = boundaries[rng.next(boundaries.len())];
            mangled.insert_str(at.min(mangled.len()), JUNK[rng.next(JUNK.len())]);
        }
        out.push(mangled);
    }
    let mut shuffled = lines.clone();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.next(i + 1));
    }
    out.push(shuffled.concat());
    out.push(src.repeat(3));
    out.push(src.replace('\n', "\r"));
    out.push(src.replace('\n', ""));
    out
}

#[test]
fn mangled_inputs_never_panic_and_stay_covered() {
    let mut rng = Lcg(0x5eed);
    let others = [
        "a.rs", "a.py", "a.js", "a.ts", "a.tsx", "a.go", "a.java", "a.c", "a.cpp", "a.md",
    ];
    let options = [ChunkOptions::default(), SMALL, small(2)];
    for (path, src) in SAMPLES {
        for mutated in mutations(src, &mut rng) {
            // Each mutation is read as its own language and as another one.
            let other = others[rng.next(others.len())];
            for path in [path, other] {
                for options in &options {
                    assert_chunks_well(path, &mutated, options);
                }
                // The symbol graph of any text is bounded and never panics.
                let graph = graph::symbols(path, &mutated);
                assert!(graph.imports.len() + graph.references.len() <= mutated.len());
            }
        }
    }
}

#[test]
fn a_large_file() {
    // 50,000 lines of small items.
    let mut src = String::new();
    for i in 0..25_000 {
        src.push_str(&format!("fn f{i}() {{}}\n\n"));
    }
    let chunks = chunk("big.rs", &src, &ChunkOptions::default());
    assert_covers(&src, &chunks);
    assert_eq!(chunks.len(), 834);
    assert_eq!(chunks[1].symbol.as_deref(), Some("f30"));
}

#[test]
fn deep_files() {
    // Nesting far deeper than `MAX_DEPTH` ends in windows, not a stack overflow.
    let depth = 5_000;
    let src = format!(
        "fn deep() {}\n{}\n",
        "{\n".repeat(depth),
        "}\n".repeat(depth)
    );
    assert_chunks_well("deep.rs", &src, &ChunkOptions::default());
    let src = format!("x = {}\n{}\n", "[\n".repeat(depth), "]\n".repeat(depth));
    assert_chunks_well("deep.py", &src, &ChunkOptions::default());
    // The graph walk is iterative: deep nesting costs no stack.
    let deep = graph::symbols(
        "deep.rs",
        &format!(
            "fn deep() {}\n{}\n",
            "{\n".repeat(depth),
            "}\n".repeat(depth)
        ),
    );
    assert_eq!(deep.definitions, ["deep"]);
}

#[test]
fn a_huge_single_line() {
    let src = format!("fn a() {{ {} }}\n", "1 + ".repeat(100_000) + "1");
    check("a.rs", &src, SMALL, &[(1, 1, Some("a"))]);
}
