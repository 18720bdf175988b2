//! `hmac`, `token` and `basic`: schemes a source configures rather than idemgate codes, for
//! providers that have no scheme of their own here.
//!
//! - [`GenericHmac`] (`scheme = "hmac"`): an HMAC (SHA-1, SHA-256 or SHA-512) keyed with the
//!   secret's UTF-8 bytes, over a declared template of what is signed (`{body}`,
//!   `{timestamp}`, `{header:Name}` and literal text), sent hex, base64 or base64url in one
//!   header, after an optional prefix. A template must sign `{body}` exactly once; one that
//!   signs `{timestamp}` names the header it comes from (decimal Unix seconds) and gets a
//!   tolerance (five minutes unless configured), checked in both directions.
//! - [`SharedToken`] (`scheme = "token"`): the secret itself, sent in a header.
//! - [`BasicAuth`] (`scheme = "basic"`): HTTP Basic authentication, the secret being
//!   `user:password`.
//!
//! A token or a Basic password proves only that the sender knows it: the body is not
//! covered (a proxy or anyone holding one request can change it), a captured request can be
//! replayed for as long as the secret is valid, and the secret travels in every request.
//! Every comparison is constant-time: the HMAC tags directly, the token and the Basic
//! credentials through their SHA-256 digests, so that not even their length leaks.
//!
//! These schemes carry no event identity: a source using one names its `identity`.
//! Configured header names are interned once per distinct name (the trait hands out
//! `&'static str` names), so reloading a configuration does not grow memory.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex, PoisonError},
};

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};
use subtle::{Choice, ConstantTimeEq};

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, check_tolerance, plain_secret,
    single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// `scheme = "hmac"`.
pub const HMAC: &str = "hmac";
/// `scheme = "token"`.
pub const TOKEN: &str = "token";
/// `scheme = "basic"`.
pub const BASIC: &str = "basic";
/// The configured schemes' names, in the order error messages list them.
pub const NAMES: [&str; 4] = [HMAC, super::rsa::RSA, TOKEN, BASIC];
/// The tolerance of a signed timestamp unless the source configures one.
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;
/// The header Basic credentials travel in.
const AUTHORIZATION: &str = "authorization";
/// The most digits accepted in a timestamp (`i64::MAX` has 19).
const MAX_TIMESTAMP_DIGITS: usize = 19;
/// The longest signature header accepted, in bytes.
const MAX_SIGNATURE_LEN: usize = 1024;

/// A setting of a configured scheme that cannot be used; names the setting, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {reason}")]
pub struct SettingError {
    /// The setting's name within the scheme's table (`algorithm`, `signed`, …).
    pub setting: &'static str,
    /// What is wrong with it.
    pub reason: &'static str,
}

pub(super) fn setting(setting: &'static str, reason: &'static str) -> SettingError {
    SettingError { setting, reason }
}

/// The hash an HMAC is computed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// HMAC-SHA1 (20 bytes); still what some providers sign with.
    Sha1,
    /// HMAC-SHA256 (32 bytes).
    Sha256,
    /// HMAC-SHA512 (64 bytes).
    Sha512,
}

impl Algorithm {
    /// The algorithm configured as `name`: `sha1`, `sha256` or `sha512`.
    pub fn from_name(name: &str) -> Result<Self, SettingError> {
        match name {
            "sha1" => Ok(Self::Sha1),
            "sha256" => Ok(Self::Sha256),
            "sha512" => Ok(Self::Sha512),
            _ => Err(setting("algorithm", "must be sha1, sha256 or sha512")),
        }
    }

    /// The configuration name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
            Self::Sha512 => "sha512",
        }
    }

    /// The HMAC under `key` of the concatenation of `parts`.
    #[must_use]
    pub fn mac(self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
            // HMAC accepts keys of any length, so this cannot fail.
            let mut mac = <M as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
            for part in parts {
                mac.update(part);
            }
            mac.finalize().into_bytes().to_vec()
        }
        match self {
            Self::Sha1 => run::<Hmac<Sha1>>(key, parts),
            Self::Sha256 => run::<Hmac<Sha256>>(key, parts),
            Self::Sha512 => run::<Hmac<Sha512>>(key, parts),
        }
    }

    fn len(self) -> usize {
        match self {
            Self::Sha1 => 20,
            Self::Sha256 => 32,
            Self::Sha512 => 64,
        }
    }
}

