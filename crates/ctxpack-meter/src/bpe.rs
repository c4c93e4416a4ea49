//! Exact token counts of OpenAI's byte-pair encodings, from compact tables compiled into the
//! binary (see `table.rs`), with each encoding's pre-tokenizing automaton built at build time
//! (see `pattern.rs`): nothing is loaded or built when a process starts.
//!
//! Counting follows the encodings' definition: the text is split into pieces by the encoding's
//! pattern, and each piece is encoded on its own by repeatedly merging the adjacent pair of
//! parts whose concatenation has the lowest rank (the leftmost such pair on a tie), starting
//! from single bytes, until no adjacent pair is a token. The count is the number of parts left.
//! Short pieces use a quadratic scan; long ones a heap, so no input makes counting quadratic.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::LazyLock;
use std::thread::LocalKey;

use regex_automata::dfa::Automaton;
use regex_automata::dfa::dense::DFA;
use regex_automata::{Anchored, Input};

use crate::lines::LineCounts;
use crate::table;

/// Pieces up to this many bytes are merged with a linear scan per merge (quadratic, but cheaper
/// than a heap at this size); longer ones with a heap.
const SCAN_LIMIT: usize = 64;

/// A rank no token has: "this pair is not a token".
const NONE: u32 = u32::MAX;

/// One byte-pair encoding: its vocabulary, its pre-tokenizer, and each thread's scratch: the
/// counts of pieces merged lately.
pub(crate) struct Encoding {
    vocabulary: Vocabulary,
    split: LazyLock<Pretokenizer>,
    scratch: &'static LocalKey<RefCell<Option<Scratch>>>,
}

/// What one thread keeps between counts of one encoding.
struct Scratch {
    merged: MergedPieces,
}

impl Encoding {
    /// The number of tokens `text` encodes to.
    pub(crate) fn count(&self, text: &str) -> usize {
        self.with_scratch(|Scratch { merged }| {
            self.split
                .pieces(text)
                .map(|piece| self.vocabulary.count_piece(piece.as_bytes(), merged))
                .sum()
        })
    }

    /// The number of tokens `text` encodes to, and the tokens before each of its lines where
    /// a piece starts there ([`LineCounts`]): one count of the text.
    pub(crate) fn count_lines(&self, text: &str) -> LineCounts {
        self.with_scratch(|Scratch { merged }| {
            let mut line_starts = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .filter(|&start| start < text.len())
                .peekable();
            let mut before = Vec::new();
            let (mut at, mut total) = (0usize, 0u32);
            for piece in self.split.pieces(text) {
                let end = at + piece.len();
                // A line starts where this piece does, or inside it.
                while let Some(&start) = line_starts.peek().filter(|&&start| start < end) {
                    before.push((start == at).then_some(total));
                    line_starts.next();
                }
                let n = self.vocabulary.count_piece(piece.as_bytes(), merged);
                total = total.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
                at = end;
            }
            LineCounts::new(before, total)
        })
    }

