//! The outbound API (`/api/v1`, Svix-compatible; `docs/design/outbound-api.md`). For now
//! its wire shapes only; the routes come next.

// Nothing uses the shapes until the API's routes are added (the plan's step 3).
#[allow(dead_code)]
pub(crate) mod wire;
