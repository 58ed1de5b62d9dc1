//! Expiry arithmetic shared by SET, GETEX, SETEX, the EXPIRE family and TTL.
//!
//! Times are Unix milliseconds from the store's clock, so a test's manual clock moves
//! every TTL. Redis computes in signed 64-bit milliseconds and rejects what overflows;
//! we keep that (`i64`) and convert to [`Expiry::AtMs`] only for a time in the future.

use proto_resp::{args::parse_i64, error};
use store::{Expiry, Item};

use crate::Shared;

/// The store's clock.
pub(super) fn now_ms(shared: &Shared) -> u64 {
    shared.core.store.config().clock.now_ms()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Seconds,
    Milliseconds,
}

/// Whether a time argument counts from now (EX, EXPIRE) or from the epoch (EXAT, EXPIREAT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Base {
    Now,
    Epoch,
}

/// A time argument of SET, GETEX, SETEX and PSETEX, not yet validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TimeArg<'a> {
    pub text: &'a [u8],
    pub unit: Unit,
    pub base: Base,
}

/// Redis's `getExpireMillisecondsOrReply`: a positive count (not an integer → the integer
/// error; zero, negative or overflowing → `invalid expire time in '<command>'`). Returns the
/// absolute time in milliseconds.
pub(super) fn deadline_ms(arg: TimeArg<'_>, now_ms: u64, command: &str) -> Result<i64, String> {
    let n = parse_i64(arg.text).map_err(|e| e.message().to_owned())?;
    let invalid = || error::invalid_expire_time(command);
    if n <= 0 {
        return Err(invalid());
    }
    let ms = match arg.unit {
        Unit::Seconds => n.checked_mul(1000).ok_or_else(invalid)?,
        Unit::Milliseconds => n,
    };
    match arg.base {
        Base::Now => ms.checked_add(now_i64(now_ms)).ok_or_else(invalid),
        Base::Epoch => Ok(ms),
    }
}

/// The EXPIRE family's time: any integer (a past time deletes the key), rejected only
/// when the unit conversion or the addition overflows.
pub(super) fn expire_at_ms(
    text: &[u8],
    unit: Unit,
    base: Base,
    now_ms: u64,
    command: &str,
) -> Result<i64, String> {
    let n = parse_i64(text).map_err(|e| e.message().to_owned())?;
    let invalid = || error::invalid_expire_time(command);
    let ms = match unit {
        Unit::Seconds => n.checked_mul(1000).ok_or_else(invalid)?,
        Unit::Milliseconds => n,
    };
    match base {
        Base::Now => ms.checked_add(now_i64(now_ms)).ok_or_else(invalid),
        Base::Epoch => Ok(ms),
    }
}

/// The store's expiry for an absolute time; `None` if that time has come (the key must go).
pub(super) fn expiry_at(at_ms: i64, now_ms: u64) -> Option<Expiry> {
    let at = u64::try_from(at_ms).ok()?;
    (at > now_ms).then_some(Expiry::AtMs(at))
}

/// An item's expiry as Redis's signed milliseconds, `None` without one.
pub(super) fn expiry_ms(item: &Item<'_>) -> Option<i64> {
    match item.expiry() {
        Expiry::Never => None,
        Expiry::AtMs(at) => Some(i64::try_from(at).unwrap_or(i64::MAX)),
    }
}

/// What TTL, PTTL, EXPIRETIME and PEXPIRETIME report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Report {
    Remaining,
    Absolute,
}

/// Redis's `ttlGenericCommand`: -2 missing, -1 no expiry, else the time, with seconds
/// rounded to nearest.
pub(super) fn ttl_reply(item: Option<&Item<'_>>, now_ms: u64, unit: Unit, report: Report) -> i64 {
    let Some(item) = item else {
        return -2;
    };
    let Some(at) = expiry_ms(item) else {
        return -1;
    };
    let ms = match report {
        Report::Remaining => at.saturating_sub(now_i64(now_ms)).max(0),
        Report::Absolute => at,
    };
    match unit {
        Unit::Milliseconds => ms,
        Unit::Seconds => ms.saturating_add(500) / 1000,
    }
}

