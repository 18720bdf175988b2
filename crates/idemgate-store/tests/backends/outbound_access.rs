//! Application tokens and the audit log of the outbound API's changes: a token is kept as
//! its digest, found while its application is live and until its expiry, gone once
//! revoked; every change through the API is one audit record under its actor, written in
//! the change's own transaction (a refused change leaves none).

use idemgate_store::{
    audit::{Action, Actor, AuditFilter, AuditRecord},
    outbound::{
        Lookup, OutboundError, Resource,
        app_token::{DEFAULT_LIFETIME_MS, NewAppToken},
        application::{ApplicationPatch, Deletion},
        endpoint::{EndpointPatch, Headers, NewSecret},
        event_type::{EventTypeDeletion, EventTypeIn},
    },
};

use crate::{
    TestStore, on_both, ops,
    outbound_applications::{NOW, app_in},
    outbound_endpoints::{new_endpoint, sealed},
};

fn token(byte: u8, expires_at_ms: i64) -> NewAppToken {
    NewAppToken { digest: [byte; 32], expires_at_ms, login: None }
}

/// The log's (token, action, target), oldest first.
async fn log(t: &TestStore) -> Vec<(String, String, String)> {
    let mut records: Vec<AuditRecord> = t.audit_log(AuditFilter::default()).await.unwrap();
    records.reverse();
    records.into_iter().map(|r| (r.token, r.action, r.target)).collect()
}

fn entry(token: &str, action: Action, target: &str) -> (String, String, String) {
    (token.to_owned(), action.as_str().to_owned(), target.to_owned())
}

