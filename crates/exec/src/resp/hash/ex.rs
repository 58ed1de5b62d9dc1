//! Redis 8.0's HGETDEL, HGETEX and HSETEX: several fields read and deleted, read and
//! given a new expiry, or written with one, in one command. Checks and replies follow
//! Redis's `t_hash.c`.

use std::borrow::Cow;

use proto_resp::error;

use super::super::keyevents::class;
use super::{
    change, encoding::Batch, expire::expire_at_ms, field_names, ttl, ttl::Unit, typed::Failure,
    wrong_type, Ctx, NUMFIELDS_NOT_POSITIVE,
};

/// HGETDEL key FIELDS numfields field ...: each field's value (null if missing), and the
/// field deleted; the key goes with its last field.
pub(super) fn hgetdel(ctx: &mut Ctx<'_>) {
    if wrong_type(ctx) {
        return;
    }
    let names = match field_names(ctx, 3, NUMFIELDS_NOT_POSITIVE) {
        Ok(names) => names,
        Err(message) => return ctx.error(message),
    };
    let result = change(ctx, |fields| {
        let mut batch = Batch::new(fields, names.iter().copied());
        let values: Vec<Option<Vec<u8>>> =
            names.iter().map(|name| batch.remove(fields, name).map(Cow::into_owned)).collect();
        batch.finish(fields);
        (values.iter().any(Option::is_some), values)
    });
    if result.as_ref().is_ok_and(|values| values.iter().any(Option::is_some)) {
        ctx.removed(class::HASH, "hgetdel", 1);
    }
    reply_values(ctx, result);
}

fn reply_values(ctx: &mut Ctx<'_>, result: Result<Vec<Option<Vec<u8>>>, Failure>) {
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(values) => {
            let mut reply = ctx.reply();
            reply.array(values.len());
            for value in values {
                match value {
                    Some(value) => reply.bulk(&value),
                    None => reply.null(),
                }
            }
        }
    }
}

/// What HGETEX does to the expiry of the fields it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NewExpiry {
    Unchanged,
    Persist,
    At(u64),
}

/// HGETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST] FIELDS numfields field ...:
/// each field's value (null if missing); the fields found get the new expiry (a time
/// already past deletes them, after their value is read).
pub(super) fn hgetex(ctx: &mut Ctx<'_>) {
    if wrong_type(ctx) {
        return;
    }
    let now_ms = ttl::now_ms(ctx.shared);
    let option = ctx.arg(2).to_ascii_uppercase();
    let time = match option.as_slice() {
        b"EX" => Some((Unit::Seconds, ttl::Base::Now)),
        b"PX" => Some((Unit::Milliseconds, ttl::Base::Now)),
        b"EXAT" => Some((Unit::Seconds, ttl::Base::Epoch)),
        b"PXAT" => Some((Unit::Milliseconds, ttl::Base::Epoch)),
        _ => None,
    };
    let (expiry, at) = match time {
        Some((unit, base)) => match expire_at_ms(ctx.arg(3), unit, base, now_ms, ctx.spec.name) {
            Ok(at_ms) => (NewExpiry::At(at_ms), 5),
            Err(message) => return ctx.error(message),
        },
        None if option == b"PERSIST" => (NewExpiry::Persist, 4),
        None => (NewExpiry::Unchanged, 3),
    };
    let names = match field_names(ctx, at, NUMFIELDS_NOT_POSITIVE) {
        Ok(names) => names,
        Err(message) => return ctx.error(message),
    };
    let result = change(ctx, |fields| {
        let mut changed = false;
        let mut batch = Batch::new(fields, names.iter().copied());
        let values: Vec<Option<Vec<u8>>> = names
            .iter()
            .map(|name| {
                let index = batch.find(name)?;
                let value = fields.list[index].value.to_vec();
                match expiry {
                    NewExpiry::Unchanged => {}
                    NewExpiry::At(at_ms) if at_ms <= now_ms => {
                        batch.remove(fields, name);
                        changed = true;
                    }
                    NewExpiry::At(at_ms) => {
                        changed |= fields.list[index].expire_at_ms != Some(at_ms);
                        fields.list[index].expire_at_ms = Some(at_ms);
                    }
                    NewExpiry::Persist => {
                        changed |= fields.list[index].expire_at_ms.is_some();
                        fields.list[index].expire_at_ms = None;
                    }
                }
                Some(value)
            })
            .collect();
        batch.finish(fields);
        (changed, values)
    });
    if result.as_ref().is_ok_and(|values| values.iter().any(Option::is_some)) {
        match expiry {
            NewExpiry::At(_) => ctx.wrote(class::HASH, "hexpire", 1),
            NewExpiry::Persist => ctx.wrote(class::HASH, "hpersist", 1),
            NewExpiry::Unchanged => {}
        }
    }
    reply_values(ctx, result);
}

