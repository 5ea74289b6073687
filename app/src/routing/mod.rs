//! What a route asks of a delivery (contract section 16), as pure rules: its event type against
//! globs ([`Glob`]) and its JSON containing an object ([`contains`], the containment of `/events`'
//! `match` and PostgreSQL's `@>`). [`Conditions::check`] says which condition failed, in words an
//! operator reads on the event page.
//!
//! [`Plan`] decides, from a source's `forward` list and its routes, where a delivery goes and
//! why each destination is or is not sent it ([`Verdict`]): what ingest, replay, the event page
//! and the preview all call. Routes are read from the file in `config::routes`.

mod contains;
mod glob;

pub(crate) use contains::MAX_DEPTH;
pub use contains::{MAX_MATCH_BYTES, contains, parse_match, unmet};
pub use glob::{Glob, GlobError};

use crate::json::Node;
use serde_json::Value as Json;

/// A route's conditions: every one listed must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditions {
    /// The event type matches one of these; `None`: any event type, or none.
    pub event_types: Option<Vec<Glob>>,
    /// The delivery's JSON contains this object; `None`: any delivery.
    pub matches: Option<Json>,
}

/// The condition a delivery failed, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmet {
    /// Its event type matches none of the globs (or it has none).
    EventType {
        event_type: Option<String>,
        globs: Vec<String>,
    },
    /// Its JSON does not contain the `match` object: where it first differs.
    Match { path: String, expected: String },
    /// Its body is not a JSON document, so it contains nothing.
    NotJson,
}

impl std::fmt::Display for Unmet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmet::EventType {
                event_type: Some(t),
                globs,
            } => write!(f, "event type {t} matches none of {}", globs.join(", ")),
            Unmet::EventType {
                event_type: None,
                globs,
            } => write!(
                f,
                "the delivery has no event type (the route wants {})",
                globs.join(", ")
            ),
            Unmet::Match { path, expected } => write!(f, "match: {path} is not {expected}"),
            Unmet::NotJson => write!(f, "match: the body is not JSON"),
        }
    }
}

impl Conditions {
    /// Whether a delivery of `event_type` whose JSON is `doc` (`None`: not JSON) meets every
    /// condition; else the first that fails (the event type before the match).
    pub fn check(&self, event_type: Option<&str>, doc: Option<&Node<'_>>) -> Result<(), Unmet> {
        if let Some(globs) = &self.event_types
            && !event_type.is_some_and(|t| globs.iter().any(|g| g.matches(t)))
        {
            return Err(Unmet::EventType {
                event_type: event_type.map(str::to_string),
                globs: globs.iter().map(|g| g.as_str().to_string()).collect(),
            });
        }
        match (&self.matches, doc) {
            (None, _) => Ok(()),
            (Some(_), None) => Err(Unmet::NotJson),
            (Some(pattern), Some(doc)) => match unmet(doc, pattern) {
                None => Ok(()),
                Some((path, expected)) => Err(Unmet::Match { path, expected }),
            },
        }
    }

    /// Whether a delivery meets every condition: [`Conditions::check`] without the words, what
    /// ingest asks of each route.
    pub fn holds(&self, event_type: Option<&str>, doc: Option<&Node<'_>>) -> bool {
        if let Some(globs) = &self.event_types
            && !event_type.is_some_and(|t| globs.iter().any(|g| g.matches(t)))
        {
            return false;
        }
        match (&self.matches, doc) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(pattern), Some(doc)) => contains(doc, pattern),
        }
    }

    /// [`Conditions::check`] on a delivery, its JSON read only when a `match` asks for it;
    /// without the words (`words` false) an unmet condition is `Err(None)`.
    pub fn check_delivery(
        &self,
        delivery: &Delivery<'_>,
        words: bool,
    ) -> Result<(), Option<Unmet>> {
        let text = self.reads_body().then(|| delivery.json_text()).flatten();
        let doc = text.and_then(|t| crate::json::parse(t).ok());
        if words {
            return self.check(delivery.event_type, doc.as_ref()).map_err(Some);
        }
        match self.holds(delivery.event_type, doc.as_ref()) {
            true => Ok(()),
            false => Err(None),
        }
    }

    /// Whether the conditions need the delivery's JSON.
    pub fn reads_body(&self) -> bool {
        self.matches.is_some()
    }
}

/// The most globs one route may list.
pub const MAX_GLOBS: usize = 64;

/// A route's `event_types` (of the file, of a preview) as globs, or why they are refused: a list
/// of 1 to [`MAX_GLOBS`] valid globs.
pub fn parse_event_types(texts: &[String]) -> Result<Vec<Glob>, String> {
    if texts.is_empty() {
        return Err(
            "is empty, so nothing would match: leave it out to match every event type".into(),
        );
    }
    if texts.len() > MAX_GLOBS {
        return Err(format!("lists more than {MAX_GLOBS} globs"));
    }
    texts
        .iter()
        .map(|text| Glob::parse(text).map_err(|why| format!("glob {text:?} {why}")))
        .collect()
}

