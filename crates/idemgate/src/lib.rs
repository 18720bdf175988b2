//! idemgate
