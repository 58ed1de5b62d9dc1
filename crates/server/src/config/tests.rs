//! The parser's behaviour: values, precedence, the file, `--print-config`, and the example
//! file's coverage of every key.

use std::io::Write as _;

use clap::CommandFactory;

use super::*;

pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

pub fn run(list: &[&str]) -> Result<Config, String> {
    match parse(&args(list))? {
        Parsed::Run(config) => Ok(*config),
        Parsed::Print(text) => panic!("expected a config for {list:?}, got text:\n{text}"),
    }
}

fn printed(list: &[&str]) -> String {
    match parse(&args(list)) {
        Ok(Parsed::Print(text)) => text,
        other => panic!("expected text for {list:?}, got {other:?}"),
    }
}

/// A file in the temporary directory holding `text`, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("spinel-{}-{name}", std::process::id()));
        std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
        TempFile(path)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn memcached_command_lines_parse() {
    let c = run(&["-p", "22122", "-m1024", "-c", "4096", "-t", "2", "-vv", "-U", "0"]).unwrap();
    assert_eq!(
        (c.port.number(), c.memory_limit_mib, c.conn_limit, c.threads),
        (22122, 1024, 4096, 2)
    );
    assert_eq!(c.verbosity, 2);
    let c = run(&["-I", "2m", "-M", "-C", "-l", "127.0.0.1,::1", "-o", "slab_reassign"]).unwrap();
    assert_eq!(c.max_item_size_bytes, 2 << 20);
    assert!(c.disable_evictions && c.disable_cas);
    assert_eq!(c.listen.len(), 2);
    assert_eq!(c.warnings.len(), 1);
    let c = run(&["-o", "idle_timeout=5,hashpower=20"]).unwrap();
    assert_eq!(c.idle_timeout_secs, 5);
}

#[test]
fn repeated_flags_last_wins_and_suboptions_add_up() {
    let c = run(&["-m", "64", "-m", "128", "-p11", "-p", "12"]).unwrap();
    assert_eq!((c.memory_limit_mib, c.port.number()), (128, 12));
    let c = run(&["-o", "hashpower=1", "-o", "lru_crawler,slab_reassign", "-v", "-v"]).unwrap();
    assert_eq!(c.warnings.len(), 3);
    assert_eq!(c.verbosity, 2);
    let c = run(&["--idle-timeout", "3", "-o", "idle_timeout=5"]).unwrap();
    assert_eq!(c.idle_timeout_secs, 3, "--idle-timeout wins over -o idle_timeout");
    let c = run(&["-o", "read_buf_mem_limit=2", "-o", "read_buf_mem_limit=5"]).unwrap();
    assert_eq!(c.read_buf_mem_limit_mib, 5);
    assert!(c.warnings.is_empty(), "read_buf_mem_limit has a meaning: {:?}", c.warnings);
    let c = run(&["--read-buf-mem-limit", "1", "-o", "read_buf_mem_limit=5"]).unwrap();
    assert_eq!(c.read_buf_mem_limit_mib, 1);
    assert!(run(&["-o", "read_buf_mem_limit=lots"]).is_err());
}

#[test]
fn combined_short_switches() {
    let c = run(&["-MCFA"]).unwrap();
    assert!(c.disable_evictions && c.disable_cas && c.disable_flush_all && c.enable_shutdown);
}

#[test]
fn invalid_values_are_refused() {
    for list in [
        &["-c", "0"][..],
        &["-t", "0"],
        &["-t", "257"],
        &["-l", "nonsense"],
        &["-o", "no_such_option=1"],
        &["-o", "idle_timeout=soon"],
        &["-U", "70000"],
        &["-I", "512"],
        &["-I", "2g"],
        &["-p", "70000"],
        &["-m", "-5"],
        &["--io", "kqueue"],
        &["--log-format", "xml"],
        &["--bogus"],
        &["-p"],
        &["-m", "1", "-I", "1m"],
        &["-p", "7000", "--resp-port", "7000"],
        &["-B", "unicode"],
        &["--pin=false"],
        &["stray"],
    ] {
        assert!(run(list).is_err(), "{list:?} accepted");
    }
}

#[test]
fn errors_are_one_line_and_name_the_flag() {
    for (list, word) in [
        (&["--bogus"][..], "--bogus"),
        (&["--prot", "1"], "--port"),
        (&["-c", "0"], "conn-limit"),
        (&["-m", "-5"], "-5"),
        (&["-p", "notaport"], "notaport"),
        (&["-o", "unknown_option=1"], "unknown_option"),
        (&["-S", "-B", "ascii"], "-S"),
        (&["-Y", "/tmp/auth", "-U", "11211"], "-Y"),
    ] {
        let message = run(list).unwrap_err();
        assert!(!message.contains('\n'), "{list:?}: more than one line: {message}");
        assert!(message.contains(word), "{list:?}: {message} does not name {word}");
    }
}

