//! Which arguments MONITOR and SLOWLOG GET show as `(redacted)`, exactly as Redis 7.0
//! redacts them (checked against redis-server 7.0.15): the passwords (and user names) of
//! AUTH, HELLO's AUTH option, MIGRATE's AUTH and AUTH2 options, every argument of ACL
//! SETUSER after the subcommand, and the value of CONFIG SET requirepass, masterauth and
//! masteruser. (MONITOR shows neither ACL nor CONFIG: they are admin commands.)

/// What Redis shows in place of a secret.
pub(crate) const REDACTED: &[u8] = b"(redacted)";

/// Whether argument `at` of each position in `args` (the whole command line) is a secret:
/// the indices to redact, in order.
pub(crate) fn secret_args(args: &[&[u8]]) -> Vec<usize> {
    let Some(name) = args.first() else { return Vec::new() };
    let is = |at: usize, word: &str| {
        args.get(at).is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    if name.eq_ignore_ascii_case(b"auth") {
        (1..args.len()).collect()
    } else if name.eq_ignore_ascii_case(b"hello") {
        hello(args)
    } else if name.eq_ignore_ascii_case(b"migrate") {
        migrate(args)
    } else if name.eq_ignore_ascii_case(b"acl") && is(1, "setuser") {
        (2..args.len()).collect()
    } else if name.eq_ignore_ascii_case(b"config") && is(1, "set") {
        config_set(args)
    } else {
        Vec::new()
    }
}

/// HELLO [protover [AUTH user pass] [SETNAME name]]: options are read in order once the
/// version is a valid one; the first unknown option stops the reading (and the command).
fn hello(args: &[&[u8]]) -> Vec<usize> {
    let version = args.get(1).and_then(|v| std::str::from_utf8(v).ok()?.parse::<i64>().ok());
    if args.len() >= 2 && !matches!(version, Some(2 | 3)) {
        return Vec::new();
    }
    let mut secret = Vec::new();
    let mut at = 2;
    while at < args.len() {
        let more = args.len() - 1 - at;
        if args[at].eq_ignore_ascii_case(b"auth") && more >= 2 {
            secret.extend([at + 1, at + 2]);
            at += 3;
        } else if args[at].eq_ignore_ascii_case(b"setname") && more >= 1 {
            at += 2;
        } else {
            break;
        }
    }
    secret
}

/// MIGRATE host port key db timeout [COPY] [REPLACE] [AUTH pass | AUTH2 user pass]
/// [KEYS key...]: options are read in order until KEYS or the first unknown one.
fn migrate(args: &[&[u8]]) -> Vec<usize> {
    let mut secret = Vec::new();
    let mut at = 6;
    while at < args.len() {
        let more = args.len() - 1 - at;
        let word = args[at];
        if word.eq_ignore_ascii_case(b"copy") || word.eq_ignore_ascii_case(b"replace") {
            at += 1;
        } else if word.eq_ignore_ascii_case(b"auth") && more >= 1 {
            secret.push(at + 1);
            at += 2;
        } else if word.eq_ignore_ascii_case(b"auth2") && more >= 2 {
            secret.extend([at + 1, at + 2]);
            at += 3;
        } else {
            break;
        }
    }
    secret
}

/// CONFIG SET name value [name value ...]: the value of each sensitive parameter.
fn config_set(args: &[&[u8]]) -> Vec<usize> {
    const SENSITIVE: [&[u8]; 3] = [b"requirepass", b"masterauth", b"masteruser"];
    (2..args.len().saturating_sub(1))
        .step_by(2)
        .filter(|&at| SENSITIVE.iter().any(|s| args[at].eq_ignore_ascii_case(s)))
        .map(|at| at + 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(line: &str) -> Vec<usize> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        secret_args(&args)
    }

    /// Goal: the arguments redis-server 7.0.15 redacted for the same command lines.
    #[test]
    fn redacts_as_redis_does() {
        assert_eq!(secrets("auth pw"), [1]);
        assert_eq!(secrets("AUTH u pw"), [1, 2]);
        assert_eq!(secrets("hello 2 auth default pw"), [3, 4]);
        assert_eq!(secrets("hello 3 AUTH u p setname x"), [3, 4]);
        assert_eq!(secrets("hello 3 auth a b bogus"), [3, 4]);
        assert!(secrets("hello x auth a b").is_empty());
        assert!(secrets("hello 3 auth a").is_empty());
        assert_eq!(secrets("migrate h 1 k 0 1000 auth pw"), [7]);
        assert_eq!(secrets("migrate h 1 k 0 1000 auth2 user pw"), [7, 8]);
        assert_eq!(secrets("migrate h 1 \"\" 0 1000 copy replace auth pw keys a auth"), [9]);
        assert_eq!(secrets("acl setuser u on >pw ~*"), [2, 3, 4, 5]);
        assert!(secrets("acl getuser u").is_empty());
        assert_eq!(secrets("config set requirepass pw"), [3]);
        assert_eq!(secrets("config set masterauth pw maxmemory 0"), [3]);
        assert_eq!(secrets("config set nosuch 1 MASTERUSER u"), [5]);
        assert!(secrets("config set tls-key-file-pass x").is_empty());
        assert!(secrets("get auth").is_empty());
    }
}
