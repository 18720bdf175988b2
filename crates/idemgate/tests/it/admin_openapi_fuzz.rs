//! The admin API's OpenAPI document against what the API does. schemathesis, an OpenAPI
//! fuzzer from PyPI (in the venv `tests/openapi/setup-venv.sh` makes, on first use: the
//! test fails, never skips, when it cannot be made), runs against the live
//! `/admin/v1/openapi.json` of a real gateway whose store holds events, dead jobs and a
//! destination, once with a `read` token and once with an `operate` token. Any finding
//! fails the test: a 5xx, or a status, content type or body the document does not
//! declare for that operation. With the `read` token every change is refused 403, so the
//! audit log stays empty and the dead jobs stay dead. Only loopback is reached.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::Duration,
};

use idemgate_testkit::{Destination, Step};
use serde_json::Value;

use crate::{
    gateway_harness::{Gateway, Setup, Signer, body, forwarding},
    harness::{Reply, exchange, unix_now},
};

const OPERATE: &str = "an-operate-token-for-the-fuzzer";
const READ: &str = "a-read-token-for-the-fuzzer";
const KEY: [u8; 32] = [4; 32];
/// The checks run: every answer is documented (status, content type, body schema), and
/// none is a 5xx.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance";

/// The repository's root (this crate is `crates/idemgate`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's `schemathesis`.
fn schemathesis() -> PathBuf {
    openapi_venv().join("bin/schemathesis")
}

/// The OpenAPI tests' venv (schemathesis and Svix's Python SDK), made first (under
/// `flock`, once for test processes running at once) when it is missing.
pub(crate) fn openapi_venv() -> PathBuf {
    let venv =
        std::env::var_os("IDEMGATE_OPENAPI_VENV").map_or_else(|| repo().join("target/openapi-venv"), PathBuf::from);
    std::fs::create_dir_all(venv.parent().unwrap()).unwrap();
    let made = Command::new("flock")
        .arg(venv.with_extension("lock"))
        .arg("bash")
        .arg(repo().join("tests/openapi/setup-venv.sh"))
        .env("IDEMGATE_OPENAPI_VENV", &venv)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "the OpenAPI tests need schemathesis and svix at {}, and `bash tests/openapi/setup-venv.sh` could not \
         make them (python3 with venv and pip, and PyPI, are needed): {}",
        venv.display(),
        String::from_utf8_lossy(&made.stderr)
    );
    venv
}

fn api(admin: SocketAddr, method: &str, path: &str, token: &str) -> Reply {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    exchange(admin, head.as_bytes())
}

fn dead_events(admin: SocketAddr) -> usize {
    api(admin, "GET", "/admin/v1/events?state=dead", READ).body()["events"].as_array().map_or(0, Vec::len)
}

/// A gateway whose destination answers the first three attempts 400 (their jobs are dead
/// at once) and then 200, with five events stored, three of them dead.
fn start() -> (Setup, Gateway, SocketAddr, Destination) {
    let destination = Destination::start(&[Step::Status(400), Step::Status(400), Step::Status(400)]);
    let signer = Signer::Standard(KEY.to_vec());
    let setup = Setup::new(&format!(
        "{}[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:OPERATE_TOKEN\"\n\
         [admin.tokens.viewer]\ntoken = \"env:READ_TOKEN\"\nrole = \"read\"\n",
        forwarding(&signer, &destination, "", "")
    ));
    let mut gateway = Gateway::start(&setup.config(), &[("OPERATE_TOKEN", OPERATE), ("READ_TOKEN", READ)]);
    let admin = gateway.admin_addr();
    for n in 0..5 {
        let identity = format!("evt-{n}");
        let event = body(&identity, "invoice.paid");
        assert_eq!(gateway.post("hooks", &signer.headers(&identity, &event, unix_now()), &event).status(), 202);
        // One at a time, so that the first three attempts are the first three events'.
        let attempted = || {
            let shown = api(admin, "GET", &format!("/admin/v1/events/hooks/{identity}"), READ);
            shown.body()["attempts"].as_array().is_some_and(|a| !a.is_empty())
        };
        for _ in 0..1500 {
            if attempted() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(attempted(), "{identity} was never attempted");
    }
    assert_eq!(dead_events(admin), 3);
    (setup, gateway, admin, destination)
}

/// Half of the generated path parameters name what the store holds, so that the
/// operations reach past their 404 to the events, jobs and destination.
const KNOWN_NAMES: &str = r#"
[dictionaries.sources]
values = ["hooks"]
[dictionaries.identities]
values = ["evt-0", "evt-1", "evt-2", "evt-3", "evt-4"]
[dictionaries.destinations]
values = ["app"]
[parameters]
"path.source" = { dictionary = "sources", probability = 0.5 }
"path.identity" = { dictionary = "identities", probability = 0.5 }
"path.name" = { dictionary = "destinations", probability = 0.5 }
"#;

/// Runs schemathesis against the live document with `token`, from a folder of its own.
fn fuzz(admin: SocketAddr, token: &str) -> Output {
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("schemathesis.toml");
    std::fs::write(&config, KNOWN_NAMES).unwrap();
    Command::new(schemathesis())
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("http://{admin}/admin/v1/openapi.json"))
        .args(["--checks", CHECKS, "--phases", "examples,coverage,fuzzing", "--max-examples", "10"])
        .args(["--seed", "1", "--workers", "1"])
        .args(["--generation-database", "none", "--generation-with-security-parameters", "false", "--no-color"])
        .args(["--request-timeout", "10"])
        .arg("--header")
        .arg(format!("Authorization: Bearer {token}"))
        .current_dir(work.path())
        // Loopback only, whatever proxy the environment names.
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn assert_no_finding(output: &Output, token: &str) {
    let report = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "schemathesis with the {token} token found something:\n{report}");
    assert!(report.contains("passed"), "schemathesis ran no operation with the {token} token:\n{report}");
    // A warning, not a failure, to schemathesis: a reference the document does not define
    // leaves that part of the API untested (as `Window` once did).
    assert!(!report.contains("Unresolvable reference"), "the document has a dangling reference:\n{report}");
}

#[test]
fn the_live_openapi_document_describes_every_answer_to_a_read_and_an_operate_token() {
    let (_setup, _gateway, admin, _destination) = start();
    let doc = api(admin, "GET", "/admin/v1/openapi.json", READ);
    let schemes = &doc.body()["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["scheme"], "bearer", "{schemes}");

    // Every change the document lists is refused to the read token, and documented so.
    for (path, operations) in doc.body()["paths"].as_object().unwrap() {
        let Some(post) = operations.get("post") else { continue };
        assert!(post["responses"].get("403").is_some(), "POST {path} documents its 403");
        let concrete = path.replace("{source}", "hooks").replace("{identity}", "evt-0").replace("{name}", "app");
        let refused = api(admin, "POST", &concrete, READ);
        assert_eq!((refused.status(), &refused.body()["error"]), (403, &Value::from("forbidden")), "POST {concrete}");
    }
    assert_no_finding(&fuzz(admin, READ), "read");
    assert_eq!(
        api(admin, "GET", "/admin/v1/audit", READ).body(),
        &Value::Array(Vec::new()),
        "the read token changed nothing"
    );
    assert_eq!(dead_events(admin), 3, "the dead jobs are still dead");

    assert_no_finding(&fuzz(admin, OPERATE), "operate");
    let audit = api(admin, "GET", "/admin/v1/audit", READ);
    assert!(audit.body().as_array().is_some_and(|log| !log.is_empty()), "the operate token reached the changes");
}
