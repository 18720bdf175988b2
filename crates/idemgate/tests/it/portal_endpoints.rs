//! The portal's endpoint pages on a real `idemgate serve` (`docs/design/portal.md` §1), on
//! SQLite and PostgreSQL: a customer adds, edits, disables, enables and deletes an endpoint,
//! sets its headers, reveals and rotates its secret and sends it a test event, each seen
//! through the API's SDK; a refused field is a 422 form that stores nothing; and every route
//! with another application's endpoint is 404 and changes nothing.

use std::collections::BTreeSet;

use idemgate_testkit::Destination;
use svix::models::{ApplicationIn, EndpointHeadersIn, EndpointIn, EventTypeIn};

use crate::{
    outbound_api::{ADMIN_TOKEN, Backend, http_error, sdk, serve_with},
    portal_harness::{Customer, Page, portal_api},
};

/// The worker polls often, so a test event is attempted soon.
const FAST_WORKER: &str = "[worker]\npoll_interval = \"50ms\"\n";

async fn app(admin: &svix::api::Svix, uid: &str) {
    let app = ApplicationIn { uid: Some(uid.to_owned()), ..ApplicationIn::new(uid.to_owned()) };
    admin.application().create(app, None).await.unwrap();
}

/// The endpoint id a redirect to an endpoint's page names.
fn endpoint_of(page: &Page) -> String {
    assert_eq!(page.status, 303, "{}", page.body);
    let location = page.location.clone().unwrap();
    location.strip_prefix("/portal/endpoints/").unwrap().split('?').next().unwrap().to_owned()
}

