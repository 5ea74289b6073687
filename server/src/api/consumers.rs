//! `/api/v1/feed/consumers`: named consumers of the pull feed ([`app::feed::consumers`]): what
//! each reads, its committed cursor, commit, seek and lease.
//!
//! - A consumer belongs to the token that created it: only that token, or an operator's token
//!   that sees every source it reads, uses it; to any other it does not exist (404). Its
//!   selection is within its token's sources.
//! - A token owns at most [`consumers::MAX_CONSUMERS_PER_OWNER`] of the
//!   [`consumers::MAX_CONSUMERS`] (409 beyond, naming the limit).
//! - Any token creates, reads, commits and seeks its own; deleting a consumer is an operator's.
//!   Creations, changes of selection, seeks and deletions are audited.

use super::ApiError;
use super::doc::page;
use super::extract::{ApiPath, Body, NoParams, Operator, PageQuery, Query, Viewer, page_by_name};
use super::feed::{FeedPage, cursor, feed_error, long_poll, wait};
use crate::AppState;
use crate::feed::Reader;
use app::auth::tokens::Caller;
use app::feed::Selection;
use app::feed::consumers::{self, Consumer, ConsumerError, Putter, Seek};
use app::model::Role;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

/// A consumer as the API shows it.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "name": "warehouse",
    "sources": ["shop"],
    "types": null,
    "committed": "48213.9120",
    "committed_at": "2026-12-04T06:25:13.002Z",
    "lag_items": 12,
    "lag_capped": false,
    "lag_seconds": 3,
    "lease_until": null,
    "created_at": "2026-12-01T09:00:00.000Z",
    "created_by": "token loader"
}))]
pub struct ConsumerView {
    pub name: String,
    /// The sources it reads (`null`: every source).
    pub sources: Option<Vec<String>>,
    /// The types it reads (`null`: every type).
    pub types: Option<Vec<String>>,
    /// Its committed cursor: its reads start after it.
    pub committed: String,
    #[schema(format = DateTime)]
    pub committed_at: Option<String>,
    /// Its items among the 10,000 archive rows after the committed cursor (all of them unless
    /// `lag_capped`).
    pub lag_items: i64,
    /// More archive rows follow the 10,000 looked at: `lag_items` is a lower bound.
    pub lag_capped: bool,
    /// The age of the oldest of them, in seconds (0 when there is none).
    pub lag_seconds: i64,
    /// Until when a reader holds its lease (`null`: nobody does).
    #[schema(format = DateTime)]
    pub lease_until: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Who created it: `token <name>` or `user <name>`.
    pub created_by: String,
}

page!(
    /// The consumers the token may use, by name.
    ConsumerPage of ConsumerView
);

/// What a consumer reads (`PUT`): both optional (every source, every type).
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"sources": ["shop"], "types": ["order.updated"]}))]
pub struct ConsumerRequest {
    sources: Option<Vec<String>>,
    types: Option<Vec<String>>,
}

/// A commit: the cursor of the last item processed.
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"cursor": "48213.9120"}))]
pub struct CommitRequest {
    cursor: String,
    /// The lease holder that reads (when a lease is used).
    lease: Option<String>,
}

/// A seek: `earliest`, `latest` or an RFC 3339 time.
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"to": "2026-12-04T00:00:00Z"}))]
pub struct SeekRequest {
    to: String,
    /// The lease holder that reads (when a lease is used).
    lease: Option<String>,
}

/// What a consumer's read takes.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ItemsQuery {
    /// Items of the page, 1 to 500 (100 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
    /// Seconds, 0 to 30, to hold an empty answer until an item commits.
    #[param(value_type = Option<u32>, minimum = 0, maximum = 30)]
    wait: Option<String>,
    /// A name for this reader: takes (or renews) the consumer's lease for 30 s; while it is
    /// live, other readers are refused (409).
    lease: Option<String>,
}

