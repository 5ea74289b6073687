//! The schemes that read settings of their source, through [`Auth`]: tokens and Basic
//! credentials, and public-key signatures (Standard Webhooks `v1a`, Discord, SendGrid), each
//! against its provider's vectors; a public key that does not decode is refused saying why.
#![allow(clippy::unwrap_used)]

use super::super::public_key::parse_public_key;
use super::super::testkit::run_auth_vectors;
use super::*;
use http::HeaderMap;

/// Runs `file`'s vectors through `auth` (hookbox's tolerance, 300 s).
fn run(auth: Auth<'_>, file: &str) -> usize {
    run_auth_vectors(auth, file, 300)
}

fn auth(scheme: Scheme) -> Auth<'static> {
    Auth {
        scheme,
        recipe: None,
        token_header: None,
        token_query: None,
        public_keys: &[],
    }
}

#[test]
fn public_key_signatures_pass_their_vectors() {
    assert_eq!(
        run(auth(Scheme::StandardWebhooks), "standard-webhooks-v1a.json"),
        14
    );
    assert_eq!(run(auth(Scheme::Discord), "discord.json"), 9);
    assert_eq!(run(auth(Scheme::Sendgrid), "sendgrid.json"), 13);
    // Today's Standard Webhooks vectors still pass with public keys beside the secrets.
    assert!(run(auth(Scheme::StandardWebhooks), "standard-webhooks.json") >= 20);
}

#[test]
fn twilio_mailgun_and_githubs_form_pass_their_vectors() {
    // twilio-python's own test vectors (the first nine) and hookbox's, all confirmed by it.
    assert_eq!(run(auth(Scheme::Twilio), "twilio.json"), 17);
    assert_eq!(run(auth(Scheme::Mailgun), "mailgun.json"), 9);
    assert_eq!(run(auth(Scheme::Github), "github-form.json"), 4);
}

#[test]
fn a_public_key_that_does_not_decode_is_refused_saying_why() {
    let short = parse_public_key(
        Scheme::StandardWebhooks,
        "whpk_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==",
    )
    .unwrap_err();
    assert_eq!(short, "decodes to 31 bytes, not the 32 of an Ed25519 key");
    assert_eq!(
        parse_public_key(Scheme::StandardWebhooks, "whsec_AAAA").unwrap_err(),
        "is not whpk_ followed by base64"
    );
    assert_eq!(
        parse_public_key(Scheme::Discord, "zz").unwrap_err(),
        "is not hex"
    );
    assert_eq!(
        parse_public_key(Scheme::Sendgrid, "bm90IGEga2V5").unwrap_err(),
        "is not a P-256 public key"
    );
    assert_eq!(
        parse_public_key(Scheme::Stripe, "whpk_AAAA").unwrap_err(),
        "scheme stripe takes no public keys"
    );
}

#[test]
fn tokens_and_basic_credentials_pass_their_vectors() {
    let token = Auth {
        token_header: Some("x-gitlab-token"),
        token_query: None,
        ..auth(Scheme::Token)
    };
    assert_eq!(run(token, "gitlab.json"), 7);
    let basic = auth(Scheme::Basic);
    assert_eq!(run(basic, "postmark.json"), 9);
    assert_eq!(
        basic.parse_secret("no-colon").unwrap_err(),
        "secret is not user:password"
    );
    // What `hookbox send` sends verifies.
    let key = basic.parse_secret("user:pass").unwrap();
    let unsigned = HeaderMap::new();
    let request = Request {
        method: "POST",
        query: None,
        url: None,
        headers: &unsigned,
        body: b"{}",
    };
    let mut headers = HeaderMap::new();
    for (name, value) in basic.sign(&key, "", &request, 0) {
        headers.insert(name, value.parse().unwrap());
    }
    let signed = Request {
        headers: &headers,
        ..request
    };
    assert_eq!(
        basic.verify(&signed, std::slice::from_ref(&key), 300, 0),
        Ok(())
    );
    assert_eq!(
        basic.verify(&request, std::slice::from_ref(&key), 300, 0),
        Err(AuthError::MissingHeader("authorization".into()))
    );
}

#[test]
fn a_header_with_more_v1a_signatures_than_a_rotation_needs_is_refused_unchecked() {
    let key = parse_public_key(
        Scheme::StandardWebhooks,
        "whpk_Wt+q6hwenv+i22xieiDnqkg+I5QIzC3v45i9fjjGJFs=",
    )
    .unwrap();
    let auth = Auth {
        public_keys: std::slice::from_ref(&key),
        ..auth(Scheme::StandardWebhooks)
    };
    let entry = format!("v1a,{}", "A".repeat(86) + "==");
    let verify = |entries: usize| {
        let mut headers = HeaderMap::new();
        headers.insert("webhook-id", "msg_1".parse().unwrap());
        headers.insert("webhook-timestamp", "1700000000".parse().unwrap());
        headers.insert(
            "webhook-signature",
            vec![entry.as_str(); entries].join(" ").parse().unwrap(),
        );
        let request = Request {
            method: "POST",
            query: None,
            url: None,
            headers: &headers,
            body: b"{}",
        };
        auth.verify(&request, &[], 300, 1_700_000_000)
    };
    assert!(matches!(
        verify(8),
        Err(AuthError::NoMatchingSignature { signatures: 8, .. })
    ));
    assert_eq!(
        verify(9),
        Err(AuthError::Malformed(
            "more than 8 v1a signatures in webhook-signature"
        ))
    );
}
