//! The provider catalog against the providers' own libraries, over real HTTP.
//!
//! Every driver in `tests/providers/` (`*.py`, run in the venv that
//! `tests/providers/setup.sh` makes on first use, and `node/*.mjs`, run beside the
//! `node_modules` it installs) signs deliveries with a provider's official library, or
//! builds them as the provider documents and has that library verify them first. It prints
//! JSON lines: for each provider the secret idemgate is given, then its cases in order:
//! `first` (expected `accepted`), `retry` as the provider retries (`duplicate`) and
//! `changed`, another event under the same identity (`conflict`). One gateway gets a source
//! per provider, `scheme = "<provider>"` with nothing else but its secret (and the signed
//! URL, for a provider that signs it: `{PROVIDERS_BASE_URL}/hooks/<name>` unless the
//! driver names another), so the catalog's defaults are what is tested. This test adds a
//! tampered copy of each first delivery (one body byte changed; for a token or Basic
//! provider, the credential), which must be refused 401 and store nothing.
//!
//! A second test takes every provider whose body is a form (Slack's slash commands,
//! Twilio) end to end: verified, deduplicated on its identity, filtered by its event type
//! (the destination subscribes to the type of the first delivery only; the drivers' `other`
//! case has another type) and forwarded as the original bytes.
//!
//! Every catalog provider backed by a library must have its cases here, and every provider
//! whose retries change bytes its retry and changed cases. The tests fail, never skip,
//! when the libraries cannot be installed.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use idemgate::core::{
    catalog::{self, Backing, Signing},
    form::{self, BodyFormat},
    json::Json,
};
use idemgate_testkit::Destination;
use serde_json::{Value, json};

use crate::{
    gateway_harness::{Setup, inbox},
    harness::unix_now,
};

/// Where the drivers sign URL-signing providers' deliveries for.
const BASE: &str = "https://hooks.example.test";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The libraries' environments, made first (under `flock`, once for test processes
/// running at once) when missing or out of date: (venv, node folder).
fn environments() -> (PathBuf, PathBuf) {
    let target = repo().join("target");
    let venv = std::env::var_os("IDEMGATE_PROVIDERS_VENV").map_or_else(|| target.join("providers-venv"), PathBuf::from);
    let node = std::env::var_os("IDEMGATE_PROVIDERS_NODE").map_or_else(|| target.join("providers-node"), PathBuf::from);
    std::fs::create_dir_all(&target).unwrap();
    let made = Command::new("flock")
        .arg(target.join("providers.lock"))
        .arg("bash")
        .arg(repo().join("tests/providers/setup.sh"))
        .env("IDEMGATE_PROVIDERS_VENV", &venv)
        .env("IDEMGATE_PROVIDERS_NODE", &node)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "the provider tests need the providers' libraries, and `bash tests/providers/setup.sh` could not install \
         them (python3 with venv and pip, Node.js with npm, and the registries are needed): {}",
        String::from_utf8_lossy(&made.stderr)
    );
    (venv, node)
}

/// One provider's secret and cases, as its driver printed them.
#[derive(Default)]
struct Provided {
    secret: Option<String>,
    signed_url: Option<String>,
    config: String,
    cases: Vec<Case>,
}

struct Case {
    name: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    expect: String,
}

/// Runs every driver and gathers what each provider's library made.
fn drive(now: i64) -> BTreeMap<String, Provided> {
    let (venv, node) = environments();
    let mut runs: Vec<(PathBuf, Command)> = Vec::new();
    let dir = repo().join("tests/providers");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "py") && path.file_stem().is_some_and(|s| s != "driver") {
            let mut command = Command::new(venv.join("bin/python"));
            command.arg(&path);
            runs.push((path, command));
        }
    }
    for entry in std::fs::read_dir(dir.join("node")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mjs") && path.file_stem().is_some_and(|s| s != "driver") {
            let mut command = Command::new("node");
            command.arg(node.join(path.file_name().unwrap()));
            runs.push((path, command));
        }
    }
    let mut all: BTreeMap<String, Provided> = BTreeMap::new();
    for (path, mut command) in runs {
        let output = command
            .env("PROVIDERS_BASE_URL", BASE)
            .env("PROVIDERS_NOW", now.to_string())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{} failed: {}", path.display(), String::from_utf8_lossy(&output.stderr));
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("{}: {line}", path.display()));
            let provider = value["provider"].as_str().unwrap().to_owned();
            let entry = all.entry(provider.clone()).or_default();
            if let Some(secret) = value["secret"].as_str() {
                assert!(entry.secret.is_none(), "{provider}: two secrets");
                entry.secret = Some(secret.to_owned());
                entry.signed_url = value["signed_url"].as_str().map(str::to_owned);
                entry.config = value["config"].as_str().unwrap_or_default().to_owned();
                continue;
            }
            let headers = value["headers"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_owned()))
                .collect();
            entry.cases.push(Case {
                name: value["case"].as_str().unwrap().to_owned(),
                headers,
                body: STANDARD.decode(value["body_b64"].as_str().unwrap()).unwrap(),
                expect: value["expect"].as_str().unwrap().to_owned(),
            });
        }
    }
    all
}

