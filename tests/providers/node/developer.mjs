// The developer group's providers whose official libraries are on npm: Linear (@linear/sdk's
// LinearWebhookClient verifies what is built as Linear documents it), Notion (@notionhq/client
// signs and verifies) and Sanity (@sanity/webhook signs and verifies). Each library must also
// refuse a changed byte.
import { LinearWebhookClient } from "@linear/sdk/webhooks";
import { signWebhookPayload, verifyWebhookSignature } from "@notionhq/client";
import { encodeSignatureHeader, isValidSignature } from "@sanity/webhook";
import crypto from "node:crypto";

import { NOW, deliver, require, secret, tampered } from "./driver.mjs";

// Runs `fn` with Date.now() at `ms`: Linear's SDK checks the signed webhookTimestamp against it.
function atTime(ms, fn) {
  const real = Date.now;
  Date.now = () => ms;
  try {
    return fn();
  } finally {
    Date.now = real;
  }
}

// Linear: Linear-Signature is the hex HMAC-SHA256 of the raw body under the webhook's signing
// secret; the body's webhookTimestamp (ms) is the attempt's time, and Linear-Delivery names it.
function linear() {
  const key = "lin_wh_developer_group_test_secret";
  secret("linear", key);
  const client = new LinearWebhookClient(key);
  // An Issue created, as Linear's webhook docs show one.
  const issue = (title, webhookTimestamp) =>
    JSON.stringify({
      action: "create",
      actor: { id: "c3e7b1f0-7d1a-4f39-9c1f-2d0b1c8f2e11", type: "user", name: "Ada Lovelace" },
      createdAt: "2026-12-07T00:00:00.000Z",
      data: {
        id: "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9",
        createdAt: "2026-12-07T00:00:00.000Z",
        updatedAt: "2026-12-07T00:00:00.000Z",
        number: 2,
        title,
        priority: 0,
        teamId: "72b2a2dc-6f4f-4423-9d34-24b5bd10634a",
        stateId: "f5a3ad7e-1b07-4b1f-9c43-6b8a5b4e3c21",
        labelIds: [],
        subscriberIds: ["c3e7b1f0-7d1a-4f39-9c1f-2d0b1c8f2e11"],
      },
      url: "https://linear.app/issue/LIN-2/foo-bar",
      type: "Issue",
      organizationId: "3d6c2f8e-52a0-4a4e-8a9b-5b3c7e0f1d22",
      webhookTimestamp,
      webhookId: "000042e3-d123-4980-b49f-8e140eef9329",
    });
  const signed = (body, ms) => {
    const signature = crypto.createHmac("sha256", key).update(body).digest("hex");
    require(atTime(ms, () => client.verify(Buffer.from(body), signature)) === true, "linear verifies it");
    let refused = false;
    try {
      atTime(ms, () => client.verify(tampered(body), signature));
    } catch {
      refused = true;
    }
    require(refused, "linear refuses a changed byte");
    return {
      "Content-Type": "application/json; charset=utf-8",
      "Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72",
      "Linear-Event": "Issue",
      "Linear-Signature": signature,
    };
  };
  const first = NOW * 1000;
  const body = issue("Test issue", first);
  deliver("linear", "first", signed(body, first), body, "accepted");
  // A retry a minute later: the same payload with that attempt's webhookTimestamp, re-signed.
  const retry = issue("Test issue", first + 60_000);
  deliver("linear", "retry", signed(retry, first + 60_000), retry, "duplicate");
  const changed = issue("Another issue", first + 61_000);
  deliver("linear", "changed", signed(changed, first + 61_000), changed, "conflict");
}

