// The support group's official Node.js libraries: Clerk (@clerk/backend, with svix, which
// Clerk sends through), Zoom (@zoom/rivet) and Customer.io (customerio-node).
import { createHmac } from "node:crypto";

import { verifyWebhook } from "@clerk/backend/webhooks";
import { AwsLambdaReceiver } from "@zoom/rivet/meetings";
import { verifyRequestSignature } from "customerio-node";
import { Webhook } from "svix";

import { NOW, deliver, require, secret, tampered, url } from "./driver.mjs";

// Only the protocol's lines go to stdout: the libraries' own logging goes to stderr.
for (const level of ["log", "info", "debug", "warn"]) {
  console[level] = (...args) => console.error(...args);
}

// Runs `check` with the process clock at `seconds`, as the libraries read it.
async function at(seconds, check) {
  const realNow = Date.now;
  Date.now = () => seconds * 1000;
  try {
    return await check();
  } finally {
    Date.now = realNow;
  }
}

async function clerk() {
  // Signed with svix's Webhook.sign (Clerk sends through Svix); every attempt is then
  // verified by Clerk's own verifyWebhook, which must refuse a changed byte.
  const key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  secret("clerk", key);
  const signer = new Webhook(key);
  const msgId = "msg_29w83sxmDNGwOuEthce5gg56FcC";
  // Clerk's documented user.created event, shortened (Webhooks overview, Payload structure).
  const event = {
    data: {
      birthday: "",
      created_at: 1654012591514,
      email_addresses: [
        {
          email_address: "example@example.org",
          id: "idn_29w83yL7CwVlJXylYLxcslromF1",
          linked_to: [],
          object: "email_address",
          verification: { status: "verified", strategy: "ticket" },
        },
      ],
      first_name: "Example",
      id: "user_29w83sxmDNGwOuEthce5gg56FcC",
      last_name: "Example",
      object: "user",
      primary_email_address_id: "idn_29w83yL7CwVlJXylYLxcslromF1",
      updated_at: 1654012591835,
      username: null,
    },
    event_attributes: { http_request: { client_ip: "0.0.0.0", user_agent: "Mozilla/5.0" } },
    instance_id: "ins_123",
    object: "event",
    timestamp: 1654012591835,
    type: "user.created",
  };
  const changed = structuredClone(event);
  changed.data.first_name = "Changed";
  const request = (headers, body) => new Request(url("clerk"), { method: "POST", headers, body });
  // Svix resends the message's payload unchanged under the same svix-id, re-signed with
  // the attempt's own timestamp.
  const attempts = [
    ["first", event, NOW, "accepted"],
    ["retry", event, NOW + 5, "duplicate"],
    ["changed", changed, NOW + 10, "conflict"],
  ];
  for (const [name, payload, seconds, expect] of attempts) {
    const body = JSON.stringify(payload);
    const headers = {
      "svix-id": msgId,
      "svix-timestamp": String(seconds),
      "svix-signature": signer.sign(msgId, new Date(seconds * 1000), body),
      "Content-Type": "application/json",
    };
    const verified = await at(seconds, () => verifyWebhook(request(headers, body), { signingSecret: key }));
    require(verified.type === payload.type, "clerk: verifyWebhook accepts the delivery");
    const refused = await at(seconds, () =>
      verifyWebhook(request(headers, tampered(body).toString()), { signingSecret: key }).then(
        () => false,
        () => true,
      ),
    );
    require(refused, "clerk: verifyWebhook refuses a changed byte");
    deliver("clerk", name, headers, body, expect);
  }
}

