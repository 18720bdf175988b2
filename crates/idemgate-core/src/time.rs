//! Time as a value. The core's decisions never read a clock: the edge reads one
//! (`idemgate-clock`) and passes `now` in, so every decision on time is a pure function.
//!
//! What operators read and type is here too, as pure functions of (time, now): RFC 3339
//! UTC ([`UnixTime::rfc3339`]), a relative form for tables ([`relative`]), and the
//! `--since`/`--until` forms ([`TimeSpec`]). The civil-date arithmetic is the proleptic
//! Gregorian calendar's (Howard Hinnant's `days_from_civil`), so no date crate is needed.

use std::fmt;

/// Seconds since the Unix epoch, as carried by webhook timestamp headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(pub i64);

impl UnixTime {
    /// The absolute distance between two instants, in seconds.
    #[must_use]
    pub fn abs_diff(self, other: UnixTime) -> u64 {
        self.0.abs_diff(other.0)
    }

    /// The instant in RFC 3339, UTC, to the second: `2026-12-01T17:43:58Z`.
    #[must_use]
    pub fn rfc3339(self) -> Rfc3339 {
        Rfc3339(self)
    }

    /// The instant an RFC 3339 date-time names (`2016-07-11T10:10:33-07:00`, any offset,
    /// fractions of a second dropped), as a sender's timestamp header writes it; `None` for
    /// anything else, a bare date included.
    #[must_use]
    pub fn parse_rfc3339(text: &str) -> Option<UnixTime> {
        if text.len() <= 10 {
            return None;
        }
        parse_instant(text)
    }
}

/// [`UnixTime`] displayed in RFC 3339, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rfc3339(UnixTime);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, secs) = (self.0.0.div_euclid(86_400), self.0.0.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        let (hour, minute, second) = (secs / 3600, secs % 3600 / 60, secs % 60);
        write!(f, "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
    }
}

/// How far `at` is from `now`, for a table: `now`, `42 s ago`, `3 min ago`, `5 h ago`,
/// `2 d ago`, or `in 5 min` for the future. Each unit is rounded down.
#[must_use]
pub fn relative(at: UnixTime, now: UnixTime) -> String {
    let distance = now.0.abs_diff(at.0);
    let amount = match distance {
        0 => return "now".to_owned(),
        1..60 => format!("{distance} s"),
        60..3600 => format!("{} min", distance / 60),
        3600..172_800 => format!("{} h", distance / 3600),
        _ => format!("{} d", distance / 86_400),
    };
    if at < now { format!("{amount} ago") } else { format!("in {amount}") }
}

/// A point in time as an operator types it: RFC 3339 (`2026-12-01T22:54:01Z`, any
/// offset, fractions of a second ignored), a date (`2026-12-01`, midnight UTC), or a
/// duration back from now (`30m`, `1h`, `2d`, `1h30m`; units `s`, `m`, `h`, `d`, `w`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSpec {
    /// This instant.
    At(UnixTime),
    /// This many seconds before now.
    Ago(u64),
}

/// Text that is none of the [`TimeSpec`] forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected an RFC 3339 time (2026-12-01T22:54:01Z), a date (2026-12-01) or a duration back from now (30m, 1h, 2d)"
)]
pub struct BadTimeSpec;

impl std::str::FromStr for TimeSpec {
    type Err = BadTimeSpec;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        parse_instant(text).map(TimeSpec::At).or_else(|| parse_ago(text).map(TimeSpec::Ago)).ok_or(BadTimeSpec)
    }
}

impl TimeSpec {
    /// The instant this names, taking durations back from `now`.
    #[must_use]
    pub fn resolve(self, now: UnixTime) -> UnixTime {
        match self {
            Self::At(at) => at,
            Self::Ago(secs) => UnixTime(now.0.saturating_sub_unsigned(secs)),
        }
    }
}

/// `1h30m` as seconds: one or more `<digits><unit>`.
fn parse_ago(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let amount: u64 = rest[..digits].parse().ok()?;
        let unit = rest[digits..].chars().next()?;
        let scale = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return None,
        };
        total = total.checked_add(amount.checked_mul(scale)?)?;
        rest = &rest[digits + 1..];
    }
    Some(total)
}

