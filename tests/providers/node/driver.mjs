// What every Node.js driver of tests/providers/node/ shares: the run's settings and the
// JSON lines it prints (see crates/idemgate/tests/it/providers.rs for the protocol).

// The URL a provider that signs the URL signs: `${BASE}/hooks/<name>`.
export const BASE = process.env.PROVIDERS_BASE_URL ?? "https://hooks.example.test";
// The time deliveries are signed at, in Unix seconds.
export const NOW = Number(process.env.PROVIDERS_NOW ?? Math.floor(Date.now() / 1000));

export const url = (provider) => `${BASE}/hooks/${provider}`;

// The text idemgate's `secrets` gets for `provider`, and optional `config` or `signed_url`.
export function secret(provider, text, extra = {}) {
  process.stdout.write(JSON.stringify({ provider, secret: text, ...extra }) + "\n");
}

// One delivery: `name` is first, retry or changed; `expect` accepted, duplicate or conflict.
export function deliver(provider, name, headers, body, expect) {
  const bytes = Buffer.from(body);
  process.stdout.write(
    JSON.stringify({ provider, case: name, headers, body_b64: bytes.toString("base64"), expect }) + "\n",
  );
}

// Stops the driver (and so the test) when the provider's library disagrees.
export function require(condition, what) {
  if (!condition) {
    process.stderr.write(`driver check failed: ${what}\n`);
    process.exit(1);
  }
}

// `body` with one byte changed.
export function tampered(body) {
  const bytes = Buffer.from(body);
  bytes[Math.floor(bytes.length / 2)] ^= 1;
  return bytes;
}