async fn a_customer_manages_an_endpoint(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &format!("{}{FAST_WORKER}", portal_api()));
    let admin = sdk(&gateway, ADMIN_TOKEN);
    app(&admin, "acme").await;
    for name in ["order.paid", "order.shipped"] {
        admin.event_type().create(EventTypeIn::new(name.to_owned(), "Orders".to_owned()), None).await.unwrap();
    }
    let eps = admin.endpoint();
    let listed = || async { eps.list("acme".to_owned(), None).await.unwrap().data };
    let sink = Destination::start(&[]);
    let mut customer = Customer::enter(&gateway, "acme").await;

    let empty = customer.get("/portal/endpoints").await;
    assert_eq!(empty.status, 200);
    assert!(empty.body.contains("No endpoints yet") && empty.body.contains("href=\"/portal/endpoints/new\""));
    let new = customer.get("/portal/endpoints/new").await;
    assert!(new.body.contains("value=\"order.paid\"") && new.body.contains("value=\"order.shipped\""), "{}", new.body);

    // Refused fields: the form again (422) with the field's error, nothing created.
    for (field, url, rate) in
        [("url", "ftp://x", ""), ("url", "http://10.1.2.3/hook", ""), ("rate-limit", sink.url().as_str(), "many")]
    {
        let refused = customer.post("/portal/endpoints", &[("url", url), ("rate_limit", rate)]).await;
        assert_eq!(refused.status, 422, "{url} {rate}: {}", refused.body);
        assert!(
            refused.body.contains(&format!("id=\"{field}-error\"")) && refused.body.contains("aria-invalid=\"true\""),
            "{}",
            refused.body
        );
        assert!(refused.body.contains(&format!("value=\"{}\"", rate)), "the form keeps what was typed");
        assert!(listed().await.is_empty(), "{url}: nothing created");
    }

    // Added: seen through the API as typed.
    let url = sink.url();
    let added = customer
        .post(
            "/portal/endpoints",
            &[("url", &url), ("description", "Orders"), ("event_types", "order.paid"), ("rate_limit", "5")],
        )
        .await;
    let id = endpoint_of(&added);
    let seen = eps.get("acme".to_owned(), id.clone()).await.unwrap();
    assert_eq!((seen.url.as_str(), seen.description.as_str(), seen.throttle_rate), (url.as_str(), "Orders", Some(5)));
    assert_eq!(seen.event_types, Some(BTreeSet::from(["order.paid".to_owned()])));
    let list = customer.get("/portal/endpoints").await;
    assert!(list.body.contains(&format!("href=\"/portal/endpoints/{id}\"")) && list.body.contains(">enabled<"));
    let secret = eps.get_secret("acme".to_owned(), id.clone()).await.unwrap().key;
    let page = customer.get(&format!("/portal/endpoints/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(!page.body.contains(&secret), "the endpoint page never shows the secret");
    assert!(page.body.contains("No attempts yet") && page.body.contains("Health"), "{}", page.body);

    // Edited; a refused edit changes nothing.
    let edit = customer.get(&format!("/portal/endpoints/{id}/edit")).await;
    assert!(edit.body.contains("value=\"order.paid\" checked") && edit.body.contains("value=\"5\""), "{}", edit.body);
    let path = format!("/portal/endpoints/{id}");
    let refused = customer.post(&path, &[("url", "ftp://x"), ("description", "Changed")]).await;
    assert_eq!(refused.status, 422);
    assert_eq!(eps.get("acme".to_owned(), id.clone()).await.unwrap().description, "Orders");
    let edited = customer.post(&path, &[("url", &url), ("description", "All orders"), ("rate_limit", "")]).await;
    assert_eq!(endpoint_of(&edited), id);
    let seen = eps.get("acme".to_owned(), id.clone()).await.unwrap();
    assert_eq!((seen.description.as_str(), seen.event_types, seen.throttle_rate), ("All orders", None, None));

    // Disabled and enabled.
    assert_eq!(customer.post(&format!("{path}/disable"), &[]).await.status, 303);
    assert_eq!(eps.get("acme".to_owned(), id.clone()).await.unwrap().disabled, Some(true));
    assert!(customer.get("/portal/endpoints").await.body.contains(">disabled<"));
    assert_eq!(customer.post(&format!("{path}/enable"), &[]).await.status, 303);
    assert_eq!(eps.get("acme".to_owned(), id.clone()).await.unwrap().disabled, Some(false));

    // Headers: set, a sensitive one kept hidden, a refused line changes nothing.
    let set = customer
        .post(&format!("{path}/headers"), &[("headers", "X-Tenant: acme\nAuthorization: Bearer s3cret\n")])
        .await;
    assert_eq!(endpoint_of(&set), id);
    let headers = eps.get_headers("acme".to_owned(), id.clone()).await.unwrap();
    assert_eq!(headers.headers.get("X-Tenant").map(String::as_str), Some("acme"));
    assert_eq!(headers.sensitive, BTreeSet::from(["Authorization".to_owned()]));
    let page = customer.get(&path).await;
    assert!(page.body.contains("X-Tenant: acme") && !page.body.contains("s3cret"), "{}", page.body);
    assert_eq!(customer.post(&format!("{path}/headers"), &[("headers", "X-Tenant: shop")]).await.status, 303);
    let headers = eps.get_headers("acme".to_owned(), id.clone()).await.unwrap();
    assert_eq!(headers.headers.get("X-Tenant").map(String::as_str), Some("shop"));
    assert!(headers.sensitive.contains("Authorization"), "the hidden one is kept");
    let refused = customer.post(&format!("{path}/headers"), &[("headers", "X-Tenant: other\nno colon here")]).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("id=\"headers-error\"") && refused.body.contains("Line 2"), "{}", refused.body);
    let refused = customer.post(&format!("{path}/headers"), &[("headers", "Bad Name: x")]).await;
    assert_eq!(refused.status, 422, "the API's header rules: {}", refused.body);
    let headers = eps.get_headers("acme".to_owned(), id.clone()).await.unwrap();
    assert_eq!(headers.headers.get("X-Tenant").map(String::as_str), Some("shop"));

    // The secret: revealed on its own page, rotated as the API does.
    let revealed = customer.get(&format!("{path}/secret")).await;
    assert_eq!(revealed.status, 200);
    assert!(revealed.body.contains(&format!("value=\"{secret}\"")), "{}", revealed.body);
    let rotated = customer.post(&format!("{path}/secret/rotate"), &[]).await;
    assert_eq!(endpoint_of(&rotated), id);
    let new_secret = eps.get_secret("acme".to_owned(), id.clone()).await.unwrap().key;
    assert_ne!(new_secret, secret);
    assert!(customer.get(&format!("{path}/secret")).await.body.contains(&new_secret));

    // A test event: a message to this endpoint alone, then its attempt on the page.
    let sent = customer.post(&format!("{path}/test"), &[("event_type", "svix.ping")]).await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    let msg = sent.location.clone().unwrap().strip_prefix("/portal/messages/").unwrap().to_owned();
    let messages = admin.message().list("acme".to_owned(), None).await.unwrap().data;
    assert_eq!(messages.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), vec![msg.as_str()]);
    let to = admin.message_attempt().list_attempted_destinations("acme".to_owned(), msg.clone(), None).await.unwrap();
    assert_eq!(to.data.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), vec![id.as_str()]);
    let waiting = sink.clone();
    tokio::task::spawn_blocking(move || waiting.wait_until("the test event", |got| !got.is_empty())).await.unwrap();
    let mut page = customer.get(&path).await;
    for _ in 0..100 {
        if page.body.contains(&format!("href=\"/portal/messages/{msg}\"")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        page = customer.get(&path).await;
    }
    assert!(page.body.contains(&format!("href=\"/portal/messages/{msg}\"")) && page.body.contains(">succeeded<"));
    assert!(page.body.contains("100.0 %"), "one delivered of one: {}", page.body);

    // Deleted only when confirmed.
    let unconfirmed = customer.post(&format!("{path}/delete"), &[]).await;
    assert_eq!(unconfirmed.status, 422);
    assert!(eps.get("acme".to_owned(), id.clone()).await.is_ok(), "not deleted");
    let deleted = customer.post(&format!("{path}/delete"), &[("confirm", "1")]).await;
    assert_eq!((deleted.status, deleted.location.as_deref()), (303, Some("/portal/endpoints")));
    assert_eq!(http_error(eps.get("acme".to_owned(), id.clone()).await).0, 404);
    assert_eq!(customer.get(&path).await.status, 404);
}

