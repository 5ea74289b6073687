//! Notifications (contract section 14): telling people when a problem opens, reopens or is
//! resolved, or a forward delivery dies, through the channels of `[[notifications]]`.
//!
//! - `db::problems::marks`: whether a cause changed, decided under its `problems` row's lock,
//!   the change recorded (`db::notifications`) with the transaction that made it (one message
//!   per change whatever the processes); [`sweep`]: what a crash or a purge left undecided.
//! - [`outbox`]: the changes handed to each channel, claimed a subject at a time, folded within
//!   a channel's `min_interval_secs`, settled by the channel's answer, retried for 24 hours.
//! - [`message`]: the words and the shape of each kind's message.
//!
//! The sending itself (HTTP, SMTP) is the server's (`server::notifier`).

pub mod message;
pub mod outbox;
mod sweep;

pub use sweep::sweep;
