//! The provider catalog: the webhook providers idemgate receives from without code in
//! front of it (`scheme = "linear"`, …), each one table entry.
//!
//! An entry settles what the first seed asks before any real integration, from the
//! provider's own documentation: how a delivery is signed ([`Signing`]), which identifier
//! is the stable identity of the event rather than of one transport attempt ([`Identity`],
//! with the provider's words for why), what a retry resends ([`Provider::per_attempt`]:
//! nothing but the same bytes, or exactly these per-attempt fields changed), and what
//! backs the entry beyond our reading of the docs ([`Backing`]: the provider's official
//! library, or its published example vectors). A plain HMAC provider is by construction a
//! `scheme = "hmac"` configuration ([`HmacSpec`] is what that table can say); anything the
//! template cannot express is a coded scheme in [`crate::scheme`].
//!
//! The groups live in their own files; [`providers`] is every entry, and
//! [`crate::scheme::lookup`] finds a provider's scheme by its name.

mod business;
mod classic;
mod developer;
mod messaging;
mod payments;
mod platforms;
mod support;

use std::sync::{Arc, LazyLock};

use crate::{
    AuthError, Secret, SecretSet, UnixTime,
    form::BodyFormat,
    scheme::{
        IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery,
        generic::{
            Algorithm, BasicAuth, Encoding, GenericHmac, HmacSettings, KeyEncoding, PairsSettings, SharedToken,
            TimestampUnit,
        },
    },
    secret::SecretError,
};

/// Every group's entries, in the order the catalog page lists them.
const GROUPS: &[&[Provider]] = &[
    classic::PROVIDERS,
    payments::PROVIDERS,
    messaging::PROVIDERS,
    support::PROVIDERS,
    business::PROVIDERS,
    developer::PROVIDERS,
    platforms::PROVIDERS,
];

/// One provider as the catalog knows it.
#[derive(Debug)]
pub struct Provider {
    /// The scheme name a source configures: `scheme = "linear"`.
    pub name: &'static str,
    /// The provider's own name: `Linear`.
    pub title: &'static str,
    /// How its deliveries are signed.
    pub signing: Signing,
    /// Where its stable event identity is; `None` when it sends none (the source then
    /// names one, and [`Provider::identity_note`] says so).
    pub identity: Option<Identity>,
    /// The provider's own words (a short quote, and where) on why the identity is stable
    /// across its retries, or that it sends none.
    pub identity_note: &'static str,
    /// A JSON pointer to the event type (for a form, `/Field`), if the body names one.
    pub event_type: Option<&'static str>,
    /// How the body is read: JSON, or an `application/x-www-form-urlencoded` form.
    pub body: BodyFormat,
    /// JSON pointers to the fields the provider changes when it retries (an attempt
    /// counter, a delivery time), left out of the fingerprint; `*` stands for every array
    /// element. Empty: a retry resends the same bytes, and the raw bytes are compared.
    pub per_attempt: &'static [&'static str],
    /// The provider's words on what a retry resends.
    pub retry_note: &'static str,
    /// Where the provider documents its signature and retries.
    pub docs: &'static str,
    /// What backs the entry beyond our reading of the docs.
    pub backing: Backing,
}

/// Where a provider puts its stable event identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// In this request header (lowercase name).
    Header(&'static str),
    /// At this JSON pointer into the body.
    Body(&'static str),
}

impl Identity {
    /// The identity as a source's setting.
    #[must_use]
    pub fn location(self) -> IdentityLocation {
        match self {
            Self::Header(name) => IdentityLocation::Header(name.to_owned()),
            Self::Body(pointer) => IdentityLocation::Body(pointer.to_owned()),
        }
    }
}

/// How a provider signs its deliveries.
#[derive(Debug, Clone, Copy)]
pub enum Signing {
    /// A scheme coded in [`crate::scheme`] (URL and sorted form parameters, ECDSA,
    /// ed25519, several signatures, …).
    Coded(&'static dyn Scheme),
    /// A plain HMAC: exactly what a `scheme = "hmac"` configuration can say.
    Hmac(HmacSpec),
    /// A shared token in this header (lowercase name), compared in constant time.
    Token(&'static str),
    /// HTTP Basic authentication; the secret is `user:password`.
    Basic,
}

/// A plain HMAC as a `[sources.<id>.hmac]` table says it; see
/// [`crate::scheme::generic`] for what each setting means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HmacSpec {
    /// `algorithm`.
    pub algorithm: Algorithm,
    /// `encoding`.
    pub encoding: Encoding,
    /// `header` (lowercase).
    pub header: &'static str,
    /// `prefix`, `""` for none.
    pub prefix: &'static str,
    /// `pairs`, when the header is `key=value` pairs.
    pub pairs: Option<Pairs>,
    /// `signed`: `{body}`, `{timestamp}`, `{header:Name}`, `{url}` and literal text.
    pub signed: &'static str,
    /// `timestamp_header`.
    pub timestamp_header: Option<&'static str>,
    /// `timestamp_unit`.
    pub timestamp_unit: TimestampUnit,
    /// `key`.
    pub key: KeyEncoding,
}

/// `pairs` of an [`HmacSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pairs {
    /// `separator`.
    pub separator: char,
    /// `timestamp`.
    pub timestamp: Option<&'static str>,
    /// `signature`.
    pub signature: &'static str,
}

impl HmacSpec {
    /// The common shape: `prefix` and a tag in `header` over `signed`, no timestamp, the
    /// secret's UTF-8 bytes as key. Change fields with struct update syntax.
    #[must_use]
    pub const fn new(
        algorithm: Algorithm,
        encoding: Encoding,
        header: &'static str,
        prefix: &'static str,
        signed: &'static str,
    ) -> Self {
        Self {
            algorithm,
            encoding,
            header,
            prefix,
            pairs: None,
            signed,
            timestamp_header: None,
            timestamp_unit: TimestampUnit::Seconds,
            key: KeyEncoding::Utf8,
        }
    }

    /// The same as the settings of `scheme = "hmac"`.
    #[must_use]
    pub fn settings(&self) -> HmacSettings {
        HmacSettings {
            algorithm: self.algorithm,
            encoding: self.encoding,
            header: self.header.to_owned(),
            prefix: self.prefix.to_owned(),
            pairs: self.pairs.map(|p| PairsSettings {
                separator: p.separator,
                timestamp: p.timestamp.map(str::to_owned),
                signature: p.signature.to_owned(),
            }),
            signed: self.signed.to_owned(),
            timestamp_header: self.timestamp_header.map(str::to_owned),
            timestamp_unit: self.timestamp_unit,
            key: self.key,
        }
    }
}

/// What backs a catalog entry beyond our reading of the provider's docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// The provider's official library signs (or verifies) in `tests/providers/`.
    Library {
        /// Where it is published.
        registry: Registry,
        /// Its package name there.
        package: &'static str,
        /// The function or class the test calls.
        api: &'static str,
    },
    /// The provider's published example vectors, in `tests/providers/vectors/<name>.json`.
    Vectors {
        /// Where the provider publishes them.
        source: &'static str,
    },
}

