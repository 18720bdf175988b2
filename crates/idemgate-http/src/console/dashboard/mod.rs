//! The dashboard under `/admin/`: server-rendered pages, no scripts, no external assets.
//! This module is the router; each page is a module of its own, with the forms it posts:
//!
//! - `/admin/` ([`overview`]): per source the counts by outcome and job state; dead jobs,
//!   each with a replay button; unmatched events; recent conflicts, each linking to its
//!   event; destinations, each with buttons replaying its dead jobs, making its waiting
//!   jobs due now and (when disabled or paused) enabling it; rejections by reason;
//! - `/admin/events` ([`events`]): the event search, a page at a time;
//! - `/admin/events/<id>` ([`event`]): one event's receipt, headers, payload, jobs,
//!   attempts and the conflicting bodies seen for it, with replay and retry-now;
//! - `/admin/destinations` ([`destinations`]): each destination's state, queue, and its
//!   success rate and latency over the last hour and day as charts ([`chart`]);
//! - `/admin/rejections` ([`rejections`]): rejections by reason, conflicts over time;
//! - `/admin/audit` ([`audit`]): the audit log of the changes made through the admin API,
//!   the dashboard and the CLI;
//! - `/admin/applications` ([`applications`]): the sending side's applications with their
//!   endpoint counts; `/admin/applications/<app>` ([`application`]): one application's
//!   endpoints and latest messages; `/admin/applications/<app>/messages/<msg>`
//!   ([`message`]): one message's payload, deliveries and attempts (all read-only);
//! - `/admin/login` and `/admin/logout` ([`login`]).
//!
//! What the pages share are leaves beside them: [`session`] (who is signed in: the
//! cookie, the own origin, the CSRF token), [`layout`] (the frame of every page and its
//! markup helpers) and [`page`] (the answer for a rendered page).

mod application;
mod applications;
mod audit;
pub(crate) mod chart;
mod destinations;
mod event;
mod events;
pub(crate) mod layout;
mod login;
mod message;
mod overview;
mod page;
mod rejections;
mod session;

use axum::{
    Router,
    routing::{get, post},
};

use crate::console::state::AdminState;

/// The dashboard's routes, to merge into the console's router.
pub(super) fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin/", get(overview::page))
        .route("/admin/login", get(login::login_form).post(login::login))
        .route("/admin/logout", post(login::logout))
        .route("/admin/replay", post(overview::replay))
        .route("/admin/retry", post(overview::retry))
        .route("/admin/events", get(events::page))
        .route("/admin/events/{id}", get(event::page))
        .route("/admin/events/{id}/replay", post(event::replay))
        .route("/admin/events/{id}/retry", post(event::retry))
        .route("/admin/destinations", get(destinations::page))
        .route("/admin/rejections", get(rejections::page))
        .route("/admin/enable", post(overview::enable))
        .route("/admin/replay-dead", post(overview::replay_dead))
        .route("/admin/audit", get(audit::page))
        .route("/admin/applications", get(applications::page))
        .route("/admin/applications/{app}", get(application::page))
        .route("/admin/applications/{app}/messages/{msg}", get(message::page))
        .with_state(state)
}