/// How the tag is written in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Lowercase hexadecimal (uppercase digits are refused, as GitHub's and Shopify's
    /// own checks refuse them).
    Hex,
    /// Standard base64 with padding (RFC 4648 §4).
    Base64,
    /// URL-safe base64 without padding (RFC 4648 §5), as Sanity's webhook toolkit writes
    /// it; padding is refused.
    Base64Url,
}

impl Encoding {
    /// The encoding configured as `name`: `hex`, `base64` or `base64url`.
    pub fn from_name(name: &str) -> Result<Self, SettingError> {
        match name {
            "hex" => Ok(Self::Hex),
            "base64" => Ok(Self::Base64),
            "base64url" => Ok(Self::Base64Url),
            _ => Err(setting("encoding", "must be hex, base64 or base64url")),
        }
    }

    /// The configuration name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Hex => "hex",
            Self::Base64 => "base64",
            Self::Base64Url => "base64url",
        }
    }

    pub(super) fn encode(self, tag: &[u8]) -> String {
        match self {
            Self::Hex => hex::encode(tag),
            Self::Base64 => STANDARD.encode(tag),
            Self::Base64Url => URL_SAFE_NO_PAD.encode(tag),
        }
    }

    /// The tag written as `text`, or `None` when it is not in this encoding.
    pub(super) fn decode(self, text: &str) -> Option<Vec<u8>> {
        match self {
            Self::Hex if text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => {
                hex::decode(text).ok()
            }
            Self::Hex => None,
            Self::Base64 => STANDARD.decode(text).ok(),
            Self::Base64Url => URL_SAFE_NO_PAD.decode(text).ok(),
        }
    }
}

/// One piece of what is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The raw body bytes.
    Body,
    /// The signed timestamp, as the header carried it.
    Timestamp,
    /// The value of this request header (lowercase name).
    Header(&'static str),
    /// The URL the provider posts to, as registered with it: the source's `signed_url`.
    Url,
    /// This text, as written.
    Literal(String),
}

/// What an HMAC signs: a sequence of [`Part`]s, written like `{timestamp}.{body}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    text: String,
}

impl Template {
    /// Parses `text`: `{body}` (exactly once), `{timestamp}`, `{header:Name}`, and literal
    /// text between them; `{{` and `}}` stand for a literal brace.
    pub fn parse(text: &str) -> Result<Self, SettingError> {
        let bad = |reason| setting("signed", reason);
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("{{").or_else(|| rest.strip_prefix("}}")) {
                literal.push(c);
                rest = after;
                continue;
            }
            match c {
                '{' => {
                    let end = rest.find('}').ok_or(bad("a { is not closed"))?;
                    let part = match &rest[1..end] {
                        "body" => Part::Body,
                        "timestamp" => Part::Timestamp,
                        "url" => Part::Url,
                        name => match name.strip_prefix("header:") {
                            Some(header) => Part::Header(header_name("signed", header)?),
                            None => return Err(bad("a placeholder is {body}, {timestamp}, {url} or {header:Name}")),
                        },
                    };
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(part);
                    rest = &rest[end + 1..];
                }
                '}' => return Err(bad("a } without its {")),
                c => {
                    literal.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        if parts.iter().filter(|part| **part == Part::Body).count() != 1 {
            return Err(bad("must sign {body} exactly once"));
        }
        Ok(Self { parts, text: text.to_owned() })
    }

    /// The parts, in order.
    #[must_use]
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The template as configured.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub(super) fn signs_timestamp(&self) -> bool {
        self.parts.contains(&Part::Timestamp)
    }

    /// Whether the URL the provider posts to is signed (`{url}`).
    #[must_use]
    pub fn signs_url(&self) -> bool {
        self.parts.contains(&Part::Url)
    }

    /// The bytes of each part for one delivery; `header` reads a named header's value.
    pub(super) fn material<'a>(
        &'a self,
        body: &'a [u8],
        timestamp: &'a str,
        url: &'a str,
        header: impl Fn(&'static str) -> Result<&'a str, AuthError>,
    ) -> Result<Vec<&'a [u8]>, AuthError> {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Body => Ok(body),
                Part::Timestamp => Ok(timestamp.as_bytes()),
                Part::Url => Ok(url.as_bytes()),
                Part::Header(name) => header(name).map(str::as_bytes),
                Part::Literal(text) => Ok(text.as_bytes()),
            })
            .collect()
    }
}

