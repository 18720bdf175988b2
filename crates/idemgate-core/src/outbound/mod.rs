//! The outbound API's pure rules (issue 37, `docs/design/outbound-api.md`): what idemgate
//! decides when it sends webhooks to its users' customers through the API of Svix's
//! open-source server. Everything here is a decision over values; the time and the random
//! bytes an id, a secret or a sealing needs are given by the caller, never read here.
//!
//! - [`id`]: `app_`, `ep_`, `msg_`, `atmpt_` and `qtask_` ids, a prefix and a time-ordered
//!   KSUID with millisecond precision, in Svix's layout.
//! - [`field`]: uids, event type names, `eventId`s and channels, and the typed error that
//!   names the refused field's location (Svix's `HTTPValidationError` item).
//! - [`address`]: which addresses an endpoint may reach, and the endpoint URL check.
//! - [`headers`]: which custom headers an endpoint may carry, and which are sensitive.
//! - [`signing`]: one `webhook-signature` header signed with every valid secret.
//! - [`sealing`]: endpoint secrets, generated and sealed at rest (XChaCha20-Poly1305).
//! - [`status`]: a message's or attempt's `MessageStatus` from a job's state, and
//!   `StatusClass`.
//! - [`label`]: how endpoints and applications show in metrics' labels.

pub mod address;
pub mod field;
pub mod headers;
pub mod id;
pub mod label;
pub mod sealing;
pub mod signing;
pub mod status;
