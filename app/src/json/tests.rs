//! The JSON reader's tests: syntax, what `jsonb` cannot store, spans, pointers, the canonical form.

use super::*;

fn canon(text: &str) -> String {
    parse(text).expect("valid JSON").canonical()
}

#[test]
fn the_tolerant_reader_reads_what_jsonb_refuses_and_nothing_that_is_not_json() {
    let text = r#"{"id":"e1","n":10e-16384,"s":"a\u0000b","l":"\ud800x"}"#;
    assert!(matches!(parse(text), Err(JsonError::Unsupported { .. })));
    let doc = parse_tolerant(text).expect("read tolerantly");
    assert_eq!(
        doc.pointer("/id").map(|n| n.value.clone()),
        Some(Value::String("e1".into()))
    );
    assert_eq!(
        doc.pointer("/n").map(|n| n.value.clone()),
        Some(Value::Number("10e-16384"))
    );
    assert_eq!(
        doc.pointer("/s").map(|n| n.value.clone()),
        Some(Value::String("a\u{fffd}b".into()))
    );
    assert!(matches!(
        parse_tolerant(r#"{"id":"#),
        Err(JsonError::Syntax { .. })
    ));
    let deep = "[".repeat(200) + &"]".repeat(200);
    assert!(parse_tolerant(&deep).is_err());
}

#[test]
fn canonical_form_ignores_key_order_white_space_and_number_spelling() {
    assert_eq!(
        canon(r#"{"b": 1, "a": [true, null]}"#),
        canon(r#"{"a":[true,null],"b":1}"#)
    );
    assert_eq!(canon("1.0"), canon("1"));
    assert_eq!(canon("1e2"), canon("100"));
    assert_eq!(canon("-0"), canon("0"));
    assert_eq!(canon("0.00"), canon("0"));
    assert_eq!(canon("12.3400"), canon("1234e-2"));
    assert_eq!(canon(r#"{"a":1,"a":2}"#), canon(r#"{"a":2}"#));
    assert_eq!(canon(r#""\u00e9""#), canon("\"é\""));
}

#[test]
fn canonical_form_keeps_distinct_values_apart() {
    assert_ne!(canon("true"), canon("1"));
    assert_ne!(canon(r#""1""#), canon("1"));
    assert_ne!(canon("1"), canon("1.0000000000000000000000001"));
    assert_ne!(canon("[1,2]"), canon("[2,1]"));
    assert_ne!(canon(r#"{"a":null}"#), canon("{}"));
}

#[test]
fn numbers_and_spans_are_kept_exactly() {
    let text = r#" {"n": 123456789012345678901234567890.123456789, "s": {"x" : 1}} "#;
    let doc = parse(text).expect("valid");
    assert_eq!(
        doc.get("n").map(|n| n.raw(text)),
        Some("123456789012345678901234567890.123456789")
    );
    assert_eq!(doc.pointer("/s").map(|n| n.raw(text)), Some(r#"{"x" : 1}"#));
    assert_eq!(doc.pointer("/s/x").map(|n| n.raw(text)), Some("1"));
}

#[test]
fn pointers_follow_rfc_6901() {
    let doc = parse(r#"{"a/b": {"m~n": [10, 20]}}"#).expect("valid");
    assert!(doc.pointer("/a~1b/m~0n/1").is_some());
    assert!(doc.pointer("/a~1b/m~0n/01").is_none());
    assert!(doc.pointer("/missing").is_none());
    assert!(doc.pointer("no-slash").is_none());
}

#[test]
fn refuses_what_is_not_json() {
    for bad in [
        "",
        "{",
        "[1,]",
        "{\"a\" 1}",
        "01",
        "1.",
        "+1",
        "'a'",
        "\"\t\"",
        "nul",
        "1 2",
        "\"\\x\"",
    ] {
        assert!(
            matches!(parse(bad), Err(JsonError::Syntax { .. })),
            "{bad:?} should be a syntax error"
        );
    }
}

#[test]
fn the_canonical_form_of_many_keys_takes_sorting_time_not_quadratic_time() {
    // 90,000 distinct keys: the old linear duplicate search took ~4·10⁹ comparisons.
    let n = 90_000;
    let body = format!(
        "{{{}}}",
        (0..n)
            .rev()
            .map(|i| format!("\"k{i}\":{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let parsed = parse(&body).expect("valid");
    let started = std::time::Instant::now();
    let canonical = parsed.canonical();
    // Generous for a debug build on a loaded machine; quadratic takes minutes.
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(canonical.starts_with("{\"k0\":0,\"k1\":1e0,\"k10\":1e1,"));
    assert_eq!(canonical.matches(':').count(), n);
    // Duplicates: the last one wins, wherever it stands.
    assert_eq!(
        canon(r#"{"b":1,"a":1,"b":2,"a":3}"#),
        r#"{"a":3e0,"b":2e0}"#
    );
}

#[test]
fn refuses_what_jsonb_cannot_store() {
    for bad in [
        r#""\u0000""#,
        r#""\ud800""#,
        r#""\udc00x""#,
        "1e999999",
        "1e-20000",
        "1e99999999999999999999999",
        "10e-16384",
        "0e-20000",
        "1.0e-16383",
        "-0.0e-16383",
        "1e-99999999999999999999999",
    ] {
        assert!(
            matches!(parse(bad), Err(JsonError::Unsupported { .. })),
            "{bad:?} should be unsupported"
        );
    }
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(matches!(parse(&deep), Err(JsonError::Unsupported { .. })));
    assert!(parse(r#""\ud83d\ude00""#).is_ok());
    // At the limits PostgreSQL stores them.
    for fine in [
        "1e-16383",
        "1.5e-16382",
        "0.000e-16380",
        "1e131071",
        "100e16380",
    ] {
        assert!(parse(fine).is_ok(), "{fine:?} should parse");
    }
}
