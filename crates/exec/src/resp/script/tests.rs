//! Wire tests of scripting through the RESP executor (one worker; the conformance suite
//! covers several workers and BUSY).

use crate::resp::testkit::Harness;

/// Goal: EVAL's conversions, errors and the script cache keep Redis 7's bytes (each
/// checked against redis-server 7.0). Method: wire table.
#[test]
fn eval_wire_table() {
    let mut h = Harness::new();
    h.check(&[
        ("EVAL \"return 1\" 0", ":1\r\n"),
        ("EVAL \"return {1,'x',nil,2}\" 0", "*2\r\n:1\r\n$1\r\nx\r\n"),
        ("EVAL \"return redis.call('set', KEYS[1], ARGV[1])\" 1 k v", "+OK\r\n"),
        ("EVAL \"return redis.call('get', KEYS[1])\" 1 k", "$1\r\nv\r\n"),
        ("EVAL \"return redis.call('get', 'nokey')\" 0", "$-1\r\n"),
        ("EVAL \"return 1\" 2 a", "-ERR Number of keys can't be greater than number of args\r\n"),
        ("EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0", ":1\r\n"),
        ("SCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db 00", "*2\r\n:1\r\n:0\r\n"),
        ("SCRIPT FLUSH", "+OK\r\n"),
        (
            "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0",
            "-NOSCRIPT No matching script. Please use EVAL.\r\n",
        ),
        (
            "EVAL \"return redis.call('nosuch')\" 0",
            "-ERR Unknown Redis command called from script script: \
             206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.\r\n",
        ),
        (
            "EVAL \"x=1\" 0",
            "-ERR user_script:1: Attempt to modify a readonly table script: \
             7caf6056913504f0508c65faf2dc3f94ff65bcfd, on @user_script:1.\r\n",
        ),
        ("SCRIPT KILL", "-NOTBUSY No scripts in execution right now.\r\n"),
    ]);
}

/// Goal: a script runs inside MULTI/EXEC without taking the gate again, and FUNCTION
/// LOAD/FCALL/DELETE work end to end. Method: wire table.
#[test]
fn exec_and_functions() {
    let mut h = Harness::new();
    h.check(&[
        ("MULTI", "+OK\r\n"),
        ("EVAL \"return redis.call('incr', 'n')\" 0", "+QUEUED\r\n"),
        ("EXEC", "*1\r\n:1\r\n"),
    ]);
    let code = "#!lua name=lib\nredis.register_function('f', function(keys, args) return keys[1] .. args[1] end)";
    assert_eq!(h.run_args(&[b"FUNCTION", b"LOAD", code.as_bytes()]), b"$3\r\nlib\r\n");
    h.check(&[
        ("FCALL f 1 a b", "$2\r\nab\r\n"),
        ("FCALL_RO f 0 x", "-ERR Can not execute a script with write flag using *_ro command.\r\n"),
        ("FUNCTION DELETE lib", "+OK\r\n"),
        ("FCALL f 0", "-ERR Function not found\r\n"),
    ]);
}

/// Goal: with the globals a safe environment (load-time constants, direct builtins), each
/// run still sees its own KEYS and ARGV (a new script, a cached one, a chunk made by
/// `loadstring`), and a builtin the sandbox removed still raises for a missing global,
/// as in Redis (texts checked against redis-server 7.0). Method: wire table.
#[test]
fn safe_environment_keeps_per_run_globals_and_missing_builtins() {
    let mut h = Harness::new();
    h.check(&[
        ("EVAL \"return {KEYS[1], ARGV[1]}\" 1 a b", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
        ("EVAL \"return {KEYS[1], ARGV[1]}\" 1 c d", "*2\r\n$1\r\nc\r\n$1\r\nd\r\n"),
        ("EVAL \"return KEYS[2]\" 2 e f", "$1\r\nf\r\n"),
        ("EVAL \"return loadstring('return ARGV[1]')()\" 0 g", "$1\r\ng\r\n"),
        ("EVAL \"return loadstring('return ARGV[1]')()\" 0 h", "$1\r\nh\r\n"),
        (
            "EVAL \"return typeof(1)\" 0",
            "-ERR user_script:1: Script attempted to access nonexistent global variable \
             'typeof' script: a0ed2faa11f8fb68479df94f72d31c4c6a7a67fe, on @user_script:1.\r\n",
        ),
        (
            "EVAL \"return bit32.band(1,3)\" 0",
            "-ERR user_script:1: Script attempted to access nonexistent global variable \
             'bit32' script: b3e2138fc6f45f61073a584816e699bc7605c773, on @user_script:1.\r\n",
        ),
        (
            "EVAL \"redis = 1\" 0",
            "-ERR user_script:1: Attempt to modify a readonly table script: \
             00cca49a9d18094f532f6d5cd3ecec29fc0fafd9, on @user_script:1.\r\n",
        ),
    ]);
}