/// The unit of a signed timestamp.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TimestampUnit {
    /// Decimal Unix seconds.
    #[default]
    Seconds,
    /// Decimal Unix milliseconds (HubSpot, Webflow).
    Milliseconds,
}

impl TimestampUnit {
    /// The unit configured as `name`: `s` or `ms`.
    pub fn from_name(name: &str) -> Result<Self, SettingError> {
        match name {
            "s" => Ok(Self::Seconds),
            "ms" => Ok(Self::Milliseconds),
            _ => Err(setting("timestamp_unit", "must be s or ms")),
        }
    }

    /// The configuration name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Seconds => "s",
            Self::Milliseconds => "ms",
        }
    }

    /// `time` written in this unit, as a sender signs it.
    pub(super) fn write(self, time: UnixTime) -> String {
        match self {
            Self::Seconds => time.0.to_string(),
            Self::Milliseconds => (i128::from(time.0) * 1000).to_string(),
        }
    }

    /// The whole seconds of a timestamp written in this unit (digits only).
    pub(super) fn read(self, text: &str) -> Option<UnixTime> {
        let bounded = (1..=MAX_TIMESTAMP_DIGITS).contains(&text.len());
        if !bounded || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: i64 = text.parse().ok()?;
        Some(UnixTime(match self {
            Self::Seconds => value,
            Self::Milliseconds => value / 1000,
        }))
    }
}

/// How the configured secret's text becomes the HMAC key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeyEncoding {
    /// The text's UTF-8 bytes, as most providers show their secret.
    #[default]
    Utf8,
    /// Standard base64 (Airtable).
    Base64,
    /// Hexadecimal.
    Hex,
    /// `whsec_` and then standard base64 (Standard Webhooks, Svix).
    Whsec,
}

impl KeyEncoding {
    /// The encoding configured as `name`: `utf8`, `base64`, `hex` or `whsec`.
    pub fn from_name(name: &str) -> Result<Self, SettingError> {
        match name {
            "utf8" => Ok(Self::Utf8),
            "base64" => Ok(Self::Base64),
            "hex" => Ok(Self::Hex),
            "whsec" => Ok(Self::Whsec),
            _ => Err(setting("key", "must be utf8, base64, hex or whsec")),
        }
    }

    /// The configuration name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Utf8 => "utf8",
            Self::Base64 => "base64",
            Self::Hex => "hex",
            Self::Whsec => "whsec",
        }
    }

    /// The key `text` stands for. Errors never contain the text.
    fn decode(self, text: &str) -> Result<Secret, SecretError> {
        let plain = plain_secret(text)?;
        let invalid = |reason| SecretError::Invalid { reason };
        let bytes = match self {
            Self::Utf8 => return Ok(plain),
            Self::Base64 => STANDARD.decode(text).map_err(|_| invalid("the secret is not standard base64"))?,
            Self::Hex => hex::decode(text).map_err(|_| invalid("the secret is not hexadecimal"))?,
            Self::Whsec => text
                .strip_prefix("whsec_")
                .and_then(|rest| STANDARD.decode(rest).ok())
                .ok_or(invalid("the secret is not whsec_ and standard base64"))?,
        };
        if bytes.is_empty() {
            return Err(invalid("the secret is empty"));
        }
        Ok(Secret::new(bytes))
    }
}

