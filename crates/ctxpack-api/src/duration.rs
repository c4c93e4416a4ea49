//! Durations as people write them on a command line: `30d`, `12h`, `2w`.

/// Seconds in `text`: a whole number of ASCII digits and one unit, `s`, `m`, `h`, `d` or `w`
/// (`30d`, `12h`); `None` for anything else, including a number too large for seconds in a
/// `u64`. It never panics, whatever the text.
pub fn parse_duration(text: &str) -> Option<u64> {
    let unit = text.chars().last()?;
    let number = &text[..text.len() - unit.len_utf8()];
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        'w' => 604_800,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::parse_duration;

    #[test]
    fn a_duration_is_a_number_and_a_unit() {
        assert_eq!(parse_duration("30d"), Some(30 * 86_400));
        assert_eq!(parse_duration("0s"), Some(0));
        assert_eq!(parse_duration("2w"), Some(1_209_600));
        for bad in [
            "",
            "d",
            "30",
            "30y",
            "-1d",
            "+1d",
            "1.5h",
            "99999999999999999999d",
            "3é",
            "5é",
            "é",
            "1 d",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    proptest! {
        /// Any text at all is read or refused, never a panic; what is read is a number and
        /// a unit.
        #[test]
        fn any_text_is_read_or_refused(text in any::<String>()) {
            if let Some(seconds) = parse_duration(&text) {
                let unit = text.chars().last().expect("a unit");
                prop_assert!("smhdw".contains(unit));
                prop_assert!(text[..text.len() - 1].bytes().all(|b| b.is_ascii_digit()));
                prop_assert!(seconds == 0 || seconds >= text[..text.len() - 1].parse::<u64>().expect("digits"));
            }
        }

        #[test]
        fn a_number_and_a_unit_round_trip(n in 0u64..1_000_000_000, unit in "[smhdw]") {
            let scale = match unit.as_str() { "s" => 1, "m" => 60, "h" => 3_600, "d" => 86_400, _ => 604_800 };
            prop_assert_eq!(parse_duration(&format!("{n}{unit}")), Some(n * scale));
        }
    }
}
