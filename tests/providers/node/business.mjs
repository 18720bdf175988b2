// The business group's official Node.js libraries: Mux (@mux/mux-node), Box (box-node-sdk)
// and Webflow (webflow-api).
import { createHmac } from "node:crypto";

import Mux from "@mux/mux-node";
// box-node-sdk's own signature code: WebhooksManager.validateMessage calls it to verify.
import { computeWebhookSignature } from "box-node-sdk/internal/utils";
import { WebhooksManager } from "box-node-sdk/managers/webhooks";
import { WebflowClient } from "webflow-api";

import { NOW, deliver, require, secret, tampered } from "./driver.mjs";

// Runs `check` with the clock at `seconds`: the libraries read Date.now() for their window.
const at = async (seconds, check) => {
  const real = Date.now;
  Date.now = () => seconds * 1000;
  try {
    return await check();
  } finally {
    Date.now = real;
  }
};

// Mux: Mux-Signature "t=<s>,v1=<hex HMAC-SHA256 of '<t>.<body>'>"; the SDK only verifies
// (webhooks.verifySignature). A retry resends the event with its `attempts` grown.
async function mux() {
  const name = "mux";
  const key = "k3q8bl3h2vjd8f4o0ddn1ihp9s2cd6uq";
  secret(name, key);
  const client = new Mux({ tokenId: "unused", tokenSecret: "unused", webhookSecret: key });

  const event = (attempts, status) =>
    JSON.stringify({
      type: "video.asset.ready",
      object: { type: "asset", id: "0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002" },
      id: "3a56ac3d-33da-4366-855b-f592d898409d",
      environment: { name: "Demo pages", id: "j0863n" },
      data: { status, passthrough: "example", id: "0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002", duration: 23.8 },
      created_at: "2021-01-09T00:00:00.000000Z",
      attempts,
      accessor_source: null,
      accessor: null,
      request_id: null,
    });

  const signed = async (body, seconds) => {
    const tag = createHmac("sha256", key).update(`${seconds}.${body}`).digest("hex");
    const headers = { "Mux-Signature": `t=${seconds},v1=${tag}`, "Content-Type": "application/json" };
    await at(seconds, () => client.webhooks.verifySignature(body, headers, key));
    const refused = await at(seconds, () =>
      client.webhooks.verifySignature(tampered(body).toString(), headers, key).then(() => false, () => true),
    );
    require(refused, "mux: the SDK accepts a changed byte");
    return headers;
  };

  const first = event([], "ready");
  deliver(name, "first", await signed(first, NOW), first, "accepted");
  const failed = {
    webhook_id: 4022,
    response_status_code: 503,
    response_headers: { "content-type": "text/plain" },
    response_body: "unavailable",
    max_attempts: 30,
    id: "e9b9ff54-c2f0-4f36-9cb9-6a3a0d8d6a1e",
    created_at: "2021-01-09T00:00:01.000000Z",
    address: "https://example.com/hooks/mux",
  };
  const retry = event([failed], "ready");
  deliver(name, "retry", await signed(retry, NOW + 60), retry, "duplicate");
  const changed = event([], "errored");
  deliver(name, "changed", await signed(changed, NOW + 1), changed, "conflict");
}

