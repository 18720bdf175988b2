// The platforms group's official Node.js libraries: Liveblocks (@liveblocks/node), Dodo
// Payments (dodopayments), ImageKit (@imagekit/nodejs), Stream Chat (stream-chat), Modern
// Treasury (modern-treasury) and Metronome (@metronome/sdk). Liveblocks, Dodo Payments and
// ImageKit send Standard Webhooks: their deliveries are signed with svix's Webhook.sign and
// then verified by the provider's own library.
import { createHmac } from "node:crypto";

import ImageKit from "@imagekit/nodejs";
import Metronome from "@metronome/sdk";
import ModernTreasury from "modern-treasury";
import DodoPayments from "dodopayments";
import { WebhookHandler } from "@liveblocks/node";
import { StreamChat } from "stream-chat";
import { Webhook } from "svix";

import { NOW, deliver, require, secret, tampered } from "./driver.mjs";

// Only the protocol's lines go to stdout: the libraries' own logging goes to stderr.
for (const level of ["log", "info", "debug", "warn"]) {
  console[level] = (...args) => console.error(...args);
}

// Runs `check` with the process clock at `seconds`, as the libraries read it.
function at(seconds, check) {
  const realNow = Date.now;
  Date.now = () => seconds * 1000;
  try {
    return check();
  } finally {
    Date.now = realNow;
  }
}

// `check` must throw.
function refuses(check, what) {
  let threw = false;
  try {
    check();
  } catch {
    threw = true;
  }
  require(threw, what);
}

// Standard Webhooks deliveries of `provider`: the same message (webhook-id) resent
// unchanged as the retry, each attempt signed at its own time, then another payload under
// the same webhook-id; `verify(headers, body, seconds)` is the provider's library.
// `key` signs; idemgate's secret is `configured` (the same key, as the provider's library
// reads it).
function standardWebhooks(provider, key, msgId, event, changed, verify, configured = key) {
  secret(provider, configured);
  const signer = new Webhook(key);
  const attempts = [
    ["first", event, NOW, "accepted"],
    ["retry", event, NOW + 5, "duplicate"],
    ["changed", changed, NOW + 10, "conflict"],
  ];
  for (const [name, payload, seconds, expect] of attempts) {
    const body = JSON.stringify(payload);
    const headers = {
      "webhook-id": msgId,
      "webhook-timestamp": String(seconds),
      "webhook-signature": signer.sign(msgId, new Date(seconds * 1000), body),
      "Content-Type": "application/json",
    };
    at(seconds, () => verify(headers, body));
    refuses(
      () => at(seconds, () => verify(headers, tampered(body).toString())),
      `${provider}: the library accepted a changed byte`,
    );
    deliver(provider, name, headers, body, expect);
  }
}

function liveblocks() {
  const key = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
  const handler = new WebhookHandler(key);
  // Liveblocks' documented storageUpdated event (Webhooks, Event types).
  const event = {
    type: "storageUpdated",
    data: { roomId: "my-room-id", projectId: "my-project-id", updatedAt: "2021-03-01T12:00:00.000Z" },
  };
  const changed = structuredClone(event);
  changed.data.updatedAt = "2021-03-01T12:05:00.000Z";
  standardWebhooks("liveblocks", key, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", event, changed, (headers, rawBody) =>
    handler.verifyRequest({ headers, rawBody }),
  );
}

function dodoPayments() {
  const key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const client = new DodoPayments({ bearerToken: "unused", webhookKey: key });
  // Dodo Payments' payment.succeeded event, shortened (Webhooks, Payload).
  const event = {
    business_id: "bus_P2JwVhAbhhBMnkgJTsRmn",
    type: "payment.succeeded",
    timestamp: "2025-08-04T05:30:31.152232Z",
    data: {
      payload_type: "Payment",
      payment_id: "pay_2IjeQm4hqU6RA4Z4kwDee",
      status: "succeeded",
      total_amount: 400,
      currency: "USD",
      customer: { customer_id: "cus_8VbC6JDZzPEqfBPUdpj0K", email: "test@acme.com", name: "Test user" },
    },
  };
  const changed = structuredClone(event);
  changed.data.total_amount = 500;
  standardWebhooks("dodopayments", key, "msg_2yVJbPZuN5Yq3yXCfFiZSoXq2Ah", event, changed, (headers, body) =>
    client.webhooks.unwrap(body, { headers }),
  );
}

