//! Payments and billing providers: how each signs its webhooks, which identity it keeps
//! across retries, and what a retry changes. Driver: `tests/providers/payments.py`.

use super::{Backing, HmacSpec, Identity, Pairs, Provider, Registry, Signing};
use crate::{
    form::BodyFormat,
    scheme::{
        StandardWebhooks,
        generic::{Algorithm, Encoding},
    },
};

pub(super) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "paddle",
        title: "Paddle Billing",
        signing: Signing::Hmac(HmacSpec {
            pairs: Some(Pairs { separator: ';', timestamp: Some("ts"), signature: "h1" }),
            ..HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "paddle-signature", "", "{timestamp}:{body}")
        }),
        identity: Some(Identity::Body("/event_id")),
        identity_note: "\"Paddle guarantees at-least-once delivery, so make your handler idempotent using \
                        event_id as a deduplication key — the same event can arrive more than once.\" \
                        (Paddle, How webhooks work). Signed with the body.",
        event_type: Some("/event_type"),
        body: BodyFormat::Json,
        per_attempt: &["/notification_id"],
        retry_note: "Paddle retries a failed notification with the same body, the Paddle-Signature made \
                     anew (ts, h1). A replay is a new notification: \"Paddle creates a new notification \
                     entity for the replay, related to the same event_id\", so its body carries a new \
                     notification_id; that field alone is left out of the comparison.",
        docs: "https://developer.paddle.com/webhooks/signature-verification",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "paddle-python-sdk",
            api: "Notifications.PaddleSignature.verify",
        },
    },
    Provider {
        name: "square",
        title: "Square",
        signing: Signing::Hmac(HmacSpec::new(
            Algorithm::Sha256,
            Encoding::Base64,
            "x-square-hmacsha256-signature",
            "",
            "{url}{body}",
        )),
        identity: Some(Identity::Body("/event_id")),
        identity_note: "\"Use the generated idempotency value that's included as the event_id field in the \
                        body of each event notification. Design your application to use this value to \
                        bypass processing if it's a repeated value.\" (Square, Create a Notification URL). Signed \
                        with the body.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"If your application fails to acknowledge the notification in a timely manner, a \
                     duplicate event is sent\"; unsuccessful deliveries are retried for up to 24 hours. \
                     The signature covers only the notification URL and the body, so a repeat carries the \
                     same bytes and the same signature.",
        docs: "https://developer.squareup.com/docs/webhooks/step3validate",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "squareup",
            api: "square.utils.webhooks_helper.verify_signature",
        },
    },
    Provider {
        name: "razorpay",
        title: "Razorpay",
        signing: Signing::Hmac(HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-razorpay-signature", "", "{body}")),
        identity: Some(Identity::Header("x-razorpay-event-id")),
        identity_note: "\"Ignore duplicates using the x-razorpay-event-id header.\" (Razorpay, Webhooks and \
                        Fetch APIs best practices). Not signed.",
        event_type: Some("/event"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A failed delivery is retried \"in exponential backoff policy for 24 hours after event \
                     creation timestamp\"; replayed events \"are sent to your endpoint exactly as they were \
                     originally generated\". Raw bytes are compared.",
        docs: "https://razorpay.com/docs/webhooks/best-practices/",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "razorpay",
            api: "Utility.verify_webhook_signature",
        },
    },
    Provider {
        name: "coinbase-commerce",
        title: "Coinbase Commerce",
        signing: Signing::Hmac(HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-cc-webhook-signature", "", "{body}")),
        identity: Some(Identity::Body("/event/id")),
        identity_note: "The delivery wraps the event (\"event: Event data\") with per-attempt fields \
                        (\"attempt_number: Delivery attempt number\"); the wrapped event and its id are what \
                        each attempt delivers again. (Coinbase Commerce, Webhook fields). Signed with the body.",
        event_type: Some("/event/type"),
        body: BodyFormat::Json,
        per_attempt: &["/attempt_number", "/scheduled_for"],
        retry_note: "\"If there is no acknowledgement of receipt, we retry with an exponential backoff for up \
                     to three days.\" Each attempt's signed body carries its own attempt_number (\"Delivery \
                     attempt number\") and scheduled_for (\"Delivery schedule time\"); only those two are left \
                     out of the comparison.",
        docs: "https://docs.cdp.coinbase.com/commerce/api-arcitecture/webhooks-overview",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "coinbase-commerce",
            api: "WebhookSignature.verify_sig_header",
        },
    },
    Provider {
        name: "gocardless",
        title: "GoCardless",
        signing: Signing::Hmac(HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "webhook-signature", "", "{body}")),
        identity: None,
        identity_note: "None documented. A webhook is a batch: \"Webhooks may contain multiple events. These \
                        events need not have anything in common\", each event with its own id; meta.webhook_id \
                        names the webhook, and GoCardless does not say that a retry keeps it (its webhooks API \
                        records each request it sent). The source names its identity itself.",
        event_type: None,
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"If a webhook fails, we will retry the webhook up to 8 times at increasing intervals\" \
                     (GoCardless support, Webhook retries / failures). Whether a retry resends the same bytes \
                     is not documented; the raw bytes are compared under the identity the source names.",
        docs: "https://developer.gocardless.com/getting-started/partners/staying-up-to-date-with-webhooks/",
        backing: Backing::Library { registry: Registry::PyPi, package: "gocardless-pro", api: "webhooks.parse" },
    },
    Provider {
        name: "easypost",
        title: "EasyPost",
        signing: Signing::Hmac(HmacSpec::new(
            Algorithm::Sha256,
            Encoding::Hex,
            "x-hmac-signature",
            "hmac-sha256-hex=",
            "{body}",
        )),
        identity: Some(Identity::Body("/id")),
        identity_note: "\"Every time an Event related to one of your objects is created, EasyPost guarantees at \
                        least one POST request will be sent to each of the webhook URLs ... we strongly \
                        encourage your webhook handler to be idempotent.\" The body is that Event; its id \
                        (evt_…) names it. (EasyPost, Event). Signed with the body.",
        event_type: Some("/description"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"in the event of a failure, EasyPost retries the webhook\": the Event is POSTed again. \
                     EasyPost documents no field that changes between attempts, so raw bytes are compared. \
                     The libraries NFKD-normalise the secret before keying: configure it in that form.",
        docs: "https://docs.easypost.com/guides/webhooks-guide",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "easypost",
            api: "easypost.util.validate_webhook",
        },
    },
    Provider {
        name: "polar",
        title: "Polar",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "Polar follows Standard Webhooks: \"webhook-id: the unique message identifier for the \
                        webhook message. This identifier is unique across all messages, but will be the same \
                        when the same webhook is being resent\". The secret is configured as whsec_ + base64 of \
                        the Polar secret's text. Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Polar \"guarantees at-least-once delivery\" and retries failed deliveries with \
                     exponential backoff; a retry is the same message (same webhook-id and body) signed again \
                     with a new webhook-timestamp. Raw bytes are compared.",
        docs: "https://polar.sh/docs/integrate/webhooks/delivery",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "polar-sdk",
            api: "polar.v2026_10.webhooks.validate_event",
        },
    },
    Provider {
        name: "lithic",
        title: "Lithic",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "Lithic signs with Standard Webhooks (Svix): \"webhook-id: the unique message \
                        identifier for the webhook message. This identifier is unique across all messages, but \
                        will be the same when the same webhook is being resent\". Signed.",
        event_type: Some("/event_type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Failed messages are retried, and can be replayed from the Events API, as the same \
                     message: same webhook-id and body, a new webhook-timestamp and signature. Raw bytes are \
                     compared.",
        docs: "https://docs.lithic.com/docs/events-api",
        backing: Backing::Library { registry: Registry::PyPi, package: "lithic", api: "Webhooks.verify_signature" },
    },
];