// Box: box-signature-primary = base64 HMAC-SHA256 of body + box-delivery-timestamp, made by
// box-node-sdk's computeWebhookSignature and checked by WebhooksManager.validateMessage.
async function box() {
  const name = "box";
  const primary = "SamplePrimaryKey0123456789abcdef";
  const secondary = "SampleSecondaryKey0123456789abcd";
  secret(name, primary);

  const event = (trigger, fileName) =>
    JSON.stringify({
      type: "webhook_event",
      id: "eb0c4e06-751f-442c-86f8-fd5bb404dbec",
      created_at: "2016-07-11T10:10:32-07:00",
      trigger,
      webhook: { id: "53", type: "webhook" },
      created_by: { type: "user", id: "226067247", name: "John Q. Developer", login: "johnq@dev.name" },
      source: { id: "73835521473", type: "file", name: fileName },
    });

  const signed = async (body, seconds, deliveryId) => {
    const headers = {
      "box-delivery-id": deliveryId,
      "box-delivery-timestamp": new Date(seconds * 1000).toISOString().replace(".000Z", "Z"),
      "box-signature-version": "1",
      "box-signature-algorithm": "HmacSHA256",
    };
    headers["box-signature-primary"] = await computeWebhookSignature(body, headers, primary);
    headers["box-signature-secondary"] = await computeWebhookSignature(body, headers, secondary);
    const valid = (text) =>
      at(seconds, () => WebhooksManager.validateMessage(text, headers, primary, { secondaryKey: secondary }));
    require(await valid(body), "box: the SDK refuses its own signature");
    require(!(await valid(tampered(body).toString())), "box: the SDK accepts a changed byte");
    return { ...headers, "Content-Type": "application/json" };
  };

  const first = event("FILE.UPLOADED", "Test-Image-3.png");
  deliver(name, "first", await signed(first, NOW, "673a081b-bb4b-4d45-b4f1-4131a29c1d07"), first, "accepted");
  // "When Box retries a webhook this ID [BOX-DELIVERY-ID] will change, while the ID in the
  // payload body remains the same": a new delivery id and time, the same body.
  deliver(name, "retry", await signed(first, NOW + 60, "9d2c7a0e-5f3b-4c1a-8e6d-2b4f0a9c7e31"), first, "duplicate");
  const changed = event("FILE.UPLOADED", "Test-Image-4.png");
  deliver(name, "changed", await signed(changed, NOW + 1, "1f0e2d3c-4b5a-4697-8877-665544332211"), changed, "conflict");
}

// Webflow: x-webflow-signature = hex HMAC-SHA256 of "<x-webflow-timestamp>:<body>", the
// timestamp in milliseconds; the SDK only verifies (webhooks.verifySignature).
async function webflow() {
  const name = "webflow";
  const key = "a7d2c4e6f8b0a1c3e5d7f9b2a4c6e8d0f1a3c5e7b9d0f2a4c6e8b1d3f5a7c9e2";
  // Webflow sends no event identity: the source names the form submission's id.
  secret(name, key, { config: 'identity = { pointer = "/payload/id" }' });
  const client = new WebflowClient({ accessToken: "unused" });

  const event = (message) =>
    JSON.stringify({
      triggerType: "form_submission",
      payload: {
        name: "Contact Us",
        siteId: "65427cf400e02b306eaa049c",
        data: { "First Name": "Zaphod", "Last Name": "Beeblebrox", email: "zaphod@heartofgold.ai", Message: message },
        submittedAt: "2022-09-14T12:35:16.117Z",
        id: "6321ca84df3949bfc6752327",
        formId: "65429eadebe8a9f3a30f62d0",
        formElementId: "4e038d2c-6a1e-4953-7be9-a59a2b453177",
      },
    });

  const signed = async (body, millis) => {
    const headers = {
      "x-webflow-timestamp": String(millis),
      "x-webflow-signature": createHmac("sha256", key).update(`${millis}:${body}`).digest("hex"),
      "Content-Type": "application/json",
    };
    require(await client.webhooks.verifySignature({ headers, body, secret: key }), "webflow: the SDK refuses it");
    const forged = await client.webhooks.verifySignature({ headers, body: tampered(body).toString(), secret: key });
    require(!forged, "webflow: the SDK accepts a changed byte");
    return headers;
  };

  const first = event("Hello");
  deliver(name, "first", await signed(first, NOW * 1000), first, "accepted");
  deliver(name, "retry", await signed(first, NOW * 1000 + 60_000), first, "duplicate");
  const changed = event("Hello again");
  deliver(name, "changed", await signed(changed, NOW * 1000 + 1_000), changed, "conflict");
}

await mux();
await box();
await webflow();
