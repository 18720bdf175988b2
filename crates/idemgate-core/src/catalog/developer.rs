//! Developer tools: issue trackers, code hosting, content platforms, incident response and
//! AI APIs (Linear, Notion, Sanity, OpenAI, Replicate, PagerDuty, GitLab).
//!
//! Left out, for want of an official library on PyPI, npm or crates.io that signs or
//! verifies their deliveries and of a published example vector: Bitbucket Cloud, Jira,
//! Sentry, Vercel, Meta (WhatsApp), Twitch EventSub; Contentful's request signing covers the
//! method, the path and a variable list of headers, which a template cannot say.

use super::{Backing, HmacSpec, Identity, Pairs, Provider, Registry, Signing};
use crate::{
    form::BodyFormat,
    scheme::{
        StandardWebhooks,
        generic::{Algorithm, Encoding, TimestampUnit},
    },
};

pub(super) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "linear",
        title: "Linear",
        signing: Signing::Hmac(HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "linear-signature", "", "{body}")),
        identity: Some(Identity::Header("linear-delivery")),
        identity_note: "Linear-Delivery: \"An UUID (v4) uniquely identifying this payload\" (Linear webhooks, \
                        Headers); the docs do not say in so many words that a retry keeps it. Not signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &["/webhookTimestamp"],
        retry_note: "\"the push will be retried a maximum of 3 times ... after 1 minute, 1 hour, and finally after \
                     6 hours\"; the body's webhookTimestamp is \"UNIX timestamp when the webhook was sent\", which \
                     receivers are told to check is \"within a minute\", so each attempt carries its own, signed.",
        docs: "https://linear.app/developers/webhooks",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "@linear/sdk",
            api: "LinearWebhookClient.verify",
        },
    },
    Provider {
        name: "notion",
        title: "Notion",
        signing: Signing::Hmac(HmacSpec::new(
            Algorithm::Sha256,
            Encoding::Hex,
            "x-notion-signature",
            "sha256=",
            "{body}",
        )),
        identity: Some(Identity::Body("/id")),
        identity_note: "id: \"The unique ID of the webhook event\", and attempt_number: \"Attempt number (1-8) of the \
                        current event delivery\" (Webhooks, Event properties): the attempts are deliveries of one \
                        event under its id. Signed with the body.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &["/attempt_number"],
        retry_note: "Up to eight attempts of the same event, each with its own attempt_number, re-signed.",
        docs: "https://developers.notion.com/reference/webhooks-events-delivery",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "@notionhq/client",
            api: "signWebhookPayload, verifyWebhookSignature",
        },
    },
    Provider {
        name: "sanity",
        title: "Sanity (GROQ-powered webhooks)",
        signing: Signing::Hmac(HmacSpec {
            pairs: Some(Pairs { separator: ',', timestamp: Some("t"), signature: "v1" }),
            timestamp_unit: TimestampUnit::Milliseconds,
            ..HmacSpec::new(
                Algorithm::Sha256,
                Encoding::Base64Url,
                "sanity-webhook-signature",
                "",
                "{timestamp}.{body}",
            )
        }),
        identity: Some(Identity::Header("idempotency-key")),
        identity_note: "\"Requests include a new header that can be used to de-duplicate deliveries: idempotency-key. \
                        This is necessary because webhooks will sometimes be retried ... Using the unique \
                        idempotency key lets the receiver ignore messages it has already received\" (GROQ-powered \
                        webhooks, Idempotency-key). Not signed.",
        event_type: None,
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "429 and 5xx answers are retried, since April 2026 \"twice at 30-second intervals\" (Changelog); \
                     the body is the webhook's projection of the change, and the signature carries its time (t=, \
                     in milliseconds).",
        docs: "https://www.sanity.io/docs/content-lake/webhooks",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "@sanity/webhook",
            api: "encodeSignatureHeader, isValidSignature",
        },
    },
    Provider {
        name: "openai",
        title: "OpenAI",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "OpenAI's webhooks follow \"the Standard Webhooks specification\" (Webhooks guide), whose \
                        webhook-id \"will be the same when the same webhook is being resent (e.g. due to a previous \
                        failure)\" (the specification, Webhook metadata). Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "\"the webhook request will be retried with exponential backoff for up to 72 hours\"; a retry \
                     carries the same webhook-id and event with a new webhook-timestamp and signature.",
        docs: "https://platform.openai.com/docs/guides/webhooks",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "openai",
            api: "client.webhooks.verify_signature",
        },
    },
    Provider {
        name: "replicate",
        title: "Replicate",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "webhook-id: \"The unique message identifier for the webhook messages. This identifier is \
                        unique across all messages but will be the same when a webhook is being resent (e.g. \
                        retried)\" (Verify webhooks). Signed.",
        event_type: None,
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A resent webhook carries the same webhook-id and prediction with a new webhook-timestamp and \
                     signature.",
        docs: "https://replicate.com/docs/topics/webhooks/verify-webhook",
        backing: Backing::Library { registry: Registry::PyPi, package: "replicate", api: "webhook.Webhooks.validate" },
    },
    Provider {
        name: "pagerduty",
        title: "PagerDuty (v3 webhooks)",
        signing: Signing::Hmac(HmacSpec {
            pairs: Some(Pairs { separator: ',', timestamp: None, signature: "v1" }),
            ..HmacSpec::new(Algorithm::Sha256, Encoding::Hex, "x-pagerduty-signature", "", "{body}")
        }),
        identity: Some(Identity::Body("/event/id")),
        identity_note: "event.id: \"The unique id of the event\" (v3 Overview, Webhook Payload); a payload carries \
                        one event, and X-Webhook-Id \"is unique to the webhook but is repeated for each delivery \
                        attempt\" (Behavior, At-Least-Once Delivery). Signed with the body.",
        event_type: Some("/event/event_type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Up to 4 retries (5 attempts) over about 20 minutes of the same webhook; the signature header \
                     carries one v1= entry per signing secret during a rotation.",
        docs: "https://github.com/PagerDuty/developer-docs/blob/main/docs/webhooks/04-Signatures.md",
        backing: Backing::Vectors {
            source: "https://github.com/PagerDuty/go-pagerduty/blob/3df5eb4e62dcdf897d37106578d7be6ad54449dc/\
                     webhookv3/webhookv3_test.go",
        },
    },
    Provider {
        name: "gitlab",
        title: "GitLab",
        signing: Signing::Token("x-gitlab-token"),
        identity: Some(Identity::Header("idempotency-key")),
        identity_note: "Idempotency-Key: \"Unique ID consistent across webhook retries. Use to ensure idempotency in \
                        integrations\" (Webhooks, Delivery headers); X-Gitlab-Webhook-UUID is new for each request. \
                        Not signed: the secret token covers nothing.",
        event_type: Some("/object_kind"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A resend (Recent events, Resend request) repeats the request's body and Idempotency-Key.",
        docs: "https://docs.gitlab.com/user/project/integrations/webhooks/",
        backing: Backing::Vectors { source: "https://docs.gitlab.com/user/project/integrations/webhooks/" },
    },
];
