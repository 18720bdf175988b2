use super::*;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap_or_else(|_| unreachable!())
}

fn net(text: &str) -> IpNet {
    text.parse().unwrap_or_else(|_| unreachable!())
}

#[test]
fn public_addresses_are_allowed() {
    for text in [
        "1.1.1.1",
        "8.8.8.8",
        "93.184.215.14",
        "100.63.255.255",
        "100.128.0.0",
        "172.32.0.1",
        "2606:4700::1111",
        "2a00:1450:4001::1",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
    ] {
        assert!(is_allowed(ip(text), &[]), "{text}");
    }
}

#[test]
fn every_non_public_range_is_refused() {
    for text in [
        "127.0.0.1",
        "127.255.255.254",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254", // cloud metadata
        "100.100.100.200", // Alibaba metadata, CGNAT
        "100.64.0.1",
        "0.0.0.0",
        "0.1.2.3",
        "255.255.255.255",
        "240.0.0.1",
        "224.0.0.251",
        "239.255.255.250",
        "192.0.0.8",
        "192.0.2.1",
        "198.51.100.7",
        "203.0.113.9",
        "198.18.0.1",
        "198.19.255.255",
        "192.88.99.1",
        "::",
        "::1",
        "::127.0.0.1",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "febf::1",
        "fec0::1",
        "ff02::1",
        "2001:db8::1",
        "2001::1", // Teredo
        "2002:7f00:1::1",
        "3fff::1",
        "100::1",
        "64:ff9b:1::1",
        "5f00::1",
    ] {
        assert!(!is_allowed(ip(text), &[]), "{text}");
    }
}

#[test]
fn ipv4_mapped_and_nat64_addresses_are_judged_as_their_ipv4_address() {
    assert_eq!(refusal(ip("::ffff:127.0.0.1"), &[]), Some("loopback"));
    assert_eq!(refusal(ip("::ffff:169.254.169.254"), &[]), Some("link-local"));
    assert_eq!(refusal(ip("::ffff:10.0.0.1"), &[]), Some("private"));
    assert!(refusal(ip("64:ff9b::7f00:1"), &[]).is_some());
    assert_eq!(refusal(ip("64:ff9b::808:808"), &[]), None);
}

#[test]
fn allow_networks_let_the_operator_open_a_range() {
    let allow = [net("127.0.0.0/8"), net("fd00::/8")];
    assert!(is_allowed(ip("127.0.0.1"), &allow));
    assert!(is_allowed(ip("::ffff:127.0.0.1"), &allow));
    assert!(is_allowed(ip("fd00::5"), &allow));
    assert!(!is_allowed(ip("10.0.0.1"), &allow));
    assert!(!is_allowed(ip("::1"), &allow));
}

fn policy() -> UrlPolicy {
    UrlPolicy::default()
}

#[test]
fn a_url_needs_https_a_host_and_no_user_info() {
    assert_eq!(policy().check_url("https://example.com/hook?x=1"), Ok(UrlHost::Name("example.com".into())));
    assert_eq!(policy().check_url("https://Example.COM.:8443/"), Ok(UrlHost::Name("example.com".into())));
    assert_eq!(policy().check_url("https://8.8.8.8/hook"), Ok(UrlHost::Address(ip("8.8.8.8"))));
    assert_eq!(policy().check_url("https://[2606:4700::1111]/"), Ok(UrlHost::Address(ip("2606:4700::1111"))));
    assert_eq!(policy().check_url("http://example.com/"), Err(UrlError::Scheme { allow_http: false }));
    let http = UrlPolicy { allow_http: true, ..UrlPolicy::default() };
    assert!(http.check_url("http://example.com/").is_ok());
    assert_eq!(http.check_url("ftp://example.com/"), Err(UrlError::Scheme { allow_http: true }));
    assert_eq!(policy().check_url("https://user:pass@example.com/"), Err(UrlError::UserInfo));
    assert_eq!(policy().check_url("https://token@example.com/"), Err(UrlError::UserInfo));
    assert_eq!(policy().check_url("/relative"), Err(UrlError::Unparsable));
    assert_eq!(policy().check_url("example.com"), Err(UrlError::Unparsable));
    assert_eq!(policy().check_url(""), Err(UrlError::Length));
    assert_eq!(policy().check_url(&format!("https://example.com/{}", "a".repeat(MAX_URL_LEN))), Err(UrlError::Length));
    assert_eq!(policy().check_url("https://exa mple.com/"), Err(UrlError::Unparsable));
    assert_eq!(policy().check_url("https://exa%41mple.com/"), Err(UrlError::Unparsable));
    for url in ["https://a..b.com/", "https://exa!mple.com/", "https://[::1/", "https://[fe80::1%25eth0]/"] {
        assert!(matches!(policy().check_url(url), Err(UrlError::Host | UrlError::Unparsable)), "{url}");
    }
    assert_eq!(policy().check_url("https://a..b.com/"), Err(UrlError::Host));
}

#[test]
fn an_ip_literal_is_checked_at_once_and_numeric_names_are_refused() {
    let refused = |url: &str| match policy().check_url(url) {
        Err(UrlError::AddressNotAllowed { range, .. }) => Some(range),
        _ => None,
    };
    assert_eq!(refused("https://127.0.0.1/"), Some("loopback"));
    assert_eq!(refused("https://169.254.169.254/latest/meta-data"), Some("link-local"));
    assert_eq!(refused("https://[::1]:8443/"), Some("loopback"));
    assert_eq!(refused("https://[::ffff:7f00:1]/"), Some("loopback"));
    for url in ["https://2130706433/", "https://127.1/", "https://0x7f.1/", "https://0x7f000001/", "https://a.b.123/"] {
        assert_eq!(policy().check_url(url), Err(UrlError::NumericHost), "{url}");
    }
    let allowed = UrlPolicy { allow_http: true, allow_networks: vec![net("127.0.0.0/8")] };
    assert_eq!(allowed.check_url("http://127.0.0.1:9000/hook"), Ok(UrlHost::Address(ip("127.0.0.1"))));
}

#[test]
fn resolved_addresses_are_refused_if_any_one_is() {
    let error = policy().check_addresses([ip("8.8.8.8"), ip("10.0.0.1")]);
    assert_eq!(error, Err(UrlError::AddressNotAllowed { address: ip("10.0.0.1"), range: "private" }));
    assert_eq!(policy().check_addresses([ip("8.8.8.8"), ip("1.1.1.1")]), Ok(()));
    assert_eq!(error.err().map(|e| e.code()), Some("address_not_allowed"));
}
