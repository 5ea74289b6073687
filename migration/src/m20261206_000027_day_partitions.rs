//! PostgreSQL only: the archive (`webhook_events`) and what is purged with it
//! (`forward_deliveries`, `forward_attempts`) are laid out by day, so the purge drops a day whole
//! (`app::maintenance::partitions`; decision 0020). SQLite keeps its tables and batched purge.
//!
//! - An id carries the UTC day it was made on: `day << 36 | n`, `day` counted from 1970-01-01 and
//!   `n` the table's sequence (2^36 ids a day). Each table is partitioned by range of that id
//!   (`forward_attempts` by `delivery_id`): a day's rows are one table, `{table}_dYYYYMMDD`.
//! - The rows from before this migration keep their ids (all below 2^36) in `{table}_legacy`,
//!   and are purged row by row as before; `{table}_default` holds the rows of a day that has no
//!   table of its own (rows a restore put back, rows kept past their day's drop).
//! - `hookbox_day_partitions(first, last)` makes the days' tables, skipping one that exists or
//!   whose rows already sit in the default table. The migration makes yesterday to a week ahead;
//!   every process makes more at start and daily.
//! - The foreign keys into these tables go (replay_of, forward_deliveries.archive_id,
//!   forward_attempts.delivery_id): a partition referenced by one could only be dropped after a
//!   scan of the day. An id they hold may name a row purged since.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261206_000027_day_partitions"
    }
}

/// Each table laid out by day, its partition key, and whether it has an id of its own.
const TABLES: [(&str, &str, bool); 3] = [
    ("webhook_events", "id", true),
    ("forward_deliveries", "id", true),
    ("forward_attempts", "delivery_id", false),
];

/// The foreign keys into the tables laid out by day, as they were.
const FOREIGN_KEYS: [(&str, &str); 3] = [
    (
        "webhook_events",
        "fk_webhook_events_replay_of FOREIGN KEY (replay_of) REFERENCES webhook_events(id)
             ON DELETE SET NULL",
    ),
    (
        "forward_deliveries",
        "fk_forward_deliveries_archive FOREIGN KEY (archive_id) REFERENCES webhook_events(id)
             ON DELETE SET NULL",
    ),
    (
        "forward_attempts",
        "fk_forward_attempts_delivery FOREIGN KEY (delivery_id) REFERENCES forward_deliveries(id)
             ON DELETE CASCADE",
    ),
];

/// Turns table `t` (partition key `key`) into a table partitioned by range of `key`: the rows
/// there were become its legacy partition, with the indexes they had; the parent gets the same
/// indexes under the same names.
const PARTITION_TABLE: &str = r#"
CREATE FUNCTION hookbox_partition_table(t text, key text, has_id boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  legacy text := t || '_legacy';
BEGIN
  EXECUTE format('ALTER TABLE %I RENAME TO %I', t, legacy);
  FOR r IN
    SELECT c.relname AS idx, con.conname AS con
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
    WHERE i.indrelid = legacy::regclass
  LOOP
    IF r.con IS NOT NULL THEN
      EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', legacy, r.con, r.con || '_legacy');
    ELSE
      EXECUTE format('ALTER INDEX %I RENAME TO %I', r.idx, r.idx || '_legacy');
    END IF;
  END LOOP;
  IF has_id THEN
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP IDENTITY', legacy);
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
                  PARTITION BY RANGE (%I)', t, legacy, key);
  IF has_id THEN
    EXECUTE format('CREATE SEQUENCE %I OWNED BY %I.id', t || '_id_seq', t);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id SET DEFAULT
                      ((floor(extract(epoch FROM clock_timestamp()) / 86400)::bigint << 36)
                       | (nextval(%L) & 68719476735))', t, t || '_id_seq');
  END IF;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (68719476736)',
                 t, legacy);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t || '_default', t);
  FOR r IN
    SELECT c.relname AS idx, pg_get_indexdef(i.indexrelid) AS def, con.conname AS con,
           pg_get_constraintdef(con.oid) AS condef
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
    WHERE i.indrelid = legacy::regclass
  LOOP
    IF r.con IS NOT NULL THEN
      EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', t, left(r.con, -7), r.condef);
    ELSE
      EXECUTE regexp_replace(
        replace(r.def, 'INDEX ' || r.idx || ' ON ', 'INDEX ' || left(r.idx, -7) || ' ON '),
        ' ON (\S+\.)?' || legacy || ' ', ' ON ' || t || ' ');
    END IF;
  END LOOP;
END $$;
"#;

