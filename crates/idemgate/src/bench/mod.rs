//! `idemgate bench`: a load generator over real HTTP with keep-alive connections, printing
//! throughput, latency percentiles and outcome counts, and checking the exactly-once
//! property where the workload allows it.
//!
//! - `counter`: pre-signs N distinct `demo-webhook-v1` increments plus a share of
//!   redeliveries (same bytes, new delivery id and signature), shuffles them, and drives
//!   any server that speaks the counter contract; then checks that every event was
//!   answered `applied` exactly once.
//! - `api`: POSTs N requests to an API, with unique `Idempotency-Key`s, without keys, or
//!   as replays of keys sent in an unmeasured warm-up round.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use idemgate_client::WebhookSigner;
use idemgate_core::{UnixTime, scheme::Outgoing};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};

/// One prepared request.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Headers to send.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The event this request carries, for the exactly-once check.
    pub event: Option<String>,
}

/// What one request came to.
#[derive(Debug, Clone)]
struct Sample {
    latency: Duration,
    /// Open loop: how long after its due time the request actually left (the load
    /// generator's own lateness, which `latency` includes); zero in closed loop.
    late: Duration,
    outcome: String,
    event: Option<String>,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Report {
    /// Requests sent.
    pub requests: usize,
    /// Wall time of the measured run.
    pub elapsed: Duration,
    /// Latencies, sorted.
    latencies: Vec<Duration>,
    /// How late each request left after its due time (open loop), sorted.
    lateness: Vec<Duration>,
    /// Each request's time from leaving to its answer, sorted: the latency without the
    /// load generator's lateness (equal to the latency in closed loop).
    service: Vec<Duration>,
    /// Count per outcome (`applied`, `duplicate`, `201`, `error`, …).
    pub outcomes: BTreeMap<String, usize>,
    /// For the counter workload: whether every distinct event was applied exactly once.
    pub exactly_once: Option<bool>,
}

impl Report {
    /// Requests per second.
    #[must_use]
    pub fn throughput(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// The latency at quantile `q` (0.0 to 1.0), nearest rank.
    #[must_use]
    pub fn percentile(&self, q: f64) -> Duration {
        nearest_rank(&self.latencies, q)
    }

    /// How late the load generator sent, at quantile `q` (open loop; zero otherwise).
    #[must_use]
    pub fn lateness(&self, q: f64) -> Duration {
        nearest_rank(&self.lateness, q)
    }

    /// The time from sending to the answer, at quantile `q`.
    #[must_use]
    pub fn service(&self, q: f64) -> Duration {
        nearest_rank(&self.service, q)
    }

    /// The report as one JSON object.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
        json!({
            "requests": self.requests,
            "seconds": self.elapsed.as_secs_f64(),
            "throughput": (self.throughput() * 10.0).round() / 10.0,
            "p50_ms": ms(self.percentile(0.50)),
            "p90_ms": ms(self.percentile(0.90)),
            "p99_ms": ms(self.percentile(0.99)),
            "max_ms": ms(self.percentile(1.0)),
            "late_p50_ms": ms(self.lateness(0.50)),
            "late_p99_ms": ms(self.lateness(0.99)),
            "service_p50_ms": ms(self.service(0.50)),
            "service_p99_ms": ms(self.service(0.99)),
            "outcomes": self.outcomes,
            "exactly_once": self.exactly_once,
        })
    }

