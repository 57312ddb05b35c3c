//! Leader time as text: RFC 3339 in UTC with second precision, as Go's `time.Time` marshals
//! it (Boskos) and as Axebow's events show it. Pure, so every replica writes the same text.

/// `ms` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_ms(ms: u64) -> String {
    format!("{}Z", date_time(ms / 1000))
}

/// `seconds` since the Unix epoch as `YYYY-MM-DDTHH:MM:SS`.
fn date_time(seconds: u64) -> String {
    let (year, month, day) = civil_from_days(seconds / 86_400);
    let in_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

/// `µs` since the Unix epoch as Python's `datetime.isoformat()` writes an aware UTC time, the
/// way Krake puts times on the wire: `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`.
pub fn isoformat_us(us: u64) -> String {
    format!("{}.{:06}+00:00", date_time(us / 1_000_000), us % 1_000_000)
}

/// Reads an RFC 3339 time (`Z` or a `±hh:mm` offset, up to six fractional digits) as µs since
/// the Unix epoch; `None` for anything else or a time before the epoch.
pub fn parse_rfc3339_us(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let number = |from: usize, len: usize| -> Option<u64> {
        let part = text.get(from..from + len)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut micros = 0u64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let kept = &fraction[..digits.min(6)];
        micros = kept.parse::<u64>().ok()? * 10u64.pow(6 - kept.len() as u32);
        rest = &fraction[digits..];
    }
    let offset_seconds: i64 = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let days = days_from_civil(year, month, day)?;
    let local = days * 86_400 + (hour * 3600 + minute * 60 + second) as i64;
    let utc = u64::try_from(local - offset_seconds).ok()?;
    utc.checked_mul(1_000_000)?.checked_add(micros)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<i64> {
    let year = i64::try_from(year).ok()? - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = month as i64;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`,
/// for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        let table = [
            (0, "1970-01-01T00:00:00Z"),
            (999, "1970-01-01T00:00:00Z"),
            (951_782_400_000, "2000-02-29T00:00:00Z"),
            (1_686_840_625_000, "2023-06-15T14:50:25Z"),
            (4_102_444_799_000, "2099-12-31T23:59:59Z"),
        ];
        for (ms, text) in table {
            assert_eq!(rfc3339_ms(ms), text, "{ms}");
        }
        // The end of time does not panic.
        assert!(!rfc3339_ms(u64::MAX).is_empty());
    }

    #[test]
    fn krake_times_round_trip() {
        let table = [
            (0, "1970-01-01T00:00:00.000000+00:00"),
            (1_796_175_136_528_738, "2026-12-02T01:32:16.528738+00:00"),
            (951_782_400_000_001, "2000-02-29T00:00:00.000001+00:00"),
        ];
        for (us, text) in table {
            assert_eq!(isoformat_us(us), text, "{us}");
            assert_eq!(parse_rfc3339_us(text), Some(us), "{text}");
        }
        let same = [
            ("2026-12-02T01:32:16.528738Z", Some(1_796_175_136_528_738)),
            ("2026-12-02T02:32:16.528738+01:00", Some(1_796_175_136_528_738)),
            ("2026-12-02T01:32:16.5Z", Some(1_796_175_136_500_000)),
            ("2026-12-02T01:32:16Z", Some(1_796_175_136_000_000)),
            ("2026-12-02T01:32:16", None),
            ("2026-13-02T01:32:16Z", None),
            ("not a time", None),
            ("1969-12-31T23:59:59Z", None),
        ];
        for (text, us) in same {
            assert_eq!(parse_rfc3339_us(text), us, "{text}");
        }
    }
}