fn now_i64(now_ms: u64) -> i64 {
    i64::try_from(now_ms).unwrap_or(i64::MAX)
}

/// EXPIRE's NX / XX / GT / LT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Condition {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Condition {
    /// Redis's `parseExtendedExpireArgumentsOrReply`.
    pub fn parse<'a>(options: impl Iterator<Item = &'a [u8]>) -> Result<Condition, String> {
        let mut c = Condition::default();
        for option in options {
            match option.to_ascii_uppercase().as_slice() {
                b"NX" => c.nx = true,
                b"XX" => c.xx = true,
                b"GT" => c.gt = true,
                b"LT" => c.lt = true,
                _ => {
                    let shown = String::from_utf8_lossy(option);
                    return Err(format!("ERR Unsupported option {shown}"));
                }
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(
                "ERR NX and XX, GT or LT options at the same time are not compatible".into()
            );
        }
        if c.gt && c.lt {
            return Err("ERR GT and LT options at the same time are not compatible".into());
        }
        Ok(c)
    }

    /// Whether a new expiry `at_ms` may replace `current` (`None`: no expiry, which GT
    /// and LT treat as infinite).
    pub fn allows(self, current: Option<i64>, at_ms: i64) -> bool {
        if (self.nx && current.is_some()) || (self.xx && current.is_none()) {
            return false;
        }
        if self.gt && current.is_none_or(|c| at_ms <= c) {
            return false;
        }
        !(self.lt && current.is_some_and(|c| at_ms >= c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_validation() {
        let arg = |text: &'static str, unit, base| TimeArg { text: text.as_bytes(), unit, base };
        let now = 1_000;
        assert_eq!(deadline_ms(arg("5", Unit::Seconds, Base::Now), now, "set"), Ok(6_000));
        assert_eq!(deadline_ms(arg("5", Unit::Milliseconds, Base::Epoch), now, "set"), Ok(5));
        let invalid = Err("ERR invalid expire time in 'set' command".to_owned());
        for text in ["0", "-1", "9223372036854775807"] {
            assert_eq!(deadline_ms(arg(text, Unit::Seconds, Base::Now), now, "set"), invalid);
        }
        assert_eq!(
            deadline_ms(arg("9223372036854775807", Unit::Milliseconds, Base::Now), now, "set"),
            invalid
        );
        assert_eq!(
            deadline_ms(arg("x", Unit::Seconds, Base::Now), now, "set"),
            Err("ERR value is not an integer or out of range".to_owned())
        );
        assert_eq!(expire_at_ms(b"-5", Unit::Seconds, Base::Now, now, "expire"), Ok(-4_000));
        assert_eq!(expiry_at(-4_000, now), None);
        assert_eq!(expiry_at(1_000, now), None);
        assert_eq!(expiry_at(1_001, now), Some(Expiry::AtMs(1_001)));
    }

    #[test]
    fn conditions() {
        let parse = |opts: &[&str]| Condition::parse(opts.iter().map(|o| o.as_bytes()));
        assert!(parse(&["nx", "XX"]).unwrap_err().starts_with("ERR NX and XX, GT or LT"));
        assert!(parse(&["gt", "lt"]).unwrap_err().starts_with("ERR GT and LT"));
        assert_eq!(parse(&["foo"]).unwrap_err(), "ERR Unsupported option foo");
        let gt = parse(&["GT"]).unwrap();
        assert!(!gt.allows(None, 10) && gt.allows(Some(5), 10) && !gt.allows(Some(10), 10));
        let lt = parse(&["LT"]).unwrap();
        assert!(lt.allows(None, 10) && lt.allows(Some(15), 10) && !lt.allows(Some(10), 10));
        let nx = parse(&["NX"]).unwrap();
        assert!(nx.allows(None, 1) && !nx.allows(Some(1), 1));
        let xx = parse(&["XX", "GT"]).unwrap();
        assert!(!xx.allows(None, 1) && xx.allows(Some(1), 2));
    }
}