/// `[sources.<provider>]` for each provider: its scheme and secret, nothing more.
fn sources(provided: &BTreeMap<String, Provided>) -> String {
    let mut config = String::from("[worker]\nenabled = false\n");
    for (name, entry) in provided {
        let provider = catalog::find(name).unwrap_or_else(|| panic!("{name} is not in the catalog"));
        let secret = entry.secret.as_deref().unwrap_or_else(|| panic!("{name}: no secret line"));
        config.push_str(&format!("[sources.{name}]\nscheme = {name:?}\nsecrets = [{secret:?}]\n"));
        if provider.scheme().signs_url() {
            let url = entry.signed_url.clone().unwrap_or_else(|| format!("{BASE}/hooks/{name}"));
            config.push_str(&format!("signed_url = {url:?}\n"));
        }
        config.push_str(&entry.config);
        config.push('\n');
    }
    config
}

/// The answer `expect` stands for: its status and `status` member.
fn expected(expect: &str) -> (u16, Option<&'static str>) {
    match expect {
        "accepted" => (202, Some("accepted")),
        "duplicate" => (200, Some("duplicate")),
        "conflict" => (409, None),
        other => panic!("unknown expectation {other:?}"),
    }
}

#[test]
fn every_provider_accepts_what_its_own_library_signs_deduplicates_its_retries_and_refuses_the_rest() {
    let now = unix_now();
    let provided = drive(now);
    for provider in catalog::providers() {
        if matches!(provider.backing, Backing::Library { .. }) {
            let entry = provided.get(provider.name);
            let names: Vec<&str> = entry.map(|e| e.cases.iter().map(|c| c.name.as_str()).collect()).unwrap_or_default();
            assert!(names.contains(&"first"), "{}: backed by its library, but no driver signs for it", provider.name);
            if !provider.per_attempt.is_empty() {
                assert!(
                    names.contains(&"retry") && names.contains(&"changed"),
                    "{}: its retries change bytes, so it needs a retry and a changed case: {names:?}",
                    provider.name
                );
            }
        }
    }
    let setup = Setup::new(&sources(&provided));
    let gateway = setup.start();
    for (name, entry) in &provided {
        for case in &entry.cases {
            let reply = gateway.post(name, &case.headers, &case.body);
            let (status, member) = expected(&case.expect);
            assert_eq!(reply.status(), status, "{name} {}: {reply:?}", case.name);
            if let Some(member) = member {
                assert_eq!(reply.body()["status"], json!(member), "{name} {}: {reply:?}", case.name);
            }
        }
    }
    let stored = inbox(&setup.db());
    for (name, entry) in &provided {
        let provider = catalog::find(name).unwrap();
        let first = entry.cases.iter().find(|c| c.name == "first").unwrap();
        let credential_only = matches!(provider.signing, Signing::Token(_) | Signing::Basic);
        let (headers, body) = if credential_only {
            // The credential is all a token or Basic provider proves: change it.
            (first.headers.iter().map(|(n, v)| (n.clone(), format!("{v}x"))).collect::<Vec<_>>(), first.body.clone())
        } else {
            let mut body = first.body.clone();
            let middle = body.len() / 2;
            body[middle] ^= 1;
            (first.headers.clone(), body)
        };
        let reply = gateway.post(name, &headers, &body);
        assert_eq!(reply.status(), 401, "{name}: a tampered delivery: {reply:?}");
    }
    assert_eq!(inbox(&setup.db()), stored, "the tampered deliveries stored nothing");
}

