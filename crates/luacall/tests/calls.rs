//! luacall against a real Luau state: arguments as the host sees them, every RESP type as
//! Lua sees it, and the hostile cases (no host, a nested call, a panicking host, a reply
//! past the memory limit, malformed replies).

use luacall::{Answer, Args, Entry, Host};
use mlua::{Function, Lua, Value};

/// Answers every call with `reply`, recording the arguments it saw.
struct Fixed {
    reply: Vec<u8>,
    seen: Vec<Vec<Vec<u8>>>,
    entries: Vec<Entry>,
    panic: bool,
    /// A Lua function to call from inside the host (a nested call).
    nested: Option<Function>,
    nested_result: Option<String>,
}

impl Fixed {
    fn new(reply: &[u8]) -> Fixed {
        Fixed {
            reply: reply.to_vec(),
            seen: Vec::new(),
            entries: Vec::new(),
            panic: false,
            nested: None,
            nested_result: None,
        }
    }
}

impl Host for Fixed {
    fn call(&mut self, entry: Entry, args: &Args) -> Answer<'_> {
        assert!(args.well_typed());
        self.seen.push(args.iter().map(<[u8]>::to_vec).collect());
        self.entries.push(entry);
        if self.panic {
            panic!("host panics");
        }
        if let Some(nested) = self.nested.take() {
            let (_, text): (bool, String) = nested.call("PING").unwrap();
            self.nested_result = Some(text);
        }
        match entry {
            Entry::AclCheck => Answer::Bool(true),
            _ => Answer::Reply(&self.reply),
        }
    }

    fn number(&self, n: f64, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("{n}").as_bytes());
    }
}

fn setup() -> (Lua, Function, Function, Function) {
    let lua = Lua::new();
    let (call, pcall, acl) = luacall::functions(&lua).unwrap();
    (lua, call, pcall, acl)
}

/// Runs `code` (which gets the raw `call` as `...`) with `host`, returning its result as a
/// string made in Lua (`describe` below).
fn run(lua: &Lua, call: &Function, host: &mut Fixed, code: &str) -> mlua::Result<String> {
    let chunk = lua.load(code).into_function()?;
    luacall::with_host(host, || chunk.call::<String>(call.clone()))
}

/// A Lua function that writes a value as text, tables with sorted keys.
const DESCRIBE: &str = r#"
local function describe(v)
  if type(v) ~= 'table' then return type(v) .. ':' .. tostring(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = describe(k) .. '=' .. describe(v[k]) end
  return '{' .. table.concat(parts, ',') .. '}'
end
"#;

fn converted(reply: &[u8]) -> String {
    let (lua, call, _, _) = setup();
    let mut host = Fixed::new(reply);
    let code = format!(
        "{DESCRIBE} local call = ... local ok, v = call('GET', 'k') \
         return tostring(ok) .. ' ' .. describe(v)"
    );
    run(&lua, &call, &mut host, &code).unwrap()
}

/// Goal: each RESP type as Redis 7 gives it to Lua. Method: (reply, Lua value) table.
#[test]
fn replies_convert_as_redis_does() {
    let table: &[(&[u8], &str)] = &[
        (b":7\r\n", "true number:7"),
        (b"$3\r\nabc\r\n", "true string:abc"),
        (b"$-1\r\n", "true boolean:false"),
        (b"*-1\r\n", "true boolean:false"),
        (b"+OK\r\n", "true {string:ok=string:OK}"),
        (b"-ERR bad\r\n", "false string:ERR bad"),
        (b"!7\r\nERR bad\r\n", "false string:ERR bad"),
        (b"*2\r\n-ERR x\r\n:1\r\n", "true {number:1={string:err=string:ERR x},number:2=number:1}"),
        (b"_\r\n", "true nil:nil"),
        (b"#t\r\n", "true boolean:true"),
        (b",1.5\r\n", "true {string:double=number:1.5}"),
        (b"(12345678901234567890\r\n", "true {string:big_number=string:12345678901234567890}"),
        (
            b"=7\r\ntxt:abc\r\n",
            "true {string:verbatim_string={string:format=string:txt,string:string=string:abc}}",
        ),
        (b"%2\r\n+a\r\n:1\r\n_\r\n:2\r\n", "true {string:map={{string:ok=string:a}=number:1}}"),
        (b"~2\r\n$1\r\nx\r\n_\r\n", "true {string:set={string:x=boolean:true}}"),
        (b"|1\r\n+k\r\n*1\r\n:1\r\n:5\r\n", "true number:5"),
        (b">1\r\n:1\r\n", "true {number:1=number:1}"),
        (b"*0\r\n", "true {}"),
    ];
    for (reply, expected) in table {
        assert_eq!(converted(reply), *expected, "{}", String::from_utf8_lossy(reply));
    }
}

/// Goal: malformed or too deep replies become an error, never a crash. Method: truncated
/// and nonsensical replies, and a nesting of 200 arrays.
#[test]
fn unreadable_replies_are_errors() {
    let deep = [b"*1\r\n".repeat(200), b":1\r\n".to_vec()].concat();
    for reply in [&b"*3\r\n:1\r\n"[..], b"$10\r\nabc\r\n", b"?\r\n", b":x\r\n", b"", &deep] {
        let got = converted(reply);
        assert!(got.starts_with("false string:ERR reply could not"), "{got}");
    }
}

/// Goal: arguments reach the host as Redis's call would write them; a table argument is
/// refused before the host's command runs. Method: strings with NULs, numbers, a table.
#[test]
fn arguments_are_read_off_the_stack() {
    let (lua, call, _, _) = setup();
    let mut host = Fixed::new(b"+OK\r\n");
    run(&lua, &call, &mut host, "local call = ... call('SET', 'a\\0b', 1.5, 10) return ''")
        .unwrap();
    assert_eq!(
        host.seen,
        vec![vec![b"SET".to_vec(), b"a\0b".to_vec(), b"1.5".to_vec(), b"10".to_vec()]]
    );

    struct Typed(bool);
    impl Host for Typed {
        fn call(&mut self, _: Entry, args: &Args) -> Answer<'_> {
            self.0 = args.well_typed();
            Answer::Error(b"ERR refused")
        }
        fn number(&self, _: f64, _: &mut Vec<u8>) {}
    }
    let mut typed = Typed(true);
    let chunk = lua
        .load("local call = ... local ok, v = call('SET', {}, nil) return tostring(ok) .. v")
        .into_function()
        .unwrap();
    let got: String = luacall::with_host(&mut typed, || chunk.call(call.clone())).unwrap();
    assert_eq!(got, "falseERR refused");
    assert!(!typed.0);
}