/// HSETEX's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SetOptions {
    /// FNX (`Some(false)`: only if no field exists) or FXX (`Some(true)`: only if all do).
    exist: Option<bool>,
    /// EX PX EXAT PXAT: the new expiry.
    at_ms: Option<u64>,
    keep_ttl: bool,
    /// Index of the first field.
    first: usize,
}

const ONE_CONDITION: &str = "ERR Only one of FXX or FNX arguments can be specified";
const ONE_EXPIRY: &str = "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified";

/// Redis's `hsetexParseArgs`: options in any order up to FIELDS, whose count must be in
/// `1..=i32::MAX` and match the pairs that follow (else the arity error).
fn set_options(ctx: &Ctx<'_>, now_ms: u64) -> Result<SetOptions, String> {
    let mut options = SetOptions::default();
    let argc = ctx.argc();
    let mut i = 2;
    while i < argc {
        let arg = ctx.arg(i).to_ascii_uppercase();
        let time = match arg.as_slice() {
            b"EX" => Some((Unit::Seconds, ttl::Base::Now)),
            b"PX" => Some((Unit::Milliseconds, ttl::Base::Now)),
            b"EXAT" => Some((Unit::Seconds, ttl::Base::Epoch)),
            b"PXAT" => Some((Unit::Milliseconds, ttl::Base::Epoch)),
            _ => None,
        };
        let has_expiry = options.at_ms.is_some() || options.keep_ttl;
        match arg.as_slice() {
            b"FIELDS" => {
                if i + 3 >= argc {
                    return Err(error::wrong_arity(ctx.spec.name));
                }
                let count = proto_resp::args::parse_i64(ctx.arg(i + 1)).ok();
                let count = count.filter(|n| (1..=i64::from(i32::MAX)).contains(n));
                let count = count.ok_or("ERR invalid number of fields")?;
                let remaining = (argc - i - 2) as i64;
                if remaining % 2 != 0 || count != remaining / 2 {
                    return Err(error::wrong_arity(ctx.spec.name));
                }
                options.first = i + 2;
                return Ok(options);
            }
            _ if time.is_some() || arg == b"KEEPTTL" => {
                if has_expiry {
                    return Err(ONE_EXPIRY.into());
                }
                if let Some((unit, base)) = time {
                    if i + 1 >= argc {
                        return Err("ERR missing expire time".into());
                    }
                    i += 1;
                    options.at_ms =
                        Some(expire_at_ms(ctx.arg(i), unit, base, now_ms, ctx.spec.name)?);
                } else {
                    options.keep_ttl = true;
                }
            }
            b"FXX" | b"FNX" => {
                if options.exist.is_some() {
                    return Err(ONE_CONDITION.into());
                }
                options.exist = Some(arg == b"FXX");
            }
            _ => {
                let shown = String::from_utf8_lossy(ctx.arg(i));
                return Err(format!("ERR unknown argument: {shown}"));
            }
        }
        i += 1;
    }
    Err(error::SYNTAX.into())
}

/// HSETEX key [FNX|FXX] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] FIELDS numfields field value
/// ...: 1 when the fields were set, 0 when FNX / FXX refused. Options are checked before
/// the key's type, as in Redis.
pub(super) fn hsetex(ctx: &mut Ctx<'_>) {
    let now_ms = ttl::now_ms(ctx.shared);
    let options = match set_options(ctx, now_ms) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let pairs: Vec<(&[u8], &[u8])> =
        (options.first..ctx.argc()).step_by(2).map(|i| (ctx.arg(i), ctx.arg(i + 1))).collect();
    let result = change(ctx, |fields| {
        let mut batch = Batch::new(fields, pairs.iter().map(|(name, _)| *name));
        let present = pairs.iter().filter(|(name, _)| batch.find(name).is_some()).count();
        match options.exist {
            Some(false) if present > 0 => return (false, 0),
            Some(true) if present < pairs.len() => return (false, 0),
            _ => {}
        }
        let keep_ttl = options.keep_ttl || options.at_ms.is_some();
        for (name, value) in &pairs {
            batch.set(fields, name, Cow::Owned(value.to_vec()), keep_ttl);
            match options.at_ms {
                Some(at_ms) if at_ms <= now_ms => drop(batch.remove(fields, name)),
                Some(at_ms) => {
                    let index = batch.find(name).expect("just set");
                    fields.list[index].expire_at_ms = Some(at_ms);
                }
                None => {}
            }
        }
        batch.finish(fields);
        (true, 1)
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(n) => {
            if n > 0 {
                ctx.wrote(class::HASH, "hset", 1);
            }
            ctx.reply().integer(n);
        }
    }
}
