//! Splitting a command line into words, without a shell.
//!
//! `run("cargo test -p 'my crate'")` never goes through `sh`: the command is split here and
//! the words become the program and its arguments. Quoting follows the shell's rules for the
//! common cases and nothing more: words are separated by whitespace; `'…'` is literal; inside
//! `"…"` a backslash escapes `"`, `\`, `$` and `` ` ``; outside quotes a backslash escapes the
//! next character. There is no globbing, no variable expansion and no operators (`|`, `&&`, `>`
//! are ordinary characters).
//!
//! ```
//! use ctxpack_plan::split_command;
//!
//! assert_eq!(
//!     split_command(r#"cargo test -p "my crate" -- 'a b' c\ d"#).unwrap(),
//!     ["cargo", "test", "-p", "my crate", "--", "a b", "c d"]
//! );
//! assert!(split_command("echo 'unterminated").is_err());
//! ```

/// Why a command could not be split.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// A quote was opened and never closed.
    #[error("unterminated {0} quote in the command")]
    Unterminated(&'static str),
    /// A backslash ended the command.
    #[error("the command ends with a lone backslash")]
    TrailingBackslash,
    /// Nothing but whitespace.
    #[error("the command is empty")]
    Empty,
}

/// Splits `command` into words (see the module docs for the rules).
pub fn split_command(command: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(SplitError::Unterminated("single")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some(other) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => return Err(SplitError::Unterminated("double")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(SplitError::Unterminated("double")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(SplitError::TrailingBackslash),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(SplitError::Empty);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases() {
        let cases: &[(&str, Result<&[&str], SplitError>)] = &[
            ("cargo test", Ok(&["cargo", "test"])),
            ("  a   b  ", Ok(&["a", "b"])),
            ("echo 'a  b' \"c d\"", Ok(&["echo", "a  b", "c d"])),
            (r#"echo "say \"hi\" \n""#, Ok(&["echo", r#"say "hi" \n"#])),
            (r"a\ b c", Ok(&["a b", "c"])),
            ("echo ''", Ok(&["echo", ""])),
            ("x'y'\"z\"", Ok(&["xyz"])),
            ("ls *.rs | wc", Ok(&["ls", "*.rs", "|", "wc"])),
            ("echo 'oops", Err(SplitError::Unterminated("single"))),
            ("echo \"oops", Err(SplitError::Unterminated("double"))),
            ("echo \\", Err(SplitError::TrailingBackslash)),
            ("   ", Err(SplitError::Empty)),
        ];
        for (input, expected) in cases {
            let got = split_command(input);
            let expected = expected
                .clone()
                .map(|words| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>());
            assert_eq!(got, expected, "{input:?}");
        }
    }
}
