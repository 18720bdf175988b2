//! Endpoint deliveries over real HTTP on 127.0.0.1 (and `[::1]`): what arrives, how it is
//! signed, and which addresses are refused before a byte is sent.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use idemgate_core::{
    Identity, ReceiptKey, Secret, SourceName,
    retry::AttemptResult,
    scheme::{AuthError, RawDelivery, Scheme, StandardWebhooks},
};
use idemgate_testkit::{Destination, Received, Step};
use tokio::{io::AsyncReadExt, net::TcpListener, task::JoinHandle};

use super::*;

const MESSAGE_ID: &str = "msg_2mfVUnLDJLpcAlMwnVMrBOhvHWR";
const SECOND: Duration = Duration::from_secs(1);

fn job() -> ClaimedJob {
    ClaimedJob {
        id: 1,
        lease_token: 1,
        attempt: 1,
        destination: "ep_2mfVUnLDJLpcAlMwnVMrBOhvHWR".into(),
        key: ReceiptKey { source: SourceName::new("api").unwrap(), identity: Identity::new(MESSAGE_ID).unwrap() },
        outgoing_id: MESSAGE_ID.into(),
        event_type: None,
        body: Bytes::from_static(br#"{"type":"invoice.paid"}"#),
        content_type: None,
        headers: Vec::new(),
    }
}

fn old_secret() -> Secret {
    Secret::new(vec![1; 24])
}

fn new_secret() -> Secret {
    Secret::new(vec![2; 32])
}

fn loopback() -> Vec<IpNet> {
    vec!["127.0.0.0/8".parse().unwrap()]
}

fn endpoint(url: &str) -> Endpoint {
    Endpoint {
        url: url.to_owned(),
        headers: vec![("x-tenant".to_owned(), "acme".to_owned())],
        secrets: SecretSet::new(vec![new_secret(), old_secret()]).unwrap(),
        timeout: Duration::from_secs(5),
    }
}

async fn deliver(client: &EndpointClient, url: &str, now: UnixTime) -> AttemptOutcome {
    EndpointDelivery::new(client, endpoint(url)).unwrap().deliver(&job(), now).await
}

/// Whether `received` verifies, at `now`, for a receiver holding `secret` only.
fn verifies(received: &Received, secret: Secret, now: UnixTime) -> Result<(), AuthError> {
    let delivery = RawDelivery { headers: &received.headers, body: &received.body };
    StandardWebhooks::DEFAULT.verify(&SecretSet::new(vec![secret]).unwrap(), delivery, now).map(drop)
}

/// A listener that accepts one connection and counts the bytes it reads from it until
/// the other side closes it.
async fn counting_listener(at: &str) -> (SocketAddr, JoinHandle<usize>) {
    let listener = TcpListener::bind(at).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let counted = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).await.unwrap_or_default();
        bytes.len()
    });
    (addr, counted)
}

/// `url` (which reaches `counted`'s listener) is refused after connecting, and the
/// listener read nothing from the connection before it closed.
async fn refused_before_a_byte(client: &EndpointClient, url: &str, counted: JoinHandle<usize>, range: &str) {
    let outcome = deliver(client, url, UnixTime(1_700_000_000)).await;
    assert_eq!(outcome.result, AttemptResult::Connection, "{url}: {outcome:?}");
    assert_eq!(outcome.error.as_deref(), Some(format!("address not allowed ({range})").as_str()), "{url}");
    let read = tokio::time::timeout(Duration::from_secs(5), counted).await.unwrap().unwrap();
    assert_eq!(read, 0, "{url}: the destination received bytes");
}

