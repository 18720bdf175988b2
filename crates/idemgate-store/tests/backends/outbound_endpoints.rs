//! Endpoints of the outbound API: uid unique within the application, lists by id, every
//! change moves the outbound version and shows in the changed-since read, rotation keeps
//! ten old secrets, disabling holds the endpoint's jobs from the claim, deleting finishes
//! its waiting jobs dead.

use std::time::Duration;

use idemgate_core::outbound::sealing::{KeyId, SealedSecret};
use idemgate_store::outbound::{
    ListQuery, Lookup, Order, OutboundError, Resource,
    endpoint::{
        Endpoint, EndpointIn, EndpointPatch, FIRST_SECRET_SEQ, Headers, MAX_OLD_SECRETS, NewEndpoint, NewSecret,
    },
    new_endpoint_id,
};

use crate::{
    T0, TestStore, accept_at, key, ms, on_both, ops,
    outbound_applications::{NOW, app_in},
};

/// Bytes standing for a secret sealed as number `seq` (the store never opens them).
pub fn sealed(seq: i64) -> SealedSecret {
    SealedSecret { key_id: KeyId::from_bytes([7; 8]), sealed: vec![u8::try_from(seq % 200).unwrap(); 40] }
}

pub fn new_endpoint(url: &str, uid: Option<&str>, at_ms: i64) -> NewEndpoint {
    NewEndpoint {
        id: new_endpoint_id(at_ms).unwrap(),
        endpoint: EndpointIn { url: url.to_owned(), uid: uid.map(str::to_owned), ..EndpointIn::default() },
        headers: Headers::new(),
        secret: sealed(FIRST_SECRET_SEQ),
    }
}

/// An application `uid` and one endpoint of it.
pub async fn app_with_endpoint(t: &TestStore, uid: &str) -> (Lookup, Endpoint) {
    t.create_application(app_in(uid, Some(uid)), &ops(), NOW).await.unwrap();
    let app = Lookup::application(uid);
    let endpoint =
        t.create_endpoint(app.clone(), new_endpoint("https://example.com/hook", None, NOW), &ops(), NOW).await.unwrap();
    (app, endpoint)
}

