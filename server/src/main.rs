//! The `hookbox` command line.

use app::config::Settings;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: allocation was a seventh of hookbox's CPU under ingest
/// load (`docs/benchmarks.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `purge_delay` option: its number in the bundled mimalloc 3's `mi_option_e`
/// (`libmimalloc-sys` names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory freed goes back to the system after 10 ms (mimalloc 2's default) instead of the
/// second mimalloc 3 waits: with the second, a flood's freed buffers stayed resident and its
/// peak RSS was 223–250 MB; with 10 ms, 168–178 MB (`tests/it/flood`). `MIMALLOC_PURGE_DELAY`
/// in the environment still decides when it is set.
#[allow(unsafe_code)]
fn return_freed_memory_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mi_option_set writes one number in mimalloc's option table, read when freed
        // pages are purged; any value is valid for this option and the call is thread-safe.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    }
}

#[derive(Parser)]
#[command(
    name = "hookbox",
    version,
    about = "Webhook receiver: idempotent ingest and an operator dashboard"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (the default).
    Serve,
    /// Apply the schema migrations and exit.
    Migrate,
    /// Sign a body (FILE or standard input) as SOURCE's sender would and post it.
    Send {
        source: String,
        file: Option<PathBuf>,
        /// Base URL of the running hookbox [default: http://LEPTOS_SITE_ADDR].
        #[arg(long)]
        url: Option<String>,
        /// An extra header, NAME:VALUE (repeatable); replaces a generated one of that name.
        #[arg(
            long = "header",
            short = 'H',
            value_name = "NAME:VALUE",
            value_parser = server::send::parse_header
        )]
        headers: Vec<(http::HeaderName, http::HeaderValue)>,
    },
    /// Wait for SOURCE's provider to hand over its signing secret in its first request (Asana's
    /// X-Hook-Secret, Notion's verification_token), and print it: create the webhook meanwhile.
    Handshake {
        source: String,
        /// How long to wait, in seconds.
        #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=3600))]
        wait_secs: u64,
    },
    /// Validate a config file (FILE, else HOOKBOX_CONFIG, else ./hookbox.toml) and the secrets
    /// it names, without a database; list every problem, or summarise each source.
    CheckConfig { file: Option<PathBuf> },
    /// Manage dashboard users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage the tokens programs call /api/v1 with.
    #[command(subcommand)]
    Token(TokenCommand),
    /// The notification channels of the config file's [[notifications]].
    #[command(subcommand)]
    Notify(NotifyCommand),
    /// Delete archive rows older than the retention now (the server does it daily), and print
    /// per source what went. Needs the config file (HOOKBOX_CONFIG, else ./hookbox.toml) or
    /// --retention-days.
    Purge {
        #[command(flatten)]
        retention: RetentionArg,
        /// Count what would go, and delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Apply the retention as it would apply at this instant (RFC 3339, e.g.
        /// 2027-03-01T00:00:00Z) rather than now: a later one previews or tests the policy.
        #[arg(long, value_name = "TIME")]
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// The cold archive of the config file's [archive]: list its objects, verify them against
    /// their manifests, restore days of a source.
    #[command(subcommand)]
    Archive(ArchiveCommand),
    /// Check that the projection, the inbox and the archive agree; exit 1 while drift remains.
    /// Needs the config file (HOOKBOX_CONFIG, else ./hookbox.toml) or --retention-days.
    Verify {
        /// Re-derive drifted projection rows from the inbox.
        #[arg(long)]
        repair: bool,
        #[command(flatten)]
        retention: RetentionArg,
    },
}

#[derive(clap::Args)]
struct RetentionArg {
    /// The archive retention in days, instead of server.retention_days of the config file.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    retention_days: Option<u32>,
}

#[derive(Subcommand)]
enum ArchiveCommand {
    /// Print the objects with their rows, ids and times.
    List {
        #[arg(long, value_name = "S")]
        source: Option<String>,
        /// The first day (YYYY-MM-DD, UTC) of rows received.
        #[arg(long, value_name = "DATE")]
        from: Option<chrono::NaiveDate>,
        /// The last day (YYYY-MM-DD, UTC), included.
        #[arg(long, value_name = "DATE")]
        to: Option<chrono::NaiveDate>,
    },
    /// Check every object against its manifest; exit 1 naming each mismatch.
    Verify,
    /// Put a source's rows of those days back in the archive (each once, with its own id; a
    /// row already there is left alone), searchable and replayable, kept --keep-days.
    Restore {
        #[arg(long, value_name = "S")]
        source: String,
        #[arg(long, value_name = "DATE")]
        from: chrono::NaiveDate,
        #[arg(long, value_name = "DATE")]
        to: chrono::NaiveDate,
        /// How many days the restored rows are kept, whatever the source's retention.
        #[arg(long, value_name = "N", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=3650))]
        keep_days: u32,
    },
}

