//! The outbound API's endpoints through Svix's SDK against a real `idemgate serve`: their
//! fields, URL policy, custom headers and signing secret (`docs/design/outbound-api.md`
//! §1.1, §3.7, §3.8).

use std::collections::BTreeMap;

use serde_json::json;
use svix::{
    api::EndpointListOptions,
    models::{
        ApplicationIn, EndpointHeadersIn, EndpointHeadersPatchIn, EndpointIn, EndpointPatch, EndpointSecretRotateIn,
        EndpointUpsertIn,
    },
};

use crate::outbound_api::{ADMIN_TOKEN, API, Backend, READ_TOKEN, http_error, raw, sdk, serve_with, validation_error};

const HOOK: &str = "http://127.0.0.1:9/hook";

async fn endpoints(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, API);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let eps = admin.endpoint();
    let input = EndpointIn {
        uid: Some("orders".to_owned()),
        event_types: Some(["order.paid".to_owned()].into()),
        headers: Some(BTreeMap::from([("X-Tenant".to_owned(), "7".to_owned())])),
        ..EndpointIn::new(HOOK.to_owned())
    };
    let created = eps.create("shop".to_owned(), input.clone(), None).await.unwrap();
    assert!(created.id.starts_with("ep_"), "{created:?}");
    assert_eq!((created.url.as_str(), created.uid.as_deref(), created.disabled), (HOOK, Some("orders"), Some(false)));
    assert_eq!(created.event_types, Some(["order.paid".to_owned()].into()));
    let (status, payload) = http_error(eps.create("shop".to_owned(), input, None).await);
    assert_eq!((status, payload.map(|out| out.code)), (409, Some("conflict".to_owned())));
    assert_eq!(eps.get("shop".to_owned(), "orders".to_owned()).await.unwrap(), created);
    assert_eq!(eps.get("shop".to_owned(), created.id.clone()).await.unwrap().id, created.id);
    assert_eq!(http_error(eps.get("other-app".to_owned(), "orders".to_owned()).await).0, 404);
    // Patch and PUT: a PUT of a missing uid creates it (201).
    let patch = EndpointPatch { disabled: Some(true), description: Some("orders".to_owned()), ..EndpointPatch::new() };
    let patched = eps.patch("shop".to_owned(), "orders".to_owned(), patch).await.unwrap();
    assert_eq!((patched.disabled, patched.description.as_str(), patched.url.as_str()), (Some(true), "orders", HOOK));
    let (status, _, body) =
        raw(&gateway, "PUT", "/app/shop/endpoint/refunds", &[], Some(json!({"url": "http://127.0.0.1:9/refunds"})))
            .await;
    assert_eq!((status, body["uid"].as_str()), (201, Some("refunds")));
    let upsert =
        EndpointUpsertIn { channels: Some(["eu".to_owned()].into()), ..EndpointUpsertIn::new(HOOK.to_owned()) };
    let replaced = eps.upsert("shop".to_owned(), "refunds".to_owned(), upsert).await.unwrap();
    assert_eq!((replaced.url.as_str(), replaced.channels), (HOOK, Some(["eu".to_owned()].into())));
    let options = EndpointListOptions { limit: Some(1), ..EndpointListOptions::default() };
    let first = sdk(&gateway, READ_TOKEN).endpoint().list("shop".to_owned(), Some(options)).await.unwrap();
    assert_eq!((first.data.len(), first.done), (1, false));
    let all = eps.list("shop".to_owned(), None).await.unwrap();
    assert_eq!(all.data.iter().map(|ep| ep.uid.as_deref()).collect::<Vec<_>>(), [Some("orders"), Some("refunds")]);
    // Custom headers: the sensitive ones are named, never shown; forbidden ones refused.
    let headers = eps.get_headers("shop".to_owned(), "orders".to_owned()).await.unwrap();
    assert_eq!(headers.headers, BTreeMap::from([("X-Tenant".to_owned(), "7".to_owned())]));
    let set = BTreeMap::from([
        ("Authorization".to_owned(), "Bearer customer-secret".to_owned()),
        ("X-Tenant".to_owned(), "8".to_owned()),
    ]);
    eps.set_headers("shop".to_owned(), "orders".to_owned(), EndpointHeadersIn::new(set)).await.unwrap();
    let headers = eps.get_headers("shop".to_owned(), "orders".to_owned()).await.unwrap();
    assert_eq!(headers.headers, BTreeMap::from([("X-Tenant".to_owned(), "8".to_owned())]));
    assert_eq!(headers.sensitive, ["Authorization".to_owned()].into());
    let patch = EndpointHeadersPatchIn {
        delete_headers: Some(vec!["Authorization".to_owned()]),
        ..EndpointHeadersPatchIn::new(BTreeMap::from([("X-Region".to_owned(), "eu".to_owned())]))
    };
    eps.patch_headers("shop".to_owned(), "orders".to_owned(), patch).await.unwrap();
    let headers = eps.get_headers("shop".to_owned(), "orders".to_owned()).await.unwrap();
    assert_eq!(headers.headers.keys().collect::<Vec<_>>(), ["X-Region", "X-Tenant"]);
    assert!(headers.sensitive.is_empty());
    let forbidden = BTreeMap::from([("webhook-id".to_owned(), "x".to_owned())]);
    let refused = eps.set_headers("shop".to_owned(), "orders".to_owned(), EndpointHeadersIn::new(forbidden)).await;
    assert_eq!(
        validation_error(refused),
        (422, vec!["body".to_owned(), "headers".to_owned(), "webhook-id".to_owned()])
    );
    // The secret: generated, shown by `GET …/secret`; rotation answers the new one.
    let first = eps.get_secret("shop".to_owned(), "orders".to_owned()).await.unwrap().key;
    assert!(first.starts_with("whsec_"), "the secret has Svix's form");
    let rotated =
        eps.rotate_secret("shop".to_owned(), "orders".to_owned(), EndpointSecretRotateIn::new(), None).await.unwrap();
    assert!(rotated.key.starts_with("whsec_") && rotated.key != first);
    assert_eq!(eps.get_secret("shop".to_owned(), "orders".to_owned()).await.unwrap().key, rotated.key);
    // Reading a secret needs `admin`, though other reads need only `read`.
    let reader = sdk(&gateway, READ_TOKEN);
    assert_eq!(http_error(reader.endpoint().get_secret("shop".to_owned(), "orders".to_owned()).await).0, 403);
    let chosen = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD".to_owned();
    let rotate = EndpointSecretRotateIn { key: Some(chosen.clone()), ..EndpointSecretRotateIn::new() };
    eps.rotate_secret("shop".to_owned(), created.id.clone(), rotate, None).await.unwrap();
    assert_eq!(eps.get_secret("shop".to_owned(), "orders".to_owned()).await.unwrap().key, chosen);
    let too_long = EndpointSecretRotateIn { grace_period_seconds: Some(604_801), ..EndpointSecretRotateIn::new() };
    let refused = eps.rotate_secret("shop".to_owned(), "orders".to_owned(), too_long, None).await;
    assert_eq!(validation_error(refused).1, ["body", "gracePeriodSeconds"]);
    // Deleted: gone.
    eps.delete("shop".to_owned(), "orders".to_owned()).await.unwrap();
    assert_eq!(http_error(eps.get("shop".to_owned(), created.id.clone()).await).0, 404);
    assert_eq!(http_error(eps.get_secret("shop".to_owned(), created.id).await).0, 404);
}

