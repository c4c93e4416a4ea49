//! The line opening the definition a given line is inside of: what a pack shows above a hit
//! cut from the middle of a function or type, recorded for each chunk when it is indexed.

use tree_sitter::Node;

use super::{
    ChunkOptions, Cx, Inside, Language, Limits, Lines, MAX_DEPTH, language_of, one_based, parse,
};

/// For each 1-based line of `lines`, the line that opens the innermost definition (a
/// function, type, impl, class …, as the chunker names them) containing it without starting on
/// it: `(its 1-based number, its text without the line break)`. `None` for a line at the top
/// level, in a language the chunker does not parse (or Markdown), or when the file cannot be
/// parsed. The file is parsed once for all the lines.
pub fn enclosing_lines(path: &str, text: &str, lines: &[u32]) -> Vec<Option<(u32, String)>> {
    let none = || vec![None; lines.len()];
    let Some(language) = language_of(path).filter(|l| *l != Language::Markdown) else {
        return none();
    };
    if text.is_empty() {
        return none();
    }
    let all = Lines::new(text);
    let Some((cx, tree)) = parse(language, text, &all, Limits::new(&ChunkOptions::default()))
    else {
        return none();
    };
    lines
        .iter()
        .map(|&line| {
            let target = usize::try_from(line).ok()?.checked_sub(1)?;
            cx.enclosing(&tree, target)
        })
        .collect()
}

/// [`enclosing_lines`] for one 1-based `line` of `text`, from a parse of only the lines
/// `from..=to` (shifted left by the first one's indentation, so an indented definition parses
/// as one at the top level). `from` must be a line no definition opened before it could
/// enclose `line` without also enclosing `from`: the line opening the definition that encloses
/// some line at or before `line`, or a line at the top level; `to` is at or after `line`.
/// When a definition is left open at `to`, the lines parsed grow (three times as many each
/// time) up to the end of the file, unless the first syntax error stays where it was when they
/// grow: an error of the file itself, which no longer parse of these lines is free of. `None`
/// when no parse of them settles it (the file does not parse cleanly); the caller then parses
/// the whole file, as it must when `from` opens a definition and none is found (a definition
/// enclosing `from` may still enclose `line`).
pub fn enclosing_from(
    path: &str,
    text: &str,
    from: u32,
    line: u32,
    to: u32,
) -> Option<Option<(u32, String)>> {
    let Some(language) = language_of(path).filter(|l| *l != Language::Markdown) else {
        return Some(None);
    };
    let all = Lines::new(text);
    let first = usize::try_from(from).ok()?.checked_sub(1)?;
    let target = usize::try_from(line).ok()?.checked_sub(1)?;
    let last = usize::try_from(to)
        .ok()?
        .checked_sub(1)?
        .min(all.count().checked_sub(1)?);
    if target < first || target > last {
        return None;
    }
    let lead = all.slice(first, first);
    let indent = &lead[..lead.len() - lead.trim_start_matches([' ', '\t']).len()];
    // A definition still open at the end of the lines parsed is cut short: parse again through
    // twice as many lines, up to the end of the file.
    let end = all.count() - 1;
    let mut last = last;
    // Where the last parse's first error was: an error that stays where it was when more lines
    // are parsed is in the file itself, and no longer parse of these lines will be clean.
    let mut error_at = None;
    loop {
        let fragment: String = (first..=last)
            .map(|row| {
                let line = all.slice(row, row);
                line.strip_prefix(indent).unwrap_or(line)
            })
            .collect();
        let lines = Lines::new(&fragment);
        let (cx, tree) = parse(
            language,
            &fragment,
            &lines,
            Limits::new(&ChunkOptions::default()),
        )?;
        match cx.enclosing_row(&tree, target - first) {
            (row, true) => return Some(row.map(|row| all.numbered(first + row))),
            (_, false) if last < end => {
                let error = first_error_row(&tree).map(|row| first + row);
                if error.is_some() && error == error_at {
                    return None;
                }
                error_at = error;
                last = last.saturating_add(2 * (last - first + 1)).min(end);
            }
            (_, false) => return None,
        }
    }
}

