//! The `spinel` binary's command line as a user meets it: exit codes, one-line errors,
//! `--print-config` read back by `--config`, the example file, `--generate`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn spinel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinel")).args(args).output().expect("spinel runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn example_file() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contrib/spinel.toml");
    root.to_str().unwrap().to_string()
}

#[test]
fn usage_errors_exit_64_with_one_line_naming_the_flag() {
    for (args, word) in [
        (&["--frobnicate"][..], "--frobnicate"),
        (&["-p", "notaport"], "notaport"),
        (&["-o", "unknown_option=1"], "unknown_option"),
        (&["-Y", "/tmp/auth", "-B", "binary"], "-Y"),
        (&["-S", "-U", "11311"], "-S"),
        (&["--config", "/nonexistent.toml"], "/nonexistent.toml"),
    ] {
        let output = spinel(args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {message}");
        assert_eq!(message.lines().count(), 1, "{args:?}: {message}");
        assert!(message.starts_with("spinel: ") && message.contains(word), "{message}");
    }
}

#[test]
fn help_and_version_exit_0() {
    for flag in ["-h", "--help"] {
        let output = spinel(&[flag]);
        assert_eq!(output.status.code(), Some(0));
        assert!(stdout(&output).contains("--memory-limit"));
    }
    for flag in ["-V", "--version"] {
        let output = spinel(&[flag]);
        assert_eq!(output.status.code(), Some(0));
        let text = stdout(&output);
        assert!(text.starts_with("spinel ") && text.contains("git ") && text.contains("memcached"));
    }
}

#[test]
fn print_config_is_read_back_by_config() {
    let args = ["-p", "4321", "-m", "96", "-I", "4k", "-o", "slab_reassign", "-A", "-vv"];
    let printed = spinel(&[&args[..], &["--print-config"]].concat());
    assert_eq!(printed.status.code(), Some(0), "{}", stderr(&printed));
    let text = stdout(&printed);
    assert!(text.contains("port = 4321\n") && text.contains("max-item-size = \"4k\"\n"), "{text}");
    let path = std::env::temp_dir().join(format!("spinel-print-{}.toml", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let again = spinel(&["--config", path.to_str().unwrap(), "--print-config"]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(stdout(&again), text);
}

#[test]
fn example_file_is_accepted() {
    let output = spinel(&["--config", &example_file(), "--print-config"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("port = 11211\n"));
}

#[test]
fn generate_man_page_and_completions() {
    let man = spinel(&["--generate", "man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = stdout(&man);
    assert!(
        page.contains(".TH") && page.contains("memory\\-limit") && page.contains("resp\\-port")
    );
    for (shell, needle) in
        [("bash", "--memory-limit"), ("zsh", "memory-limit"), ("fish", "memory-limit")]
    {
        let output = spinel(&["--generate", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        assert!(stdout(&output).contains(needle), "{shell}");
    }
}