#[test]
fn form_providers_go_end_to_end_verified_deduplicated_filtered_and_forwarded_as_sent() {
    let now = unix_now();
    let mut provided = drive(now);
    provided.retain(|name, _| catalog::find(name).is_some_and(|p| p.body == BodyFormat::Form));
    assert!(provided.contains_key("slack-commands"), "the form providers: {:?}", provided.keys());
    let recorder = Destination::start(&[]);
    let mut config = sources(&provided).replace("[worker]\nenabled = false\n", "[worker]\npoll_interval = \"50ms\"\n");
    let mut forwarded = Vec::new();
    for (name, entry) in &provided {
        let provider = catalog::find(name).unwrap();
        let first = entry.cases.iter().find(|c| c.name == "first").unwrap();
        let table = format!("[sources.{name}]\n");
        // A provider whose body names its type is filtered by it: `other` is another type.
        let subscription = match provider.event_type {
            Some(pointer) => {
                assert!(entry.cases.iter().any(|c| c.name == "other"), "{name}: an `other` case of another type");
                let Some(Json::String(event_type)) = form::parse(&first.body).unwrap().pointer(pointer).cloned() else {
                    panic!("{name}: no type at {pointer}")
                };
                format!("{{ name = \"app\", types = [{event_type:?}] }}")
            }
            None => "\"app\"".to_owned(),
        };
        let subscribed = format!("{table}destinations = [{subscription}]\n");
        config = config.replace(&table, &subscribed);
        forwarded.push(first.body.clone());
    }
    config.push_str(&format!("[destinations.app]\nurl = \"{}\"\ntimeout = \"2s\"\n", recorder.url()));
    let setup = Setup::new(&config);
    let gateway = setup.start();
    for (name, entry) in &provided {
        for case in &entry.cases {
            let reply = gateway.post(name, &case.headers, &case.body);
            let (status, _) = expected(&case.expect);
            assert_eq!(reply.status(), status, "{name} {}: {reply:?}", case.name);
        }
    }
    recorder.wait_until("one delivery per form provider", |r| r.len() == forwarded.len());
    let mut received: Vec<Vec<u8>> = recorder.received().into_iter().map(|r| r.body).collect();
    received.sort();
    forwarded.sort();
    assert_eq!(received, forwarded, "each first delivery's original bytes, once; the other types filtered out");
    for delivery in recorder.received() {
        assert_eq!(delivery.header("content-type"), "application/x-www-form-urlencoded");
    }
}

/// Signs `{timestamp}.{body}` with a fresh 2048-bit key in Python's `cryptography` (from the
/// providers' venv): prints the public key's PEM, the timestamp and the hex signature.
const RSA_SIGNER: &str = r#"
import sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
body, at = sys.argv[1].encode(), sys.argv[2]
signature = key.sign(at.encode() + b"." + body, padding.PKCS1v15(), hashes.SHA512())
pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
sys.stdout.write(pem.decode() + "\n" + signature.hex())
"#;

#[test]
fn a_configured_rsa_source_accepts_what_another_implementation_signs_under_the_published_key() {
    let (venv, _) = environments();
    let now = unix_now();
    let body = r#"{"id":"txn_1","type":"TRANSACTION_CREATED"}"#;
    let output =
        Command::new(venv.join("bin/python")).args(["-c", RSA_SIGNER, body, &now.to_string()]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let (pem, signature) = text.rsplit_once('\n').unwrap();
    let setup = Setup::new("");
    let key_file = setup.dir.path().join("provider.pem");
    std::fs::write(&key_file, pem).unwrap();
    setup.write_config(&format!(
        r#"
[worker]
enabled = false
[sources.vault]
scheme = "rsa"
secrets = ["file:{}"]
identity = {{ pointer = "/id" }}
[sources.vault.rsa]
algorithm = "sha512"
encoding = "hex"
header = "X-Vault-Signature"
signed = "{{timestamp}}.{{body}}"
timestamp_header = "X-Vault-Timestamp"
"#,
        key_file.display()
    ));
    let gateway = setup.start();
    let headers =
        vec![("X-Vault-Signature".to_owned(), signature.to_owned()), ("X-Vault-Timestamp".to_owned(), now.to_string())];
    let accepted = gateway.post("vault", &headers, body.as_bytes());
    assert!(accepted.is(202, json!({"status": "accepted", "event": "txn_1"})), "{accepted:?}");
    let again = gateway.post("vault", &headers, body.as_bytes());
    assert!(again.is(200, json!({"status": "duplicate", "event": "txn_1"})), "{again:?}");
    let changed = body.replace("CREATED", "CREATEE");
    let refused = gateway.post("vault", &headers, changed.as_bytes());
    assert_eq!(refused.status(), 401, "{refused:?}");
    assert_eq!(refused.body()["reason"], json!("signature_mismatch"), "{refused:?}");
}
