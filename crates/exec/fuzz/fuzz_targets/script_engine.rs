//! The script engine under hostile scripts: arbitrary bytes as an EVAL body, arbitrary
//! bytes handed to each library decoder from inside a script, and scripts assembled from
//! fragments that attack the sandbox (read-only tables, bytecode, deep nesting, huge
//! ranges, runaway memory). The first byte picks the mode.
//!
//! Checks: nothing panics (a panic under a script is answered and the engine reset, but
//! the target runs with the panic visible: `Server::run` does not catch it outside a
//! script); every reply is one well-formed RESP reply; the state's memory stays under its
//! cap; after every run, `redis.call` still reaches the store and a library table is still
//! read-only (no script leaves anything behind for the next one).
//!
//! Run: `cargo fuzz run script_engine corpus/script_engine seeds/script_engine --
//! -dict=lua.dict` from crates/exec/fuzz (see scripts/fuzz-smoke).

#![no_main]

use std::cell::RefCell;

use exec::fuzzing::Server;
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SERVER: RefCell<Server> = RefCell::new({
        let mut server = Server::new();
        server.kill_scripts_after(200);
        server
    });
}

/// Library calls that take the argument as untrusted bytes.
const LIBRARY_CALLS: &[&str] = &[
    "return cjson.decode(ARGV[1])",
    "return cmsgpack.unpack(ARGV[1])",
    "return {cmsgpack.unpack_one(ARGV[1])}",
    "return {cmsgpack.unpack_limit(ARGV[1], 3)}",
    "return {struct.unpack(ARGV[1], ARGV[2])}",
    "return struct.pack(ARGV[1], 1, 2, 'ab', 3.5)",
    "return struct.size(ARGV[1])",
    "return cjson.encode(cmsgpack.unpack(ARGV[1]))",
    "return cmsgpack.pack(cjson.decode(ARGV[1]))",
    "return bit.tohex(tonumber(ARGV[1]) or 0, tonumber(ARGV[2]) or 8)",
    "return loadstring(ARGV[1])",
    "return redis.sha1hex(ARGV[1])",
    "return string.format(ARGV[1], 1, 'x', 2.5)",
    "return {string.find(ARGV[2], ARGV[1])}",
    "return string.rep(ARGV[1], tonumber(ARGV[2]) or 2)",
    "return {unpack({1, 2, 3}, tonumber(ARGV[1]) or 1, tonumber(ARGV[2]) or 3)}",
];

/// Fragments that each attack something; a script is a run of them.
const FRAGMENTS: &[&str] = &[
    "local t = {} ",
    "t = {t} ",
    "t[1] = t ",
    "rawset(_G, 'x', 1) ",
    "rawset(redis, 'call', print) ",
    "getmetatable('').__index = function() return 1 end ",
    "setmetatable(_G, nil) ",
    "string.rep = nil ",
    "table.insert(string, 1) ",
    "for i = 1, 20 do t = {t} end ",
    "local s = string.rep('x', 1e6) ",
    "local big = {} for i = 1, 1e5 do big[i] = i end ",
    "return cjson.encode(t) ",
    "return cmsgpack.pack(t) ",
    "return t ",
    "return unpack(t, 1, 1e9) ",
    "pcall(error, t) ",
    "local ok = pcall(redis.call, 'get', 'k') ",
    "redis.call('set', 'k', 'v') ",
    "return redis.call('get', 'k') ",
    "while true do end ",
    "local co = coroutine.wrap(function() coroutine.yield(1) end) co() ",
    "return loadstring(string.rep('(', 1e4)) ",
    "return loadstring('\\27Lua') ",
    "return collectgarbage('count') ",
    "error(redis.error_reply('E x')) ",
    "return redis.status_reply('OK') ",
    "redis.setresp(3) return redis.call('hgetall', 'h') ",
];

fn script_from(fragments: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for &pick in fragments.iter().take(24) {
        body.extend_from_slice(FRAGMENTS[usize::from(pick) % FRAGMENTS.len()].as_bytes());
    }
    body
}

fn check_reply(reply: &[u8]) {
    // A table that holds itself comes back as arrays nested to the engine's depth limit and
    // then Redis's error; that is deeper than proto_resp's own reader goes.
    let cut_at_depth = b"-ERR reached lua stack limit\r\n";
    if reply.starts_with(b"*1\r\n*1\r\n") && reply.ends_with(cut_at_depth) {
        let arrays = &reply[..reply.len() - cut_at_depth.len()];
        assert!(arrays.chunks(4).all(|c| c == b"*1\r\n"), "nested one-element arrays");
        return;
    }
    let (_, used) = proto_resp::parse_reply(reply).expect("one well-formed RESP reply");
    assert_eq!(used, reply.len(), "exactly one reply");
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    SERVER.with(|server| {
        let mut server = server.borrow_mut();
        let reply = match mode % 3 {
            0 => server.run(&[b"EVAL", rest, b"0"]),
            1 => {
                let (pick, args) = rest.split_first().unwrap_or((&0, &[]));
                let body = LIBRARY_CALLS[usize::from(*pick) % LIBRARY_CALLS.len()];
                let cut = args.iter().position(|&b| b == 0).unwrap_or(args.len());
                let (first, second) = (&args[..cut], args.get(cut + 1..).unwrap_or_default());
                server.run(&[b"EVAL", body.as_bytes(), b"0", first, second])
            }
            _ => server.run(&[b"EVAL", &script_from(rest), b"0"]),
        };
        check_reply(&reply);
        let after = server.run(&[b"EVAL", b"redis.call('set', 'w', 'v') return string.upper('a')", b"0"]);
        assert_eq!(after, b"$1\r\nA\r\n", "a later script sees the libraries unchanged");
        let frozen = server.run(&[b"EVAL", b"return pcall(rawset, string, 'x', 1)", b"0"]);
        assert_eq!(frozen, b"$-1\r\n", "the string library is still read-only");
    });
});
