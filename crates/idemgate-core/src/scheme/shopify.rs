//! Placeholder: the shopify scheme is being written.
