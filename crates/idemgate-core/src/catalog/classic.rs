//! The providers whose schemes idemgate had before the catalog: Standard Webhooks (and
//! Svix, which wrote it down), GitHub, Stripe, Shopify and Slack.

use super::{Backing, Identity, Provider, Registry, Signing};
use crate::{
    form::BodyFormat,
    scheme::{GitHub, Shopify, Slack, StandardWebhooks, Stripe},
};

pub(super) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "standard-webhooks",
        title: "Standard Webhooks",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("webhook-id")),
        identity_note: "\"webhook-id: the unique message identifier for the webhook message. This identifier is \
                        unique across all messages, but will be the same when the same webhook is being resent (e.g. \
                        due to a previous failure)\" (the specification, Webhook metadata). Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A resend carries the same id and payload; only webhook-timestamp and the signature are new.",
        docs: "https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md",
        backing: Backing::Library { registry: Registry::PyPi, package: "standardwebhooks", api: "Webhook.sign" },
    },
    Provider {
        name: "svix",
        title: "Svix",
        signing: Signing::Coded(&StandardWebhooks::DEFAULT),
        identity: Some(Identity::Header("svix-id")),
        identity_note: "\"svix-id: the unique message identifier for the webhook message. This identifier is unique \
                        across all messages, but will be the same when the same webhook is being resent (e.g. due to \
                        a previous failure)\" (Svix docs, Verifying webhooks manually). Signed.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A retry carries the same svix-id and payload with a new svix-timestamp and signature.",
        docs: "https://docs.svix.com/receiving/verifying-payloads/how-manual",
        backing: Backing::Library { registry: Registry::PyPi, package: "svix", api: "Webhook.sign" },
    },
    Provider {
        name: "github",
        title: "GitHub",
        signing: Signing::Coded(&GitHub),
        identity: Some(Identity::Header("x-github-delivery")),
        identity_note: "X-GitHub-Delivery is \"a globally unique identifier (GUID) to identify the event\"; a \
                        redelivery keeps it (Best practices for using webhooks: \"If you redeliver a webhook, the \
                        X-GitHub-Delivery header will be the same as in the original delivery\"). Not signed.",
        event_type: None,
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "GitHub does not retry on its own; a redelivery resends the same payload and delivery id.",
        docs: "https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries",
        backing: Backing::Library { registry: Registry::Npm, package: "@octokit/webhooks-methods", api: "sign" },
    },
    Provider {
        name: "stripe",
        title: "Stripe",
        signing: Signing::Coded(&Stripe::DEFAULT),
        identity: Some(Identity::Body("/id")),
        identity_note: "The Event object's id: \"guard against duplicated event receipts ... by logging the event \
                        IDs you've processed, and then not processing already-logged events\" (Receive Stripe \
                        events, Handle duplicate events). Signed with the body.",
        event_type: Some("/type"),
        body: BodyFormat::Json,
        per_attempt: &["/pending_webhooks"],
        retry_note: "A retry resends the same Event, re-signed; its pending_webhooks (\"number of webhooks that \
                     haven't been successfully delivered\") can have changed since the first attempt.",
        docs: "https://docs.stripe.com/webhooks",
        backing: Backing::Library { registry: Registry::PyPi, package: "stripe", api: "Webhook.construct_event" },
    },
    Provider {
        name: "shopify",
        title: "Shopify",
        signing: Signing::Coded(&Shopify),
        identity: Some(Identity::Header("x-shopify-event-id")),
        identity_note: "\"X-Shopify-Event-Id ... is the same across duplicate deliveries\" of one event (Ignore \
                        duplicate webhooks); X-Shopify-Webhook-Id names one delivery. Not signed.",
        event_type: None,
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "A retry resends the same payload with the same X-Shopify-Event-Id.",
        docs: "https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates",
        backing: Backing::Library {
            registry: Registry::Npm,
            package: "@shopify/shopify-api",
            api: "runtime createSHA256HMAC (the HMAC webhooks.validate compares)",
        },
    },
    Provider {
        name: "slack",
        title: "Slack (Events API)",
        signing: Signing::Coded(&Slack::DEFAULT),
        identity: Some(Identity::Body("/event_id")),
        identity_note: "event_id: \"a unique identifier for this specific event, globally unique across all \
                        workspaces\"; a retry carries the same event (Events API, Error handling). Signed with the \
                        body.",
        event_type: Some("/event/type"),
        body: BodyFormat::Json,
        per_attempt: &[],
        retry_note: "Up to three retries with the same payload, marked by X-Slack-Retry-Num and X-Slack-Retry-Reason.",
        docs: "https://api.slack.com/authentication/verifying-requests-from-slack",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "slack_sdk",
            api: "signature.SignatureVerifier.generate_signature",
        },
    },
    Provider {
        name: "slack-commands",
        title: "Slack (slash commands)",
        signing: Signing::Coded(&Slack::DEFAULT),
        identity: Some(Identity::Body("/trigger_id")),
        identity_note: "trigger_id: \"a temporary ID generated for the interaction in your app\", one per \
                        invocation (Slack's interaction payload reference). Signed with the body.",
        event_type: Some("/command"),
        body: BodyFormat::Form,
        per_attempt: &[],
        retry_note: "Slack documents no retries of a slash command (a slow answer is shown to the user as an \
                     error); a repeat is the same request resent, with the same bytes.",
        docs: "https://api.slack.com/interactivity/slash-commands",
        backing: Backing::Library {
            registry: Registry::PyPi,
            package: "slack_sdk",
            api: "signature.SignatureVerifier.generate_signature",
        },
    },
];