    /// The report for a person.
    #[must_use]
    pub fn to_text(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let outcomes: Vec<String> = self.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let mut text = format!(
            "requests    {} in {:.2} s = {:.0} req/s\nlatency ms  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}\noutcomes    {}\n",
            self.requests,
            self.elapsed.as_secs_f64(),
            self.throughput(),
            ms(self.percentile(0.50)),
            ms(self.percentile(0.90)),
            ms(self.percentile(0.99)),
            ms(self.percentile(1.0)),
            outcomes.join("  "),
        );
        if let Some(ok) = self.exactly_once {
            text.push_str(&format!(
                "check       every event applied exactly once: {}\n",
                if ok { "yes" } else { "NO" }
            ));
        }
        text
    }
}

/// `events` distinct increments and `events * redeliver` redeliveries, signed at `now`
/// with `signer` (the counter's `demo-webhook-v1`), shuffled by `seed`.
#[must_use]
pub fn counter_workload(
    signer: &WebhookSigner,
    events: usize,
    redeliver: f64,
    seed: u64,
    now: UnixTime,
) -> Vec<Prepared> {
    let increment = |id: &str, i: usize| format!(r#"{{"event_id":"{id}","kind":"increment","value":{}}}"#, i % 100 + 1);
    events_workload(signer, events, redeliver, seed, now, increment)
}

/// The same shape for a gateway source: `events` distinct webhook events plus
/// redeliveries (same identity and bytes, a fresh signature), signed at `now` with `signer`.
#[must_use]
pub fn webhook_workload(
    signer: &WebhookSigner,
    events: usize,
    redeliver: f64,
    seed: u64,
    now: UnixTime,
) -> Vec<Prepared> {
    let event = |id: &str, i: usize| format!(r#"{{"id":"{id}","event_id":"{id}","type":"bench.event","n":{i}}}"#);
    events_workload(signer, events, redeliver, seed, now, event)
}

fn events_workload(
    signer: &WebhookSigner,
    events: usize,
    redeliver: f64,
    seed: u64,
    now: UnixTime,
    body: impl Fn(&str, usize) -> String,
) -> Vec<Prepared> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let repeats = (events as f64 * redeliver.max(0.0)).round() as usize;
    let picks = (0..events).chain((0..repeats).map(|_| rng.usize(..events.max(1))));
    let mut prepared: Vec<Prepared> = picks
        .enumerate()
        .map(|(n, i)| {
            let identity = format!("evt-b{seed}-{i}");
            let body = body(&identity, i).into_bytes();
            let attempt = u32::try_from(n).unwrap_or(u32::MAX);
            let message = Outgoing { id: &identity, attempt, timestamp: now, body: &body };
            let mut headers: Vec<(String, String)> =
                signer.headers(&message).into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            headers.push(("content-type".to_owned(), "application/json".to_owned()));
            Prepared { headers, body, event: Some(identity) }
        })
        .collect();
    rng.shuffle(&mut prepared);
    prepared
}

/// `requests` order requests; with `keys`, each carries its own `Idempotency-Key`.
#[must_use]
pub fn api_workload(requests: usize, keys: bool, seed: u64) -> Vec<Prepared> {
    (0..requests)
        .map(|i| {
            let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
            if keys {
                headers.push(("idempotency-key".to_owned(), format!("bench-{seed}-{i}")));
            }
            Prepared { headers, body: format!(r#"{{"qty":{}}}"#, i % 9 + 1).into_bytes(), event: None }
        })
        .collect()
}

/// Sends `work` to `url` over `concurrency` keep-alive connections and reports.
pub async fn drive(
    url: &str,
    work: Vec<Prepared>,
    concurrency: usize,
    progress: bool,
    rate: Option<f64>,
) -> Result<Report, reqwest::Error> {
    let client =
        reqwest::Client::builder().pool_max_idle_per_host(concurrency).timeout(Duration::from_secs(30)).build()?;
    let work = Arc::new(work);
    let next = Arc::new(AtomicUsize::new(0));
    let bar = if progress { ProgressBar::new(work.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} requests").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    // Several comma-separated targets (instances behind one store) share the connections
    // round-robin, like a load balancer.
    let targets: Vec<&str> = url.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|i| {
            let target = targets.get(i % targets.len().max(1)).copied().unwrap_or(url).to_owned();
            let pace = Pace { started, rate: rate.filter(|r| *r > 0.0) };
            tokio::spawn(worker(client.clone(), target, Arc::clone(&work), Arc::clone(&next), bar.clone(), pace))
        })
        .collect();
    let mut samples = Vec::with_capacity(work.len());
    for handle in workers {
        samples.extend(handle.await.unwrap_or_default());
    }
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    Ok(report(samples, elapsed))
}

/// When requests are sent: as fast as the connections allow (closed loop), or request `i`
/// at `started + i / rate` whatever the answers (open loop).
#[derive(Debug, Clone, Copy)]
struct Pace {
    started: Instant,
    rate: Option<f64>,
}

async fn worker(
    client: reqwest::Client,
    url: String,
    work: Arc<Vec<Prepared>>,
    next: Arc<AtomicUsize>,
    bar: ProgressBar,
    pace: Pace,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = work.get(index) else { break };
        let mut request = client.post(&url).body(item.body.clone());
        for (name, value) in &item.headers {
            request = request.header(name, value);
        }
        // Open loop: latency counts from the time the request was due, so a request that
        // waited for a busy connection is charged its wait (no coordinated omission).
        let start = match pace.rate {
            Some(rate) => {
                let due = pace.started + Duration::from_secs_f64(index as f64 / rate);
                tokio::time::sleep_until(due.into()).await;
                due
            }
            None => Instant::now(),
        };
        let late = start.elapsed();
        let outcome = match request.send().await {
            Ok(response) => outcome(response).await,
            Err(_) => "error".to_owned(),
        };
        samples.push(Sample { latency: start.elapsed(), late, outcome, event: item.event.clone() });
        bar.inc(1);
    }
    samples
}

/// `applied`/`duplicate` from a counter answer's `status`, else the HTTP status.
async fn outcome(response: reqwest::Response) -> String {
    let status = response.status().as_u16();
    let replay = response.headers().contains_key("idempotency-replay");
    let body: Value = response.bytes().await.ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null);

    match body.get("status").and_then(Value::as_str) {
        Some(kind) if status == 200 || (status == 202 && kind == "accepted") => kind.to_owned(),
        _ if replay => format!("{status} replay"),
        _ => status.to_string(),
    }
}

fn report(samples: Vec<Sample>, elapsed: Duration) -> Report {
    let mut outcomes = BTreeMap::new();
    let mut applied: BTreeMap<&str, usize> = BTreeMap::new();
    let mut events = std::collections::BTreeSet::new();
    for sample in &samples {
        *outcomes.entry(sample.outcome.clone()).or_insert(0) += 1;
        if let Some(event) = &sample.event {
            events.insert(event.as_str());
            if sample.outcome == "applied" || sample.outcome == "accepted" {
                *applied.entry(event.as_str()).or_insert(0) += 1;
            }
        }
    }
    let exactly_once = (!events.is_empty()).then(|| events.iter().all(|e| applied.get(e) == Some(&1)));
    let mut latencies: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    latencies.sort_unstable();
    let mut lateness: Vec<Duration> = samples.iter().map(|s| s.late).collect();
    lateness.sort_unstable();
    let mut service: Vec<Duration> = samples.iter().map(|s| s.latency.saturating_sub(s.late)).collect();
    service.sort_unstable();
    Report { requests: samples.len(), elapsed, latencies, lateness, service, outcomes, exactly_once }
}

/// The value at quantile `q` (0.0 to 1.0) of `sorted`, nearest rank; zero when empty.
fn nearest_rank(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use idemgate_core::Secret;

    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples = (1..=100)
            .map(|ms| Sample {
                latency: Duration::from_millis(ms),
                late: Duration::ZERO,
                outcome: "applied".into(),
                event: None,
            })
            .collect();
        let report = report(samples, Duration::from_secs(1));
        assert_eq!(report.percentile(0.5), Duration::from_millis(50));
        assert_eq!(report.percentile(0.99), Duration::from_millis(99));
        assert_eq!(report.percentile(1.0), Duration::from_millis(100));
        assert!((report.throughput() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn the_counter_workload_repeats_events_with_the_same_bytes() {
        let signer = WebhookSigner::new(&idemgate_core::scheme::DemoV1::DEFAULT, Secret::new(vec![1; 32])).unwrap();
        let work = counter_workload(&signer, 100, 0.5, 7, UnixTime(1_700_000_000));
        assert_eq!(work.len(), 150);
        let distinct: std::collections::BTreeSet<_> = work.iter().map(|p| p.event.clone().unwrap()).collect();
        assert_eq!(distinct.len(), 100);
        let delivery_ids: std::collections::BTreeSet<_> = work.iter().map(|p| p.headers[0].1.clone()).collect();
        assert_eq!(delivery_ids.len(), 150, "every attempt has its own delivery id");
    }

    #[test]
    fn open_loop_lateness_is_reported_and_left_out_of_the_service_time() {
        let samples = (1..=10)
            .map(|n| Sample {
                latency: Duration::from_millis(10 * n),
                late: Duration::from_millis(n),
                outcome: "applied".into(),
                event: None,
            })
            .collect();
        let report = report(samples, Duration::from_secs(1));
        assert_eq!(report.percentile(1.0), Duration::from_millis(100));
        assert_eq!(report.lateness(1.0), Duration::from_millis(10));
        assert_eq!(report.service(1.0), Duration::from_millis(90));
        assert_eq!(report.service(0.5), Duration::from_millis(45));
    }

    #[test]
    fn exactly_once_fails_when_an_event_is_applied_twice_or_never() {
        let sample = |event: &str, outcome: &str| Sample {
            latency: Duration::ZERO,
            late: Duration::ZERO,
            outcome: outcome.into(),
            event: Some(event.into()),
        };
        let ok = report(vec![sample("a", "applied"), sample("a", "duplicate")], Duration::from_secs(1));
        assert_eq!(ok.exactly_once, Some(true));
        let twice = report(vec![sample("a", "applied"), sample("a", "applied")], Duration::from_secs(1));
        assert_eq!(twice.exactly_once, Some(false));
        let never = report(vec![sample("a", "503")], Duration::from_secs(1));
        assert_eq!(never.exactly_once, Some(false));
    }
}
