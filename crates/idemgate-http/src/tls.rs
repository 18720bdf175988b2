//! TLS termination for deployments without a proxy in front: rustls (with the `ring`
//! provider, which builds without a C toolchain beyond `cc`) and PEM files from config.

use std::{path::Path, sync::Arc};

use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio_rustls::rustls;

pub use tokio_rustls::TlsAcceptor;

/// Why the certificate or key could not be used. Never contains key material.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file could not be read or holds no PEM certificate.
    #[error("cannot read certificates from {path}: {reason}")]
    Certificate {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The key file could not be read or holds no PEM private key.
    #[error("cannot read the private key from {path}: {reason}")]
    Key {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// rustls refused the pair (e.g. the key does not match the certificate).
    #[error("certificate and key are not usable together: {0}")]
    Config(String),
}

/// An acceptor serving the chain in `cert` with the key in `key` (both PEM).
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let certificate_error = |reason: String| TlsError::Certificate { path: cert.display().to_string(), reason };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|err| certificate_error(err.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| certificate_error(err.to_string()))?;
    if chain.is_empty() {
        return Err(certificate_error("no certificate found".into()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|err| TlsError::Key { path: key.display().to_string(), reason: err.to_string() })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| TlsError::Config(err.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|err| TlsError::Config(err.to_string()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