/// Makes the tables of the days `first` to `last` (days since 1970-01-01, UTC) of every table
/// laid out by day; skips a day whose table exists, or whose rows sit in the default table
/// already (they stay there). Answers how many tables it made.
const DAY_PARTITIONS: &str = r#"
CREATE FUNCTION hookbox_day_partitions(first_day integer, last_day integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  d integer;
  t text;
  key text;
  name text;
  lo bigint;
  hi bigint;
  taken boolean;
  made integer := 0;
BEGIN
  FOR d IN first_day..last_day LOOP
    lo := d::bigint << 36;
    hi := (d::bigint + 1) << 36;
    FOR t, key IN VALUES ('webhook_events', 'id'), ('forward_deliveries', 'id'),
                         ('forward_attempts', 'delivery_id')
    LOOP
      name := t || '_d' || to_char(to_timestamp(d::bigint * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');
      CONTINUE WHEN to_regclass(name) IS NOT NULL;
      EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE %I >= $1 AND %I < $2)',
                     t || '_default', key, key)
        INTO taken USING lo, hi;
      CONTINUE WHEN taken;
      -- Made alone, then attached: attaching locks out no statement using the table (making
      -- it a partition at once would lock the table whole).
      EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name, t);
      EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                     t, name, lo, hi);
      made := made + 1;
    END LOOP;
  END LOOP;
  RETURN made;
END $$;
"#;

/// Turns partitioned table `t` back into one table with the rows and indexes it has, its id an
/// identity again.
const FLATTEN_TABLE: &str = r#"
CREATE FUNCTION hookbox_flatten_table(t text, has_id boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  flat text := t || '_flat';
  defs text[] := '{}';
  def text;
  next_id bigint;
BEGIN
  FOR r IN
    SELECT pg_get_indexdef(i.indexrelid) AS def, con.conname AS con,
           pg_get_constraintdef(con.oid) AS condef
    FROM pg_index i LEFT JOIN pg_constraint con
      ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
    WHERE i.indrelid = t::regclass
  LOOP
    IF r.con IS NOT NULL THEN
      defs := defs || format('ALTER TABLE %I ADD CONSTRAINT %I %s', t, r.con, r.condef);
    ELSE
      defs := defs || replace(r.def, ' ON ONLY ', ' ON ');
    END IF;
  END LOOP;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', flat, t);
  EXECUTE format('INSERT INTO %I SELECT * FROM %I', flat, t);
  EXECUTE format('DROP TABLE %I CASCADE', t);
  EXECUTE format('ALTER TABLE %I RENAME TO %I', flat, t);
  IF has_id THEN
    EXECUTE format('SELECT coalesce(max(id), 0) + 1 FROM %I', t) INTO next_id;
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP DEFAULT', t);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (START WITH %s)',
                   t, next_id);
  END IF;
  FOREACH def IN ARRAY defs LOOP
    EXECUTE def;
  END LOOP;
END $$;
"#;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        for (table, key) in FOREIGN_KEYS {
            let name = key.split_whitespace().next().unwrap_or_default();
            db.execute_unprepared(&format!("ALTER TABLE {table} DROP CONSTRAINT {name}"))
                .await?;
        }
        db.execute_unprepared(PARTITION_TABLE).await?;
        for (table, key, has_id) in TABLES {
            db.execute_unprepared(&format!(
                "SELECT hookbox_partition_table('{table}', '{key}', {has_id})"
            ))
            .await?;
        }
        db.execute_unprepared("DROP FUNCTION hookbox_partition_table(text, text, boolean)")
            .await?;
        db.execute_unprepared(DAY_PARTITIONS).await?;
        db.execute_unprepared(
            "SELECT hookbox_day_partitions(
                 CAST(floor(extract(epoch FROM now()) / 86400) AS integer) - 1,
                 CAST(floor(extract(epoch FROM now()) / 86400) AS integer) + 7)",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        db.execute_unprepared("DROP FUNCTION hookbox_day_partitions(integer, integer)")
            .await?;
        db.execute_unprepared(FLATTEN_TABLE).await?;
        for (table, _, has_id) in TABLES.iter().rev() {
            db.execute_unprepared(&format!(
                "SELECT hookbox_flatten_table('{table}', {has_id})"
            ))
            .await?;
        }
        db.execute_unprepared("DROP FUNCTION hookbox_flatten_table(text, boolean)")
            .await?;
        for (table, key) in FOREIGN_KEYS {
            db.execute_unprepared(&format!("ALTER TABLE {table} ADD CONSTRAINT {key}"))
                .await?;
        }
        Ok(())
    }
}
