//! How long each source's rows and bodies are kept, and where that ends at a given time: the
//! one condition the purge, its dry run, the invariant check, the feed and body expiry share.

use crate::config::Config;
use crate::db::conditions::Conditions;
use chrono::{DateTime, Duration, Utc};
use std::collections::BTreeMap;

/// Archive rows per source: what a purge deleted, or what it would.
pub type BySource = BTreeMap<String, u64>;

/// `shop 3, crm 1` (by name), or `none`.
pub fn per_source(by_source: &BySource) -> String {
    if by_source.is_empty() {
        return "none".into();
    }
    by_source
        .iter()
        .map(|(source, n)| format!("{source} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Archive rows received before this time are purged: `retention_days` before `now`, and never
/// before 1970 (no row is older; a retention longer than the calendar keeps everything, and
/// PostgreSQL stores no time before 4713 BC).
pub fn retention_cutoff(now: DateTime<Utc>, retention_days: u32) -> DateTime<Utc> {
    now.checked_sub_signed(Duration::days(i64::from(retention_days)))
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
        .max(DateTime::<Utc>::UNIX_EPOCH)
}

/// How long each source's archive rows (and its done forward deliveries) are kept: its own
/// `retention_days`, else `[server] retention_days`, which also keeps the rows of sources no
/// longer configured.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub default_days: u32,
    /// The sources with a retention of their own.
    pub own: BTreeMap<String, u32>,
    /// How long the rows keep their bodies (`body_retention_days`).
    pub bodies: BodyPolicy,
}

impl Policy {
    pub fn of(config: &Config) -> Policy {
        Policy {
            default_days: config.server.retention_days,
            own: config
                .sources
                .iter()
                .filter_map(|s| Some((s.name.clone(), s.retention_days?)))
                .collect(),
            bodies: BodyPolicy::of(config),
        }
    }

    /// Every source kept `days`.
    pub fn uniform(days: u32) -> Policy {
        Policy {
            default_days: days,
            own: BTreeMap::new(),
            bodies: BodyPolicy::default(),
        }
    }

    /// The cutoffs of this policy at `at`.
    pub fn at(&self, at: DateTime<Utc>) -> Cutoffs {
        Cutoffs {
            own: self
                .own
                .iter()
                .map(|(source, days)| (source.clone(), retention_cutoff(at, *days)))
                .collect(),
            rest: retention_cutoff(at, self.default_days),
        }
    }
}

/// Where retention ends, per source: rows received before their source's cutoff are past it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cutoffs {
    /// The sources with a retention of their own.
    pub own: BTreeMap<String, DateTime<Utc>>,
    /// Every other source's.
    pub rest: DateTime<Utc>,
}

/// One cutoff for every source.
impl From<DateTime<Utc>> for Cutoffs {
    fn from(cutoff: DateTime<Utc>) -> Cutoffs {
        Cutoffs {
            own: BTreeMap::new(),
            rest: cutoff,
        }
    }
}

impl Cutoffs {
    /// Where `source`'s retention ends.
    pub fn of(&self, source: &str) -> DateTime<Utc> {
        self.own.get(source).copied().unwrap_or(self.rest)
    }

    /// These cutoffs no later than `horizons` (per source, the time before which its rows are in
    /// the cold archive): every source named there gets a cutoff of its own, and every other
    /// one none (it has no row written).
    pub fn within(&self, horizons: &BTreeMap<String, DateTime<Utc>>) -> Cutoffs {
        Cutoffs {
            own: horizons
                .iter()
                .map(|(source, horizon)| (source.clone(), self.of(source).min(*horizon)))
                .collect(),
            rest: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    /// The condition true of the rows past their source's retention, on the columns `source`
    /// and `at`, its values taken by `c`.
    pub(crate) fn past(&self, c: &mut Conditions, source: &str, at: &str) -> String {
        let mut parts = Vec::new();
        for (name, cutoff) in &self.own {
            let (p, q) = (c.param(name.clone()), c.param(*cutoff));
            parts.push(format!("({source} = {p} AND {at} < {q})"));
        }
        let rest = c.param(self.rest);
        parts.push(if self.own.is_empty() {
            format!("{at} < {rest}")
        } else {
            let named = c.params(self.own.keys().cloned());
            format!("({source} NOT IN ({named}) AND {at} < {rest})")
        });
        format!("({})", parts.join(" OR "))
    }
}

/// The scope of the sources without a body retention of their own.
pub const EVERY_OTHER_SOURCE: &str = "*";

/// How long each source's archive rows keep their bodies: its own `body_retention_days`, else
/// `[server] body_retention_days`, else as long as the rows themselves.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BodyPolicy {
    pub default_days: Option<u32>,
    /// The sources with a body retention of their own.
    pub own: BTreeMap<String, u32>,
}

/// One scope of a body policy at a time: which rows, and the cutoff their bodies expire before.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// A source's name, or [`EVERY_OTHER_SOURCE`].
    pub name: String,
    pub cutoff: DateTime<Utc>,
    /// For `*`: the sources it leaves out (those with their own).
    others: Vec<String>,
}

impl BodyPolicy {
    pub fn of(config: &Config) -> BodyPolicy {
        BodyPolicy {
            default_days: config.server.body_retention_days,
            own: config
                .sources
                .iter()
                .filter_map(|s| Some((s.name.clone(), s.body_retention_days?)))
                .collect(),
        }
    }

    /// How many days `source`'s bodies are kept, if not as long as its rows.
    pub fn days_of(&self, source: &str) -> Option<u32> {
        self.own.get(source).copied().or(self.default_days)
    }

    /// Its scopes at `at`, each no later than `written` says the cold archive holds, when there
    /// is one ([`Scope::within`]).
    pub fn within(
        &self,
        at: DateTime<Utc>,
        written: Option<&BTreeMap<String, DateTime<Utc>>>,
    ) -> Vec<Scope> {
        let scopes = self.at(at);
        match written {
            Some(horizons) => scopes.iter().map(|s| s.within(horizons)).collect(),
            None => scopes,
        }
    }

    /// Its scopes at `at`.
    pub fn at(&self, at: DateTime<Utc>) -> Vec<Scope> {
        let mut scopes: Vec<Scope> = self
            .own
            .iter()
            .map(|(source, days)| Scope {
                name: source.clone(),
                cutoff: retention_cutoff(at, *days),
                others: Vec::new(),
            })
            .collect();
        if let Some(days) = self.default_days {
            scopes.push(Scope {
                name: EVERY_OTHER_SOURCE.into(),
                cutoff: retention_cutoff(at, days),
                others: self.own.keys().cloned().collect(),
            });
        }
        scopes
    }
}

impl Scope {
    /// Whether `source`'s rows are this scope's.
    pub fn covers(&self, source: &str) -> bool {
        if self.name == EVERY_OTHER_SOURCE {
            !self.others.iter().any(|other| other == source)
        } else {
            self.name == source
        }
    }

    /// This scope with its cutoff no later than `horizons` (every source with rows, and the
    /// time before which its rows are in the cold archive).
    pub fn within(&self, horizons: &BTreeMap<String, DateTime<Utc>>) -> Scope {
        let horizon = horizons
            .iter()
            .filter(|(source, _)| self.covers(source))
            .map(|(_, horizon)| *horizon)
            .min()
            .unwrap_or(self.cutoff);
        Scope {
            cutoff: self.cutoff.min(horizon),
            ..self.clone()
        }
    }

    /// The condition true of this scope's rows received in `[from, cutoff)` whose body is still
    /// there, on the archive's columns, its values taken by `c`.
    pub(crate) fn due(&self, c: &mut Conditions, from: DateTime<Utc>) -> String {
        let sources = if self.name == EVERY_OTHER_SOURCE {
            if self.others.is_empty() {
                "1 = 1".to_string()
            } else {
                format!("source NOT IN ({})", c.params(self.others.clone()))
            }
        } else {
            format!("source = {}", c.param(self.name.clone()))
        };
        let (from, cutoff) = (c.param(from), c.param(self.cutoff));
        format!(
            "{sources} AND received_at >= {from} AND received_at < {cutoff} AND body_expired_at IS NULL
             AND kept_until IS NULL"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_keeps_each_source_its_own_days_and_the_rest_the_servers() {
        let config = Config::parse(
            "[server]\nretention_days = 30\n\
             [[sources]]\nname = \"payments\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\nretention_days = 400\n\
             [[sources]]\nname = \"chat\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n",
            std::path::Path::new("hookbox.toml"),
            &|_| Some("s3cret".into()),
        )
        .expect("valid");
        let policy = Policy::of(&config);
        assert_eq!(policy.default_days, 30);
        assert_eq!(
            policy.own.clone().into_iter().collect::<Vec<_>>(),
            [("payments".to_string(), 400)]
        );
        let now = Utc::now();
        let cutoffs = policy.at(now);
        assert_eq!(cutoffs.rest, now - Duration::days(30));
        assert_eq!(cutoffs.own["payments"], now - Duration::days(400));
        // A retention past the calendar keeps everything rather than overflowing.
        assert_eq!(retention_cutoff(now, u32::MAX), DateTime::<Utc>::UNIX_EPOCH);
    }

    #[test]
    fn a_body_policy_scopes_each_source_with_its_own_days_and_every_other_with_the_servers() {
        let policy = BodyPolicy {
            default_days: Some(30),
            own: [("payments".to_string(), 7)].into_iter().collect(),
        };
        let now = Utc::now();
        let scopes = policy.at(now);
        assert_eq!(scopes.len(), 2);
        assert_eq!(
            (scopes[0].name.as_str(), scopes[0].cutoff),
            ("payments", now - Duration::days(7))
        );
        assert_eq!(
            (
                scopes[1].name.as_str(),
                scopes[1].cutoff,
                scopes[1].others.clone()
            ),
            ("*", now - Duration::days(30), vec!["payments".to_string()])
        );
        assert_eq!(policy.days_of("payments"), Some(7));
        assert_eq!(policy.days_of("chat"), Some(30));
        // Without a server-wide body retention, only the sources with their own expire.
        let own_only = BodyPolicy {
            default_days: None,
            own: policy.own.clone(),
        };
        assert_eq!(own_only.at(now).len(), 1);
        assert_eq!(own_only.days_of("chat"), None);
    }
}
