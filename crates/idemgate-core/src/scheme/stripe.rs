//! Placeholder: the stripe scheme is being written.
