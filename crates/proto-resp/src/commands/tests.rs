//! The command tables' own checks.

use super::*;
use crate::{check_arity, parse_reply, Protocol, Value};

#[test]
fn table_is_sorted_lowercase_and_complete() {
    for table in TABLES {
        assert!(table.windows(2).all(|w| w[0].name < w[1].name), "sorted, no duplicates");
    }
    let mut names: Vec<&str> = all_commands().map(|spec| spec.name).collect();
    names.sort_unstable();
    assert!(names.windows(2).all(|w| w[0] != w[1]), "a name in two tables");
    for spec in all_commands() {
        assert_eq!(spec.name, spec.name.to_ascii_lowercase());
        assert!(spec.arity != 0);
        // Key positions must lie inside the arguments a minimal call has, but for a
        // command whose keys may all be left out (SUNSUBSCRIBE: arity -1, keys 1..-1).
        let optional_keys = spec.arity == -1 && spec.last_key == -1;
        assert!(spec.first_key == 0 || spec.first_key < spec.arity.abs() || optional_keys);
    }
    assert_eq!(COMMANDS.len(), 80);
}

/// Goal: lookup ignores case and allocates nothing; every name is found in any case.
#[test]
fn lookup_any_case() {
    for spec in all_commands() {
        let upper = spec.name.to_ascii_uppercase();
        let mixed: String = spec
            .name
            .chars()
            .enumerate()
            .map(|(i, c)| if i % 2 == 0 { c.to_ascii_uppercase() } else { c })
            .collect();
        for name in [spec.name, upper.as_str(), mixed.as_str()] {
            assert_eq!(lookup(name.as_bytes()).map(|s| s.name), Some(spec.name), "{name}");
        }
    }
    for name in [&b""[..], b"ge", b"gett", b"get ", b"\xc4\xb0ncr", b"GET\0"] {
        assert!(lookup(name).is_none(), "{name:?}");
    }
}

/// Goal: the arities Redis declares, checked at and around each edge.
#[test]
fn arity_table() {
    let table: &[(&str, usize, bool)] = &[
        ("get", 1, false),
        ("get", 2, true),
        ("get", 3, false),
        ("set", 2, false),
        ("set", 3, true),
        ("set", 9, true),
        ("ping", 1, true),
        ("ping", 2, true),
        ("mset", 3, true),
        ("mset", 2, false),
        ("dbsize", 1, true),
        ("dbsize", 2, false),
        ("getrange", 4, true),
        ("getrange", 3, false),
        ("config", 1, false),
        ("config", 2, true),
        ("expire", 3, true),
        ("expire", 4, true),
    ];
    for &(name, argc, accepted) in table {
        let spec = lookup(name.as_bytes()).unwrap();
        assert_eq!(check_arity(spec, argc).is_ok(), accepted, "{name} {argc}");
    }
    let error = check_arity(lookup(b"GET").unwrap(), 3).unwrap_err();
    assert_eq!(error.message(), "ERR wrong number of arguments for 'get' command");
}

/// Goal: COMMAND INFO's exact RESP2 shape for one command, and RESP3 set markers.
#[test]
fn command_info_shape() {
    let mut out = Vec::new();
    let categories = |name: &str| if name == "get" { vec!["@read", "@fast"] } else { vec![] };
    write_command_info(&mut Reply::new(&mut out, Protocol::Resp2), lookup(b"get"), &categories);
    let want: &[u8] = b"*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n\
*2\r\n+@read\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n\
$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n\
$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n\
*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
    assert_eq!(out, want, "{}", String::from_utf8_lossy(&out));

    let mut out = Vec::new();
    write_command_info(&mut Reply::new(&mut out, Protocol::Resp3), lookup(b"mset"), &|_| {
        Vec::new()
    });
    let (value, used) = parse_reply(&out).unwrap();
    assert_eq!(used, out.len());
    let Value::Array(items) = value else { panic!("not an array") };
    assert_eq!(items[1], Value::Integer(-3));
    assert_eq!(items[2], Value::Set(vec![Value::Simple(b"write"), Value::Simple(b"denyoom")]));
    assert_eq!(&items[3..6], &[Value::Integer(1), Value::Integer(-1), Value::Integer(2)]);

    let mut out = Vec::new();
    write_command_info(&mut Reply::new(&mut out, Protocol::Resp2), lookup(b"nosuch"), &|_| {
        Vec::new()
    });
    assert_eq!(out, b"$-1\r\n");
}

