//! The vocabulary of notifications (contract section 14): what a channel is, what it is told.

use serde::{Deserialize, Serialize};

super::vocabulary! {
    /// What tells a channel something: a problem's change, or a forward delivery that died.
    NotifyEvent {
        /// A cause gets its first open failure.
        Opened = "problem.opened",
        /// A cause that was resolved, or had no open failure left, fails again.
        Reopened = "problem.reopened",
        /// A cause's open failures reach 0 (replays resolved them, or an operator resolved it).
        Resolved = "problem.resolved",
        /// A forward delivery became dead.
        DestinationDead = "destination.dead",
    }
}

super::vocabulary! {
    /// How a channel is reached (`[[notifications]] kind`).
    ChannelKind {
        /// A Slack incoming webhook: `{"text": …}`.
        Slack = "slack",
        /// A Microsoft Teams workflow webhook: a message with an Adaptive Card.
        Teams = "teams",
        /// A Discord webhook: `{"content": …}`.
        Discord = "discord",
        /// Any HTTP endpoint: JSON signed as forwarding signs (Standard Webhooks).
        Webhook = "webhook",
        /// Mail over SMTP.
        Email = "email",
    }
}

super::vocabulary! {
    /// Where a notification stands (`notifications.status`).
    NotificationStatus {
        /// To send (or sending, under a lease).
        Pending = "pending",
        /// The channel took it (2xx, or the mail server's acceptance).
        Sent = "sent",
        /// Said by a later message of the same problem, which counts it.
        Folded = "folded",
        /// The channel did not take it for 24 hours.
        Failed = "failed",
    }
}

/// A notification channel whose messages wait and whose last attempt failed (the overview).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingChannel {
    pub name: String,
    /// Messages waiting for it.
    pub waiting: i64,
    /// When the oldest of them was recorded (RFC 3339).
    pub since: String,
    /// What the channel answered last ("answered 404", "no answer within 15 s").
    pub last_error: Option<String>,
}
