//! `[traces]` end to end: `idemgate serve` exports its spans over OTLP/HTTP (protobuf) to a
//! collector run here (axum on 127.0.0.1, decoding each request with the official proto
//! types); a delivery continues its sender's `traceparent`, the worker's attempt is its
//! child, and the destination gets the attempt's `traceparent`. Without `[traces]` the
//! collector hears nothing and the destination gets no `traceparent`.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
};

use axum::{Router, body::Bytes, extract::State, http::StatusCode, routing::post};
use idemgate::core::traceparent::Traceparent;
use idemgate_testkit::Destination;
use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest,
    common::v1::{AnyValue, any_value::Value},
    trace::v1::Span,
};
use prost::Message;

use crate::{
    gateway_harness::{Gateway, Setup, Signer},
    harness::unix_now,
};

const KEY: [u8; 32] = [7; 32];
/// The sender's trace and span.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
/// Text in the body that no span may carry.
const PAYLOAD: &str = "payload-text-no-span-may-carry";

/// An OTLP/HTTP traces receiver: every request to `POST /v1/traces`, decoded.
#[derive(Clone)]
struct Collector {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
}

impl Collector {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let collector = Self { addr: listener.local_addr().unwrap(), requests: Arc::default() };
        let requests = Arc::clone(&collector.requests);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let app = Router::new().route("/v1/traces", post(export)).with_state(requests);
                axum::serve(tokio::net::TcpListener::from_std(listener).unwrap(), app).await.unwrap();
            });
        });
        collector
    }

    fn endpoint(&self) -> String {
        format!("http://{}/v1/traces", self.addr)
    }

    fn requests(&self) -> Vec<ExportTraceServiceRequest> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Every span exported, with its resource's `service.name`.
    fn spans(&self) -> Vec<(String, Span)> {
        let mut spans = Vec::new();
        for request in self.requests() {
            for resource in request.resource_spans {
                let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
                let service = attributes.iter().find(|kv| kv.key == "service.name").map(|kv| text(kv.value.as_ref()));
                let service = service.unwrap_or_default();
                for scope in resource.scope_spans {
                    spans.extend(scope.spans.into_iter().map(|span| (service.clone(), span)));
                }
            }
        }
        spans
    }
}

async fn export(
    State(requests): State<Arc<Mutex<Vec<ExportTraceServiceRequest>>>>,
    body: Bytes,
) -> (StatusCode, [(&'static str, &'static str); 1], Vec<u8>) {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export request");
    requests.lock().unwrap_or_else(PoisonError::into_inner).push(request);
    (StatusCode::OK, [("content-type", "application/x-protobuf")], Vec::new())
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(text)) => text.clone(),
        Some(Value::IntValue(n)) => n.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes.iter().map(|kv| (kv.key.clone(), text(kv.value.as_ref()))).collect()
}

fn config(destination: &Destination, traces: &str) -> String {
    format!(
        r#"
[worker]
poll_interval = "50ms"
[sources.hooks]
scheme = "standard-webhooks"
secrets = [{secret:?}]
destinations = ["app"]
[destinations.app]
url = "{url}"
timeout = "2s"
{traces}
"#,
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        url = destination.url(),
    )
}

