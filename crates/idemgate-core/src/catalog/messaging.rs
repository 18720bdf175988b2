//! Messaging and communication providers whose schemes the HMAC template cannot express:
//! Twilio (the URL and the sorted form parameters), SendGrid (ECDSA P-256), Discord and
//! Telnyx (ed25519). Each is a coded scheme in [`crate::scheme`].

use super::{Backing, Identity, Provider, Registry, Signing};
use crate::{
    form::BodyFormat,
    scheme::{Discord, SendGrid, Telnyx, Twilio},
};

pub(super) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "twilio",
        title: "Twilio",
        signing: Signing::Coded(&Twilio::DEFAULT),
        identity: Some(Identity::Header("i-twilio-idempotency-token")),
        identity_note: "Twilio adds I-Twilio-Idempotency-Token to its webhook requests so that a receiver can \
                        recognise Twilio's own retries of a request, which carry the same token (Webhooks: \
                        Connection Overrides; paraphrased, the page's wording on the header could not be quoted \
                        here). Not signed. MessageSid is no identity for status callbacks: every status of one \
                        message carries it.",
        event_type: Some("/MessageStatus"),
        body: BodyFormat::Form,
        per_attempt: &[],
        retry_note: "Twilio retries a request only when the connection fails (by default once, on a connect \
                     timeout; more with the #rc and #rp URL overrides), resending the same parameters with the \
                     same signature.",
        docs: "https://www.twilio.com/docs/usage/webhooks/webhooks-security",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "twilio",
            api: "RequestValidator.compute_signature",
        },
    },
    Provider {
        name: "sendgrid",
        title: "SendGrid (Event Webhook)",
        signing: Signing::Coded(&SendGrid::DEFAULT),
        identity: None,
        identity_note: "None for a POST: it carries a batch of events, each with its own sg_event_id, \"unique for \
                        every event\"; SendGrid recommends deduplicating events by it (\"It is possible to see \
                        duplicate events in the data posted by the Event Webhook\", Troubleshooting the Event \
                        Webhook) and documents no identity of the batch, nor that a retried POST holds the same \
                        batch. A source that accepts a 409 for a re-batched retry may name /0/sg_event_id.",
        event_type: None,
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"Any other response type will result in our server retrying a POST until we receive a 2xx \
                     response or the maximum time has expired. All events are retried at increasing intervals for \
                     up to 24 hours after the event occurs\" (Troubleshooting the Event Webhook). Whether a retried \
                     POST is signed at its own time is not documented, so the default tolerance is those 24 hours.",
        docs: "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "sendgrid",
            api: "EventWebhook.verify_signature",
        },
    },
    Provider {
        name: "discord",
        title: "Discord (webhook events)",
        signing: Signing::Coded(&Discord::DEFAULT),
        identity: None,
        identity_note: "None: a webhook event's body (version, application_id, type, and event with type, \
                        timestamp, data) carries no event id (Webhook Events, Payload Structure); some events' data \
                        does, e.g. ENTITLEMENT_CREATE's entitlement id at /event/data/id. Interactions carry /id, \
                        but Discord does not retry them and expects an interaction response. Discord also validates \
                        the URL with a PING that expects \"a 204 response with an empty body\", which idemgate \
                        does not give.",
        event_type: Some("/event/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"If your app doesn't respond to the webhook event, Discord will retry sending it several \
                     times using exponential backoff for up to 10 minutes\" (Responding to Events). Whether a retry \
                     is signed at its own time is not documented, so the default tolerance is those 10 minutes.",
        docs: "https://docs.discord.com/developers/events/webhook-events",
        backing: Backing::Library { registry: Registry::PyPi, package: "discord-interactions", api: "verify_key" },
    },
    Provider {
        name: "telnyx",
        title: "Telnyx",
        signing: Signing::Coded(&Telnyx::DEFAULT),
        identity: Some(Identity::Body("/data/id")),
        identity_note: "data.id, the event's id: \"Record the event identifier ... Process the event asynchronously \
                        and idempotently\" since events \"can be concurrent, duplicated, delayed, or delivered out \
                        of order\" (Webhooks, Delivery contract). Signed with the body.",
        event_type: Some("/data/event_type"),
        body: BodyFormat::Json,
        per_attempt: &["/meta/attempt", "/meta/delivered_to"],
        retry_note: "\"If your server doesn't respond in time, Telnyx retries (up to 3 attempts per URL) and then \
                     tries your failover URL\"; each attempt counts up meta.attempt (\"Number of attempts to \
                     deliver the webhook event\"), names its URL in meta.delivered_to and is signed anew.",
        docs: "https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "telnyx",
            api: "lib.webhook_verification.verify_webhook_signature",
        },
    },
];
