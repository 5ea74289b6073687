//! What an API handler takes from its request, each refusing with a problem document
//! ([`ApiError`]) that names what is wrong: the caller ([`Viewer`], [`Operator`]), the query
//! ([`Query`], unknown or repeated parameters refused), a path ([`ApiPath`]) and a JSON body
//! ([`Body`], at most [`super::MAX_BODY_BYTES`]).

use super::problem::ApiError;
use crate::AppState;
use app::auth::tokens::Caller;
use app::model::Role;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// A live token within its rate, of any role.
pub struct Viewer(pub Caller);

/// A live operator's token within its rate (a viewer's is 403).
pub struct Operator(pub Caller);

impl FromRequestParts<AppState> for Viewer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let budget = super::Budget::of_parts(parts);
        super::caller(state, &parts.headers, Role::Viewer, budget)
            .await
            .map(Viewer)
    }
}

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let budget = super::Budget::of_parts(parts);
        super::caller(state, &parts.headers, Role::Operator, budget)
            .await
            .map(Operator)
    }
}

/// The query string read into `T`, whose fields are every parameter the endpoint takes (its
/// `#[serde(deny_unknown_fields)]` makes an unknown one a 400 naming it; a repeated one is too).
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        serde_urlencoded::from_str(query)
            .map(Query)
            .map_err(|e| ApiError::BadRequest(query_problem(&e.to_string())))
    }
}

/// serde's words for a query it refused, in the API's: the parameter named, and what the
/// endpoint takes instead.
fn query_problem(serde: &str) -> String {
    let quoted = |text: &str| text.split('`').nth(1).unwrap_or_default().to_string();
    if let Some(rest) = serde.strip_prefix("unknown field ") {
        let (name, takes) = rest.split_once(", ").unwrap_or((rest, ""));
        let takes: Vec<&str> = takes.split('`').skip(1).step_by(2).collect();
        let takes = match takes.is_empty() {
            true => "none".to_string(),
            false => takes.join(", "),
        };
        return format!(
            "unknown query parameter {:?}; this endpoint takes {takes}",
            quoted(name)
        );
    }
    if serde.starts_with("duplicate field ") {
        return format!(
            "query parameter {:?} is given more than once",
            quoted(serde)
        );
    }
    format!("the query: {serde}")
}

/// A list's paging alone: for the lists of what the configuration declares (sources,
/// destinations), paged by name in the file's order ([`page_by_name`]).
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Items of the page, 1 to 500 (100 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
}

/// A page of `items` (in the configuration's order) after the one named `query.cursor`, and the
/// cursor of the next page: the name of this page's last item while more follow.
pub fn page_by_name<T>(
    items: Vec<T>,
    name: impl Fn(&T) -> &str,
    query: &PageQuery,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let limit = limit(query.limit.as_deref())?;
    let start = match query.cursor.as_deref() {
        None => 0,
        Some(after) => {
            items
                .iter()
                .position(|item| name(item) == after)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "cursor: {after:?} is not a cursor from a previous page"
                    ))
                })?
                + 1
        }
    };
    let more = items.len() > start + limit;
    let page: Vec<T> = items.into_iter().skip(start).take(limit).collect();
    let next = more
        .then(|| page.last().map(|item| name(item).to_string()))
        .flatten();
    Ok((page, next))
}

/// A query that takes no parameter: any one is a 400 naming it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// The path's parameters.
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| ApiPath(value))
            .map_err(|e| ApiError::BadRequest(format!("the path: {}", e.body_text())))
    }
}

/// The JSON body read into `T`; an empty body is `T::default()` (`{}`).
pub struct Body<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge
                } else {
                    ApiError::BadRequest(format!("the body: {}", rejection.body_text()))
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Body(T::default()));
        }
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|e| ApiError::BadRequest(format!("the body: {e}")))
    }
}

/// A list's page when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;
/// The most a list's `limit` may ask for.
pub const MAX_LIMIT: usize = 500;

/// Every list's `limit`, given as text: 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when absent; else a
/// 400 naming it.
pub fn limit(given: Option<&str>) -> Result<usize, ApiError> {
    let max = MAX_LIMIT;
    match given {
        None => Ok(DEFAULT_LIMIT),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                ApiError::BadRequest(format!("limit: {text:?} is not a number from 1 to {max}"))
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::query_problem;

    #[test]
    fn a_refused_query_names_the_parameter_and_what_the_endpoint_takes() {
        assert_eq!(
            query_problem("unknown field `q`, expected one of `source`, `status`"),
            "unknown query parameter \"q\"; this endpoint takes source, status"
        );
        assert_eq!(
            query_problem("unknown field `colour`, there are no fields"),
            "unknown query parameter \"colour\"; this endpoint takes none"
        );
        assert_eq!(
            query_problem("duplicate field `limit`"),
            "query parameter \"limit\" is given more than once"
        );
        assert_eq!(query_problem("invalid type"), "the query: invalid type");
    }
}
