// The developer-tools group's providers, signed (or checked) by their official Node libraries:
// Linear (@linear/sdk's LinearWebhookClient verifies), Notion (@notionhq/client signs and
// verifies) and Sanity (@sanity/webhook signs and verifies). Prints JSON lines as tests/providers/README (the catalog spec) describes: for each
// provider its secret, then the cases first, retry and changed. Exits non-zero on any error,
// including a library that refuses what is built here or accepts a changed byte.
//
// Env: PROVIDERS_NOW (unix seconds to sign at), PROVIDERS_BASE_URL (unused: neither provider
// signs its URL).

import { LinearWebhookClient } from "@linear/sdk/webhooks";
import { signWebhookPayload, verifyWebhookSignature } from "@notionhq/client";
import { encodeSignatureHeader, isValidSignature } from "@sanity/webhook";
import crypto from "node:crypto";

const now = Number.parseInt(process.env.PROVIDERS_NOW ?? "", 10);
if (!Number.isSafeInteger(now) || now <= 0) {
  throw new Error("PROVIDERS_NOW must be unix seconds");
}

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const b64 = (text) => Buffer.from(text, "utf8").toString("base64");

/** Runs `fn` with Date.now() pinned to `ms`, for verifiers that check a timestamp against the clock. */
const atTime = (ms, fn) => {
  const real = Date.now;
  Date.now = () => ms;
  try {
    return fn();
  } finally {
    Date.now = real;
  }
};

/** `text` with its first byte after `from` changed, to check that a verifier refuses it. */
const tampered = (text) => {
  const at = text.indexOf('"data"');
  const i = at >= 0 ? at + 10 : 1;
  const c = text[i] === "x" ? "y" : "x";
  return text.slice(0, i) + c + text.slice(i + 1);
};

// ---------------------------------------------------------------------------------------------
// Linear: Linear-Signature = hex HMAC-SHA256 of the raw body under the webhook's signing secret.
// The body carries webhookTimestamp (ms), which Linear sets per attempt; the SDK checks it is
// within a minute of the clock. Linear-Delivery identifies the payload.
// ---------------------------------------------------------------------------------------------
async function linear() {
  const secret = "lin_wh_developer_group_test_secret";
  const client = new LinearWebhookClient(secret);
  emit({ provider: "linear", secret });

  // The sample from Linear's webhook docs (an Issue created), with ids of our own.
  const body = (title, webhookTimestamp) =>
    `{"action":"create","actor":{"id":"c3e7b1f0-7d1a-4f39-9c1f-2d0b1c8f2e11","type":"user","name":"Ada Lovelace"},` +
    `"createdAt":"2026-12-07T00:00:00.000Z","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9",` +
    `"createdAt":"2026-12-07T00:00:00.000Z","updatedAt":"2026-12-07T00:00:00.000Z","number":2,` +
    `"title":${JSON.stringify(title)},"priority":0,"boardOrder":0,"sortOrder":-1090,` +
    `"teamId":"72b2a2dc-6f4f-4423-9d34-24b5bd10634a","stateId":"f5a3ad7e-1b07-4b1f-9c43-6b8a5b4e3c21",` +
    `"labelIds":[],"subscriberIds":["c3e7b1f0-7d1a-4f39-9c1f-2d0b1c8f2e11"]},` +
    `"url":"https://linear.app/issue/LIN-2/foo-bar","type":"Issue",` +
    `"organizationId":"3d6c2f8e-52a0-4a4e-8a9b-5b3c7e0f1d22","webhookTimestamp":${webhookTimestamp},` +
    `"webhookId":"000042e3-d123-4980-b49f-8e140eef9329"}`;
  const delivery = "234d1a4e-b617-4388-90fe-adc3633d6b72";
  const sign = (raw) => crypto.createHmac("sha256", secret).update(raw).digest("hex");
  const check = (raw, signature, ms) => {
    // The SDK verifies the signature and the signed webhookTimestamp against its clock.
    if (atTime(ms, () => client.verify(Buffer.from(raw), signature)) !== true) {
      throw new Error("linear: LinearWebhookClient.verify did not accept");
    }
    const bad = tampered(raw);
    let refused = false;
    try {
      atTime(ms, () => client.verify(Buffer.from(bad), signature));
    } catch {
      refused = true;
    }
    if (!refused) throw new Error("linear: LinearWebhookClient.verify accepted a changed byte");
  };
  const caseOf = (name, raw, ms, expect) => {
    const signature = sign(raw);
    check(raw, signature, ms);
    emit({
      provider: "linear",
      case: name,
      headers: {
        "Content-Type": "application/json; charset=utf-8",
        "Linear-Delivery": delivery,
        "Linear-Event": "Issue",
        "Linear-Signature": signature,
      },
      body_b64: b64(raw),
      expect,
    });
  };
  const first = now * 1000;
  const retry = first + 60_000; // Linear retries after a minute, with a new webhookTimestamp.
  caseOf("first", body("Test issue", first), first, "accepted");
  caseOf("retry", body("Test issue", retry), retry, "duplicate");
  caseOf("changed", body("Another issue", retry + 1000), retry + 1000, "conflict");
}

