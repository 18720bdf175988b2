// The first providers' official Node.js libraries: GitHub (@octokit/webhooks-methods) and
// Shopify (@shopify/shopify-api).
import { sign, verify } from "@octokit/webhooks-methods";
import { createSHA256HMAC, HashFormat } from "@shopify/shopify-api/runtime";

import { NOW, deliver, require, secret, tampered } from "./driver.mjs";

async function github() {
  const key = "It's a Secret to Everybody";
  secret("github", key);
  const push = (after) =>
    JSON.stringify({ ref: "refs/heads/main", before: "6113728f27ae82c7b1a177c8d03f9e96e0adf246", after,
      repository: { id: 1296269, full_name: "octocat/Hello-World" }, sender: { login: "octocat" } });
  const signed = async (body, delivery) => {
    const signature = await sign(key, body);
    require(await verify(key, body, signature), "octokit verifies its own");
    require(!(await verify(key, tampered(body).toString(), signature)), "octokit tamper");
    return { "X-Hub-Signature-256": signature, "X-GitHub-Delivery": delivery, "X-GitHub-Event": "push",
      "Content-Type": "application/json" };
  };
  const first = push("0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c");
  const id = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
  deliver("github", "first", await signed(first, id), first, "accepted");
  // A redelivery, from the webhook's Recent Deliveries: the same payload and delivery id.
  deliver("github", "retry", await signed(first, id), first, "duplicate");
  const changed = push("b7a1b1b2e0b4c1d5e6f7a8b9c0d1e2f3a4b5c6d7");
  deliver("github", "changed", await signed(changed, id), changed, "conflict");
}

async function shopify() {
  const key = "hush-a-shopify-client-secret";
  secret("shopify", key);
  const order = (price) =>
    JSON.stringify({ id: 820982911946154508, email: "jon@example.com", total_price: price, currency: "USD" });
  const signed = async (body, delivery) => {
    // What the library's webhooks.validate compares X-Shopify-Hmac-Sha256 against.
    const hmac = await createSHA256HMAC(key, body, HashFormat.Base64);
    require(hmac !== (await createSHA256HMAC(key, tampered(body).toString(), HashFormat.Base64)), "shopify tamper");
    return { "X-Shopify-Hmac-Sha256": hmac, "X-Shopify-Topic": "orders/create",
      "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5", "X-Shopify-Webhook-Id": delivery,
      "Content-Type": "application/json" };
  };
  const first = order("199.00");
  deliver("shopify", "first", await signed(first, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"), first, "accepted");
  deliver("shopify", "retry", await signed(first, "c2a1f2e8-0000-4b37-8a5f-bf7d70bcd043"), first, "duplicate");
  const changed = order("249.00");
  deliver("shopify", "changed", await signed(changed, "d3b2e3f9-1111-4b37-8a5f-bf7d70bcd043"), changed, "conflict");
}

await github();
await shopify();
