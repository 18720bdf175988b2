//! Endpoints are untrusted (`docs/design/outbound-api.md` §3.8): a customer's URL must not
//! make idemgate reach its own machine, its network or a cloud metadata service. This is
//! the rule, as pure functions; the API applies it to an endpoint's URL and to every
//! address its host resolves to, and the worker to the address each new connection
//! actually reached (so a name that resolves elsewhere later, or an IP literal, takes the
//! same check).
//!
//! Refused unless an operator's `allow_networks` covers the address: loopback, private
//! (RFC 1918, `fc00::/7`), link-local (`169.254.0.0/16` with the metadata address
//! 169.254.169.254, `fe80::/10`), shared address space `100.64.0.0/10` (CGNAT, Alibaba's
//! metadata 100.100.100.200), multicast, unspecified and "this network", broadcast and the
//! reserved `240.0.0.0/4`, documentation and benchmarking ranges, and the IPv6 transition
//! and special-purpose ranges of the IANA registry. An IPv4-mapped IPv6 address
//! (`::ffff:127.0.0.1`) is judged as its IPv4 address, and a NAT64 one (`64:ff9b::/96`) by
//! the IPv4 address it embeds.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// IPv4 ranges that are not the public internet: (network, prefix length, what it is).
const V4_REFUSED: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "unspecified (this network)"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space (CGNAT)"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved or broadcast"),
];

/// IPv6 ranges that are not the public internet, first match wins. NAT64's
/// `64:ff9b::/96` is not here: it is judged by the IPv4 address it embeds.
const V6_REFUSED: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::UNSPECIFIED, 128, "unspecified"),
    (Ipv6Addr::LOCALHOST, 128, "loopback"),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96, "IPv4-compatible (deprecated)"),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, "IPv4-mapped"),
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, "NAT64 local use"),
    (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, "discard only"),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "documentation"),
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "IETF protocol assignments (Teredo, benchmarking)"),
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4"),
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "documentation"),
    (Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16, "segment routing"),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, "unique local (private)"),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local (deprecated)"),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
];

/// The well-known NAT64 prefix `64:ff9b::/96`.
const NAT64: Ipv6Addr = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0);

fn in_v4(address: Ipv4Addr, network: Ipv4Addr, prefix: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    u32::from(address) & mask == u32::from(network) & mask
}

fn in_v6(address: Ipv6Addr, network: Ipv6Addr, prefix: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    u128::from(address) & mask == u128::from(network) & mask
}

/// What `address` is, if it is not a public internet address, ignoring `allow_networks`.
#[must_use]
pub fn special_range(address: IpAddr) -> Option<&'static str> {
    match address.to_canonical() {
        IpAddr::V4(v4) => V4_REFUSED.iter().find(|(net, prefix, _)| in_v4(v4, *net, *prefix)).map(|(.., what)| *what),
        IpAddr::V6(v6) if in_v6(v6, NAT64, 96) => {
            let [.., a, b, c, d] = v6.octets();
            special_range(IpAddr::V4(Ipv4Addr::new(a, b, c, d))).map(|_| "NAT64 of a refused IPv4 address")
        }
        IpAddr::V6(v6) => V6_REFUSED.iter().find(|(net, prefix, _)| in_v6(v6, *net, *prefix)).map(|(.., what)| *what),
    }
}

/// Whether an endpoint may reach `address`: a public internet address, or one inside a
/// network the operator allowed (`[api] allow_networks`, e.g. `127.0.0.0/8` for tests).
#[must_use]
pub fn is_allowed(address: IpAddr, allow_networks: &[IpNet]) -> bool {
    refusal(address, allow_networks).is_none()
}

/// Why `address` is refused (the range it is in), or `None` when it is allowed.
#[must_use]
pub fn refusal(address: IpAddr, allow_networks: &[IpNet]) -> Option<&'static str> {
    let canonical = address.to_canonical();
    if allow_networks.iter().any(|net| net.contains(&canonical) || net.contains(&address)) {
        return None;
    }
    special_range(address)
}