/// memcached's -Z and its ssl_* suboptions, and Redis's tls-* flags, become the TLS
/// settings; what is missing or malformed is refused by name.
#[test]
fn tls_settings() {
    use crate::tls::{ClientAuth, Versions};
    let c = run(&[
        "-Z",
        "-o",
        "ssl_chain_cert=chain.pem,ssl_verify_mode=2",
        "-o",
        "ssl_ca_cert=ca.pem,ssl_min_version=3",
    ])
    .unwrap();
    let tls = c.memcache_tls.unwrap();
    assert_eq!((tls.cert_path.as_str(), tls.key_path.as_str()), ("chain.pem", "chain.pem"));
    assert_eq!((tls.client_auth, tls.versions), (ClientAuth::Required, Versions::Tls13Only));
    assert_eq!(tls.ca_path.as_deref(), Some("ca.pem"));
    assert!(run(&["-o", "ssl_chain_cert=c.pem"]).unwrap().memcache_tls.is_none(), "no -Z");
    let redis = ["--tls-port", "6380", "--tls-cert-file", "c", "--tls-key-file", "k"];
    let c = run(&[&redis[..], &["--tls-auth-clients", "no"]].concat()).unwrap();
    let tls = c.resp_tls.unwrap();
    assert_eq!((c.tls_port, tls.client_auth), (6380, ClientAuth::None));
    let c = run(&[&redis[..], &["--tls-ca-cert-file", "ca"]].concat()).unwrap();
    let tls = c.resp_tls.unwrap();
    assert_eq!(tls.client_auth, ClientAuth::Required, "Redis's default");
    assert_eq!(tls.versions, Versions::Tls12AndTls13);
    for (protocols, versions) in
        [("tlsv1.3", Versions::Tls13Only), ("TLSv1.2", Versions::Tls12Only)]
    {
        let list = [&redis[..], &["--tls-auth-clients", "no", "--tls-protocols", protocols]];
        assert_eq!(run(&list.concat()).unwrap().resp_tls.unwrap().versions, versions);
    }
    for (list, word) in [
        (&["-Z"][..], "ssl_chain_cert"),
        (&["-Z", "-o", "ssl_chain_cert=c", "-s", "/tmp/s"], "-Z"),
        (&["-o", "ssl_verify_mode=4"], "ssl_verify_mode"),
        (&["-o", "ssl_min_version=tlsv1.4"], "ssl_min_version"),
        (&["-o", "ssl_key="], "ssl_key"),
        (&redis[..], "--tls-ca-cert-file"),
        (&["--tls-port", "6380", "--tls-auth-clients", "no"], "--tls-cert-file"),
        (&[&redis[..], &["--tls-auth-clients", "maybe"]].concat(), "--tls-auth-clients"),
        (&[&redis[..], &["--resp-port", "6380"]].concat(), "--tls-port"),
        (
            &[&redis[..], &["--tls-auth-clients", "no", "--tls-protocols", "TLSv1.1"]].concat(),
            "--tls-protocols",
        ),
    ] {
        let message = run(list).unwrap_err();
        assert!(message.contains(word), "{list:?}: {message} does not name {word}");
    }
}

/// memcached's rules for -S and -Y: each forces its dialect unless -B names it, naming the
/// other is refused, -Y decides when both are given, and neither allows UDP.
#[test]
fn authentication_settles_the_binding_protocol() {
    let protocol = |args: &[&str]| run(args).map(|c| c.protocol);
    assert_eq!(protocol(&["-S"]), Ok("binary".into()));
    assert_eq!(protocol(&["-S", "-B", "binary"]), Ok("binary".into()));
    assert_eq!(protocol(&["-Y", "/f"]), Ok("ascii".into()));
    assert_eq!(protocol(&["-Y", "/f", "-B", "ascii"]), Ok("ascii".into()));
    assert_eq!(protocol(&["-S", "-Y", "/f"]), Ok("ascii".into()));
    for refused in [
        &["-S", "-B", "auto"][..],
        &["-S", "-B", "ascii"],
        &["-Y", "/f", "-B", "binary"],
        &["-Y", "/f", "-B", "auto"],
        &["-S", "-Y", "/f", "-B", "binary"],
        &["-S", "-U", "11311"],
        &["-Y", "/f", "-U", "11311"],
    ] {
        assert!(run(refused).is_err(), "{refused:?}");
    }
    let both = run(&["-S", "-Y", "/f"]).unwrap();
    assert!(both.enable_sasl && both.auth_file.as_deref() == Some("/f"));
}

