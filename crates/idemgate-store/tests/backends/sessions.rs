//! Signed-in sessions in the store: a portal login issued beside an application token is
//! entered once (even by two instances at once) into a portal session of that application;
//! a session lives until its sliding expiry, which moves on only once half its lifetime is
//! used; revoking the token or deleting the application ends its sessions and unused
//! logins, and no other application's; dashboard sessions carry their token's name and
//! role and are ended one by one or all at once.

use idemgate_store::{
    outbound::{
        Lookup,
        app_token::{DEFAULT_LIFETIME_MS, NewAppToken},
        application::Deletion,
    },
    session::{LOGIN_LIFETIME_MS, NewPortalLogin, NewSession, PORTAL_LIFETIME_MS, Session, SessionKind},
};

use crate::{
    TestStore, on_both, ops,
    outbound_applications::{NOW, app_in},
};

/// How long the dashboard sessions here last: one hour.
const DASHBOARD_LIFETIME_MS: i64 = 3_600_000;

/// The application token `[token; 32]` issued at `NOW` for its default lifetime, with the
/// portal login `[login; 32]` beside it, usable until `NOW + LOGIN_LIFETIME_MS`.
fn token_with_login(token: u8, login: u8) -> NewAppToken {
    NewAppToken {
        digest: [token; 32],
        expires_at_ms: NOW + DEFAULT_LIFETIME_MS,
        login: Some(NewPortalLogin { digest: [login; 32], expires_at_ms: NOW + LOGIN_LIFETIME_MS }),
    }
}

/// The CSRF token the session `[session; 32]` is started with here.
fn csrf(session: u8) -> String {
    format!("csrf-{session:02x}")
}

/// A portal session `[session; 32]` to enter with a login.
fn portal(session: u8) -> NewSession {
    NewSession {
        digest: [session; 32],
        csrf: csrf(session),
        lifetime_ms: PORTAL_LIFETIME_MS,
        name: String::new(),
        role: String::new(),
    }
}

/// A dashboard session `[session; 32]` of the admin token `name` with `role`.
fn dashboard(session: u8, name: &str, role: &str) -> NewSession {
    NewSession {
        digest: [session; 32],
        csrf: csrf(session),
        lifetime_ms: DASHBOARD_LIFETIME_MS,
        name: name.to_owned(),
        role: role.to_owned(),
    }
}

/// The portal session `[session; 32]` of the application `app_id`, entered at `at_ms`.
fn portal_session(app_id: &str, session: u8, at_ms: i64) -> Session {
    Session {
        kind: SessionKind::Portal,
        app_id: Some(app_id.to_owned()),
        name: format!("app:{app_id}"),
        role: String::new(),
        csrf: csrf(session),
        expires_at_ms: at_ms + PORTAL_LIFETIME_MS,
    }
}

/// Creates the application `name`; its id.
async fn application(t: &TestStore, name: &str) -> String {
    t.create_application(app_in(name, None), &ops(), NOW).await.unwrap().id
}

/// Issues the application `app_id` the token `[token; 32]` with the login `[login; 32]`.
async fn issue(t: &TestStore, app_id: &str, token: u8, login: u8) {
    let issued = t.issue_app_token(Lookup::Id(app_id.to_owned()), token_with_login(token, login), &ops(), NOW).await;
    assert_eq!(issued.unwrap(), app_id);
}

/// Enters the portal with the login `[login; 32]` into the session `[session; 32]` at
/// `at_ms`; asserts it was let in.
async fn enter(t: &TestStore, login: u8, session: u8, at_ms: i64) -> Session {
    let entered = t.enter_portal([login; 32], portal(session), at_ms).await.unwrap();
    entered.unwrap_or_else(|| panic!("the login {login:#x} was refused at {at_ms}"))
}