/// An endpoint URL that cannot be used. Never carries the URL, which may hold a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Empty or longer than [`MAX_URL_LEN`].
    #[error("URL must be 1 to 65536 characters")]
    Length,
    /// Not an absolute URL.
    #[error("Invalid URL")]
    Unparsable,
    /// Not `https` (or `http` where the operator allows it).
    #[error("URL scheme must be https{}", if *.allow_http { " or http" } else { "" })]
    Scheme {
        /// Whether `http` would have been accepted.
        allow_http: bool,
    },
    /// Credentials in the URL (`https://user:pass@host`): use a header instead.
    #[error("URL must not contain a user name or password")]
    UserInfo,
    /// No host, or one that is neither a name nor an IP address.
    #[error("URL must have a valid host")]
    Host,
    /// A host written as a number other than a dotted-quad IPv4 address (`2130706433`,
    /// `0x7f.1`), which resolvers read as an address.
    #[error("URL host must be a name or a dotted-quad IPv4 or bracketed IPv6 address")]
    NumericHost,
    /// The host is, or resolves to, an address endpoints may not reach.
    #[error("URL host resolves to an address that is not allowed ({range})")]
    AddressNotAllowed {
        /// The refused address (not a secret: it is the resolver's or the URL's).
        address: IpAddr,
        /// The range it is in.
        range: &'static str,
    },
}

impl UrlError {
    /// A short stable code, usable as a metric label.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::Length => "length",
            Self::Unparsable => "url",
            Self::Scheme { .. } => "url_scheme",
            Self::UserInfo => "url_userinfo",
            Self::Host | Self::NumericHost => "url_host",
            Self::AddressNotAllowed { .. } => "address_not_allowed",
        }
    }
}

/// The longest endpoint URL (Svix's `EndpointIn.url`).
pub const MAX_URL_LEN: usize = 65_536;

/// Where an endpoint's URL points, once its text is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlHost {
    /// An IP literal, already checked.
    Address(IpAddr),
    /// A name the caller must resolve and pass every address of to [`UrlPolicy::check_address`].
    Name(String),
}

/// The operator's rules for endpoint URLs (`[api] allow_http`, `[api] allow_networks`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    /// Whether plain `http` URLs are accepted.
    pub allow_http: bool,
    /// Networks endpoints may reach although they are not public.
    pub allow_networks: Vec<IpNet>,
}

impl UrlPolicy {
    /// Checks one address the host is or resolves to.
    pub fn check_address(&self, address: IpAddr) -> Result<(), UrlError> {
        match refusal(address, &self.allow_networks) {
            None => Ok(()),
            Some(range) => Err(UrlError::AddressNotAllowed { address, range }),
        }
    }

    /// Checks every address a name resolved to: one refused refuses the URL, since the
    /// client may connect to any of them.
    pub fn check_addresses(&self, addresses: impl IntoIterator<Item = IpAddr>) -> Result<(), UrlError> {
        addresses.into_iter().try_for_each(|address| self.check_address(address))
    }

    /// Checks an endpoint URL's text: its length, an `https` (or allowed `http`) scheme, no
    /// user info, a host that is a name or an IP literal, and an IP literal's address.
    /// A name is returned for the caller to resolve.
    pub fn check_url(&self, text: &str) -> Result<UrlHost, UrlError> {
        if text.is_empty() || text.len() > MAX_URL_LEN {
            return Err(UrlError::Length);
        }
        let uri = http::Uri::try_from(text).map_err(|_| UrlError::Unparsable)?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(UrlError::Unparsable);
        };
        let scheme_allowed =
            scheme.eq_ignore_ascii_case("https") || (self.allow_http && scheme.eq_ignore_ascii_case("http"));
        if !scheme_allowed {
            return Err(UrlError::Scheme { allow_http: self.allow_http });
        }
        if authority.as_str().contains('@') {
            return Err(UrlError::UserInfo);
        }
        let host = parse_host(authority.host())?;
        if let UrlHost::Address(address) = host {
            self.check_address(address)?;
        }
        Ok(host)
    }
}

/// A bracketed IPv6 literal, a dotted-quad IPv4 literal or a DNS name. A name whose last
/// label is a number (WHATWG's "ends in a number") is refused: resolvers read `127.1`,
/// `0x7f.1` or `2130706433` as addresses, which would slip past the literal check.
fn parse_host(host: &str) -> Result<UrlHost, UrlError> {
    if let Some(inner) = host.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().map(|v6| UrlHost::Address(IpAddr::V6(v6))).map_err(|_| UrlError::Host);
    }
    if let Ok(v4) = host.parse::<Ipv4Addr>() {
        return Ok(UrlHost::Address(IpAddr::V4(v4)));
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    let valid = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(valid) {
        return Err(UrlError::Host);
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || (last.len() > 1 && last[..2].eq_ignore_ascii_case("0x") && last[2..].bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        return Err(UrlError::NumericHost);
    }
    Ok(UrlHost::Name(name.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests;
