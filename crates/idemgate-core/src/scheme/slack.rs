//! Placeholder: the slack scheme is being written.
