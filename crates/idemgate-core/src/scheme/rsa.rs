//! `rsa` (configured): an RSA signature, PKCS #1 v1.5 with SHA-256 or SHA-512, under a
//! public key the provider publishes, over a declared template of what is signed: for
//! providers that sign with a fixed published key rather than a shared secret.
//!
//! It is configured like [`super::generic::GenericHmac`] (`[sources.<id>.rsa]`: `algorithm`,
//! `encoding`, `header`, `prefix`, `signed`, `timestamp_header`; `{url}` is the source's
//! `signed_url`), and each secret is the provider's public key as PEM
//! (`-----BEGIN PUBLIC KEY-----`, at least 2048 bits). A provider that makes receivers
//! fetch its certificates at run time (PayPal's cert URL) is not supported: its key cannot
//! be configured, and fetching it would let a delivery choose what verifies it.
//!
//! The receiver holds only the public key, so it cannot sign; a sender signs with the
//! private key (PKCS #8 DER). Verifying uses no secret, so it needs no constant-time
//! comparison. The `rsa` crate's known timing weakness (RUSTSEC-2023-0071) concerns
//! operations with the private key, which idemgate performs only when a test or a sender
//! signs.

use std::sync::Arc;

use rsa::{
    RsaPrivateKey, RsaPublicKey,
    pkcs1v15::{Signature, SigningKey, VerifyingKey},
    pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey},
    signature::{SignatureEncoding, Signer as _, Verifier as _},
    traits::PublicKeyParts,
};
use sha2::{Sha256, Sha512};

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, check_tolerance,
    generic::{
        DEFAULT_TOLERANCE_SECS, Encoding, SettingError, Template, TimestampUnit, envelope, header_name, sent_headers,
        setting,
    },
    single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// `scheme = "rsa"`.
pub const RSA: &str = "rsa";
/// The smallest public key accepted, in bits.
const MIN_BITS: usize = 2048;
/// The longest signature header accepted, in bytes (a 4096-bit signature in hex is 1024).
const MAX_SIGNATURE_LEN: usize = 2048;

/// The digest the PKCS #1 v1.5 signature is made over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RsaHash {
    /// RSA-SHA256.
    Sha256,
    /// RSA-SHA512.
    Sha512,
}

impl RsaHash {
    /// The hash configured as `name`: `sha256` or `sha512`.
    pub fn from_name(name: &str) -> Result<Self, SettingError> {
        match name {
            "sha256" => Ok(Self::Sha256),
            "sha512" => Ok(Self::Sha512),
            _ => Err(setting("algorithm", "must be sha256 or sha512")),
        }
    }

    /// The configuration name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "sha256",
            Self::Sha512 => "sha512",
        }
    }
}

/// What `scheme = "rsa"` is configured with (`[sources.<id>.rsa]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsaSettings {
    /// `algorithm`.
    pub algorithm: RsaHash,
    /// `encoding` of the signature.
    pub encoding: Encoding,
    /// `header`: where the signature is sent.
    pub header: String,
    /// `prefix`: text before the encoded signature, required when set.
    pub prefix: String,
    /// `signed`: the template of what is signed.
    pub signed: String,
    /// `timestamp_header`: where `{timestamp}` comes from (decimal Unix seconds).
    pub timestamp_header: Option<String>,
}

/// `scheme = "rsa"`: an RSA signature under a configured public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredRsa {
    algorithm: RsaHash,
    encoding: Encoding,
    header: &'static str,
    prefix: String,
    template: Template,
    timestamp_header: Option<&'static str>,
    url: Option<String>,
    tolerance_secs: u64,
    signing_headers: &'static [&'static str],
}

impl ConfiguredRsa {
    /// The scheme `settings` describe, with the default tolerance.
    pub fn new(settings: &RsaSettings) -> Result<Self, SettingError> {
        let header = header_name("header", &settings.header)?;
        let template = Template::parse(&settings.signed)?;
        let timestamp_header =
            settings.timestamp_header.as_deref().map(|name| header_name("timestamp_header", name)).transpose()?;
        match (template.signs_timestamp(), timestamp_header) {
            (true, None) => return Err(setting("timestamp_header", "required when signed names {timestamp}")),
            (false, Some(_)) => return Err(setting("timestamp_header", "set, but signed does not name {timestamp}")),
            _ => {}
        }
        if settings.prefix.chars().any(char::is_whitespace) || !settings.prefix.is_ascii() {
            return Err(setting("prefix", "must be ASCII without whitespace"));
        }
        let signing_headers = sent_headers(&template, timestamp_header, header)?;
        Ok(Self {
            algorithm: settings.algorithm,
            encoding: settings.encoding,
            header,
            prefix: settings.prefix.clone(),
            template,
            timestamp_header,
            url: None,
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
            signing_headers,
        })
    }