/// A signature header written as `key=value` pairs (`t=1700000000,v1=5257a8…`): the
/// timestamp under one key, the signature under another, which may repeat (any match
/// accepts, as during a provider's key rotation). Pairs are read in any order, whitespace
/// around them is ignored, and unknown keys are skipped, as the providers' own checks do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairsSettings {
    /// `separator`: `,` or `;` (or a space).
    pub separator: char,
    /// `timestamp`: the key the signed timestamp is under, if the header carries it.
    pub timestamp: Option<String>,
    /// `signature`: the key each signature is under.
    pub signature: String,
}

/// What `scheme = "hmac"` is configured with (`[sources.<id>.hmac]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacSettings {
    /// `algorithm`.
    pub algorithm: Algorithm,
    /// `encoding`.
    pub encoding: Encoding,
    /// `header`: where the signature is sent.
    pub header: String,
    /// `prefix`: text before the encoded tag (`sha256=`), required when set.
    pub prefix: String,
    /// `pairs`: the header is a list of `key=value` pairs instead of prefix and tag.
    pub pairs: Option<PairsSettings>,
    /// `signed`: the template of what is signed.
    pub signed: String,
    /// `timestamp_header`: where `{timestamp}` comes from, unless `pairs` carries it.
    pub timestamp_header: Option<String>,
    /// `timestamp_unit`: seconds unless `ms`.
    pub timestamp_unit: TimestampUnit,
    /// `key`: how the secret's text becomes the key (its UTF-8 bytes unless set).
    pub key: KeyEncoding,
}

impl HmacSettings {
    /// The common shape: `prefix` and a hex or base64 tag in `header`, over `signed`, the
    /// secret's UTF-8 bytes as key, a timestamp (if any) in decimal seconds.
    #[must_use]
    pub fn new(algorithm: Algorithm, encoding: Encoding, header: &str, prefix: &str, signed: &str) -> Self {
        Self {
            algorithm,
            encoding,
            header: header.to_owned(),
            prefix: prefix.to_owned(),
            pairs: None,
            signed: signed.to_owned(),
            timestamp_header: None,
            timestamp_unit: TimestampUnit::Seconds,
            key: KeyEncoding::Utf8,
        }
    }
}

/// The pairs of a signature header, as interned names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pairs {
    separator: char,
    timestamp: Option<&'static str>,
    signature: &'static str,
}

/// `scheme = "hmac"`: an HMAC over a configured template. The provider catalog's plain-HMAC
/// providers are this scheme too, under their own name (`crate::catalog`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericHmac {
    algorithm: Algorithm,
    encoding: Encoding,
    header: &'static str,
    prefix: String,
    pairs: Option<Pairs>,
    template: Template,
    timestamp_header: Option<&'static str>,
    timestamp_unit: TimestampUnit,
    key: KeyEncoding,
    url: Option<String>,
    tolerance_secs: u64,
    signing_headers: &'static [&'static str],
}

impl GenericHmac {
    /// The scheme `settings` describe, with the default tolerance.
    pub fn new(settings: &HmacSettings) -> Result<Self, SettingError> {
        let header = header_name("header", &settings.header)?;
        let template = Template::parse(&settings.signed)?;
        let timestamp_header =
            settings.timestamp_header.as_deref().map(|name| header_name("timestamp_header", name)).transpose()?;
        let pairs = settings.pairs.as_ref().map(pairs).transpose()?;
        let timestamp_in_pairs = pairs.as_ref().is_some_and(|p| p.timestamp.is_some());
        match (template.signs_timestamp(), timestamp_header.is_some(), timestamp_in_pairs) {
            (true, false, false) => {
                return Err(setting(
                    "timestamp_header",
                    "required when signed names {timestamp}, unless pairs.timestamp",
                ));
            }
            (true, true, true) => {
                return Err(setting("timestamp_header", "set, but pairs.timestamp names the timestamp"));
            }
            (false, true, _) => return Err(setting("timestamp_header", "set, but signed does not name {timestamp}")),
            (false, _, true) => return Err(setting("pairs.timestamp", "set, but signed does not name {timestamp}")),
            _ => {}
        }
        if settings.prefix.chars().any(char::is_whitespace) || !settings.prefix.is_ascii() {
            return Err(setting("prefix", "must be ASCII without whitespace"));
        }
        if pairs.is_some() && !settings.prefix.is_empty() {
            return Err(setting("prefix", "not read when the header is pairs"));
        }
        let signing_headers = sent_headers(&template, timestamp_header, header)?;
        Ok(Self {
            algorithm: settings.algorithm,
            encoding: settings.encoding,
            header,
            prefix: settings.prefix.clone(),
            pairs,
            template,
            timestamp_header,
            timestamp_unit: settings.timestamp_unit,
            key: settings.key,
            url: None,
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
            signing_headers,
        })
    }

