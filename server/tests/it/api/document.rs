//! The OpenAPI document: served without a token, OpenAPI 3.1, naming every route the API
//! answers with the problem documents every operation may give.

use super::*;

#[tokio::test]
async fn the_document_is_served_without_a_token_and_names_every_operation() {
    let app = spawn_app(Backend::Sqlite).await;
    let (status, content_type, document) = get(&app, None, "/api/v1/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/json");
    assert_eq!(document["openapi"], "3.1.0");
    let mut operations: Vec<String> = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            operations.push(format!("{} {path}", method.to_uppercase()));
            let id = operation["operationId"].as_str().unwrap().to_string();
            assert!(ids.insert(id.clone()), "operationId {id} twice");
            let responses = operation["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|status| status.starts_with('2')),
                "{method} {path}: {responses:?}"
            );
            assert_eq!(
                responses["401"]["content"]["application/problem+json"]["schema"]["$ref"],
                "#/components/schemas/Problem",
                "{method} {path}"
            );
        }
    }
    operations.sort();
    assert_eq!(
        operations,
        [
            "DELETE /api/v1/feed/consumers/{name}",
            "GET /api/v1/audit",
            "GET /api/v1/destinations",
            "GET /api/v1/destinations/{name}/deliveries",
            "GET /api/v1/events",
            "GET /api/v1/events/{id}",
            "GET /api/v1/feed",
            "GET /api/v1/feed/consumers",
            "GET /api/v1/feed/consumers/{name}",
            "GET /api/v1/feed/consumers/{name}/items",
            "GET /api/v1/problems",
            "GET /api/v1/rejected",
            "GET /api/v1/routes",
            "GET /api/v1/sources",
            "GET /api/v1/sources/{source}/objects/{object_id}",
            "GET /api/v1/sources/{source}/objects/{object_id}/revisions",
            "POST /api/v1/destinations/{name}/deliveries/{id}/retry",
            "POST /api/v1/destinations/{name}/pause",
            "POST /api/v1/destinations/{name}/resume",
            "POST /api/v1/destinations/{name}/retry",
            "POST /api/v1/events/replay",
            "POST /api/v1/events/{id}/replay",
            "POST /api/v1/feed/consumers/{name}/commit",
            "POST /api/v1/feed/consumers/{name}/seek",
            "POST /api/v1/problems/{id}/state",
            "POST /api/v1/routes/preview",
            "PUT /api/v1/feed/consumers/{name}",
        ]
    );
    // The bearer token, required everywhere.
    assert_eq!(
        document["components"]["securitySchemes"]["token"]["scheme"],
        "bearer"
    );
    assert_eq!(document["security"][0]["token"], serde_json::json!([]));
    // The types the handlers answer with, fields and all.
    let event = &document["components"]["schemas"]["Event"]["properties"];
    for field in [
        "id",
        "source",
        "event_id",
        "type",
        "status",
        "outcome",
        "received_at",
    ] {
        assert!(event.get(field).is_some(), "Event has no {field}: {event}");
    }
    let item = &document["components"]["schemas"]["FeedItem"]["properties"];
    for field in [
        "cursor",
        "source",
        "event_id",
        "type",
        "object_id",
        "revision",
        "outcome",
        "snapshot",
        "payload",
        "received_at",
    ] {
        assert!(item.get(field).is_some(), "FeedItem has no {field}: {item}");
    }
    assert_eq!(
        document["components"]["schemas"]["Status"]["enum"],
        serde_json::json!(["processed", "skipped", "failed"])
    );

    // A route the API does not have is a problem document too.
    let (status, content_type, body) = get(&app, None, "/api/v1/nothing/here").await;
    assert_eq!(status, 404);
    assert_eq!(content_type, "application/problem+json");
    assert_eq!(body["type"], "urn:hookbox:problem:not-found");

    // A path asked with a method it does not take: 405, a problem document, and `Allow`.
    let answer = app
        .client
        .delete(app.url("/api/v1/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 405);
    assert_eq!(answer.headers()["allow"], "GET,HEAD");
    assert_eq!(answer.headers()["content-type"], "application/problem+json");
    let problem: serde_json::Value =
        serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap();
    assert_eq!(
        problem["detail"], "this path does not take DELETE: the Allow header lists what it takes",
        "{problem}"
    );
}