#[tokio::test]
async fn endpoints_with_headers_and_secrets_are_served_on_sqlite() {
    endpoints(Backend::Sqlite).await;
}

#[tokio::test]
async fn endpoints_with_headers_and_secrets_are_served_on_postgres() {
    endpoints(Backend::Postgres).await;
}

#[tokio::test]
async fn an_endpoint_url_is_refused_at_body_url_unless_the_operator_allows_it() {
    // Without `allow_http` and `allow_networks`: https to public addresses only.
    let strict = "[api]\nenabled = true\nsecrets_key = \"env:API_KEY\"\n";
    let (_setup, gateway) = serve_with(Backend::Sqlite, strict);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    admin
        .application()
        .create(ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) }, None)
        .await
        .unwrap();
    let url_loc = vec!["body".to_owned(), "url".to_owned()];
    for url in [
        "http://127.0.0.1:9/hook",
        "https://127.0.0.1:9/hook",
        "https://localhost:9/hook",
        "https://169.254.169.254/latest",
        "https://user:pass@example.com/",
        "https://2130706433/",
        "not a url",
    ] {
        let refused = admin.endpoint().create("shop".to_owned(), EndpointIn::new(url.to_owned()), None).await;
        assert_eq!(validation_error(refused), (422, url_loc.clone()), "{url}");
    }
    let (status, _, body) =
        raw(&gateway, "POST", "/app/shop/endpoint", &[], Some(json!({"url": "https://[::1]/x"}))).await;
    assert_eq!((status, body["detail"][0]["loc"].clone()), (422, json!(["body", "url"])));
    assert!(!body.to_string().contains("[::1]"), "the URL is not echoed: {body}");
    assert!(admin.endpoint().list("shop".to_owned(), None).await.unwrap().data.is_empty());
    // The same URL is accepted where the operator allows loopback over http.
    let (_setup, gateway) = serve_with(Backend::Sqlite, API);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    admin
        .application()
        .create(ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) }, None)
        .await
        .unwrap();
    admin
        .endpoint()
        .create("shop".to_owned(), EndpointIn::new("http://localhost:9/hook".to_owned()), None)
        .await
        .unwrap();
    let patch = EndpointPatch { url: Some("http://10.0.0.1/hook".to_owned()), ..EndpointPatch::new() };
    let id = admin.endpoint().list("shop".to_owned(), None).await.unwrap().data[0].id.clone();
    assert_eq!(validation_error(admin.endpoint().patch("shop".to_owned(), id, patch).await), (422, url_loc));
}
