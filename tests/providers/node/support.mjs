// Provider driver, support group (Node side): cases signed or checked with the
// providers' official npm libraries. Prints JSON lines on stdout (the catalog's
// test-driver protocol); anything else goes to stderr. Exits non-zero when a library
// refuses what it should accept, or accepts a changed byte.
//
// Env: PROVIDERS_BASE_URL (http://127.0.0.1:PORT), PROVIDERS_NOW (unix seconds).

import { createHmac, randomBytes } from "node:crypto";

import { verifyWebhook } from "@clerk/backend/webhooks";
import { AwsLambdaReceiver } from "@zoom/rivet/meetings";
import { verifyRequestSignature } from "customerio-node";
import { Webhook } from "svix";

const NOW = Number.parseInt(process.env.PROVIDERS_NOW ?? "", 10);
if (!Number.isSafeInteger(NOW) || !process.env.PROVIDERS_BASE_URL) {
  throw new Error("PROVIDERS_NOW and PROVIDERS_BASE_URL are required");
}
const BASE_URL = process.env.PROVIDERS_BASE_URL.replace(/\/+$/, "");

// stdout carries only the protocol's lines: the libraries' own logging goes to stderr.
const out = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
for (const level of ["log", "info", "debug", "warn"]) {
  console[level] = (...args) => console.error(...args);
}

const emitCase = (provider, name, headers, body, expect) =>
  out({ provider, case: name, headers, body_b64: Buffer.from(body).toString("base64"), expect });

// The body with one byte changed (the last digit or letter turned into another).
function tampered(body) {
  const bytes = Buffer.from(body);
  for (let i = bytes.length - 1; i >= 0; i -= 1) {
    if (/[0-9A-Za-z]/.test(String.fromCharCode(bytes[i]))) {
      bytes[i] = bytes[i] === 0x30 ? 0x31 : 0x30;
      return bytes.toString();
    }
  }
  throw new Error("no byte to change");
}

// Runs `check` with the process clock at `at` (unix seconds), as the libraries read it.
async function at(seconds, check) {
  const realNow = Date.now;
  Date.now = () => seconds * 1000;
  try {
    return await check();
  } finally {
    Date.now = realNow;
  }
}

// --- Clerk: Svix (Standard Webhooks v1 in the svix-* spelling) ------------------------
//
// Signed with svix's `Webhook.sign` (Clerk sends through Svix); every attempt is then
// verified with Clerk's own `verifyWebhook` from @clerk/backend, which must refuse a
// changed byte.

async function clerkVerify(secret, headers, body, seconds) {
  const request = (payload) =>
    new Request(`${BASE_URL}/hooks/clerk`, { method: "POST", headers, body: payload });
  await at(seconds, () => verifyWebhook(request(body), { signingSecret: secret }));
  const refused = await at(seconds, () =>
    verifyWebhook(request(tampered(body)), { signingSecret: secret }).then(
      () => false,
      () => true,
    ),
  );
  if (!refused) throw new Error("clerk: verifyWebhook accepted a changed byte");
}

async function clerk() {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  out({ provider: "clerk", secret });
  const signer = new Webhook(secret);
  const msgId = "msg_29w83sxmDNGwOuEthce5gg56FcC";
  // Clerk's documented user.created event, shortened (clerk.com/docs/webhooks/overview).
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
    };
    await clerkVerify(secret, headers, body, seconds);
    emitCase("clerk", name, headers, body, expect);
  }
}

// --- Zoom: x-zm-signature = "v0=" + hex HMAC-SHA256 of "v0:{timestamp}:{body}" --------
//
// Rivet (@zoom/rivet, Zoom's own SDK) only verifies: the signature is built as Zoom
// documents it, then Rivet's Lambda receiver must answer 200 to it and 400 to a changed
// byte. Zoom documents no event identity that survives its retries, so only a first
// delivery is sent: the catalog gives Zoom no default identity.

async function zoomVerify(secret, headers, body) {
  const receiver = new AwsLambdaReceiver({ webhooksSecretToken: secret });
  receiver.init({ eventEmitter: { emit: async () => undefined } });
  const handle = receiver.start();
  const answer = await handle({ body, headers, isBase64Encoded: false }, {});
  if (answer.statusCode !== 200) throw new Error(`zoom: Rivet refused the delivery: ${answer.body}`);
  const refused = await handle({ body: tampered(body), headers, isBase64Encoded: false }, {});
  if (refused.statusCode !== 400) throw new Error("zoom: Rivet accepted a changed byte");
}

async function zoom() {
  const secret = randomBytes(16).toString("base64url");
  // Zoom names no event identity, so the source names one; event_ts (when the event
  // happened) stands in for this test, which sends Zoom a first delivery only.
  out({ provider: "zoom", secret, config: 'identity = { pointer = "/event_ts" }\n' });
  // Zoom's documented meeting.started event (zoom/webhook-sample README).
  const event = {
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
  };
  const body = JSON.stringify(event);
  const timestamp = String(NOW);
  const tag = createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex");
  const headers = { "x-zm-request-timestamp": timestamp, "x-zm-signature": `v0=${tag}` };
  await zoomVerify(secret, headers, body);
  emitCase("zoom", "first", headers, body, "accepted");
}

// --- Customer.io: X-CIO-Signature = hex HMAC-SHA256 of "v0:{X-CIO-Timestamp}:{body}" ------
//
// customerio-node (Customer.io's own SDK) only verifies: the signature is built as
// Customer.io documents it, then its verifyRequestSignature must accept it and refuse a
// changed byte. A retry is the same webhook call again (the same event_id and body), signed
// when it is sent.

function customerioVerify(secret, headers, body) {
  const check = (payload) =>
    verifyRequestSignature({
      signingSecret: secret,
      timestamp: headers["x-cio-timestamp"],
      signature: headers["x-cio-signature"],
      body: Buffer.from(payload),
    });
  if (!check(body)) throw new Error("customerio: verifyRequestSignature refused the delivery");
  if (check(tampered(body))) throw new Error("customerio: verifyRequestSignature accepted a changed byte");
}

function customerio() {
  const secret = randomBytes(32).toString("hex");
  out({ provider: "customerio", secret });
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
  const attempts = [
    ["first", event, NOW, "accepted"],
    ["retry", event, NOW + 4, "duplicate"],
    ["changed", changed, NOW + 8, "conflict"],
  ];
  for (const [name, payload, seconds, expect] of attempts) {
    const body = JSON.stringify(payload);
    const timestamp = String(seconds);
    const tag = createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex");
    const headers = { "x-cio-timestamp": timestamp, "x-cio-signature": tag };
    customerioVerify(secret, headers, body);
    emitCase("customerio", name, headers, body, expect);
  }
}

try {
  await clerk();
  await zoom();
  customerio();
} catch (error) {
  console.error(`support driver: ${error?.stack ?? error}`);
  process.exit(1);
}
