# The steps the .ci scripts share; sourced by them (`. "$(dirname "$0")/lib.sh"`), never run.

# A step's heading, on standard error (standard output is the script's results).
say() { printf '\n==> %s\n' "$*" >&2; }

# Runs a command as the postgres user when this is root (initdb refuses root), else as is.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# A TCP port free on loopback now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# durable_pg DIR [OPTIONS]: a new PostgreSQL 15 cluster in DIR/data with durable settings (fsync,
# synchronous_commit, full_page_writes on), started on a free port with the extra server OPTIONS
# (`-c name=value …`, one line) and, when set, the array PG_PIN before pg_ctl (`taskset -c 0`).
# Sets pg_port and pg_url; DIR/server.log is its log.
durable_pg() {
  local dir=$1 extra=${2:-}
  local bin=${HOOKBOX_PG_BIN:-/usr/lib/postgresql/15/bin}
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
  pg_port=$(free_port)
  as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1
  # pg_ctl hands the options to a shell command line: one line, no newlines.
  as_pg ${PG_PIN[@]+"${PG_PIN[@]}"} "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start -o \
    "-p $pg_port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on -c full_page_writes=on -c max_connections=200 $extra" >/dev/null
  pg_url="postgres://postgres@127.0.0.1:$pg_port"
}

# proc_cpu PID: the CPU seconds process PID has spent so far (utime + stime, fields 14 and 15 of
# /proc/PID/stat; the name in field 2 has no spaces).
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat"; }

# The server options that make pg_stat_statements count every statement and its planning.
STATEMENTS_OPTIONS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on"
# statements_reset DB: pg_stat_statements from now on, in DB (the caller's psql_).
statements_reset() {
  psql_ -d "$1" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" -c "SELECT pg_stat_statements_reset()" >/dev/null
}
# statement_costs DB FILE: what each statement of DB cost PostgreSQL since the reset (calls,
# rows, execution and planning time, blocks, WAL records), the dearest first, into FILE.
statement_costs() {
  psql_ -d "$1" -c "SELECT calls, rows, round(total_exec_time::numeric, 0) AS exec_ms,
      round(total_plan_time::numeric, 0) AS plan_ms, round(mean_exec_time::numeric, 3) AS mean_ms,
      shared_blks_hit + shared_blks_read AS blocks, wal_records, left(regexp_replace(query, '\s+', ' ', 'g'), 400) AS query
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$1')
    ORDER BY total_exec_time + total_plan_time DESC LIMIT 25" >"$2"
}
