//! Reading the file key by key: each table's keys ([`Keys`]), typed, with every problem recorded
//! ([`Problems`]) and reading going on after it; and the names a file may use.

use super::ConfigError;
use crate::envelope::{Field, FieldRef};

pub(super) fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The value of the variable `key` names: required, a variable name, set and not empty. The
/// value is never echoed (it holds a URL with its token, or a password).
pub(super) fn from_env(
    keys: &mut Keys<'_>,
    key: &str,
    what: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    match keys.string(key) {
        None => {
            if !keys.has(key) {
                keys.problem(
                    key,
                    format!("is required: the environment variable holding {what}"),
                );
            }
            None
        }
        Some(var) if !valid_env_name(&var) => {
            keys.problem(
                key,
                "is not an environment variable name (letters, digits, _); the file names the variable, the value stays in the environment",
            );
            None
        }
        Some(var) => {
            let value = env(&var).filter(|v| !v.is_empty());
            if value.is_none() {
                keys.problem(key, format!("environment variable {var} is unset or empty"));
            }
            value
        }
    }
}

fn valid_source_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let allowed = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && allowed(&bytes[0])
        && bytes[1..]
            .iter()
            .all(|b| allowed(b) || *b == b'_' || *b == b'-')
}

/// Reads an array of tables (`[[destinations]]`, `[[notifications]]`, `[[routes]]`): each
/// table's keys named `{top}.{its name, else #N}.key` in messages, given to `read` with the labels
/// of the tables before it; what `read` answers is kept (`None`: its problems are recorded). A
/// value that is not an array of tables is one problem.
pub(super) fn read_tables<T>(
    value: Option<&toml::Value>,
    top: &str,
    problems: &mut Problems,
    mut read: impl FnMut(Keys<'_>, &[String]) -> Option<T>,
) -> Vec<T> {
    let shape = format!("must be tables ([[{top}]])");
    let items = match value {
        None => return Vec::new(),
        Some(toml::Value::Array(items)) => items,
        Some(_) => {
            problems.add(None, Some(top), shape);
            return Vec::new();
        }
    };
    let mut read_items = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let Some(table) = item.as_table() else {
            problems.add(None, Some(top), shape.clone());
            continue;
        };
        let label = match table.get("name").and_then(toml::Value::as_str) {
            Some(name) => name.to_string(),
            None => format!("#{}", index + 1),
        };
        let keys = Keys::new(table, None, &format!("{top}.{label}."), problems);
        read_items.extend(read(keys, &labels));
        labels.push(label);
    }
    read_items
}

/// The problems found so far in one file.
pub(super) struct Problems {
    pub(super) file: String,
    pub(super) found: Vec<ConfigError>,
}

impl Problems {
    pub(super) fn add(
        &mut self,
        source_name: Option<&str>,
        key: Option<&str>,
        message: impl Into<String>,
    ) {
        self.found.push(ConfigError {
            file: self.file.clone(),
            source_name: source_name.map(str::to_string),
            key: key.map(str::to_string),
            message: message.into(),
        });
    }
}

/// One table of the file, read key by key. A key with a wrong value is recorded as a problem and
/// read as absent; [`Keys::has_refused`] tells the two apart, so a refused key does not also
/// produce an "is required".
pub(super) struct Keys<'a> {
    pub(super) table: &'a toml::Table,
    source_name: Option<String>,
    /// Prepended to key names in messages (`server.`, `destinations.orders-app.`).
    prefix: String,
    pub(super) problems: &'a mut Problems,
    /// Keys present with a value that was refused.
    refused: Vec<String>,
}