/// The consumers the token may use.
#[utoipa::path(
    get,
    path = "/api/v1/feed/consumers",
    operation_id = "list_feed_consumers",
    tag = "feed",
    params(PageQuery),
    responses((status = 200, description = "A page of consumers", body = ConsumerPage))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<ConsumerPage>, ApiError> {
    let usable: Vec<Consumer> = consumers::list(&state.db)
        .await?
        .into_iter()
        .filter(|c| usable(&caller, c))
        .collect();
    let (page, next_cursor) = page_by_name(usable, |c| &c.name, &query)?;
    // The page's lag in one bounded statement.
    let lags = consumers::lags(&state.db, &page).await?;
    let data = page
        .into_iter()
        .zip(lags)
        .map(|(consumer, lag)| view_of(consumer, lag))
        .collect();
    Ok(Json(ConsumerPage { data, next_cursor }))
}

/// Creates a consumer at the oldest item kept, or changes what it reads (its cursor stays).
#[utoipa::path(
    put,
    path = "/api/v1/feed/consumers/{name}",
    operation_id = "put_feed_consumer",
    tag = "feed",
    params(("name" = String, Path, description = "1 to 64 letters, digits, '.', '_' or '-'")),
    request_body = ConsumerRequest,
    responses(
        (status = 201, description = "Created", body = ConsumerView),
        (status = 200, description = "Changed", body = ConsumerView),
        (status = 404, description = "A consumer of that name another token owns", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 409, description = "100 consumers exist already, or the token owns 20", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn put(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Viewer(caller): Viewer,
    Body(request): Body<ConsumerRequest>,
) -> Result<(StatusCode, Json<ConsumerView>), ApiError> {
    consumers::check_name("the consumer's name", &name).map_err(ApiError::BadRequest)?;
    let existing = consumers::get(&state.db, &name).await?;
    if existing.as_ref().is_some_and(|c| !usable(&caller, c)) {
        return Err(not_found(&name));
    }
    // A consumer reads within its owner token's sources: the caller's when it creates or owns
    // it, its owner's when an operator's token changes another's.
    let scope = match existing.as_ref().map(|c| c.owner) {
        Some(owner) if owner != Some(caller.id) => match owner {
            Some(id) => app::auth::tokens::token_sources(&state.db, id)
                .await?
                .flatten(),
            None => None,
        },
        _ => caller.sources.clone(),
    };
    let within_scope = |s: &String| scope.as_ref().is_none_or(|scope| scope.contains(s));
    let mut selection = Selection::default();
    if let Some(sources) = request.sources {
        app::feed::check_names("sources", &sources).map_err(ApiError::BadRequest)?;
        if let Some(unknown) = sources
            .iter()
            .find(|s| !state.config.sources.iter().any(|c| &c.name == *s))
        {
            return Err(ApiError::BadRequest(format!(
                "sources: {unknown:?} is not a configured source"
            )));
        }
        if let Some(unseen) = sources.iter().find(|s| !caller.sees(s)) {
            return Err(ApiError::Forbidden(format!(
                "sources: this token may not read {unseen:?}"
            )));
        }
        if let Some(outside) = sources.iter().find(|s| !within_scope(s)) {
            return Err(ApiError::Forbidden(format!(
                "sources: the token that owns this consumer may not read {outside:?}"
            )));
        }
        selection.sources = Some(sources);
    } else {
        // A token of some sources makes a consumer of those.
        selection.sources = scope;
    }
    if let Some(types) = request.types {
        app::feed::check_names("types", &types).map_err(ApiError::BadRequest)?;
        selection.types = Some(types);
    }
    let actor = caller.actor.clone();
    let by = Putter {
        actor: &actor,
        owner: Some(caller.id),
        // An operator's token changes another's consumer it sees (checked above).
        manages_any: existing.is_some() && caller.role == Role::Operator,
    };
    let (consumer, created) = consumers::put(&state.db, &name, &selection, by)
        .await
        .map_err(consumer_error)?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(view(&state, consumer).await?)))
}