    /// The number of tokens `run` encodes to, where `run` is lines `first..` of a text whose
    /// [`LineCounts`] (this encoding's) are `counts`.
    ///
    /// A piece depends only on the text from its start on, so where the run's own pieces and
    /// the whole text's both start at a line, they are the same pieces from there until the
    /// next such line: the tokens between the first and the last such line of the run (its
    /// end counts as a line) are the difference of the counts, and only the pieces before the
    /// first and after the last are counted. A run with no such line is counted whole.
    pub(crate) fn count_run(&self, run: &str, first: usize, counts: &LineCounts) -> usize {
        // Where each line starts, and the run's end (a line of the counts, too).
        let mut starts: Vec<usize> = std::iter::once(0)
            .chain(run.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        if starts.last() != Some(&run.len()) {
            starts.push(run.len());
        }
        // The first and the last place where a piece of the run starts at a line whose count
        // is known, with that count.
        let mut known: Option<((usize, u32), (usize, u32))> = None;
        let (mut at, mut line) = (0usize, 0usize);
        for piece in self.split.pieces(run).chain(std::iter::once("")) {
            while starts.get(line).is_some_and(|&start| start < at) {
                line += 1;
            }
            if starts.get(line) == Some(&at)
                && let Some(before) = first.checked_add(line).and_then(|l| counts.before(l))
            {
                let here = (at, before);
                known = Some(known.map_or((here, here), |(start, _)| (start, here)));
            }
            at += piece.len();
        }
        let Some(((start, from), (end, to))) = known else {
            return self.count(run);
        };
        let Some(between) = to.checked_sub(from) else {
            return self.count(run);
        };
        self.with_scratch(|Scratch { merged }| {
            let mut offset = 0usize;
            let head: usize = self
                .split
                .pieces(run)
                .take_while(|piece| {
                    let starts_before = offset < start;
                    offset += piece.len();
                    starts_before
                })
                .map(|piece| self.vocabulary.count_piece(piece.as_bytes(), merged))
                .sum();
            let tail: usize = self
                .split
                .pieces(&run[end..])
                .map(|piece| self.vocabulary.count_piece(piece.as_bytes(), merged))
                .sum();
            head + between as usize + tail
        })
    }

    /// Runs `count` with this thread's scratch for the encoding.
    fn with_scratch<R>(&self, count: impl FnOnce(&mut Scratch) -> R) -> R {
        let fresh = || Scratch {
            merged: MergedPieces::new(),
        };
        self.scratch.with(|slot| match slot.try_borrow_mut() {
            Ok(mut slot) => count(slot.get_or_insert_with(fresh)),
            // Counting never counts again from inside, so the slot is free; should it not be,
            // a fresh scratch gives the same count.
            Err(_) => count(&mut fresh()),
        })
    }
}

thread_local! {
    static O200K_SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
    #[cfg(feature = "cl100k")]
    static CL100K_SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// Pieces up to this many bytes have their merged counts remembered.
const MERGED_PIECE_BYTES: usize = 24;
/// log2 of the number of remembered pieces.
const MERGED_BITS: u32 = 12;

/// The token counts of recently merged pieces: a direct-mapped table (each piece has one slot,
/// and a piece that lands on a taken slot replaces it), so it holds a fixed 4,096 entries of
/// 26 bytes whatever is counted. Source text repeats its words, and a piece that is not a token
/// of its own costs a dozen or more table lookups to merge; remembering it costs one.
struct MergedPieces {
    /// Per slot: the piece's length (0 for an empty slot), its bytes and its count.
    slots: Box<[(u8, [u8; MERGED_PIECE_BYTES], u8)]>,
}

impl MergedPieces {
    fn new() -> MergedPieces {
        MergedPieces {
            slots: vec![(0, [0; MERGED_PIECE_BYTES], 0); 1 << MERGED_BITS].into_boxed_slice(),
        }
    }

    /// The count of `piece` (at most [`MERGED_PIECE_BYTES`] long): remembered, or merged by
    /// `merge` and remembered.
    fn count(&mut self, piece: &[u8], merge: impl FnOnce() -> usize) -> usize {
        let n = piece.len();
        let slot = &mut self.slots[table::slot_of(piece, MERGED_BITS)];
        if usize::from(slot.0) == n && slot.1[..n] == *piece {
            return usize::from(slot.2);
        }
        let count = merge();
        // A piece never has more tokens than bytes, so its length and count fit a byte.
        if let (Ok(len), Ok(c)) = (u8::try_from(n), u8::try_from(count)) {
            slot.0 = len;
            slot.1[..n].copy_from_slice(piece);
            slot.2 = c;
        }
        count
    }
}

/// The vocabulary tables the build script wrote for the encoding `$name`.
macro_rules! vocabulary {
    ($name:literal) => {
        Vocabulary::new(
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".bytes")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".starts")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".slots")),
        )
    };
}

