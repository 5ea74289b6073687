//! JSON text with its characters decoded for reading: `"M\u00fcnchen"` is shown `"München"`.
//! Only what a page shows: copy, curl and export keep the bytes as received.
//!
//! Inside strings, a `\uXXXX` escape (or a surrogate pair) becomes its character, unless that
//! character cannot be read as itself: control characters, `"` and `\`, and the invisible ones
//! that change how the text around them reads (bidirectional controls, zero-width spaces, line
//! and paragraph separators, the byte order mark). Those stay escaped, and one sent as it is is
//! shown escaped too, so two different strings never look alike. The other escapes (`\n`, `\"`,
//! `\\`, `\/`) are left as they are. Linear in the text; the result is at most twice its size.

/// Whether a string's character `c` is shown as itself.
pub fn shown_as_itself(c: char) -> bool {
    !(c.is_control() || c == '"' || c == '\\' || invisible(c))
}

/// Characters that show nothing, or reorder or break the text around them.
fn invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD // soft hyphen
            | 0x061C // Arabic letter mark
            | 0x180E // Mongolian vowel separator
            | 0x200B // zero-width space
            | 0x200E..=0x200F // left-to-right and right-to-left marks
            | 0x2028..=0x202E // line and paragraph separators, bidirectional embeddings
            | 0x2060..=0x2064 // word joiner, invisible operators
            | 0x2066..=0x2069 // bidirectional isolates
            | 0xFEFF // byte order mark
    )
}

/// `text` (JSON) with the escapes of its strings decoded as the module says. Text that is not
/// JSON comes out unharmed but may be changed inside what looks like strings: callers pass JSON.
pub fn decoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !in_string {
            // Outside strings: copy up to and with the quote that opens the next one.
            match rest.find('"') {
                Some(at) => {
                    out.push_str(&rest[..=at]);
                    rest = &rest[at + 1..];
                    in_string = true;
                }
                None => {
                    out.push_str(rest);
                    rest = "";
                }
            }
            continue;
        }
        match c {
            '"' => {
                out.push('"');
                in_string = false;
                rest = &rest[1..];
            }
            '\\' => {
                let (shown, used) = escape(rest);
                match shown {
                    Some(c) => out.push(c),
                    None => out.push_str(&rest[..used]),
                }
                rest = &rest[used..];
            }
            c => {
                if shown_as_itself(c) {
                    out.push(c);
                } else {
                    out.push_str(&format!("\\u{:04x}", u32::from(c)));
                }
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// The escape at the start of `text`: the character it is shown as (`None`: kept as written)
/// and how many bytes it takes.
fn escape(text: &str) -> (Option<char>, usize) {
    let Some(first) = unit(text) else {
        // `\n`, `\"`, …: two bytes, kept; a lone `\` at the end: one.
        let used = text.chars().nth(1).map_or(1, |c| 1 + c.len_utf8());
        return (None, used);
    };
    let (code, used) = if (0xD800..0xDC00).contains(&first) {
        match unit(&text[6..]) {
            Some(low) if (0xDC00..0xE000).contains(&low) => {
                (0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00), 12)
            }
            _ => return (None, 6),
        }
    } else {
        (first, 6)
    };
    match char::from_u32(code).filter(|c| shown_as_itself(*c)) {
        Some(c) => (Some(c), used),
        None => (None, used),
    }
}

/// The code unit of a `\uXXXX` escape at the start of `text`.
fn unit(text: &str) -> Option<u32> {
    let hex = text.strip_prefix("\\u")?.get(..4)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_of_visible_characters_are_decoded() {
        assert_eq!(
            decoded(r#"{"city":"M\u00fcnchen","emoji":"\ud83d\ude00","cjk":"\u6771\u4EAC"}"#),
            r#"{"city":"München","emoji":"😀","cjk":"東京"}"#
        );
        // Keys too; numbers, literals and structure untouched.
        assert_eq!(
            decoded("{\"stra\\u00dfe\": [1.50, true, null]}"),
            "{\"straße\": [1.50, true, null]}"
        );
    }

    #[test]
    fn what_cannot_be_read_as_itself_stays_escaped() {
        for kept in [
            r#""a\"b""#,
            r#""a\\u00fc""#,
            r#""line\nbreak\t""#,
            r#""\u0022quote\u005c""#,
            r#""\u0000\u001f\u007f\u0085""#,
            r#""\u202eevil\u200b\ufeff""#,
            r#""lone \ud83d and \ude00""#,
            r#""\/""#,
        ] {
            assert_eq!(decoded(kept), kept);
        }
        // An invisible character sent as it is, is shown escaped.
        assert_eq!(
            decoded("\"pay\u{202e}lap\u{200b}\""),
            r#""pay\u202elap\u200b""#
        );
        // ... but only inside strings (white space outside is JSON's).
        assert_eq!(decoded("[\n  \"\u{00e9}\"\n]"), "[\n  \"é\"\n]");
    }

    #[test]
    fn malformed_text_is_never_a_panic() {
        for text in [
            "\"\\",
            "\"\\u12",
            "\"\\ud83d\\u",
            "\"ü\\",
            "no strings",
            "\"open",
            "",
        ] {
            let _ = decoded(text);
        }
        assert_eq!(decoded("\"\\u12"), "\"\\u12");
    }
}