/// `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
fn parse_instant(text: &str) -> Option<UnixTime> {
    let bytes = text.as_bytes();
    let date = text.get(..10)?;
    if bytes.get(4) != Some(&b'-') || bytes.get(7) != Some(&b'-') {
        return None;
    }
    let (year, month, day) = (number(&date[..4])?, number(&date[5..7])?, number(&date[8..10])?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let midnight = days_from_civil(year, month, day) * 86_400;
    if text.len() == 10 {
        return Some(UnixTime(midnight));
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes.get(13) != Some(&b':') || bytes.get(16) != Some(&b':') {
        return None;
    }
    let (hour, minute, second) = (number(text.get(11..13)?)?, number(text.get(14..16)?)?, number(text.get(17..19)?)?);
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut zone = &text[19..];
    if let Some(fraction) = zone.strip_prefix('.') {
        let digits = fraction.find(|c: char| !c.is_ascii_digit()).unwrap_or(fraction.len());
        if digits == 0 {
            return None;
        }
        zone = &fraction[digits..];
    }
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = match zone.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if zone.len() != 6 || zone.as_bytes()[3] != b':' {
                return None;
            }
            let (hours, minutes) = (number(&zone[1..3])?, number(&zone[4..6])?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            sign * (hours * 3600 + minutes * 60)
        }
    };
    Some(UnixTime(midnight + hour * 3600 + minute * 60 + second - offset))
}

/// A field of ASCII digits only (no sign, no spaces).
fn number(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian date `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> TimeSpec {
        text.parse().unwrap_or_else(|err| panic!("{text}: {err}"))
    }

    #[test]
    fn known_instants_format_in_utc() {
        for (secs, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_709_164_800, "2024-02-29T00:00:00Z"),
            (1_796_147_038, "2026-12-01T17:43:58Z"),
            (1_798_761_600, "2027-01-01T00:00:00Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
        ] {
            assert_eq!(UnixTime(secs).rfc3339().to_string(), text);
            assert_eq!(at(text), TimeSpec::At(UnixTime(secs)), "{text} parses back");
        }
    }

    #[test]
    fn every_day_over_centuries_round_trips() {
        let mut previous = None;
        for days in -800_000..800_000 {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m), "{y}-{m}-{d}");
            if let Some((py, pm, pd)) = previous {
                assert!((y, m, d) > (py, pm, pd), "dates follow each other");
            }
            previous = Some((y, m, d));
        }
    }

    #[test]
    fn dates_offsets_and_fractions_parse() {
        assert_eq!(at("2026-12-01"), TimeSpec::At(UnixTime(1_796_083_200)));
        assert_eq!(at("2026-12-01T17:43:58.999Z"), TimeSpec::At(UnixTime(1_796_147_038)));
        assert_eq!(at("2026-12-01T18:43:58+01:00"), TimeSpec::At(UnixTime(1_796_147_038)));
        assert_eq!(at("2026-12-01t12:13:58-05:30"), TimeSpec::At(UnixTime(1_796_147_038)));
        assert_eq!(at("2026-12-01 17:43:58z"), TimeSpec::At(UnixTime(1_796_147_038)));
    }

    #[test]
    fn sender_timestamps_parse_as_date_times_only() {
        // Box's documented BOX-DELIVERY-TIMESTAMP example.
        assert_eq!(UnixTime::parse_rfc3339("2016-07-11T10:10:33-07:00"), Some(UnixTime(1_468_257_033)));
        assert_eq!(UnixTime::parse_rfc3339("2026-12-01T17:43:58Z"), Some(UnixTime(1_796_147_038)));
        for bad in ["2026-12-01", "30m", "", "2026-12-01T17:43:58", " 2026-12-01T17:43:58Z"] {
            assert_eq!(UnixTime::parse_rfc3339(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn durations_go_back_from_now() {
        assert_eq!(at("30m"), TimeSpec::Ago(1800));
        assert_eq!(at("1h"), TimeSpec::Ago(3600));
        assert_eq!(at("2d"), TimeSpec::Ago(172_800));
        assert_eq!(at("1h30m"), TimeSpec::Ago(5400));
        assert_eq!(at("1w"), TimeSpec::Ago(604_800));
        assert_eq!(at("1h").resolve(UnixTime(10_000)), UnixTime(6400));
        assert_eq!(at("2026-12-01").resolve(UnixTime(10_000)), UnixTime(1_796_083_200));
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "1796147038",
            "yesterday",
            "1x",
            "h",
            "1h30",
            "2026-13-01",
            "2026-02-30",
            "2025-02-29",
            "2026-12-01T24:00:00Z",
            "2026-12-01T17:43:58",
            "2026-12-01T17:43Z",
            "2026-12-01T17:43:58+0100",
            "2026-12-01T17:43:58.Z",
            "2026-12-1",
            "+2026-12-01",
            "99999999999999999999s",
        ] {
            assert_eq!(bad.parse::<TimeSpec>(), Err(BadTimeSpec), "{bad:?}");
        }
    }

    #[test]
    fn relative_forms_round_down_either_way() {
        let now = UnixTime(1_000_000);
        let ago = |secs| relative(UnixTime(now.0 - secs), now);
        assert_eq!(ago(0), "now");
        assert_eq!(ago(42), "42 s ago");
        assert_eq!(ago(60), "1 min ago");
        assert_eq!(ago(199), "3 min ago");
        assert_eq!(ago(3600 * 5 + 59), "5 h ago");
        assert_eq!(ago(3600 * 47), "47 h ago");
        assert_eq!(ago(86_400 * 2), "2 d ago");
        assert_eq!(ago(-300), "in 5 min");
        assert_eq!(ago(-1), "in 1 s");
    }
}