#[tokio::test]
async fn a_delivery_to_an_allowed_network_arrives_and_verifies_under_the_old_and_the_new_secret() {
    let destination = Destination::start(&[]);
    let client = EndpointClient::new(loopback(), SECOND).unwrap();
    let now = UnixTime(1_700_000_000);
    let outcome = deliver(&client, &destination.url(), now).await;
    assert_eq!(outcome.result, AttemptResult::Status { status: 200, retry_after: None }, "{outcome:?}");
    let received = destination.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.body, job().body);
    assert_eq!(request.header("content-type"), "application/json");
    assert_eq!(request.header("x-tenant"), "acme");
    assert_eq!(request.header("webhook-id"), MESSAGE_ID);
    assert_eq!(request.header("webhook-timestamp"), "1700000000");
    assert_eq!(request.headers.get_all("webhook-signature").iter().count(), 1);
    assert_eq!(request.header("webhook-signature").split(' ').count(), 2, "one entry per secret, one space apart");
    assert_eq!(verifies(request, old_secret(), now), Ok(()));
    assert_eq!(verifies(request, new_secret(), now), Ok(()));
    assert_eq!(verifies(request, Secret::new(vec![3; 32]), now), Err(AuthError::SignatureMismatch));
}

#[tokio::test]
async fn a_job_whose_payload_is_gone_is_refused_for_good_and_nothing_is_sent() {
    let destination = Destination::start(&[]);
    let client = EndpointClient::new(loopback(), SECOND).unwrap();
    let delivery = EndpointDelivery::new(&client, endpoint(&destination.url())).unwrap();
    let expunged = ClaimedJob { body: Bytes::new(), ..job() };
    let outcome = delivery.deliver(&expunged, UnixTime(1_700_000_000)).await;
    assert_eq!(outcome.result, AttemptResult::Refused { permanent: true }, "{outcome:?}");
    assert_eq!(outcome.error.as_deref(), Some("content expunged"));
    // The same delivery with the payload does reach the destination: the refusal was the body's.
    assert_eq!(
        delivery.deliver(&job(), UnixTime(1_700_000_000)).await.result,
        AttemptResult::Status { status: 200, retry_after: None }
    );
    assert_eq!(destination.received().len(), 1);
}

#[tokio::test]
async fn every_attempt_keeps_the_webhook_id_and_takes_a_new_timestamp() {
    let destination = Destination::start(&[Step::Status(500)]);
    let client = EndpointClient::new(loopback(), SECOND).unwrap();
    let delivery = EndpointDelivery::new(&client, endpoint(&destination.url())).unwrap();
    let (first, second) = (UnixTime(1_700_000_000), UnixTime(1_700_000_030));
    let outcome = delivery.deliver(&job(), first).await;
    assert_eq!(outcome.result, AttemptResult::Status { status: 500, retry_after: None });
    let outcome = delivery.deliver(&job(), second).await;
    assert_eq!(outcome.result, AttemptResult::Status { status: 200, retry_after: None });
    let received = destination.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].header("webhook-id"), MESSAGE_ID);
    assert_eq!(received[1].header("webhook-id"), MESSAGE_ID);
    assert_eq!(received[0].header("webhook-timestamp"), "1700000000");
    assert_eq!(received[1].header("webhook-timestamp"), "1700000030");
    assert_ne!(received[0].header("webhook-signature"), received[1].header("webhook-signature"));
    assert_eq!(verifies(&received[0], new_secret(), first), Ok(()));
    assert_eq!(verifies(&received[1], old_secret(), second), Ok(()));
}

#[tokio::test]
async fn without_allowed_networks_a_loopback_endpoint_is_refused_and_nothing_reaches_it() {
    let client = EndpointClient::new(Vec::new(), SECOND).unwrap();
    let destination = Destination::start(&[]);
    let outcome = deliver(&client, &destination.url(), UnixTime(1_700_000_000)).await;
    assert_eq!(outcome.error.as_deref(), Some("address not allowed (loopback)"));
    assert!(destination.received().is_empty());
    // The connection is made (the check is on the address it reached) and closed unused.
    let (addr, counted) = counting_listener("127.0.0.1:0").await;
    refused_before_a_byte(&client, &format!("http://{addr}/"), counted, "loopback").await;
    // TLS too: the check is under the TLS layer, so not even a ClientHello goes out.
    let (addr, counted) = counting_listener("127.0.0.1:0").await;
    refused_before_a_byte(&client, &format!("https://{addr}/"), counted, "loopback").await;
}

