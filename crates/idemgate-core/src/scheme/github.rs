//! Placeholder: the github scheme is being written.
