//! `/metrics` after a known sequence of deliveries: the counters say exactly what happened.

use crate::{
    gateway_harness::{Setup, Signer, body},
    harness::unix_now,
};

/// The value of the sample of `name` carrying every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|line| line.starts_with(name) && !line.starts_with('#'))
        .filter(|line| line[name.len()..].starts_with(['{', ' ']))
        .find(|line| labels.iter().all(|label| line.contains(label)))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

#[test]
fn the_counters_match_a_known_sequence_of_deliveries() {
    let key = Signer::Standard(vec![1; 32]);
    let setup = Setup::new(&format!(
        "[worker]\nenabled = false\n[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{:?}]\ndestinations = [\"app\"]\n\
         [destinations.app]\nurl = \"http://127.0.0.1:9/app\"\n",
        key.config_secret()
    ));
    let gateway = setup.start();
    let send = |signer: &Signer, id: &str, kind: &str| {
        let event = body(id, kind);
        gateway.post("hooks", &signer.headers(id, &event, unix_now()), &event).status()
    };
    assert_eq!(send(&key, "m1", "a"), 202);
    assert_eq!(send(&key, "m2", "a"), 202);
    assert_eq!(send(&key, "m1", "a"), 200);
    assert_eq!(send(&key, "m1", "b"), 409);
    let forger = Signer::Standard(vec![2; 32]);
    assert_eq!(send(&forger, "m3", "a"), 401);
    assert_eq!(send(&forger, "m4", "a"), 401);

    let scrape = gateway.get_text("/metrics");
    let deliveries = |outcome: &str| {
        sample(&scrape, "idemgate_deliveries_total", &["source=\"hooks\"", &format!("outcome=\"{outcome}\"")])
    };
    assert_eq!(deliveries("applied"), Some(2.0), "{scrape}");
    assert_eq!(deliveries("duplicate"), Some(1.0));
    assert_eq!(deliveries("conflict"), Some(1.0));
    assert_eq!(deliveries("rejected"), Some(2.0));
    assert_eq!(sample(&scrape, "idemgate_rejections_total", &["reason=\"signature_mismatch\""]), Some(2.0));
    assert_eq!(sample(&scrape, "idemgate_jobs", &["state=\"pending\""]), Some(2.0));
    assert_eq!(sample(&scrape, "idemgate_jobs", &["state=\"succeeded\""]), Some(0.0));
    assert!(sample(&scrape, "idemgate_commit_batch_size_count", &[]).is_some_and(|n| n >= 3.0), "{scrape}");
    assert!(sample(&scrape, "idemgate_oldest_waiting_job_seconds", &[]).is_some());
    assert!(!scrape.contains("whsec_"), "no secret in the metrics");
}
