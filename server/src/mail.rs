//! Mail for the `email` notification channels, over SMTP with lettre: `smtp://` takes STARTTLS
//! when the server offers it (`?tls=required` insists), `smtps://` is TLS from the start; the
//! URL's user and password log in. Errors never show the URL (it may carry the password).

use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::time::Duration;

/// Sends a plain text mail with `subject` and `body` from `from` to each of `to`, within
/// `timeout` (the connection, the dialogue).
pub async fn send(
    smtp_url: &str,
    from: &str,
    to: &[String],
    (subject, body): (&str, &str),
    timeout: Duration,
) -> Result<(), String> {
    let transport = transport(smtp_url, timeout)?;
    let mut message = lettre::Message::builder()
        .from(mailbox(from)?)
        .subject(subject)
        .header(ContentType::TEXT_PLAIN);
    for address in to {
        message = message.to(mailbox(address)?);
    }
    let message = message
        .body(body.to_string())
        .map_err(|e| format!("the mail could not be built: {e}"))?;
    match tokio::time::timeout(timeout, transport.send(message)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) if e.is_permanent() => Err(format!(
            "the mail server refused the mail ({})",
            e.status().map_or("no code".into(), |code| code.to_string())
        )),
        Ok(Err(e)) if e.is_transient() => Err(format!(
            "the mail server asked to try later ({})",
            e.status().map_or("no code".into(), |code| code.to_string())
        )),
        Ok(Err(_)) => Err("the mail server could not be reached or spoken to".into()),
        Err(_) => Err(format!(
            "{} {} s",
            app::model::NO_ANSWER_WITHIN,
            timeout.as_secs()
        )),
    }
}

fn mailbox(address: &str) -> Result<Mailbox, String> {
    address
        .parse()
        .map_err(|_| format!("{address:?} is not a mail address"))
}

/// The transport an `smtp://` or `smtps://` URL names (checked by the configuration already).
fn transport(
    smtp_url: &str,
    timeout: Duration,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let url = url::Url::parse(smtp_url).map_err(|_| "the SMTP URL is not valid".to_string())?;
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or("the SMTP URL has no host")?
        .to_string();
    let tls_parameters =
        || TlsParameters::new(host.clone()).map_err(|_| "TLS could not be set up".to_string());
    let required = url
        .query_pairs()
        .any(|(key, value)| key == "tls" && value == "required");
    let (tls, default_port) = match url.scheme() {
        "smtps" => (Tls::Wrapper(tls_parameters()?), 465),
        _ if required => (Tls::Required(tls_parameters()?), 587),
        _ => (Tls::Opportunistic(tls_parameters()?), 587),
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(url.port().unwrap_or(default_port))
        .tls(tls)
        .timeout(Some(timeout));
    if !url.username().is_empty() {
        builder = builder.credentials(Credentials::new(
            percent_decode(url.username()),
            percent_decode(url.password().unwrap_or_default()),
        ));
    }
    Ok(builder.build())
}

/// A URL's percent-encoded user or password, decoded.
fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}
