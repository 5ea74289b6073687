//! `hookbox send SOURCE [FILE]`: sign a body as the source's sender would and post it to a
//! running hookbox. The way to check a setup end to end.

use anyhow::{Context, bail};
use app::config::{Config, Source};
use app::envelope::FieldRef;
use app::schemes::Scheme;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use std::io::Read;

pub struct SendArgs {
    pub source: String,
    pub file: Option<std::path::PathBuf>,
    /// Base URL of the running hookbox.
    pub url: String,
    /// `--header NAME:VALUE`, in order; they replace generated headers of the same name.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Reads `NAME:VALUE` (white space around the value ignored), as `--header` takes it.
pub fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?} is not NAME:VALUE"))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{:?} is not a header name", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("the value of {name} is not a valid header value"))?;
    Ok((name, value))
}

/// Posts the signed body and prints the answer; an answer other than 2xx is an error.
pub async fn run(args: SendArgs) -> anyhow::Result<()> {
    let config = Config::load_from_env()?;
    let source = config.source(&args.source).with_context(|| {
        let file = config
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "no config file".into());
        format!("source {:?} is not declared ({file})", args.source)
    })?;
    let body = match &args.file {
        Some(path) => std::fs::read(path).with_context(|| format!("read {}", path.display()))?,
        None => {
            let mut body = Vec::new();
            std::io::stdin()
                .read_to_end(&mut body)
                .context("read the body from standard input")?;
            body
        }
    };
    let endpoint = format!("{}/hooks/{}", args.url.trim_end_matches('/'), source.name);
    // The URL the real sender signs: the configured public origin's, else the one posted to.
    let signed_url = match &config.server.public_url {
        Some(origin) => format!("{origin}/hooks/{}", source.name),
        None => endpoint.clone(),
    };
    // A source that takes its token from the query only is sent it there (and an error names
    // the URL without it).
    let posted = match source
        .keys
        .first()
        .and_then(|key| source.auth().query_token(key))
    {
        Some(query) => format!("{endpoint}?{query}"),
        None => endpoint.clone(),
    };
    let headers = delivery_headers(
        source,
        &body,
        &args.headers,
        Some(&signed_url),
        chrono::Utc::now().timestamp(),
    );

    let response = reqwest::Client::new()
        .post(&posted)
        .headers(headers)
        .body(body)
        .send()
        .await
        .map_err(reqwest::Error::without_url)
        .with_context(|| format!("post to {endpoint}"))?;
    let status = response.status();
    let text = response.text().await.context("read the answer")?;
    println!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    println!("{text}");
    if !status.is_success() {
        bail!("hookbox answered {status}");
    }
    Ok(())
}

/// The headers the source's real sender would send with `body` at `now`: the scheme's signature
/// (with the source's first secret), and the delivery-id header when the source reads its event id
/// from a header (`X-GitHub-Delivery`, `X-Shopify-Event-Id`, …), generated unless `extra` gives
/// it. `extra` headers replace generated ones of the same name.
///
/// A given event-id header is also the Standard Webhooks `webhook-id` that is signed, so
/// `--header svix-id:msg_1` sends a signature that verifies and an event id of `msg_1`.
pub fn delivery_headers(
    source: &Source,
    body: &[u8],
    extra: &[(HeaderName, HeaderValue)],
    url: Option<&str>,
    now: i64,
) -> HeaderMap {
    let event_id_headers: Vec<&HeaderName> = source
        .mapping
        .event_id
        .places()
        .iter()
        .filter_map(|place| match place {
            FieldRef::Header(name) => Some(name),
            FieldRef::Pointer(_) | FieldRef::BodyDigest => None,
        })
        .collect();
    let names_the_id = |name: &HeaderName| {
        event_id_headers.contains(&name)
            || (source.scheme == Scheme::StandardWebhooks
                && matches!(name.as_str(), "webhook-id" | "svix-id"))
    };
    let msg_id = extra
        .iter()
        .find(|(name, _)| names_the_id(name))
        .and_then(|(_, value)| value.to_str().ok())
        .map_or_else(
            || format!("msg_{:032x}", rand::random::<u128>()),
            str::to_string,
        );

    let mut headers = HeaderMap::new();
    if !extra.iter().any(|(name, _)| *name == CONTENT_TYPE) {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    for (name, value) in extra {
        headers.append(name.clone(), value.clone());
    }
    let has_event_id = event_id_headers
        .iter()
        .any(|name| headers.contains_key(*name));
    if let (Some(first), false) = (event_id_headers.first(), has_event_id)
        && let Ok(value) = HeaderValue::from_str(&msg_id)
    {
        headers.insert((*first).clone(), value);
    }
    // Signed last, over the headers sent (a recipe may sign one of them); a header `extra`
    // gives is sent as given.
    if let Some(key) = source.keys.first() {
        let request = app::schemes::Request {
            method: "POST",
            query: None,
            url,
            headers: &headers,
            body,
        };
        let signed = source.auth().sign(key, &msg_id, &request, now);
        for (name, value) in signed {
            if extra.iter().any(|(given, _)| *given == name) {
                continue;
            }
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_name_colon_value() {
        let (name, value) = parse_header("X-GitHub-Event: push").expect("valid");
        assert_eq!(
            (name.as_str(), value.to_str().ok()),
            ("x-github-event", Some("push"))
        );
        let (name, value) = parse_header("X-Url:https://a.example/b").expect("valid");
        assert_eq!(
            (name.as_str(), value.to_str().ok()),
            ("x-url", Some("https://a.example/b"))
        );
        assert!(parse_header("no-colon").is_err());
        assert!(parse_header("bad name: v").is_err());
        assert!(parse_header("X-A: line\nbreak").is_err());
    }
}
