//! The binary's command line from outside: exit codes and what a person sees.

use std::process::{Command, Output};

fn spinel_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinel-bench")).args(args).output().expect("it runs")
}

/// Goal: a usage error exits 64 (EX_USAGE) with one line on stderr naming the culprit;
/// help exits 0 on stdout.
#[test]
fn usage_errors_exit_64_with_one_line() {
    for (args, culprit) in [
        (&["--bogus"][..], "--bogus"),
        (&["--threads", "many"], "many"),
        (&["--protocol", "http"], "--protocol"),
        (&["compare", "--repeat", "0"], "--repeat"),
        (&["compare", "--servers", "nginx"], "nginx"),
    ] {
        let out = spinel_bench(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("spinel-bench: ") && stderr.contains(culprit), "{stderr}");
    }
    for args in [&["--help"][..], &["-h"], &["compare", "--help"]] {
        let out = spinel_bench(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: spinel-bench"));
    }
}
