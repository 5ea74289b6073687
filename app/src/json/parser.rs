//! The reader: one pass over the text, every value with its span, refusing what is not JSON
//! (a syntax error) and what `jsonb` cannot store (unsupported) unless reading tolerantly.

use super::number::{MAX_FRACTION_DIGITS, MAX_INTEGER_DIGITS, decimal, display_scale};
use super::{JsonError, MAX_DEPTH, Node, Value};

pub(super) fn parse_with(text: &str, tolerant: bool) -> Result<Node<'_>, JsonError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        tolerant,
    };
    parser.skip_ws();
    let node = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.syntax("unexpected characters after the JSON value"));
    }
    Ok(node)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// [`parse_tolerant`](super::parse_tolerant): what `jsonb` cannot store is read anyway.
    tolerant: bool,
}

impl<'a> Parser<'a> {
    fn syntax(&self, reason: &'static str) -> JsonError {
        JsonError::Syntax {
            offset: self.pos,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect_literal(&mut self, literal: &'static str) -> Result<(), JsonError> {
        if self.bytes[self.pos..].starts_with(literal.as_bytes()) {
            self.pos += literal.len();
            Ok(())
        } else {
            Err(self.syntax("unknown literal"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node<'a>, JsonError> {
        if depth >= MAX_DEPTH {
            return Err(JsonError::Unsupported {
                offset: self.pos,
                reason: "JSON nested deeper than 128 levels",
            });
        }
        let start = self.pos;
        let value = match self.peek() {
            None => return Err(self.syntax("unexpected end of input")),
            Some(b'n') => self.expect_literal("null").map(|_| Value::Null)?,
            Some(b't') => self.expect_literal("true").map(|_| Value::Bool(true))?,
            Some(b'f') => self.expect_literal("false").map(|_| Value::Bool(false))?,
            Some(b'"') => Value::String(self.string()?),
            Some(b'[') => self.array(depth)?,
            Some(b'{') => self.object(depth)?,
            Some(b'-' | b'0'..=b'9') => Value::Number(self.number()?),
            Some(_) => return Err(self.syntax("unexpected character")),
        };
        Ok(Node {
            value,
            span: start..self.pos,
        })
    }

    fn array(&mut self, depth: usize) -> Result<Value<'a>, JsonError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.syntax("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value<'a>, JsonError> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.syntax("expected a string key"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.syntax("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.syntax("expected ',' or '}'")),
            }
        }
    }

    fn number(&mut self) -> Result<&'a str, JsonError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.syntax("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.syntax("invalid number: digit expected after '.'"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.syntax("invalid number: digit expected in exponent"));
            }
            self.digits();
        }
        let text = &self.text[start..self.pos];
        if self.tolerant {
            return Ok(text);
        }
        let out_of_range = JsonError::Unsupported {
            offset: start,
            reason: "number outside the range the database can store",
        };
        let d = decimal(text).ok_or(out_of_range.clone())?;
        let digits = i64::try_from(d.digits.len()).map_err(|_| out_of_range.clone())?;
        if d.exponent < -MAX_FRACTION_DIGITS
            || d.exponent.saturating_add(digits) > MAX_INTEGER_DIGITS
            || display_scale(text) > MAX_FRACTION_DIGITS
        {
            return Err(out_of_range);
        }
        Ok(text)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let hex = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.syntax("truncated \\u escape"))?;
        let mut code = 0u32;
        for &b in hex {
            let digit = (b as char)
                .to_digit(16)
                .ok_or_else(|| self.syntax("invalid \\u escape"))?;
            code = code * 16 + digit;
        }
        self.pos += 4;
        Ok(code)
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.text[run_start..self.pos]);
            match self.peek() {
                None => return Err(self.syntax("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escape = self
                        .peek()
                        .ok_or_else(|| self.syntax("unterminated string"))?;
                    self.pos += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => return Err(self.syntax("invalid escape")),
                    }
                }
                Some(_) => return Err(self.syntax("control character in string must be escaped")),
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        match self.storable_unicode_escape() {
            Err(JsonError::Unsupported { .. }) if self.tolerant => Ok('\u{fffd}'),
            read => read,
        }
    }

    fn storable_unicode_escape(&mut self) -> Result<char, JsonError> {
        let escape_at = self.pos - 2;
        let unsupported = |reason| JsonError::Unsupported {
            offset: escape_at,
            reason,
        };
        let first = self.hex4()?;
        if first == 0 {
            return Err(unsupported("\\u0000 in a string cannot be stored"));
        }
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(unsupported("lone surrogate in a \\u escape"));
                }
                self.pos += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(unsupported("lone surrogate in a \\u escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(unsupported("lone surrogate in a \\u escape")),
            code => code,
        };
        char::from_u32(code).ok_or_else(|| unsupported("invalid \\u escape"))
    }
}