    /// The settings this scheme was made from.
    #[must_use]
    pub fn settings(&self) -> HmacSettings {
        HmacSettings {
            algorithm: self.algorithm,
            encoding: self.encoding,
            header: self.header.to_owned(),
            prefix: self.prefix.clone(),
            pairs: self.pairs.as_ref().map(|p| PairsSettings {
                separator: p.separator,
                timestamp: p.timestamp.map(str::to_owned),
                signature: p.signature.to_owned(),
            }),
            signed: self.template.as_str().to_owned(),
            timestamp_header: self.timestamp_header.map(str::to_owned),
            timestamp_unit: self.timestamp_unit,
            key: self.key,
        }
    }

    /// The tolerance of the signed timestamp, in seconds (unused when none is signed).
    #[must_use]
    pub fn tolerance_secs(&self) -> u64 {
        self.tolerance_secs
    }

    /// The signature header's value for `body` signed at `timestamp` (as written) under
    /// `key`, the named headers of the template taking their values from `header`.
    fn sign(&self, key: &Secret, body: &[u8], timestamp: &str, header: impl Fn(&'static str) -> String) -> String {
        let values: Vec<(&'static str, String)> = self
            .template
            .parts()
            .iter()
            .filter_map(|part| match part {
                Part::Header(name) => Some((*name, header(name))),
                _ => None,
            })
            .collect();
        let lookup = |name: &'static str| {
            values.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str()).ok_or(AuthError::MissingHeader(name))
        };
        let url = self.url.as_deref().unwrap_or_default();
        // Every named header has a value above, so the material is complete.
        let material = self.template.material(body, timestamp, url, lookup).unwrap_or_default();
        let tag = self.encoding.encode(&self.algorithm.mac(key.expose(), &material));
        match &self.pairs {
            None => format!("{}{tag}", self.prefix),
            Some(Pairs { separator, timestamp: Some(t), signature }) => {
                format!("{t}={timestamp}{separator}{signature}={tag}")
            }
            Some(Pairs { signature, .. }) => format!("{signature}={tag}"),
        }
    }

    /// The tags and the timestamp a signature header carries.
    fn read_header<'h>(&self, value: &'h str) -> Result<(Vec<Vec<u8>>, Option<&'h str>), AuthError> {
        let malformed = AuthError::MalformedHeader(self.header);
        if value.len() > MAX_SIGNATURE_LEN {
            return Err(malformed);
        }
        let decode = |text: &str| {
            self.encoding.decode(text).filter(|tag| tag.len() == self.algorithm.len()).ok_or(malformed.clone())
        };
        let Some(pairs) = &self.pairs else {
            let encoded = value.strip_prefix(self.prefix.as_str()).ok_or(malformed.clone())?;
            return Ok((vec![decode(encoded)?], None));
        };
        let mut tags = Vec::new();
        let mut timestamp = None;
        for item in value.split(pairs.separator).map(str::trim).filter(|item| !item.is_empty()) {
            let (key, text) = item.split_once('=').ok_or(malformed.clone())?;
            if key == pairs.signature {
                tags.push(decode(text)?);
            } else if Some(key) == pairs.timestamp && timestamp.replace(text).is_some() {
                return Err(malformed);
            }
        }
        if tags.is_empty() || (pairs.timestamp.is_some() && timestamp.is_none()) {
            return Err(malformed);
        }
        Ok((tags, timestamp))
    }
}

