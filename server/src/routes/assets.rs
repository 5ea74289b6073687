//! What the dashboard's answers weigh and how long browsers keep them: compression, and
//! `Cache-Control` by kind of answer.
//!
//! `cargo leptos build` (`hash-files` in the workspace's `Cargo.toml`) names the bundle's files
//! after their contents (`pkg/hookbox.<hash>.wasm`) and lists those names in the site folder's
//! `hash.txt`. A hashed file never changes, so browsers keep it a year without asking again; the
//! pages, which hold per-user data, are never stored; the favicon is kept an hour.

use anyhow::{Context, bail};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};

/// The file `cargo leptos build` writes into the site folder: `js: <hash>`, `wasm: <hash>`,
/// `css: <hash>`, a line each.
pub const HASH_FILE: &str = "hash.txt";

/// The site folder's compiled bundle: `pkg/` and, with hashed names, its `hash.txt`.
#[derive(Debug, Clone)]
pub struct Site {
    pub root: String,
    /// The absolute path of `hash.txt` and the paths it names (`/pkg/hookbox.<hash>.js`), when
    /// the bundle has hashed names.
    pub hashed: Option<(PathBuf, Vec<String>)>,
}

impl Site {
    /// The site at `root` (`LEPTOS_SITE_ROOT`). With a `hash.txt`, every file it names must be
    /// in `pkg/`: a `hash.txt` from another build would make every page load files that do not
    /// exist, so hookbox refuses to start instead.
    pub fn open(root: &str, output_name: &str, pkg_dir: &str) -> anyhow::Result<Site> {
        let file = Path::new(root).join(HASH_FILE);
        if !file.exists() {
            let bundle = Path::new(root)
                .join(pkg_dir)
                .join(format!("{output_name}.wasm"));
            if Path::new(root).join(pkg_dir).is_dir() && !bundle.is_file() {
                bail!(
                    "{} is missing, and so is {}: a bundle built with hashed names needs the \
                     hash.txt `cargo leptos build` wrote beside it",
                    file.display(),
                    bundle.display()
                );
            }
            return Ok(Site {
                root: root.to_string(),
                hashed: None,
            });
        }
        let text =
            std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
        let mut paths = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let Some((extension, hash)) = line.split_once(':') else {
                bail!("{}: {line:?} is not \"kind: hash\"", file.display());
            };
            let (extension, hash) = (extension.trim(), hash.trim());
            // The wasm-split manifest and loader, which hookbox's build does not make.
            if !matches!(extension, "js" | "wasm" | "css") {
                continue;
            }
            let name = format!("{output_name}.{hash}.{extension}");
            let on_disk = Path::new(root).join(pkg_dir).join(&name);
            if !on_disk.is_file() {
                bail!(
                    "{} names {}, which is missing: the site folder is not from one build \
                     (ship the whole folder `cargo leptos build` wrote)",
                    file.display(),
                    on_disk.display()
                );
            }
            paths.push(format!("/{pkg_dir}/{name}"));
        }
        if paths.len() != 3 {
            bail!("{} must name the js, wasm and css files", file.display());
        }
        // Leptos reads the file on each render, relative to the binary unless absolute.
        let file = std::path::absolute(&file)
            .with_context(|| format!("the absolute path of {}", file.display()))?;
        Ok(Site {
            root: root.to_string(),
            hashed: Some((file, paths)),
        })
    }

    /// The paths browsers may keep for good.
    pub fn immutable(&self) -> Immutable {
        Immutable(Arc::new(
            self.hashed
                .iter()
                .flat_map(|(_, paths)| paths.iter().cloned())
                .collect(),
        ))
    }
}

/// The paths of the hashed files.
#[derive(Debug, Clone, Default)]
pub struct Immutable(Arc<HashSet<String>>);

pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// A file whose name stays when its contents change (a bundle built without hashing): kept,
/// but checked with the server (`Last-Modified`) before each use.
pub const REVALIDATE: &str = "no-cache";
pub const FAVICON: &str = "public, max-age=3600";
/// Pages, server functions, exports, redirects and errors: per-user data, never stored.
pub const NEVER_STORED: &str = "no-store";

/// The `Cache-Control` of a dashboard answer to `path` with `status`.
pub fn cache_control(immutable: &Immutable, path: &str, status: StatusCode) -> &'static str {
    let file_served = status.is_success() || status == StatusCode::NOT_MODIFIED;
    match path {
        _ if !file_served => NEVER_STORED,
        _ if immutable.0.contains(path) => IMMUTABLE,
        _ if path.starts_with("/pkg/") => REVALIDATE,
        "/favicon.svg" | "/favicon.ico" => FAVICON,
        _ => NEVER_STORED,
    }
}

