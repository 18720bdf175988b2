//! Event types of the outbound API: named, created once, listed by name (archived ones
//! on request), replaced, patched, archived by a delete unless it expunges.

use idemgate_store::outbound::{
    ListQuery, Order, OutboundError, Resource,
    event_type::{EventTypeDeletion, EventTypeIn, EventTypePatch},
};

use crate::{TestStore, on_both, ops, outbound_applications::NOW};

fn described(description: &str) -> EventTypeIn {
    EventTypeIn { description: description.to_owned(), ..EventTypeIn::default() }
}

on_both! {
    async fn an_event_type_is_created_once_and_put_creates_then_replaces(t: TestStore) {
        let mut input = described("a user signed up");
        input.schemas = Some(r#"{"1":{"type":"object"}}"#.to_owned());
        let created = t.create_event_type("user.signup".to_owned(), input.clone(), &ops(), NOW).await.unwrap();
        assert_eq!(t.event_type("user.signup".to_owned()).await.unwrap(), Some(created.clone()));
        let exists = t.create_event_type("user.signup".to_owned(), input, &ops(), NOW).await.unwrap_err();
        assert!(matches!(exists, OutboundError::EventTypeExists), "{exists}");

        let replaced = t.upsert_event_type("user.signup".to_owned(), described("replaced"), &ops(), NOW + 1).await.unwrap();
        assert!(!replaced.created);
        assert_eq!((replaced.value.description.as_str(), replaced.value.schemas.as_deref()), ("replaced", None));
        assert_eq!((replaced.value.created_at_ms, replaced.value.updated_at_ms), (NOW, NOW + 1));
        let new = t.upsert_event_type("user.left".to_owned(), described("gone"), &ops(), NOW).await.unwrap();
        assert!(new.created);

        let patch = EventTypePatch { deprecated: Some(true), ..EventTypePatch::default() };
        let patched = t.patch_event_type("user.left".to_owned(), patch, &ops(), NOW + 2).await.unwrap();
        assert_eq!((patched.deprecated, patched.description.as_str()), (true, "gone"));
        let missing = t.patch_event_type("nope".to_owned(), EventTypePatch::default(), &ops(), NOW).await;
        assert!(matches!(missing, Err(OutboundError::NotFound(Resource::EventType))));
    }

    async fn a_delete_archives_unless_it_expunges_and_lists_hide_the_archived(t: TestStore) {
        for name in ["a.one", "b.two", "c.three"] {
            t.create_event_type(name.to_owned(), described(name), &ops(), NOW).await.unwrap();
        }
        t.delete_event_type("b.two".to_owned(), EventTypeDeletion::Archive, &ops(), NOW + 1).await.unwrap();
        assert!(t.event_type("b.two".to_owned()).await.unwrap().unwrap().archived);
        let names = |page: idemgate_store::outbound::Page<idemgate_store::outbound::event_type::EventType>| {
            page.data.into_iter().map(|t| t.name).collect::<Vec<_>>()
        };
        assert_eq!(names(t.list_event_types(ListQuery::first(10), false).await.unwrap()), ["a.one", "c.three"]);
        assert_eq!(names(t.list_event_types(ListQuery::first(10), true).await.unwrap()), ["a.one", "b.two", "c.three"]);

        let mut query = ListQuery { limit: 1, iterator: None, order: Order::Descending };
        let mut walked = Vec::new();
        loop {
            let page = t.list_event_types(query.clone(), true).await.unwrap();
            walked.extend(page.data.iter().map(|t| t.name.clone()));
            if page.done {
                break;
            }
            query.iterator = page.iterator;
        }
        assert_eq!(walked, ["c.three", "b.two", "a.one"]);

        t.delete_event_type("b.two".to_owned(), EventTypeDeletion::Expunge, &ops(), NOW + 2).await.unwrap();
        assert_eq!(t.event_type("b.two".to_owned()).await.unwrap(), None);
        let again = t.delete_event_type("b.two".to_owned(), EventTypeDeletion::Archive, &ops(), NOW).await;
        assert!(matches!(again, Err(OutboundError::NotFound(Resource::EventType))));
    }
}