function imageKit() {
  // ImageKit's SDK takes the dashboard's secret text and hands base64 of its bytes to
  // standardwebhooks: the HMAC key is the secret's text, which idemgate is given as whsec_
  // and base64 of that text.
  const text = "whsec_ik_5Jr0nX2cH8aQ4mVt7LwZ1pYe";
  const key = "whsec_" + Buffer.from(text).toString("base64");
  const client = new ImageKit({ privateKey: "unused", webhookSecret: text });
  // ImageKit's documented video.transformation.accepted event, shortened (Webhooks).
  const event = {
    type: "video.transformation.accepted",
    id: "58e6d24d-6098-4319-be8d-5b3c3e2d8e1f",
    created_at: "2025-07-30T10:40:26.150Z",
    data: {
      asset: { url: "https://ik.imagekit.io/demo/sample-video.mp4" },
      transformation: { type: "video-transformation", options: { video_codec: "h264", format: "mp4" } },
    },
    request: { url: "https://ik.imagekit.io/demo/sample-video.mp4?tr=f-mp4", x_request_id: "fa98fa2e-d6cd-45b4-acf5-bc1d2bbb8ba9" },
  };
  const changed = structuredClone(event);
  changed.data.transformation.options.format = "webm";
  standardWebhooks(
    "imagekit",
    key,
    "58e6d24d-6098-4319-be8d-5b3c3e2d8e1f",
    event,
    changed,
    (headers, body) => client.webhooks.unwrap(body, { headers }),
    key,
  );
}

function metronome() {
  // Signed with the SDK's own webhooks.signPayload over its X-Metronome-Date header and the
  // body; checked with its webhooks.verifySignature, which must refuse a changed byte.
  const key = "metronome-webhook-secret-" + "8c2f4e6a1b3d5f70";
  secret("metronome", key);
  const client = new Metronome({ bearerToken: "unused", webhookSecret: key });
  // Metronome's documented invoice.finalized notification (Webhooks, Webhook types).
  const event = {
    id: "fc00bd44-8d4b-4913-9b7c-fd1f8da61e62",
    properties: {
      invoice_id: "de99894e-f9ce-4b6c-92b0-f4ec0d09b6f1",
      customer_id: "3c9e87ba-0e49-44a3-9aa9-6917f8da3491",
      invoice_finalized_date: "2024-02-20T15:50:07.457Z",
    },
    type: "invoice.finalized",
  };
  const changed = structuredClone(event);
  changed.properties.invoice_finalized_date = "2024-02-21T15:50:07.457Z";
  // A retry is the same notification again, sent (and so dated and signed) anew.
  const attempts = [
    ["first", event, NOW, "accepted"],
    ["retry", event, NOW + 60, "duplicate"],
    ["changed", changed, NOW + 120, "conflict"],
  ];
  for (const [name, payload, seconds, expect] of attempts) {
    const body = JSON.stringify(payload);
    const date = new Date(seconds * 1000).toUTCString();
    const headers = {
      "X-Metronome-Date": date,
      "Metronome-Webhook-Signature": client.webhooks.signPayload(body, { date, secret: key }),
      "Content-Type": "application/json",
    };
    at(seconds, () => client.webhooks.verifySignature(body, headers));
    refuses(
      () => at(seconds, () => client.webhooks.verifySignature(tampered(body).toString(), headers)),
      "metronome: verifySignature accepted a changed byte",
    );
    deliver("metronome", name, headers, body, expect);
  }
}