on_both! {
    async fn an_app_token_is_found_by_its_digest_until_its_expiry_and_not_after_a_revoke(t: TestStore) {
        let app = t.create_application(app_in("shop", Some("shop")), &ops(), NOW).await.unwrap();
        let expiry = NOW + DEFAULT_LIFETIME_MS;
        let app_id = t.issue_app_token(Lookup::application("shop"), token(1, expiry), &ops(), NOW).await.unwrap();
        assert_eq!(app_id, app.id);
        let found = t.app_token([1; 32], expiry - 1).await.unwrap().unwrap();
        assert_eq!((found.app_id.as_str(), found.app_uid.as_deref()), (app.id.as_str(), Some("shop")));
        assert_eq!((found.issued_by.as_str(), found.created_at_ms, found.expires_at_ms), ("ops", NOW, expiry));
        assert_eq!(t.app_token([1; 32], expiry).await.unwrap(), None, "expired at its expiry");
        assert_eq!(t.app_token([2; 32], NOW).await.unwrap(), None, "another digest");

        let missing = t.issue_app_token(Lookup::application("nobody"), token(3, expiry), &ops(), NOW).await;
        assert!(matches!(missing, Err(OutboundError::NotFound(Resource::Application))), "{missing:?}");

        let by = Actor::app(&app.id);
        assert!(t.revoke_app_token([1; 32], &by, NOW + 1).await.unwrap());
        assert_eq!(t.app_token([1; 32], NOW + 2).await.unwrap(), None);
        assert!(!t.revoke_app_token([1; 32], &by, NOW + 3).await.unwrap(), "revoked once");
        let target = format!("app_token {}", app.id);
        assert_eq!(
            log(&t).await[1..],
            [entry("ops", Action::AppTokenIssue, &target), entry(&format!("app:{}", app.id), Action::AppTokenRevoke, &target)]
        );
    }

    async fn a_deleted_application_takes_its_tokens_and_a_new_uid_is_seen(t: TestStore) {
        let app = t.create_application(app_in("shop", None), &ops(), NOW).await.unwrap();
        let lookup = Lookup::Id(app.id.clone());
        t.issue_app_token(lookup.clone(), token(1, NOW + 10_000), &ops(), NOW).await.unwrap();
        assert_eq!(t.app_token([1; 32], NOW).await.unwrap().unwrap().app_uid, None);
        let patch = ApplicationPatch { uid: Some(Some("renamed".to_owned())), ..ApplicationPatch::default() };
        t.patch_application(lookup.clone(), patch, &ops(), NOW).await.unwrap();
        assert_eq!(t.app_token([1; 32], NOW).await.unwrap().unwrap().app_uid.as_deref(), Some("renamed"));
        t.delete_application(lookup, Deletion::Soft, &ops(), NOW).await.unwrap();
        assert_eq!(t.app_token([1; 32], NOW).await.unwrap(), None);
    }

    async fn every_change_is_one_record_under_its_actor_and_a_refused_one_none(t: TestStore) {
        let app = t.create_application(app_in("shop", Some("shop")), &ops(), NOW).await.unwrap();
        let refused = t.create_application(app_in("again", Some("shop")), &ops(), NOW).await;
        assert!(matches!(refused, Err(OutboundError::UidTaken(_))), "{refused:?}");
        let shop = Lookup::application("shop");
        let portal = Actor::app(&app.id);
        let ep = t.create_endpoint(shop.clone(), new_endpoint("https://a.example/h", None, NOW), &portal, NOW).await.unwrap();
        let ep_lookup = Lookup::Id(ep.id.clone());
        let patch = EndpointPatch { description: Some("d".to_owned()), ..EndpointPatch::default() };
        t.patch_endpoint(shop.clone(), ep_lookup.clone(), patch, &portal, NOW).await.unwrap();
        t.set_endpoint_headers(shop.clone(), ep_lookup.clone(), Headers::new(), &portal, NOW).await.unwrap();
        let rotated = NewSecret { seq: 2, sealed: sealed(2) };
        t.rotate_endpoint_secret(shop.clone(), ep_lookup.clone(), rotated, 1_000, &portal, NOW).await.unwrap();
        let stale = NewSecret { seq: 2, sealed: sealed(2) };
        let stale = t.rotate_endpoint_secret(shop.clone(), ep_lookup.clone(), stale, 1_000, &portal, NOW).await;
        assert!(matches!(stale, Err(OutboundError::StaleSecret)), "{stale:?}");
        t.delete_endpoint(shop.clone(), ep_lookup, &portal, NOW).await.unwrap();
        let described = EventTypeIn { description: "d".to_owned(), ..EventTypeIn::default() };
        t.create_event_type("a.b".to_owned(), described.clone(), &ops(), NOW).await.unwrap();
        t.upsert_event_type("a.b".to_owned(), described, &ops(), NOW).await.unwrap();
        t.delete_event_type("a.b".to_owned(), EventTypeDeletion::Archive, &ops(), NOW).await.unwrap();
        t.delete_event_type("a.b".to_owned(), EventTypeDeletion::Expunge, &ops(), NOW).await.unwrap();
        let gone = t.delete_event_type("a.b".to_owned(), EventTypeDeletion::Expunge, &ops(), NOW).await;
        assert!(matches!(gone, Err(OutboundError::NotFound(Resource::EventType))), "{gone:?}");
        t.upsert_application(shop.clone(), app_in("shop 2", Some("shop")), &ops(), NOW).await.unwrap();
        t.delete_application(shop, Deletion::Soft, &ops(), NOW).await.unwrap();

        let (application, endpoint) = (format!("application {}", app.id), format!("endpoint {}/{}", app.id, ep.id));
        let by_portal = format!("app:{}", app.id);
        assert_eq!(
            log(&t).await,
            [
                entry("ops", Action::ApplicationCreate, &application),
                entry(&by_portal, Action::EndpointCreate, &endpoint),
                entry(&by_portal, Action::EndpointUpdate, &endpoint),
                entry(&by_portal, Action::EndpointHeaders, &endpoint),
                entry(&by_portal, Action::EndpointSecretRotate, &endpoint),
                entry(&by_portal, Action::EndpointDelete, &endpoint),
                entry("ops", Action::EventTypeCreate, "event_type a.b"),
                entry("ops", Action::EventTypeUpdate, "event_type a.b"),
                entry("ops", Action::EventTypeArchive, "event_type a.b"),
                entry("ops", Action::EventTypeDelete, "event_type a.b"),
                entry("ops", Action::ApplicationUpdate, &application),
                entry("ops", Action::ApplicationDelete, &application),
            ]
        );
        let records = t.audit_log(AuditFilter::default()).await.unwrap();
        assert!(records.iter().all(|r| r.affected == 1 && r.at.0 == NOW / 1000), "{records:?}");
    }
}
