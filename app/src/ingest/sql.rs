//! The statements of the delivery transaction, per backend. The shapes are identical; PostgreSQL
//! compares snapshots as `jsonb`, SQLite through the stored canonical form.

use sea_orm::DatabaseBackend;

pub(super) struct Sql {
    /// Whether content identity is the canonical text (SQLite) rather than the sent JSON (`jsonb`).
    pub compares_canonical: bool,
    /// $1 source, $2 event_id, $3 object_id, $4 revision, $5 snapshot, $6 received_at,
    /// $7 signed_body_digest (SQLite also $8: the snapshot's canonical form)
    pub claim: &'static str,
    /// What an unclaimed delivery's claim met, in one statement (one snapshot): $1 source,
    /// $2 event_id, $3 object_id, $4 revision, $5 the snapshot's content (the sent text on
    /// PostgreSQL, the canonical form on SQLite), $6 signed_body_digest → one row:
    /// `same_content` (null when no row has the event id), `body_holder` (the event that
    /// carried that signed body), `revision_holder` (the event holding that object revision)
    pub classify: &'static str,
    /// $1 source, $2 object_id, $3 revision, $4 snapshot, $5 updated_at → a row only if it advanced
    pub advance_projection: &'static str,
    /// $1 source, $2 object_id
    pub current_revision: &'static str,
    /// 13 columns of webhook_events → id. A duplicate whose body is byte for byte an earlier
    /// archived body of its event is archived with a reference to that row (`body_of`) and an
    /// empty body of its own: a re-post costs its headers, not another copy of the body.
    pub archive: &'static str,
    /// $1 destination, $2 source, $3 event_id, $4 object_id, $5 revision, $6 event_type,
    /// $7 archive_id, $8 received_at, $9 payload, $10 created_at: a pending forward delivery,
    /// due now
    pub forward: &'static str,
}

const FORWARD: &str = "INSERT INTO forward_deliveries (destination, source, event_id, object_id, revision, event_type,
                  archive_id, status, attempts, next_attempt_at, created_at, received_at, payload)
              VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $10, $10, $8, $9)";

const POSTGRES: Sql = Sql {
    compares_canonical: false,
    claim: "INSERT INTO webhook_inbox (source, event_id, object_id, revision, snapshot, received_at, signed_body_digest)
            VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
            ON CONFLICT DO NOTHING
            RETURNING event_id",
    // jsonb equality: key order and white space ignored, numbers by value.
    classify: "SELECT
            (SELECT object_id IS NOT DISTINCT FROM $3
                    AND revision IS NOT DISTINCT FROM $4
                    AND snapshot IS NOT DISTINCT FROM $5::jsonb
               FROM webhook_inbox WHERE source = $1 AND event_id = $2) AS same_content,
            (SELECT event_id FROM webhook_inbox
              WHERE source = $1 AND signed_body_digest = $6 LIMIT 1) AS body_holder,
            (SELECT event_id FROM webhook_inbox
              WHERE source = $1 AND object_id = $3 AND revision = $4 LIMIT 1) AS revision_holder",
    advance_projection: "INSERT INTO object_state AS cur (source, object_id, revision, snapshot, updated_at)
            VALUES ($1, $2, $3, $4::jsonb, $5)
            ON CONFLICT (source, object_id) DO UPDATE
               SET revision = EXCLUDED.revision, snapshot = EXCLUDED.snapshot, updated_at = EXCLUDED.updated_at
             WHERE cur.revision < EXCLUDED.revision
            RETURNING revision",
    current_revision: "SELECT revision FROM object_state WHERE source = $1 AND object_id = $2",
    archive: "INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status, outcome,
                  error_message, headers, body, received_at, replay_of, replayed_by, body_of)
              SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb,
                  CASE WHEN same.id IS NULL THEN $10 ELSE ''::bytea END, $11, $12, $13, same.id
              FROM (SELECT 1) AS one LEFT JOIN LATERAL (
                  SELECT id FROM webhook_events
                   WHERE $7 = 'duplicate' AND event_id = $2 AND source = $1
                     AND body_of IS NULL AND body = $10
                   ORDER BY id LIMIT 1) AS same ON true
              RETURNING id",
    forward: FORWARD,
};

const SQLITE: Sql = Sql {
    compares_canonical: true,
    claim: "INSERT INTO webhook_inbox (source, event_id, object_id, revision, snapshot, snapshot_canonical, received_at, signed_body_digest)
            VALUES ($1, $2, $3, $4, $5, $8, $6, $7)
            ON CONFLICT DO NOTHING
            RETURNING event_id",
    classify: "SELECT
            (SELECT object_id IS $3 AND revision IS $4 AND snapshot_canonical IS $5
               FROM webhook_inbox WHERE source = $1 AND event_id = $2) AS same_content,
            (SELECT event_id FROM webhook_inbox
              WHERE source = $1 AND signed_body_digest = $6 LIMIT 1) AS body_holder,
            (SELECT event_id FROM webhook_inbox
              WHERE source = $1 AND object_id = $3 AND revision = $4 LIMIT 1) AS revision_holder",
    advance_projection: "INSERT INTO object_state AS cur (source, object_id, revision, snapshot, updated_at)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (source, object_id) DO UPDATE
               SET revision = excluded.revision, snapshot = excluded.snapshot, updated_at = excluded.updated_at
             WHERE cur.revision < excluded.revision
            RETURNING revision",
    current_revision: "SELECT revision FROM object_state WHERE source = $1 AND object_id = $2",
    archive: "INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status, outcome,
                  error_message, headers, body, received_at, replay_of, replayed_by, body_of)
              SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9,
                  CASE WHEN same.id IS NULL THEN $10 ELSE X'' END, $11, $12, $13, same.id
              FROM (SELECT 1) AS one LEFT JOIN (
                  SELECT id FROM webhook_events
                   WHERE $7 = 'duplicate' AND event_id = $2 AND source = $1
                     AND body_of IS NULL AND body = $10
                   ORDER BY id LIMIT 1) AS same ON 1
              RETURNING id",
    forward: FORWARD,
};

impl Sql {
    pub(super) fn for_backend(backend: DatabaseBackend) -> &'static Sql {
        match backend {
            DatabaseBackend::Postgres => &POSTGRES,
            _ => &SQLITE,
        }
    }
}
