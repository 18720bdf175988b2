//! The outbound API (`/api/v1`, Svix-compatible) of a real `idemgate serve`, driven by
//! Svix's own Rust SDK (`svix` 2.9.1) as a customer's code would drive it. So far the edge
//! without data: health, tokens and roles, and Svix's error shapes.

use svix::{
    api::{Svix, SvixOptions},
    error::Error,
    models::{ApplicationIn, HttpErrorOut, MessageIn},
};

use crate::{
    gateway_harness::{Gateway, Setup},
    harness::exchange,
};

const ADMIN_TOKEN: &str = "api-admin-token-0123456789";
const PUBLISH_TOKEN: &str = "api-publish-token-0123456789";
const READ_TOKEN: &str = "api-read-token-0123456789";

/// `idemgate serve` with one source and `[api]` enabled with an admin, a publish and a read
/// token, each from the environment.
fn serve_api() -> (Setup, Gateway) {
    let setup = Setup::new(
        "[sources.a]\nscheme = \"github\"\nsecrets = [\"env:A_SECRET\"]\n\
         [api]\nenabled = true\nallow_networks = [\"127.0.0.0/8\"]\n\
         [api.tokens.ops]\ntoken = \"env:API_ADMIN\"\nrole = \"admin\"\n\
         [api.tokens.ci]\ntoken = \"env:API_PUBLISH\"\nrole = \"publish\"\n\
         [api.tokens.viewer]\ntoken = \"env:API_READ\"\nrole = \"read\"\n",
    );
    let env = [
        ("A_SECRET", "github-secret-0123456789"),
        ("API_ADMIN", ADMIN_TOKEN),
        ("API_PUBLISH", PUBLISH_TOKEN),
        ("API_READ", READ_TOKEN),
    ];
    let gateway = Gateway::start(&setup.config(), &env);
    (setup, gateway)
}

/// The SDK pointed at `gateway` with `token`, without retries (a refusal is final anyway).
fn sdk(gateway: &Gateway, token: &str) -> Svix {
    let options = SvixOptions {
        server_url: Some(format!("http://{}", gateway.addr)),
        num_retries: Some(0),
        ..SvixOptions::default()
    };
    Svix::new(token.to_owned(), Some(options))
}

/// The SDK's `Error::Http` as (status, payload); anything else fails the test.
fn http_error<T: std::fmt::Debug>(result: svix::error::Result<T>) -> (u16, Option<HttpErrorOut>) {
    match result {
        Err(Error::Http(content)) => (content.status.as_u16(), content.payload),
        other => panic!("expected the SDK's Error::Http, got {other:?}"),
    }
}

#[tokio::test]
async fn the_sdk_sees_a_healthy_api_and_head_and_ping_answer_204() {
    let (_setup, gateway) = serve_api();
    sdk(&gateway, ADMIN_TOKEN).health().get().await.unwrap();
    // Health needs no token, as on Svix's server.
    sdk(&gateway, "not-a-token").health().get().await.unwrap();
    for request in ["HEAD /api/v1/health", "GET /api/v1/health/ping", "HEAD /api/v1/health/ping"] {
        let raw = format!("{request} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let reply = tokio::task::spawn_blocking({
            let addr = gateway.addr;
            move || exchange(addr, raw.as_bytes())
        })
        .await
        .unwrap();
        assert_eq!(reply.status(), 204, "{request}: {reply:?}");
    }
}

#[tokio::test]
async fn a_wrong_token_is_authentication_failed_in_svix_shape() {
    let (_setup, gateway) = serve_api();
    let app = ApplicationIn::new("shop".to_owned());
    let (status, payload) =
        http_error(sdk(&gateway, "api-unknown-token-0123456789").application().create(app, None).await);
    assert_eq!(status, 401);
    assert_eq!(payload.map(|out| out.code), Some("authentication_failed".to_owned()));
    let (status, payload) = http_error(sdk(&gateway, "").application().list(None).await);
    assert_eq!((status, payload.map(|out| out.code)), (401, Some("authentication_failed".to_owned())));
}

#[tokio::test]
async fn a_role_below_the_request_is_forbidden_and_an_unknown_path_not_found() {
    let (_setup, gateway) = serve_api();
    let message = || MessageIn::new("user.signup".to_owned(), serde_json::json!({"id": 1}));
    // Publishing needs `publish`: a read token is refused before anything is looked up.
    let refused = sdk(&gateway, READ_TOKEN).message().create("app_1".to_owned(), message(), None).await;
    let (status, payload) = http_error(refused);
    assert_eq!((status, payload.map(|out| out.code)), (403, Some("insufficient_access".to_owned())));
    // Creating an application needs `admin`.
    let app = ApplicationIn::new("shop".to_owned());
    let (status, _) = http_error(sdk(&gateway, PUBLISH_TOKEN).application().create(app.clone(), None).await);
    assert_eq!(status, 403);
    // Allowed, but no resource is served yet: 404 in HttpErrorOut's shape.
    let (status, payload) = http_error(sdk(&gateway, ADMIN_TOKEN).application().create(app, None).await);
    assert_eq!((status, payload.map(|out| out.code)), (404, Some("not_found".to_owned())));
    let (status, payload) = http_error(sdk(&gateway, READ_TOKEN).application().list(None).await);
    assert_eq!((status, payload.map(|out| out.code)), (404, Some("not_found".to_owned())));
}