/// The first child of `node` whose lines include 0-based row `row` (it starts on or before
/// the row and ends on or after it).
///
/// A file's many top-level items are children of one node, which tree-sitter keeps as a
/// balanced tree of hidden nodes: walking the children one by one to find the row costs their
/// number, once per chunk (quadratic in the file), while asking the cursor for the first child
/// ending on or after the row skips whole hidden subtrees. Children are in document order, so
/// that child is the one sought unless it starts after the row, and then no child is.
fn child_on_row(node: Node<'_>, row: usize) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    let found = match row.checked_sub(1) {
        // Ending after the last column of the row before: ending on or after `row`.
        Some(before) => cursor
            .goto_first_child_for_point(tree_sitter::Point::new(before, u32::MAX as usize))
            .map(|_| cursor.node()),
        None => node.child(0),
    };
    found.filter(|child| child.start_position().row <= row && row <= child.end_position().row)
}

/// The 0-based row where the first syntax error of `tree` (an error or a missing node, in
/// document order) starts, if it has one.
fn first_error_row(tree: &tree_sitter::Tree) -> Option<usize> {
    let mut node = tree.root_node();
    for _ in 0..MAX_DEPTH {
        if node.is_error() || node.is_missing() {
            return Some(node.start_position().row);
        }
        let mut cursor = node.walk();
        let next = node
            .children(&mut cursor)
            .find(|c| c.has_error() || c.is_error() || c.is_missing())?;
        node = next;
    }
    Some(node.start_position().row)
}

impl Cx<'_> {
    /// The line opening the innermost definition containing 0-based line `target` without
    /// starting on it, as `(1-based number, text without the line break)`.
    pub(super) fn enclosing(
        &self,
        tree: &tree_sitter::Tree,
        target: usize,
    ) -> Option<(u32, String)> {
        self.enclosing_row(tree, target)
            .0
            .map(|row| self.lines.numbered(row))
    }

    /// Where the line opening the innermost definition around 0-based lines `start + 1..=end`
    /// changes, from what it is at `start` ([`Chunk::inside`]): what [`Cx::enclosing_row`]
    /// finds for each of them. The path it walks from the root to a line is carried from line
    /// to line: a node on it that still holds the next line stays on it (no sibling before it
    /// can hold that line), so each node is reached once, not once per line.
    pub(super) fn inside(&self, tree: &tree_sitter::Tree, start: usize, end: usize) -> Vec<Inside> {
        let mut runs = Vec::new();
        // The nodes from the root's child down to the line, each with whether it is a
        // definition.
        let mut path: Vec<(Node<'_>, bool)> = Vec::new();
        let mut current = None;
        for row in start..=end.min(self.lines.count().saturating_sub(1)) {
            while path.last().is_some_and(|(n, _)| n.end_position().row < row) {
                path.pop();
            }
            let mut node = path.last().map_or_else(|| tree.root_node(), |(n, _)| *n);
            while path.len() < MAX_DEPTH {
                let Some(child) = child_on_row(node, row) else {
                    break;
                };
                path.push((child, self.def_of(child, 0).is_some()));
                node = child;
            }
            let here = path
                .iter()
                .rev()
                .find(|(n, def)| *def && n.start_position().row < row)
                .map(|(n, _)| n.start_position().row);
            if row > start && here != current {
                runs.push(Inside {
                    line: one_based(row),
                    opening: here.map(|r| self.lines.numbered(r)),
                });
            }
            current = here;
        }
        runs
    }

    /// The 0-based row of the innermost definition containing 0-based line `target` without
    /// starting on it, and whether the answer is sound: no error node on the way, and none in
    /// the definition found — or, when none is found, none anywhere in the tree (a definition
    /// the parse could not close may have been cut short of `target`).
    fn enclosing_row(&self, tree: &tree_sitter::Tree, target: usize) -> (Option<usize>, bool) {
        let root = tree.root_node();
        if target >= self.lines.count() {
            return (None, !root.has_error());
        }
        let mut node = root;
        let mut found = None;
        let mut way = true;
        for _ in 0..MAX_DEPTH {
            let Some(child) = child_on_row(node, target) else {
                break;
            };
            way &= !child.is_error() && !child.is_missing();
            if child.start_position().row < target && self.def_of(child, 0).is_some() {
                found = Some((child.start_position().row, !child.has_error()));
            }
            node = child;
        }
        match found {
            Some((row, clean)) => (Some(row), way && clean),
            None => (None, way && !root.has_error()),
        }
    }
}
