//! What a channel is sent: the words of a change (source, cause, counts, state, a link), shaped
//! for the channel's kind. Built from the change's facts alone, which never hold a delivery's
//! body, headers or a secret.

use crate::config::notifications::{Channel, Target};
use crate::model::{ChannelKind, NotifyEvent, ProblemInfo};
use crate::schemes::Scheme;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The facts of `destination.dead`: the destination, the source of the delivery that died and
/// why it died (its last answer's class). How many died is the changes a message stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadFacts {
    pub destination: String,
    pub source: String,
    pub answer: String,
}

/// A change's facts, by its event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Facts {
    Problem(ProblemInfo),
    Dead(DeadFacts),
}

impl Facts {
    /// The facts stored with a change of `event`.
    pub fn parse(event: NotifyEvent, json: &str) -> Result<Facts, serde_json::Error> {
        Ok(match event {
            NotifyEvent::DestinationDead => Facts::Dead(serde_json::from_str(json)?),
            _ => Facts::Problem(serde_json::from_str(json)?),
        })
    }
}

/// A message ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The mail's subject, and the chat message's first line.
    pub title: String,
    /// The lines after it.
    pub lines: Vec<String>,
    /// Where to look, when `public_url` is set.
    pub link: Option<String>,
}

/// The words of `event` with `facts`, standing for `changes` changes; `public_url` without its
/// trailing slash.
pub fn words(event: NotifyEvent, facts: &Facts, changes: i64, public_url: Option<&str>) -> Message {
    let base = public_url.map(|url| url.trim_end_matches('/'));
    let mut message = match facts {
        Facts::Problem(p) => {
            let verb = match event {
                NotifyEvent::Opened => "opened",
                NotifyEvent::Reopened => "reopened",
                _ => "resolved",
            };
            let mut lines = vec![
                format!("Source: {}", p.source),
                format!("Cause: {} · {}", p.outcome.as_str(), p.class),
                format!("State: {} · open failures: {}", p.state, p.open_failures),
            ];
            if let (Some(first), Some(last)) = (&p.first_seen, &p.last_seen) {
                lines.push(format!("First seen {first}, last seen {last}"));
            }
            Message {
                title: format!("hookbox: problem {verb} in {}: {}", p.source, p.class),
                lines,
                link: base.map(|b| format!("{b}/problems")),
            }
        }
        Facts::Dead(d) => Message {
            title: format!(
                "hookbox: deliveries to {} died ({})",
                d.destination, d.answer
            ),
            lines: vec![
                format!("Destination: {}", d.destination),
                format!("Source: {}", d.source),
                format!("Deliveries that ran out of retries: {changes}"),
            ],
            link: base.map(|b| format!("{b}/destinations/{}", d.destination)),
        },
    };
    if changes > 1 && matches!(facts, Facts::Problem(_)) {
        message.lines.push(format!(
            "This message stands for {changes} changes since the last one."
        ));
    }
    message
}

impl Message {
    /// The message as plain text: the title, the lines, the link.
    pub fn text(&self) -> String {
        let mut text = self.title.clone();
        for line in &self.lines {
            text.push('\n');
            text.push_str(line);
        }
        if let Some(link) = &self.link {
            text.push('\n');
            text.push_str(link);
        }
        text
    }
}

/// The JSON body an HTTP channel of `kind` is sent.
pub fn http_body(
    kind: ChannelKind,
    event: NotifyEvent,
    facts: &Facts,
    changes: i64,
    message: &Message,
) -> serde_json::Value {
    match kind {
        ChannelKind::Slack => json!({ "text": message.text() }),
        // Discord takes at most 2,000 characters.
        ChannelKind::Discord => {
            json!({ "content": message.text().chars().take(2000).collect::<String>() })
        }
        ChannelKind::Teams => teams_card(message),
        ChannelKind::Webhook | ChannelKind::Email => {
            let mut body = match facts {
                Facts::Problem(p) => json!({ "type": event.as_str(), "problem": p }),
                Facts::Dead(d) => json!({
                    "type": event.as_str(),
                    "destination": d.destination,
                    "source": d.source,
                    "dead": changes,
                    "answer": d.answer,
                }),
            };
            body["changes"] = json!(changes);
            body["url"] = json!(message.link);
            body
        }
    }
}

/// A Teams message with an Adaptive Card: the title, a line each, a button to the link.
fn teams_card(message: &Message) -> serde_json::Value {
    let mut body = vec![json!({
        "type": "TextBlock", "text": message.title, "weight": "Bolder", "size": "Medium", "wrap": true
    })];
    body.extend(
        message
            .lines
            .iter()
            .map(|line| json!({ "type": "TextBlock", "text": line, "wrap": true })),
    );
    let actions: Vec<serde_json::Value> = message
        .link
        .iter()
        .map(|url| json!({ "type": "Action.OpenUrl", "title": "Open in hookbox", "url": url }))
        .collect();
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": body,
                "actions": actions,
            }
        }]
    })
}

/// The `webhook-id` of a message: the same on every attempt.
pub fn message_id(send_id: i64) -> String {
    format!("ntf_{send_id}")
}

/// The Standard Webhooks headers signing `body` for a `webhook` channel (none for the others).
pub fn signed_headers(
    channel: &Channel,
    send_id: i64,
    body: &str,
) -> Vec<(http::HeaderName, String)> {
    match &channel.target {
        Target::Http { key: Some(key), .. } => Scheme::StandardWebhooks.sign(
            key,
            &message_id(send_id),
            body.as_bytes(),
            crate::clock::now().timestamp(),
        ),
        _ => Vec::new(),
    }
}