#[tokio::test]
async fn a_name_the_resolver_points_at_loopback_is_refused_the_same_way() {
    let (addr, counted) = counting_listener("127.0.0.1:0").await;
    let names = |ip: &str| HashMap::from([("hooks.example.com".to_owned(), vec![ip.parse().unwrap()])]);
    let client = EndpointClient::with_names(names("127.0.0.1"), Vec::new(), SECOND).unwrap();
    let url = format!("http://hooks.example.com:{}/in", addr.port());
    refused_before_a_byte(&client, &url, counted, "loopback").await;
    // The same name, where loopback is allowed, does reach it: the resolver was used.
    let destination = Destination::start(&[]);
    let client = EndpointClient::with_names(names("127.0.0.1"), loopback(), SECOND).unwrap();
    let outcome =
        deliver(&client, &format!("http://hooks.example.com:{}/in", destination.addr.port()), UnixTime(1)).await;
    assert_eq!(outcome.result, AttemptResult::Status { status: 200, retry_after: None }, "{outcome:?}");
    assert_eq!(destination.received().len(), 1);
    assert_eq!(destination.received()[0].path, "/in");
}

#[tokio::test]
async fn ipv6_loopback_mapped_and_shorthand_ipv4_literals_are_refused() {
    let client = EndpointClient::new(Vec::new(), SECOND).unwrap();
    let (addr, counted) = counting_listener("[::1]:0").await;
    refused_before_a_byte(&client, &format!("http://[::1]:{}/", addr.port()), counted, "loopback").await;
    let (addr, counted) = counting_listener("127.0.0.1:0").await;
    refused_before_a_byte(&client, &format!("http://127.1:{}/", addr.port()), counted, "loopback").await;
    let (addr, counted) = counting_listener("127.0.0.1:0").await;
    refused_before_a_byte(&client, &format!("http://[::ffff:127.0.0.1]:{}/", addr.port()), counted, "loopback").await;
}

#[tokio::test]
async fn a_redirect_is_the_answer_and_is_not_followed() {
    let target = Destination::start(&[]);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let location = target.url();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut chunk = [0; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0);
            request.extend_from_slice(&chunk[..read]);
        }
        let answer = format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        tokio::io::AsyncWriteExt::write_all(&mut stream, answer.as_bytes()).await.unwrap();
    });
    let client = EndpointClient::new(loopback(), SECOND).unwrap();
    let outcome = deliver(&client, &format!("http://{addr}/"), UnixTime(1)).await;
    assert_eq!(outcome.result, AttemptResult::Status { status: 307, retry_after: None }, "{outcome:?}");
    // A client that followed it would have done so before answering the attempt.
    assert!(target.received().is_empty(), "the redirect was followed");
}

#[test]
fn an_endpoint_whose_url_or_headers_cannot_be_sent_is_refused_without_showing_them() {
    let client = EndpointClient::new(Vec::new(), SECOND).unwrap();
    for url in ["ftp://example.com/", "https://user:pw@example.com/", "/relative"] {
        let err = EndpointDelivery::new(&client, endpoint(url)).unwrap_err();
        assert_eq!(err, EndpointError::Url);
        assert!(!err.to_string().contains("pw"), "{err}");
    }
    for (name, value) in [("webhook-signature", "v1,x"), ("x-a", "line\nbreak"), ("bad name", "1")] {
        let mut endpoint = endpoint("https://example.com/");
        endpoint.headers = vec![(name.to_owned(), value.to_owned())];
        let err = EndpointDelivery::new(&client, endpoint).unwrap_err();
        assert_eq!(err, EndpointError::Header { name: name.to_owned() });
        assert!(!err.to_string().contains(value), "{err}");
    }
}
