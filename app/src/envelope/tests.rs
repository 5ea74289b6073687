//! The envelope's tests: snapshot and dedup mappings, revisions, refusals and their reasons.

use super::*;
use http::HeaderMap;

fn parse(body: &str) -> Result<Envelope, Invalid> {
    parse_envelope(
        &Mapping::snapshot_envelope(),
        &HeaderMap::new(),
        body.as_bytes(),
    )
}

fn reason(body: &str) -> (u16, String) {
    let e = parse(body).expect_err("should be invalid");
    (e.status().as_u16(), e.reason)
}

#[test]
fn a_valid_snapshot_envelope_is_read_exactly() {
    let body = r#"{"event_id":"e1","object_id":"o1","revision":9223372036854775807,"snapshot":{"n": 1.50}}"#;
    let env = parse(body).expect("valid");
    assert_eq!(env.event_id, "e1");
    assert_eq!(env.object_id.as_deref(), Some("o1"));
    assert_eq!(env.revision.map(Revision::get), Some(i64::MAX));
    assert_eq!(
        env.snapshot.map(|s| s.raw),
        Some(r#"{"n": 1.50}"#.to_string())
    );
}

#[test]
fn revisions_must_be_positive_64_bit_integers() {
    for (rev, why) in [
        (r#""3""#, "must be a JSON integer"),
        ("0", "must be at least 1"),
        ("-1", "must be at least 1"),
        ("1.5", "must be an integer"),
        ("3.0", "must be an integer"),
        ("3e0", "must be an integer"),
        ("9223372036854775808", "must be at most"),
    ] {
        let body =
            format!(r#"{{"event_id":"e","object_id":"o","revision":{rev},"snapshot":{{}}}}"#);
        let (status, reason) = reason(&body);
        assert_eq!(status, 422, "{rev}");
        assert!(
            reason.contains("revision") && reason.contains(why),
            "{rev}: {reason}"
        );
    }
}

#[test]
fn bad_bodies_name_what_is_wrong() {
    assert_eq!(reason("not json").0, 400);
    let e = parse_envelope(
        &Mapping::snapshot_envelope(),
        &HeaderMap::new(),
        b"\xff\xfe",
    )
    .expect_err("bad");
    assert_eq!(
        (e.status().as_u16(), e.reason.contains("UTF-8")),
        (400, true)
    );
    let (status, why) = reason(r#"{"event_id":"e","object_id":"o","revision":1}"#);
    assert_eq!((status, why.contains("snapshot")), (422, true));
    let (_, why) = reason(r#"{"event_id":"e","object_id":"o","revision":1,"snapshot":[1]}"#);
    assert!(why.contains("snapshot") && why.contains("object"), "{why}");
    let (_, why) = reason(r#"{"event_id":"","object_id":"o","revision":1,"snapshot":{}}"#);
    assert!(why.contains("event_id") && why.contains("empty"), "{why}");
    let long = "x".repeat(256);
    let invalid = parse(&format!(
        r#"{{"event_id":"e","object_id":"{long}","revision":1,"snapshot":{{}}}}"#
    ))
    .expect_err("too long");
    assert!(invalid.reason.contains("object_id") && invalid.reason.contains("255"));
    assert_eq!(
        invalid.event_id.as_deref(),
        Some("e"),
        "the readable identity is kept for the archive"
    );
    let (status, why) =
        reason(r#"{"event_id":"e","object_id":"o","revision":1,"snapshot":{"a":"\u0000"}}"#);
    assert_eq!((status, why.contains("\\u0000")), (422, true));
}

#[test]
fn identities_can_come_from_headers_in_dedup_mode() {
    let mapping = Mapping {
        mode: Mode::Dedup,
        event_id: FieldRef::parse("header:X-GitHub-Delivery")
            .expect("valid")
            .into(),
        object_id: None,
        revision: None,
        snapshot: None,
        event_type: Some(
            FieldRef::parse("header:X-GitHub-Event")
                .expect("valid")
                .into(),
        ),
    };
    let mut headers = HeaderMap::new();
    headers.insert("x-github-delivery", "d-1".parse().expect("header"));
    headers.insert("x-github-event", "push".parse().expect("header"));
    let env = parse_envelope(&mapping, &headers, b"{}").expect("valid");
    assert_eq!(
        (env.event_id.as_str(), env.event_type.as_deref()),
        ("d-1", Some("push"))
    );
    assert_eq!(env.revision, None);
}

fn first_of(specs: &[&str]) -> Field {
    let places = specs
        .iter()
        .map(|s| FieldRef::parse(s).expect("valid spec"))
        .collect();
    Field::first_of(places).expect("at least one place")
}

fn dedup(event_id: Field) -> Mapping {
    Mapping {
        mode: Mode::Dedup,
        event_id,
        object_id: None,
        revision: None,
        snapshot: None,
        event_type: None,
    }
}

#[test]
fn the_first_place_present_is_the_field() {
    let mapping = dedup(first_of(&[
        "header:X-Shopify-Event-Id",
        "header:X-Shopify-Webhook-Id",
    ]));
    let mut old_style = HeaderMap::new();
    old_style.insert("x-shopify-webhook-id", "w-1".parse().expect("header"));
    let mut both = old_style.clone();
    both.insert("x-shopify-event-id", "e-1".parse().expect("header"));

    let from_fallback = parse_envelope(&mapping, &old_style, b"{}").expect("valid");
    let from_first = parse_envelope(&mapping, &both, b"{}").expect("valid");
    let neither = parse_envelope(&mapping, &HeaderMap::new(), b"{}").expect_err("missing");

    assert_eq!(from_fallback.event_id, "w-1");
    assert_eq!(from_first.event_id, "e-1");
    assert_eq!(
        neither.reason,
        "event_id (header x-shopify-event-id or header x-shopify-webhook-id) is missing"
    );
}

#[test]
fn a_present_but_bad_place_does_not_fall_through() {
    let mapping = dedup(first_of(&["/id", "header:X-Id"]));
    let mut headers = HeaderMap::new();
    headers.insert("x-id", "h-1".parse().expect("header"));

    let fraction = parse_envelope(&mapping, &headers, br#"{"id":7.5}"#).expect_err("not an id");
    let absent = parse_envelope(&mapping, &headers, b"{}").expect("falls back");
    let integer = parse_envelope(&mapping, &headers, br#"{"id":-70}"#).expect("an integer id");

    assert_eq!(
        fraction.reason,
        "event_id (/id) must be a string or an integer"
    );
    assert_eq!(absent.event_id, "h-1");
    assert_eq!(integer.event_id, "-70", "an integer id is its text as sent");
}

#[test]
fn fields_print_in_config_spelling() {
    assert_eq!(first_of(&["/data/id"]).to_string(), "/data/id");
    assert_eq!(
        first_of(&["header:svix-id", "header:Webhook-Id"]).to_string(),
        r#"["header:svix-id", "header:webhook-id"]"#
    );
}

#[test]
fn the_bodys_digest_names_an_event_a_provider_sends_no_id_for() {
    let mapping = dedup(first_of(&["body:sha256"]));
    let body = br#"{"meta":{"event_name":"order_created"}}"#;
    let envelope = parse_envelope(&mapping, &HeaderMap::new(), body).expect("valid");
    assert_eq!(
        envelope.event_id,
        "sha256:0f449f55c3ce9ae9583a407cd1ef8d1fd5529981506a4772f899377cc7093e66"
    );
    assert_eq!(first_of(&["body:sha256"]).to_string(), "body:sha256");
}