async function zoom() {
  // Rivet (Zoom's own SDK) only verifies: the signature is built as Zoom documents it
  // ("v0=" + hex HMAC-SHA256 of "v0:{x-zm-request-timestamp}:{body}"), then Rivet's Lambda
  // receiver must answer 200 to it and 400 to a changed byte.
  const key = "yDGaQl4eTLqN4BcLVNkMaw";
  // Zoom names no event identity, so the source names one; event_ts (when the event
  // happened) stands in for this test, which sends Zoom a first delivery only, since no
  // retry of Zoom's is documented to compare it with.
  secret("zoom", key, { config: 'identity = { pointer = "/event_ts" }\n' });
  // Zoom's documented meeting.started event (zoom/webhook-sample README).
  const body = JSON.stringify({
    event: "meeting.started",
    payload: {
      account_id: "AAAAAABBBB",
      object: {
        duration: 0,
        start_time: "2021-11-02T20:43:19Z",
        timezone: "America/Denver",
        topic: "My Meeting",
        id: "1234567890",
        type: 4,
        uuid: "4444AAAiAAAAAiAiAiiAii==",
        host_id: "x1yCzABCDEfg23HiJKl4mN",
      },
    },
    event_ts: 1635885799302,
  });
  const timestamp = String(NOW);
  const tag = createHmac("sha256", key).update(`v0:${timestamp}:${body}`).digest("hex");
  const headers = {
    "x-zm-request-timestamp": timestamp,
    "x-zm-signature": `v0=${tag}`,
    "Content-Type": "application/json",
  };
  const receiver = new AwsLambdaReceiver({ webhooksSecretToken: key });
  receiver.init({ eventEmitter: { emit: async () => undefined } });
  const handle = receiver.start();
  const answer = await handle({ body, headers, isBase64Encoded: false }, {});
  require(answer.statusCode === 200, `zoom: Rivet accepts the delivery (${answer.body})`);
  const refused = await handle({ body: tampered(body).toString(), headers, isBase64Encoded: false }, {});
  require(refused.statusCode === 400, "zoom: Rivet refuses a changed byte");
  deliver("zoom", "first", headers, body, "accepted");
}

function customerio() {
  // customerio-node (Customer.io's own SDK) only verifies: the signature is built as
  // Customer.io documents it (hex HMAC-SHA256 of "v0:{X-CIO-Timestamp}:{body}"), then its
  // verifyRequestSignature must accept it and refuse a changed byte.
  const key = "3f8e4d21b7c9a0e5f6d1c2b3a4958677";
  secret("customerio", key);
  // Customer.io's documented email "sent" reporting event (Reporting Webhooks reference).
  const event = {
    data: {
      action_id: 42,
      campaign_id: 23,
      customer_id: "user-123",
      delivery_id: "RPILAgABcRhIBqSp7kiPekGBIeVh",
      identifiers: { id: "user-123" },
      recipient: "test@example.com",
      subject: "Thanks for signing up",
    },
    event_id: "01E2EMRMM6TZ12TF9WGZN0WJQT",
    metric: "sent",
    object_type: "email",
    timestamp: 1613063089,
  };
  const changed = structuredClone(event);
  changed.data.subject = "Thanks for joining";
  // A retry is the same webhook call again: the same event_id and body, signed when sent.
  const attempts = [
    ["first", event, NOW, "accepted"],
    ["retry", event, NOW + 4, "duplicate"],
    ["changed", changed, NOW + 8, "conflict"],
  ];
  for (const [name, payload, seconds, expect] of attempts) {
    const body = JSON.stringify(payload);
    const timestamp = String(seconds);
    const signature = createHmac("sha256", key).update(`v0:${timestamp}:${body}`).digest("hex");
    const check = (bytes) => verifyRequestSignature({ signingSecret: key, timestamp, signature, body: bytes });
    require(check(Buffer.from(body)), "customerio: verifyRequestSignature accepts the delivery");
    require(!check(tampered(body)), "customerio: verifyRequestSignature refuses a changed byte");
    const headers = { "x-cio-timestamp": timestamp, "x-cio-signature": signature, "Content-Type": "application/json" };
    deliver("customerio", name, headers, body, expect);
  }
}

await clerk();
await zoom();
customerio();
