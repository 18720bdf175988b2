//! Support, messaging, voice and meeting tools: Resend and Clerk (both send through Svix),
//! Zoom, Customer.io and Plivo.
//!
//! Each entry is backed by the provider's own library in `tests/providers/support.py`
//! (Resend, Plivo) and `tests/providers/node/support.mjs` (Clerk, Zoom, Customer.io).

use super::{Backing, HmacSpec, Identity, Provider, Registry, Signing};
use crate::{
    form::BodyFormat,
    scheme::{
        Plivo, StandardWebhooks,
        generic::{Algorithm, Encoding},
    },
};

pub(super) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "resend",
        title: "Resend",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("svix-id")),
        identity_note: "Resend sends through Svix: \"svix-id: the unique message identifier for the webhook \
                        message. This identifier is unique across all messages, but will be the same when the same \
                        webhook is being resent (e.g. due to a previous failure)\" (Svix docs, Verifying webhooks \
                        manually). Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"We attempt to deliver each webhook message based on a schedule with exponential backoff\" \
                     (immediately, 5 seconds, 5 minutes, … 10 hours; Retries and Replays); an attempt resends the \
                     message's payload under the same svix-id, with its own svix-timestamp and signature.",
        docs: "https://resend.com/docs/webhooks/verify-webhooks-requests",
        backing: Backing::Library { registry: Registry::PyPi, package: "resend", api: "Webhooks.verify" },
    },
    Provider {
        name: "clerk",
        title: "Clerk",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("svix-id")),
        identity_note: "\"Clerk uses Svix to send our webhooks\" (Webhooks overview), and for Svix \"svix-id: the \
                        unique message identifier for the webhook message. This identifier is unique across all \
                        messages, but will be the same when the same webhook is being resent (e.g. due to a \
                        previous failure)\" (Svix docs, Verifying webhooks manually). Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Svix's schedule (immediately, 5 seconds, 5 minutes, … 10 hours); an attempt resends the \
                     message's payload under the same svix-id, with its own svix-timestamp and signature.",
        docs: "https://clerk.com/docs/guides/development/webhooks/overview",
        backing: Backing::Library { registry: Registry::Npm, package: "@clerk/backend", api: "verifyWebhook" },
    },
    Provider {
        name: "zoom",
        title: "Zoom",
        signing: Signing::Hmac(HmacSpec {
            timestamp_header: Some("x-zm-request-timestamp"),
            ..HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-zm-signature", "v0=", "v0:{timestamp}:{body}")
        }),
        identity: None,
        identity_note: "None: a notification's body is event, event_ts and payload (Zoom's webhook-sample), \
                        with no event id, and Zoom's docs name no identifier that survives its retries (event_ts is \
                        when the event happened); a source names its own.",
        event_type: Some("/event"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Without a 200 or 204 within three seconds Zoom \"will send it 3 more times\": 5 minutes, then \
                     20 and 60 minutes after the previous retry (Resolving webhook delays); it does not say what \
                     changes between attempts.",
        docs: "https://developers.zoom.us/docs/api/webhooks/",
        backing: Backing::Library { registry: Registry::Npm, package: "@zoom/rivet", api: "AwsLambdaReceiver" },
    },
    Provider {
        name: "customerio",
        title: "Customer.io (Reporting Webhooks)",
        signing: Signing::Hmac(HmacSpec {
            timestamp_header: Some("x-cio-timestamp"),
            ..HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-cio-signature", "", "v0:{timestamp}:{body}")
        }),
        identity: Some(Identity::Body("/event_id")),
        identity_note: "event_id, the reporting event's unique id in every payload (Reporting Webhooks \
                        reference); a failed call is not rebuilt but retried: \"we retry the webhook over a period \
                        of seven days with an exponential backoff. We backlog subsequent webhook calls and won't \
                        continue processing them until the timed-out webhook call returns a successful response\". \
                        Signed with the body.",
        event_type: Some("/metric"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "The same webhook call again, for up to seven days. Customer.io does not say whether a retry \
                     is signed anew with its own X-CIO-Timestamp; its SDK's verifyRequestSignature checks no \
                     tolerance, so a source whose retries are refused as stale raises `tolerance`.",
        docs: "https://docs.customer.io/api/webhooks/",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "customerio-node",
            api: "verifyRequestSignature",
        },
    },
    Provider {
        name: "plivo",
        title: "Plivo",
        signing: Signing::Coded(&Plivo::DEFAULT),
        identity: None,
        identity_note: "None: a callback carries the call's or message's parameters (CallUUID, MessageUUID, \
                        Status, …), several callbacks share them as a call or message changes state, and Plivo \
                        names no identifier of one callback that survives a retry; a source names its own.",
        event_type: None,
        body: BodyFormat::Form,
        per_attempt: &[],
        retry_note: "Plivo's docs say nothing of what a retried callback resends; every request carries its own \
                     X-Plivo-Signature-V3-Nonce, signed.",
        docs: "https://docs.plivo.com/docs/voice/xml/request/validation",
        backing: Backing::Library { registry: Registry::PyPi, package: "plivo", api: "utils.validate_v3_signature" },
    },
];
