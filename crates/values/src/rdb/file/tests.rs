use super::*;

/// What redis-server 7.0.15 wrote for SAVE after `SET a 1` and `SET b hello PX 100000`.
const REDIS_SAVED: &str = "524544495330303130fa0972656469732d76657206372e302e3135fa0a72656469\
    732d62697473c040fa056374696d65c2615b0c6bfa08757365642d6d656dc240550e00fa08616f662d6261\
    7365c000fe00fb0201000161c001fc967c4628a2010000000162056865 6c6c6fffe267176e1bb56843";

fn redis_saved() -> Vec<u8> {
    let hex: String = REDIS_SAVED.chars().filter(|c| !c.is_whitespace()).collect();
    (0..hex.len()).step_by(2).map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap()).collect()
}

fn read_all(bytes: &[u8]) -> Result<(Summary, Vec<Entry>), String> {
    let mut entries = Vec::new();
    let summary = read(bytes, |entry| {
        entries.push(entry);
        Ok(())
    })?;
    Ok((summary, entries))
}

fn aux(name: &str, value: &str) -> Entry {
    Entry::Aux { name: name.as_bytes().to_vec(), value: value.as_bytes().to_vec() }
}

/// Goal: a file redis-server 7.0.15 saved reads back whole, its checksum checked, and the
/// same content written here is the same bytes.
#[test]
fn reads_and_writes_what_redis_saves() {
    let saved = redis_saved();
    let (summary, entries) = read_all(&saved).unwrap();
    assert_eq!(summary, Summary { version: 10, keys: 2, checksum: Checksum::Verified });
    let key = |name: &str, value: &str, expire_at_ms| {
        let (key, value) = (name.as_bytes().to_vec(), Value::String(value.as_bytes().to_vec()));
        Entry::Key(Key { db: 0, key, value, expire_at_ms, item: None })
    };
    let expected = vec![
        aux("redis-ver", "7.0.15"),
        aux("redis-bits", "64"),
        aux("ctime", "1795971937"),
        aux("used-mem", "939328"),
        aux("aof-base", "0"),
        Entry::Resize { db: 0, keys: 2, expires: 1 },
        key("a", "1", None),
        key("b", "hello", Some(1_795_972_037_782)),
    ];
    assert_eq!(entries, expected);
    let mut writer = FileWriter::new(Vec::new());
    for (name, value) in [("redis-ver", "7.0.15"), ("redis-bits", "64"), ("ctime", "1795971937")]
        .into_iter()
        .chain([("used-mem", "939328"), ("aof-base", "0")])
    {
        writer.aux(name.as_bytes(), value.as_bytes()).unwrap();
    }
    writer.select_db(0, 2, 1).unwrap();
    writer.string_key(b"a", b"1", KeyHead::default()).unwrap();
    let head = KeyHead { expire_at_ms: Some(1_795_972_037_782), item: None };
    writer.string_key(b"b", b"hello", head).unwrap();
    assert_eq!(writer.finish().unwrap(), (saved, 2));
}

/// Goal: every kind of value, several databases, functions, memcached's item AUX and
/// expiries round-trip, through a window far smaller than the file.
#[test]
fn round_trips_across_databases() {
    let big: Vec<Vec<u8>> = (0..50_000).map(|n| format!("element-{n}").into_bytes()).collect();
    let values = [
        Value::String(vec![b'z'; 3 << 20]),
        Value::List(big.clone()),
        Value::Set(big),
        Value::Hash(vec![(b"f".to_vec(), b"v".to_vec())]),
        Value::ZSet(vec![(b"m".to_vec(), 2.5)]),
    ];
    let mut writer = FileWriter::new(Vec::new());
    writer
        .function(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)")
        .unwrap();
    let mut expected = vec![Entry::Function(
        b"#!lua name=lib\nredis.register_function('f', function() return 1 end)".to_vec(),
    )];
    for db in [0u64, 3, 15] {
        writer.select_db(db, values.len() as u64 + 1, 1).unwrap();
        expected.push(Entry::Resize { db, keys: values.len() as u64 + 1, expires: 1 });
        for (at, value) in values.iter().enumerate() {
            let key = format!("key{at}").into_bytes();
            writer.key(&key, value, KeyHead::default()).unwrap();
            expected.push(Entry::Key(Key {
                db,
                key,
                value: value.clone(),
                expire_at_ms: None,
                item: None,
            }));
        }
        let item = Some(ItemMeta { flags: u32::MAX, cas: 1 << 40 });
        let head = KeyHead { expire_at_ms: Some(1_900_000_000_000), item };
        writer.string_key(b"mc", b"12345", head).unwrap();
        let value = Value::String(b"12345".to_vec());
        let key = Key { db, key: b"mc".to_vec(), value, expire_at_ms: head.expire_at_ms, item };
        expected.push(Entry::Key(key));
    }
    let (bytes, keys) = writer.finish().unwrap();
    assert_eq!(keys, 18);
    let (summary, entries) = read_all(&bytes).unwrap();
    assert_eq!((summary.keys, summary.checksum), (18, Checksum::Verified));
    assert!(entries == expected, "entries differ");
}

/// Goal: a checksum of 0 is not checked (Redis's `rdbchecksum no`); any other wrong one,
/// a cut anywhere, a flipped byte, a foreign magic or a newer version is refused.
#[test]
fn damaged_files_are_refused() {
    let saved = redis_saved();
    let mut unchecked = saved.clone();
    let end = unchecked.len() - 8;
    unchecked[end..].fill(0);
    assert_eq!(read_all(&unchecked).unwrap().0.checksum, Checksum::Disabled);
    for cut in 0..saved.len() {
        assert!(read_all(&saved[..cut]).is_err(), "cut at {cut}");
    }
    for at in 0..saved.len() {
        let mut bad = saved.clone();
        bad[at] ^= 0x10;
        assert!(read_all(&bad).is_err(), "flipped byte {at}");
    }
    assert_eq!(read_all(b"SPINELSN\x01\0\0\0").unwrap_err(), "not an RDB file (bad magic)");
    assert!(read_all(b"REDIS0011\xff").unwrap_err().contains("RDB version 0011"));
    assert!(read_all(b"").unwrap_err().contains("too short"));
}

/// Goal: what Spinel does not hold is refused, saying what: module data, a module's value,
/// the pre-release function format, an unknown opcode; an AUX that ends early is cut short.
#[test]
fn refusals_say_why() {
    let cases: [(&[u8], &str); 5] = [
        (b"\xf7\x01\x02", "module data (MODULE_AUX) at byte 9"),
        (b"\x07\x01k", "a module's value (type 7) at byte 9"),
        (b"\xf6\x01n", "pre-release format at byte 9"),
        (b"\x08", "unknown opcode or type 8 at byte 9"),
        (b"\xfa\x05ab", "cut short in an AUX field at byte 10"),
    ];
    for (body, why) in cases {
        let mut file = b"REDIS0010".to_vec();
        file.extend_from_slice(body);
        let error = read_all(&file).unwrap_err();
        assert!(error.contains(why), "{error} / {why}");
    }
}

/// Goal: a length claiming 4 GiB in a short file is cut short, reading only what is there.
#[test]
fn a_lying_length_reads_only_the_file() {
    let mut file = b"REDIS0010\x00\x80\xff\xff\xff\xffk".to_vec();
    file.extend_from_slice(&[b'x'; 100]);
    assert!(read_all(&file).unwrap_err().starts_with("cut short in a key"));
}
