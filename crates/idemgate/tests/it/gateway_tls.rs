//! TLS termination in the gateway itself, with a certificate made for the test.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    sync::Arc,
};

use tokio_rustls::rustls::{
    self,
    pki_types::{CertificateDer, ServerName, pem::PemObject},
};

use crate::gateway_harness::{Gateway, Setup, Signer, body, inbox};

pub fn tls_setup() -> (Setup, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let setup = Setup::new(&format!(
        "[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{:?}]\n",
        Signer::Standard(vec![4; 32]).config_secret()
    ));
    std::fs::write(setup.dir.path().join("cert.pem"), certified.cert.pem()).unwrap();
    std::fs::write(setup.dir.path().join("key.pem"), certified.signing_key.serialize_pem()).unwrap();
    let config = std::fs::read_to_string(setup.config()).unwrap();
    let with_tls = config.replacen("[store]", "[server.tls]\ncert = \"cert.pem\"\nkey = \"key.pem\"\n[store]", 1);
    std::fs::write(setup.config(), with_tls).unwrap();
    (setup, certified.cert.pem())
}

fn https_request(gateway: &Gateway, ca_pem: &str, request: &[u8]) -> String {
    https_to(gateway.addr, ca_pem, request)
}

/// One request over TLS to `addr`, trusting only `ca_pem`; the answer as text.
pub fn https_to(addr: SocketAddr, ca_pem: &str, request: &[u8]) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap()).unwrap();

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connection =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap()).unwrap();
    let mut stream = rustls::StreamOwned::new(connection, TcpStream::connect(addr).unwrap());
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn the_gateway_terminates_tls_with_the_configured_certificate() {
    let (setup, ca) = tls_setup();
    let gateway = setup.start();
    let health = https_request(&gateway, &ca, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert!(health.starts_with("HTTP/1.1 200"), "{health:?}");

    let event = body("msg_tls", "t.created");
    let mut request = format!(
        "POST /in/hooks HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        event.len()
    );
    for (name, value) in Signer::Standard(vec![4; 32]).headers("msg_tls", &event, crate::harness::unix_now()) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(&event);
    let answer = https_request(&gateway, &ca, &bytes);
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer:?}");
    assert_eq!(inbox(&setup.db()).receipts, ["msg_tls"]);

    let mut plain = TcpStream::connect(gateway.addr).unwrap();
    plain.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 200"), "plain HTTP must not be served");
}

#[test]
fn an_unreadable_certificate_is_a_config_error() {
    let (setup, _) = tls_setup();
    std::fs::write(setup.dir.path().join("key.pem"), "not a key").unwrap();
    let output = setup.run(&["serve"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("server.tls.key"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