#[derive(Subcommand)]
enum NotifyCommand {
    /// Send a test message through the channel NAME and print what it answered; exit 1 when
    /// it did not take it.
    Test { name: String },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Make a token and print it, alone on the last line (the only time it is shown).
    Add {
        name: String,
        #[arg(long, value_parser = ["viewer", "operator"])]
        role: String,
        /// Limit the token to this source (repeatable); without it, every source.
        #[arg(long = "source", value_name = "S")]
        sources: Vec<String>,
        /// The token stops working after this many days.
        #[arg(long, value_name = "N")]
        expires_in_days: Option<u32>,
    },
    /// List the tokens (never the tokens themselves).
    List,
    /// Revoke a token: it is refused from then on.
    Revoke { name: String },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Add a user, or set an existing user's password and role; the password is read from
    /// standard input. Their open sessions end.
    Add {
        name: String,
        #[arg(long, value_parser = ["viewer", "operator"])]
        role: String,
    },
    /// List the users.
    List,
    /// Remove a user and end their sessions.
    Remove { name: String },
}

#[tokio::main]
async fn main() -> ExitCode {
    return_freed_memory_promptly();
    let cli = Cli::parse();
    // Read once, validated: a bad value stops every command but check-config, which reports it.
    let settings = Settings::from_env();
    server::logging::init(settings.as_ref().is_ok_and(|s| s.log_json));
    let command = cli.command.unwrap_or(Command::Serve);
    let settings = match (settings, &command) {
        (Ok(settings), _) => settings,
        (Err(problems), Command::CheckConfig { file }) => {
            return exit(server::check_config::run(file.clone(), Err(problems)));
        }
        (Err(problems), _) => {
            for problem in &problems.0 {
                eprintln!("hookbox: {problem}");
            }
            return ExitCode::FAILURE;
        }
    };
    let result = match command {
        Command::Serve => server::serve::run(settings).await,
        Command::Migrate => server::database::connect_and_migrate(&settings)
            .await
            .map(|_| {
                tracing::info!("schema is up to date");
            }),
        Command::Send {
            source,
            file,
            url,
            headers,
        } => {
            let args = server::send::SendArgs {
                source,
                file,
                url: url.unwrap_or_else(|| format!("http://{}", settings.site_addr)),
                headers,
            };
            server::send::run(args).await
        }
        Command::CheckConfig { file } => server::check_config::run(file, Ok(settings)),
        Command::Handshake { source, wait_secs } => {
            server::handshake::run(&settings, &source, wait_secs).await
        }
        Command::User(command) => match command {
            UserCommand::Add { name, role } => server::users::add(&settings, &name, &role).await,
            UserCommand::List => server::users::list(&settings).await,
            UserCommand::Remove { name } => server::users::remove(&settings, &name).await,
        },
        Command::Token(command) => match command {
            TokenCommand::Add {
                name,
                role,
                sources,
                expires_in_days,
            } => server::tokens::add(&settings, &name, &role, &sources, expires_in_days).await,
            TokenCommand::List => server::tokens::list(&settings).await,
            TokenCommand::Revoke { name } => server::tokens::revoke(&settings, &name).await,
        },
        Command::Notify(NotifyCommand::Test { name }) => {
            server::notifier::test_command(&name).await
        }
        Command::Purge {
            retention,
            dry_run,
            as_of,
        } => {
            let run = server::maintenance::PurgeRun {
                retention_days: retention.retention_days,
                dry_run,
                as_of,
            };
            server::maintenance::purge(&settings, run).await
        }
        Command::Archive(command) => match command {
            ArchiveCommand::List { source, from, to } => {
                server::archive::list(source, from, to).await
            }
            ArchiveCommand::Verify => server::archive::verify().await,
            ArchiveCommand::Restore {
                source,
                from,
                to,
                keep_days,
            } => server::archive::restore(&settings, source, from, to, keep_days).await,
        },
        Command::Verify { repair, retention } => {
            server::maintenance::verify(&settings, repair, retention.retention_days).await
        }
    };
    exit(result)
}

fn exit(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hookbox: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// The option's number is the bundled mimalloc's `purge_delay`: mimalloc 3 starts it at
    /// 1000 ms, and nothing in this test process has set it.
    #[test]
    #[allow(unsafe_code)]
    fn the_option_set_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reads one number of mimalloc's option table.
            let delay = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
            assert_eq!(delay, 1000);
        }
    }
}
