//! The delivery worker: claims due jobs from the durable queue under a lease, hands each
//! to its destination's [`Deliver`] (an HTTP endpoint, a RabbitMQ exchange, a NATS JetStream
//! subject, or a Rust handler), records the
//! attempt, and moves the job on as the retry policy decides.
//!
//! Nothing here is lost by a crash: a job is `running` only under a lease, and a job
//! whose worker died becomes due again when its lease expires. Completions are fenced by
//! the lease token, so a late worker cannot overwrite a newer attempt. Delivery is
//! therefore at least once, with the same `webhook-id` and `Idempotency-Key` on every
//! attempt, so that the destination can make it exactly once.

pub mod amqp;
pub mod clock;
pub mod deliver;
pub mod endpoint;
mod exchange;
pub mod http;
pub mod message;
pub mod nats;
mod room;
mod route;
pub mod setup;
pub mod smtp;
mod throttle;
mod trace;
mod worker;

pub use amqp::AmqpDestination;
pub use clock::{Clock, ManualClock, SystemClock};
pub use deliver::{AttemptOutcome, Deliver};
pub use endpoint::{Endpoint, EndpointClient, EndpointDelivery, EndpointRoutes};
pub use http::HttpDestination;
pub use nats::NatsDestination;
pub use route::{Protection, RateLimit, Route, RouteTable};
pub use smtp::SmtpDestination;
pub use worker::{Worker, WorkerOptions};
