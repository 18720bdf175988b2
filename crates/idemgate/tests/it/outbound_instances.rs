//! Three `idemgate serve` on one PostgreSQL schema, driven by Svix's SDK, each publishing
//! and delivering: an endpoint disabled through one instance and another deleted through a
//! second are honoured by all three (`docs/design/outbound-api.md` §3.3, §3.5). A message
//! accepted after the change gets no job for either endpoint, whichever instance accepted
//! it, so nothing reaches them; the jobs waiting from before the change wait while the
//! endpoint is disabled and are delivered once it is enabled again, and those of the
//! deleted endpoint are dead, "endpoint deleted", never sent.

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use idemgate_testkit::{Destination, Received, Step};
use serde_json::json;
use svix::{
    api::Svix,
    models::{ApplicationIn, EndpointIn, EndpointPatch, MessageIn},
};

use crate::{
    outbound_api::{ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, sdk, serve_instances},
    postgres_instances::query,
};

/// Every instance's worker polls often, so a change is seen soon.
const FAST_WORKER: &str = "[worker]\npoll_interval = \"50ms\"\n";

/// Messages published before the change, and after it.
const BEFORE: usize = 12;
const AFTER: usize = 12;

/// How long the two changing endpoints ask to be left alone after each failed first
/// attempt (`Retry-After`): the jobs of the messages from before the change are still
/// waiting when it comes, however slow the machine.
const RETRY_AFTER_SECS: u64 = 8;

/// Publishes message `n` through `publisher`; its id.
async fn publish(publisher: &Svix, n: usize) -> String {
    let message = MessageIn::new("order.paid".to_owned(), json!({"order": n}));
    publisher.message().create("shop".to_owned(), message, None).await.unwrap().id
}

/// Waits until `sink` has received `count` requests, in a blocking thread; what it has.
async fn received(sink: &Destination, count: usize) -> Vec<Received> {
    let waiting = sink.clone();
    tokio::task::spawn_blocking(move || {
        waiting.wait_until("the endpoint's deliveries", |got| got.len() >= count);
        waiting.received()
    })
    .await
    .unwrap()
}

fn ids(received: &[Received]) -> Vec<String> {
    received.iter().map(|got| got.header("webhook-id").to_owned()).collect()
}

