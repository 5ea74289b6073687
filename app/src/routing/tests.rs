#![allow(clippy::unwrap_used)]
use super::*;
use serde_json::json;

fn glob(text: &str) -> Glob {
    Glob::parse(text).expect("a valid glob")
}

#[test]
fn a_star_is_any_run_of_characters_dots_too_and_the_rest_stands_for_itself() {
    assert!(glob("invoice.*").matches("invoice.paid"));
    assert!(glob("invoice.*").matches("invoice.payment.failed"));
    assert!(glob("invoice.*").matches("invoice."));
    assert!(!glob("invoice.*").matches("invoice"));
    assert!(!glob("invoice.*").matches("Invoice.paid"), "case-sensitive");
    assert!(glob("*.paid").matches("order.paid"));
    assert!(!glob("*.paid").matches("order.paid.late"));
    assert!(glob("*").matches(""));
    assert!(glob("a*b*c").matches("abc"));
    assert!(glob("a*b*c").matches("a-b-b-c"));
    assert!(!glob("a*b*c").matches("acb"));
    assert!(!glob("a*a").matches("a"), "the pieces may not overlap");
    assert!(glob("order.paid").matches("order.paid"));
    assert!(!glob("order.paid").matches("order.paid2"));
    assert!(!glob("order.paid").matches("xorder.paid"));
}

#[test]
fn a_glob_that_means_something_else_elsewhere_is_refused_with_the_reason() {
    assert_eq!(Glob::parse(""), Err(GlobError::Empty));
    assert_eq!(Glob::parse(&"a".repeat(257)), Err(GlobError::TooLong));
    assert!(Glob::parse(&"a".repeat(256)).is_ok());
    assert_eq!(Glob::parse("order.?"), Err(GlobError::Character('?')));
    assert_eq!(Glob::parse("order.[ab]"), Err(GlobError::Character('[')));
    assert_eq!(Glob::parse("{a,b}"), Err(GlobError::Character('{')));
    assert_eq!(Glob::parse("a\nb"), Err(GlobError::Character('\n')));
    assert_eq!(
        GlobError::Character('?').to_string(),
        "holds '?': only * is a wildcard (any run of characters, dots too)"
    );
}

fn holds(doc: &str, pattern: serde_json::Value) -> bool {
    contains(&crate::json::parse(doc).expect("json"), &pattern)
}

