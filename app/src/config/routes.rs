//! `[[routes]]` (contract section 16): which of a source's deliveries a destination is sent,
//! by event type globs and a `match` object. Every problem names the route
//! (`routes.paid-orders.match`, or `routes.#2.…` for one without a name) and stops start-up.
//! The rules themselves (globs, containment, the verdicts) are `crate::routing`'s.

use super::keys::{Keys, Problems};
use crate::routing::{Conditions, Glob, Route};

const ROUTE_KEYS: &[&str] = &["name", "source", "destination", "event_types", "match"];

/// The most routes a file may declare: each is evaluated on every delivery of its source.
pub const MAX_ROUTES: usize = 1000;

/// Reads `[[routes]]` against the sources and destinations read before them, and gives each
/// source its own routes (`Source::routes`, in file order).
pub(super) fn read_routes(
    value: Option<&toml::Value>,
    sources: &mut [super::Source],
    destinations: &[&str],
    problems: &mut Problems,
) -> Vec<Route> {
    let names: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut place = 0;
    let routes = super::keys::read_tables(value, "routes", problems, |keys, earlier| {
        place += 1;
        read_route(keys, place, earlier, &names, destinations)
    });
    for source in sources.iter_mut() {
        source.routes = routes
            .iter()
            .filter(|r| r.source == source.name)
            .cloned()
            .collect();
    }
    if routes.len() > MAX_ROUTES {
        problems.add(
            None,
            Some("routes"),
            format!("declares {} routes; at most {MAX_ROUTES}", routes.len()),
        );
    }
    routes
}

fn read_route(
    mut keys: Keys<'_>,
    place: usize,
    earlier: &[String],
    sources: &[&str],
    destinations: &[&str],
) -> Option<Route> {
    keys.refuse_unknown(ROUTE_KEYS);
    let name = keys.optional_name(earlier);
    let source = known(&mut keys, "source", "source", sources);
    let destination = known(&mut keys, "destination", "destination", destinations);
    let event_types = event_types(&mut keys);
    let matches = match_object(&mut keys);
    let refused = ["name", "event_types", "match"]
        .iter()
        .any(|key| keys.has_refused(key));
    if refused || name.as_ref().is_some_and(|n| earlier.contains(n)) {
        return None;
    }
    Some(Route {
        label: name.unwrap_or_else(|| format!("#{place}")),
        source: source?,
        destination: destination?,
        conditions: Conditions {
            event_types,
            matches,
        },
    })
}

/// A required name among `declared` (sources or destinations).
fn known(keys: &mut Keys<'_>, key: &str, what: &str, declared: &[&str]) -> Option<String> {
    let Some(name) = keys.string(key) else {
        if !keys.has(key) {
            keys.problem(key, "is required");
        }
        return None;
    };
    if declared.contains(&name.as_str()) {
        return Some(name);
    }
    let known = if declared.is_empty() {
        "none is declared".to_string()
    } else {
        format!("declared: {}", declared.join(", "))
    };
    keys.refuse(key, format!("unknown {what} {name:?} ({known})"));
    None
}

/// `event_types`: globs ([`crate::routing::parse_event_types`]).
fn event_types(keys: &mut Keys<'_>) -> Option<Vec<Glob>> {
    let texts = keys.strings("event_types")?;
    crate::routing::parse_event_types(&texts)
        .map_err(|why| keys.refuse("event_types", why))
        .ok()
}

/// `match`: a table (`{ snapshot = { status = "paid" } }`) or a string of a JSON object, held to
/// the rules of `/events`' `match` ([`crate::routing::parse_match`]).
fn match_object(keys: &mut Keys<'_>) -> Option<serde_json::Value> {
    let value = keys.table.get("match")?;
    let text = match value {
        toml::Value::String(text) => text.clone(),
        toml::Value::Table(_) => match json_of(value) {
            Ok(json) => json.to_string(),
            Err(why) => {
                keys.refuse("match", why);
                return None;
            }
        },
        other => {
            let found = other.type_str();
            let found = if found.starts_with(['a', 'i']) {
                format!("an {found}")
            } else {
                format!("a {found}")
            };
            keys.refuse(
                "match",
                format!(
                    "must be a table such as {{ snapshot = {{ status = \"paid\" }} }} (a JSON object), not {found}"
                ),
            );
            return None;
        }
    };
    match crate::routing::parse_match(&text) {
        Ok(object) => Some(object),
        Err(why) => {
            keys.refuse("match", why);
            None
        }
    }
}

/// A TOML value as JSON: dates have no JSON form, nor do infinite floats.
fn json_of(value: &toml::Value) -> Result<serde_json::Value, String> {
    use serde_json::Value as Json;
    Ok(match value {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Integer(n) => Json::from(*n),
        toml::Value::Float(x) => serde_json::Number::from_f64(*x)
            .map(Json::Number)
            .ok_or_else(|| format!("{x} is not a JSON number"))?,
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(d) => {
            return Err(format!(
                "{d} is a TOML date, which JSON has not: write it as a string"
            ));
        }
        toml::Value::Array(items) => {
            Json::Array(items.iter().map(json_of).collect::<Result<_, _>>()?)
        }
        toml::Value::Table(table) => Json::Object(
            table
                .iter()
                .map(|(k, v)| Ok((k.clone(), json_of(v)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}
