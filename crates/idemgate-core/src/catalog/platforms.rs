//! Platforms products are built on: Liveblocks, Dodo Payments and ImageKit (Standard
//! Webhooks), Stream Chat and Modern Treasury (a hex HMAC-SHA256 of the body) and Metronome
//! (a hex HMAC-SHA256 of its date header and the body).
//!
//! Each entry is backed by the provider's own library in `tests/providers/node/platforms.mjs`.

use super::{Backing, HmacSpec, Identity, Provider, Registry, Signing};
use crate::{
    form::BodyFormat,
    scheme::{
        StandardWebhooks,
        generic::{Algorithm, Encoding},
    },
};

pub(super) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "liveblocks",
        title: "Liveblocks",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "Liveblocks' endpoints are Svix endpoints (its dashboard offers \"use Svix play\"), and its \
                        @liveblocks/node WebhookHandler checks webhook-id, webhook-timestamp and webhook-signature \
                        as Standard Webhooks defines them: \"webhook-id: the unique message identifier for the \
                        webhook message. This identifier is unique across all messages, but will be the same when \
                        the same webhook is being resent\". Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"If your service is unreachable, message retries are automatically re-attempted\" on a \
                     schedule (an attempt that fails three times is delivered \"roughly 35 minutes and 5 seconds \
                     following the first attempt\"; Replaying events): the same message, signed again with its own \
                     webhook-timestamp. Raw bytes are compared.",
        docs: "https://liveblocks.io/docs/platform/webhooks",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "@liveblocks/node",
            api: "WebhookHandler.verifyRequest",
        },
    },
    Provider {
        name: "dodopayments",
        title: "Dodo Payments",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "\"Each webhook event contains a unique webhook-id header. Use this to implement idempotency \
                        and avoid processing the same event multiple times. Even if you receive the same event more \
                        than once (due to retries), your system should handle it gracefully\" (Webhooks, \
                        Idempotency). Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Up to 10 retries with exponential backoff, from 6 seconds to at most 6 hours apart. Dodo \
                     Payments warns: \"you will receive the latest payload at the time of delivery, regardless of \
                     when the webhook event was emitted\"; a retry whose payload changed meanwhile is a changed \
                     event under the same webhook-id, refused 409 (and kept for inspection), never taken as a \
                     duplicate. Raw bytes are compared.",
        docs: "https://docs.dodopayments.com/developer-resources/webhooks",
        backing: Backing::Library { registry: Registry::Npm, package: "dodopayments", api: "webhooks.unwrap" },
    },
    Provider {
        name: "imagekit",
        title: "ImageKit",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "\"ImageKit follows the Standard Webhooks specification\" (Webhooks, Verify webhook \
                        signature), whose \"webhook-id: the unique message identifier for the webhook message. This \
                        identifier is unique across all messages, but will be the same when the same webhook is \
                        being resent\"; the body's id is the \"Unique identifier of the event\". The secret is \
                        configured as whsec_ + base64 of the ImageKit secret's text, the key its SDK's \
                        webhooks.unwrap uses. Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "ImageKit's docs say nothing of its retries beyond following Standard Webhooks, where a \
                     resent message keeps its webhook-id and body and is signed with its own webhook-timestamp. \
                     Raw bytes are compared.",
        docs: "https://imagekit.io/docs/webhooks",
        backing: Backing::Library { registry: Registry::Npm, package: "@imagekit/nodejs", api: "webhooks.unwrap" },
    },
    Provider {
        name: "stream-chat",
        title: "Stream Chat",
        signing: Signing::Hmac(HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-signature", "", "{body}")),
        identity: Some(Identity::Header("x-webhook-id")),
        identity_note: "\"X-Webhook-Id: Unique ID of the webhook call. This value is consistent between retries and \
                        could be used to deduplicate retry calls\" (Webhooks Overview). Not signed: the body is \
                        compared too.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"Stream Chat could retry the request\": for a 408, 429 or 5xx answer 3 attempts, all within \
                     15 seconds (Push Webhook); a retry carries the same X-Webhook-Id and counts up \
                     X-Webhook-Attempt, a header. The signature covers the uncompressed body: an app that turns \
                     on gzip compression of webhook payloads cannot use this entry. Raw bytes are compared.",
        docs: "https://getstream.io/chat/docs/java/webhooks_overview/",
        backing: Backing::Library { registry: Registry::Npm, package: "stream-chat", api: "StreamChat.verifyWebhook" },
    },
    Provider {
        name: "modern-treasury",
        title: "Modern Treasury",
        signing: Signing::Hmac(HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-signature", "", "{body}")),
        identity: Some(Identity::Header("x-webhook-id")),
        identity_note: "\"Each webhook has a unique ID. This is passed through as the HTTP header X-Webhook-ID. You \
                        can save these IDs as you process webhooks to ensure each webhook is only\" processed once \
                        (Webhooks, Webhook Idempotency). Not signed: the body is compared too.",
        event_type: Some("/event"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Without a 2XX within 5 seconds \"the webhook will be re-enqueued for delivery at a later time \
                     subject to an exponential backoff\": the same webhook again, under its X-Webhook-ID. Raw \
                     bytes are compared.",
        docs: "https://docs.moderntreasury.com/platform/reference/webhooks",
        backing: Backing::Library { registry: Registry::Npm, package: "modern-treasury", api: "webhooks.getSignature" },
    },
    Provider {
        name: "metronome",
        title: "Metronome",
        signing: Signing::Hmac(HmacSpec::new(
            Algorithm::Sha256,
            Encoding::Hex,
            "metronome-webhook-signature",
            "",
            "{header:x-metronome-date}\n{body}",
        )),
        identity: Some(Identity::Body("/id")),
        identity_note: "\"id: a unique identifier for this specific notification\"; on retries and several webhook \
                        URLs, \"If you want to ensure duplicate notifications are ignored, you can use the \
                        notification's id field to deduplicate\" (Webhooks, Handling duplicate notifications). \
                        Signed with the body.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Without a 2xx Metronome \"continuously retries it with exponential backoff until it hits a \
                     15-minute retry cadence\", for up to two days (~200 retries): \"it will receive the same \
                     notification again\". Each attempt is dated and signed anew (X-Metronome-Date, an HTTP date, \
                     is signed but not a Unix timestamp, so no tolerance is checked on it; its SDK allows five \
                     minutes). Raw bytes are compared.",
        docs: "https://docs.metronome.com/developer-resources/using-the-api/webhooks/",
        backing: Backing::Library { registry: Registry::Npm, package: "@metronome/sdk", api: "webhooks.signPayload" },
    },
];
