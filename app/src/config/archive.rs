//! `[archive]`: the cold archive, where archive rows are written before they are purged or
//! their bodies dropped (`maintenance::cold`).

use super::keys::Keys;
use std::path::PathBuf;

const ARCHIVE_KEYS: &[&str] = &["url"];

/// Where the cold archive lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveUrl {
    /// `file:///var/lib/hookbox/archive`: a folder (absolute).
    File(PathBuf),
    /// `s3://bucket/prefix`: any S3-compatible store, its endpoint and credentials from the
    /// environment (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`).
    S3 { bucket: String, prefix: String },
}

impl std::fmt::Display for ArchiveUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArchiveUrl::File(path) => write!(f, "file://{}", path.display()),
            ArchiveUrl::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            ArchiveUrl::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

impl ArchiveUrl {
    /// `file:///absolute/folder` or `s3://bucket[/prefix]`, else why not.
    pub fn parse(text: &str) -> Result<ArchiveUrl, String> {
        if let Some(path) = text.strip_prefix("file://") {
            if !path.starts_with('/') || path.len() < 2 {
                return Err(format!(
                    "{text:?}: a file URL names an absolute folder, file:///var/lib/hookbox/archive"
                ));
            }
            return Ok(ArchiveUrl::File(PathBuf::from(path.trim_end_matches('/'))));
        }
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let valid_bucket = (3..=63).contains(&bucket.len())
                && bucket
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
            if !valid_bucket {
                return Err(format!(
                    "{text:?}: {bucket:?} is not an S3 bucket name (3 to 63 lowercase letters, digits, '-' and '.')"
                ));
            }
            let prefix = prefix.trim_matches('/');
            if prefix.split('/').any(|part| part == "." || part == "..") {
                return Err(format!("{text:?}: the prefix may not hold '.' or '..'"));
            }
            return Ok(ArchiveUrl::S3 {
                bucket: bucket.to_string(),
                prefix: prefix.to_string(),
            });
        }
        Err(format!("{text:?} is neither a file:// nor an s3:// URL"))
    }
}

/// `[archive]`, when the file has one.
pub(super) fn read(
    value: Option<&toml::Value>,
    problems: &mut super::keys::Problems,
) -> Option<ArchiveUrl> {
    match value {
        None => None,
        Some(toml::Value::Table(table)) => {
            read_archive(super::keys::Keys::new(table, None, "archive.", problems))
        }
        Some(_) => {
            problems.add(None, Some("archive"), "must be a table ([archive])");
            None
        }
    }
}

pub(super) fn read_archive(mut keys: Keys<'_>) -> Option<ArchiveUrl> {
    keys.refuse_unknown(ARCHIVE_KEYS);
    let Some(text) = keys.string("url") else {
        keys.problem("url", "is required in [archive]");
        return None;
    };
    match ArchiveUrl::parse(&text) {
        Ok(url) => Some(url),
        Err(why) => {
            keys.problem("url", why);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ArchiveUrl;

    #[test]
    fn an_archive_url_is_an_absolute_folder_or_a_bucket_with_a_prefix() {
        assert_eq!(
            ArchiveUrl::parse("file:///var/lib/hookbox/archive/"),
            Ok(ArchiveUrl::File("/var/lib/hookbox/archive".into()))
        );
        assert_eq!(
            ArchiveUrl::parse("s3://hooks-archive/prod/eu"),
            Ok(ArchiveUrl::S3 {
                bucket: "hooks-archive".into(),
                prefix: "prod/eu".into()
            })
        );
        assert_eq!(
            ArchiveUrl::parse("s3://hooks-archive").map(|u| u.to_string()),
            Ok("s3://hooks-archive".into())
        );
        for wrong in [
            "file://relative/path",
            "s3://",
            "s3://Upper_Case/x",
            "s3://bucket/../x",
            "https://example.com/archive",
        ] {
            assert!(ArchiveUrl::parse(wrong).is_err(), "{wrong}");
        }
    }
}
