//! `.ctxpackignore`: paths ctxpack should not index, in git's own ignore semantics.
//!
//! The files use gitignore syntax and are matched by `gix-ignore`, gitoxide's implementation
//! of git's rules (`#` comments, `!` negation, `\` escapes, trailing-space trimming, a trailing
//! `/` for directories, a leading or inner `/` to anchor, `*`, `?`, `[…]`, `**`). Every
//! `.ctxpackignore` in the commit counts, as every `.gitignore` does for git: a nested one
//! applies below its directory and wins over the ones above it, and the root one wins over
//! [`DEFAULT_PATTERNS`] (so `!Cargo.lock` indexes a lockfile again). As in git, a file below an
//! excluded directory stays excluded whatever a later rule says (`build/` then
//! `!build/keep.rs` leaves `build/keep.rs` out).
//!
//! `.gitignore` files do not count: git applies them to untracked files only, and everything
//! in a commit is tracked.

use std::collections::HashMap;

use gix::bstr::BString;
use gix_ignore::glob::pattern::Case;
use gix_ignore::glob::search::pattern::{List, Mapping};
use gix_ignore::search::Ignore;

/// The name of an ignore file, in any directory of a commit.
pub const IGNORE_FILE: &str = ".ctxpackignore";

/// Paths that are generated or vendored and only crowd out real evidence. They rank below
/// every `.ctxpackignore`, as `.git/info/exclude` ranks below `.gitignore` files.
pub const DEFAULT_PATTERNS: &str = "\
*.lock
package-lock.json
pnpm-lock.yaml
*.min.js
*.min.css
*.map
.ctxpack/
";

/// The ignore rules of one commit.
#[derive(Clone, Debug)]
pub struct IgnoreRules {
    search: gix_ignore::Search,
}

impl Default for IgnoreRules {
    /// The built-in defaults alone.
    fn default() -> Self {
        let mut rules = IgnoreRules {
            search: gix_ignore::Search::default(),
        };
        rules.push(None, DEFAULT_PATTERNS.as_bytes());
        rules
    }
}

impl IgnoreRules {
    /// The defaults and the given ignore files: `(directory, content)` with the directory's
    /// raw `/`-separated path (empty for the root), in any order.
    pub fn new<'a>(files: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> IgnoreRules {
        let mut files: Vec<(&[u8], &[u8])> = files.into_iter().collect();
        // Later lists win in a search, and a deeper file must win over the ones above it.
        // Only files on one line of descent can both match a path, so depth decides; the path
        // only makes the order total.
        files.sort_by_key(|(dir, _)| (depth(dir), *dir));
        let mut rules = IgnoreRules::default();
        for (dir, content) in files {
            rules.push(Some(dir), content);
        }
        rules
    }

    fn push(&mut self, dir: Option<&[u8]>, content: &[u8]) {
        // `$` marks a precious file only where git is configured for it; by default it is an
        // ordinary character.
        let patterns = gix_ignore::parse(content, false)
            .map(|(pattern, line, value)| Mapping {
                pattern,
                value,
                sequence_number: line,
            })
            .collect();
        // A list's base is the directory it applies below, with a trailing slash; the root's
        // list, like the defaults, has none.
        let base = dir.filter(|d| !d.is_empty()).map(|d| {
            let mut base = BString::from(d);
            base.push(b'/');
            base
        });
        self.search.patterns.push(List::<Ignore> {
            patterns,
            source: None,
            base,
        });
    }

    /// A matcher that remembers directory decisions, for many paths of one tree.
    pub fn matcher(&self) -> Matcher<'_> {
        Matcher {
            rules: self,
            dirs: HashMap::new(),
        }
    }

    /// Whether the last rule that matches `path` (a directory when `is_dir`) excludes it.
    fn excludes(&self, path: &[u8], is_dir: bool) -> bool {
        self.search
            .pattern_matching_relative_path(path.into(), Some(is_dir), Case::Sensitive)
            .is_some_and(|m| !m.pattern.is_negative())
    }
}

/// How deep a directory lies: 0 for the root, 1 for a top-level directory.
fn depth(dir: &[u8]) -> usize {
    if dir.is_empty() {
        0
    } else {
        1 + dir.iter().filter(|&&b| b == b'/').count()
    }
}

