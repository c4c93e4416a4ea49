//! Rendering a pack for people, prompts and programs.
//!
//! Every renderer is a pure function of the pack and the options, so the same pack always
//! renders to the same bytes.
//!
//! # Control characters
//!
//! Text, Markdown and XML are read on terminals, and a pack carries repository content that
//! anyone may have written: an escape sequence in a hit could clear the screen, retitle the
//! window, or hide a line behind another. So these renderers pass no control character from
//! the content through; each becomes one visible character instead ([`visible`]):
//!
//! - C0 controls (U+0000–U+001F) become their Unicode control pictures (U+2400–U+241F):
//!   `ESC` is `␛`, `BEL` is `␇`, a lone `CR` is `␍`; `DEL` (U+007F) becomes `␡` (U+2421).
//! - C1 controls (U+0080–U+009F), which have no pictures, become `�` (U+FFFD); in real
//!   content they are almost always mis-decoded text.
//! - Tab and line feed stay, and so does a carriage return right before a line feed: a CRLF
//!   line ending is harmless on a terminal (nothing is written between the two), and keeps a
//!   Windows file readable as it is. Only a lone CR, which could overwrite what a line shows,
//!   is replaced.
//!
//! One character for one, so a hit's length in characters is unchanged (its cost was counted
//! on the original text), and a reader still sees that a control was there. This applies to
//! every value that comes from content or from a caller: goals, hit text, citations, families,
//! titles, symbols, paths, references and warnings. JSON is left alone: it escapes every
//! control (`\u001b`), and its strings are the original text, byte for byte.

mod json;
mod layout;
mod markdown;
pub(crate) mod options;
mod text;
mod xml;

use std::borrow::Cow;

use ctxpack_meter::Meter;

use crate::model::{Candidate, Hit};
use crate::pack::Pack;

pub use json::pack_json;
pub use layout::{FIRST_DROPPED, SHORT_PACK_ID, short_pack_id};
pub use options::{Format, View};

/// `s` with every control character a terminal would act on replaced by a visible one (see
/// the module docs); borrowed when there is none, as in almost all content.
pub fn visible(s: &str) -> Cow<'_, str> {
    // Every character `stand_in` changes is a C0 control, DEL, or a C1 control (whose UTF-8
    // encoding starts with 0xC2): text with none of those bytes but tab and line feed, as
    // almost all content is, is shown as it is without looking at its characters.
    // Looked at a block of bytes at a time with no early exit inside one, which the compiler
    // makes vector compares: every candidate of a selection is measured, so every text is.
    let maybe_changed =
        |b: u8| ((b < 0x20) & (b != b'\t') & (b != b'\n')) | (b == 0x7f) | (b == 0xc2);
    if !s
        .as_bytes()
        .chunks(64)
        .any(|block| block.iter().fold(false, |any, &b| any | maybe_changed(b)))
    {
        return Cow::Borrowed(s);
    }
    let mut out: Option<String> = None;
    let mut chars = s.char_indices().peekable();
    while let Some((i, ch)) = chars.next() {
        let shown = stand_in(ch, chars.peek().map(|&(_, next)| next));
        let out = match &mut out {
            Some(out) => out,
            None if shown == ch => continue,
            None => out.insert(String::from(&s[..i])),
        };
        out.push(shown);
    }
    out.map_or(Cow::Borrowed(s), Cow::Owned)
}

/// A value shown on one line (a header, a title): [`visible`], and line breaks become spaces,
/// so a newline in a goal or a citation cannot forge a line of its own.
pub(crate) fn one_line(s: &str) -> String {
    visible(s).replace(['\r', '\n'], " ")
}

/// What a character shows as, given the one after it.
fn stand_in(ch: char, next: Option<char>) -> char {
    match ch {
        '\t' | '\n' => ch,
        '\r' if next == Some('\n') => ch,
        '\u{0}'..='\u{1f}' => {
            char::from_u32(0x2400 + u32::from(ch)).expect("U+2400 ..= U+241F are characters")
        }
        '\u{7f}' => '\u{2421}',
        '\u{80}'..='\u{9f}' => '\u{FFFD}',
        _ => ch,
    }
}

