//! A smoke test of `/api/v1` with Svix's own Python SDK (`svix` 2.9.1 from PyPI, in the
//! venv `tests/openapi/setup-venv.sh` makes on first use: the test fails, never skips, when
//! Python or the package cannot be had). `tests/openapi/svix_smoke.py` drives a real
//! `idemgate serve`: an application, an event type, an endpoint on a recording server of
//! its own, one message published twice under one idempotency key (one id), its delivery
//! verified with the SDK's `Webhook`, and its attempts listed.

use std::process::Command;

use serde_json::Value;

use crate::{
    admin_openapi_fuzz::openapi_venv,
    outbound_api::{ADMIN_TOKEN, API, Backend, serve_keeping_url, stored_rows},
};

fn python_sdk_publishes_once_per_key_and_the_delivery_verifies(backend: Backend) {
    let python = openapi_venv().join("bin/python");
    let (setup, gateway, url) = serve_keeping_url(backend, API);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/openapi/svix_smoke.py");
    let output = Command::new(python)
        .arg(script)
        .arg(format!("http://{}", gateway.addr))
        .arg(ADMIN_TOKEN)
        // Loopback only, whatever proxy the environment names.
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python SDK's smoke test failed: {said}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_str(said.trim()).unwrap();
    assert_eq!(seen["message"], seen["repeat"], "{seen}");
    assert_eq!(
        (&seen["deliveries"], &seen["verified"], &seen["messages"]),
        (&Value::from(1), &Value::from(true), &Value::from(1))
    );
    assert!(seen["attempts"].as_u64().is_some_and(|n| n >= 1), "{seen}");
    assert_eq!(stored_rows(&setup, url.as_deref(), "messages"), 1, "one message stored for the key");
}

#[test]
fn the_python_sdk_publishes_once_per_key_and_the_delivery_verifies_on_sqlite() {
    python_sdk_publishes_once_per_key_and_the_delivery_verifies(Backend::Sqlite);
}

#[test]
fn the_python_sdk_publishes_once_per_key_and_the_delivery_verifies_on_postgres() {
    python_sdk_publishes_once_per_key_and_the_delivery_verifies(Backend::Postgres);
}
