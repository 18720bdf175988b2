//! A customer in the portal of a real `idemgate serve`, as a browser would be, without one:
//! the link `app-portal-access` answers, entered by posting its fragment; the session
//! cookie; every form posted from the portal's origin with the session's CSRF token (read
//! from the pages, as a browser's form carries it). `[api] public_url` is
//! [`PUBLIC_URL`], an origin of a TLS-terminating proxy in front, as in production; the
//! requests go to the gateway's own address and say that origin.

use std::collections::HashMap;

use svix::{api::Svix, models::AppPortalAccessIn};

use crate::{
    gateway_harness::Gateway,
    outbound_api::{ADMIN_TOKEN, API, sdk},
};

/// The portal's public base URL in these tests.
pub(crate) const PUBLIC_URL: &str = "http://portal.test";

/// [`API`] with the portal served at [`PUBLIC_URL`], branded "Acme" in a light green
/// (text on it is then drawn black).
pub(crate) fn portal_api() -> String {
    format!("{API}public_url = \"{PUBLIC_URL}\"\n[api.portal]\nname = \"Acme\"\naccent = \"#7FE0A0\"\n")
}

/// One answer of the portal: its status, `Location`, `Set-Cookie` and body.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    pub(crate) set_cookie: Option<String>,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: String,
}

/// A new portal link for the application `app` (id or uid), issued with the admin token.
pub(crate) async fn link(gateway: &Gateway, app: &str) -> String {
    let admin: Svix = sdk(gateway, ADMIN_TOKEN);
    admin.authentication().app_portal_access(app.to_owned(), AppPortalAccessIn::new(), None).await.unwrap().url
}

/// The login in a portal link (what follows `#`).
pub(crate) fn login_of(link: &str) -> String {
    let (base, login) = link.split_once('#').unwrap();
    assert_eq!(base, format!("{PUBLIC_URL}/portal/enter"), "{link}");
    login.to_owned()
}

/// A customer of the portal of `gateway`, signed in or not.
pub(crate) struct Customer {
    base: String,
    client: reqwest::Client,
    /// The session cookie (`idemgate_portal=…`), once entered.
    pub(crate) cookie: Option<String>,
    /// The CSRF token the last signed-in page carried.
    pub(crate) csrf: Option<String>,
}

impl Customer {
    /// A browser without a session.
    pub(crate) fn new(gateway: &Gateway) -> Self {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Self { base: format!("http://{}", gateway.addr), client, cookie: None, csrf: None }
    }

    /// Opens a new link of the application `app`: signed in, or panics.
    pub(crate) async fn enter(gateway: &Gateway, app: &str) -> Self {
        let mut customer = Self::new(gateway);
        let page = customer.open(&link(gateway, app).await).await;
        assert_eq!((page.status, page.location.as_deref()), (303, Some("/portal/endpoints")), "{}", page.body);
        customer
    }

    /// Posts the login of `link` as its landing page's script does; keeps the cookie it
    /// sets.
    pub(crate) async fn open(&mut self, link: &str) -> Page {
        let login = login_of(link);
        let body = serde_urlencoded::to_string([("token", login.as_str())]).unwrap();
        let page = self.send(reqwest::Method::POST, "/portal/enter", Some(body), Some(PUBLIC_URL)).await;
        if let Some(cookie) = &page.set_cookie {
            self.cookie = Some(cookie.split(';').next().unwrap().to_owned());
        }
        page
    }

    /// `GET path` with the session cookie; keeps the CSRF token of the page.
    pub(crate) async fn get(&mut self, path: &str) -> Page {
        let page = self.send(reqwest::Method::GET, path, None, None).await;
        if let Some(csrf) = csrf_in(&page.body) {
            self.csrf = Some(csrf);
        }
        page
    }

    /// Posts the form `fields` to `path` as the portal's own page does: from its origin,
    /// with the session's CSRF token (read from `/portal/endpoints` first if no page was
    /// read yet).
    pub(crate) async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        if self.csrf.is_none() {
            self.get("/portal/endpoints").await;
        }
        let csrf = self.csrf.clone().unwrap_or_default();
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        let body = serde_urlencoded::to_string(&all).unwrap();
        self.send(reqwest::Method::POST, path, Some(body), Some(PUBLIC_URL)).await
    }

    /// One request as given: `body` a URL-encoded form, `origin` its `Origin` header.
    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<String>,
        origin: Option<&str>,
    ) -> Page {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/x-www-form-urlencoded").body(body);
        }
        let response = request.send().await.unwrap();
        let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
        let (location, set_cookie) = (header("location"), header("set-cookie"));
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let status = response.status().as_u16();
        Page { status, location, set_cookie, headers, body: response.text().await.unwrap() }
    }
}

/// The CSRF token of a page's forms.
pub(crate) fn csrf_in(body: &str) -> Option<String> {
    let at = body.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    Some(body[at..].split('"').next()?.to_owned())
}