// ---------------------------------------------------------------------------------------------
// Notion: X-Notion-Signature = "sha256=" + hex HMAC-SHA256 of the raw body under the
// subscription's verification token. The event's id is in the body; attempt_number (1-8)
// counts the deliveries of that event.
// ---------------------------------------------------------------------------------------------
async function notion() {
  const verificationToken = "secret_notion_developer_group_verification_token";
  emit({ provider: "notion", secret: verificationToken });

  // The page.created sample from Notion's webhook events reference.
  const body = (entityId, attempt) =>
    `{"id":"367cba44-b6f3-4c92-81e7-6a2e9659efd4","timestamp":"2024-12-05T23:55:34.285Z",` +
    `"workspace_id":"13950b26-c203-4f3b-b97d-93ec06319565","workspace_name":"Quantify Labs",` +
    `"subscription_id":"29d75c0d-5546-4414-8459-7b7a92f1fc4b","integration_id":"0ef2e755-4912-8096-91c1-00376a88a5ca",` +
    `"type":"page.created","authors":[{"id":"c7c11cca-1d73-471d-9b6e-bdef51470190","type":"person"}],` +
    `"accessible_by":[{"id":"556a1abf-4f08-40c6-878a-75890d2a88ba","type":"person"}],` +
    `"attempt_number":${attempt},"api_version":"2022-06-28",` +
    `"entity":{"id":"${entityId}","type":"page"},` +
    `"data":{"parent":{"id":"13950b26-c203-4f3b-b97d-93ec06319565","type":"space"}}}`;
  const caseOf = async (name, raw, expect) => {
    const signature = await signWebhookPayload({ body: raw, verificationToken });
    if (!(await verifyWebhookSignature({ body: raw, signature, verificationToken }))) {
      throw new Error("notion: verifyWebhookSignature did not accept what signWebhookPayload signed");
    }
    if (await verifyWebhookSignature({ body: tampered(raw), signature, verificationToken })) {
      throw new Error("notion: verifyWebhookSignature accepted a changed byte");
    }
    emit({
      provider: "notion",
      case: name,
      headers: { "Content-Type": "application/json", "X-Notion-Signature": signature },
      body_b64: b64(raw),
      expect,
    });
  };
  await caseOf("first", body("153104cd-477e-809d-8dc4-ff2d96ae3090", 1), "accepted");
  await caseOf("retry", body("153104cd-477e-809d-8dc4-ff2d96ae3090", 2), "duplicate");
  await caseOf("changed", body("1a2b3c4d-477e-809d-8dc4-ff2d96ae3090", 3), "conflict");
}

// ---------------------------------------------------------------------------------------------
// Sanity (GROQ-powered webhooks): sanity-webhook-signature = "t=<ms>,v1=<base64url HMAC-SHA256
// of "<t>.<body>">", modelled on Stripe's. The idempotency-key header de-duplicates deliveries;
// the body is the webhook's projection (by default the whole document after the change).
// ---------------------------------------------------------------------------------------------
async function sanity() {
  const secret = "sanity developer group webhook secret";
  emit({ provider: "sanity", secret });

  const body = (title) =>
    `{"_createdAt":"2026-12-06T21:04:11Z","_id":"6a2f0c1e-8b7d-4c3a-9e5f-1d2b3c4d5e6f",` +
    `"_rev":"hJdbRk2xQ0sPqA7mNvTz3C","_type":"post","_updatedAt":"2026-12-07T00:00:00Z",` +
    `"slug":{"_type":"slug","current":"hello-world"},"title":${JSON.stringify(title)}}`;
  const headers = (signature) => ({
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
  });
  const caseOf = async (name, raw, ms, expect) => {
    const signature = await encodeSignatureHeader(raw, ms, secret);
    if (!(await isValidSignature(raw, signature, secret))) {
      throw new Error("sanity: isValidSignature did not accept what encodeSignatureHeader signed");
    }
    if (await isValidSignature(tampered(raw), signature, secret)) {
      throw new Error("sanity: isValidSignature accepted a changed byte");
    }
    emit({ provider: "sanity", case: name, headers: headers(signature), body_b64: b64(raw), expect });
  };
  const first = now * 1000;
  await caseOf("first", body("Hello world"), first, "accepted");
  // A retry resends the delivery: the same body and idempotency-key, signed at its own time.
  await caseOf("retry", body("Hello world"), first + 30_000, "duplicate");
  await caseOf("changed", body("Goodbye world"), first + 60_000, "conflict");
}

try {
  await linear();
  await notion();
  await sanity();
} catch (err) {
  process.stderr.write(`developer.mjs: ${err?.message ?? err}\n`);
  process.exit(1);
}