#[test]
fn containment_is_postgresqls_for_objects_arrays_and_numbers_by_value() {
    let doc = r#"{"snapshot":{"status":"paid","total":10.50,"tags":["a","b"],"lines":[{"sku":"x","n":1},{"sku":"y","n":2}]},"n":1}"#;
    assert!(holds(doc, json!({})));
    assert!(holds(doc, json!({"snapshot": {"status": "paid"}})));
    assert!(
        holds(doc, json!({"snapshot": {"total": 10.5}})),
        "numbers by value"
    );
    assert!(holds(doc, json!({"n": 1.0})));
    assert!(!holds(doc, json!({"n": "1"})), "a string is not a number");
    assert!(!holds(doc, json!({"n": true})));
    assert!(holds(doc, json!({"snapshot": {"tags": ["b"]}})));
    assert!(holds(doc, json!({"snapshot": {"tags": []}})));
    assert!(
        !holds(doc, json!({"snapshot": {"tags": "a"}})),
        "a nested array does not contain a scalar"
    );
    assert!(holds(doc, json!({"snapshot": {"lines": [{"sku": "y"}]}})));
    assert!(!holds(
        doc,
        json!({"snapshot": {"lines": [{"sku": "y", "n": 1}]}})
    ));
    assert!(!holds(doc, json!({"snapshot": {"status": "open"}})));
    assert!(!holds(doc, json!({"missing": null})));
    assert!(!holds(r#"{"a":[[1,2]]}"#, json!({"a": [1]})));
    assert!(holds(r#"{"a":[[1,2]]}"#, json!({"a": [[1]]})));
    assert!(!holds(r#"{"a":1}"#, json!({"a": []})));
    assert!(
        holds(r#"{"a":1,"a":2}"#, json!({"a": 2})),
        "the last duplicate key counts"
    );
    assert!(!holds(r#"{"a":1,"a":2}"#, json!({"a": 1})));
    assert!(!holds(r#"[{"a":1}]"#, json!({"a": 1})));
}

#[test]
fn the_failed_condition_names_the_place_and_what_was_wanted() {
    let conditions = Conditions {
        event_types: Some(vec![glob("order.*"), glob("invoice.paid")]),
        matches: Some(json!({"snapshot": {"status": "paid"}})),
    };
    let doc = crate::json::parse(r#"{"snapshot":{"status":"open"}}"#).unwrap();
    assert_eq!(
        conditions
            .check(Some("refund.created"), Some(&doc))
            .unwrap_err()
            .to_string(),
        "event type refund.created matches none of order.*, invoice.paid"
    );
    assert_eq!(
        conditions.check(None, Some(&doc)).unwrap_err().to_string(),
        "the delivery has no event type (the route wants order.*, invoice.paid)"
    );
    assert_eq!(
        conditions
            .check(Some("order.updated"), Some(&doc))
            .unwrap_err()
            .to_string(),
        "match: /snapshot/status is not \"paid\""
    );
    assert_eq!(
        conditions.check(Some("order.updated"), None).unwrap_err(),
        Unmet::NotJson
    );
    let missing = crate::json::parse(r#"{"id":"1"}"#).unwrap();
    assert_eq!(
        conditions
            .check(Some("order.updated"), Some(&missing))
            .unwrap_err()
            .to_string(),
        "match: /snapshot is not {\"status\":\"paid\"}"
    );
    let paid = crate::json::parse(r#"{"snapshot":{"status":"paid"}}"#).unwrap();
    assert_eq!(conditions.check(Some("order.paid"), Some(&paid)), Ok(()));
}

fn route(
    label: &str,
    destination: &str,
    types: &[&str],
    matches: Option<serde_json::Value>,
) -> Route {
    Route {
        label: label.into(),
        source: "shop".into(),
        destination: destination.into(),
        conditions: Conditions {
            event_types: (!types.is_empty()).then(|| types.iter().map(|t| glob(t)).collect()),
            matches,
        },
    }
}

#[test]
fn each_destination_is_sent_once_by_forward_or_the_first_route_that_matches() {
    let forward = vec!["analytics".to_string()];
    let routes = vec![
        route(
            "paid",
            "billing",
            &["invoice.*"],
            Some(json!({"status": "paid"})),
        ),
        route("#2", "billing", &["order.paid"], None),
        route("everything", "analytics", &["nothing"], None),
        route("ships", "warehouse", &["order.shipped"], None),
    ];
    let plan = Plan {
        forward: &forward,
        routes: &routes,
    };
    let body = br#"{"status":"open"}"#;
    let delivery = Delivery {
        event_type: Some("order.paid"),
        body_fields: None,
        body,
    };
    let verdicts = plan.verdicts(&delivery);
    assert_eq!(
        verdicts,
        vec![
            ("analytics".to_string(), Verdict::Forward),
            ("billing".to_string(), Verdict::Route("#2".into())),
            (
                "warehouse".to_string(),
                Verdict::Unmatched(vec![(
                    "ships".into(),
                    Unmet::EventType {
                        event_type: Some("order.paid".into()),
                        globs: vec!["order.shipped".into()]
                    }
                )])
            ),
        ]
    );
    assert_eq!(
        plan.destinations(&delivery).into_owned(),
        vec!["analytics".to_string(), "billing".to_string()]
    );
    let refund = Delivery {
        event_type: Some("invoice.refunded"),
        body_fields: None,
        body,
    };
    assert_eq!(
        plan.verdicts(&refund)[1].1.to_string(),
        "route paid: match: /status is not \"paid\"; route #2: event type invoice.refunded matches none of order.paid"
    );
}

#[test]
fn a_form_is_matched_as_its_fields_and_a_body_that_is_not_json_matches_no_match() {
    let routes = vec![route("r", "billing", &[], Some(json!({"status": "paid"})))];
    let plan = Plan {
        forward: &[],
        routes: &routes,
    };
    let form = Delivery {
        event_type: None,
        body_fields: Some(r#"{"status":"paid"}"#),
        body: b"status=paid",
    };
    assert_eq!(
        plan.destinations(&form).into_owned(),
        vec!["billing".to_string()]
    );
    let raw = Delivery {
        event_type: None,
        body_fields: None,
        body: b"status=paid",
    };
    assert_eq!(
        plan.verdicts(&raw),
        vec![(
            "billing".to_string(),
            Verdict::Unmatched(vec![("r".into(), Unmet::NotJson)])
        )]
    );
}