on_both! {
    async fn an_endpoint_uid_is_unique_within_its_application(t: TestStore) {
        let (app, _) = app_with_endpoint(&t, "acme").await;
        let first = t.create_endpoint(app.clone(), new_endpoint("https://a.example/", Some("main"), NOW), &ops(), NOW).await.unwrap();
        let before = t.outbound_version().await.unwrap();
        let taken = t.create_endpoint(app.clone(), new_endpoint("https://b.example/", Some("main"), NOW), &ops(), NOW).await.unwrap_err();
        assert!(matches!(taken, OutboundError::UidTaken(Resource::Endpoint)), "{taken}");
        assert_eq!(t.outbound_version().await.unwrap(), before, "a refused change writes nothing, its version bump neither");
        let page = t.list_endpoints(app.clone(), ListQuery::first(10)).await.unwrap();
        assert_eq!(page.data.len(), 2, "the refused endpoint was not stored");
        t.create_application(app_in("other", Some("other")), &ops(), NOW).await.unwrap();
        t.create_endpoint(Lookup::application("other"), new_endpoint("https://c.example/", Some("main"), NOW), &ops(), NOW)
            .await
            .unwrap();

        let found = t.endpoint(app.clone(), Lookup::endpoint("main")).await.unwrap().unwrap();
        assert_eq!(found, first);
        assert_eq!(t.endpoint(app.clone(), Lookup::endpoint(&first.id)).await.unwrap(), Some(first.clone()));
        let elsewhere = t.endpoint(Lookup::application("other"), Lookup::endpoint(&first.id)).await.unwrap();
        assert_eq!(elsewhere, None, "an endpoint is found only in its application");
        let no_app = t.endpoint(Lookup::application("nobody"), Lookup::endpoint("main")).await;
        assert!(matches!(no_app, Err(OutboundError::NotFound(Resource::Application))));
    }

    async fn put_creates_then_replaces_and_patch_and_headers_change_what_they_name(t: TestStore) {
        let (app, _) = app_with_endpoint(&t, "acme").await;
        let created = t.upsert_endpoint(app.clone(), Lookup::endpoint("by-put"), new_endpoint("https://a.example/", None, NOW), &ops(), NOW)
            .await
            .unwrap();
        assert!(created.created);
        assert_eq!(created.value.uid.as_deref(), Some("by-put"));
        let mut replacement = new_endpoint("https://b.example/", Some("by-put"), NOW);
        replacement.endpoint.event_types = Some(vec!["user.signup".to_owned()]);
        replacement.endpoint.channels = Some(vec!["eu".to_owned()]);
        let replaced = t.upsert_endpoint(app.clone(), Lookup::endpoint("by-put"), replacement, &ops(), NOW + 1).await.unwrap();
        assert!(!replaced.created);
        assert_eq!((replaced.value.id.as_str(), replaced.value.url.as_str()), (created.value.id.as_str(), "https://b.example/"));
        assert_eq!(replaced.value.event_types, Some(vec!["user.signup".to_owned()]));

        let patch = EndpointPatch { description: Some("main".to_owned()), channels: Some(None), ..EndpointPatch::default() };
        let patched = t.patch_endpoint(app.clone(), Lookup::endpoint("by-put"), patch, &ops(), NOW + 2).await.unwrap();
        assert_eq!((patched.description.as_str(), patched.channels.as_ref()), ("main", None));
        assert_eq!(patched.event_types, replaced.value.event_types, "what the patch does not name stays");

        let headers: Headers = [("x-a".to_owned(), "1".to_owned()), ("x-b".to_owned(), "2".to_owned())].into();
        t.set_endpoint_headers(app.clone(), Lookup::endpoint("by-put"), headers, &ops(), NOW).await.unwrap();
        let patch = [("x-a".to_owned(), None), ("x-c".to_owned(), Some("3".to_owned()))].into();
        let changed = t.patch_endpoint_headers(app.clone(), Lookup::endpoint("by-put"), patch, &ops(), NOW).await.unwrap();
        let expected: Headers = [("x-b".to_owned(), "2".to_owned()), ("x-c".to_owned(), "3".to_owned())].into();
        assert_eq!(changed.headers, expected);
        let read = t.endpoint(app.clone(), Lookup::endpoint("by-put")).await.unwrap().unwrap();
        assert_eq!(read.headers, expected);
    }

    async fn a_list_of_endpoints_walks_with_limit_one_to_the_end(t: TestStore) {
        t.create_application(app_in("acme", Some("acme")), &ops(), NOW).await.unwrap();
        let app = Lookup::application("acme");
        let mut ids = Vec::new();
        for n in 0..3 {
            let at = NOW + n * 1000;
            ids.push(t.create_endpoint(app.clone(), new_endpoint("https://a.example/", None, at), &ops(), at).await.unwrap().id);
        }
        for order in [Order::Ascending, Order::Descending] {
            let mut query = ListQuery { limit: 1, iterator: None, order };
            let mut walked = Vec::new();
            loop {
                let page = t.list_endpoints(app.clone(), query.clone()).await.unwrap();
                walked.extend(page.data.into_iter().map(|ep| ep.id));
                if page.done {
                    break;
                }
                assert!(walked.len() < 10, "the walk ends");
                query.iterator = page.iterator;
            }
            let mut expected = ids.clone();
            if order == Order::Descending {
                expected.reverse();
            }
            assert_eq!(walked, expected, "{order:?}");
        }
    }

    async fn every_change_moves_the_version_and_shows_in_the_changed_since_read(t: TestStore) {
        let start = t.outbound_version().await.unwrap();
        let (app, endpoint) = app_with_endpoint(&t, "acme").await;
        let mut seen = t.outbound_version().await.unwrap();
        assert_eq!(seen, start + 2, "the application and the endpoint each moved it");
        let changes = t.endpoints_changed_since(start, NOW).await.unwrap();
        assert_eq!(changes.version, seen);
        assert_eq!(changes.endpoints.len(), 1);
        assert!(changes.endpoints[0].live);
        assert_eq!(changes.endpoints[0].secrets.len(), 1);
        assert_eq!(changes.endpoints[0].endpoint.version, seen);

        let ep = Lookup::endpoint(&endpoint.id);
        let patch = EndpointPatch { url: Some("https://b.example/".to_owned()), ..EndpointPatch::default() };
        t.patch_endpoint(app.clone(), ep.clone(), patch, &ops(), NOW).await.unwrap();
        t.set_endpoint_headers(app.clone(), ep.clone(), Headers::new(), &ops(), NOW).await.unwrap();
        t.rotate_endpoint_secret(app.clone(), ep.clone(), NewSecret { seq: 2, sealed: sealed(2) }, 1000, &ops(), NOW).await.unwrap();
        let after = t.outbound_version().await.unwrap();
        assert_eq!(after, seen + 3, "a patch, a header change and a rotation each moved it");
        let changes = t.endpoints_changed_since(seen, NOW).await.unwrap();
        assert_eq!(changes.endpoints.len(), 1);
        assert_eq!(changes.endpoints[0].endpoint.url, "https://b.example/");
        assert_eq!(changes.endpoints[0].secrets.iter().map(|s| s.seq).collect::<Vec<_>>(), [2, 1]);
        seen = after;
        assert!(t.endpoints_changed_since(seen, NOW).await.unwrap().endpoints.is_empty(), "nothing since");

        t.delete_endpoint(app.clone(), ep.clone(), &ops(), NOW).await.unwrap();
        let changes = t.endpoints_changed_since(seen, NOW).await.unwrap();
        assert_eq!((changes.version, changes.endpoints.len()), (seen + 1, 1));
        assert!(!changes.endpoints[0].live, "a deleted endpoint is read as not live, so a cache drops it");
        assert_eq!(t.endpoint(app, ep).await.unwrap(), None);
    }

    async fn rotation_keeps_the_current_secret_and_ten_old_ones(t: TestStore) {
        let (app, endpoint) = app_with_endpoint(&t, "acme").await;
        let ep = Lookup::endpoint(&endpoint.id);
        for seq in 2..=13 {
            let secret = NewSecret { seq, sealed: sealed(seq) };
            t.rotate_endpoint_secret(app.clone(), ep.clone(), secret, 86_400_000, &ops(), NOW + seq).await.unwrap();
        }
        let secrets = t.endpoint_secrets(app.clone(), ep.clone(), NOW + 20).await.unwrap();
        assert_eq!(secrets.len(), 1 + MAX_OLD_SECRETS);
        assert_eq!(secrets.iter().map(|s| s.seq).collect::<Vec<_>>(), (3..=13).rev().collect::<Vec<_>>());
        assert_eq!((secrets[0].expires_at_ms, secrets[0].sealed.clone()), (None, sealed(13)));
        assert_eq!(secrets[1].expires_at_ms, Some(NOW + 13 + 86_400_000), "the previous one expires after the grace");

        let stale = t.rotate_endpoint_secret(app.clone(), ep.clone(), NewSecret { seq: 13, sealed: sealed(13) }, 0, &ops(), NOW).await;
        assert!(matches!(stale, Err(OutboundError::StaleSecret)), "a seq already used is refused");
        let later = t.endpoint_secrets(app.clone(), ep.clone(), NOW + 13 + 86_400_000).await.unwrap();
        assert_eq!(later.iter().map(|s| s.seq).collect::<Vec<_>>(), [13], "after the grace only the current one signs");
        t.rotate_endpoint_secret(app.clone(), ep.clone(), NewSecret { seq: 14, sealed: sealed(14) }, 0, &ops(), NOW + 90_000_000).await.unwrap();
        let now = t.endpoint_secrets(app, ep, NOW + 90_000_000).await.unwrap();
        assert_eq!(now.iter().map(|s| s.seq).collect::<Vec<_>>(), [14], "no grace: the old one stops at once");
    }

    async fn a_disabled_endpoint_holds_its_jobs_from_the_claim_until_enabled(t: TestStore) {
        let (app, endpoint) = app_with_endpoint(&t, "acme").await;
        accept_at(&t, "e1", &[&endpoint.id], T0).await;
        let ep = Lookup::endpoint(&endpoint.id);
        let disable = EndpointPatch { disabled: Some(true), ..EndpointPatch::default() };
        t.patch_endpoint(app.clone(), ep.clone(), disable, &ops(), ms(T0)).await.unwrap();
        let claimed = t.claim_jobs(ms(T0) + 10_000, Duration::from_secs(30), 10, Vec::new()).await.unwrap();
        assert!(claimed.is_empty(), "{claimed:?}");
        let enable = EndpointPatch { disabled: Some(false), ..EndpointPatch::default() };
        t.patch_endpoint(app, ep, enable, &ops(), ms(T0)).await.unwrap();
        let claimed = t.claim_jobs(ms(T0) + 10_000, Duration::from_secs(30), 10, Vec::new()).await.unwrap();
        assert_eq!(claimed.iter().map(|job| job.destination.as_str()).collect::<Vec<_>>(), [endpoint.id.as_str()]);
    }

    async fn deleting_an_endpoint_finishes_its_waiting_jobs_dead(t: TestStore) {
        let (app, endpoint) = app_with_endpoint(&t, "acme").await;
        accept_at(&t, "e1", &[&endpoint.id, "other"], T0).await;
        t.delete_endpoint(app.clone(), Lookup::endpoint(&endpoint.id), &ops(), ms(T0)).await.unwrap();
        let jobs = t.jobs(key("e1")).await.unwrap();
        let summary: Vec<_> = jobs.iter().map(|j| (j.destination.as_str(), j.state.as_str(), j.last_error.as_deref())).collect();
        assert_eq!(summary, [(endpoint.id.as_str(), "dead", Some("endpoint deleted")), ("other", "pending", None)]);
        let again = t.delete_endpoint(app, Lookup::endpoint(&endpoint.id), &ops(), ms(T0)).await;
        assert!(matches!(again, Err(OutboundError::NotFound(Resource::Endpoint))));
    }
}