/// A consumer: its committed cursor and lag.
#[utoipa::path(
    get,
    path = "/api/v1/feed/consumers/{name}",
    operation_id = "get_feed_consumer",
    tag = "feed",
    params(("name" = String, Path, description = "The consumer")),
    responses((status = 200, description = "The consumer", body = ConsumerView))
)]
pub(super) async fn get(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Viewer(caller): Viewer,
) -> Result<Json<ConsumerView>, ApiError> {
    let consumer = find(&state, &caller, &name).await?;
    Ok(Json(view(&state, consumer).await?))
}

/// Deletes a consumer (an operator's).
#[utoipa::path(
    delete,
    path = "/api/v1/feed/consumers/{name}",
    operation_id = "delete_feed_consumer",
    tag = "feed",
    params(("name" = String, Path, description = "The consumer")),
    responses((status = 204, description = "Deleted"))
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
) -> Result<StatusCode, ApiError> {
    find(&state, &caller, &name).await?;
    if !consumers::delete(&state.db, &name, &caller.actor).await? {
        return Err(not_found(&name));
    }
    tracing::info!(token = %caller.name, consumer = %name, "feed consumer deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// The consumer's next items, after its committed cursor.
#[utoipa::path(
    get,
    path = "/api/v1/feed/consumers/{name}/items",
    operation_id = "read_feed_consumer",
    tag = "feed",
    params(("name" = String, Path, description = "The consumer"), ItemsQuery),
    responses(
        (status = 200, description = "The items after its committed cursor", body = FeedPage),
        (status = 409, description = "Another reader holds the consumer's lease", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 410, description = "Its committed cursor is past the archive's retention: seek it", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn items(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(query): Query<ItemsQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<FeedPage>, ApiError> {
    let limit = super::extract::limit(query.limit.as_deref())?;
    let holder = holder(query.lease.as_deref())?;
    let wait = wait(&state, query.wait.as_deref())?;
    let consumer = find(&state, &caller, &name).await?;
    let selection = consumer.selection().within(caller.sources.as_deref());
    let (consumer, first) = {
        let _turn = state.feed.reading(Reader::Request).await?;
        consumers::items(&state.db, &name, holder, &selection, limit)
            .await
            .map_err(consumer_error)?
    };
    let mut first = Some(first);
    let page = long_poll(&state, &caller, wait, &selection, |reader| {
        let first = first.take();
        let (state, selection) = (&state, &selection);
        async move {
            match first {
                Some(page) => Ok(page),
                None => {
                    let _turn = state.feed.reading(reader).await?;
                    app::feed::read(&state.db, Some(consumer.committed), selection, limit)
                        .await
                        .map_err(feed_error)
                }
            }
        }
    })
    .await?;
    state.limits.catching_up.set(&caller.name, page.full);
    if let Some(holder) = holder
        && !wait.is_zero()
    {
        // The lease lasts its whole length after the answer, however long the poll waited.
        consumers::renew_lease(&state.db, &name, holder)
            .await
            .map_err(consumer_error)?;
    }
    Ok(Json(page.into()))
}

/// Moves the consumer's committed cursor forward.
#[utoipa::path(
    post,
    path = "/api/v1/feed/consumers/{name}/commit",
    operation_id = "commit_feed_consumer",
    tag = "feed",
    params(("name" = String, Path, description = "The consumer")),
    request_body = CommitRequest,
    responses(
        (status = 200, description = "Committed", body = ConsumerView),
        (status = 409, description = "Before the committed cursor, past what was served, or another reader holds the lease", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn commit(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Viewer(caller): Viewer,
    Body(request): Body<CommitRequest>,
) -> Result<Json<ConsumerView>, ApiError> {
    if request.cursor.is_empty() {
        return Err(ApiError::BadRequest(
            "cursor: required (an item's cursor or a page's next_cursor)".into(),
        ));
    }
    let to = cursor(&request.cursor)?;
    let holder = holder(request.lease.as_deref())?;
    find(&state, &caller, &name).await?;
    let consumer = consumers::commit(&state.db, &name, to, holder)
        .await
        .map_err(consumer_error)?;
    Ok(Json(view(&state, consumer).await?))
}

/// Moves the consumer's committed cursor to the earliest item kept, the latest, or a time.
#[utoipa::path(
    post,
    path = "/api/v1/feed/consumers/{name}/seek",
    operation_id = "seek_feed_consumer",
    tag = "feed",
    params(("name" = String, Path, description = "The consumer")),
    request_body = SeekRequest,
    responses(
        (status = 200, description = "Moved", body = ConsumerView),
        (status = 409, description = "Another reader holds the lease", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn seek(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Viewer(caller): Viewer,
    Body(request): Body<SeekRequest>,
) -> Result<Json<ConsumerView>, ApiError> {
    let to = match request.to.as_str() {
        "earliest" => Seek::Earliest,
        "latest" => Seek::Latest,
        time => Seek::Time(
            chrono::DateTime::parse_from_rfc3339(time)
                .map_err(|_| {
                    ApiError::BadRequest(format!(
                        "to: {time:?} is not \"earliest\", \"latest\" or an RFC 3339 time"
                    ))
                })?
                .to_utc(),
        ),
    };
    let holder = holder(request.lease.as_deref())?;
    find(&state, &caller, &name).await?;
    let consumer = consumers::seek(&state.db, &name, to, holder, &caller.actor)
        .await
        .map_err(consumer_error)?;
    Ok(Json(view(&state, consumer).await?))
}

fn holder(given: Option<&str>) -> Result<Option<&str>, ApiError> {
    if let Some(holder) = given {
        consumers::check_name("lease", holder).map_err(ApiError::BadRequest)?;
    }
    Ok(given)
}

/// Whether the token may use the consumer: the token that created it, or an operator's token
/// that sees every source it reads.
fn usable(caller: &Caller, consumer: &Consumer) -> bool {
    if consumer.owner == Some(caller.id) {
        return true;
    }
    caller.role == Role::Operator
        && match (&caller.sources, &consumer.sources) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(_), Some(sources)) => sources.iter().all(|s| caller.sees(s)),
        }
}

async fn find(state: &AppState, caller: &Caller, name: &str) -> Result<Consumer, ApiError> {
    match consumers::get(&state.db, name).await? {
        Some(consumer) if usable(caller, &consumer) => Ok(consumer),
        _ => Err(not_found(name)),
    }
}

fn not_found(name: &str) -> ApiError {
    ApiError::NotFound(format!("there is no consumer {name:?} this token may use"))
}

/// The consumer as the API shows it, with its lag. Its selection is within the sources of
/// whoever may use it ([`usable`]), so its lag tells nothing of others.
async fn view(state: &AppState, consumer: Consumer) -> Result<ConsumerView, ApiError> {
    let lag = consumers::lag(&state.db, &consumer).await?;
    Ok(view_of(consumer, lag))
}

fn view_of(consumer: Consumer, lag: consumers::Lag) -> ConsumerView {
    let time =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let now = chrono::Utc::now();
    ConsumerView {
        lease_until: consumer.leased_to(now).and(consumer.lease_until).map(time),
        name: consumer.name,
        sources: consumer.sources,
        types: consumer.types,
        committed: consumer.committed.to_string(),
        committed_at: consumer.committed_at.map(time),
        lag_items: lag.items,
        lag_capped: lag.capped,
        lag_seconds: lag.seconds,
        created_at: time(consumer.created_at),
        created_by: consumer.created_by,
    }
}

fn consumer_error(e: ConsumerError) -> ApiError {
    match e {
        ConsumerError::NotFound(name) => not_found(&name),
        ConsumerError::Gone { oldest } => ApiError::Gone {
            why: ConsumerError::Gone { oldest }.to_string(),
            oldest_cursor: oldest.to_string(),
        },
        ConsumerError::Db(e) => ApiError::from(e),
        conflict => ApiError::Conflict(conflict.to_string()),
    }
}
