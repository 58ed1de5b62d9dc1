//! PFDEBUG GETREG / DECODE / ENCODING / TODENSE and PFSELFTEST: Redis's commands for
//! looking inside a HyperLogLog (its own test suite uses them), with Redis's replies.

use super::{hll, modify_string, pf::sparse_max, Ctx, Update};

const NO_KEY: &str = "ERR The specified key does not exist";
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

/// What PFDEBUG answers.
enum Answer {
    Registers(Vec<u8>),
    Decoded(String),
    Encoding(&'static str),
    Converted(bool),
    Error(String),
}

pub(super) fn pfdebug(ctx: &mut Ctx<'_>) {
    let subcommand = ctx.arg(1).to_ascii_lowercase();
    let result = modify_string(ctx, 2, |current| {
        let Some(value) = current else {
            return (Update::Keep, Answer::Error(NO_KEY.into()));
        };
        if !hll::is_hll(value) {
            return (Update::Keep, Answer::Error(NOT_HLL.into()));
        }
        let sparse = !hll::is_dense(value);
        match subcommand.as_slice() {
            b"getreg" | b"todense" => {
                let mut dense = value.to_vec();
                if hll::to_dense(&mut dense).is_err() {
                    return (Update::Keep, Answer::Error(CORRUPT.into()));
                }
                let answer = match subcommand.as_slice() {
                    b"getreg" => Answer::Registers(hll::dense_registers(&dense)),
                    _ => Answer::Converted(sparse),
                };
                let update = if sparse { Update::Write(dense) } else { Update::Keep };
                (update, answer)
            }
            b"decode" if sparse => (Update::Keep, Answer::Decoded(hll::decode_sparse(value))),
            b"decode" => (Update::Keep, Answer::Error("ERR HLL encoding is not sparse".into())),
            b"encoding" => {
                (Update::Keep, Answer::Encoding(if sparse { "sparse" } else { "dense" }))
            }
            _ => {
                let name = String::from_utf8_lossy(&subcommand).into_owned();
                (Update::Keep, Answer::Error(format!("ERR Unknown PFDEBUG subcommand '{name}'")))
            }
        }
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(Answer::Error(message)) => ctx.error(&message),
        Ok(Answer::Registers(registers)) => {
            let mut reply = ctx.reply();
            reply.array(registers.len());
            for register in registers {
                reply.integer(i64::from(register));
            }
        }
        Ok(Answer::Decoded(text)) => ctx.reply().bulk(text.as_bytes()),
        Ok(Answer::Encoding(name)) => ctx.reply().simple(name.as_bytes()),
        Ok(Answer::Converted(converted)) => ctx.reply().integer(i64::from(converted)),
    }
}

/// PFSELFTEST: `+OK`, or Redis's `TESTFAILED` reason.
pub(super) fn pfselftest(ctx: &mut Ctx<'_>) {
    let sparse_max = sparse_max(ctx);
    let random = || super::super::pick::random_below(usize::MAX) as u64;
    match hll::self_test(sparse_max, random) {
        Ok(()) => ctx.reply().ok(),
        Err(why) => ctx.error(format!("ERR {why}")),
    }
}