/// Every header a configured template makes a sender set: the timestamp header, the
/// headers `{header:Name}` signs, then the signature `header`, which cannot sign itself.
pub(super) fn sent_headers(
    template: &Template,
    timestamp_header: Option<&'static str>,
    header: &'static str,
) -> Result<&'static [&'static str], SettingError> {
    let mut sent: Vec<&'static str> = timestamp_header.into_iter().collect();
    for part in template.parts() {
        if let Part::Header(name) = part
            && !sent.contains(name)
        {
            sent.push(name);
        }
    }
    if sent.contains(&header) {
        return Err(setting("header", "the signature header cannot also be signed"));
    }
    sent.push(header);
    Ok(intern_list(sent))
}

/// The headers of one attempt other than the signature: the timestamp in `unit`, and the
/// message id in every header the template signs.
pub(super) fn envelope(
    sent: &'static [&'static str],
    header: &'static str,
    timestamp_header: Option<&'static str>,
    unit: TimestampUnit,
    message: &Outgoing<'_>,
) -> Vec<(&'static str, String)> {
    sent.iter()
        .filter(|name| **name != header)
        .map(|name| {
            let value =
                if Some(*name) == timestamp_header { unit.write(message.timestamp) } else { message.id.to_owned() };
            (*name, value)
        })
        .collect()
}

/// The pairs of a signature header as configured, checked and interned.
fn pairs(settings: &PairsSettings) -> Result<Pairs, SettingError> {
    if ![',', ';', ' '].contains(&settings.separator) {
        return Err(setting("pairs.separator", "must be \",\", \";\" or \" \""));
    }
    let key = |at: &'static str, text: &str| {
        let valid = !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if valid { Ok(intern(text)) } else { Err(setting(at, "must be letters, digits, - or _")) }
    };
    let signature = key("pairs.signature", &settings.signature)?;
    let timestamp = settings.timestamp.as_deref().map(|t| key("pairs.timestamp", t)).transpose()?;
    if timestamp == Some(signature) {
        return Err(setting("pairs.timestamp", "must differ from pairs.signature"));
    }
    Ok(Pairs { separator: settings.separator, timestamp, signature })
}

impl Scheme for GenericHmac {
    fn name(&self) -> &'static str {
        HMAC
    }

    /// None of its own: a source using it names its identity; `/id` stands in.
    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    fn carries_identity(&self) -> bool {
        false
    }

    /// The secret as the provider shows it, decoded as `key` says.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        self.key.decode(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let (given, in_pairs) = self.read_header(single_header(delivery.headers, self.header)?)?;
        let (timestamp, signed_at) = match (in_pairs, self.timestamp_header) {
            (Some(text), _) => {
                let seconds = self.timestamp_unit.read(text).ok_or(AuthError::MalformedHeader(self.header))?;
                (text, Some(seconds))
            }
            (None, Some(name)) => {
                let text = single_header(delivery.headers, name)?;
                (text, Some(self.timestamp_unit.read(text).ok_or(AuthError::MalformedHeader(name))?))
            }
            (None, None) => ("", None),
        };
        if let Some(seconds) = signed_at {
            check_tolerance(seconds, now, self.tolerance_secs)?;
        }
        let url = self.url.as_deref().unwrap_or_default();
        let material =
            self.template.material(delivery.body, timestamp, url, |name| single_header(delivery.headers, name))?;
        let matched = secrets.iter().fold(Choice::from(0), |acc, secret| {
            let expected = self.algorithm.mac(secret.expose(), &material);
            given.iter().fold(acc, |acc, tag| acc | expected.ct_eq(tag))
        });
        if !bool::from(matched) {
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
        envelope(self.signing_headers, self.header, self.timestamp_header, self.timestamp_unit, message)
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        let timestamp =
            if self.template.signs_timestamp() { self.timestamp_unit.write(message.timestamp) } else { String::new() };
        Some((self.header, self.sign(key, message.body, &timestamp, |_| message.id.to_owned())))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        self.signing_headers
    }
}

/// `scheme = "token"`: a shared token in a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedToken {
    header: &'static str,
    signing_headers: &'static [&'static str],
}

impl SharedToken {
    /// The scheme reading the token from `header`.
    pub fn new(header: &str) -> Result<Self, SettingError> {
        let header = header_name("header", header)?;
        Ok(Self { header, signing_headers: intern_list(vec![header]) })
    }