/// Sets [`cache_control`] on every dashboard answer that has none of its own.
pub async fn set_cache_control(
    State(immutable): State<Immutable>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_string();
    let mut response = next.run(request).await;
    let value = cache_control(&immutable, &path, response.status());
    let headers = response.headers_mut();
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static(value));
    // A file served from its `.br` or `.gz` copy: a shared cache must not hand it to a browser
    // that did not ask for that encoding (the compression layers say so of what they compress).
    let varies = headers.get_all(header::VARY).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding"))
    });
    if headers.contains_key(header::CONTENT_ENCODING) && !varies {
        headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// Answers smaller than this go as they are: compressing them saves less than its headers.
pub const COMPRESS_ABOVE_BYTES: u16 = 1024;

/// Whether an answer is the bundle's wasm, JS or CSS.
fn is_bundle(headers: &HeaderMap) -> bool {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    [
        "application/wasm",
        "text/javascript",
        "application/javascript",
        "text/css",
    ]
    .iter()
    .any(|bundle| kind.starts_with(bundle))
}

/// The bundle's files, when the build did not compress them (`cargo leptos build --release
/// --precompress` writes `.br` and `.gz` beside each, served as they are): the fastest level
/// (brotli 0, gzip 1). Anyone may load them, signed in or not, and the wasm is 1.7 MB: at this
/// level the server spends 11 ms (brotli) or 15 ms (gzip) of a core per load, where the default
/// level takes about five times as long for a sixth fewer bytes (`docs/benchmarks.md`, "Page
/// weight").
pub fn compress_bundle() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new()
        .quality(CompressionLevel::Fastest)
        .compress_when(SizeAbove::new(COMPRESS_ABOVE_BYTES).and(
            |_: StatusCode, _: http::Version, headers: &HeaderMap, _: &http::Extensions| {
                is_bundle(headers)
            },
        ))
}

/// Pages and server functions, brotli or gzip as the browser accepts, at the default level
/// (brotli 4, gzip 6): about 0.3 ms of a core for the 36 kB events page, which comes out a
/// quarter smaller than at the fastest level. The encoder holds a streamed page's first chunks until more follow, so it
/// arrives nearly whole: hookbox's pages finish in milliseconds.
///
/// Not downloads: the export streams in bounded chunks as it reads them, and a compressor would
/// hold them back (each has `Content-Disposition: attachment` and its own type). Not the bundle,
/// compressed by [`compress_bundle`] inside this layer (a compressed answer is never
/// compressed again).
pub fn compress_pages() -> CompressionLayer<impl Predicate> {
    let not_a_download =
        |_: StatusCode, _: http::Version, headers: &HeaderMap, _: &http::Extensions| {
            !headers.contains_key(header::CONTENT_DISPOSITION)
        };
    CompressionLayer::new()
        .quality(CompressionLevel::Default)
        .compress_when(
            SizeAbove::new(COMPRESS_ABOVE_BYTES)
                .and(NotForContentType::GRPC)
                .and(NotForContentType::IMAGES)
                .and(NotForContentType::SSE)
                .and(NotForContentType::const_new("application/x-ndjson"))
                .and(NotForContentType::const_new("text/csv"))
                .and(not_a_download),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site_with(files: &[&str], hash_txt: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("pkg")).expect("pkg");
        for name in files {
            std::fs::write(dir.path().join("pkg").join(name), "x").expect("file");
        }
        std::fs::write(dir.path().join(HASH_FILE), hash_txt).expect("hash.txt");
        let root = dir.path().to_string_lossy().to_string();
        (dir, root)
    }

    #[test]
    fn a_hashed_site_names_its_files_and_a_mixed_one_is_refused() {
        let files = ["hookbox.J.js", "hookbox.W.wasm", "hookbox.C.css"];
        let (_dir, root) = site_with(&files, "js: J\nwasm: W\ncss: C\n");
        let site = Site::open(&root, "hookbox", "pkg").expect("opens");
        let immutable = site.immutable();
        assert_eq!(
            cache_control(&immutable, "/pkg/hookbox.W.wasm", StatusCode::OK),
            IMMUTABLE
        );
        assert_eq!(
            cache_control(&immutable, "/pkg/hookbox.W.wasm", StatusCode::NOT_FOUND),
            NEVER_STORED
        );
        assert_eq!(
            cache_control(&immutable, "/pkg/hookbox.js", StatusCode::OK),
            REVALIDATE
        );
        assert_eq!(
            cache_control(&immutable, "/favicon.svg", StatusCode::OK),
            FAVICON
        );
        assert_eq!(
            cache_control(&immutable, "/events", StatusCode::OK),
            NEVER_STORED
        );

        let (_dir, root) = site_with(&files[..2], "js: J\nwasm: W\ncss: C\n");
        let refused = Site::open(&root, "hookbox", "pkg").expect_err("a file is missing");
        assert!(
            refused
                .to_string()
                .contains("hookbox.C.css, which is missing"),
            "{refused}"
        );
    }

    #[test]
    fn a_site_without_hash_file_has_plain_names() {
        let dir = tempfile::tempdir().expect("temp dir");
        let site = Site::open(&dir.path().to_string_lossy(), "hookbox", "pkg").expect("opens");
        assert!(site.hashed.is_none());
    }
}
