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
//! - At most [`MAX_FORM_FIELDS`] fields are read, in one pass over the body (each name looked up
//!   in a hash map): a form with more is kept as its raw bytes only ([`FormRead::TooManyFields`]),
//!   and its envelope cannot be read from fields.
//!
//! A delivery's form is read once, when it arrives: the fields are archived beside the body
//! (`body_fields`) and every reader after that (the event page, replay, search, the feed) takes
//! them from there.

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

/// The most fields a form is read as; a form with more keeps its raw bytes only.
pub const MAX_FORM_FIELDS: usize = 1000;

/// What a delivery's body is read as, when its request says it is a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormRead {
    /// Not a form: the body is read as it is (JSON, or raw bytes).
    NotForm,
    /// A form, read as the JSON object of its fields.
    Fields(String),
    /// A form of more than [`MAX_FORM_FIELDS`] fields: not read as fields.
    TooManyFields,
}

impl FormRead {
    /// How the body of a request with `headers` is read (see the module's rules). Linear in the
    /// body's length: a large body is read off the async workers by its caller.
    pub fn of(headers: &HeaderMap, body: &[u8]) -> FormRead {
        let is_json = || {
            std::str::from_utf8(body).ok().is_some_and(|text| {
                !matches!(
                    crate::json::parse(text),
                    Err(crate::json::JsonError::Syntax { .. })
                )
            })
        };
        if !is_form(headers) || is_json() {
            return FormRead::NotForm;
        }
        match fields_json(body) {
            Some(fields) => FormRead::Fields(fields),
            None => FormRead::TooManyFields,
        }
    }

    /// The fields' JSON text, when the body was read as fields.
    pub fn fields(&self) -> Option<&str> {
        match self {
            FormRead::Fields(fields) => Some(fields),
            _ => None,
        }
    }

    /// The fields' JSON text, owned.
    pub fn into_fields(self) -> Option<String> {
        match self {
            FormRead::Fields(fields) => Some(fields),
            _ => None,
        }
    }
}

/// The JSON text a form body is read as, `None` when the request is not a form (or a form of
/// too many fields). A body that is JSON stays JSON whatever its content type says:
/// `curl -d '{…}'` sends JSON as a form.
pub fn form_document(headers: &HeaderMap, body: &[u8]) -> Option<String> {
    FormRead::of(headers, body).into_fields()
}

/// The fields of a form body as the text of a JSON object (see the module's rules); `None`
/// past [`MAX_FORM_FIELDS`] fields. One pass: each name is looked up in a hash map.
pub fn fields_json(body: &[u8]) -> Option<String> {
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (name, value) in form_urlencoded::parse(body) {
        match index.get(name.as_ref()) {
            Some(&at) => fields[at].1.push(value.into_owned()),
            None => {
                if fields.len() == MAX_FORM_FIELDS {
                    return None;
                }
                let name = name.into_owned();
                index.insert(name.clone(), fields.len());
                fields.push((name, vec![value.into_owned()]));
            }
        }
    }
    if let [(name, values)] = fields.as_slice()
        && name == "payload"
        && let [payload] = values.as_slice()
        && payload.trim_start().starts_with('{')
        && crate::json::parse(payload).is_ok()
    {
        return Some(payload.clone());
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
    Some(out)
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
            fields_json(body).as_deref(),
            Some(r#"{"Sid":"CA123","Digits":["5678","1234"],"Body":"Hello world!","Empty":""}"#)
        );
    }

    #[test]
    fn quotes_control_bytes_and_bad_utf8_are_read_safely() {
        let text = fields_json(b"a=%22%5C%0A&b=%FF").expect("two fields");
        assert_eq!(text, "{\"a\":\"\\\"\\\\\\u000a\",\"b\":\"\u{fffd}\"}");
        assert!(crate::json::parse(&text).is_ok());
    }

    #[test]
    fn a_lone_payload_field_holding_json_is_read_as_that_json() {
        let body = b"payload=%7B%22zen%22%3A%22Keep+it%22%2C%22hook_id%22%3A1%7D";
        assert_eq!(
            fields_json(body).as_deref(),
            Some(r#"{"zen":"Keep it","hook_id":1}"#)
        );
        // Not JSON, or not alone: an ordinary field.
        assert_eq!(
            fields_json(b"payload=hello").as_deref(),
            Some(r#"{"payload":"hello"}"#)
        );
        assert_eq!(
            fields_json(b"payload=%7B%7D&x=1").as_deref(),
            Some(r#"{"payload":"{}","x":"1"}"#)
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

    #[test]
    fn a_form_past_the_field_cap_is_not_read_as_fields() {
        let form = form_headers(FORM_MEDIA_TYPE);
        let at_cap: String = (0..MAX_FORM_FIELDS)
            .map(|i| format!("f{i}=v"))
            .collect::<Vec<_>>()
            .join("&");
        assert!(matches!(
            FormRead::of(&form, at_cap.as_bytes()),
            FormRead::Fields(_)
        ));
        // Repeats of known names do not count against the cap.
        let repeated = format!("{at_cap}&f0=again&f1=again");
        assert!(matches!(
            FormRead::of(&form, repeated.as_bytes()),
            FormRead::Fields(_)
        ));
        let past = format!("{at_cap}&one=more");
        assert_eq!(
            FormRead::of(&form, past.as_bytes()),
            FormRead::TooManyFields
        );
    }

    #[test]
    fn a_large_form_is_read_whole_or_refused_whole() {
        // 1 MiB of distinct fields (the quadratic lookup spent seconds on each): past the cap.
        let form = form_headers(FORM_MEDIA_TYPE);
        let body: String = (0..100_000)
            .map(|i| format!("n{i}=v"))
            .collect::<Vec<_>>()
            .join("&");
        assert_eq!(
            FormRead::of(&form, body.as_bytes()),
            FormRead::TooManyFields
        );
        // Many values of few names are read in full.
        let repeated: String = (0..100_000)
            .map(|i| format!("n{}={i}", i % 10))
            .collect::<Vec<_>>()
            .join("&");
        let FormRead::Fields(fields) = FormRead::of(&form, repeated.as_bytes()) else {
            panic!("ten names are read as fields");
        };
        let value: serde_json::Value = serde_json::from_str(&fields).expect("JSON");
        assert_eq!(value["n3"].as_array().map(Vec::len), Some(10_000));
        assert_eq!(value["n3"][1], "13");
    }
}