on_both! {
    async fn a_portal_login_enters_once_into_a_session_of_its_application(t: TestStore) {
        let app_id = application(&t, "shop").await;
        issue(&t, &app_id, 0x11, 0x21).await;
        let expected = portal_session(&app_id, 0x31, NOW + 1);
        assert_eq!(enter(&t, 0x21, 0x31, NOW + 1).await, expected);

        assert_eq!(t.enter_portal([0x21; 32], portal(0x32), NOW + 2).await.unwrap(), None, "a login is used once");
        assert_eq!(t.session([0x31; 32], NOW + 2).await.unwrap(), Some(expected));
        assert_eq!(t.session([0x32; 32], NOW + 2).await.unwrap(), None, "a refused entry starts no session");
        assert_eq!(t.enter_portal([0x22; 32], portal(0x33), NOW + 2).await.unwrap(), None, "an unknown login");
        assert_eq!(t.enter_portal([0x11; 32], portal(0x34), NOW + 2).await.unwrap(), None, "the token is no login");
        assert_eq!(t.app_token([0x11; 32], NOW + 2).await.unwrap().unwrap().app_id, app_id, "the token still works");
    }

    async fn two_entries_at_once_with_one_login_let_exactly_one_in(t: TestStore) {
        let app_id = application(&t, "shop").await;
        for round in 0..10_u8 {
            let (token, login, first, second) = (0x10 + round, 0x40 + round, 0x70 + round, 0xa0 + round);
            issue(&t, &app_id, token, login).await;
            let (a, b) = tokio::join!(
                t.enter_portal([login; 32], portal(first), NOW + 1),
                t.enter_portal([login; 32], portal(second), NOW + 1),
            );
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_eq!(usize::from(a.is_some()) + usize::from(b.is_some()), 1, "round {round}: {a:?} / {b:?}");
            let (a, b) =
                (t.session([first; 32], NOW + 2).await.unwrap(), t.session([second; 32], NOW + 2).await.unwrap());
            assert_eq!(usize::from(a.is_some()) + usize::from(b.is_some()), 1, "round {round}: {a:?} / {b:?}");
        }
    }

    async fn an_expired_login_is_refused_and_a_session_slides_only_once_half_its_lifetime_is_used(t: TestStore) {
        let app_id = application(&t, "shop").await;
        for (token, login) in [(0x11, 0x21), (0x12, 0x22), (0x13, 0x23)] {
            issue(&t, &app_id, token, login).await;
        }
        let login_expiry = NOW + LOGIN_LIFETIME_MS;
        assert_eq!(t.enter_portal([0x21; 32], portal(0x31), login_expiry).await.unwrap(), None, "expired at its expiry");
        assert_eq!(t.session([0x31; 32], login_expiry).await.unwrap(), None);

        let start = login_expiry - 1;
        let used = enter(&t, 0x22, 0x32, start).await;
        assert_eq!(enter(&t, 0x23, 0x33, start).await, portal_session(&app_id, 0x33, start));
        let first_expiry = start + PORTAL_LIFETIME_MS;
        assert_eq!(used.expires_at_ms, first_expiry);

        let half = start + PORTAL_LIFETIME_MS / 2;
        let found = t.session([0x32; 32], half).await.unwrap().unwrap();
        assert_eq!(found.expires_at_ms, first_expiry, "half its lifetime is left: not moved");
        let found = t.session([0x32; 32], half + 1).await.unwrap().unwrap();
        let renewed = half + 1 + PORTAL_LIFETIME_MS;
        assert_eq!(found, Session { expires_at_ms: renewed, ..used });

        assert_eq!(t.session([0x33; 32], first_expiry).await.unwrap(), None, "the unused one ends at its expiry");
        assert_eq!(t.session([0x33; 32], first_expiry + 1).await.unwrap(), None);
        let found = t.session([0x32; 32], first_expiry).await.unwrap().unwrap();
        assert_eq!(found.expires_at_ms, renewed, "the used one lives past its first expiry");
        assert_eq!(t.session([0x32; 32], renewed).await.unwrap(), None, "and ends at its moved expiry");
    }

    async fn revoking_the_token_or_deleting_the_application_ends_its_sessions_and_logins(t: TestStore) {
        let shop = application(&t, "shop").await;
        let other = application(&t, "other").await;
        let gone = application(&t, "gone").await;
        for (app_id, token, login) in
            [(&shop, 0x11, 0x21), (&shop, 0x12, 0x22), (&shop, 0x13, 0x23), (&shop, 0x14, 0x24), (&other, 0x15, 0x25), (&gone, 0x16, 0x26)]
        {
            issue(&t, app_id, token, login).await;
        }
        for (login, session) in [(0x21, 0x31), (0x23, 0x33), (0x25, 0x35), (0x26, 0x36)] {
            enter(&t, login, session, NOW + 1).await;
        }
        let other_session = portal_session(&other, 0x35, NOW + 1);

        let by = idemgate_store::audit::Actor::app(&shop);
        assert!(t.revoke_app_token([0x11; 32], &by, NOW + 2).await.unwrap());
        assert!(t.revoke_app_token([0x12; 32], &by, NOW + 2).await.unwrap());
        assert_eq!(t.session([0x31; 32], NOW + 3).await.unwrap(), None, "the revoked token's session");
        assert_eq!(t.enter_portal([0x22; 32], portal(0x32), NOW + 3).await.unwrap(), None, "the revoked token's login");
        assert_eq!(t.session([0x32; 32], NOW + 3).await.unwrap(), None);
        assert_eq!(t.session([0x33; 32], NOW + 3).await.unwrap(), Some(portal_session(&shop, 0x33, NOW + 1)));

        t.delete_application(Lookup::Id(shop.clone()), Deletion::Soft, &ops(), NOW + 4).await.unwrap();
        assert_eq!(t.session([0x33; 32], NOW + 5).await.unwrap(), None, "the deleted application's session");
        assert_eq!(t.enter_portal([0x24; 32], portal(0x34), NOW + 5).await.unwrap(), None, "its unused login");
        assert_eq!(t.session([0x34; 32], NOW + 5).await.unwrap(), None);

        t.delete_application(Lookup::Id(gone.clone()), Deletion::Hard, &ops(), NOW + 6).await.unwrap();
        assert_eq!(t.session([0x36; 32], NOW + 7).await.unwrap(), None, "a hard-deleted application's session");

        assert_eq!(t.session([0x35; 32], NOW + 7).await.unwrap(), Some(other_session), "another application's");
    }

    async fn dashboard_sessions_carry_their_name_and_role_and_end_one_or_all_without_the_portals(t: TestStore) {
        let app_id = application(&t, "shop").await;
        issue(&t, &app_id, 0x11, 0x21).await;
        let customer = enter(&t, 0x21, 0x31, NOW).await;
        for (session, name, role) in [(0x41, "ops", "admin"), (0x42, "viewer", "read"), (0x43, "oncall", "operate")] {
            t.start_session(dashboard(session, name, role), NOW).await.unwrap();
        }
        let operator = Session {
            kind: SessionKind::Dashboard,
            app_id: None,
            name: "ops".to_owned(),
            role: "admin".to_owned(),
            csrf: csrf(0x41),
            expires_at_ms: NOW + DASHBOARD_LIFETIME_MS,
        };
        assert_eq!(t.session([0x41; 32], NOW + 1).await.unwrap(), Some(operator));
        let viewer = t.session([0x42; 32], NOW + 1).await.unwrap().unwrap();
        assert_eq!((viewer.name.as_str(), viewer.role.as_str()), ("viewer", "read"));

        assert!(t.end_session([0x41; 32]).await.unwrap());
        assert!(!t.end_session([0x41; 32]).await.unwrap(), "ended once");
        assert_eq!(t.session([0x41; 32], NOW + 2).await.unwrap(), None);
        assert!(t.session([0x42; 32], NOW + 2).await.unwrap().is_some(), "only that one ended");

        assert_eq!(t.end_sessions(SessionKind::Dashboard).await.unwrap(), 2);
        assert_eq!(t.session([0x42; 32], NOW + 3).await.unwrap(), None);
        assert_eq!(t.session([0x43; 32], NOW + 3).await.unwrap(), None);
        assert_eq!(t.session([0x31; 32], NOW + 3).await.unwrap(), Some(customer), "a portal session is no dashboard's");
        assert_eq!(t.end_sessions(SessionKind::Dashboard).await.unwrap(), 0);

        assert!(t.end_session([0x31; 32]).await.unwrap(), "sign-out in the portal");
        assert_eq!(t.session([0x31; 32], NOW + 4).await.unwrap(), None);
    }
}