/// The pre-tokenizing automaton the build script wrote for the encoding `$name`, aligned as
/// the DFA's transition table (`u32`s) needs to be read in place.
macro_rules! pretokenizer {
    ($name:literal) => {{
        static ALIGNED: &Aligned<[u8]> = &Aligned {
            _align: [],
            bytes: *include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".dfa")),
        };
        LazyLock::new(|| Pretokenizer::read(&ALIGNED.bytes))
    }};
}

/// Bytes aligned for reading `u32`s in place.
#[repr(C)]
struct Aligned<B: ?Sized> {
    _align: [u32; 0],
    bytes: B,
}

/// `o200k_base` (GPT-4o and later).
pub(crate) static O200K: Encoding = Encoding {
    vocabulary: vocabulary!("o200k"),
    split: pretokenizer!("o200k"),
    scratch: &O200K_SCRATCH,
};

/// `cl100k_base` (GPT-4, GPT-3.5).
#[cfg(feature = "cl100k")]
pub(crate) static CL100K: Encoding = Encoding {
    vocabulary: vocabulary!("cl100k"),
    split: pretokenizer!("cl100k"),
    scratch: &CL100K_SCRATCH,
};

/// Splits text into the pieces an encoding encodes one by one, with the DFA of the encoding's
/// pattern (see `pattern.rs`), built when the crate was and read in place: a process pays only
/// for checking it once (well under a millisecond), where compiling the pattern cost several.
struct Pretokenizer {
    dfa: DFA<&'static [u32]>,
}

impl Pretokenizer {
    /// The pattern whose match is given back its last character (`\s+(?!\S)`).
    const GIVE_BACK_LAST: usize = 1;

    /// The pre-tokenizer the build script serialized into `bytes`.
    fn read(bytes: &'static [u8]) -> Pretokenizer {
        // The bytes are the build's own output in the target's byte order, and the tests
        // read both encodings' and compare them with the patterns built again: only a broken
        // build could fail here.
        let (dfa, _) = DFA::from_bytes(bytes)
            .expect("the pre-tokenizer the build script wrote is a valid DFA for this target");
        Pretokenizer { dfa }
    }

    fn pieces<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t str> + 't {
        let mut at = 0;
        std::iter::from_fn(move || {
            let rest = text.get(at..).filter(|rest| !rest.is_empty())?;
            let input = Input::new(rest).anchored(Anchored::Yes);
            // The DFA has no quit bytes, so a search cannot fail; were one to, the next
            // character would be a piece of its own (below).
            let len = match self.dfa.try_search_fwd(&input) {
                Ok(Some(m)) if m.pattern().as_usize() == Self::GIVE_BACK_LAST => {
                    let matched = &rest[..m.offset()];
                    let last = matched.chars().next_back().map_or(0, char::len_utf8);
                    m.offset() - last
                }
                Ok(Some(m)) => m.offset(),
                Ok(None) | Err(_) => 0,
            };
            // Every character starts some alternative of the patterns, so a match is never
            // empty; should one be, the next character is a piece of its own, so counting
            // always moves on.
            let len = if len == 0 {
                rest.chars().next().map_or(rest.len(), char::len_utf8)
            } else {
                len
            };
            at += len;
            Some(&rest[..len])
        })
    }
}

/// A vocabulary table (see `table.rs`), read in place from the binary.
struct Vocabulary {
    bytes: &'static [u8],
    starts: &'static [u8],
    slots: &'static [u8],
    bits: u32,
}

impl Vocabulary {
    const fn new(bytes: &'static [u8], starts: &'static [u8], slots: &'static [u8]) -> Vocabulary {
        Vocabulary {
            bytes,
            starts,
            slots,
            // `slots` holds 2^bits four-byte slots.
            bits: (slots.len() / 4).trailing_zeros(),
        }
    }

    fn word(blob: &[u8], i: usize) -> u32 {
        let at = i * 4;
        u32::from_le_bytes([blob[at], blob[at + 1], blob[at + 2], blob[at + 3]])
    }

