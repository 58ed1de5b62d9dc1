//! CONFIG GET / SET / RESETSTAT / REWRITE, through the dispatcher.

use super::{super::testkit::Harness, memory_bytes};

#[test]
fn config_get() {
    let mut h = Harness::new();
    h.check(&[
        ("CONFIG GET maxmemory", "*2\r\n$9\r\nmaxmemory\r\n$7\r\n8388608\r\n"),
        (
            "CONFIG GET SAVE appendonly",
            "*4\r\n$10\r\nappendonly\r\n$2\r\nno\r\n$4\r\nSAVE\r\n$0\r\n\r\n",
        ),
        ("CONFIG GET nosuch", "*0\r\n"),
        ("CONFIG GET port port", "*2\r\n$4\r\nport\r\n$4\r\n6379\r\n"),
        ("CONFIG GET", "-ERR wrong number of arguments for 'config|get' command\r\n"),
        ("CONFIG FOO", "-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n"),
        ("CONFIG REWRITE", "-ERR The server is running without a config file\r\n"),
    ]);
    h.check3(&[("CONFIG GET databases", "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n")]);
    let all = h.run("CONFIG GET *");
    // key-load-delay and rdb-key-save-delay are hidden, as are a few absent ones and
    // Spinel's own (spinel-noevict-*)
    let absent = super::super::config_absent::ABSENT
        .iter()
        .filter(|kept| !kept.hidden)
        .map(|kept| 1 + usize::from(kept.alias.is_some()))
        .sum::<usize>();
    let shown = super::PARAMETERS.len() - 4 + absent;
    assert!(all.starts_with(&format!("*{}\r\n", 2 * shown)), "{all}");
    assert!(!all.contains("key-load-delay"));
    assert!(!all.contains("spinel-"));
    let max = h.run("CONFIG GET max*");
    assert!(max.starts_with("*12\r\n$10\r\nmaxclients\r\n"), "{max}");
    h.check(&[
        ("CONFIG GET key-load-delay", "*2\r\n$14\r\nkey-load-delay\r\n$1\r\n0\r\n"),
        ("CONFIG GET key-load-*", "*0\r\n"),
    ]);
}

/// Goal: fixed parameters take only their value; errors in Redis's words and order.
#[test]
fn config_set_fixed_and_errors() {
    let mut h = Harness::new();
    let failed = |name: &str, why: &str| {
        format!("-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}\r\n")
    };
    let immutable = failed("DATABASES", "can't set immutable config");
    let memory = failed("maxmemory", "argument must be a memory value");
    let policy = failed(
        "maxmemory-policy",
        "argument(s) must be one of the following: volatile-lru, volatile-lfu, \
         volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction",
    );
    h.check(&[
        ("CONFIG SET save \"\"", "+OK\r\n"),
        ("CONFIG SET appendonly NO save \"\"", "+OK\r\n"),
        ("CONFIG SET databases 16", &immutable.replace("DATABASES", "databases")),
        ("CONFIG SET DATABASES 4", &immutable),
        (
            "CONFIG SET nosuch 1",
            "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n",
        ),
        (
            "CONFIG SET maxmemory abc databases 4",
            &failed("databases", "can't set immutable config"),
        ),
        ("CONFIG SET MAXMEMORY 1.5mb", &memory),
        ("CONFIG SET maxmemory -1", &memory),
        ("CONFIG SET maxmemory-policy foo maxmemory abc", &policy),
        ("CONFIG SET maxmemory 1mb MAXMEMORY 2mb", &failed("MAXMEMORY", "duplicate parameter")),
        ("CONFIG SET save", "-ERR wrong number of arguments for 'config|set' command\r\n"),
        (
            "CONFIG SET save \"\" port",
            "-ERR wrong number of arguments for 'config|set' command\r\n",
        ),
    ]);
    // None of the refused commands changed anything.
    h.check(&[("CONFIG GET maxmemory maxmemory-policy", "*4\r\n$9\r\nmaxmemory\r\n$7\r\n8388608\r\n$16\r\nmaxmemory-policy\r\n$11\r\nallkeys-lru\r\n")]);
    assert_eq!(memory_bytes(b"1k"), Some(1000));
    assert_eq!(memory_bytes(b"2KB"), Some(2048));
    assert_eq!(memory_bytes(b"x"), None);
}

/// Goal: maxmemory moves the store's limit; the policy switches evicting and refusing.
#[test]
fn config_set_maxmemory_and_policy() {
    let mut h = Harness::new();
    h.check(&[
        ("CONFIG SET maxmemory 16mb maxmemory-policy NOEVICTION", "+OK\r\n"),
        ("CONFIG GET maxmemory", "*2\r\n$9\r\nmaxmemory\r\n$8\r\n16777216\r\n"),
        ("CONFIG GET maxmemory-policy", "*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n"),
    ]);
    assert_eq!(h.shared.core.store.memory_limit(), 16 << 20);
    assert_eq!(h.shared.core.store.when_full(), store::WhenFull::Refuse);
    h.check(&[("CONFIG SET maxmemory-policy volatile-ttl", "+OK\r\n")]);
    assert_eq!(h.shared.core.store.when_full(), store::WhenFull::EvictVolatile);
    assert!(h.run("CONFIG GET maxmemory-policy").ends_with("$12\r\nvolatile-ttl\r\n"));
    h.check(&[
        ("CONFIG SET maxmemory 0", "+OK\r\n"),
        ("CONFIG GET maxmemory", "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"),
    ]);
    assert_eq!(h.shared.core.store.memory_limit(), 64 << 20);
    // Beyond the store's ceiling: refused, nothing changed.
    let refused = h.run("CONFIG SET maxmemory 1gb maxmemory-policy noeviction");
    assert!(
        refused.starts_with("-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - "),
        "{refused}"
    );
    assert_eq!(h.shared.core.store.when_full(), store::WhenFull::EvictVolatile);
    assert!(h.run("CONFIG GET maxmemory").ends_with("$1\r\n0\r\n"));
    h.check(&[("CONFIG SET maxmemory-policy allkeys-random", "+OK\r\n")]);
    assert_eq!(h.shared.core.store.when_full(), store::WhenFull::Evict);
}

