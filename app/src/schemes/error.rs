//! Why a request failed authentication: [`AuthError`], whose fixed texts are safe to log and
//! to count.

use std::borrow::Cow;
use std::fmt;

/// Why a request failed authentication. The messages are fixed strings: they never carry
/// secret material or request content, so they are safe to log and to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// A header the scheme needs is absent (its lower-case name: a scheme's own, or a
    /// recipe's from the configuration).
    MissingHeader(Cow<'static, str>),
    /// The query parameter a source takes its token from is absent (its name).
    MissingQuery(Cow<'static, str>),
    /// A header is present but cannot be parsed (what is wrong with it).
    Malformed(&'static str),
    /// What a scheme reads from the body (Mailgun's signature object, Linear's timestamp) is
    /// missing or unreadable (what is wrong).
    MalformedBody(&'static str),
    /// The signed timestamp is too far from now, in either direction: `age_secs` is now minus
    /// the timestamp (negative: from the future), saturated at the bounds of `i64`.
    TimestampOutOfTolerance { age_secs: i64, tolerance_secs: u64 },
    /// The headers parse, but none of their `signatures` matches any of the `secrets`
    /// configured (counts only, saturated at `u16::MAX`).
    NoMatchingSignature { signatures: u16, secrets: u16 },
    /// A shared secret sent as it is (a token, Basic credentials) matches none of the `secrets`.
    NoMatchingCredential { secrets: u16 },
    /// The body is not the one whose hash the signed URL carries (Twilio's `bodySHA256`).
    BodyHashMismatch,
    /// A signed form has more fields than the scheme checks (the most it checks): sorting them
    /// would cost more than any sender's form needs.
    TooManySignedFields { most: usize },
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::MissingHeader(name) => write!(f, "missing header {name}"),
            AuthError::MissingQuery(name) => write!(f, "missing query parameter {name}"),
            AuthError::Malformed(why) => write!(f, "malformed signature header: {why}"),
            AuthError::MalformedBody(why) => write!(f, "unreadable signed body: {why}"),
            AuthError::TimestampOutOfTolerance {
                age_secs,
                tolerance_secs,
            } => {
                let side = if *age_secs >= 0 { "older" } else { "newer" };
                let beyond = age_secs.unsigned_abs().saturating_sub(*tolerance_secs);
                write!(
                    f,
                    "timestamp {beyond} s {side} than the tolerance of {tolerance_secs} s allows"
                )
            }
            AuthError::TooManySignedFields { most } => write!(
                f,
                "the signed form has more than {most} fields, the most hookbox checks"
            ),
            AuthError::BodyHashMismatch => {
                f.write_str("the body's SHA-256 is not the one the signed URL carries")
            }
            AuthError::NoMatchingCredential { secrets } => write!(
                f,
                "the credential matches none of {secrets} secret{}",
                if *secrets == 1 { "" } else { "s" }
            ),
            AuthError::NoMatchingSignature {
                signatures,
                secrets,
            } => {
                let plural =
                    |n: u16, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
                if *signatures == 1 {
                    write!(
                        f,
                        "the signature matches none of {}",
                        plural(*secrets, "secret")
                    )
                } else {
                    write!(
                        f,
                        "none of {} matches any of {}",
                        plural(*signatures, "signature"),
                        plural(*secrets, "secret")
                    )
                }
            }
        }
    }
}

impl std::error::Error for AuthError {}