impl<'a> Keys<'a> {
    pub(super) fn new(
        table: &'a toml::Table,
        source_name: Option<String>,
        prefix: &str,
        problems: &'a mut Problems,
    ) -> Keys<'a> {
        Keys {
            table,
            source_name,
            prefix: prefix.to_string(),
            problems,
            refused: Vec::new(),
        }
    }

    pub(super) fn problem(&mut self, key: &str, message: impl Into<String>) {
        let key = format!("{}{key}", self.prefix);
        self.problems
            .add(self.source_name.as_deref(), Some(&key), message);
    }

    /// A problem with the value of `key`, which is then read as absent.
    pub(super) fn refuse(&mut self, key: &str, message: impl Into<String>) {
        self.problem(key, message);
        self.refused.push(key.to_string());
    }

    /// The table's `name`: required, `[a-z0-9][a-z0-9_-]{0,62}`, not one of `earlier`.
    pub(super) fn name(&mut self, earlier: &[String]) -> Option<String> {
        let name = self.optional_name(earlier);
        if name.is_none() && !self.has("name") {
            self.problem("name", "is required");
        }
        name
    }

    /// The table's `name` when it has one, spelled as [`Keys::name`] has it.
    pub(super) fn optional_name(&mut self, earlier: &[String]) -> Option<String> {
        let name = self.string("name");
        match &name {
            Some(name) if !valid_source_name(name) => {
                self.problem("name", "must match [a-z0-9][a-z0-9_-]{0,62}")
            }
            Some(name) if earlier.contains(name) => self.problem("name", "is declared twice"),
            _ => {}
        }
        name
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// Whether `key` is present but was refused (its problem is already recorded).
    pub(super) fn has_refused(&self, key: &str) -> bool {
        self.refused.iter().any(|k| k == key)
    }

    pub(super) fn refuse_unknown(&mut self, known: &[&str]) {
        let unknown: Vec<String> = self
            .table
            .keys()
            .filter(|key| !known.contains(&key.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            self.problem(&key, format!("unknown key (known: {})", known.join(", ")));
        }
    }

    /// Names the type found but never shows the value: it could be a secret pasted in by mistake.
    fn wrong_type(&mut self, key: &str, expected: &str, value: &toml::Value) {
        let found = value.type_str();
        let article = if found.starts_with(['a', 'i']) {
            "an"
        } else {
            "a"
        };
        self.refuse(key, format!("must be {expected}, not {article} {found}"));
    }

    pub(super) fn string(&mut self, key: &str) -> Option<String> {
        match self.table.get(key)? {
            toml::Value::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(key, "a string", other);
                None
            }
        }
    }

    /// A list of strings (a single string is not a list: `secrets_env = ["A"]`).
    pub(super) fn strings(&mut self, key: &str) -> Option<Vec<String>> {
        let value = self.table.get(key)?;
        let strings: Option<Vec<String>> = value.as_array().and_then(|items| {
            items
                .iter()
                .map(|item| item.as_str().map(str::to_string))
                .collect()
        });
        if strings.is_none() {
            self.wrong_type(key, "a list of strings", value);
        }
        strings
    }

    pub(super) fn boolean(&mut self, key: &str) -> Option<bool> {
        match self.table.get(key)? {
            toml::Value::Boolean(b) => Some(*b),
            other => {
                self.wrong_type(key, "true or false", other);
                None
            }
        }
    }

    /// An integer of at least `min` that fits `T`.
    pub(super) fn number<T: TryFrom<i64>>(&mut self, key: &str, min: i64) -> Option<T> {
        let value = self.table.get(key)?;
        let Some(n) = value.as_integer() else {
            self.wrong_type(key, "an integer", value);
            return None;
        };
        if n < min {
            self.refuse(key, format!("must be at least {min}"));
            return None;
        }
        let converted = T::try_from(n).ok();
        if converted.is_none() {
            self.refuse(key, format!("{n} is too large"));
        }
        converted
    }

    /// Where a field lives: `"/pointer"`, `"header:Name"`, or a list of them tried in order.
    /// `Some(None)` is an explicit empty list: the field is not mapped.
    pub(super) fn field(&mut self, key: &str) -> Option<Option<Field>> {
        let value = self.table.get(key)?;
        let specs: Vec<&str> = match value {
            toml::Value::String(spec) => vec![spec.as_str()],
            toml::Value::Array(items) => match items.iter().map(toml::Value::as_str).collect() {
                Some(specs) => specs,
                None => {
                    self.wrong_type(key, "a string or a list of strings", value);
                    return None;
                }
            },
            other => {
                self.wrong_type(key, "a string or a list of strings", other);
                return None;
            }
        };
        let mut places = Vec::new();
        for spec in specs {
            match FieldRef::parse(spec) {
                Ok(place) => places.push(place),
                Err(why) => {
                    self.refuse(key, why);
                    return None;
                }
            }
        }
        Some(Field::first_of(places))
    }
}
