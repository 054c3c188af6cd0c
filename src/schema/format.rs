//! The `format`s the response path's validator checks: the ones backends constrain when they
//! compile a schema (llama.cpp's converter writes grammars for date, time, date-time and uuid;
//! OpenAI strict and the vLLM backends add email, ipv4, ipv6 and uri), so a model can break them
//! only where the backend was not told. Each follows its RFC's syntax (RFC 3339, RFC 4122,
//! RFC 5321's common form, RFC 2673/4291, RFC 3986's scheme and characters); an unknown format
//! is never a violation.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Whether `s` is a valid `format`; `None`: not a format this module checks.
pub fn check(format: &str, s: &str) -> Option<bool> {
    Some(match format {
        "date" => date(s),
        "time" => time(s),
        "date-time" => date_time(s),
        "uuid" => uuid(s),
        "email" => email(s),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "uri" => uri(s),
        _ => return None,
    })
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// RFC 3339 full-date: YYYY-MM-DD, a day the month has.
fn date(s: &str) -> bool {
    let mut it = s.split('-');
    let (Some(y), Some(m), Some(d), None) = (it.next(), it.next(), it.next(), it.next()) else { return false };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else { return false };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339 full-time: HH:MM:SS, optional fraction, then `Z` or an offset (a leap second allowed).
fn time(s: &str) -> bool {
    let (clock, offset) = match s.char_indices().find(|(i, c)| *i >= 8 && matches!(c, 'Z' | 'z' | '+' | '-')) {
        Some((i, _)) => s.split_at(i),
        None => return false,
    };
    let clock = match clock.split_once('.') {
        Some((c, frac)) if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) => c,
        Some(_) => return false,
        None => clock,
    };
    let mut it = clock.split(':');
    let (Some(h), Some(m), Some(sec), None) = (it.next(), it.next(), it.next(), it.next()) else { return false };
    let (Some(h), Some(m), Some(sec)) = (digits(h, 2), digits(m, 2), digits(sec, 2)) else { return false };
    if h > 23 || m > 59 || sec > 60 {
        return false;
    }
    if offset.eq_ignore_ascii_case("z") {
        return true;
    }
    let Some((oh, om)) = offset.get(1..).and_then(|o| o.split_once(':')) else { return false };
    matches!((digits(oh, 2), digits(om, 2)), (Some(oh), Some(om)) if oh <= 23 && om <= 59)
}

fn date_time(s: &str) -> bool {
    match s.find(['T', 't']) {
        Some(i) => date(s.get(..i).unwrap_or("")) && time(s.get(i + 1..).unwrap_or("")),
        None => false,
    }
}

/// RFC 4122's textual form: 8-4-4-4-12 hex digits.
fn uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]) && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// local@domain: a dot-atom local part (or a quoted one) and a host name or an address literal.
fn email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else { return false };
    let atom = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~-".contains(&b));
    let local_ok = (local.len() >= 2 && local.starts_with('"') && local.ends_with('"')) || (local.len() <= 64 && local.split('.').all(atom));
    let domain_ok = match domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        Some(lit) => lit.parse::<Ipv4Addr>().is_ok() || lit.strip_prefix("IPv6:").is_some_and(|a| a.parse::<Ipv6Addr>().is_ok()),
        None => hostname(domain),
    };
    local_ok && domain_ok
}

fn hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.')
            .all(|l| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-') && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

/// An absolute URI: a scheme, `:`, then only characters RFC 3986 allows (percent escapes whole).
fn uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else { return false };
    let scheme_ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
    let b = rest.as_bytes();
    let chars_ok = b.iter().enumerate().all(|(i, c)| {
        c.is_ascii_alphanumeric()
            || b"-._~:/?#[]@!$&'()*+,;=".contains(c)
            || (*c == b'%' && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    scheme_ok && chars_ok
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn formats_follow_their_rfcs() {
        let good = [
            ("date", "2024-02-29"),
            ("date", "2023-12-31"),
            ("time", "23:59:60Z"),
            ("time", "08:30:00.125+05:30"),
            ("date-time", "2026-11-25T01:02:03Z"),
            ("date-time", "2026-11-25t01:02:03.5-08:00"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
            ("email", "a.b+c@example.co.uk"),
            ("email", "x@[127.0.0.1]"),
            ("ipv4", "192.168.0.1"),
            ("ipv6", "::1"),
            ("ipv6", "2001:db8::8a2e:370:7334"),
            ("uri", "https://example.com/a%20b?q=1#f"),
            ("uri", "urn:isbn:0451450523"),
        ];
        for (f, s) in good {
            assert_eq!(check(f, s), Some(true), "{f} {s}");
        }
        let bad = [
            ("date", "2023-02-29"),
            ("date", "2024-13-01"),
            ("date", "24-01-01"),
            ("time", "24:00:00Z"),
            ("time", "12:00:00"),
            ("date-time", "2026-11-25 01:02:03Z"),
            ("date-time", "2026-11-25"),
            ("uuid", "123e4567e89b12d3a456426614174000"),
            ("uuid", "123e4567-e89b-12d3-a456-42661417400g"),
            ("email", "no-at-sign"),
            ("email", "a@-bad-.com"),
            ("email", "two words@example.com"),
            ("ipv4", "256.1.1.1"),
            ("ipv4", "1.2.3"),
            ("ipv6", "12345::1"),
            ("uri", "/relative/path"),
            ("uri", "http://exa mple.com"),
            ("uri", "http://example.com/%zz"),
        ];
        for (f, s) in bad {
            assert_eq!(check(f, s), Some(false), "{f} {s}");
        }
        assert_eq!(check("hostname-ish", "x"), None, "unknown formats are not judged");
    }
}
