//! The flood's hookbox: its sources (one per kind of signature the flood forges), and a route
//! evaluated on every paced delivery.

pub(super) const CONFIG: &str = r#"
[server]
public_url = "https://hooks.example.com"

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]

[[sources]]
name = "lemon"
preset = "lemonsqueezy"
secrets_env = ["SHOP_SECRET"]

[[sources]]
name = "twilio"
preset = "twilio"
secrets_env = ["SHOP_SECRET"]

[[sources]]
name = "github"
preset = "github"
secrets_env = ["SHOP_SECRET"]

[[sources]]
name = "mailgun"
preset = "mailgun"
secrets_env = ["SHOP_SECRET"]

[[sources]]
name = "stdwh"
scheme = "standard-webhooks"
public_keys_env = ["STDWH_PUBLIC_KEY"]

[[sources]]
name = "asana"
preset = "asana"

# A route evaluated on every paced delivery (it reads each body and matches none), and previewed
# by the flooding viewer on /sources and through the API.
[[destinations]]
name = "billing"
url = "http://127.0.0.1:9/billing"
secret_env = "DESTINATION_SECRET"

[[routes]]
name = "never"
source = "shop"
destination = "billing"
event_types = ["*"]
match = { snapshot = { status = "never" } }
"#;
