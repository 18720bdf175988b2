//! Placeholder: the standard scheme is being written.
