//! `hookbox send SOURCE [FILE]`: sign a body as the source's sender would and post it to a
//! running hookbox. The way to check a setup end to end.

use anyhow::{Context, bail};
use app::config::Config;
use std::io::Read;

pub struct SendArgs {
    pub source: String,
    pub file: Option<std::path::PathBuf>,
    /// Base URL of the running hookbox.
    pub url: String,
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
    let now = chrono::Utc::now().timestamp();
    let msg_id = format!("msg_{:032x}", rand::random::<u128>());
    let signed = match source.keys.first() {
        Some(key) => source.scheme.sign(key, &msg_id, &body, now),
        None => Vec::new(),
    };

    let endpoint = format!("{}/hooks/{}", args.url.trim_end_matches('/'), source.name);
    let mut request = reqwest::Client::new()
        .post(&endpoint)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    for (name, value) in signed {
        request = request.header(name.as_str(), value);
    }
    let response = request
        .send()
        .await
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