/// The jobs of endpoint `endpoint` as (message id, state, attempts, last error), read
/// from the store.
async fn jobs_of(url: &str, endpoint: &str) -> Vec<(String, String, String, String)> {
    let sql = format!(
        "SELECT m.id, j.state, j.attempts, coalesce(j.last_error, '') FROM jobs j \
         JOIN messages m ON m.event_row = j.event_id WHERE j.destination = '{endpoint}' ORDER BY m.id"
    );
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || query(&url, &sql))
        .await
        .unwrap()
        .into_iter()
        .map(|row| (row[0].clone(), row[1].clone(), row[2].clone(), row[3].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_on_postgres_honour_a_disable_and_a_delete_made_through_any_of_them() {
    let (_setup, instances, url) = serve_instances(Backend::Postgres, &format!("{API}{FAST_WORKER}"), 3);
    let url = url.unwrap();
    let [a, b, c] = [&instances[0], &instances[1], &instances[2]];
    // The endpoints that will change refuse the first attempt of every message from before
    // the change, asking for a pause, and answer 200 afterwards; the third always answers.
    let refusing = vec![Step::RetryAfter(503, RETRY_AFTER_SECS); BEFORE];
    let (disabled, deleted, steady) =
        (Destination::start(&refusing), Destination::start(&refusing), Destination::start(&[]));

    // Application and endpoints through A.
    let admin = sdk(a, ADMIN_TOKEN);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let mut endpoints = Vec::new();
    for (uid, sink) in [("one", &disabled), ("two", &deleted), ("steady", &steady)] {
        let input = EndpointIn { uid: Some(uid.to_owned()), ..EndpointIn::new(sink.url()) };
        endpoints.push(admin.endpoint().create("shop".to_owned(), input, None).await.unwrap().id);
    }
    let (one, two) = (endpoints[0].clone(), endpoints[1].clone());

    // Before the change, through B and C: every endpoint sees every message once (the two
    // changing ones refuse it and its job waits).
    let [pa, pb, pc] = [a, b, c].map(|instance| sdk(instance, PUBLISH_TOKEN));
    let mut before = BTreeSet::new();
    for n in 0..BEFORE {
        before.insert(publish(if n % 2 == 0 { &pb } else { &pc }, n).await);
    }
    for sink in [&disabled, &deleted, &steady] {
        assert_eq!(ids(&received(sink, BEFORE).await).into_iter().collect::<BTreeSet<_>>(), before);
    }
    let refused = [&disabled, &deleted].map(|sink| sink.received().iter().map(|got| got.at).max().unwrap());
    let retries_due = refused.into_iter().max().unwrap() + Duration::from_secs(RETRY_AFTER_SECS);

    // The change: endpoint one disabled through A, endpoint two deleted through C.
    let patch = EndpointPatch { disabled: Some(true), ..EndpointPatch::new() };
    admin.endpoint().patch("shop".to_owned(), one.clone(), patch).await.unwrap();
    sdk(c, ADMIN_TOKEN).endpoint().delete("shop".to_owned(), two.clone()).await.unwrap();
    assert!(Instant::now() < retries_due, "the change came before any retry was due");

    // After it, through all three: only the steady endpoint gets them.
    let mut after = BTreeSet::new();
    for n in BEFORE..BEFORE + AFTER {
        after.insert(publish([&pa, &pb, &pc][n % 3], n).await);
    }
    let steady_ids: BTreeSet<String> = ids(&received(&steady, BEFORE + AFTER).await).into_iter().collect();
    assert_eq!(steady_ids, before.union(&after).cloned().collect());
    // Past the time the waiting jobs' retries were due, and a good many polls of every
    // instance more: nothing more reached the changed endpoints.
    tokio::time::sleep_until((retries_due + Duration::from_secs(1)).into()).await;
    assert_eq!(disabled.received().len(), BEFORE, "a disabled endpoint is sent nothing");
    assert_eq!(deleted.received().len(), BEFORE, "a deleted endpoint is sent nothing");
    let jobs = jobs_of(&url, &one).await;
    assert_eq!(jobs.iter().map(|job| job.0.clone()).collect::<BTreeSet<_>>(), before, "no job after the disable");
    for (msg, state, attempts, _) in &jobs {
        assert_eq!((state.as_str(), attempts.as_str()), ("retrying", "1"), "{msg} waits while disabled");
    }
    let jobs = jobs_of(&url, &two).await;
    assert_eq!(jobs.iter().map(|job| job.0.clone()).collect::<BTreeSet<_>>(), before, "no job after the delete");
    for (msg, state, attempts, error) in &jobs {
        assert_eq!((state.as_str(), attempts.as_str()), ("dead", "1"), "{msg} ends with its endpoint");
        assert!(error.contains("endpoint deleted"), "{msg}: {error}");
    }

    // Enabled again through B: the jobs from before the change resume and are delivered,
    // and still nothing accepted while it was disabled.
    let patch = EndpointPatch { disabled: Some(false), ..EndpointPatch::new() };
    sdk(b, ADMIN_TOKEN).endpoint().patch("shop".to_owned(), one.clone(), patch).await.unwrap();
    let delivered = ids(&received(&disabled, 2 * BEFORE).await[BEFORE..]);
    assert_eq!(delivered.iter().cloned().collect::<BTreeSet<_>>(), before);
    let settled = Instant::now() + Duration::from_secs(20);
    while jobs_of(&url, &one).await.iter().any(|job| job.1 != "succeeded") {
        assert!(Instant::now() < settled, "endpoint one's jobs did not all succeed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(disabled.received().len(), 2 * BEFORE, "each waiting message delivered once, nothing else");
    assert_eq!(deleted.received().len(), BEFORE);
}
