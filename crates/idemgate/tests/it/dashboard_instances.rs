//! Two `idemgate serve` on one store, one PostgreSQL schema or one SQLite file: the
//! dashboard's sessions are in the store, so a session signed in on one instance is known
//! on the other, a sign-out on either ends it on both, and a reload that changes the admin
//! tokens on one ends every session on both. A session of a token the other instance does
//! not configure (a name added by the reload it has not had) is refused there.

use std::{
    net::SocketAddr,
    process::Command,
    time::{Duration, Instant},
};

use crate::{
    gateway_dashboard::{Answer, page, send},
    gateway_harness::{Gateway, Setup},
    outbound_api::Backend,
    postgres_instances::fresh_schema,
};

const OLD: &str = "ops-token-before-the-reload-0123";
const NEW: &str = "ops-token-after-the-reload-45678";
const AUDITOR: &str = "auditor-token-added-by-the-reload";

/// One source and the admin listener with `tokens` (`[admin.tokens.*]` tables).
fn config(tokens: &str) -> String {
    format!(
        "[sources.a]\nscheme = \"github\"\nsecrets = [\"env:A_SECRET\"]\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n{tokens}"
    )
}

fn ops(token: &str) -> String {
    format!("[admin.tokens.ops]\ntoken = \"{token}\"\nrole = \"operate\"\n")
}

/// The session id a sign-in with `token` on `admin` starts.
fn sign_in(admin: SocketAddr, token: &str) -> String {
    let form = [("Content-Type", "application/x-www-form-urlencoded".to_owned())];
    let answer = send(admin, "POST", "/admin/login", &form, &format!("token={token}"));
    assert_eq!(answer.status, 303, "{answer:?}");
    answer.session()
}

/// Whether `admin` serves its overview to `session` (or sends it to sign in).
fn signed_in(admin: SocketAddr, session: &str) -> bool {
    let answer = page(admin, session);
    match answer.status {
        200 => true,
        303 if answer.header("location") == Some("/admin/login") => false,
        _ => panic!("unexpected {answer:?}"),
    }
}

/// Signs `session` out on `admin`, as its own page's form does.
fn sign_out(admin: SocketAddr, session: &str) -> Answer {
    let csrf = page(admin, session).csrf();
    let headers = [
        ("Cookie", format!("idemgate_admin={session}")),
        ("Origin", format!("http://{admin}")),
        ("Sec-Fetch-Site", "same-origin".to_owned()),
        ("Content-Type", "application/x-www-form-urlencoded".to_owned()),
    ];
    send(admin, "POST", "/admin/logout", &headers, &format!("csrf={csrf}"))
}

/// Waits (bounded) until `done` holds.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn two_instances_share_the_dashboards_sessions(backend: Backend) {
    let setup = Setup::new(&config(&ops(OLD)));
    let url = (backend == Backend::Postgres).then(|| fresh_schema("dash_sessions"));
    let mut env = vec![("A_SECRET", "github-secret-0123456789")];
    if let Some(url) = &url {
        env.push(("IDEMGATE_STORE__URL", url.as_str()));
    }
    let mut gateways = [Gateway::start(&setup.config(), &env), Gateway::start(&setup.config(), &env)];
    let [a, b] = [gateways[0].admin_addr(), gateways[1].admin_addr()];

    // Signed in on A, known on B; signed out on B, refused on both.
    let first = sign_in(a, OLD);
    assert!(signed_in(b, &first), "a session of A works on B");
    let out = sign_out(b, &first);
    assert_eq!((out.status, out.header("location")), (303, Some("/admin/login")), "{out:?}");
    assert!(!signed_in(a, &first), "signed out on B, refused on A");
    assert!(!signed_in(b, &first));

    // Two sessions, one from each; then A reloads a new value of the same token (same
    // name, same role) and a token more. B does not reload.
    let (on_a, on_b) = (sign_in(a, OLD), sign_in(b, OLD));
    assert!([a, b].iter().all(|admin| signed_in(*admin, &on_a) && signed_in(*admin, &on_b)));
    setup.write_config(&config(&format!(
        "{}[admin.tokens.auditor]\ntoken = \"{AUDITOR}\"\nrole = \"read\"\n",
        ops(NEW)
    )));
    let hangup = Command::new("kill").args(["-HUP", &gateways[0].pid().to_string()]).status().unwrap();
    assert!(hangup.success());
    let form = [("Content-Type", "application/x-www-form-urlencoded".to_owned())];
    eventually("A takes the new token", || {
        send(a, "POST", "/admin/login", &form, &format!("token={NEW}")).status == 303
    });
    for (admin, name) in [(a, "A"), (b, "B")] {
        for session in [&on_a, &on_b] {
            eventually(&format!("{name} refuses a session of the old token"), || !signed_in(admin, session));
        }
    }
    assert_eq!(send(b, "POST", "/admin/login", &form, &format!("token={AUDITOR}")).status, 401, "B has not reloaded");

    // A session of the token added on A is A's alone while B runs without that token.
    let auditor = sign_in(a, AUDITOR);
    assert!(signed_in(a, &auditor));
    assert!(!signed_in(b, &auditor), "B does not configure the auditor's token");
    assert!(signed_in(a, &auditor), "B's refusal ended nothing");
}

#[test]
fn two_instances_on_one_postgres_schema_share_the_dashboards_sessions() {
    two_instances_share_the_dashboards_sessions(Backend::Postgres);
}

#[test]
fn two_instances_on_one_sqlite_file_share_the_dashboards_sessions() {
    two_instances_share_the_dashboards_sessions(Backend::Sqlite);
}
