//! Sign-in's unit tests: password hashing, the throttle's delay and client, `Retry-After`, the cookie.

use super::passwords::{DUMMY_HASH, verify_password};
use super::*;

#[test]
fn passwords_hash_with_argon2id_and_verify() {
    let hash = hash_password("correct horse").expect("hash");
    assert!(hash.starts_with("$argon2id$"));
    assert!(verify_password("correct horse", &hash));
    assert!(!verify_password("wrong horse", &hash));
    assert!(!verify_password("anything", DUMMY_HASH));
}

#[test]
fn the_delay_doubles_from_the_limit_up_to_its_cap() {
    let secs = |failures| throttle_delay(failures, 5).map(|d| d.as_secs());
    assert_eq!(secs(0), None);
    assert_eq!(secs(4), None);
    assert_eq!(secs(5), Some(2));
    assert_eq!(secs(6), Some(4));
    assert_eq!(secs(7), Some(8));
    assert_eq!(secs(13), Some(512));
    assert_eq!(secs(14), Some(MAX_DELAY.as_secs()));
    assert_eq!(secs(i64::MAX), Some(MAX_DELAY.as_secs()));
}

#[test]
fn the_client_counted_is_the_address_or_its_ipv6_64() {
    assert_eq!(client_key("203.0.113.7"), "203.0.113.7");
    assert_eq!(client_key("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
    assert_eq!(client_key("2001:db8:1:2::9"), "2001:db8:1:2::/64");
    assert_eq!(client_key("::ffff:198.51.100.1"), "198.51.100.1");
    assert_eq!(client_key("unknown"), "unknown");
}

#[test]
fn retry_after_is_whole_seconds_rounded_up() {
    use std::time::Duration as D;
    assert_eq!(retry_after_secs(D::ZERO), 1);
    assert_eq!(retry_after_secs(D::from_millis(1)), 1);
    assert_eq!(retry_after_secs(D::from_millis(2001)), 3);
    assert_eq!(wait_text(D::from_secs(2)), "2 seconds");
    assert_eq!(wait_text(D::from_secs(61)), "2 minutes");
    assert_eq!(wait_text(MAX_DELAY), "15 minutes");
}

#[test]
fn the_session_token_is_read_from_the_cookie_header() {
    assert_eq!(session_token("a=1; hookbox_session=abc; b=2"), Some("abc"));
    assert_eq!(session_token("hookbox_session="), None);
    assert_eq!(session_token("other=1"), None);
}
