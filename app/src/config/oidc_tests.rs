//! `[auth.oidc]`: read with its defaults, and every wrong key named.
use super::tests::{parse, problem};

const SECRET: &[(&str, &str)] = &[("OIDC_SECRET", "s3cret")];

fn file(oidc: &str) -> String {
    format!("[server]\npublic_url = \"https://hooks.example.com\"\n\n[auth.oidc]\n{oidc}\n")
}

const MINIMAL: &str = r#"issuer = "https://login.example.com"
client_id = "hookbox"
client_secret_env = "OIDC_SECRET"
operator_values = ["hookbox-operators"]"#;

#[test]
fn a_minimal_provider_gets_the_defaults() {
    let config = parse(&file(MINIMAL), SECRET).expect("valid");
    let oidc = config.oidc.expect("single sign-on");
    assert_eq!(oidc.issuer, "https://login.example.com");
    assert_eq!(oidc.scopes, ["openid", "profile", "email"]);
    assert_eq!(oidc.role_claim, "groups");
    assert!(oidc.password_login);
    assert!(oidc.break_glass.is_empty());
    assert_eq!(oidc.client_secret.expose(), "s3cret");
    assert!(
        !format!("{oidc:?}").contains("s3cret"),
        "the secret never prints"
    );
    assert_eq!(
        oidc.discovery_url(),
        "https://login.example.com/.well-known/openid-configuration"
    );
    assert_eq!(
        oidc.role_of(["staff", "hookbox-operators"]),
        Some(crate::model::Role::Operator)
    );
    assert_eq!(oidc.role_of(["staff"]), None);
}

#[test]
fn each_wrong_key_is_named() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"issuer = "http://login.example.com""#,
            "auth.oidc.issuer",
            "only for a provider on loopback",
        ),
        (
            r#"issuer = "not a url""#,
            "auth.oidc.issuer",
            "is not a URL",
        ),
        (
            r#"client_secret_env = "NOT_SET""#,
            "auth.oidc.client_secret_env",
            "NOT_SET is unset",
        ),
        (
            r#"scopes = ["profile"]"#,
            "auth.oidc.scopes",
            "must include \"openid\"",
        ),
        (
            r#"break_glass = ["a name with spaces"]"#,
            "auth.oidc.break_glass",
            "is not a user name",
        ),
        (
            r#"password_login = "no""#,
            "auth.oidc.password_login",
            "true or false",
        ),
        (r#"tenant = "x""#, "auth.oidc.tenant", "unknown key"),
    ];
    for (line, key, says) in cases {
        // The line replaces the minimal file's line of the same key, or is added.
        let name = line.split(' ').next().expect("a key");
        let mut lines: Vec<String> = MINIMAL
            .lines()
            .filter(|l| !l.starts_with(&format!("{name} ")))
            .map(str::to_string)
            .collect();
        lines.push(line.to_string());
        let found = problem(&file(&lines.join("\n")), SECRET);
        assert_eq!(found.key.as_deref(), Some(*key), "{line}: {found:?}");
        assert!(found.message.contains(says), "{line}: {}", found.message);
    }
    let no_role = MINIMAL.replace(r#"operator_values = ["hookbox-operators"]"#, "");
    let found = problem(&file(&no_role), SECRET);
    assert_eq!(found.key.as_deref(), Some("auth.oidc.operator_values"));
    let no_public_url = format!("[auth.oidc]\n{MINIMAL}\n");
    let found = problem(&no_public_url, SECRET);
    assert!(found.message.contains("public_url"), "{}", found.message);
    // A loopback provider may speak http (the tests' and a laptop's).
    let loopback = MINIMAL.replace("https://login.example.com", "http://127.0.0.1:9000");
    assert!(
        parse(&file(&loopback), SECRET)
            .expect("valid")
            .oidc
            .is_some()
    );
}
