//! `[[routes]]`: read against the sources and destinations, every problem naming the route.
use super::tests::parse;
use super::*;
use serde_json::json;

const HEAD: &str = r#"
[[destinations]]
name = "billing"
url = "http://127.0.0.1:9000/billing"
secret_env = "D"

[[destinations]]
name = "warehouse"
url = "http://127.0.0.1:9000/warehouse"
secret_env = "D"

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["S"]
forward = ["warehouse"]

[[sources]]
name = "crm"
scheme = "hmac-sha256"
secrets_env = ["S"]
"#;

const VARS: &[(&str, &str)] = &[("S", "s3cret"), ("D", "whsec_ZGVzdGluYXRpb24ta2V5")];

fn read(routes: &str) -> Result<Config, ConfigErrors> {
    parse(&format!("{HEAD}\n{routes}"), VARS)
}

fn problems(routes: &str) -> Vec<String> {
    let ConfigErrors(problems) = read(routes).expect_err("problems");
    problems.iter().map(ToString::to_string).collect()
}

#[test]
fn routes_are_read_in_file_order_and_each_source_gets_its_own() {
    let config = read(
        r#"
[[routes]]
name = "paid-orders"
source = "shop"
destination = "billing"
event_types = ["invoice.*", "order.paid"]
match = { snapshot = { status = "paid", total = 10.5, lines = [{ sku = "x" }] } }

[[routes]]
source = "crm"
destination = "billing"
match = '{"kind": "company", "n": 1}'
"#,
    )
    .expect("valid");
    let [paid, second] = config.routes.as_slice() else {
        panic!("two routes: {:?}", config.routes);
    };
    assert_eq!(paid.label, "paid-orders");
    assert_eq!(
        paid.conditions.matches,
        Some(json!({"snapshot": {"status": "paid", "total": 10.5, "lines": [{"sku": "x"}]}}))
    );
    assert_eq!(
        paid.to_string(),
        r#"route paid-orders: shop → billing, event types invoice.*, order.paid, match {"snapshot":{"lines":[{"sku":"x"}],"status":"paid","total":10.5}}"#
    );
    assert_eq!(second.label, "#2", "a route without a name is its place");
    assert_eq!(second.conditions.event_types, None);
    assert_eq!(
        second.conditions.matches,
        Some(json!({"kind": "company", "n": 1}))
    );
    assert_eq!(
        config.source("shop").expect("shop").routes,
        vec![paid.clone()]
    );
    assert_eq!(
        config.source("crm").expect("crm").routes,
        vec![second.clone()]
    );
    assert_eq!(config.source("shop").expect("shop").forward, ["warehouse"]);
}

#[test]
fn every_route_problem_stops_start_up_naming_the_route_and_the_key() {
    let found = problems(
        r#"
[[routes]]
name = "to-nowhere"
source = "shoop"
destination = "biling"

[[routes]]
name = "bad-globs"
source = "shop"
destination = "billing"
event_types = ["order.[ab]"]

[[routes]]
source = "shop"
destination = "billing"
event_types = []

[[routes]]
name = "not-an-object"
source = "shop"
destination = "billing"
match = 3

[[routes]]
name = "json-array"
source = "shop"
destination = "billing"
match = '[1, 2]'

[[routes]]
name = "a-date"
source = "shop"
destination = "billing"
match = { since = 2026-01-01 }
colour = "red"

[[routes]]
name = "a-date"
destination = "billing"
"#,
    );
    assert_eq!(
        found,
        vec![
            r#"hookbox.toml: routes.to-nowhere.source: unknown source "shoop" (declared: shop, crm)"#,
            r#"hookbox.toml: routes.to-nowhere.destination: unknown destination "biling" (declared: billing, warehouse)"#,
            r#"hookbox.toml: routes.bad-globs.event_types: glob "order.[ab]" holds '[': only * is a wildcard (any run of characters, dots too)"#,
            "hookbox.toml: routes.#3.event_types: is empty, so nothing would match: leave it out to match every event type",
            "hookbox.toml: routes.not-an-object.match: must be a table such as { snapshot = { status = \"paid\" } } (a JSON object), not an integer",
            "hookbox.toml: routes.json-array.match: must be a JSON object, such as {\"customer\":\"cus_123\"}",
            "hookbox.toml: routes.a-date.colour: unknown key (known: name, source, destination, event_types, match)",
            "hookbox.toml: routes.a-date.match: 2026-01-01 is a TOML date, which JSON has not: write it as a string",
            "hookbox.toml: routes.a-date.name: is declared twice",
            "hookbox.toml: routes.a-date.source: is required",
        ]
    );
}

#[test]
fn routes_that_are_not_tables_are_one_problem() {
    let ConfigErrors(found) = parse(&format!("routes = 3\n{HEAD}"), VARS).expect_err("a problem");
    let found: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        vec!["hookbox.toml: routes: must be tables ([[routes]])"]
    );
}
