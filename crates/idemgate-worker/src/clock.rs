//! The worker's clock is `idemgate-clock`'s: injectable, so retry timing is tested without sleeping.

pub use idemgate_clock::{Clock, ManualClock, SystemClock};