#[test]
fn long_options() {
    let c = run(&["--resp-port=0", "--io", "epoll", "--pin", "--busy-poll-us", "50"]).unwrap();
    assert_eq!((c.resp_port, c.io, c.pin, c.busy_poll_us), (0, IoChoice::Epoll, true, 50));
    let c = run(&["--output-limit", "8", "--output-pause=1", "--conn-buffers", "2"]).unwrap();
    assert_eq!((c.output_limit_mib, c.output_pause_kib, c.conn_buffers_mib), (8, 1, 2));
    let c = run(&["--log-format", "json", "--io=io_uring"]).unwrap();
    assert_eq!((c.log_format, c.io), (LogFormat::Json, IoChoice::Uring));
    assert_eq!(run(&[]).unwrap().log_format, LogFormat::Text);
}

#[test]
fn caps_are_applied() {
    let c = run(&["-b", "100000", "-R", "9999999", "--output-pause", "99999999"]).unwrap();
    assert_eq!((c.listen_backlog, c.max_reqs_per_event), (65535, 1 << 20));
    assert_eq!(c.output_pause_kib, 1 << 20);
}

#[test]
fn toml_keys_and_values() {
    let options = file::parse_text(
        "port = 1\nlisten = \"::1\"\npin = true\nmemory-limit = 8\nmax-item-size = 2048\n\
         disable-cas = \"yes\"\nconn-limit = \"10\"\nextended = \"slab_reassign\"\nverbose = 2\n",
    )
    .unwrap();
    let c = resolve(options).unwrap();
    assert_eq!((c.port.number(), c.pin, c.memory_limit_mib, c.conn_limit), (1, true, 8, 10));
    assert_eq!((c.max_item_size_bytes, c.disable_cas, c.verbosity), (2048, true, 2));
    assert_eq!(c.warnings.len(), 1);
    let c = resolve(file::parse_text("extended = [\"idle_timeout=4\", \"hashpower=1\"]").unwrap());
    assert_eq!(c.unwrap().warnings.len(), 1);
}

#[test]
fn toml_errors_name_the_line_and_the_key() {
    let error = file::parse_text("port = 1\n\nfrobnicate = 3\n").unwrap_err();
    assert_eq!(error, "line 3: unknown key `frobnicate`");
    let error = file::parse_text("port = 1\nconn-limit = 0\n").unwrap_err();
    assert_eq!(error, "line 2: conn-limit: must be at least 1");
    let error = file::parse_text("io = \"kqueue\"").unwrap_err();
    assert!(error.starts_with("line 1: io: ") && error.contains("epoll"), "{error}");
    for bad in ["help = true", "print-config = true", "generate = \"man\"", "port = [1"] {
        assert!(file::parse_text(bad).is_err(), "{bad} accepted");
    }
}

#[test]
fn command_line_wins_over_file() {
    let file = TempFile::new("precedence.toml", "port = 1\nmemory-limit = 8\nverbose = 1\n");
    let c = run(&["--config", file.path(), "-p", "2", "-v"]).unwrap();
    assert_eq!((c.port.number(), c.memory_limit_mib, c.verbosity), (2, 8, 2));
    assert_eq!(c.config_file.as_deref(), Some(file.path()));
    let file = TempFile::new("idle.toml", "idle-timeout = 5\n");
    let c = run(&["-o", "idle_timeout=7", "--config", file.path()]).unwrap();
    assert_eq!(c.idle_timeout_secs, 7, "the command line's -o wins over the file");
}

#[test]
fn config_file_errors() {
    let message = run(&["--config", "/nonexistent/spinel.toml"]).unwrap_err();
    assert!(message.starts_with("cannot read config file /nonexistent/spinel.toml"));
    let file = TempFile::new("unknown.toml", "port = 1\nfrobnicate = 2\n");
    let message = run(&["--config", file.path()]).unwrap_err();
    assert_eq!(message, format!("config file {} line 2: unknown key `frobnicate`", file.path()));
}

#[test]
fn reload_rereads_the_file_under_the_same_command_line() {
    let file = TempFile::new("reload.toml", "memory-limit = 8\nport = 1\n");
    let c = run(&["--config", file.path(), "-p", "2"]).unwrap();
    std::fs::write(&file.0, "memory-limit = 16\nport = 3\n").unwrap();
    let reloaded = reload(&c).unwrap();
    assert_eq!((reloaded.memory_limit_mib, reloaded.port.number()), (16, 2));
    std::fs::write(&file.0, "memory-limit = 0\n").unwrap();
    assert!(reload(&c).is_err());
}

