//! The admin listener (API and dashboard) on an injected clock: time moves without sleeping.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use idemgate_clock::{ManualClock, UnixTime};
use idemgate_core::Secret;
use idemgate_http::{
    RejectionCounts, ServeOptions,
    admin::{self, AdminState},
    serve,
    session::Sessions,
};
use idemgate_store::{SqliteStore, StoreOptions};

use crate::exchange;

const TOKEN: &str = "admin-token-for-tests";

async fn start_admin(clock: Arc<ManualClock>, lifetime: Duration) -> (SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("a.sqlite3"), StoreOptions::default()).unwrap());
    let state = AdminState {
        store: store.into(),
        token: idemgate_http::current::AdminToken::new(Secret::new(TOKEN.as_bytes().to_vec())),
        rejections: Arc::new(RejectionCounts::default()),
        sessions: Arc::new(Sessions::new(lifetime)),
        tls: false,
        body_timeout: Duration::from_secs(5),
        clock,
        destinations: idemgate_http::current::DestinationNames::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, admin::router(state), ServeOptions::default(), std::future::pending()));
    (addr, dir)
}

async fn sign_in(addr: SocketAddr) -> String {
    let form = format!("token={TOKEN}");
    let answer = exchange(
        addr,
        format!(
            "POST /admin/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ),
    )
    .await;
    let cookie = answer.lines().find_map(|line| line.strip_prefix("set-cookie: ")).expect("a session cookie");
    cookie.split(';').next().unwrap().to_owned()
}

async fn dashboard(addr: SocketAddr, cookie: &str) -> String {
    exchange(addr, format!("GET /admin/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: {cookie}\r\n\r\n")).await
}

#[tokio::test]
async fn a_dashboard_session_ends_when_the_injected_clock_passes_its_lifetime() {
    let clock = Arc::new(ManualClock::at(UnixTime(1_800_000_000)));
    let (addr, _dir) = start_admin(Arc::clone(&clock), Duration::from_secs(60)).await;
    let cookie = sign_in(addr).await;

    clock.advance(59);
    let page = dashboard(addr, &cookie).await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("id=\"sign-out\""), "{page}");

    clock.advance(1);
    let page = dashboard(addr, &cookie).await;
    assert!(page.starts_with("HTTP/1.1 303"), "{page}");
    assert!(page.contains("location: /admin/login"), "{page}");
}