#[test]
fn command_count_and_docs() {
    let mut out = Vec::new();
    write_command_count(&mut Reply::new(&mut out, Protocol::Resp2));
    assert_eq!(out, format!(":{}\r\n", command_count()).as_bytes());

    let mut out = Vec::new();
    let names: [&[u8]; 2] = [b"GET", b"nosuch"];
    write_command_docs_for(&mut Reply::new(&mut out, Protocol::Resp3), names.into_iter());
    let (value, _) = parse_reply(&out).unwrap();
    let Value::Map(pairs) = value else { panic!("not a map") };
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].0, Value::Bulk(b"get"));
    let Value::Map(doc) = &pairs[0].1 else { panic!("doc not a map") };
    assert_eq!(doc[2], (Value::Bulk(b"group"), Value::Bulk(b"string")));

    let mut out = Vec::new();
    write_command_info_all(&mut Reply::new(&mut out, Protocol::Resp2), &|_| Vec::new());
    let (Value::Array(all), used) = parse_reply(&out).unwrap() else { panic!() };
    assert_eq!((all.len(), used), (command_count(), out.len()));
    let mut out = Vec::new();
    write_command_docs_for(&mut Reply::new(&mut out, Protocol::Resp2), std::iter::empty());
    let (Value::Array(flat), _) = parse_reply(&out).unwrap() else { panic!() };
    assert_eq!(flat.len(), 2 * command_count());
}

/// Goal: every command and subcommand has its generated data (a new command without it
/// fails here until `scripts/gen_command_meta.py` is run), and the table is sorted for
/// the binary search.
#[test]
fn every_command_has_meta() {
    for spec in all_commands() {
        assert!(command_meta(spec.name).is_some(), "{}", spec.name);
        if let Run::Subcommands { table, .. } = &spec.run {
            for sub in table.iter() {
                assert!(command_meta(sub.name).is_some(), "{}", sub.name);
            }
        }
    }
    assert!(command_meta("nosuch").is_none());
}

/// Goal: keys found by key specs, with their flags, as Redis finds them.
#[test]
fn keys_by_key_specs() {
    let keys = |line: &str| {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let (name, _) = command_of_line(&args).unwrap();
        let found = command_meta(name).unwrap().keys(&args);
        found.iter().map(|key| (key.at, key.flags)).collect::<Vec<_>>()
    };
    let (ro, rw, ow) = (KeyFlags::RO, KeyFlags::RW, KeyFlags::OW);
    let (access, update, insert) = (KeyFlags::ACCESS, KeyFlags::UPDATE, KeyFlags::INSERT);
    assert_eq!(keys("get k"), [(1, ro | access)]);
    assert_eq!(keys("mset a 1 b 2"), [(1, ow | update), (3, ow | update)]);
    assert_eq!(
        keys("lmove a b left left"),
        [(1, rw | access | KeyFlags::DELETE), (2, rw | insert)]
    );
    assert_eq!(keys("zunionstore d 2 a b"), [(1, ow | update), (3, ro | access), (4, ro | access)]);
    // A key count past the line, or of zero, finds nothing.
    assert!(keys("zunionstore d 3 a b").is_empty());
    assert!(keys("eval s 0").is_empty());
    assert_eq!(keys("eval s 1 k a"), [(3, rw | access | update)]);
    assert_eq!(keys("object encoding k"), [(2, ro)]);
    // GEORADIUS: a STORE or STOREDIST keyword that is absent names no key (the source is
    // still found); both present: both destinations, as Redis 7.0's key specs find them.
    assert_eq!(keys("georadius s 0 0 1 km"), [(1, ro | access)]);
    assert_eq!(
        keys("georadius s 0 0 1 km store a storedist b"),
        [(1, ro | access), (7, ow | update), (9, ow | update)]
    );
    assert_eq!(
        keys("georadiusbymember s m 1 km storedist d"),
        [(1, ro | access), (6, ow | update)]
    );
    assert_eq!(
        keys("geosearchstore d s frommember m byradius 1 km"),
        [(1, ow | update), (2, ro | access)]
    );
    // SET's flags depend on GET; BITFIELD's on whether it only reads.
    assert_eq!(keys("set k v"), [(1, ow | update)]);
    assert_eq!(keys("set k v ex 1 get"), [(1, rw | access | update)]);
    assert_eq!(keys("bitfield k get u8 0 overflow wrap"), [(1, ro | access)]);
    assert_eq!(keys("bitfield k incrby u8 0 1"), [(1, rw | access | update)]);
    // Channels are no keys.
    assert!(!command_meta("spublish").unwrap().has_keys());
    assert!(command_of_line(&[b"config", b"nosuch"]).is_none());
    assert_eq!(command_of_line(&[b"CONFIG"]), Some(("config", -2)));
}

/// Goal: every subcommand has a statistics slot of its own, named by its full name.
#[test]
fn stat_slots_cover_every_subcommand() {
    let count = command_count();
    for sub in all_subcommands() {
        let slot = stat_slot(0, crate::Route::Subcommand(sub.id));
        assert!(slot >= count && slot < stat_slots(), "{}", sub.name);
        assert_eq!(stat_name(slot), Some(sub.name));
    }
    assert_eq!(stat_name(0), all_commands().next().map(|spec| spec.name));
}
