//! What the archive keeps of a delivery's headers (`app::headers` classifies them), bounded
//! whatever arrives, written as a JSON object's text.

use axum::http::HeaderMap;

/// The archive's bounds on headers (`app::headers` classifies them): a kept (safe or signature)
/// value is cut to [`ARCHIVED_VALUE_BYTES`]; a redacted header keeps its name cut to
/// [`ARCHIVED_NAME_BYTES`] and its size, for at most [`ARCHIVED_REDACTED_KEPT`] names (the rest
/// are counted under `…`).
pub const ARCHIVED_VALUE_BYTES: usize = 4096;
pub const ARCHIVED_NAME_BYTES: usize = 64;
pub const ARCHIVED_REDACTED_KEPT: usize = 64;

/// The request headers as a JSON object for the archive, names in byte order, as a JSON object
/// of them would print; written straight into the text, without a JSON value in between.
pub(super) fn archived_headers(headers: &HeaderMap, source: &app::config::Source) -> String {
    let entries = archived_entries(headers, source);
    app::headers::headers_json(entries.iter().map(|(n, v)| (n.as_str(), v.as_str())))
}

/// What the archive keeps of each header, in byte order of the names: safe and signature headers
/// as received (repeated ones joined with ", " as HTTP allows), values cut to
/// [`ARCHIVED_VALUE_BYTES`]; any other header `[redacted, N bytes]`, its name cut to
/// [`ARCHIVED_NAME_BYTES`], at most [`ARCHIVED_REDACTED_KEPT`] of them.
pub(super) fn archived_entries(
    headers: &HeaderMap,
    source: &app::config::Source,
) -> Vec<(String, String)> {
    use app::headers::{HeaderClass, classify, cut, redacted};
    use std::collections::BTreeMap;
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    let mut hidden: BTreeMap<String, usize> = BTreeMap::new();
    let (mut more, mut more_bytes) = (0usize, 0usize);
    for name in headers.keys() {
        let values = headers.get_all(name);
        match classify(name.as_str(), Some(source)) {
            HeaderClass::Safe | HeaderClass::Signature => {
                let mut values = values.iter();
                let joined = match (values.next(), values.next()) {
                    (Some(only), None) => String::from_utf8_lossy(only.as_bytes()).into_owned(),
                    _ => headers
                        .get_all(name)
                        .iter()
                        .map(|v| String::from_utf8_lossy(v.as_bytes()))
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                let value = if joined.len() > ARCHIVED_VALUE_BYTES {
                    cut(&joined, ARCHIVED_VALUE_BYTES)
                } else {
                    joined
                };
                kept.insert(name.as_str().to_string(), value);
            }
            HeaderClass::Secret => {
                let bytes: usize = values.iter().map(|v| v.len()).sum();
                // A cut name ends in `…`, which no header name holds: it meets only names cut
                // alike, and their sizes add up.
                let shown = cut(name.as_str(), ARCHIVED_NAME_BYTES);
                if hidden.contains_key(&shown) || hidden.len() < ARCHIVED_REDACTED_KEPT {
                    *hidden.entry(shown).or_default() += bytes;
                } else {
                    more += 1;
                    more_bytes += name.as_str().len() + bytes;
                }
            }
        }
    }
    kept.extend(
        hidden
            .into_iter()
            .map(|(name, bytes)| (name, redacted(bytes))),
    );
    if more > 0 {
        kept.insert(
            "…".into(),
            format!("{more} more headers ({more_bytes} bytes) not kept"),
        );
    }
    kept.into_iter().collect()
}
