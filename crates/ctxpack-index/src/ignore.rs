//! `.ctxpackignore`: gitignore-style patterns for paths ctxpack should not index.
//!
//! Supported: `#` comments, blank lines, `!` negation (last match wins), a trailing `/` for
//! directories, a leading or inner `/` to anchor at the root, `*`, `?`, `[…]` and `**`.

use regex::Regex;

/// Compiled patterns.
#[derive(Debug, Default)]
pub struct IgnoreRules {
    rules: Vec<(Regex, bool)>,
}

/// Paths that are generated or vendored and only crowd out real evidence.
pub const DEFAULT_PATTERNS: &str = "\
*.lock
package-lock.json
pnpm-lock.yaml
*.min.js
*.min.css
*.map
.ctxpack/
";

impl IgnoreRules {
    /// Parses patterns; lines that cannot be compiled are skipped and returned for reporting.
    pub fn parse(source: &str) -> (IgnoreRules, Vec<String>) {
        let mut rules = Vec::new();
        let mut invalid = Vec::new();
        for line in source.lines() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, pattern) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            match compile(pattern) {
                Some(re) => rules.push((re, negated)),
                None => invalid.push(line.to_owned()),
            }
        }
        (IgnoreRules { rules }, invalid)
    }

    /// Appends another rule set (its rules win over these on conflict).
    pub fn extend(&mut self, other: IgnoreRules) {
        self.rules.extend(other.rules);
    }

    /// Whether a `/`-separated file path is ignored.
    pub fn is_ignored(&self, path: &str) -> bool {
        let mut ignored = false;
        for (re, negated) in &self.rules {
            if re.is_match(path) {
                ignored = !negated;
            }
        }
        ignored
    }
}

/// Translates one pattern to a regex matching a file path (or any path under a matched
/// directory).
fn compile(pattern: &str) -> Option<Regex> {
    let dir_only = pattern.ends_with('/');
    let pattern = pattern.trim_end_matches('/');
    if pattern.is_empty() {
        return None;
    }
    let anchored = pattern.contains('/');
    let pattern = pattern.trim_start_matches('/');
    let mut re = String::from(if anchored { "^" } else { "^(?:.*/)?" });
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                if chars.get(i + 2) == Some(&'/') {
                    re.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                let end = chars[i..].iter().position(|&c| c == ']')?;
                let class: String = chars[i + 1..i + end].iter().collect();
                let class = class.replacen('!', "^", usize::from(class.starts_with('!')));
                re.push('[');
                re.push_str(&class.replace('\\', "\\\\"));
                re.push(']');
                i += end + 1;
                continue;
            }
            '\\' if i + 1 < chars.len() => {
                re.push_str(&regex::escape(&chars[i + 1].to_string()));
                i += 2;
                continue;
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    // A directory pattern matches everything under it; a plain pattern matches the file or,
    // when it names a directory, everything under it.
    re.push_str(if dir_only { "/.*$" } else { "(?:/.*)?$" });
    Regex::new(&re).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        let (rules, invalid) = IgnoreRules::parse(
            "# comment\n*.log\n/build\ndocs/**/*.png\nvendor/\n!keep.log\n[ab].txt\n",
        );
        assert!(invalid.is_empty());
        let cases: &[(&str, bool)] = &[
            ("app.log", true),
            ("deep/dir/app.log", true),
            ("keep.log", false),
            ("build/out.rs", true),
            ("src/build/out.rs", false),
            ("docs/a/b/c.png", true),
            ("docs/c.png", true),
            ("docs/c.jpg", false),
            ("vendor/x/y.rs", true),
            ("src/vendor/x.rs", true),
            ("vendor", false),
            ("a.txt", true),
            ("c.txt", false),
            ("src/main.rs", false),
        ];
        for (path, expected) in cases {
            assert_eq!(rules.is_ignored(path), *expected, "{path}");
        }
    }

    #[test]
    fn defaults() {
        let (rules, invalid) = IgnoreRules::parse(DEFAULT_PATTERNS);
        assert!(invalid.is_empty());
        assert!(rules.is_ignored("Cargo.lock"));
        assert!(rules.is_ignored("web/dist/app.min.js"));
        assert!(!rules.is_ignored("src/lock.rs"));
    }
}
