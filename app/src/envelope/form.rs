//! Form-encoded bodies (`application/x-www-form-urlencoded`: Twilio, GitHub's default content
//! type, Slack's interactions): read as a JSON object of their fields, so identity pointers
//! (`/MessageSid`), search and display work on them as on JSON. The raw bytes stay what is
//! verified, archived and forwarded; this document is derived from them, the same way each time.
//!
//! - Each field is a string; a field sent more than once is an array of its values, in order.
//!   Fields keep the order of their first appearance.
//! - `+` is a space and `%XX` a byte; bytes that are not UTF-8 are read as U+FFFD.
//! - A body that is JSON is read as JSON, whatever its content type (curl sends `-d '{…}'` as a
//!   form).
//! - A form whose only field is `payload` holding a JSON object (GitHub's and Slack's way of
//!   sending JSON as a form) is read as that object.

use http::HeaderMap;

/// The media type of a form body.
pub const FORM_MEDIA_TYPE: &str = "application/x-www-form-urlencoded";

/// Whether the request says its body is a form (the media type, any parameters, any case).
pub fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(FORM_MEDIA_TYPE))
}

/// The JSON text a form body is read as, `None` when the request is not a form. A body that is
/// JSON stays JSON whatever its content type says: `curl -d '{…}'` sends JSON as a form.
pub fn form_document(headers: &HeaderMap, body: &[u8]) -> Option<String> {
    let is_json = || {
        std::str::from_utf8(body).ok().is_some_and(|text| {
            !matches!(
                crate::json::parse(text),
                Err(crate::json::JsonError::Syntax { .. })
            )
        })
    };
    (is_form(headers) && !is_json()).then(|| fields_json(body))
}

/// The fields of a form body as the text of a JSON object (see the module's rules).
pub fn fields_json(body: &[u8]) -> String {
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    for (name, value) in form_urlencoded::parse(body) {
        match fields.iter_mut().find(|(known, _)| *known == name) {
            Some((_, values)) => values.push(value.into_owned()),
            None => fields.push((name.into_owned(), vec![value.into_owned()])),
        }
    }
    if let [(name, values)] = fields.as_slice()
        && name == "payload"
        && let [payload] = values.as_slice()
        && payload.trim_start().starts_with('{')
        && crate::json::parse(payload).is_ok()
    {
        return payload.clone();
    }
    let mut out = String::with_capacity(body.len() + 2);
    out.push('{');
    for (i, (name, values)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        crate::json::write_string(&mut out, name);
        out.push(':');
        match values.as_slice() {
            [one] => crate::json::write_string(&mut out, one),
            many => {
                out.push('[');
                for (j, value) in many.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    crate::json::write_string(&mut out, value);
                }
                out.push(']');
            }
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form_headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            content_type.parse().expect("a header value"),
        );
        headers
    }

    #[test]
    fn a_form_is_an_object_of_its_fields_with_repeated_fields_as_arrays() {
        let body = b"Sid=CA123&Digits=5678&Body=Hello+world%21&Digits=1234&Empty=";
        assert_eq!(
            fields_json(body),
            r#"{"Sid":"CA123","Digits":["5678","1234"],"Body":"Hello world!","Empty":""}"#
        );
    }

    #[test]
    fn quotes_control_bytes_and_bad_utf8_are_read_safely() {
        let text = fields_json(b"a=%22%5C%0A&b=%FF");
        assert_eq!(text, "{\"a\":\"\\\"\\\\\\u000a\",\"b\":\"\u{fffd}\"}");
        assert!(crate::json::parse(&text).is_ok());
    }

    #[test]
    fn a_lone_payload_field_holding_json_is_read_as_that_json() {
        let body = b"payload=%7B%22zen%22%3A%22Keep+it%22%2C%22hook_id%22%3A1%7D";
        assert_eq!(fields_json(body), r#"{"zen":"Keep it","hook_id":1}"#);
        // Not JSON, or not alone: an ordinary field.
        assert_eq!(fields_json(b"payload=hello"), r#"{"payload":"hello"}"#);
        assert_eq!(
            fields_json(b"payload=%7B%7D&x=1"),
            r#"{"payload":"{}","x":"1"}"#
        );
    }

    #[test]
    fn only_a_form_media_type_is_read_as_a_form() {
        let form = "application/x-www-form-urlencoded; charset=utf-8";
        assert!(form_document(&form_headers(form), b"a=1").is_some());
        assert!(
            form_document(&form_headers("Application/X-WWW-Form-Urlencoded"), b"a=1").is_some()
        );
        assert!(form_document(&form_headers("application/json"), b"a=1").is_none());
        assert!(form_document(&HeaderMap::new(), b"a=1").is_none());
        // JSON sent with curl's default content type stays JSON.
        assert!(form_document(&form_headers(form), br#"{"event_id":"e1"}"#).is_none());
    }
}
