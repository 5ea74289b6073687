//! `WHERE` conditions built from validated filters, with numbered placeholders, and the error a
//! bad filter is (a 400 naming the field).

use sea_orm::{DbErr, Value};

/// A problem with a request's filters, shown to the user as it is.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    BadFilter(String),
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

/// `WHERE` conditions with numbered placeholders.
pub(crate) struct Conditions {
    pub(crate) sql: Vec<String>,
    pub(crate) values: Vec<Value>,
}

impl Conditions {
    pub(crate) fn new() -> Self {
        Conditions {
            sql: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Adds a condition; `?` in `template` becomes the next placeholder.
    pub(crate) fn push(&mut self, template: &str, value: impl Into<Value>) {
        self.values.push(value.into());
        let n = self.values.len();
        self.sql.push(template.replace('?', &format!("${n}")));
    }

    pub(crate) fn push_pair(&mut self, template: &str, a: impl Into<Value>, b: impl Into<Value>) {
        self.values.push(a.into());
        self.values.push(b.into());
        let n = self.values.len();
        self.sql
            .push(template.replacen('?', &format!("${}", n - 1), 1).replacen(
                '?',
                &format!("${n}"),
                1,
            ));
    }

    /// Adds `value` and answers its placeholder, for conditions built piece by piece.
    pub(crate) fn placeholder(&mut self, value: impl Into<Value>) -> String {
        self.values.push(value.into());
        format!("${}", self.values.len())
    }

    /// Adds a condition whose placeholders were taken with [`Conditions::placeholder`].
    pub(crate) fn push_built(&mut self, sql: String) {
        self.sql.push(sql);
    }

    pub(crate) fn clause(&self) -> String {
        if self.sql.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.sql.join(" AND "))
        }
    }
}

/// A filter field as given: trimmed, and `None` when empty (an empty form field filters nothing).
pub(crate) fn given(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}
