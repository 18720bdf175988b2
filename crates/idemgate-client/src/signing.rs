//! Signing outgoing webhooks in each scheme idemgate verifies, from the same pure signing
//! functions the verifiers are tested against.

use idemgate_core::{
    Secret, UnixTime,
    scheme::{demo, github, shopify, slack, standard, stripe},
};

/// A scheme and its secret, ready to sign attempts.
#[derive(Debug, Clone)]
pub enum WebhookSigner {
    /// Standard Webhooks v1 (HMAC); the secret is the decoded key bytes.
    StandardWebhooks(Secret),
    /// The seed's `demo-webhook-v1`; the secret is the 32 key bytes.
    Demo(Secret),
    /// GitHub's `X-Hub-Signature-256`.
    GitHub(Secret),
    /// Stripe's `Stripe-Signature` (the identity is the body's `id`).
    Stripe(Secret),
    /// Shopify's `X-Shopify-Hmac-Sha256`.
    Shopify(Secret),
    /// Slack's `X-Slack-Signature` (the identity is the body's `event_id`).
    Slack(Secret),
}

impl WebhookSigner {
    /// The headers of one attempt: `identity` is the event identity for schemes that carry
    /// it in a header, `attempt` distinguishes per-attempt ids (the demo scheme's delivery
    /// id), `now` is the attempt's timestamp.
    #[must_use]
    pub fn headers(&self, identity: &str, attempt: u32, now: UnixTime, body: &[u8]) -> Vec<(&'static str, String)> {
        let ts = now.0.to_string();
        match self {
            Self::StandardWebhooks(key) => vec![
                (standard::ID_HEADER, identity.to_owned()),
                (standard::TIMESTAMP_HEADER, ts),
                (standard::SIGNATURE_HEADER, standard::sign(key, identity, now.0, body)),
            ],
            Self::Demo(key) => {
                let delivery_id = format!("{}-{attempt}", demo_safe(identity));
                let signature = demo::sign(key, &delivery_id, &ts, body);
                vec![
                    (demo::DELIVERY_ID_HEADER, delivery_id),
                    (demo::TIMESTAMP_HEADER, ts),
                    (demo::SIGNATURE_HEADER, signature),
                ]
            }
            Self::GitHub(key) => {
                vec![
                    (github::DELIVERY_HEADER, identity.to_owned()),
                    (github::SIGNATURE_HEADER, github::sign(key, body)),
                ]
            }
            Self::Stripe(key) => vec![(stripe::SIGNATURE_HEADER, stripe::sign(key, now, body))],
            Self::Shopify(key) => {
                vec![
                    (shopify::EVENT_ID_HEADER, identity.to_owned()),
                    (shopify::SIGNATURE_HEADER, shopify::sign(key, body)),
                ]
            }
            Self::Slack(key) => {
                let signature = slack::sign(key, &ts, body);
                vec![(slack::TIMESTAMP_HEADER, ts), (slack::SIGNATURE_HEADER, signature)]
            }
        }
    }
}

/// The demo scheme's delivery ids are `[a-z0-9-]{1,64}`.
fn demo_safe(identity: &str) -> String {
    identity.to_ascii_lowercase().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(48).collect()
}