/// `[[routes]]`: a source's deliveries that meet `conditions` are forwarded to `destination`.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Its `name`, else `#N`: its place among the file's routes (1 for the first).
    pub label: String,
    pub source: String,
    pub destination: String,
    pub conditions: Conditions,
}

/// One line: `route paid-orders: shop → billing, event types invoice.*, order.paid, match {…}`.
impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "route {}: {} → {}",
            self.label, self.source, self.destination
        )?;
        match &self.conditions.event_types {
            Some(globs) => {
                let globs: Vec<&str> = globs.iter().map(Glob::as_str).collect();
                write!(f, ", event types {}", globs.join(", "))?;
            }
            None => write!(f, ", every event type")?,
        }
        if let Some(matches) = &self.conditions.matches {
            write!(f, ", match {matches}")?;
        }
        Ok(())
    }
}

/// Why a destination of a delivery's source is sent the delivery, or is not.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The source names it in `forward`: sent everything.
    Forward,
    /// A route to it matched (the first that did, by its label).
    Route(String),
    /// Every route to it failed: each route's label and the condition that failed.
    Unmatched(Vec<(String, Unmet)>),
}

impl Verdict {
    pub fn sends(&self) -> bool {
        !matches!(self, Verdict::Unmatched(_))
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Forward => write!(f, "the source forwards everything to it"),
            Verdict::Route(label) => write!(f, "route {label} matched"),
            Verdict::Unmatched(failed) => {
                for (i, (label, unmet)) in failed.iter().enumerate() {
                    if i > 0 {
                        write!(f, "; ")?;
                    }
                    write!(f, "route {label}: {unmet}")?;
                }
                Ok(())
            }
        }
    }
}

/// What a source sends where: its `forward` list and its routes (in file order).
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    pub forward: &'a [String],
    pub routes: &'a [Route],
}

/// A delivery as routes read it: its event type and the JSON it is matched against (a form's
/// fields, else its body).
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    pub event_type: Option<&'a str>,
    pub body_fields: Option<&'a str>,
    pub body: &'a [u8],
}

impl Delivery<'_> {
    /// The text its JSON is read from: a form's fields, else the body (when UTF-8).
    fn json_text(&self) -> Option<&str> {
        match self.body_fields {
            Some(fields) => Some(fields),
            None => std::str::from_utf8(self.body).ok(),
        }
    }
}

impl<'a> Plan<'a> {
    /// Each destination of the source (those of `forward` first, then those of its routes, each
    /// once, in file order) with its verdict for `delivery`. The body is parsed once, and only
    /// when a route asks for it.
    pub fn verdicts(&self, delivery: &Delivery<'_>) -> Vec<(String, Verdict)> {
        let text = self
            .routes
            .iter()
            .any(|r| r.conditions.reads_body())
            .then(|| delivery.json_text())
            .flatten();
        let doc = text.and_then(|t| crate::json::parse(t).ok());
        let mut verdicts: Vec<(String, Verdict)> = self
            .forward
            .iter()
            .map(|d| (d.clone(), Verdict::Forward))
            .collect();
        for route in self.routes {
            let at = match verdicts.iter().position(|(d, _)| *d == route.destination) {
                Some(at) => at,
                None => {
                    verdicts.push((route.destination.clone(), Verdict::Unmatched(Vec::new())));
                    verdicts.len() - 1
                }
            };
            let Verdict::Unmatched(failed) = &mut verdicts[at].1 else {
                continue;
            };
            match route.conditions.check(delivery.event_type, doc.as_ref()) {
                Ok(()) => verdicts[at].1 = Verdict::Route(route.label.clone()),
                Err(unmet) => failed.push((route.label.clone(), unmet)),
            }
        }
        verdicts
    }

    /// The destinations `delivery` is sent to: those [`Plan::verdicts`] sends, decided without
    /// words. A source without routes costs nothing more than its `forward` list; the JSON is
    /// parsed once, and only when a route still to decide has a `match`.
    pub fn destinations(&self, delivery: &Delivery<'_>) -> std::borrow::Cow<'a, [String]> {
        if self.routes.is_empty() {
            return std::borrow::Cow::Borrowed(self.forward);
        }
        let mut chosen: Vec<String> = self.forward.to_vec();
        let mut doc: Option<Option<Node<'_>>> = None;
        for route in self.routes {
            if chosen.contains(&route.destination) {
                continue;
            }
            let parsed = if route.conditions.reads_body() {
                doc.get_or_insert_with(|| {
                    delivery
                        .json_text()
                        .and_then(|t| crate::json::parse(t).ok())
                })
                .as_ref()
            } else {
                None
            };
            if route.conditions.holds(delivery.event_type, parsed) {
                chosen.push(route.destination.clone());
            }
        }
        std::borrow::Cow::Owned(chosen)
    }
}

#[cfg(test)]
mod tests;