    fn token(&self, rank: u32) -> &'static [u8] {
        let r = rank as usize;
        let start = Self::word(self.starts, r) as usize;
        let end = Self::word(self.starts, r + 1) as usize;
        &self.bytes[start..end]
    }

    /// The rank of the token whose bytes are `bytes`, or [`NONE`].
    fn rank(&self, bytes: &[u8]) -> u32 {
        let mask = (1usize << self.bits) - 1;
        let mut slot = table::slot_of(bytes, self.bits);
        loop {
            match Self::word(self.slots, slot) {
                0 => return NONE,
                entry if self.token(entry - 1) == bytes => return entry - 1,
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// The number of tokens `piece` encodes to (short merged pieces remembered in `merged`).
    fn count_piece(&self, piece: &[u8], merged: &mut MergedPieces) -> usize {
        // Every single byte is a token (the build script checks it).
        if piece.len() <= 1 || self.rank(piece) != NONE {
            return piece.len().min(1);
        }
        if piece.len() <= MERGED_PIECE_BYTES {
            merged.count(piece, || self.merge_by_scan(piece))
        } else if piece.len() <= SCAN_LIMIT {
            self.merge_by_scan(piece)
        } else {
            self.merge_by_heap(piece)
        }
    }

    /// Merges with a scan for the lowest-ranked pair per merge: `starts[i]` is where part `i`
    /// begins (with `piece.len()` after the last part), `ranks[i]` the rank of parts `i` and
    /// `i + 1` together.
    fn merge_by_scan(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        let mut starts = [0usize; SCAN_LIMIT + 1];
        let mut ranks = [NONE; SCAN_LIMIT];
        for (i, start) in starts.iter_mut().enumerate().take(n + 1) {
            *start = i;
        }
        for (i, rank) in ranks.iter_mut().enumerate().take(n - 1) {
            *rank = self.rank(&piece[i..i + 2]);
        }
        let mut parts = n;
        loop {
            let pairs = &ranks[..parts - 1];
            let Some((i, _)) = pairs
                .iter()
                .enumerate()
                .filter(|&(_, &r)| r != NONE)
                .min_by_key(|&(i, &r)| (r, i))
            else {
                return parts;
            };
            // Part i absorbs part i + 1.
            starts.copy_within(i + 2..=parts, i + 1);
            ranks.copy_within(i + 1..parts - 1, i);
            parts -= 1;
            if i + 1 < parts {
                ranks[i] = self.rank(&piece[starts[i]..starts[i + 2]]);
            }
            if i > 0 {
                ranks[i - 1] = self.rank(&piece[starts[i - 1]..starts[i + 1]]);
            }
        }
    }

    /// Merges with a heap of candidate pairs keyed by (rank, start), so the lowest-ranked,
    /// leftmost pair comes first. Parts are a linked list by start offset; a heap entry is
    /// stale once its part is gone or its pair's rank changed, and is skipped.
    fn merge_by_heap(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        // `next[s]` is where the part starting at `s` ends (the next part's start);
        // `prev[s]` where the previous part starts; `pair[s]` the rank of this part and the
        // next together; `alive[s]` whether a part starts at `s`.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|s| s.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut pair = vec![NONE; n];
        let mut heap = BinaryHeap::with_capacity(n);
        for s in 0..n - 1 {
            let r = self.rank(&piece[s..s + 2]);
            pair[s] = r;
            if r != NONE {
                heap.push(Reverse((r, s)));
            }
        }
        let mut parts = n;
        while let Some(Reverse((r, s))) = heap.pop() {
            if !alive[s] || pair[s] != r {
                continue;
            }
            // The part at `s` absorbs the next one.
            let gone = next[s];
            alive[gone] = false;
            next[s] = next[gone];
            if next[s] < n {
                prev[next[s]] = s;
            }
            parts -= 1;
            pair[s] = if next[s] < n {
                self.rank(&piece[s..next[next[s]]])
            } else {
                NONE
            };
            if pair[s] != NONE {
                heap.push(Reverse((pair[s], s)));
            }
            if s > 0 {
                let p = prev[s];
                pair[p] = self.rank(&piece[p..next[s]]);
                if pair[p] != NONE {
                    heap.push(Reverse((pair[p], p)));
                }
            }
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The automata compiled into the crate are the encodings' patterns built again, byte for
    /// byte, and read back as valid DFAs.
    #[test]
    fn compiled_pretokenizers_are_their_patterns() {
        let little = cfg!(target_endian = "little");
        let encodings: &[(&Encoding, &str)] = &[
            (&O200K, crate::pattern::O200K),
            #[cfg(feature = "cl100k")]
            (&CL100K, crate::pattern::CL100K),
        ];
        for &(encoding, head) in encodings {
            let (compiled, pad) = encoding.split.dfa.to_bytes_native_endian();
            assert_eq!(
                compiled[pad..],
                crate::pattern::serialized(head, little)[..],
                "the compiled pre-tokenizer is not the pattern's"
            );
        }
    }

    /// Both merge strategies give the same count on every piece, including pieces far longer
    /// than the scan limit and pieces where many equal-ranked pairs overlap.
    #[test]
    fn scan_and_heap_agree() {
        let v = &O200K.vocabulary;
        let pieces: &[&[u8]] = &[
            b"abcdefghij",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            b"                                        ",
            b"--------------------------------------------------------",
            b"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88",
            b"supercalifragilisticexpialidocious",
            b"0123456789",
            b"\xff\xfe\x00\x01zz",
        ];
        for piece in pieces {
            for len in 2..=piece.len() {
                let p = &piece[..len];
                assert_eq!(
                    v.merge_by_scan(p),
                    v.merge_by_heap(p),
                    "{:?}",
                    String::from_utf8_lossy(p)
                );
            }
        }
    }

    #[test]
    fn a_piece_that_is_a_token_counts_one_and_every_byte_is_a_token() {
        let v = &O200K.vocabulary;
        let merged = &mut MergedPieces::new();
        assert_eq!(v.count_piece(b" hello", merged), 1);
        assert_eq!(v.count_piece(b"", merged), 0);
        for b in 0..=255u8 {
            assert_eq!(v.count_piece(&[b], merged), 1);
            assert_ne!(v.rank(&[b]), NONE);
        }
    }

    /// Remembered counts are the counts: thousands of pieces made of two of the corpus's
    /// words, counted in two rounds through one table (so slots are taken, replaced and hit),
    /// give what merging each anew gives.
    #[test]
    fn remembered_merges_count_the_same() {
        let v = &O200K.vocabulary;
        let mut words: Vec<&str> = include_str!("../tests/corpus/code_rust.rs")
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        words.sort_unstable();
        words.dedup();
        let pieces: Vec<String> = words
            .iter()
            .flat_map(|a| words.iter().map(move |b| format!("{a}{b}")))
            .filter(|p| p.len() <= MERGED_PIECE_BYTES)
            .collect();
        assert!(pieces.len() > 3 * (1 << MERGED_BITS), "{}", pieces.len());
        let shared = &mut MergedPieces::new();
        for round in 0..2 {
            for piece in &pieces {
                let piece = piece.as_bytes();
                let anew = if v.rank(piece) != NONE {
                    1
                } else {
                    v.merge_by_scan(piece)
                };
                // Twice: the second count finds the first one's.
                for _ in 0..2 {
                    assert_eq!(
                        v.count_piece(piece, shared),
                        anew,
                        "{piece:?} in round {round}"
                    );
                }
            }
        }
        let taken = shared.slots.iter().filter(|s| s.0 > 0).count();
        assert!(
            taken > (1 << MERGED_BITS) / 2,
            "the table fills ({taken} slots)"
        );
    }

    /// A piece of a megabyte of one punctuation run is one piece: the heap keeps it linear
    /// (a quadratic merge would not finish in test time).
    #[test]
    fn a_megabyte_piece_counts() {
        let piece = "-+".repeat(500_000);
        let n = O200K.count(&piece);
        assert!(n > 0 && n < piece.len(), "{n}");
    }
}
