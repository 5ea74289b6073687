//! `WHERE` conditions built from validated filters, with positional placeholders (`$1`, `$2`, …,
//! as [`super::statement`] takes them), and the error a bad filter is (a 400 naming the field).

use sea_orm::{DbErr, Value};

/// A problem with a request's filters, shown to the user as it is.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    BadFilter(String),
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

/// `WHERE` conditions with positional placeholders, numbered as their values are taken.
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

    /// Adds `value` and answers its placeholder (`$1`, `$2`, … in the order taken), for a
    /// condition that takes several or is built piece by piece ([`Conditions::and`]).
    pub(crate) fn param(&mut self, value: impl Into<Value>) -> String {
        self.values.push(value.into());
        format!("${}", self.values.len())
    }

    /// Adds each of `values` and answers their placeholders as a list (`$3, $4, $5`), for `IN`.
    pub(crate) fn params<V: Into<Value>>(&mut self, values: impl IntoIterator<Item = V>) -> String {
        values
            .into_iter()
            .map(|value| self.param(value))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Adds a condition whose placeholders were taken with [`Conditions::param`].
    pub(crate) fn and(&mut self, sql: String) {
        self.sql.push(sql);
    }

    /// Adds the condition `sql` writes around the placeholder of `value`.
    pub(crate) fn and_with(&mut self, value: impl Into<Value>, sql: impl FnOnce(&str) -> String) {
        let p = self.param(value);
        self.sql.push(sql(&p));
    }

    /// Adds the condition `sql` writes around the placeholders of `a` and `b`.
    pub(crate) fn and_with2(
        &mut self,
        a: impl Into<Value>,
        b: impl Into<Value>,
        sql: impl FnOnce(&str, &str) -> String,
    ) {
        let (p, q) = (self.param(a), self.param(b));
        self.sql.push(sql(&p, &q));
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
