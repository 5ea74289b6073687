//! The cold archive: archive rows written whole to object storage before a purge deletes them
//! or their bodies expire, as gzipped JSON lines (one row a line, [`line::Line`]) at
//! `{source}/{YYYY}/{MM}/{DD}/{name}.jsonl.gz`, the day the rows were received (UTC), each with
//! its manifest beside it (`{name}.manifest.json`, [`Manifest`]).
//!
//! - [`write`]: the run before a purge: each source's whole days up to where its retention or
//!   body retention will reach, in order; a day is recorded as written (its source's horizon in
//!   `cold_archive_horizons`) only once every object of it is confirmed, so a process killed at any
//!   moment loses nothing: the day is written again, at worst a row is in two objects.
//! - [`read`]: `hookbox archive list | verify | restore`.
//!
//! The store is `object_store`'s: a folder (`file://`) or any S3-compatible store (`s3://`).

pub mod line;
pub mod read;
pub mod state;
pub mod write;

use crate::config::archive::ArchiveUrl;
use chrono::{DateTime, Datelike, Utc};
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use std::sync::Arc;

/// A cold archive's store, opened.
#[derive(Clone)]
pub struct ColdArchive {
    store: Arc<dyn ObjectStore>,
    pub url: ArchiveUrl,
}

impl std::fmt::Debug for ColdArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ColdArchive({})", self.url)
    }
}

/// What went wrong with the cold archive.
#[derive(Debug, thiserror::Error)]
pub enum ColdError {
    #[error("the cold archive {url}: {error}")]
    Store {
        url: String,
        error: object_store::Error,
    },
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    #[error("{0}")]
    Content(String),
}

impl ColdArchive {
    /// Opens the store `url` names: a folder (made if missing), or an S3 bucket with its
    /// endpoint and credentials from the environment (path-style requests when
    /// `AWS_ENDPOINT_URL` is set, as S3-compatible stores need).
    pub fn open(url: &ArchiveUrl) -> Result<ColdArchive, ColdError> {
        ColdArchive::open_with(url, &|name| std::env::var(name).ok())
    }

    /// The cold archive `config` names (`[archive] url`), opened; none without one.
    pub fn of(config: &crate::config::Config) -> Result<Option<ColdArchive>, ColdError> {
        config.archive.as_ref().map(ColdArchive::open).transpose()
    }

    /// [`ColdArchive::open`], the S3 endpoint, region and credentials read from `env`.
    pub fn open_with(
        url: &ArchiveUrl,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ColdArchive, ColdError> {
        let failed = |error| ColdError::Store {
            url: url.to_string(),
            error,
        };
        let store: Arc<dyn ObjectStore> = match url {
            ArchiveUrl::File(folder) => {
                std::fs::create_dir_all(folder).map_err(|e| {
                    ColdError::Content(format!("the cold archive folder {}: {e}", folder.display()))
                })?;
                Arc::new(
                    object_store::local::LocalFileSystem::new_with_prefix(folder)
                        .map_err(failed)?,
                )
            }
            ArchiveUrl::S3 { bucket, prefix } => {
                let mut builder =
                    object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
                if let Some(region) = env("AWS_REGION") {
                    builder = builder.with_region(region);
                }
                if let (Some(id), Some(secret)) =
                    (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"))
                {
                    builder = builder
                        .with_access_key_id(id)
                        .with_secret_access_key(secret);
                }
                if let Some(endpoint) = env("AWS_ENDPOINT_URL") {
                    builder = builder
                        .with_endpoint(&endpoint)
                        .with_virtual_hosted_style_request(false)
                        .with_allow_http(endpoint.starts_with("http://"));
                }
                let s3: Arc<dyn ObjectStore> = Arc::new(builder.build().map_err(failed)?);
                if prefix.is_empty() {
                    s3
                } else {
                    Arc::new(object_store::prefix::PrefixStore::new(
                        s3,
                        ObjectPath::from(prefix.as_str()),
                    ))
                }
            }
        };
        Ok(ColdArchive {
            store,
            url: url.clone(),
        })
    }

    fn failed(&self, error: object_store::Error) -> ColdError {
        ColdError::Store {
            url: self.url.to_string(),
            error,
        }
    }

    pub(crate) async fn put(&self, path: &ObjectPath, bytes: Vec<u8>) -> Result<(), ColdError> {
        self.store
            .put(path, object_store::PutPayload::from(bytes))
            .await
            .map_err(|e| self.failed(e))?;
        Ok(())
    }

    pub(crate) async fn get(&self, path: &ObjectPath) -> Result<Vec<u8>, ColdError> {
        let got = self.store.get(path).await.map_err(|e| self.failed(e))?;
        Ok(got.bytes().await.map_err(|e| self.failed(e))?.to_vec())
    }

    /// Every object under `prefix`, by name.
    pub(crate) async fn list(&self, prefix: &str) -> Result<Vec<ObjectPath>, ColdError> {
        use futures::TryStreamExt;
        let prefix = ObjectPath::from(prefix);
        let mut paths: Vec<ObjectPath> = self
            .store
            .list(Some(&prefix))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(|e| self.failed(e))?;
        paths.sort();
        Ok(paths)
    }
}

/// The manifest beside each object.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub rows: u64,
    /// The SHA-256 (hex) of the `.jsonl.gz` object.
    pub sha256: String,
    pub first_id: i64,
    pub last_id: i64,
    /// The first and last `received_at` of its rows.
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// The folder of `source`'s rows received on `day`: `shop/2026/12/01`.
pub fn day_folder(source: &str, day: DateTime<Utc>) -> String {
    format!(
        "{source}/{:04}/{:02}/{:02}",
        day.year(),
        day.month(),
        day.day()
    )
}

/// The object of rows `first_id..=last_id` and its manifest.
pub fn object_names(folder: &str, first_id: i64, last_id: i64) -> (ObjectPath, ObjectPath) {
    let name = format!("{folder}/{first_id:020}-{last_id:020}");
    (
        ObjectPath::from(format!("{name}.jsonl.gz")),
        ObjectPath::from(format!("{name}.manifest.json")),
    )
}

/// The start (UTC midnight) of the day `at` falls in.
pub fn day_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.date_naive()
        .and_hms_opt(0, 0, 0)
        .map_or(at, |midnight| midnight.and_utc())
}
