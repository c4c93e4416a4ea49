//! Splitting a command line into words, without a shell.
//!
//! `run("cargo test -p 'my crate'")` never goes through `sh`: the command is split here and
//! the words become the program and its arguments. Splitting follows the POSIX shell's
//! rules for words and quotes (by `shell-words`) and performs no expansion but quote removal:
//! words are separated by spaces, tabs and newlines; `'…'` is literal; inside `"…"` a
//! backslash escapes `"`, `\`, `$`, `` ` `` and a newline; outside quotes a backslash escapes
//! the next character (a backslash that ends the command stands for itself, as in `sh`); a
//! backslash before a newline joins the lines; a `#` that starts a word begins a comment that
//! runs to the end of the line. There is no globbing, no variable expansion and no operators
//! (`|`, `&&`, `>` are ordinary characters).
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

use crate::PlanError;

/// Splits `command` into words (see the module docs for the rules).
pub fn split_command(command: &str) -> Result<Vec<String>, PlanError> {
    match shell_words::split(command) {
        Ok(words) if words.is_empty() => Err(PlanError::EmptyCommand),
        Ok(words) => Ok(words),
        Err(shell_words::ParseError) => Err(PlanError::UnterminatedQuote(open_quote(command))),
    }
}

/// Which kind of quote `command` leaves open, given that it leaves one open.
///
/// Appending `'` closes an open single quote, so the command then splits; inside an open
/// double quote (even right after a backslash) a `'` is an ordinary character and the quote
/// stays open.
fn open_quote(command: &str) -> &'static str {
    if shell_words::split(&format!("{command}'")).is_ok() {
        "single"
    } else {
        "double"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases() {
        let cases: &[(&str, Result<&[&str], PlanError>)] = &[
            ("cargo test", Ok(&["cargo", "test"])),
            ("  a   b  ", Ok(&["a", "b"])),
            ("a\tb\nc", Ok(&["a", "b", "c"])),
            ("echo 'a  b' \"c d\"", Ok(&["echo", "a  b", "c d"])),
            (r#"echo "say \"hi\" \n""#, Ok(&["echo", r#"say "hi" \n"#])),
            (r#"echo "\$HOME \` \\""#, Ok(&["echo", r"$HOME ` \"])),
            (r"a\ b c", Ok(&["a b", "c"])),
            ("echo ''", Ok(&["echo", ""])),
            ("x'y'\"z\"", Ok(&["xyz"])),
            ("ls *.rs | wc", Ok(&["ls", "*.rs", "|", "wc"])),
            ("echo $HOME ~ `date`", Ok(&["echo", "$HOME", "~", "`date`"])),
            // As in `sh`: a final backslash is literal, backslash-newline joins lines, and
            // a `#` opens a comment only at the start of a word.
            ("echo \\", Ok(&["echo", "\\"])),
            ("cargo \\\n  test", Ok(&["cargo", "test"])),
            ("echo a#b # a comment", Ok(&["echo", "a#b"])),
            ("echo '#' \"#\" \\#", Ok(&["echo", "#", "#", "#"])),
            ("echo 'oops", Err(PlanError::UnterminatedQuote("single"))),
            ("echo \"it's", Err(PlanError::UnterminatedQuote("double"))),
            ("echo \"oops", Err(PlanError::UnterminatedQuote("double"))),
            ("echo \"oops\\", Err(PlanError::UnterminatedQuote("double"))),
            (
                "echo 'a' \"b\" 'c",
                Err(PlanError::UnterminatedQuote("single")),
            ),
            ("   ", Err(PlanError::EmptyCommand)),
            ("", Err(PlanError::EmptyCommand)),
            ("# only a comment", Err(PlanError::EmptyCommand)),
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
