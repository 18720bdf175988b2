//! Business applications: CRM, media, files, identity, sites and voice (HubSpot, Mux, Box,
//! WorkOS, Webflow, ElevenLabs). Each entry is backed by the provider's own library in
//! `tests/providers/business.py` or `tests/providers/node/business.mjs`.
//!
//! Not here, for want of an official library that signs or verifies, or published example
//! vectors: Dropbox (`X-Dropbox-Signature`, and no event identity: the body only lists the
//! accounts that changed), DocuSign Connect, Airtable (a notification without the changes
//! or an identity), Xero, Intuit QuickBooks and Asana (events without an id).

use super::{Backing, HmacSpec, Identity, Pairs, Provider, Registry, Signing};
use crate::{
    form::BodyFormat,
    scheme::{
        BoxV2,
        generic::{Algorithm, Encoding, TimestampUnit},
    },
};

/// `t=<timestamp>,<version>=<hex>` over `<timestamp>.<body>` (Mux, WorkOS, ElevenLabs).
const fn dotted_pairs(header: &'static str, signature: &'static str, unit: TimestampUnit) -> HmacSpec {
    HmacSpec {
        pairs: Some(Pairs { separator: ',', timestamp: Some("t"), signature }),
        timestamp_unit: unit,
        ..HmacSpec::new(Algorithm::Sha256, Encoding::Hex, header, "", "{timestamp}.{body}")
    }
}

pub(super) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "hubspot",
        title: "HubSpot",
        signing: Signing::Hmac(HmacSpec {
            timestamp_header: Some("x-hubspot-request-timestamp"),
            timestamp_unit: TimestampUnit::Milliseconds,
            ..HmacSpec::new(
                Algorithm::Sha256,
                Encoding::Base64,
                "x-hubspot-signature-v3",
                "",
                "POST{url}{body}{timestamp}",
            )
        }),
        identity: Some(Identity::Body("/0/eventId")),
        identity_note: "The first event's eventId: \"The ID of the event that triggered this notification. This value \
                        is not guaranteed to be unique\"; attemptNumber is \"which number attempt this is to notify \
                        your service of this event\" (Webhooks API, event fields). A request is a batch of up to 100 \
                        events; HubSpot names no id for the batch. Signed with the body.",
        event_type: Some("/0/subscriptionType"),
        body: BodyFormat::Json,
        per_attempt: &["/*/attemptNumber"],
        retry_note: "\"If your service times-out or throws an error ..., HubSpot will attempt to send the notification \
                     again\" with each event's attemptNumber (\"Starting at 0\") counted up; \
                     X-HubSpot-Request-Timestamp and the signature are new.",
        docs: "https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "hubspot-api-client",
            api: "utils.signature.Signature.get_signature",
        },
    },
    Provider {
        name: "mux",
        title: "Mux",
        signing: Signing::Hmac(dotted_pairs("mux-signature", "v1", TimestampUnit::Seconds)),
        identity: Some(Identity::Body("/id")),
        identity_note: "id: \"Unique identifier for the event\" (@mux/mux-node, BaseWebhookEvent); Mux \"will \
                        continue to try the message for the next 24 hours\" and \"duplicate webhook messages may be \
                        sent\" (Listen for webhooks). Signed with the body.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &["/attempts"],
        retry_note: "A retry resends the event with its attempts (\"Attempts for sending out the webhook event\") \
                     grown by the failed ones; t= and the signature are new.",
        docs: "https://www.mux.com/docs/core/listen-for-webhooks",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "@mux/mux-node",
            api: "webhooks.verifySignature",
        },
    },
    Provider {
        name: "box",
        title: "Box",
        signing: Signing::Coded(&BoxV2::DEFAULT),
        identity: Some(Identity::Body("/id")),
        identity_note: "\"BOX-DELIVERY-ID: A unique ID assigned by Box that identifies the delivered webhook payload. \
                        When Box retries a webhook this ID will change, while the ID in the payload body remains the \
                        same\" (V2 Webhooks, Payload headers). Signed with the body.",
        event_type: Some("/trigger"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A retry resends the same body with a new BOX-DELIVERY-ID, BOX-DELIVERY-TIMESTAMP and signatures.",
        docs: "https://developer.box.com/guides/webhooks/v2/signatures-v2/",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "box-node-sdk",
            api: "WebhooksManager.validateMessage",
        },
    },
    Provider {
        name: "workos",
        title: "WorkOS",
        signing: Signing::Hmac(dotted_pairs("workos-signature", "v1", TimestampUnit::Milliseconds)),
        identity: Some(Identity::Body("/id")),
        identity_note: "The event's id (event_…): WorkOS \"will automatically retry the event with exponential \
                        back-off for up to 3 days\" (Webhooks best practices): the event, with its id. Signed with \
                        the body.",
        event_type: Some("/event"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A retry resends the same event; only t= (milliseconds) and the signature are new.",
        docs: "https://workos.com/docs/events/data-syncing/webhooks",
        backing: Backing::Library { registry: Registry::PyPi, package: "workos", api: "webhooks.verify_header" },
    },
    Provider {
        name: "webflow",
        title: "Webflow",
        signing: Signing::Hmac(HmacSpec {
            timestamp_header: Some("x-webflow-timestamp"),
            timestamp_unit: TimestampUnit::Milliseconds,
            ..HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-webflow-signature", "", "{timestamp}:{body}")
        }),
        identity: None,
        identity_note: "None: \"The webhook body will be a JSON resource object that relates to the event\" (Working \
                        with webhooks), with no event or delivery id. payload.id is the form submission for \
                        form_submission, but the item for CMS triggers, so a source names it per trigger.",
        event_type: Some("/triggerType"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"Webflow will now make a maximum of 3 attempts to send a webhook event\" (Webhook retries); \
                     nothing documented changes in the body, x-webflow-timestamp and the signature are new. Only webhooks created by \
                     an OAuth app are signed.",
        docs: "https://developers.webflow.com/data/docs/working-with-webhooks",
        backing: Backing::Library { registry: Registry::Npm, package: "webflow-api", api: "webhooks.verifySignature" },
    },
    Provider {
        name: "elevenlabs",
        title: "ElevenLabs",
        signing: Signing::Hmac(dotted_pairs("elevenlabs-signature", "v0", TimestampUnit::Seconds)),
        identity: Some(Identity::Body("/data/conversation_id")),
        identity_note: "\"Use the event_timestamp and event-specific identifiers (such as conversation_id) to \
                        deduplicate events\" (Webhooks, Integration). post_call_audio carries the same \
                        conversation_id as post_call_transcription, so it belongs on a source of its own; voice \
                        notices carry none. Signed with the body.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"The retry payload is identical to the original delivery attempt\"; retries are off by default \
                     and only for post_call_transcription (Webhooks, Retries).",
        docs: "https://elevenlabs.io/docs/eleven-api/resources/webhooks",
        backing: Backing::Library { registry: Registry::PyPi, package: "elevenlabs", api: "webhooks.construct_event" },
    },
];
