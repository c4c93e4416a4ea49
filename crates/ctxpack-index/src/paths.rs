//! `--include`/`--exclude`: which paths of a snapshot a pack may cite, by glob.
//!
//! Globs follow git's own pattern rules (gitignore semantics, through `gix-glob`): a glob
//! without a slash matches a file or directory name at any depth (`*.rs`, `vendor`), one with
//! a slash is anchored at the repository root (`src/**`, `docs/*.md`), `*` never crosses a
//! slash while `**` does, and a glob that names a directory covers everything below it
//! (`src/` and `src` alike). A path is kept when it matches some include glob (or there are
//! none) and no exclude glob.

use gix_glob::Pattern;
use gix_glob::pattern::Case;
use gix_glob::wildmatch::Mode;

use crate::error::IndexError;

/// The longest glob accepted, and how many of each kind.
const MAX_GLOB_BYTES: usize = 1024;
const MAX_GLOBS: usize = 256;

/// Include and exclude globs, parsed.
#[derive(Clone, Debug, Default)]
pub struct PathFilter {
    include: Vec<Pattern>,
    exclude: Vec<Pattern>,
}

impl PathFilter {
    /// Parses the globs; an empty, negated, over-long or malformed glob is an error.
    pub fn new(include: &[String], exclude: &[String]) -> Result<PathFilter, IndexError> {
        Ok(PathFilter {
            include: parse_all("include", include)?,
            exclude: parse_all("exclude", exclude)?,
        })
    }

    /// Whether `path` (repository-relative, `/`-separated) is kept.
    pub fn accepts(&self, path: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| covers(p, path)))
            && !self.exclude.iter().any(|p| covers(p, path))
    }
}

fn parse_all(field: &'static str, globs: &[String]) -> Result<Vec<Pattern>, IndexError> {
    let error = |glob: &str, reason| IndexError::Glob {
        field,
        glob: glob.chars().take(80).collect(),
        reason,
    };
    if globs.len() > MAX_GLOBS {
        return Err(error("", "is one of too many globs (at most 256)"));
    }
    globs
        .iter()
        .map(|glob| {
            if glob.len() > MAX_GLOB_BYTES {
                return Err(error(glob, "is longer than 1024 bytes"));
            }
            if glob.starts_with('!') {
                return Err(error(
                    glob,
                    "is negated: use --exclude for what to leave out",
                ));
            }
            // A directory glob covers what is inside, which `covers` checks per ancestor.
            let trimmed = glob.trim_end_matches('/');
            if trimmed.is_empty() || trimmed.trim().is_empty() {
                return Err(error(glob, "is empty"));
            }
            Pattern::from_bytes_without_negation(trimmed.as_bytes())
                .ok_or_else(|| error(glob, "is not a valid glob"))
        })
        .collect()
}

/// Whether `pattern` matches `path` as a file, or one of its directories.
fn covers(pattern: &Pattern, path: &str) -> bool {
    let matches = |candidate: &str, is_dir: bool| {
        pattern.matches_repo_relative_path(
            candidate.into(),
            candidate.rfind('/').map(|p| p + 1),
            Some(is_dir),
            Case::Sensitive,
            Mode::NO_MATCH_SLASH_LITERAL,
        )
    };
    if matches(path, false) {
        return true;
    }
    path.match_indices('/')
        .any(|(slash, _)| matches(&path[..slash], true))
}

#[cfg(test)]
mod tests {
    use super::{IndexError, PathFilter};

    fn filter(include: &[&str], exclude: &[&str]) -> PathFilter {
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        PathFilter::new(&own(include), &own(exclude)).expect("valid globs")
    }

    #[test]
    fn globs_follow_gitignore_rules() {
        let cases: &[(&[&str], &[&str], &str, bool)] = &[
            (&["src/**"], &[], "src/a/b.rs", true),
            (&["src/**"], &[], "lib/src/b.rs", false),
            (&["src"], &[], "src/a/b.rs", true),
            (&["src/"], &[], "src/b.rs", true),
            (&["*.rs"], &[], "deep/down/x.rs", true),
            (&["*.rs"], &[], "x.rs.txt", false),
            (&["src/*.rs"], &[], "src/a/b.rs", false),
            (&["src/**/*.rs"], &[], "src/a/b.rs", true),
            (&[], &["**/*.test.ts"], "web/app.test.ts", false),
            (&[], &["**/*.test.ts"], "web/app.ts", true),
            (&[], &["vendor"], "third/vendor/lib.c", false),
            (&["src/**"], &["src/gen/**"], "src/gen/x.rs", false),
            (&["src/**"], &["src/gen/**"], "src/main.rs", true),
            (&["/README.md"], &[], "README.md", true),
            (&["/README.md"], &[], "docs/README.md", false),
            (&["docs/[a-c]*.md"], &[], "docs/b.md", true),
            (&["docs/[a-c]*.md"], &[], "docs/d.md", false),
        ];
        for (include, exclude, path, kept) in cases {
            assert_eq!(
                filter(include, exclude).accepts(path),
                *kept,
                "{include:?} {exclude:?} {path}"
            );
        }
    }

    #[test]
    fn unusable_globs_are_refused_by_field() {
        for (include, exclude, field) in [
            (vec!["!src/**".to_owned()], vec![], "include"),
            (vec![], vec!["".to_owned()], "exclude"),
            (vec![], vec!["/".to_owned()], "exclude"),
            (vec!["x".repeat(2000)], vec![], "include"),
        ] {
            let error = PathFilter::new(&include, &exclude).expect_err("refused");
            assert!(
                matches!(error, IndexError::Glob { field: f, .. } if f == field),
                "{error}"
            );
        }
    }
}