/// Decides paths of one tree against one commit's rules.
#[derive(Debug)]
pub struct Matcher<'a> {
    rules: &'a IgnoreRules,
    /// Whether each directory seen so far is excluded (itself or through a parent).
    dirs: HashMap<Vec<u8>, bool>,
}

impl Matcher<'_> {
    /// Whether a file at this raw `/`-separated path is ignored: git's decision, in which a
    /// file below an excluded directory is excluded, and otherwise the last matching rule
    /// decides.
    pub fn is_ignored(&mut self, path: &[u8]) -> bool {
        match path.iter().rposition(|&b| b == b'/') {
            Some(slash) if self.dir_excluded(&path[..slash]) => true,
            _ => self.rules.excludes(path, false),
        }
    }

    fn dir_excluded(&mut self, dir: &[u8]) -> bool {
        if let Some(&known) = self.dirs.get(dir) {
            return known;
        }
        let parent_excluded = dir
            .iter()
            .rposition(|&b| b == b'/')
            .is_some_and(|slash| self.dir_excluded(&dir[..slash]));
        let excluded = parent_excluded || self.rules.excludes(dir, true);
        self.dirs.insert(dir.to_vec(), excluded);
        excluded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root rules as a table of paths and git's decisions (checked against `git check-ignore`
    /// by hand and, for a fixture, by the API tests).
    #[test]
    fn root_rules_decide_as_git_does() {
        let root = b"# comment\n*.log\n/build\ndocs/**/*.png\nvendor/\n!keep.log\n[ab].txt\n\
                     out/\n!out/keep.rs\n\\#hash\nspaced   \n!Cargo.lock\n";
        let rules = IgnoreRules::new([(&b""[..], &root[..])]);
        let mut m = rules.matcher();
        let cases: &[(&[u8], bool)] = &[
            (b"app.log", true),
            (b"deep/dir/app.log", true),
            (b"keep.log", false),
            (b"build/out.rs", true),
            (b"src/build/out.rs", false),
            (b"docs/a/b/c.png", true),
            (b"docs/c.png", true),
            (b"docs/c.jpg", false),
            (b"vendor/x/y.rs", true),
            (b"src/vendor/x.rs", true),
            (b"vendor", false),
            (b"a.txt", true),
            (b"c.txt", false),
            (b"src/main.rs", false),
            // A file under an excluded directory cannot be re-included.
            (b"out/keep.rs", true),
            (b"#hash", true),
            (b"spaced", true),
            // The root file wins over the defaults.
            (b"Cargo.lock", false),
            (b"yarn.lock", true),
            // Names are matched as bytes, whatever their encoding.
            (b"caf\xe9.log", true),
            (b"caf\xe9.rs", false),
        ];
        for (path, expected) in cases {
            assert_eq!(
                m.is_ignored(path),
                *expected,
                "{}",
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn nested_files_apply_below_their_directory_and_win_over_the_root() {
        let rules = IgnoreRules::new([
            (
                &b"pkg"[..],
                &b"*.gen.rs\n!keep.gen.rs\n/local.rs\n!*.log\n"[..],
            ),
            (&b""[..], &b"*.log\n"[..]),
        ]);
        let mut m = rules.matcher();
        let cases: &[(&[u8], bool)] = &[
            (b"pkg/a.gen.rs", true),
            (b"pkg/sub/a.gen.rs", true),
            (b"pkg/keep.gen.rs", false),
            (b"other/a.gen.rs", false),
            (b"pkg/local.rs", true),
            (b"pkg/sub/local.rs", false),
            (b"local.rs", false),
            (b"pkg/debug.log", false),
            (b"debug.log", true),
        ];
        for (path, expected) in cases {
            assert_eq!(
                m.is_ignored(path),
                *expected,
                "{}",
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn defaults_ignore_lockfiles_and_minified_assets_only() {
        let rules = IgnoreRules::default();
        let mut m = rules.matcher();
        let cases: &[(&[u8], bool)] = &[
            (b"Cargo.lock", true),
            (b"web/dist/app.min.js", true),
            (b"web/dist/app.js.map", true),
            (b".ctxpack/ctxpack.sqlite", true),
            (b"src/lock.rs", false),
            (b"web/app.js", false),
        ];
        for (path, expected) in cases {
            assert_eq!(
                m.is_ignored(path),
                *expected,
                "{}",
                String::from_utf8_lossy(path)
            );
        }
    }
}