/// A package registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registry {
    /// pypi.org.
    PyPi,
    /// npmjs.com.
    Npm,
    /// crates.io.
    CratesIo,
}

impl Registry {
    /// The registry's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::PyPi => "PyPI",
            Self::Npm => "npm",
            Self::CratesIo => "crates.io",
        }
    }
}

/// Every provider, in the catalog's order.
pub fn providers() -> impl Iterator<Item = &'static Provider> {
    GROUPS.iter().flat_map(|group| group.iter())
}

/// The provider configured as `name`.
#[must_use]
pub fn find(name: &str) -> Option<&'static Provider> {
    providers().find(|provider| provider.name == name)
}

/// Every provider's scheme, made once.
static SCHEMES: LazyLock<Vec<Provided>> = LazyLock::new(|| providers().map(Provided::new).collect());

/// The scheme of the provider configured as `name`.
pub(crate) fn scheme(name: &str) -> Option<&'static dyn Scheme> {
    SCHEMES.iter().find(|scheme| scheme.name == name).map(|scheme| scheme as &dyn Scheme)
}

impl Provider {
    /// The provider's scheme, as a source configures it by the provider's name.
    ///
    /// # Panics
    ///
    /// Never for an entry of the catalog (its test makes every scheme).
    #[must_use]
    pub fn scheme(&'static self) -> &'static dyn Scheme {
        scheme(self.name).unwrap_or_else(|| unreachable!("every provider has a scheme"))
    }
}

/// A provider's scheme under the provider's name and with its identity.
#[derive(Debug, Clone)]
struct Provided {
    name: &'static str,
    identity: Option<IdentityLocation>,
    inner: Arc<dyn Scheme>,
}

impl Provided {
    fn new(provider: &'static Provider) -> Self {
        let inner: Arc<dyn Scheme> = match provider.signing {
            Signing::Coded(scheme) => scheme.configured(None),
            // A catalog entry that does not make its scheme fails the catalog's own test.
            Signing::Hmac(spec) => match GenericHmac::new(&spec.settings()) {
                Ok(scheme) => Arc::new(scheme),
                Err(err) => panic!("catalog entry {}: {err}", provider.name),
            },
            Signing::Token(header) => match SharedToken::new(header) {
                Ok(scheme) => Arc::new(scheme),
                Err(err) => panic!("catalog entry {}: {err}", provider.name),
            },
            Signing::Basic => Arc::new(BasicAuth),
        };
        Self { name: provider.name, identity: provider.identity.map(Identity::location), inner }
    }

    fn around(&self, inner: Arc<dyn Scheme>) -> Arc<dyn Scheme> {
        Arc::new(Self { name: self.name, identity: self.identity.clone(), inner })
    }
}

impl Scheme for Provided {
    fn name(&self) -> &'static str {
        self.name
    }

    fn default_identity(&self) -> IdentityLocation {
        self.identity.clone().unwrap_or_else(|| self.inner.default_identity())
    }

    fn carries_identity(&self) -> bool {
        self.identity.is_some()
    }

    fn signed_identity_headers(&self) -> &'static [&'static str] {
        self.inner.signed_identity_headers()
    }

    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        self.inner.decode_secret(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        self.inner.verify(secrets, delivery, now)
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        self.around(self.inner.configured(tolerance_secs))
    }

    fn signs_url(&self) -> bool {
        self.inner.signs_url()
    }

    fn with_signed_url(&self, url: &str) -> Option<Arc<dyn Scheme>> {
        self.inner.with_signed_url(url).map(|inner| self.around(inner))
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        self.inner.envelope(message)
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        self.inner.signature(key, message)
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        self.inner.signing_headers()
    }

    fn check_signing_key(&self, key: &Secret) -> Result<(), SecretError> {
        self.inner.check_signing_key(key)
    }

    fn secret_signs(&self) -> bool {
        self.inner.secret_signs()
    }
}

#[cfg(test)]
mod tests;
