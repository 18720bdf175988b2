//! The load generator behind `idemgate bench`, apart from the gateway it measures: requests
//! prepared before the run, sent over real HTTP with keep-alive connections, and a report of
//! throughput, latency percentiles and outcome counts that checks the exactly-once property
//! where the workload allows it. The binary turns its command line into a workload and
//! [`Options`], calls [`drive`] and prints the [`Report`].
//!
//! - `counter`: pre-signs N distinct `demo-webhook-v1` increments plus a share of
//!   redeliveries (same bytes, new delivery id and signature), shuffles them, and drives
//!   any server that speaks the counter contract; then checks that every event was
//!   answered `applied` exactly once.
//! - `api`: POSTs N requests to an API, with unique `Idempotency-Key`s, without keys, or
//!   as replays of keys sent in an unmeasured warm-up round.
//! - `outbound`: publishes N messages to one application of the outbound API
//!   (`POST /api/v1/app/{app}/msg`), each with its own `idempotency-key`, a share of them
//!   sent again later with the same key and body; then checks that every key was answered
//!   `202` once and replayed otherwise.

mod connection;
pub mod cpu;

use std::{
    borrow::Cow,
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
use tokio::sync::Semaphore;

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
    outcome: Cow<'static, str>,
    /// Which work item it was.
    index: usize,
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
    /// The server's CPU time (user + system) over the run, when its process was named.
    pub server_cpu: Option<Duration>,
    /// The same, by thread name (the runtime's workers, the SQLite writer, …).
    pub server_threads: BTreeMap<String, Duration>,
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

    /// The server's CPU time per request, in microseconds, when its process was named.
    #[must_use]
    pub fn server_cpu_per_request_us(&self) -> Option<f64> {
        self.server_cpu.map(|cpu| self.per_request_us(cpu))
    }

    /// The server's CPU time per request by thread name, in microseconds.
    #[must_use]
    pub fn server_threads_per_request_us(&self) -> BTreeMap<&str, f64> {
        self.server_threads.iter().map(|(name, cpu)| (name.as_str(), self.per_request_us(*cpu))).collect()
    }

    fn per_request_us(&self, cpu: Duration) -> f64 {
        cpu.as_secs_f64() * 1e6 / self.requests.max(1) as f64
    }

    /// The report as one JSON object.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
        let tenths = |us: f64| (us * 10.0).round() / 10.0;
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
            "server_cpu_us_per_request": self.server_cpu_per_request_us().map(tenths),
            "server_cpu_us_per_request_by_thread": self
                .server_threads_per_request_us()
                .into_iter()
                .map(|(name, us)| (name, tenths(us)))
                .collect::<BTreeMap<_, _>>(),
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
        if let Some(us) = self.server_cpu_per_request_us() {
            let threads: Vec<String> =
                self.server_threads_per_request_us().iter().map(|(name, us)| format!("{name} {us:.1}")).collect();
            let split = if threads.is_empty() { String::new() } else { format!(" ({})", threads.join(", ")) };
            text.push_str(&format!("server CPU: {us:.1} µs/request{split}\n"));
        }
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

/// How many publishes later, at least, the repeat of a keyed publish is sent: far more
/// than there are connections, so that its first answer is back (closed loop) and the
/// repeat is a replay, not a request in flight.
const REPEAT_GAP: usize = 1024;

/// `messages` publishes of the outbound API (`POST /api/v1/app/{app}/msg`) with `token`:
/// `messages * repeat` of them (rounded, at most half) repeat an earlier publish, with the
/// same `idempotency-key` and the same bytes, at least [`REPEAT_GAP`] publishes after it
/// (when the run is long enough); the others are distinct messages, each with its own key. Which ones repeat is drawn by
/// `seed`; the keys carry the seed, so another seed publishes new messages.
#[must_use]
pub fn outbound_workload(token: &str, messages: usize, repeat: f64, seed: u64) -> Vec<Prepared> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let repeats = ((messages as f64 * repeat.clamp(0.0, 0.5)).round() as usize).min(messages);
    let distinct = messages - repeats;
    // Repeated are messages at least REPEAT_GAP from the last (all of them in a run too
    // short for that), so that each repeat can follow its first publish that far behind.
    let eligible = if distinct > REPEAT_GAP + repeats { distinct - REPEAT_GAP } else { distinct };
    let mut repeated: Vec<usize> = (0..eligible).collect();
    rng.shuffle(&mut repeated);
    repeated.truncate(repeats);
    // Each publish's place in the sending order: the i-th distinct one at i, a repeat of
    // i somewhere after i + REPEAT_GAP (at the end when that is past the last).
    let mut order: Vec<(f64, usize)> = (0..distinct).map(|i| (i as f64, i)).collect();
    order.extend(repeated.into_iter().map(|i| ((i + REPEAT_GAP) as f64 + rng.f64() * REPEAT_GAP as f64, i)));
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let authorization = format!("Bearer {token}");
    order
        .into_iter()
        .map(|(_, i)| {
            let key = format!("bench-{seed}-{i}");
            let body = format!(
                r#"{{"eventType":"order.paid","payload":{{"order":"o-{seed}-{i}","amount":{},"currency":"EUR"}}}}"#,
                i % 9000 + 100
            );
            let headers = vec![
                ("authorization".to_owned(), authorization.clone()),
                ("content-type".to_owned(), "application/json".to_owned()),
                ("idempotency-key".to_owned(), key.clone()),
            ];
            Prepared { headers, body: body.into_bytes(), event: Some(key) }
        })
        .collect()
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The target is not an `http://HOST:PORT/PATH` URL.
    #[error("the target {0:?} is not an http:// URL (the load generator speaks plain HTTP/1.1)")]
    Target(String),
    /// A prepared header is not a valid HTTP header.
    #[error("the header {0:?} is not a valid HTTP header")]
    Header(String),
    /// A request could not be built.
    #[error("a request could not be built: {0}")]
    Request(#[from] http::Error),
}

/// What `drive` measures besides the answers.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep-alive connections sending at once.
    pub concurrency: usize,
    /// Show a progress bar.
    pub progress: bool,
    /// Open loop at this many requests per second (closed loop when `None`).
    pub rate: Option<f64>,
    /// The server's processes (several instances): their CPU time over the run, summed, is
    /// reported per request.
    pub server_pids: Vec<u32>,
    /// Send the work once, unmeasured, before the measured run: the measured run then
    /// repeats what the server has seen (`bench api --keys replay`: every key a replay).
    pub warm_up: bool,
}

