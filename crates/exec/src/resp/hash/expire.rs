//! Per-field expiry (Redis 7.4): HEXPIRE HPEXPIRE HEXPIREAT HPEXPIREAT, HTTL HPTTL
//! HEXPIRETIME HPEXPIRETIME, HPERSIST. Checks and replies follow Redis's `t_hash.c`
//! (type first, then the time, the condition, `FIELDS numfields`); one integer per field.

use proto_resp::{args::parse_i64, error};

use super::super::keyevents::class;
use super::{
    change, encoding::Batch, field_names, read, ttl, ttl::Unit, wrong_type, Ctx,
    NUMFIELDS_NOT_POSITIVE,
};

/// The latest expiry Redis accepts for a field: its `EB_EXPIRE_TIME_MAX >> 2`, in Unix
/// milliseconds (about the year 10889).
const EXPIRE_AT_MAX_MS: i64 = ((1 << 48) - 1) >> 2;
const NUMFIELDS_POSITIVE: &str = "ERR Parameter `numFields` should be greater than 0";

/// What happened to one field of HEXPIRE.
const NO_FIELD: i64 = -2;
const NO_TTL: i64 = -1;
const NOT_MET: i64 = 0;
const SET: i64 = 1;
const DELETED: i64 = 2;

/// Redis's `parseExpireTime`: a non-negative integer, within the field expiry range once
/// converted to absolute milliseconds.
pub(super) fn expire_at_ms(
    text: &[u8],
    unit: Unit,
    base: ttl::Base,
    now_ms: u64,
    command: &str,
) -> Result<u64, String> {
    let n = parse_i64(text).map_err(|e| e.message().to_owned())?;
    if n < 0 {
        return Err("ERR invalid expire time, must be >= 0".into());
    }
    let invalid = || error::invalid_expire_time(command);
    let ms = match unit {
        Unit::Seconds if n > EXPIRE_AT_MAX_MS / 1000 => return Err(invalid()),
        Unit::Seconds => n * 1000,
        Unit::Milliseconds => n,
    };
    let base_ms = match base {
        ttl::Base::Now => i64::try_from(now_ms).unwrap_or(i64::MAX),
        ttl::Base::Epoch => 0,
    };
    if ms > EXPIRE_AT_MAX_MS - base_ms {
        return Err(invalid());
    }
    Ok((ms + base_ms) as u64)
}

/// HEXPIRE's NX / XX / GT / LT (one at most, right after the time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Condition {
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

impl Condition {
    /// Redis's `hashTypeSetExpiry*`: a field without expiry passes NX and LT (its
    /// expiry counts as infinite), one with an expiry passes XX and a strict GT / LT.
    fn allows(self, current: Option<u64>, at_ms: u64) -> bool {
        match (self, current) {
            (Condition::Always, _) => true,
            (Condition::Nx | Condition::Lt, None) => true,
            (Condition::Xx | Condition::Gt, None) | (Condition::Nx, Some(_)) => false,
            (Condition::Xx, Some(_)) => true,
            (Condition::Gt, Some(current)) => at_ms > current,
            (Condition::Lt, Some(current)) => at_ms < current,
        }
    }
}

/// HEXPIRE key time [NX|XX|GT|LT] FIELDS numfields field ...
pub(super) fn hexpire(ctx: &mut Ctx<'_>, unit: Unit, base: ttl::Base) {
    if wrong_type(ctx) {
        return;
    }
    let now_ms = ttl::now_ms(ctx.shared);
    let at_ms = match expire_at_ms(ctx.arg(2), unit, base, now_ms, ctx.spec.name) {
        Ok(at_ms) => at_ms,
        Err(message) => return ctx.error(message),
    };
    let option = ctx.arg(3).to_ascii_uppercase();
    let condition = match option.as_slice() {
        b"NX" => Condition::Nx,
        b"XX" => Condition::Xx,
        b"GT" => Condition::Gt,
        b"LT" => Condition::Lt,
        _ => Condition::Always,
    };
    let at = if condition == Condition::Always { 4 } else { 5 };
    let names = match field_names(ctx, at, NUMFIELDS_POSITIVE) {
        Ok(names) => names,
        Err(message) => return ctx.error(message),
    };
    let result = change(ctx, |fields| {
        let mut changed = false;
        let mut batch = Batch::new(fields, names.iter().copied());
        let answers: Vec<i64> = names
            .iter()
            .map(|name| {
                let Some(index) = batch.find(name) else {
                    return NO_FIELD;
                };
                if !condition.allows(fields.list[index].expire_at_ms, at_ms) {
                    return NOT_MET;
                }
                changed = true;
                if at_ms <= now_ms {
                    batch.remove(fields, name);
                    return DELETED;
                }
                fields.list[index].expire_at_ms = Some(at_ms);
                SET
            })
            .collect();
        batch.finish(fields);
        (changed, answers)
    });
    if let Ok(answers) = &result {
        if answers.contains(&SET) {
            ctx.wrote(class::HASH, "hexpire", 1);
        }
        if answers.contains(&DELETED) {
            ctx.removed(class::HASH, "hexpired", 1);
        }
    }
    reply_integers(ctx, result);
}

