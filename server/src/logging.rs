//! The process's log: text lines (or JSON with `HOOKBOX_LOG_FORMAT=json`) on standard error.
//!
//! Many field values come from requests (an event id, a source name, a user name typed at the
//! sign-in form, a filter of an export). In the text format every field value and message is
//! written with its control characters escaped (`\n`, `\r`, `\u{1b}`, …), so no value can end a
//! line and forge another, or drive a terminal. The JSON format escapes them by being JSON.

use std::fmt;
use tracing::field::Field;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::Writer;

/// Starts the log for this process; `RUST_LOG` filters it (default: info, sqlx and SeaORM warn).
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,sea_orm=warn"));
    use std::io::IsTerminal;
    // Colours only for a person at a terminal: a file or journald gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.fmt_fields(escaped_fields()).init();
    }
}

/// The text format's fields: `name=value`, space-separated, every value escaped.
pub fn escaped_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    tracing_subscriber::fmt::format::debug_fn(write_field).delimited(" ")
}

fn write_field(writer: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
    if field.name() != "message" {
        write!(writer, "{}=", field.name())?;
    }
    // A `%` field's Debug is its Display; a `?` field's Debug already quotes and escapes.
    // Written through the escaping writer: no copy of the value is made first.
    fmt::Write::write_fmt(&mut Escaping(writer), format_args!("{value:?}"))
}

/// A writer that escapes every control character of what is written through it.
struct Escaping<W>(W);

impl<W: fmt::Write> fmt::Write for Escaping<W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        write_escaped(&mut self.0, text)
    }
}

/// `text` with every control character escaped.
fn write_escaped(out: &mut impl fmt::Write, text: &str) -> fmt::Result {
    for c in text.chars() {
        match c {
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                write!(out, "\\u{{{:x}}}", u32::from(c))?
            }
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_value_with_line_breaks_and_escapes_stays_on_its_own_line() {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .fmt_fields(escaped_fields())
            .finish();
        let forged = "evt-1\n2026-12-02T00:00:00Z  INFO signed in user=admin\r\u{1b}[2J";
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(event_id = %forged, user = ?"olga\n", "forward attempt");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert!(text.ends_with('\n'));
        assert!(
            text.contains(
                r"forward attempt event_id=evt-1\n2026-12-02T00:00:00Z  INFO signed in user=admin\r\u{1b}[2J"
            ),
            "{text}"
        );
        assert!(text.contains(r#"user="olga\n""#), "{text}");
        assert!(!text.contains('\u{1b}'));
    }
}
