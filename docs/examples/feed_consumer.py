#!/usr/bin/env python3
"""A consumer of hookbox's pull feed (docs/feed.md), standard library only.

    HOOKBOX_URL=https://hookbox.example.com HOOKBOX_TOKEN=hbt_... CONSUMER=orders-app \
        python3 docs/examples/feed_consumer.py [--once]

Optional: HOOKBOX_SOURCES (comma-separated: what the consumer reads; every source the token sees
when unset), CONSUMER_DB (the local SQLite file, feed-consumer.db) and CONSUMER_HOLDER (the lease
holder's name; host-pid by default). --once reads until the feed has nothing more, then exits.

Crash-safe: each item's effect and its (source, event_id) are committed together in the local
database, and only then is the cursor committed to hookbox. A crash in between brings the items
again; their keys are found and they are skipped.
"""
import json, logging, os, re, socket, sqlite3, sys, time
import urllib.error, urllib.parse, urllib.request

URL = os.environ["HOOKBOX_URL"].rstrip("/")
TOKEN = os.environ["HOOKBOX_TOKEN"]
NAME = os.environ.get("CONSUMER", "feed-consumer")
SOURCES = [s for s in os.environ.get("HOOKBOX_SOURCES", "").split(",") if s]
DB = os.environ.get("CONSUMER_DB", "feed-consumer.db")
# The lease holder: 1 to 64 letters, digits, '.', '_', '-'.
HOLDER = os.environ.get("CONSUMER_HOLDER") or re.sub(
    r"[^A-Za-z0-9._-]", "-", f"{socket.gethostname()}-{os.getpid()}")[-64:]
log = logging.getLogger("feed-consumer")


def problem(e):
    """The problem document (application/problem+json) of an error answer."""
    try:
        return json.load(e)
    except ValueError:
        return {}


def call(method, path, body=None, **query):
    """One API request and its JSON answer. 429, 5xx and connection errors are retried (every
    request here may be repeated: a retried commit of the same cursor is accepted); any other
    error status raises HTTPError."""
    url = f"{URL}/api/v1/feed/consumers/{NAME}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    backoff = 1
    while True:
        request = urllib.request.Request(url, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=40) as answer:  # beyond the 25 s wait
                return json.load(answer)
        except urllib.error.HTTPError as e:
            if e.code == 429:  # over the token's rate, or 256 long polls wait already
                after = e.headers.get("Retry-After", "")
                delay = int(after) if after.isdigit() else 5
            elif e.code >= 500:
                delay = backoff
            else:
                raise
            why = f"{e.code} {problem(e).get('detail', '')}"
        except (urllib.error.URLError, OSError) as e:  # refused, reset, timed out
            delay, why = backoff, f"cannot reach hookbox: {e}"
        log.warning("%s %s: %s; retrying in %d s", method, path or "/", why, delay)
        time.sleep(delay)
        backoff = min(backoff * 2, 60)


def setup(db):
    # `processed` grows by one row an item: delete keys older than the archive's retention_days
    # if you must (a seek to the earliest item brings back no older item).
    db.executescript("""
        CREATE TABLE IF NOT EXISTS processed (source TEXT, event_id TEXT,
            PRIMARY KEY (source, event_id));
        CREATE TABLE IF NOT EXISTS orders (source TEXT, object_id TEXT, revision INTEGER,
            snapshot TEXT, PRIMARY KEY (source, object_id));""")


def process(db, item):
    """The item's effect, once: its key and the effect in one local transaction."""
    with db:  # commits, or rolls back on an exception
        if db.execute("INSERT OR IGNORE INTO processed VALUES (?, ?)",
                      (item["source"], item["event_id"])).rowcount == 0:
            return  # processed before: a re-read after a crash, or a replay applied again
        if "snapshot" in item:  # a snapshot source: keep each object's greatest revision
            db.execute("""INSERT INTO orders VALUES (?, ?, ?, ?)
                ON CONFLICT (source, object_id) DO UPDATE SET revision = excluded.revision,
                    snapshot = excluded.snapshot WHERE excluded.revision > orders.revision""",
                (item["source"], item["object_id"], item["revision"], json.dumps(item["snapshot"])))
        # else: a dedup source's event: act on item["payload"] here, in this transaction.


def run(db, once):
    consumer = call("PUT", "", {"sources": SOURCES} if SOURCES else {})  # create, or keep, it
    committed = consumer["committed"]
    log.info("consumer %s at %s, lease holder %s", NAME, committed, HOLDER)
    while True:
        try:
            page = call("GET", "/items", limit=100, wait=0 if once else 25, lease=HOLDER)
        except urllib.error.HTTPError as e:
            if e.code == 409:  # another copy holds the lease: it reads meanwhile
                log.info("lease held elsewhere: %s", problem(e).get("detail"))
                time.sleep(10)
                continue
            if e.code == 410:  # the committed cursor is past the archive's retention
                log.error("ITEMS MAY BE LOST: the archive's retention purged past this "
                          "consumer's committed cursor before it read on; seeking to the "
                          "earliest item kept (%s)", problem(e).get("oldest_cursor"))
                call("POST", "/seek", {"to": "earliest", "lease": HOLDER})
                continue
            raise
        for item in page["data"]:
            process(db, item)
        # The page's next_cursor: its last item's, or, for an empty page, the latest place the
        # feed has served (nothing this consumer takes lies before it), so a quiet consumer
        # keeps up with the archive's retention too.
        if page["next_cursor"] != committed:
            try:  # only after the local commits: a crash before this line re-reads the page
                call("POST", "/commit", {"cursor": page["next_cursor"], "lease": HOLDER})
                committed = page["next_cursor"]
            except urllib.error.HTTPError as e:
                if e.code != 409:
                    raise
                # The lease went to another copy, or a seek moved the cursor: read again from
                # wherever it is now; items processed here are skipped if they come again.
                log.warning("commit refused: %s", problem(e).get("detail"))
        if page["data"]:
            log.info("processed %d items, up to %s", len(page["data"]), page["next_cursor"])
        elif once:
            return


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    db = sqlite3.connect(DB)
    setup(db)
    try:
        run(db, "--once" in sys.argv[1:])
    except urllib.error.HTTPError as e:  # 400, 401, 403, 404: retrying will not help
        sys.exit(f"{e.geturl()}: {e.code} {problem(e).get('detail', '')}")


if __name__ == "__main__":
    main()
