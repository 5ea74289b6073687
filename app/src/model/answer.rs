//! What a destination's answer means for forwarding: one rule, read by the forwarder (a refusal
//! is dead sooner) and by the dashboard (a bulk retry's breakdown by answer).

use serde::{Deserialize, Serialize};

/// A forward attempt's answer, by what it says about trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AnswerClass {
    /// A 4xx other than 408, 409, 425 and 429: the application refused the request itself, and
    /// the same request will most likely be refused again.
    Refused,
    /// 408, 409, 425 or 429: the application asked for it later.
    Later,
    /// A 5xx: the application failed.
    Failed,
    /// No answer (a refused connection, a timeout, a TLS error).
    NoAnswer,
    /// Any other status (a redirect, not followed; a 1xx or 2xx of a row still pending).
    Other,
}

impl AnswerClass {
    /// The class of an answer's status (`None`: no answer came).
    pub fn of(status: Option<u16>) -> AnswerClass {
        match status {
            None => AnswerClass::NoAnswer,
            Some(408 | 409 | 425 | 429) => AnswerClass::Later,
            Some(400..=499) => AnswerClass::Refused,
            Some(500..=599) => AnswerClass::Failed,
            Some(_) => AnswerClass::Other,
        }
    }

    /// Its name in the API (`refused`, `later`, `failed`, `no_answer`, `other`).
    pub fn name(self) -> &'static str {
        match self {
            AnswerClass::Refused => "refused",
            AnswerClass::Later => "later",
            AnswerClass::Failed => "failed",
            AnswerClass::NoAnswer => "no_answer",
            AnswerClass::Other => "other",
        }
    }

    /// In words, for the dashboard.
    pub fn words(self) -> &'static str {
        match self {
            AnswerClass::Refused => "refused (4xx: most likely refused again)",
            AnswerClass::Later => "asked for later (408, 409, 425, 429)",
            AnswerClass::Failed => "failed (5xx)",
            AnswerClass::NoAnswer => "no answer",
            AnswerClass::Other => "another status",
        }
    }
}

/// How many deliveries of a selection ended on each class of answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerCount {
    pub class: AnswerClass,
    pub count: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_4xx_is_a_refusal_unless_it_asks_for_later() {
        assert_eq!(AnswerClass::of(Some(422)), AnswerClass::Refused);
        assert_eq!(AnswerClass::of(Some(400)), AnswerClass::Refused);
        for later in [408, 409, 425, 429] {
            assert_eq!(AnswerClass::of(Some(later)), AnswerClass::Later);
        }
        assert_eq!(AnswerClass::of(Some(503)), AnswerClass::Failed);
        assert_eq!(AnswerClass::of(None), AnswerClass::NoAnswer);
        assert_eq!(AnswerClass::of(Some(302)), AnswerClass::Other);
    }
}