/// Goal: the never-evict marks are set, shown (only when named) and checked at their edges;
/// INFO shows `noeviction` to a connection in a marked database, and only there.
#[test]
fn config_set_noevict_marks() {
    let mut h = Harness::new();
    let failed = |name: &str, why: &str| {
        format!("-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}\r\n")
    };
    let dbs =
        failed("spinel-noevict-dbs", "argument must be a list of database numbers from 0 to 15");
    let long = "p".repeat(257);
    let prefixes = failed("spinel-noevict-prefixes", "a prefix is 1 to 256 bytes");
    let many: Vec<String> = (0..65).map(|i| format!("p{i}")).collect();
    h.check(&[
        ("CONFIG GET spinel-noevict-dbs", "*2\r\n$18\r\nspinel-noevict-dbs\r\n$0\r\n\r\n"),
        ("CONFIG SET spinel-noevict-dbs \"15 1,1\"", "+OK\r\n"),
        ("CONFIG GET spinel-noevict-dbs", "*2\r\n$18\r\nspinel-noevict-dbs\r\n$4\r\n1 15\r\n"),
        ("CONFIG SET spinel-noevict-dbs 16", &dbs),
        ("CONFIG SET spinel-noevict-dbs -1", &dbs),
        ("CONFIG SET spinel-noevict-dbs x", &dbs),
        ("CONFIG SET SPINEL-NOEVICT-PREFIXES \"bull: sess:\"", "+OK\r\n"),
        (
            "CONFIG GET spinel-noevict-prefixes",
            "*2\r\n$23\r\nspinel-noevict-prefixes\r\n$11\r\nbull: sess:\r\n",
        ),
        (&format!("CONFIG SET spinel-noevict-prefixes {long}"), &prefixes),
        (
            &format!("CONFIG SET spinel-noevict-prefixes \"{}\"", many.join(" ")),
            &failed("spinel-noevict-prefixes", "at most 64 prefixes"),
        ),
        ("CONFIG GET spinel-*", "*0\r\n"),
    ]);
    // The refused ones changed nothing.
    assert!(h.shared.core.noevict.db_marked(15) && !h.shared.core.noevict.db_marked(2));
    assert_eq!(h.shared.core.noevict.prefixes_text(), "bull: sess:");
    let policy = |h: &mut Harness| {
        let info = h.run("INFO memory");
        let line = info.lines().find(|l| l.starts_with("maxmemory_policy:")).map(str::to_string);
        line.expect("a policy line")
    };
    assert_eq!(policy(&mut h), "maxmemory_policy:allkeys-lru");
    h.check(&[("SELECT 15", "+OK\r\n")]);
    assert_eq!(policy(&mut h), "maxmemory_policy:noeviction");
    // CONFIG GET shows the parameter as set, for every connection.
    assert!(h.run("CONFIG GET maxmemory-policy").ends_with("$11\r\nallkeys-lru\r\n"));
    h.check(&[("CONFIG SET spinel-noevict-dbs \"\"", "+OK\r\n")]);
    assert_eq!(policy(&mut h), "maxmemory_policy:allkeys-lru");
}

/// Goal: RESETSTAT zeroes what Redis zeroes.
#[test]
fn config_resetstat() {
    let mut h = Harness::new();
    h.check(&[
        ("GET a", "$-1\r\n"),
        ("NOSUCH", "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"),
    ]);
    assert!(h.run("INFO errorstats").contains("errorstat_ERR:count=1\r\n"));
    h.check(&[("CONFIG RESETSTAT", "+OK\r\n")]);
    let stats = h.run("INFO stats errorstats");
    for line in [
        "total_commands_processed:1\r\n",
        "keyspace_misses:0\r\n",
        "total_error_replies:0\r\n",
        "# Errorstats\r\n\r\n",
    ] {
        assert!(stats.contains(line), "{line:?} in {stats}");
    }
}

/// Goal: a redis.conf line is applied as CONFIG SET applies it; what Spinel fixes at start
/// is accepted at its value only; what Redis fixes and Spinel has no use for is kept.
#[test]
fn set_at_start() {
    let mut h = Harness::new();
    let set = |h: &Harness, name, value| super::set_at_start(&h.shared, name, value);
    assert_eq!(set(&h, "hz", "20"), Ok(()));
    assert_eq!(
        set(&h, "hz", "-1"),
        Err("argument must be between 0 and 2147483647 inclusive".into())
    );
    assert_eq!(set(&h, "nosuch", "1"), Err("Bad directive or wrong number of arguments".into()));
    assert_eq!(set(&h, "databases", "16"), Ok(()));
    assert_eq!(
        set(&h, "databases", "32"),
        Err("Spinel runs with 'databases 16', fixed at start".into())
    );
    assert_eq!(set(&h, "logfile", "/var/log/redis.log"), Ok(()));
    assert_eq!(set(&h, "save", "900 1 300 10"), Ok(()));
    h.check(&[
        ("CONFIG GET hz", "*2\r\n$2\r\nhz\r\n$2\r\n20\r\n"),
        ("CONFIG GET logfile", "*2\r\n$7\r\nlogfile\r\n$18\r\n/var/log/redis.log\r\n"),
        ("CONFIG GET save", "*2\r\n$4\r\nsave\r\n$12\r\n900 1 300 10\r\n"),
    ]);
}