/// Sends `msg_1` (with the sender's `traceparent` when `traced`) to a gateway started
/// with `env`, and waits until the destination has it.
fn deliver_one(setup: &Setup, env: &[(&str, &str)], traced: bool, destination: &Destination) {
    let gateway = Gateway::start(&setup.config(), env);
    let body = format!(r#"{{"type":"t","note":"{PAYLOAD}"}}"#);
    let mut headers = Signer::Standard(KEY.to_vec()).headers("msg_1", body.as_bytes(), unix_now());
    if traced {
        headers.push(("traceparent".to_owned(), format!("00-{TRACE}-{PARENT}-01")));
    }
    assert_eq!(gateway.post("hooks", &headers, body.as_bytes()).status(), 202);
    destination.wait_until("the event", |received| !received.is_empty());
    // SIGTERM: the worker finishes its attempt, and the spans still batched are exported
    // before the process exits.
    gateway.stop();
}

#[test]
fn a_delivery_continues_the_senders_trace_and_its_attempt_reaches_the_destination_in_it() {
    let collector = Collector::start();
    let destination = Destination::start(&[]);
    let traces = format!(
        "[traces]\nendpoint = {:?}\nservice_name = \"idemgate-test\"\nsample_ratio = 1.0\n",
        collector.endpoint()
    );
    let setup = Setup::new(&config(&destination, &traces));
    deliver_one(&setup, &[], true, &destination);

    let spans = collector.spans();
    let named = |name: &str| {
        let found: Vec<_> = spans.iter().filter(|(_, s)| s.name == name).map(|(_, s)| s.clone()).collect();
        assert_eq!(found.len(), 1, "one {name} span in {:?}", spans.iter().map(|(_, s)| &s.name).collect::<Vec<_>>());
        found.into_iter().next().unwrap()
    };
    assert!(spans.iter().all(|(service, _)| service == "idemgate-test"), "every span under the service name");

    let delivery = named("delivery");
    assert_eq!(hex::encode(&delivery.trace_id), TRACE, "the delivery is in the sender's trace");
    assert_eq!(hex::encode(&delivery.parent_span_id), PARENT, "the sender's span is the delivery's parent");
    let fields = attributes(&delivery);
    assert_eq!(fields.get("source").map(String::as_str), Some("hooks"));
    assert_eq!(fields.get("identity").map(String::as_str), Some("msg_1"));
    assert_eq!(fields.get("outcome").map(String::as_str), Some("applied"));
    assert_eq!(fields.get("http.response.status_code").map(String::as_str), Some("202"));
    for step in ["read", "verify", "parse", "commit", "answer"] {
        let child = named(step);
        assert_eq!(child.trace_id, delivery.trace_id, "{step} is in the delivery's trace");
        assert_eq!(child.parent_span_id, delivery.span_id, "{step} is the delivery's child");
    }

    let attempt = named("attempt");
    assert_eq!(attempt.trace_id, delivery.trace_id, "the attempt is in the delivery's trace");
    assert_eq!(attempt.parent_span_id, delivery.span_id, "the delivery is the attempt's parent");
    let fields = attributes(&attempt);
    assert_eq!(fields.get("destination").map(String::as_str), Some("app"));
    assert_eq!(fields.get("attempt").map(String::as_str), Some("1"));
    assert!(fields.get("job.id").is_some_and(|id| id.parse::<i64>().is_ok()), "{fields:?}");
    assert_eq!(fields.get("http.response.status_code").map(String::as_str), Some("200"));
    for step in ["claim", "send", "complete"] {
        let child = named(step);
        assert_eq!(child.trace_id, attempt.trace_id, "{step} is in the attempt's trace");
        assert_eq!(child.parent_span_id, attempt.span_id, "{step} is the attempt's child");
    }

    let sent = destination.received()[0].header("traceparent").to_owned();
    let sent = Traceparent::parse(&sent).unwrap_or_else(|| panic!("a valid traceparent: {sent:?}"));
    assert_eq!(hex::encode(sent.trace_id), TRACE, "the destination is in the sender's trace");
    assert_eq!(sent.span_id.to_vec(), attempt.span_id, "the attempt is the destination's parent");

    let secret = Signer::Standard(KEY.to_vec()).config_secret();
    for (_, span) in &spans {
        for (key, value) in attributes(span) {
            assert!(!value.contains(PAYLOAD), "{}: {key} carries the payload", span.name);
            assert!(!value.contains(&secret), "{}: {key} carries the secret", span.name);
            assert!(!value.contains("v1,"), "{}: {key} carries a signature", span.name);
        }
    }
}

#[test]
fn a_delivery_without_a_traceparent_starts_a_trace_and_the_destination_still_gets_one() {
    let collector = Collector::start();
    let destination = Destination::start(&[]);
    let setup = Setup::new(&config(&destination, &format!("[traces]\nendpoint = {:?}\n", collector.endpoint())));
    deliver_one(&setup, &[], false, &destination);
    let spans = collector.spans();
    let named = |name: &str| spans.iter().find(|(_, s)| s.name == name).map(|(_, s)| s.clone()).unwrap();
    let (delivery, attempt) = (named("delivery"), named("attempt"));
    assert!(delivery.parent_span_id.is_empty(), "the delivery is the root of its trace");
    assert!(spans.iter().all(|(service, _)| service == "idemgate"), "the default service name");
    assert_eq!(attempt.parent_span_id, delivery.span_id);
    let sent = Traceparent::parse(destination.received()[0].header("traceparent")).unwrap();
    assert_eq!((sent.trace_id.to_vec(), sent.span_id.to_vec()), (delivery.trace_id, attempt.span_id));
}

#[test]
fn a_sample_ratio_of_zero_exports_no_new_trace_yet_the_destination_gets_an_unsampled_traceparent() {
    let collector = Collector::start();
    let destination = Destination::start(&[]);
    let traces = format!("[traces]\nendpoint = {:?}\nsample_ratio = 0.0\n", collector.endpoint());
    let setup = Setup::new(&config(&destination, &traces));
    deliver_one(&setup, &[], false, &destination);
    assert!(collector.spans().is_empty(), "no span of an unsampled trace is exported");
    let sent = Traceparent::parse(destination.received()[0].header("traceparent")).unwrap();
    assert!(!sent.sampled(), "the destination hears the trace was not sampled");
}

#[test]
fn without_traces_nothing_is_exported_and_the_destination_gets_no_traceparent() {
    let collector = Collector::start();
    let destination = Destination::start(&[]);
    let setup = Setup::new(&config(&destination, ""));
    // The SDK's own variables name the collector: only `[traces]` turns the export on.
    let endpoint = collector.endpoint();
    let env = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()), ("OTEL_TRACES_EXPORTER", "otlp")];
    deliver_one(&setup, &env, true, &destination);
    assert_eq!(collector.requests().len(), 0, "no export without [traces]");
    let received = destination.received();
    assert_eq!(received.len(), 1);
    assert!(received[0].headers.get("traceparent").is_none(), "{:?}", received[0].headers);
    assert_eq!(received[0].header("webhook-id"), "msg_1");
}