/// Rendering options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// The output format.
    pub format: Format,
    /// How much of each hit to project.
    pub view: View,
    /// Pretty-print JSON over several lines instead of one canonical line.
    pub pretty: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            format: Format::Text,
            view: View::Default,
            pretty: false,
        }
    }
}

/// A JSON value as output: one line, or indented with `pretty`; always ends with a newline.
pub fn json_text(value: &serde_json::Value, pretty: bool) -> String {
    let mut out = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .expect("a JSON value always serializes");
    out.push('\n');
    out
}

/// The markup `candidate` adds to the printed output in `options`' format (its
/// [fitted](Format::fitted) text format) when it is shown on its own: its citation, fences or
/// tags (and in the full view its symbols and cost), without its text. Costs are shown in
/// `meter`.
///
/// What a budget covering the output reserves for a candidate beside its cost; a candidate
/// that joins a file already shown, or merges with a neighbouring span, adds less.
pub fn markup(candidate: &Candidate, options: &RenderOptions, meter: Meter) -> String {
    // Every candidate of a selection is measured: its text is read where it is, not copied.
    let hit = Hit {
        rank: 1,
        candidate: Candidate {
            citation: candidate.citation.clone(),
            family: candidate.family.clone(),
            text: String::new(),
            cost: candidate.cost,
            tier: candidate.tier,
            score: candidate.score,
            location: candidate.location.clone(),
            title: candidate.title.clone(),
        },
        seen: None,
    };
    let mut group = layout::single(&hit, None);
    for range in &mut group.ranges {
        range.text = Cow::Borrowed(&candidate.text);
    }
    let mut out = String::new();
    match options.format.fitted() {
        Format::Markdown => markdown::write_group(&mut out, &group, meter, options.view, false),
        Format::Xml => xml::write_group(&mut out, &group, meter, options.view, false),
        _ => text::write_group(&mut out, &group, meter, options.view, false),
    }
    out
}

/// What the text formats show as evidence, in order: each range's citations and the source it
/// shows. The citations are the range's and, when the range starts inside a definition whose
/// opening line is shown, that line's number (`L12`, as the formats print it); the source is
/// that opening line and the range's text (a file's touching hits merged into one range, as
/// printed); a reference's evidence is its citation and the pack it names. Everything else a printed pack
/// holds (header, notes, fences, tags, the drop summary) is what it adds around the evidence.
fn evidence(pack: &Pack) -> Vec<(String, String)> {
    let references = layout::references(pack)
        .into_iter()
        .map(|(hit, id)| (hit.candidate.citation.0.clone(), id.to_owned()));
    layout::groups(pack)
        .into_iter()
        .flat_map(|group| group.ranges)
        .map(|range| {
            let mut citation = range.citation.into_owned();
            let mut text = String::new();
            if let Some(e) = range.enclosing {
                citation = format!("{citation} L{}", e.line);
                text.push_str(e.text.trim());
                text.push('\n');
            }
            text.push_str(&range.text);
            (citation, text)
        })
        .chain(references)
        .collect()
}

/// What `pack`'s printed output in `options` adds around its evidence (header, notes, fences
/// or tags, the drop summary: everything but what its ranges show, their citations and source
/// lines), and the whole output, both in the pack's meter.
pub fn around_the_evidence(pack: &Pack, options: &RenderOptions) -> (u64, u64) {
    let printed = pack.meter.count(&render(pack, options));
    (printed.saturating_sub(evidence_tokens(pack)), printed)
}

/// What `evidence` holds, in the pack's meter: the part of a printed pack that is not
/// [around the evidence](around_the_evidence), whatever the format.
pub fn evidence_tokens(pack: &Pack) -> u64 {
    let meter = pack.meter;
    evidence(pack)
        .iter()
        .map(|(citation, text)| meter.count(citation) + meter.count(text))
        .sum()
}

/// Renders a pack. The result always ends with a newline.
pub fn render(pack: &Pack, options: &RenderOptions) -> String {
    let json = || json_text(&pack_json(pack, options.view), options.pretty);
    match options.format {
        Format::Text => text::render(pack, options.view),
        Format::Json => json(),
        Format::Both => format!("{}\n{}", text::render(pack, options.view), json()),
        Format::Markdown => markdown::render(pack, options.view),
        Format::Xml => xml::render(pack, options.view),
    }
}