/// Goal: outside a script (no host), from inside the host's own call, and with a host that
/// panics, a call answers an error and the state stays usable.
#[test]
fn no_host_nested_and_panicking_calls_are_errors() {
    let (lua, call, _, acl) = setup();
    let (ok, text): (bool, String) = call.call("GET").unwrap();
    assert!(!ok && text.contains("only available while a script runs"), "{text}");

    let mut host = Fixed::new(b":1\r\n");
    host.nested = Some(call.clone());
    run(&lua, &call, &mut host, "local call = ... call('GET', 'k') return ''").unwrap();
    let nested = host.nested_result.unwrap();
    assert!(nested.contains("only available while a script runs"), "{nested}");

    let mut host = Fixed::new(b":1\r\n");
    host.panic = true;
    let got =
        run(&lua, &call, &mut host, "local call = ... local ok, v = call('GET') return v").unwrap();
    assert!(got.contains("internal error"), "{got}");

    let mut host = Fixed::new(b"");
    let chunk = lua.load("local acl = ... local ok, v = acl('GET', 'k') return v").into_function();
    let got: bool = luacall::with_host(&mut host, || chunk.unwrap().call(acl.clone())).unwrap();
    assert!(got);
    assert_eq!(host.entries, vec![Entry::AclCheck]);
}

/// Goal: a reply that does not fit under the state's memory limit raises a memory error in
/// the script (caught by its `pcall`), with no crash and no leak of the host. Method: a
/// 4 MiB bulk string under a 1 MiB limit, then a small reply in the same state.
#[test]
fn a_reply_past_the_memory_limit_is_a_lua_error() {
    let (lua, call, _, _) = setup();
    let big = vec![b'x'; 4 << 20];
    let reply = [format!("${}\r\n", big.len()).into_bytes(), big, b"\r\n".to_vec()].concat();
    lua.set_memory_limit(lua.used_memory() + (1 << 20)).unwrap();
    let mut host = Fixed::new(&reply);
    let got = run(
        &lua,
        &call,
        &mut host,
        "local call = ... local ok, err = pcall(call, 'GET', 'k') return tostring(ok) .. ' ' .. tostring(err)",
    )
    .unwrap();
    assert!(got.starts_with("false"), "{got}");
    let mut host = Fixed::new(b":3\r\n");
    let got = run(
        &lua,
        &call,
        &mut host,
        "local call = ... local ok, v = call('GET') return tostring(v)",
    )
    .unwrap();
    assert_eq!(got, "3");
    assert_eq!(lua.globals().get::<Value>("missing").unwrap(), Value::Nil);
}

/// Goal: KEYS and ARGV as Lua sequences of the given bytes; past the memory limit, an error
/// and a usable state. Method: two small lists, then a 4 MiB string under a 1 MiB limit.
#[test]
fn sequences_hold_the_bytes_or_fail_cleanly() {
    let lua = Lua::new();
    let (keys, args) = luacall::sequences(&lua, &[b"a", b"b\0c"], &[b"1"]).unwrap();
    assert_eq!(keys.raw_len(), 2);
    assert_eq!(keys.raw_get::<mlua::LuaString>(2).unwrap().as_bytes().as_ref(), b"b\0c");
    assert_eq!(args.raw_get::<String>(1).unwrap(), "1");
    let big = vec![b'x'; 4 << 20];
    lua.set_memory_limit(lua.used_memory() + (1 << 20)).unwrap();
    assert!(luacall::sequences(&lua, &[&big], &[]).is_err());
    let (keys, _) = luacall::sequences(&lua, &[b"k"], &[]).unwrap();
    assert_eq!(keys.raw_get::<String>(1).unwrap(), "k");
}
