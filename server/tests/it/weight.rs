//! Page weight: the dashboard's answers compressed as the browser accepts (brotli or gzip), the
//! bundle's hashed files kept by browsers for good, pages never stored, and the export streamed
//! as it is read, never compressed.

use crate::support::*;
use std::io::Read;
use std::sync::Arc;

/// A site folder as `cargo leptos build` with `hash-files` writes it.
fn hashed_site() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let pkg = dir.path().join("pkg");
    std::fs::create_dir(&pkg).expect("pkg");
    // Compressible, and above the size compression starts at.
    let wasm: Vec<u8> = b"\0asm\x01\0\0\0"
        .iter()
        .copied()
        .chain((0..20_000u32).flat_map(|i| (i % 251).to_le_bytes()))
        .collect();
    std::fs::write(pkg.join("hookbox.WASMHASH.wasm"), &wasm).expect("wasm");
    std::fs::write(
        pkg.join("hookbox.JSHASH.js"),
        "export function hydrate() {}\n".repeat(100),
    )
    .expect("js");
    // `--precompress` writes a copy of each file beside it; this one says it is the copy.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, b"the precompressed copy").expect("gzip");
    std::fs::write(pkg.join("hookbox.JSHASH.js.gz"), gz.finish().expect("gzip")).expect("js.gz");
    std::fs::write(
        pkg.join("hookbox.CSSHASH.css"),
        "body { margin: 0 }\n".repeat(100),
    )
    .expect("css");
    std::fs::write(
        dir.path().join("hash.txt"),
        "js: JSHASH\nwasm: WASMHASH\ncss: CSSHASH\n",
    )
    .expect("hash.txt");
    std::fs::write(dir.path().join("favicon.svg"), "<svg/>").expect("favicon");
    (dir, wasm)
}

struct Got {
    status: u16,
    header: reqwest::header::HeaderMap,
    bytes: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> &str {
        self.header
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The body as sent, decoded by its `Content-Encoding`.
    fn decoded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self.header("content-encoding") {
            "br" => brotli_decompressor::Decompressor::new(self.bytes.as_slice(), 4096)
                .read_to_end(&mut out)
                .map(|_| ()),
            "gzip" => flate2::read::GzDecoder::new(self.bytes.as_slice())
                .read_to_end(&mut out)
                .map(|_| ()),
            "" => {
                out.clone_from(&self.bytes);
                Ok(())
            }
            other => panic!("unexpected encoding {other}"),
        }
        .expect("decodes");
        out
    }
}

async fn get(app: &TestApp, cookie: Option<&str>, path: &str, encodings: &str) -> Got {
    let mut request = app
        .client
        .get(app.url(path))
        .header("Accept-Encoding", encodings);
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    let header = response.headers().clone();
    let bytes = response.bytes().await.expect("a body").to_vec();
    Got {
        status,
        header,
        bytes,
    }
}

#[tokio::test]
async fn answers_are_compressed_hashed_files_kept_for_good_and_exports_sent_as_read() {
    let (site, wasm) = hashed_site();
    let root = site.path().to_string_lossy().to_string();
    let app = spawn_app_with_state(Backend::Sqlite, test_config(), |state| {
        let mut settings = (*state.settings).clone();
        settings.site_root = root;
        state.settings = Arc::new(settings);
    })
    .await;
    let cookie = signed_in(&app, "vera", app::model::Role::Viewer).await;
    for n in 1..=30 {
        app.send(
            "shop",
            &event(&format!("e{n}"), &format!("o{n}"), 1, r#"{"note":"abc"}"#),
        )
        .await;
    }

    // A page, in brotli and in gzip: its decoded body is the page, which loads the hashed files.
    for encoding in ["br", "gzip"] {
        let page = get(
            &app,
            Some(&cookie),
            "/events",
            &format!("{encoding}, identity"),
        )
        .await;
        assert_eq!(page.status, 200);
        assert_eq!(page.header("content-encoding"), encoding);
        assert!(
            page.header("vary")
                .to_lowercase()
                .contains("accept-encoding")
        );
        assert_eq!(page.header("cache-control"), "no-store", "per-user data");
        let html = String::from_utf8(page.decoded()).expect("UTF-8");
        assert!(html.starts_with("<!DOCTYPE html>"), "{html:.200}");
        assert!(html.contains("e30"), "the page's rows: {html:.300}");
        for name in [
            "/pkg/hookbox.JSHASH.js",
            "/pkg/hookbox.WASMHASH.wasm",
            "/pkg/hookbox.CSSHASH.css",
        ] {
            assert!(html.contains(name), "the page loads {name}");
        }
        assert!(
            page.bytes.len() * 2 < html.len(),
            "{encoding}: {} of {}",
            page.bytes.len(),
            html.len()
        );
    }
    // Without Accept-Encoding, as it is.
    let plain = get(&app, Some(&cookie), "/events", "identity").await;
    assert_eq!(plain.header("content-encoding"), "");
    assert!(String::from_utf8_lossy(&plain.bytes).contains("e30"));

    // The hashed wasm: compressed, kept a year without asking again, readable signed out.
    let bundle = get(&app, None, "/pkg/hookbox.WASMHASH.wasm", "gzip, br").await;
    assert_eq!(bundle.status, 200);
    assert_eq!(bundle.header("content-type"), "application/wasm");
    assert_eq!(bundle.header("content-encoding"), "br", "brotli preferred");
    assert_eq!(
        bundle.header("cache-control"),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(bundle.decoded(), wasm);
    let css = get(&app, None, "/pkg/hookbox.CSSHASH.css", "gzip").await;
    assert_eq!(
        css.header("cache-control"),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(css.header("content-encoding"), "gzip");
    // A file with a precompressed copy is sent as that copy, for caches by encoding.
    let js = get(&app, None, "/pkg/hookbox.JSHASH.js", "gzip").await;
    assert_eq!(js.header("content-encoding"), "gzip");
    assert_eq!(js.decoded(), b"the precompressed copy");
    assert!(
        js.header("vary").to_lowercase().contains("accept-encoding"),
        "{:?}",
        js.header
    );
    assert_eq!(
        js.header("cache-control"),
        "public, max-age=31536000, immutable"
    );
    // Not hashed: the favicon an hour; a missing file is not stored.
    let favicon = get(&app, None, "/favicon.svg", "br").await;
    assert_eq!(
        (favicon.status, favicon.header("cache-control")),
        (200, "public, max-age=3600")
    );
    assert_eq!(favicon.header("content-encoding"), "", "too small to gain");
    let missing = get(&app, Some(&cookie), "/pkg/hookbox.OLDHASH.wasm", "br").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("cache-control"), "no-store");

    // The export streams as it reads: never compressed, whatever the browser accepts.
    for format in ["ndjson", "csv"] {
        let export = get(
            &app,
            Some(&cookie),
            &format!("/export/events?format={format}"),
            "br, gzip",
        )
        .await;
        assert_eq!(export.status, 200);
        assert_eq!(export.header("content-encoding"), "", "{format}");
        assert_eq!(export.header("cache-control"), "no-store");
        let text = String::from_utf8(export.bytes).expect("plain text");
        assert!(text.contains("e17"), "{format}: {text:.200}");
    }

    // The webhook endpoint's answers are small and never compressed.
    let answer = app
        .client
        .post(app.url("/hooks/shop"))
        .header("Accept-Encoding", "br, gzip")
        .body("{}")
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status(), 401);
    assert!(answer.headers().get("content-encoding").is_none());
}