#[test]
fn print_config_reads_back_to_the_same_config() {
    let lists: [&[&str]; 6] = [
        &["-p", "1234", "-m", "128", "-o", "slab_reassign", "--pin", "-vv", "-u", "nobody"],
        &["-S"],
        &["-Y", "/etc/auth"],
        &["-S", "-Y", "/etc/auth"],
        &["-Z", "-o", "ssl_chain_cert=c.pem,ssl_ciphers=HIGH,ssl_verify_mode=1,ssl_ca_cert=a"],
        &[
            "--tls-port",
            "6380",
            "--tls-cert-file",
            "c",
            "--tls-key-file",
            "k",
            "--tls-auth-clients",
            "optional",
            "--tls-ca-cert-file",
            "ca",
        ],
    ];
    for list in lists {
        let text = printed(&[list, &["--print-config"]].concat());
        let back = resolve(file::parse_text(&text).unwrap()).unwrap();
        let mut original = run(list).unwrap();
        original.args.clear();
        assert_eq!(back, original, "{list:?}");
    }
}

#[test]
fn help_and_version() {
    let help = printed(&["--help"]);
    for heading in ["memcached options:", "Redis options:", "Spinel options:"] {
        assert!(help.contains(heading), "--help lacks {heading}");
    }
    assert!(printed(&["-h"]).contains("--memory-limit"));
    for flag in ["-V", "--version"] {
        let version = printed(&[flag]);
        assert!(version.contains(exec::MEMCACHED_VERSION) && version.contains("git "));
    }
}

/// Keys of the file: every long option except the command-line-only actions.
fn file_keys() -> Vec<String> {
    Options::command()
        .get_arguments()
        .filter(|arg| !options::COMMAND_LINE_ONLY.contains(&arg.get_id().as_str()))
        .filter_map(|arg| arg.get_long().map(str::to_string))
        .collect()
}

const EXAMPLE: &str = include_str!("../../../../contrib/spinel.toml");

#[test]
fn example_file_documents_every_key() {
    let keys = file_keys();
    assert!(keys.len() > 20, "{keys:?}");
    for key in &keys {
        let documented = EXAMPLE.lines().any(|line| {
            let line = line.trim_start_matches("# ");
            line.starts_with(&format!("{key} = "))
        });
        assert!(documented, "contrib/spinel.toml does not show `{key}`");
    }
    // With the commented-out keys uncommented too, every key and example value is valid.
    let uncommented: String = EXAMPLE
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if keys.iter().any(|k| rest.starts_with(&format!("{k} = "))) => rest,
            _ => line,
        })
        .map(|line| format!("{line}\n"))
        .collect();
    resolve(file::parse_text(&uncommented).unwrap()).unwrap();
}

#[test]
fn generated_man_page_and_completions() {
    let man = printed(&["--generate", "man"]);
    assert!(man.contains(".TH") && man.contains("memory\\-limit"), "{man}");
    for shell in ["bash", "zsh", "fish"] {
        let script = printed(&["--generate", shell]);
        assert!(script.contains("memory-limit"), "{shell}: {script}");
    }
}

#[test]
fn ports_know_whether_they_were_named() {
    let defaults = |c: &Config| (c.port_is_default, c.resp_port_is_default);
    assert_eq!(defaults(&run(&[]).unwrap()), (true, true));
    assert_eq!(defaults(&run(&["-p", "21211"]).unwrap()), (false, true));
    assert_eq!(defaults(&run(&["--resp-port", "6380"]).unwrap()), (true, false));
    // -U without -p moves the TCP port: that port was asked for. -U 0 asks for none.
    let c = run(&["-U", "21211"]).unwrap();
    assert_eq!((c.port.number(), defaults(&c)), (21211, (false, true)));
    assert_eq!(defaults(&run(&["-U", "0"]).unwrap()), (true, true));
    // A file naming the default value names it all the same.
    let file = TempFile::new("named.toml", "port = 11211\nresp-port = 6379\n");
    assert_eq!(defaults(&run(&["--config", file.path()]).unwrap()), (false, false));
}

#[test]
fn only_named_ports_must_differ() {
    // The Redis default that -p takes is skipped at start, not refused here.
    let c = run(&["-p", "6379"]).unwrap();
    assert_eq!((c.port.number(), c.resp_port, c.resp_port_is_default), (6379, 6379, true));
    assert!(run(&["--resp-port", "11211"]).is_ok());
    let both = run(&["-p", "6379", "--resp-port", "6379"]).unwrap_err();
    assert_eq!(both, "--resp-port and -p must differ");
}

#[test]
fn print_config_keeps_defaults_unnamed() {
    let text = printed(&["-p", "21211", "--print-config"]);
    assert!(text.contains("port = 21211\n"), "{text}");
    assert!(text.contains("# resp-port = 6379 (default"), "{text}");
    assert!(!text.contains("\nresp-port ="), "{text}");
    let back = resolve(file::parse_text(&text).unwrap()).unwrap();
    assert_eq!((back.port_is_default, back.resp_port_is_default), (false, true));
}