function streamChat() {
  // Stream signs the body with the app's API secret (hex HMAC-SHA256 in X-Signature); its
  // SDK only verifies, so the signature is built as Stream documents it and verifyWebhook
  // must accept it and refuse a changed byte.
  const apiSecret = "st-secret-" + "9d7a4c2e5b1f8a3d6c0e2b4f7a9c1e3d";
  secret("stream-chat", apiSecret);
  const client = new StreamChat("a1b23cdefgh4", apiSecret);
  const webhookId = "123e4567-e89b-12d3-a456-426614174000";
  // Stream Chat's documented message.new event, shortened (Push Webhook, Request format).
  const event = {
    type: "message.new",
    cid: "messaging:fun-d5f396e3-fbaf-469c-9b45-8837b4f75baa",
    message: {
      id: "8bffc454-e1da-4d91-8b88-a87853dfb41c",
      text: "67d61fa4-74b6-4e1a-bfe7-589d84b8215b",
      type: "regular",
      user: { id: "tommaso-52ec3a5f-e916-469f-bf54-b53b5247a4b0", role: "user" },
      created_at: "2020-03-30T07:54:46.277381Z",
    },
    created_at: "2020-03-30T07:54:46.283512Z",
  };
  const changed = structuredClone(event);
  changed.message.text = "another text";
  // A retry is the same call again, X-Webhook-Id kept and X-Webhook-Attempt counted up.
  const attempts = [
    ["first", event, "1", "accepted"],
    ["retry", event, "2", "duplicate"],
    ["changed", changed, "1", "conflict"],
  ];
  for (const [name, payload, attempt, expect] of attempts) {
    const body = JSON.stringify(payload);
    const signature = createHmac("sha256", apiSecret).update(body).digest("hex");
    require(client.verifyWebhook(body, signature), "stream-chat: verifyWebhook accepts Stream's signature");
    require(!client.verifyWebhook(tampered(body), signature), "stream-chat: verifyWebhook refuses a changed byte");
    const headers = {
      "X-Webhook-Id": webhookId,
      "X-Webhook-Attempt": attempt,
      "X-Api-Key": "a1b23cdefgh4",
      "X-Signature": signature,
      "Content-Type": "application/json",
    };
    deliver("stream-chat", name, headers, body, expect);
  }
}

function modernTreasury() {
  // Signed with the SDK's own webhooks.getSignature, checked with its validateSignature.
  const key = "mt-webhook-key-" + "3f1c9a7e2d5b8c4a";
  secret("modern-treasury", key);
  const client = new ModernTreasury({ apiKey: "unused", organizationID: "unused", webhookKey: key });
  const webhookId = "0f2b6c1e-8d4a-4f9b-a3c7-5e1d2b9f6a80";
  // A payment_order webhook as Modern Treasury documents it: event and data.
  const event = {
    event: "completed",
    data: {
      id: "2ca0a8d6-0b2b-4b0a-9a4f-5b8c5f1a7e21",
      object: "payment_order",
      type: "ach",
      amount: 1000,
      direction: "credit",
      currency: "USD",
      status: "completed",
      live_mode: false,
    },
  };
  const changed = structuredClone(event);
  changed.data.amount = 2000;
  const attempts = [
    ["first", event, "accepted"],
    ["retry", event, "duplicate"],
    ["changed", changed, "conflict"],
  ];
  for (const [name, payload, expect] of attempts) {
    const body = JSON.stringify(payload);
    const signature = client.webhooks.getSignature(body);
    const headers = {
      "X-Webhook-ID": webhookId,
      "X-Topic": "payment_order",
      "X-Live-Mode": "false",
      "X-Signature": signature,
      "Content-Type": "application/json",
    };
    require(client.webhooks.validateSignature(body, headers), "modern-treasury: validateSignature accepts");
    require(
      !client.webhooks.validateSignature(tampered(body).toString(), headers),
      "modern-treasury: validateSignature refuses a changed byte",
    );
    deliver("modern-treasury", name, headers, body, expect);
  }
}

liveblocks();
dodoPayments();
imageKit();
streamChat();
modernTreasury();
metronome();
