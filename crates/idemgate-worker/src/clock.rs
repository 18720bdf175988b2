//! The worker's clock is the core's: injectable, so retry timing is tested without sleeping.

pub use idemgate_core::time::{Clock, ManualClock, SystemClock};
