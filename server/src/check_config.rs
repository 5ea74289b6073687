//! `hookbox check-config [FILE]`: validate a config file and the secrets it names, without a
//! database and without starting. Every problem is printed, one a line, naming the file, the
//! source and the key; a valid file is summarised, never showing a secret.

use anyhow::bail;
use app::config::{Config, ConfigErrors, Settings, SettingsErrors, Source};
use app::envelope::{Field, Mode};
use app::schemes::Scheme;
use std::path::PathBuf;

/// Checks FILE, else the file `hookbox serve` would read, and the environment's settings.
/// Problems go to standard error and make the result an error (a non-zero exit); the summary
/// goes to standard output.
pub fn run(
    file: Option<PathBuf>,
    settings: Result<Settings, SettingsErrors>,
) -> anyhow::Result<()> {
    let Some(path) = file.or_else(Config::path_from_env) else {
        bail!("no config file to check: give FILE, set HOOKBOX_CONFIG or create ./hookbox.toml");
    };
    let mut problems: Vec<String> = match Config::load(&path, &|name| std::env::var(name).ok()) {
        Ok(config) => {
            if let Ok(settings) = &settings {
                print!("{}", summary(&config));
                for line in settings.describe() {
                    println!("{line}");
                }
            }
            Vec::new()
        }
        Err(ConfigErrors(problems)) => problems.iter().map(ToString::to_string).collect(),
    };
    if let Err(SettingsErrors(errors)) = settings {
        problems.extend(errors);
    }
    if problems.is_empty() {
        return Ok(());
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    let n = problems.len();
    bail!(
        "{} has {n} problem{}",
        path.display(),
        if n == 1 { "" } else { "s" }
    )
}

/// What a valid config declares: the settings, then each source's scheme, mode, the names of
/// its secret variables and its identity mapping.
pub fn summary(config: &Config) -> String {
    let file = config
        .path
        .as_ref()
        .map_or_else(|| "(no file)".into(), |p| p.display().to_string());
    let n = config.sources.len();
    let mut lines = vec![format!(
        "{file}: valid, {n} source{} (max_body_bytes {}, retention_days {})",
        if n == 1 { "" } else { "s" },
        config.server.max_body_bytes,
        config.server.retention_days
    )];
    for source in &config.sources {
        lines.push(source_line(source));
        lines.push(format!(
            "  checks: {}",
            source.auth().describe(source.tolerance_secs)
        ));
        lines.push(format!("  {}", mapping_line(source)));
    }
    for destination in &config.destinations {
        let schedule = &destination.retry_schedule_secs;
        lines.push(format!(
            "destination {}: {}, secret from {}, timeout {} s, {} retries ({} s … {} s){}",
            destination.name,
            app::config::settings::redact_url(&destination.url),
            destination.secret_env,
            destination.timeout_secs,
            schedule.len(),
            schedule.first().copied().unwrap_or(0),
            schedule.last().copied().unwrap_or(0),
            destination
                .rate_limit_per_sec
                .map(|n| format!(", at most {n} a second"))
                .unwrap_or_default()
        ));
    }
    for channel in &config.notifications {
        lines.push(format!(
            "notification {}: {}, from {}, {}, {}, at most a message a problem per {} s",
            channel.name,
            channel.kind.as_str(),
            channel.variables.join(", "),
            channel
                .sources
                .as_ref()
                .map_or("every source".into(), |s| format!(
                    "sources {}",
                    s.join(", ")
                )),
            channel
                .events
                .iter()
                .map(|e| e.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            channel.min_interval_secs
        ));
    }
    for route in &config.routes {
        lines.push(route.to_string());
    }
    if let Some(oidc) = &config.oidc {
        lines.push(format!(
            "single sign-on: issuer {}, client {} (secret from {}), roles from the claim {:?} (operators: {}; viewers: {}); password sign-in {}",
            oidc.issuer,
            oidc.client_id,
            oidc.client_secret_env,
            oidc.role_claim,
            oidc.operator_values.join(", "),
            oidc.viewer_values.join(", "),
            match (oidc.password_login, oidc.break_glass.is_empty()) {
                (true, _) => "on".to_string(),
                (false, true) => "off".to_string(),
                (false, false) => format!("off but for {}", oidc.break_glass.join(", ")),
            }
        ));
    }
    lines.iter().map(|line| format!("{line}\n")).collect()
}

fn source_line(source: &Source) -> String {
    let mut parts = Vec::new();
    if let Some(preset) = source.preset {
        parts.push(format!("preset {}", preset.name()));
    }
    parts.push(format!("scheme {}", source.scheme.name()));
    parts.push(source.mapping.mode.name().to_string());
    if source.scheme == Scheme::None {
        parts.push("unsigned".into());
    } else {
        parts.push(format!("secrets from {}", source.secrets_env.join(", ")));
    }
    if source.auth().has_timestamp() {
        parts.push(format!("tolerance {} s", source.tolerance_secs));
    }
    if !source.forward.is_empty() {
        parts.push(format!("forwards to {}", source.forward.join(", ")));
    }
    format!("source {}: {}", source.name, parts.join(", "))
}

fn mapping_line(source: &Source) -> String {
    let mapping = &source.mapping;
    let mut fields = vec![("event_id", Some(&mapping.event_id))];
    fields.push(("object_id", mapping.object_id.as_ref()));
    if mapping.mode == Mode::Snapshot {
        fields.push(("revision", mapping.revision.as_ref()));
        fields.push(("snapshot", mapping.snapshot.as_ref()));
    }
    fields.push(("event_type", mapping.event_type.as_ref()));
    let shown: Vec<String> = fields
        .into_iter()
        .map(|(key, field)| format!("{key} {}", field.map_or("-".into(), Field::to_string)))
        .collect();
    shown.join(", ")
}
