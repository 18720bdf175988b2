//! Entering the customer portal of a real `idemgate serve` (`docs/design/portal.md` §2), on
//! SQLite and PostgreSQL: the link `app-portal-access` answers opens the portal once; the
//! session is in the store, so it ends on the API's `logout` of the token it came with and
//! when the application is deleted; a post from elsewhere changes nothing; every answer
//! carries the portal's CSP and framing rule; the pages' stylesheet is served below
//! `/portal`.

use svix::models::{AppPortalAccessIn, ApplicationIn};

use crate::{
    outbound_api::{ADMIN_TOKEN, Backend, sdk, serve_with},
    portal_harness::{Customer, PUBLIC_URL, portal_api},
};

async fn a_link_opens_the_portal_once(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &portal_api());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    admin
        .application()
        .create(ApplicationIn { uid: Some("acme".into()), ..ApplicationIn::new("Acme".into()) }, None)
        .await
        .unwrap();
    let access =
        admin.authentication().app_portal_access("acme".to_owned(), AppPortalAccessIn::new(), None).await.unwrap();
    assert!(access.url.starts_with(&format!("{PUBLIC_URL}/portal/enter#")), "{}", access.url);

    let mut customer = Customer::new(&gateway);
    let entered = customer.open(&access.url).await;
    assert_eq!((entered.status, entered.location.as_deref()), (303, Some("/portal/endpoints")), "{}", entered.body);
    let cookie = entered.set_cookie.clone().unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/portal"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "plain http public URL: {cookie}");
    let home = customer.get("/portal/").await;
    assert_eq!((home.status, home.location.as_deref()), (303, Some("/portal/endpoints")));

    // The same link again, from another browser: used.
    let mut other = Customer::new(&gateway);
    let again = other.open(&access.url).await;
    assert_eq!((again.status, again.set_cookie), (401, None));
    assert!(again.body.contains("Ask for a new link"), "{}", again.body);
    assert_eq!(other.get("/portal/").await.status, 401, "no session without the cookie");
    // A made-up login, and a login from another origin: refused, nothing started.
    let mut forged = Customer::new(&gateway);
    assert_eq!(forged.open(&format!("{PUBLIC_URL}/portal/enter#{}", "ab".repeat(32))).await.status, 401);
    let fresh = crate::portal_harness::link(&gateway, "acme").await;
    let login = crate::portal_harness::login_of(&fresh);
    let body = format!("token={login}");
    let elsewhere =
        forged.send(reqwest::Method::POST, "/portal/enter", Some(body.clone()), Some("http://evil.test")).await;
    assert_eq!(elsewhere.status, 403);
    assert_eq!(
        forged.send(reqwest::Method::POST, "/portal/enter", Some(body), Some(PUBLIC_URL)).await.status,
        303,
        "the refused try did not use it up"
    );

    // Every answer's headers: the CSP, no framing, no caching.
    let headers = &home.headers;
    let csp = &headers["content-security-policy"];
    assert!(
        csp.contains("frame-ancestors 'none'")
            && csp.contains("form-action 'self'")
            && csp.contains("script-src 'self'")
            && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    // White-label: the brand's stylesheet carries the configured accent and the text
    // colour readable on it, and is served below /portal with a long cache.
    let endpoints = customer.get("/portal/endpoints").await;
    let sheets: Vec<&str> = endpoints
        .body
        .split("<link rel=\"stylesheet\" href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert_eq!(sheets.len(), 2, "{}", endpoints.body);
    assert!(sheets.iter().all(|path| path.starts_with("/portal/assets/")), "{sheets:?}");
    let brand = customer.get(sheets[1]).await;
    assert_eq!(brand.status, 200);
    assert!(
        brand.body.contains("--accent: #7fe0a0;") && brand.body.contains("--on-accent: #000000;"),
        "{}",
        brand.body
    );
    assert!(
        brand.headers["cache-control"].contains("immutable") || brand.headers["cache-control"].contains("max-age"),
        "{:?}",
        brand.headers
    );
    assert_eq!(customer.get(sheets[0]).await.status, 200);
    let landing = Customer::new(&gateway).get("/portal/enter").await;
    assert_eq!(landing.status, 200);
    assert!(
        landing.body.contains("<script src=\"/portal/enter.js\"></script>") && landing.body.contains("Acme"),
        "{}",
        landing.body
    );
    // The stylesheet the pages link is served below /portal: the public listener has no
    // /assets of its own.
    let sheet = landing.body.split("<link rel=\"stylesheet\" href=\"").nth(1).and_then(|rest| rest.split('"').next());
    let sheet = sheet.unwrap_or_else(|| panic!("no stylesheet: {}", landing.body)).to_owned();
    assert!(sheet.starts_with("/portal/"), "{sheet}");
    let css = Customer::new(&gateway).get(&sheet).await;
    assert_eq!((css.status, css.headers["content-type"].as_str()), (200, "text/css; charset=utf-8"));
    assert!(css.body.contains("--accent"), "{}", css.body);
}

async fn the_session_ends_with_its_token_and_its_application(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &portal_api());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    for uid in ["one", "two"] {
        admin
            .application()
            .create(ApplicationIn { uid: Some(uid.into()), ..ApplicationIn::new(uid.into()) }, None)
            .await
            .unwrap();
    }
    let access =
        admin.authentication().app_portal_access("one".to_owned(), AppPortalAccessIn::new(), None).await.unwrap();
    let mut by_token = Customer::new(&gateway);
    assert_eq!(by_token.open(&access.url).await.status, 303);
    let mut two = Customer::enter(&gateway, "two").await;
    assert_eq!(by_token.get("/portal/").await.status, 303, "signed in");

    // The API's logout of the token the link came with ends the portal's session.
    sdk(&gateway, &access.token).authentication().logout(None).await.unwrap();
    assert_eq!(by_token.get("/portal/").await.status, 401);
    assert_eq!(two.get("/portal/").await.status, 303, "another application's session is untouched");

    // Deleting the application ends its sessions.
    admin.application().delete("two".to_owned()).await.unwrap();
    assert_eq!(two.get("/portal/").await.status, 401);

    // The portal's own sign-out: only with the session's CSRF token, then gone from the
    // store (the cookie alone no longer opens a page) and the cookie cleared.
    admin
        .application()
        .create(ApplicationIn { uid: Some("three".into()), ..ApplicationIn::new("three".into()) }, None)
        .await
        .unwrap();
    let mut three = Customer::enter(&gateway, "three").await;
    assert_eq!(three.get("/portal/endpoints").await.status, 200);
    let forged =
        three.send(reqwest::Method::POST, "/portal/sign-out", Some("csrf=nope".into()), Some(PUBLIC_URL)).await;
    assert_eq!(forged.status, 403, "a sign-out without the session's token is refused");
    assert_eq!(three.get("/portal/").await.status, 303, "and changed nothing");
    let out = three.post("/portal/sign-out", &[]).await;
    assert_eq!((out.status, out.location.as_deref()), (303, Some("/portal/signed-out")));
    assert!(out.set_cookie.as_deref().is_some_and(|c| c.contains("Max-Age=0")), "{:?}", out.set_cookie);
    assert_eq!(three.get("/portal/endpoints").await.status, 401, "the session is gone from the store");
}

#[tokio::test]
async fn a_link_opens_the_portal_once_on_sqlite() {
    a_link_opens_the_portal_once(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_link_opens_the_portal_once_on_postgres() {
    a_link_opens_the_portal_once(Backend::Postgres).await;
}

#[tokio::test]
async fn the_session_ends_with_its_token_and_its_application_on_sqlite() {
    the_session_ends_with_its_token_and_its_application(Backend::Sqlite).await;
}

#[tokio::test]
async fn the_session_ends_with_its_token_and_its_application_on_postgres() {
    the_session_ends_with_its_token_and_its_application(Backend::Postgres).await;
}
