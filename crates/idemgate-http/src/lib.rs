//! idemgate-http
