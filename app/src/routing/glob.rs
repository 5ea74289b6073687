//! Event type globs: `*` is any run of characters (dots too, or none); everything else stands
//! for itself, case-sensitive, over the whole event type.

/// The longest glob, in bytes.
pub const MAX_GLOB_BYTES: usize = 256;

/// A checked glob, with its pieces between the stars (split once, at start-up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    text: String,
    pieces: Vec<String>,
}

/// Why a glob is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobError {
    Empty,
    TooLong,
    /// A character other globs give a meaning hookbox's do not (`?`, `[`, `]`, `{`, `}`), or a
    /// control character.
    Character(char),
}

impl std::fmt::Display for GlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GlobError::Empty => write!(f, "is empty"),
            GlobError::TooLong => write!(f, "is longer than {MAX_GLOB_BYTES} bytes"),
            GlobError::Character(c) if c.is_control() => {
                write!(f, "holds a control character ({:?})", c)
            }
            GlobError::Character(c) => write!(
                f,
                "holds {c:?}: only * is a wildcard (any run of characters, dots too)"
            ),
        }
    }
}

impl Glob {
    pub fn parse(text: &str) -> Result<Glob, GlobError> {
        if text.is_empty() {
            return Err(GlobError::Empty);
        }
        if text.len() > MAX_GLOB_BYTES {
            return Err(GlobError::TooLong);
        }
        if let Some(c) = text
            .chars()
            .find(|c| c.is_control() || matches!(c, '?' | '[' | ']' | '{' | '}'))
        {
            return Err(GlobError::Character(c));
        }
        Ok(Glob {
            text: text.to_string(),
            pieces: text.split('*').map(str::to_string).collect(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `text`, whole, matches: the pieces between the stars in order, the first at the
    /// start and the last at the end. Linear in `text` for each piece.
    pub fn matches(&self, text: &str) -> bool {
        let Some((first, rest)) = self.pieces.split_first() else {
            return false;
        };
        let Some(mut left) = text.strip_prefix(first.as_str()) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            // No star: the whole text.
            return left.is_empty();
        };
        for piece in middle {
            match left.find(piece.as_str()) {
                Some(at) => left = &left[at + piece.len()..],
                None => return false,
            }
        }
        left.ends_with(last.as_str())
    }
}
