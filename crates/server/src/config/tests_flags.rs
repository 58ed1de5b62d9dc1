//! Every flag of `memcached -h` (1.6), through the parser, in each of its forms (`-p11211`,
//! `-p 11211`, `--port=11211`, `--port 11211`), with what it does in Spinel: mapped to a
//! setting, accepted and ignored with a start-up warning, or refused with a message naming
//! it.

use super::tests::{args, run};
use super::*;

/// What one flag does.
enum Outcome {
    /// Accepted; the check holds on the resulting configuration.
    Sets(fn(&Config) -> bool),
    /// Accepted with no effect but a start-up warning containing this text.
    Warns(&'static str),
    /// Prints text containing this and exits 0 (help, version).
    Prints(&'static str),
    /// Refused; the message contains this text.
    Refused(&'static str),
}

use Outcome::*;

/// One row: the short flag, memcached's long name, the value it is given (None for a switch).
struct Flag {
    short: char,
    long: Option<&'static str>,
    value: Option<&'static str>,
    outcome: Outcome,
}

const fn row(
    short: char,
    long: Option<&'static str>,
    value: Option<&'static str>,
    outcome: Outcome,
) -> Flag {
    Flag { short, long, value, outcome }
}

/// memcached 1.6's flags, in the order of its `-h`, then bad values of accepted ones.
const MEMCACHED_FLAGS: &[Flag] = &[
    row('p', Some("port"), Some("11212"), Sets(|c| c.port.number() == 11212)),
    row('U', Some("udp-port"), Some("0"), Sets(|c| c.warnings.is_empty())),
    row('s', Some("unix-socket"), Some("/tmp/mc.sock"), Sets(|c| c.unix_socket.is_some())),
    row('a', Some("unix-mask"), Some("770"), Sets(|c| c.unix_mask == 0o770)),
    row('a', Some("unix-mask"), Some("999"), Refused("octal")),
    row('A', Some("enable-shutdown"), None, Sets(|c| c.enable_shutdown)),
    row('l', Some("listen"), Some("127.0.0.2,::1"), Sets(|c| c.listen.len() == 2)),
    row('d', Some("daemon"), None, Sets(|c| c.daemon)),
    row('r', Some("enable-coredumps"), None, Sets(|c| c.enable_coredumps)),
    row('u', Some("user"), Some("nobody"), Sets(|c| c.user.as_deref() == Some("nobody"))),
    row('m', Some("memory-limit"), Some("128"), Sets(|c| c.memory_limit_mib == 128)),
    row('M', Some("disable-evictions"), None, Sets(|c| c.disable_evictions)),
    row('c', Some("conn-limit"), Some("10"), Sets(|c| c.conn_limit == 10)),
    row('k', Some("lock-memory"), None, Sets(|c| c.lock_memory)),
    row('v', Some("verbose"), None, Sets(|c| c.verbosity == 1)),
    row('h', Some("help"), None, Prints("Usage: spinel")),
    row('i', Some("license"), None, Prints("Apache-2.0")),
    row('V', Some("version"), None, Prints("memcached")),
    row('P', Some("pidfile"), Some("/tmp/mc.pid"), Sets(|c| c.pidfile.is_some())),
    row('f', Some("slab-growth-factor"), Some("1.25"), Warns("-f/--slab-growth-factor")),
    row('n', Some("slab-min-size"), Some("48"), Warns("-n/--slab-min-size")),
    row('L', Some("enable-largepages"), None, Warns("-L/--enable-largepages")),
    row('D', Some("prefix-delimiter"), Some("#"), Sets(|c| c.prefix_delimiter == Some(b'#'))),
    row('t', Some("threads"), Some("3"), Sets(|c| c.threads == 3)),
    row('R', Some("max-reqs-per-event"), Some("5"), Sets(|c| c.max_reqs_per_event == 5)),
    row('C', Some("disable-cas"), None, Sets(|c| c.disable_cas)),
    row('b', Some("listen-backlog"), Some("10"), Sets(|c| c.listen_backlog == 10)),
    row('B', Some("protocol"), Some("ascii"), Sets(|c| c.protocol == "ascii")),
    row('I', Some("max-item-size"), Some("2m"), Sets(|c| c.max_item_size_bytes == 2 << 20)),
    row('S', Some("enable-sasl"), None, Sets(|c| c.enable_sasl && c.protocol == "binary")),
    row('F', Some("disable-flush-all"), None, Sets(|c| c.disable_flush_all)),
    row('X', Some("disable-dumping"), None, Sets(|c| c.disable_dumping)),
    row('W', Some("disable-watch"), None, Sets(|c| c.disable_watch)),
    row(
        'Y',
        Some("auth-file"),
        Some("/tmp/auth"),
        Sets(|c| c.auth_file.is_some() && c.protocol == "ascii"),
    ),
    row(
        'e',
        Some("memory-file"),
        Some("/tmp/mem"),
        Sets(|c| c.memory_file.as_deref() == Some("/tmp/mem")),
    ),
    row('Z', Some("enable-ssl"), None, Refused("ssl_chain_cert")),
    row('o', Some("extended"), Some("idle_timeout=9"), Sets(|c| c.idle_timeout_secs == 9)),
    row(
        'o',
        Some("extended"),
        Some("read_buf_mem_limit=3"),
        Sets(|c| c.read_buf_mem_limit_mib == 3),
    ),
    row('o', Some("extended"), Some("slab_reassign,hashpower=20"), Warns("hashpower")),
    row('o', Some("extended"), Some("ssl_ciphers=HIGH"), Warns("ssl_ciphers")),
    row('o', Some("extended"), Some("ssl_verify_mode=4"), Refused("ssl_verify_mode")),
    row('o', Some("extended"), Some("ext_path=/d:1G"), Warns("ext_path")),
    row('N', Some("napi_ids"), Some("2"), Warns("-N/--napi_ids")),
    // Values that memcached takes and Spinel refuses, or that neither takes.
    row(
        'U',
        Some("udp-port"),
        Some("11311"),
        Sets(|c| c.udp_port.number() == 11311 && c.port.number() == 11311),
    ),
    row('U', Some("udp-port"), Some("notaport"), Refused("'notaport'")),
    row('B', Some("protocol"), Some("binary"), Sets(|c| c.protocol == "binary")),
    row('I', Some("max-item-size"), Some("512"), Refused("'512'")),
    row('o', Some("extended"), Some("frobnicate=1"), Refused("frobnicate")),
    row('o', Some("extended"), Some("hash_algorithm=xxh3"), Refused("hash_algorithm")),
    row('c', Some("conn-limit"), Some("0"), Refused("at least 1")),
    row('t', Some("threads"), Some("0"), Refused("at least 1")),
    row('m', Some("memory-limit"), Some("lots"), Refused("'lots'")),
    row('p', Some("port"), Some("99999"), Refused("'99999'")),
];

/// The command lines that spell `flag`: short with the value attached and apart, long with
/// `=` and apart.
fn spellings(flag: &Flag) -> Vec<Vec<String>> {
    let short = format!("-{}", flag.short);
    let long = flag.long.map(|l| format!("--{l}"));
    let mut forms = Vec::new();
    match flag.value {
        Some(value) => {
            forms.push(vec![format!("{short}{value}")]);
            forms.push(vec![short, value.to_string()]);
            if let Some(long) = long {
                forms.push(vec![format!("{long}={value}")]);
                forms.push(vec![long, value.to_string()]);
            }
        }
        None => forms.extend([Some(short), long].into_iter().flatten().map(|f| vec![f])),
    }
    forms
}

fn check(argv: &[String], outcome: &Outcome) {
    let result = parse(argv);
    match (outcome, result) {
        (Sets(holds), Ok(Parsed::Run(config))) => {
            assert!(holds(&config), "{argv:?}: not applied: {config:?}")
        }
        (Warns(word), Ok(Parsed::Run(config))) => {
            let warnings = config.warnings.join("\n");
            assert!(warnings.contains(word), "{argv:?}: no warning on {word}: {warnings:?}");
            let default = Config { warnings: config.warnings.clone(), ..Config::default() };
            assert_eq!(config.idle_timeout_secs, default.idle_timeout_secs, "{argv:?}");
        }
        (Prints(word), Ok(Parsed::Print(text))) => {
            assert!(text.contains(word), "{argv:?}: {text}")
        }
        (Refused(word), Err(message)) => {
            assert!(message.contains(word), "{argv:?}: '{message}' lacks '{word}'");
            assert!(!message.contains('\n'), "{argv:?}: '{message}' is not one line");
        }
        (_, other) => panic!("{argv:?}: unexpected {other:?}"),
    }
}

#[test]
fn every_memcached_flag_in_every_spelling() {
    for flag in MEMCACHED_FLAGS {
        for argv in spellings(flag) {
            check(&argv, &flag.outcome);
        }
    }
}

#[test]
fn the_table_covers_memcached_help() {
    // `memcached -h` of 1.6.18, its flags in order.
    let documented = "pUsaAldrumMckvhiVPfnLDtRCbBISFXWYeZoN";
    for short in documented.chars() {
        assert!(MEMCACHED_FLAGS.iter().any(|f| f.short == short), "-{short} missing");
    }
    for short in refused::shorts() {
        assert!(documented.contains(short), "-{short} is refused but is not memcached's");
    }
}

#[test]
fn verbosity_levels() {
    for (list, level) in [
        (&["-v"][..], 1),
        (&["-vv"], 2),
        (&["-vvv"], 3),
        (&["-v", "-v"], 2),
        (&["--verbose", "-vv"], 3),
        (&["--verbose=3"], 1), // memcached ignores the value, and so did the old parser
        (&[], 0),
    ] {
        assert_eq!(run(list).unwrap().verbosity, level, "{list:?}");
    }
    assert!(parse(&args(&["-vx"])).is_err());
}

#[test]
fn several_suboptions_in_one_and_in_repeated_o() {
    let c = run(&["-o", "slab_reassign,slab_automove=1", "-ohashpower=20", "-o", "modern"]);
    let c = c.unwrap();
    assert_eq!(c.warnings.len(), 4, "{:?}", c.warnings);
    assert_eq!(c.ignored_suboptions[1], ("slab_automove".to_string(), "1".to_string()));
}