async fn another_applications_endpoint_is_not_found(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &portal_api());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    app(&admin, "acme").await;
    app(&admin, "other").await;
    let eps = admin.endpoint();
    let theirs =
        eps.create("other".to_owned(), EndpointIn::new("http://127.0.0.1:9/theirs".to_owned()), None).await.unwrap();
    let headers = EndpointHeadersIn::new([("X-Tenant".to_owned(), "other".to_owned())].into());
    eps.set_headers("other".to_owned(), theirs.id.clone(), headers).await.unwrap();
    let before = eps.get("other".to_owned(), theirs.id.clone()).await.unwrap();
    let headers_before = eps.get_headers("other".to_owned(), theirs.id.clone()).await.unwrap();
    let secret_before = eps.get_secret("other".to_owned(), theirs.id.clone()).await.unwrap().key;
    let mut customer = Customer::enter(&gateway, "acme").await;

    let path = format!("/portal/endpoints/{}", theirs.id);
    for get in [path.clone(), format!("{path}/edit"), format!("{path}/secret")] {
        let page = customer.get(&get).await;
        assert_eq!(page.status, 404, "GET {get}");
        assert!(!page.body.contains(&secret_before) && !page.body.contains("127.0.0.1:9"), "GET {get}");
    }
    let posts: [(String, Vec<(&str, &str)>); 7] = [
        (path.clone(), vec![("url", "http://127.0.0.1:9/mine"), ("description", "mine")]),
        (format!("{path}/disable"), vec![]),
        (format!("{path}/enable"), vec![]),
        (format!("{path}/headers"), vec![("headers", "X-Tenant: acme")]),
        (format!("{path}/secret/rotate"), vec![]),
        (format!("{path}/test"), vec![("event_type", "svix.ping")]),
        (format!("{path}/delete"), vec![("confirm", "1")]),
    ];
    for (post, fields) in &posts {
        assert_eq!(customer.post(post, fields).await.status, 404, "POST {post}");
    }
    assert_eq!(customer.get(&format!("{path}/disable")).await.status, 404, "no other method");
    assert_eq!(eps.get("other".to_owned(), theirs.id.clone()).await.unwrap(), before, "unchanged");
    assert_eq!(eps.get_headers("other".to_owned(), theirs.id.clone()).await.unwrap(), headers_before);
    assert_eq!(eps.get_secret("other".to_owned(), theirs.id.clone()).await.unwrap().key, secret_before);
    assert!(admin.message().list("other".to_owned(), None).await.unwrap().data.is_empty(), "no test event");
    assert!(!customer.get("/portal/endpoints").await.body.contains("127.0.0.1:9"), "not in the list");
}

#[tokio::test]
async fn a_customer_manages_an_endpoint_on_sqlite() {
    a_customer_manages_an_endpoint(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_customer_manages_an_endpoint_on_postgres() {
    a_customer_manages_an_endpoint(Backend::Postgres).await;
}

#[tokio::test]
async fn another_applications_endpoint_is_not_found_on_sqlite() {
    another_applications_endpoint_is_not_found(Backend::Sqlite).await;
}

#[tokio::test]
async fn another_applications_endpoint_is_not_found_on_postgres() {
    another_applications_endpoint_is_not_found(Backend::Postgres).await;
}