    /// The header the token is sent in.
    #[must_use]
    pub fn header(&self) -> &'static str {
        self.header
    }
}

impl Scheme for SharedToken {
    fn name(&self) -> &'static str {
        TOKEN
    }

    /// None of its own: a source using it names its identity; `/id` stands in.
    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    fn carries_identity(&self) -> bool {
        false
    }

    /// The token exactly as the provider sends it.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        plain_secret(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        _now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let given = single_header(delivery.headers, self.header)?;
        if !any_secret_equals(secrets, given.as_bytes()) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: None })
    }

    fn configured(&self, _tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(self.clone())
    }

    fn envelope(&self, _message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn signature(&self, key: &Secret, _message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((self.header, String::from_utf8(key.expose().to_vec()).ok()?))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        self.signing_headers
    }

    /// The token goes into a header, so it must be text.
    fn check_signing_key(&self, key: &Secret) -> Result<(), SecretError> {
        plain_secret(std::str::from_utf8(key.expose()).unwrap_or("")).map(|_| ())
    }
}

/// `scheme = "basic"`: HTTP Basic authentication (RFC 7617); the secret is `user:password`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BasicAuth;

impl Scheme for BasicAuth {
    fn name(&self) -> &'static str {
        BASIC
    }

    /// None of its own: a source using it names its identity; `/id` stands in.
    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    fn carries_identity(&self) -> bool {
        false
    }

    /// `user:password`, as the provider is told to send it.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        let secret = plain_secret(text)?;
        match text.split_once(':') {
            Some((user, password)) if !user.is_empty() && !password.is_empty() => Ok(secret),
            _ => Err(SecretError::Invalid { reason: "a Basic secret is user:password, both non-empty" }),
        }
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        _now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let value = single_header(delivery.headers, AUTHORIZATION)?;
        let malformed = AuthError::MalformedHeader(AUTHORIZATION);
        let (kind, encoded) = value.split_once(' ').ok_or(malformed.clone())?;
        if !kind.eq_ignore_ascii_case("basic") {
            return Err(malformed);
        }
        let credentials = STANDARD.decode(encoded.trim()).map_err(|_| malformed)?;
        if !any_secret_equals(secrets, &credentials) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: None })
    }

    fn configured(&self, _tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(*self)
    }

    fn envelope(&self, _message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn signature(&self, key: &Secret, _message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((AUTHORIZATION, format!("Basic {}", STANDARD.encode(key.expose()))))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        &[AUTHORIZATION]
    }
}

/// Whether `given` equals any of `secrets`, compared through SHA-256 digests so that the
/// time taken tells neither which secret matched, nor how much of one, nor its length.
fn any_secret_equals(secrets: &SecretSet, given: &[u8]) -> bool {
    let given = Sha256::digest(given);
    let matched =
        secrets.iter().fold(Choice::from(0), |acc, secret| acc | Sha256::digest(secret.expose()).ct_eq(&given));
    bool::from(matched)
}

/// A configured header name, valid and lowercased, interned.
pub(super) fn header_name(at: &'static str, name: &str) -> Result<&'static str, SettingError> {
    let parsed = http::HeaderName::try_from(name).map_err(|_| setting(at, "not a valid header name"))?;
    Ok(intern(parsed.as_str()))
}

/// Names handed out as `&'static str`, each leaked once however often it is configured.
static NAMES_SEEN: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
/// Lists of names handed out as `&'static [&'static str]`, likewise.
static LISTS_SEEN: Mutex<BTreeSet<&'static [&'static str]>> = Mutex::new(BTreeSet::new());

fn intern(name: &str) -> &'static str {
    let mut seen = NAMES_SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = seen.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    seen.insert(leaked);
    leaked
}

pub(super) fn intern_list(names: Vec<&'static str>) -> &'static [&'static str] {
    let mut seen = LISTS_SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = seen.get(names.as_slice()) {
        return known;
    }
    let leaked: &'static [&'static str] = Box::leak(names.into_boxed_slice());
    seen.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests;
