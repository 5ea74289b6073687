//! The OpenAPI 3.1 document of `/api/v1` (`GET /api/v1/openapi.json`, no token needed). Its
//! paths come from the handlers' `#[utoipa::path]` as [`super::router`] routes them, and its
//! schemas from the types the handlers answer with: the document cannot name a route or a
//! field the code does not have. Every operation answers the problem documents of
//! [`super::problem::ApiError`], added here once ([`ProblemResponses`]).

use super::problem::Problem;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "hookbox API",
        description = "Reads and actions for programs on what hookbox received: the archive of \
                       deliveries, each object's current revision and history, the destinations \
                       accepted events are forwarded to, refused requests and the audit log. \
                       Requests carry `Authorization: Bearer hbt_…` (`hookbox token add`). Lists \
                       answer `{\"data\": [...], \"next_cursor\": ...}`: pass `next_cursor` as \
                       `cursor` for the next page, until it is null. Errors are RFC 9457 problem \
                       documents. Times are RFC 3339 UTC.",
        license(name = "MIT")
    ),
    components(schemas(Problem)),
    modifiers(&BearerToken),
    security(("token" = [])),
    tags(
        (name = "events", description = "The archive: every delivery, its status and error; replays"),
        (name = "sources", description = "The configured sources and their objects' revisions"),
        (name = "destinations", description = "Forwarding accepted events to the application"),
        (name = "feed", description = "The pull feed: applied and accepted deliveries in commit order, and named consumers whose cursor hookbox keeps"),
        (name = "problems", description = "Failures grouped by cause, with the state operators give each cause"),
        (name = "operators", description = "Refused requests and the audit log, for operators' tokens of every source"),
    )
)]
pub struct ApiDoc;

/// The bearer token every operation takes.
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("hbt_ followed by 43 base64url characters (256 random bits)")
                    .description(Some(
                        "An API token from `hookbox token add` or the /tokens page",
                    ))
                    .build(),
            ),
        );
    }
}

/// The statuses any operation may answer with a problem document, and why.
const PROBLEMS: &[(&str, &str)] = &[
    (
        "400",
        "A parameter or the body is wrong: the detail names it",
    ),
    ("401", "No token, or an unknown, revoked or expired one"),
    ("403", "The token's role or scope may not do this"),
    ("404", "Nothing of that name that the token may see"),
    (
        "408",
        "A search in bodies ran past its deadline and was stopped",
    ),
    (
        "429",
        "Over the token's or the client's rate (see Retry-After), or too many searches",
    ),
    ("503", "The database did not answer: retry later"),
];

/// Every operation's problem responses, and 413 on those that take a body: applied to the
/// document once its paths are in ([`super::document`]).
pub struct ProblemResponses;

impl Modify for ProblemResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let problem = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("Problem")))
                        .build(),
                )
                .build()
        };
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                let responses = &mut operation.responses.responses;
                for (status, why) in PROBLEMS {
                    responses
                        .entry((*status).into())
                        .or_insert_with(|| problem(why).into());
                }
                if operation.request_body.is_some() {
                    responses
                        .entry("413".into())
                        .or_insert_with(|| problem("The body is over 64 KiB").into());
                }
            }
        }
    }
}

/// A page of a list: `data`, and the cursor of the next page (`null` on the last).
macro_rules! page {
    ($(#[$meta:meta])* $page:ident of $item:ty) => {
        $(#[$meta])*
        #[derive(serde::Serialize, utoipa::ToSchema)]
        pub struct $page {
            pub data: Vec<$item>,
            /// Pass it as `cursor` for the next page; `null` on the last one.
            pub next_cursor: Option<String>,
        }
    };
}
pub(crate) use page;