/// Sends `work` to `url` over `options.concurrency` keep-alive connections and reports
/// (after an unmeasured round when `options.warm_up`).
/// Every request is built before the clock starts; each connection is one task.
pub async fn drive(url: &str, work: Vec<Prepared>, options: Options) -> Result<Report, BenchError> {
    if options.warm_up {
        let warm_up = Options { concurrency: options.concurrency, progress: options.progress, ..Options::default() };
        measure(url, work.clone(), &warm_up).await?;
    }
    measure(url, work, &options).await
}

/// One round of [`drive`].
async fn measure(url: &str, work: Vec<Prepared>, options: &Options) -> Result<Report, BenchError> {
    // Several comma-separated targets (instances behind one store) share the connections
    // round-robin, like a load balancer.
    let targets = url
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(connection::Target::parse)
        .collect::<Result<Vec<_>, _>>()?;
    if targets.is_empty() {
        return Err(BenchError::Target(url.to_owned()));
    }
    let ready = work.iter().map(connection::Ready::new).collect::<Result<Vec<_>, _>>()?;
    let events: Arc<Vec<Option<String>>> = Arc::new(work.into_iter().map(|p| p.event).collect());
    let ready = Arc::new(ready);
    let next = Arc::new(AtomicUsize::new(0));
    let bar = if options.progress { ProgressBar::new(ready.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} requests").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let cpu_before = cpu::used_by_all(&options.server_pids);
    let threads_before = cpu::used_by_thread(&options.server_pids);
    let started = Instant::now();
    let concurrency = options.concurrency.max(1);
    let pace = match options.rate.filter(|r| r.is_finite() && *r > 0.0) {
        Some(rate) => Pace::Open { started, rate, due: pacer(started, rate, ready.len(), concurrency) },
        None => Pace::Closed,
    };
    let workers: Vec<_> = (0..concurrency)
        .map(|i| {
            let connection = connection::Connection::new(targets[i % targets.len()].clone());
            tokio::spawn(worker(connection, Arc::clone(&ready), Arc::clone(&next), bar.clone(), pace.clone()))
        })
        .collect();
    let mut samples = Vec::with_capacity(ready.len());
    for handle in workers {
        samples.extend(handle.await.unwrap_or_default());
    }
    let elapsed = started.elapsed();
    if let Pace::Open { due, .. } = &pace {
        due.close();
    }
    let server_cpu =
        cpu::used_by_all(&options.server_pids).zip(cpu_before).map(|(after, before)| after.saturating_sub(before));
    let server_threads = cpu::by_name(&threads_before, &cpu::used_by_thread(&options.server_pids));
    bar.finish_and_clear();
    let mut report = report(samples, &events, elapsed);
    report.server_cpu = server_cpu;
    report.server_threads = server_threads;
    Ok(report)
}

/// When requests are sent: as fast as the connections allow (closed loop), or request `i`
/// at `started + i / rate` whatever the answers (open loop).
#[derive(Debug, Clone)]
enum Pace {
    Closed,
    Open {
        started: Instant,
        rate: f64,
        /// One permit per request that is due, released by the [`pacer`].
        due: Arc<Semaphore>,
    },
}

/// Releases one permit of the returned semaphore at each of `requests` due times
/// (`started + i / rate`), then one for each of the `connections` so that each finds the
/// work done.
///
/// A thread of its own, sleeping with the OS's high-resolution timer: tokio's timer wheel
/// has a 1 ms tick and rounds every sleep up to it, which made each request up to 1 ms late
/// (2 ms at the p99) before it was sent, and charged that to the server's latency.
fn pacer(started: Instant, rate: f64, requests: usize, connections: usize) -> Arc<Semaphore> {
    let due = Arc::new(Semaphore::new(0));
    let release = Arc::clone(&due);
    let spawned = std::thread::Builder::new().name("bench-pacer".into()).spawn(move || {
        let mut released = 0;
        while released < requests && !release.is_closed() {
            // Requests 0..=floor(elapsed * rate) are due now.
            let elapsed = started.elapsed().as_secs_f64();
            let now_due = ((elapsed * rate).floor() as usize).saturating_add(1).min(requests);
            if now_due > released {
                release.add_permits(now_due - released);
                released = now_due;
            } else {
                let next = started + Duration::from_secs_f64(released as f64 / rate);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        }
        release.add_permits(connections);
    });
    if spawned.is_err() {
        // Without the thread, every request is due at once: closed loop, but still counted
        // from each request's own due time, so the report shows it.
        due.add_permits(requests + connections);
    }
    due
}

/// Progress is counted in steps this large, not per request.
const PROGRESS_STEP: u64 = 64;

async fn worker(
    mut connection: connection::Connection,
    work: Arc<Vec<connection::Ready>>,
    next: Arc<AtomicUsize>,
    bar: ProgressBar,
    pace: Pace,
) -> Vec<Sample> {
    let mut samples = Vec::with_capacity(work.len() / 16);
    let mut unreported = 0;
    loop {
        if let Pace::Open { due, .. } = &pace {
            match due.acquire().await {
                Ok(permit) => permit.forget(),
                Err(_) => break,
            }
        }
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = work.get(index) else { break };
        // Open loop: latency counts from the time the request was due, so a request that
        // waited for a busy connection is charged its wait (no coordinated omission).
        let start = match &pace {
            Pace::Open { started, rate, .. } => *started + Duration::from_secs_f64(index as f64 / rate),
            Pace::Closed => Instant::now(),
        };
        let late = Instant::now().saturating_duration_since(start);
        let outcome = match connection.send(item).await {
            Some(answer) => connection::outcome(&answer),
            None => Cow::Borrowed("error"),
        };
        samples.push(Sample { latency: start.elapsed(), late, outcome, index });
        unreported += 1;
        if unreported == PROGRESS_STEP {
            bar.inc(unreported);
            unreported = 0;
        }
    }
    bar.inc(unreported);
    samples
}

/// The report over `samples`, where `events[i]` is the event work item `i` carried.
fn report(samples: Vec<Sample>, events_of: &[Option<String>], elapsed: Duration) -> Report {
    let mut outcomes = BTreeMap::new();
    let mut applied: BTreeMap<&str, usize> = BTreeMap::new();
    let mut events = std::collections::BTreeSet::new();
    for sample in &samples {
        *outcomes.entry(sample.outcome.to_string()).or_insert(0) += 1;
        if let Some(Some(event)) = events_of.get(sample.index) {
            events.insert(event.as_str());
            // A counter's or gateway's first answer, or a keyed publish's (`202` without
            // `Idempotency-Replay`; its repeats are `202 replay`).
            if sample.outcome == "applied" || sample.outcome == "accepted" || sample.outcome == "202" {
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
    Report {
        requests: samples.len(),
        elapsed,
        latencies,
        lateness,
        service,
        outcomes,
        exactly_once,
        server_cpu: None,
        server_threads: BTreeMap::new(),
    }
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
                index: 0,
            })
            .collect();
        let report = report(samples, &[], Duration::from_secs(1));
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
                index: 0,
            })
            .collect();
        let report = report(samples, &[], Duration::from_secs(1));
        assert_eq!(report.percentile(1.0), Duration::from_millis(100));
        assert_eq!(report.lateness(1.0), Duration::from_millis(10));
        assert_eq!(report.service(1.0), Duration::from_millis(90));
        assert_eq!(report.service(0.5), Duration::from_millis(45));
    }

    #[test]
    fn exactly_once_fails_when_an_event_is_applied_twice_or_never() {
        let sample = |index: usize, outcome: &'static str| Sample {
            latency: Duration::ZERO,
            late: Duration::ZERO,
            outcome: outcome.into(),
            index,
        };
        let events = [Some("a".to_owned()), Some("a".to_owned())];
        let second = Duration::from_secs(1);
        let ok = report(vec![sample(0, "applied"), sample(1, "duplicate")], &events, second);
        assert_eq!(ok.exactly_once, Some(true));
        let twice = report(vec![sample(0, "applied"), sample(1, "applied")], &events, second);
        assert_eq!(twice.exactly_once, Some(false));
        let never = report(vec![sample(0, "503")], &events[..1], second);
        assert_eq!(never.exactly_once, Some(false));
    }

    #[test]
    fn outbound_repeats_follow_their_first_publish_with_its_key_and_bytes() {
        let work = outbound_workload("tok", 3000, 0.1, 5);
        assert_eq!(work.len(), 3000);
        let mut first: BTreeMap<String, (usize, Vec<u8>)> = BTreeMap::new();
        let mut repeats = 0;
        for (n, prepared) in work.iter().enumerate() {
            let key = prepared.event.clone().unwrap();
            assert!(prepared.headers.contains(&("idempotency-key".to_owned(), key.clone())));
            assert!(prepared.headers.contains(&("authorization".to_owned(), "Bearer tok".to_owned())));
            match first.get(&key) {
                Some((at, body)) => {
                    repeats += 1;
                    assert!(n >= at + REPEAT_GAP, "a repeat comes well after its first publish");
                    assert_eq!(body, &prepared.body, "a repeat sends the same bytes");
                }
                None => {
                    first.insert(key, (n, prepared.body.clone()));
                }
            }
        }
        assert_eq!((first.len(), repeats), (2700, 300));
        let sample = |index: usize, outcome: &'static str| Sample {
            latency: Duration::ZERO,
            late: Duration::ZERO,
            outcome: outcome.into(),
            index,
        };
        let events: Vec<_> = work.iter().map(|p| p.event.clone()).collect();
        let mut seen = std::collections::BTreeSet::new();
        let repeats: Vec<bool> = events.iter().map(|e| !seen.insert(e.clone())).collect();
        let one_repeat = repeats.iter().position(|r| *r).unwrap();
        let answers = |that_one: &'static str| {
            let samples = (0..work.len())
                .map(|n| match (n == one_repeat, repeats[n]) {
                    (true, _) => sample(n, that_one),
                    (false, true) => sample(n, "202 replay"),
                    (false, false) => sample(n, "202"),
                })
                .collect();
            report(samples, &events, Duration::from_secs(1)).exactly_once
        };
        assert_eq!(answers("202 replay"), Some(true));
        assert_eq!(answers("202"), Some(false), "a key answered as new twice made two messages");
    }

    #[test]
    fn server_cpu_is_reported_per_request() {
        let samples = (0..4)
            .map(|index| Sample { latency: Duration::ZERO, late: Duration::ZERO, outcome: "200".into(), index })
            .collect();
        let mut report = report(samples, &[], Duration::from_secs(1));
        assert_eq!(report.server_cpu_per_request_us(), None);
        assert!(!report.to_text().contains("server CPU"));
        report.server_cpu = Some(Duration::from_micros(200));
        assert_eq!(report.server_cpu_per_request_us(), Some(50.0));
        assert!(report.to_text().contains("server CPU: 50.0 µs/request"));
        assert_eq!(report.to_json()["server_cpu_us_per_request"], 50.0);
    }
}
