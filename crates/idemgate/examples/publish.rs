//! Publishes one event to a customer's endpoint through idemgate's outbound API with
//! Svix's own Rust SDK, the way a provider's backend would.
//!
//! Start `idemgate serve` with `[api]` enabled (see `docs/guide/outbound-api.md`), then:
//!
//! ```text
//! IDEMGATE_URL=http://127.0.0.1:8080 IDEMGATE_API_TOKEN=… \
//!     cargo run --example publish -- https://customer.example/webhooks
//! ```
//!
//! It creates the application `acme` (or finds it), adds the endpoint if the application has
//! none, and sends an `invoice.paid` message with an `idempotency-key` of its own: run it
//! twice with the same `--key` and the second run gets the first one's message back.

use std::{env, io::Write};

use anyhow::Context;
use svix::{
    api::{MessageCreateOptions, Svix, SvixOptions},
    models::{ApplicationIn, EndpointIn, MessageIn},
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = env::args().skip(1);
    let url = args.next().context("usage: publish ENDPOINT_URL [--key KEY]")?;
    let key = match (args.next().as_deref(), args.next()) {
        (Some("--key"), Some(key)) => key,
        _ => format!("invoice-{}", std::process::id()),
    };
    let server = env::var("IDEMGATE_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".to_owned());
    let token = env::var("IDEMGATE_API_TOKEN").context("set IDEMGATE_API_TOKEN to a token of [api.tokens]")?;
    // Without `server_url` the SDK would call Svix's cloud.
    let svix = Svix::new(token, Some(SvixOptions { server_url: Some(server), ..SvixOptions::default() }));

    let app = ApplicationIn { uid: Some("acme".to_owned()), ..ApplicationIn::new("Acme Inc.".to_owned()) };
    let app = svix.application().get_or_create(app, None).await?;
    if svix.endpoint().list(app.id.clone(), None).await?.data.is_empty() {
        svix.endpoint().create(app.id.clone(), EndpointIn::new(url), None).await?;
    }
    let message = MessageIn::new("invoice.paid".to_owned(), serde_json::json!({"invoice": "in_1", "amount": 1999}));
    let options = MessageCreateOptions { idempotency_key: Some(key.clone()), ..MessageCreateOptions::default() };
    let sent = svix.message().create(app.id, message, Some(options)).await?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{} (idempotency-key {key}): idemgate delivers it with this webhook-id", sent.id)?;
    Ok(())
}
