//! What the console's routes work on, the admin API's and the dashboard's alike.

use std::{sync::Arc, time::Duration};

use idemgate_clock::Clock;
use idemgate_store::Store;

use super::session::Sessions;
use crate::{
    RejectionCounts,
    current::{AdminTokens, DestinationNames},
};

/// What the admin routes work on.
#[derive(Debug, Clone)]
pub struct AdminState {
    /// The store.
    pub store: Store,
    /// The named admin tokens and their roles, replaced by a configuration reload.
    pub tokens: AdminTokens,
    /// Rejections counted by the inbound routes.
    pub rejections: Arc<RejectionCounts>,
    /// The dashboard's signed-in sessions, in the store.
    pub sessions: Sessions,
    /// Whether the listener terminates TLS (the session cookie is then `Secure`).
    pub tls: bool,
    /// How long a client may take to send a request body.
    pub body_timeout: Duration,
    /// Where replays and re-enabled destinations read the time.
    pub clock: Arc<dyn Clock>,
    /// The configured destinations: a replay `to` another name is refused.
    pub destinations: DestinationNames,
}
