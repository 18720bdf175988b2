//! Applications of the outbound API: a uid is unique among live applications, a list
//! walks by id in both orders, `PUT` creates or replaces, `PATCH` changes what it names,
//! and a deleted application is no longer served.

use idemgate_store::outbound::{
    ListQuery, Lookup, Order, OutboundError, Resource,
    application::{ApplicationIn, ApplicationPatch, Deletion},
};

use crate::{TestStore, on_both, ops};

/// The time the outbound tests run at, in milliseconds.
pub const NOW: i64 = 1_700_000_000_000;

pub fn app_in(name: &str, uid: Option<&str>) -> ApplicationIn {
    ApplicationIn { name: name.to_owned(), uid: uid.map(str::to_owned), ..ApplicationIn::default() }
}

on_both! {
    async fn a_uid_is_unique_among_live_applications(t: TestStore) {
        let first = t.create_application(app_in("one", Some("acme")), &ops(), NOW).await.unwrap();
        assert!(first.id.starts_with("app_"), "{}", first.id);
        let taken = t.create_application(app_in("two", Some("acme")), &ops(), NOW).await.unwrap_err();
        assert!(matches!(taken, OutboundError::UidTaken(Resource::Application)), "{taken}");
        let other = t.create_application(app_in("two", Some("other")), &ops(), NOW).await.unwrap();
        let patch = ApplicationPatch { uid: Some(Some("acme".to_owned())), ..ApplicationPatch::default() };
        let taken = t.patch_application(Lookup::Id(other.id.clone()), patch, &ops(), NOW).await.unwrap_err();
        assert!(matches!(taken, OutboundError::UidTaken(Resource::Application)), "{taken}");

        t.delete_application(Lookup::application("acme"), Deletion::Soft, &ops(), NOW + 1).await.unwrap();
        let again = t.create_application(app_in("three", Some("acme")), &ops(), NOW + 2).await.unwrap();
        assert_ne!(again.id, first.id, "a deleted application's uid is free again");
    }

    async fn an_application_is_found_by_id_or_uid_and_put_creates_then_replaces(t: TestStore) {
        let mut input = app_in("shop", Some("shop-1"));
        input.metadata.insert("tier".to_owned(), "gold".to_owned());
        input.throttle_rate = Some(7);
        let app = t.create_application(input.clone(), &ops(), NOW).await.unwrap();
        assert_eq!(t.application(Lookup::application(&app.id)).await.unwrap().as_ref(), Some(&app));
        assert_eq!(t.application(Lookup::application("shop-1")).await.unwrap().as_ref(), Some(&app));
        assert_eq!((app.metadata.get("tier").map(String::as_str), app.throttle_rate), (Some("gold"), Some(7)));
        assert_eq!(t.application(Lookup::application("nobody")).await.unwrap(), None);

        let created = t.upsert_application(Lookup::application("by-put"), app_in("put", None), &ops(), NOW).await.unwrap();
        assert!(created.created);
        assert_eq!(created.value.uid.as_deref(), Some("by-put"), "the path's uid names the new application");
        let replaced =
            t.upsert_application(Lookup::application("by-put"), app_in("put again", Some("by-put")), &ops(), NOW + 5).await.unwrap();
        assert!(!replaced.created);
        assert_eq!((replaced.value.id.as_str(), replaced.value.name.as_str()), (created.value.id.as_str(), "put again"));
        assert_eq!(replaced.value.updated_at_ms, NOW + 5);

        let patch = ApplicationPatch { name: Some("renamed".to_owned()), throttle_rate: Some(None), ..ApplicationPatch::default() };
        let patched = t.patch_application(Lookup::application("shop-1"), patch, &ops(), NOW + 9).await.unwrap();
        assert_eq!((patched.name.as_str(), patched.throttle_rate, patched.uid.as_deref()), ("renamed", None, Some("shop-1")));
        assert_eq!(patched.metadata, app.metadata, "what the patch does not name stays");
        let missing = t.patch_application(Lookup::application("nobody"), ApplicationPatch::default(), &ops(), NOW).await;
        assert!(matches!(missing, Err(OutboundError::NotFound(Resource::Application))));
    }

    async fn a_deleted_application_is_not_served(t: TestStore) {
        let soft = t.create_application(app_in("soft", Some("soft")), &ops(), NOW).await.unwrap();
        let hard = t.create_application(app_in("hard", None), &ops(), NOW).await.unwrap();
        t.delete_application(Lookup::Id(soft.id.clone()), Deletion::Soft, &ops(), NOW).await.unwrap();
        t.delete_application(Lookup::Id(hard.id.clone()), Deletion::Hard, &ops(), NOW).await.unwrap();
        assert_eq!(t.application(Lookup::Id(soft.id.clone())).await.unwrap(), None);
        assert_eq!(t.application(Lookup::Id(hard.id.clone())).await.unwrap(), None);
        assert!(t.list_applications(ListQuery::first(10)).await.unwrap().data.is_empty());
        let again = t.delete_application(Lookup::Id(soft.id), Deletion::Soft, &ops(), NOW).await;
        assert!(matches!(again, Err(OutboundError::NotFound(Resource::Application))));
    }

    async fn a_list_of_applications_walks_with_limit_one_to_the_end_both_ways(t: TestStore) {
        let mut ids = Vec::new();
        for n in 0..4 {
            ids.push(t.create_application(app_in(&format!("app {n}"), None), &ops(), NOW + n * 1000).await.unwrap().id);
        }
        for order in [Order::Ascending, Order::Descending] {
            let mut query = ListQuery { limit: 1, iterator: None, order };
            let mut walked = Vec::new();
            loop {
                let page = t.list_applications(query.clone()).await.unwrap();
                assert!(page.data.len() <= 1);
                walked.extend(page.data.iter().map(|app| app.id.clone()));
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
        let second = t.list_applications(ListQuery { limit: 2, iterator: Some(ids[1].clone()), order: Order::Ascending }).await.unwrap();
        let back = t.list_applications(ListQuery { limit: 1, iterator: second.prev_iterator, order: Order::Ascending }).await.unwrap();
        assert_eq!(back.data.iter().map(|app| app.id.clone()).collect::<Vec<_>>(), [ids[1].clone()], "a previous page");
    }
}
