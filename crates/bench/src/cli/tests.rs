use super::*;

fn parse_line(line: &str) -> Result<Command, clap::Error> {
    parse(std::iter::once("spinel-bench").chain(line.split_whitespace()))
}

fn run_config(line: &str) -> (Config, Output) {
    match parse_line(line) {
        Ok(Command::Run(config, output)) => (*config, output),
        other => panic!("{line}: {other:?}"),
    }
}

/// The one-line error for `line`.
fn error_line(line: &str) -> String {
    cli_error(line).1
}

fn cli_error(line: &str) -> (ErrorKind, String) {
    let err = parse_line(line).expect_err(line);
    (err.kind(), one_line(&err))
}

/// Goal: no flags give exactly the library's default configuration, so the help's
/// defaults and `Config::default` agree.
#[test]
fn defaults_are_config_default() {
    assert_eq!(run_config(""), (Config::default(), Output::default()));
}

/// Goal: the issue's example command line parses to the intended configuration.
#[test]
fn memtier_style_line() {
    let line = "--server 127.0.0.1:11211 --protocol memcache --connections 50 --ratio 0:1 \
                --key-size 20 --value-size 20 --keyspace 10000 --duration 5s --json";
    let (config, output) = run_config(line);
    assert!(output.json && !output.quiet);
    assert_eq!(config.connections, 50);
    assert_eq!(config.workload.ratio, Ratio { sets: 0, gets: 1 });
    assert_eq!(config.stop, Stop::Duration(Duration::from_secs(5)));
    assert_eq!(config.pipeline, 1);
}

#[test]
fn other_flags() {
    let line = "-s a:1,b:2 -P resp --rate=1000 --key-distribution zipf:1.2 \
                --value-size 100:3,1000:1 --requests 500 --warmup 250ms --cpus 0,1 --preload \
                --ttl 60 --seed 42 --key-size 10-30 --ketama-names libmemcached -q";
    let (config, output) = run_config(line);
    assert_eq!(config.servers, vec!["a:1", "b:2"]);
    assert_eq!(config.protocol, Protocol::Resp);
    assert_eq!((config.rate_per_sec, config.pipeline), (Some(1000), 16));
    assert_eq!(config.workload.key_distribution, KeyDistribution::Zipf { exponent: 1.2 });
    assert_eq!(config.stop, Stop::Requests(500));
    assert_eq!(config.warmup, Duration::from_millis(250));
    assert_eq!(config.pin_cpus, vec![0, 1]);
    assert!(config.preload && output.quiet);
    assert_eq!((config.workload.ttl_secs, config.seed), (60, 42));
    assert_eq!((config.workload.key_size, config.workload.key_size_max), (10, 30));
    assert_eq!(config.ketama_names, KetamaNames::Libmemcached);
}

/// Goal: --structure and --fields reach the workload; the default is strings, 100 fields.
#[test]
fn structure_flags() {
    let (config, _) = run_config("-P resp --structure zset --fields 7");
    assert_eq!((config.workload.structure, config.workload.fields), (Structure::Zset, 7));
    assert_eq!(config.workload.ids(), 7 * config.workload.keyspace);
    let (plain, _) = run_config("");
    assert_eq!((plain.workload.structure, plain.workload.fields), (Structure::String, 100));
    assert_eq!(plain.workload.ids(), plain.workload.keyspace);
    assert!(error_line("--structure bitmap").contains("want string, hash"));
    assert!(error_line("--fields 0").contains("--fields"));
}

/// Goal: `memory` takes its lists and refuses what it cannot load.
#[test]
fn memory_flags() {
    let Ok(Command::Memory(o)) = parse_line("memory --connect r=127.0.0.1:1 --fields 10,1000")
    else {
        panic!("not memory");
    };
    assert_eq!((o.fields, o.keys), (vec![10, 1000], 1000));
    assert_eq!(o.connect, vec![("r".to_string(), "127.0.0.1:1".to_string())]);
    assert_eq!(o.structures, vec![Structure::Hash, Structure::Zset]);
    assert!(error_line("memory --structures list").contains("want hash, zset, stream or geo"));
    assert!(error_line("memory --servers memcached").contains("RESP"));
    assert!(error_line("memory --fields 100000 --field-size 3").contains("--field-size"));
}

/// Goal: the memtier-style spellings still work.
#[test]
fn aliases() {
    let (config, _) =
        run_config("--servers x:1 --clients 7 --data-size 32 --key-pattern seq --test-time 2s");
    assert_eq!((config.servers, config.connections), (vec!["x:1".to_string()], 7));
    assert_eq!(config.workload.value_sizes, ValueSizes::Fixed(32));
    assert_eq!(config.workload.key_distribution, KeyDistribution::Sequential);
    assert_eq!(config.stop, Stop::Duration(Duration::from_secs(2)));
}

/// Goal: usage errors are one line naming the flag (and the value), not a help page.
#[test]
fn errors_name_the_flag() {
    let line = error_line("--bogus");
    assert!(line.contains("--bogus") && !line.contains('\n'), "{line}");
    let line = error_line("--threads many");
    assert!(line.contains("--threads") && line.contains("many"), "{line}");
    assert!(error_line("--threads").contains("--threads"));
    assert!(error_line("--ratio 1-9").contains("SET:GET"));
    assert!(error_line("--key-distribution zipf:x").contains("zipf:S"));
    assert!(error_line("--duration 1s --requests 5").contains("--requests"));
    assert!(error_line("compare --bogus").contains("--bogus"));
    assert!(error_line("--json compare").contains("compare"));
    assert_eq!(cli_error("-h").0, ErrorKind::DisplayHelp);
    assert_eq!(cli_error("compare --help").0, ErrorKind::DisplayHelp);
}

/// Goal: help is grouped under headings and lists every flag.
#[test]
fn help_is_grouped() {
    let help = Cli::command().render_long_help().to_string();
    for heading in ["Servers:", "Load:", "Workload:", "Phases:", "Output:"] {
        assert!(help.contains(heading), "{heading} in {help}");
    }
    for flag in ["--server", "--pipeline", "--key-distribution", "--seed", "--requests", "--json"] {
        assert!(help.contains(flag), "{flag}");
    }
    let mut command = Cli::command();
    let compare = command.find_subcommand_mut("compare").unwrap().render_long_help().to_string();
    for text in ["Runs:", "Servers:", "CPUs:", "--quick", "--sweep-threads", "--out <DIR>"] {
        assert!(compare.contains(text), "{text} in {compare}");
    }
}

#[test]
fn durations() {
    assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
    assert!(parse_duration("x").is_err());
}