    /// The settings this scheme was made from.
    #[must_use]
    pub fn settings(&self) -> RsaSettings {
        RsaSettings {
            algorithm: self.algorithm,
            encoding: self.encoding,
            header: self.header.to_owned(),
            prefix: self.prefix.clone(),
            signed: self.template.as_str().to_owned(),
            timestamp_header: self.timestamp_header.map(str::to_owned),
        }
    }

    /// What is signed for `body` at `timestamp`, the template's headers read by `header`.
    fn message<'a>(
        &'a self,
        body: &'a [u8],
        timestamp: &'a str,
        header: impl Fn(&'static str) -> Result<&'a str, AuthError>,
    ) -> Result<Vec<u8>, AuthError> {
        let url = self.url.as_deref().unwrap_or_default();
        Ok(self.template.material(body, timestamp, url, header)?.concat())
    }

    fn verifies(&self, key: &Secret, message: &[u8], signature: &Signature) -> bool {
        let Ok(public) = RsaPublicKey::from_public_key_der(key.expose()) else { return false };
        match self.algorithm {
            RsaHash::Sha256 => VerifyingKey::<Sha256>::new(public).verify(message, signature).is_ok(),
            RsaHash::Sha512 => VerifyingKey::<Sha512>::new(public).verify(message, signature).is_ok(),
        }
    }
}

impl Scheme for ConfiguredRsa {
    fn name(&self) -> &'static str {
        RSA
    }

    /// None of its own: a source using it names its identity; `/id` stands in.
    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    fn carries_identity(&self) -> bool {
        false
    }

    /// The provider's public key as PEM (SPKI), kept as DER; at least 2048 bits.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        let invalid = |reason| SecretError::Invalid { reason };
        let key = RsaPublicKey::from_public_key_pem(text.trim())
            .map_err(|_| invalid("an rsa secret is the provider's public key as PEM (BEGIN PUBLIC KEY)"))?;
        if key.n().bits() < MIN_BITS {
            return Err(invalid("the RSA public key is shorter than 2048 bits"));
        }
        let der = key.to_public_key_der().map_err(|_| invalid("the RSA public key cannot be encoded"))?;
        Ok(Secret::new(der.as_bytes().to_vec()))
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let value = single_header(delivery.headers, self.header)?;
        let malformed = AuthError::MalformedHeader(self.header);
        if value.len() > MAX_SIGNATURE_LEN {
            return Err(malformed);
        }
        let encoded = value.strip_prefix(self.prefix.as_str()).ok_or(malformed.clone())?;
        let bytes = self.encoding.decode(encoded).ok_or(malformed.clone())?;
        let signature = Signature::try_from(bytes.as_slice()).map_err(|_| malformed)?;
        let (timestamp, signed_at) = match self.timestamp_header {
            Some(name) => {
                let text = single_header(delivery.headers, name)?;
                let seconds = TimestampUnit::Seconds.read(text).ok_or(AuthError::MalformedHeader(name))?;
                check_tolerance(seconds, now, self.tolerance_secs)?;
                (text, Some(seconds))
            }
            None => ("", None),
        };
        let message = self.message(delivery.body, timestamp, |name| single_header(delivery.headers, name))?;
        if !secrets.iter().any(|key| self.verifies(key, &message, &signature)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: signed_at })
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        let mut scheme = self.clone();
        if let Some(tolerance_secs) = tolerance_secs {
            scheme.tolerance_secs = tolerance_secs;
        }
        Arc::new(scheme)
    }

    fn signs_url(&self) -> bool {
        self.template.signs_url()
    }

    fn with_signed_url(&self, url: &str) -> Option<Arc<dyn Scheme>> {
        let mut scheme = self.clone();
        scheme.url = Some(url.to_owned());
        Some(Arc::new(scheme))
    }

    /// The timestamp header, and the message id in every header the template signs.
    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        envelope(self.signing_headers, self.header, self.timestamp_header, TimestampUnit::Seconds, message)
    }

    /// Signs with `key`, the private key as PKCS #8 DER.
    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        let private = RsaPrivateKey::from_pkcs8_der(key.expose()).ok()?;
        let timestamp = if self.template.signs_timestamp() { message.timestamp.0.to_string() } else { String::new() };
        let id = message.id.to_owned();
        let signed = self.message(message.body, &timestamp, |_| Ok(id.as_str())).ok()?;
        let signature = match self.algorithm {
            RsaHash::Sha256 => SigningKey::<Sha256>::new(private).sign(&signed).to_vec(),
            RsaHash::Sha512 => SigningKey::<Sha512>::new(private).sign(&signed).to_vec(),
        };
        Some((self.header, format!("{}{}", self.prefix, self.encoding.encode(&signature))))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        self.signing_headers
    }

    /// The private key, as PKCS #8 DER; the reason never contains it.
    fn check_signing_key(&self, key: &Secret) -> Result<(), SecretError> {
        RsaPrivateKey::from_pkcs8_der(key.expose())
            .map(|_| ())
            .map_err(|_| SecretError::Invalid { reason: "an rsa signing key is a private key as PKCS #8 DER" })
    }

    fn secret_signs(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