// Notion: X-Notion-Signature is "sha256=" and the hex HMAC-SHA256 of the raw body under the
// subscription's verification token; attempt_number (1-8) counts the deliveries of event id.
async function notion() {
  const verificationToken = "secret_notion_developer_group_verification_token";
  secret("notion", verificationToken);
  // The page.created event of Notion's webhook reference.
  const event = (entityId, attempt) =>
    JSON.stringify({
      id: "367cba44-b6f3-4c92-81e7-6a2e9659efd4",
      timestamp: "2024-12-05T23:55:34.285Z",
      workspace_id: "13950b26-c203-4f3b-b97d-93ec06319565",
      workspace_name: "Quantify Labs",
      subscription_id: "29d75c0d-5546-4414-8459-7b7a92f1fc4b",
      integration_id: "0ef2e755-4912-8096-91c1-00376a88a5ca",
      type: "page.created",
      authors: [{ id: "c7c11cca-1d73-471d-9b6e-bdef51470190", type: "person" }],
      accessible_by: [{ id: "556a1abf-4f08-40c6-878a-75890d2a88ba", type: "person" }],
      attempt_number: attempt,
      api_version: "2022-06-28",
      entity: { id: entityId, type: "page" },
      data: { parent: { id: "13950b26-c203-4f3b-b97d-93ec06319565", type: "space" } },
    });
  const signed = async (body) => {
    const signature = await signWebhookPayload({ body, verificationToken });
    require(await verifyWebhookSignature({ body, signature, verificationToken }), "notion verifies its own");
    require(
      !(await verifyWebhookSignature({ body: tampered(body), signature, verificationToken })),
      "notion refuses a changed byte",
    );
    return { "Content-Type": "application/json", "X-Notion-Signature": signature };
  };
  const first = event("153104cd-477e-809d-8dc4-ff2d96ae3090", 1);
  deliver("notion", "first", await signed(first), first, "accepted");
  const retry = event("153104cd-477e-809d-8dc4-ff2d96ae3090", 2);
  deliver("notion", "retry", await signed(retry), retry, "duplicate");
  const changed = event("1a2b3c4d-477e-809d-8dc4-ff2d96ae3090", 3);
  deliver("notion", "changed", await signed(changed), changed, "conflict");
}

// Sanity (GROQ-powered webhooks): sanity-webhook-signature is "t=<ms>,v1=<base64url
// HMAC-SHA256 of '<t>.<body>'>"; idempotency-key de-duplicates deliveries; the body is the
// webhook's projection (by default the whole document after the change).
async function sanity() {
  const key = "sanity developer group webhook secret";
  secret("sanity", key);
  const documentAfter = (title) =>
    JSON.stringify({
      _createdAt: "2026-12-06T21:04:11Z",
      _id: "6a2f0c1e-8b7d-4c3a-9e5f-1d2b3c4d5e6f",
      _rev: "hJdbRk2xQ0sPqA7mNvTz3C",
      _type: "post",
      _updatedAt: "2026-12-07T00:00:00Z",
      slug: { _type: "slug", current: "hello-world" },
      title,
    });
  const signed = async (body, ms) => {
    const signature = await encodeSignatureHeader(body, ms, key);
    require(await isValidSignature(body, signature, key), "sanity verifies its own");
    require(!(await isValidSignature(tampered(body).toString(), signature, key)), "sanity refuses a changed byte");
    return {
      "Content-Type": "application/json",
      "User-Agent": "Sanity.io webhook delivery",
      "idempotency-key": "idem_01JEBX4M2Q7W3ZK8R5T6Y9V0NP",
      "sanity-dataset": "production",
      "sanity-document-id": "6a2f0c1e-8b7d-4c3a-9e5f-1d2b3c4d5e6f",
      "sanity-operation": "update",
      "sanity-project-id": "3do82whm",
      "sanity-transaction-id": "hJdbRk2xQ0sPqA7mNvTz3C",
      "sanity-transaction-time": "2026-12-07T00:00:00.000Z",
      "sanity-webhook-id": "Yt7fJ3KqLm2nPq9R",
      "sanity-webhook-signature": signature,
    };
  };
  const first = documentAfter("Hello world");
  deliver("sanity", "first", await signed(first, NOW * 1000), first, "accepted");
  // A retry 30 seconds later: the same body and idempotency-key, signed at its own time.
  deliver("sanity", "retry", await signed(first, NOW * 1000 + 30_000), first, "duplicate");
  const changed = documentAfter("Goodbye world");
  deliver("sanity", "changed", await signed(changed, NOW * 1000 + 60_000), changed, "conflict");
}

linear();
await notion();
await sanity();