fn reply_integers(ctx: &mut Ctx<'_>, result: Result<Vec<i64>, super::Failure>) {
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(answers) => {
            let mut reply = ctx.reply();
            reply.array(answers.len());
            answers.into_iter().for_each(|n| reply.integer(n));
        }
    }
}

/// HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME key FIELDS numfields field ...: -2 for a
/// missing field, -1 for one without expiry, else the time (seconds rounded up).
pub(super) fn httl(ctx: &mut Ctx<'_>, unit: Unit, report: ttl::Report) {
    let now_ms = ttl::now_ms(ctx.shared);
    // A bad FIELDS clause is answered only after the key's type is checked (Redis's order).
    let (names, parsed) = match field_names(ctx, 3, NUMFIELDS_NOT_POSITIVE) {
        Ok(names) => (names, Ok(())),
        Err(message) => (Vec::new(), Err(message)),
    };
    let base_ms = if report == ttl::Report::Remaining { now_ms } else { 0 };
    read(ctx, |fields, reply| {
        if let Err(message) = parsed {
            return reply.error(message);
        }
        reply.array(names.len());
        let batch = fields.map(|fields| (fields, Batch::new(fields, names.iter().copied())));
        for name in &names {
            let field = batch
                .as_ref()
                .and_then(|(fields, batch)| batch.find(name).map(|index| &fields.list[index]));
            let answer = match field.map(|field| field.expire_at_ms) {
                None => NO_FIELD,
                Some(None) => NO_TTL,
                Some(Some(at_ms)) => {
                    let ms = at_ms.saturating_sub(base_ms);
                    let n = if unit == Unit::Seconds { ms.div_ceil(1000) } else { ms };
                    n as i64
                }
            };
            reply.integer(answer);
        }
    });
}

/// HPERSIST key FIELDS numfields field ...: 1 when an expiry was removed, -1 when the
/// field had none, -2 when it is missing.
pub(super) fn hpersist(ctx: &mut Ctx<'_>) {
    if wrong_type(ctx) {
        return;
    }
    let names = match field_names(ctx, 3, NUMFIELDS_NOT_POSITIVE) {
        Ok(names) => names,
        Err(message) => return ctx.error(message),
    };
    let result = change(ctx, |fields| {
        let mut changed = false;
        let batch = Batch::new(fields, names.iter().copied());
        let answers: Vec<i64> = names
            .iter()
            .map(|name| match batch.find(name) {
                None => NO_FIELD,
                Some(index) if fields.list[index].expire_at_ms.is_none() => NO_TTL,
                Some(index) => {
                    fields.list[index].expire_at_ms = None;
                    changed = true;
                    SET
                }
            })
            .collect();
        (changed, answers)
    });
    if result.as_ref().is_ok_and(|answers| answers.contains(&SET)) {
        ctx.wrote(class::HASH, "hpersist", 1);
    }
    reply_integers(ctx, result);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions() {
        use Condition::*;
        assert!(Nx.allows(None, 5) && !Nx.allows(Some(1), 5));
        assert!(!Xx.allows(None, 5) && Xx.allows(Some(9), 5));
        assert!(!Gt.allows(None, 5) && Gt.allows(Some(4), 5) && !Gt.allows(Some(5), 5));
        assert!(Lt.allows(None, 5) && Lt.allows(Some(6), 5) && !Lt.allows(Some(5), 5));
        assert!(Always.allows(None, 0));
    }

    #[test]
    fn expire_time_bounds() {
        let at = |t: &str, unit, base| expire_at_ms(t.as_bytes(), unit, base, 1_000, "hexpire");
        assert_eq!(at("5", Unit::Seconds, ttl::Base::Now), Ok(6_000));
        assert_eq!(at("0", Unit::Milliseconds, ttl::Base::Epoch), Ok(0));
        assert_eq!(
            at("-1", Unit::Seconds, ttl::Base::Now).unwrap_err(),
            "ERR invalid expire time, must be >= 0"
        );
        let invalid = Err("ERR invalid expire time in 'hexpire' command".to_owned());
        assert_eq!(
            at(&(EXPIRE_AT_MAX_MS / 1000 + 1).to_string(), Unit::Seconds, ttl::Base::Epoch),
            invalid
        );
        assert_eq!(at(&EXPIRE_AT_MAX_MS.to_string(), Unit::Milliseconds, ttl::Base::Now), invalid);
        assert_eq!(
            at(&EXPIRE_AT_MAX_MS.to_string(), Unit::Milliseconds, ttl::Base::Epoch),
            Ok(EXPIRE_AT_MAX_MS as u64)
        );
        assert!(at("x", Unit::Seconds, ttl::Base::Now).unwrap_err().contains("not an integer"));
    }
}
