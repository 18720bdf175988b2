//! The admin listener's transport: TLS like the public listener, its header and body
//! timeouts, and no plain-HTTP admin on a non-loopback address unless the config opts in.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use crate::{
    gateway_dashboard::{Answer, TOKEN, request},
    gateway_harness::{Gateway, Setup, Signer, idemgate_bin},
    gateway_tls::{https_to, tls_setup},
};

const ADMIN: &str = "[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n";

fn append(setup: &Setup, toml: &str) {
    let config = std::fs::read_to_string(setup.config()).unwrap();
    std::fs::write(setup.config(), format!("{config}\n{toml}")).unwrap();
}

fn bearer() -> Vec<(&'static str, String)> {
    vec![("Authorization", format!("Bearer {TOKEN}"))]
}

fn hooks() -> Setup {
    Setup::new(&format!(
        "[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{:?}]\n",
        Signer::Standard(vec![4; 32]).config_secret()
    ))
}

/// Reads until the server closes; `None` if it did not within 10 s.
fn until_closed(stream: &mut TcpStream) -> Option<String> {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => Some(String::new()),
        Err(_) => None,
    }
}

#[test]
fn the_admin_listener_serves_tls_when_server_tls_is_set_and_the_cookie_is_secure() {
    let (setup, ca) = tls_setup();
    append(&setup, ADMIN);
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin: SocketAddr = gateway.admin_addr();

    let events = Answer::parse(&https_to(admin, &ca, &request(admin, "GET", "/admin/v1/events", &bearer(), "")));
    assert_eq!(events.status, 200, "{events:?}");
    let form = [("Content-Type", "application/x-www-form-urlencoded".to_owned())];
    let login =
        Answer::parse(&https_to(admin, &ca, &request(admin, "POST", "/admin/login", &form, &format!("token={TOKEN}"))));
    assert_eq!(login.status, 303, "{login:?}");
    let cookie = login.header("set-cookie").unwrap();
    assert!(cookie.split("; ").any(|flag| flag == "Secure"), "{cookie}");

    let mut plain = TcpStream::connect(admin).unwrap();
    plain.write_all(&request(admin, "GET", "/admin/v1/events", &bearer(), "")).unwrap();
    let answer = until_closed(&mut plain).unwrap_or_default();
    assert!(!answer.starts_with("HTTP/1.1"), "plain HTTP must not be served: {answer:?}");
}

/// Runs `serve`, which should stop at start-up: its exit code and stderr, or a panic if it
/// is still serving after 30 s.
fn serve_refused(setup: &Setup) -> (Option<i32>, String) {
    let mut child = Command::new(idemgate_bin())
        .args(["serve", "--config"])
        .arg(setup.config())
        .env("ADMIN_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve started instead of refusing the config");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    (output.status.code(), String::from_utf8(output.stderr).unwrap())
}

#[test]
fn a_non_loopback_admin_address_without_tls_is_refused_unless_the_config_opts_in() {
    let setup = hooks();
    append(&setup, "[admin]\nlisten = \"0.0.0.0:0\"\ntoken = \"env:ADMIN_TOKEN\"\n");
    let (code, stderr) = serve_refused(&setup);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("admin.listen") && stderr.contains("allow_plaintext"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    append(&setup, "allow_plaintext = true\n");
    let output = setup.run(&["config", "check"], &[("ADMIN_TOKEN", TOKEN)]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");

    let (setup, _) = tls_setup();
    append(&setup, "[admin]\nlisten = \"0.0.0.0:0\"\ntoken = \"env:ADMIN_TOKEN\"\n");
    let output = setup.run(&["config", "check"], &[("ADMIN_TOKEN", TOKEN)]);
    assert_eq!(output.status.code(), Some(0), "TLS from [server.tls]: {output:?}");

    let setup = hooks();
    std::fs::write(setup.dir.path().join("cert.pem"), "not a certificate").unwrap();
    append(&setup, &format!("{ADMIN}[admin.tls]\ncert = \"cert.pem\"\nkey = \"key.pem\"\n"));
    let (code, stderr) = serve_refused(&setup);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("admin.tls.cert"), "{stderr}");
}

fn tight_admin() -> (Setup, Gateway, SocketAddr) {
    let setup = hooks();
    let config = std::fs::read_to_string(setup.config()).unwrap();
    std::fs::write(
        setup.config(),
        config.replace("body_timeout = \"5s\"", "body_timeout = \"1s\"\nheader_timeout = \"1s\""),
    )
    .unwrap();
    append(&setup, ADMIN);
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    (setup, gateway, admin)
}

#[test]
fn the_header_timeout_closes_a_slowloris_connection_to_the_admin_listener() {
    let (_setup, _gateway, admin) = tight_admin();
    let mut slow = TcpStream::connect(admin).unwrap();
    slow.write_all(b"GET /admin/v1/events HTTP/1.1\r\nHost: x\r\n").unwrap();
    thread::sleep(Duration::from_millis(1500));
    let _ = slow.write_all(b"X-Late: 1\r\n");
    let answer = until_closed(&mut slow).expect("the admin listener kept the slow head open");
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

#[test]
fn the_body_timeout_applies_to_admin_requests() {
    let (_setup, _gateway, admin) = tight_admin();
    let mut slow = TcpStream::connect(admin).unwrap();
    let mut head = request(admin, "POST", "/admin/v1/replay", &bearer(), "");
    let head_text = String::from_utf8(head.clone()).unwrap().replace("Content-Length: 0", "Content-Length: 50");
    head = head_text.into_bytes();
    head.extend_from_slice(b"{\"sou");
    slow.write_all(&head).unwrap();
    let answer = until_closed(&mut slow).expect("the admin listener waited for the body forever");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(answer.contains("body_timeout"), "{answer:?}");
}
