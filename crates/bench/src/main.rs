//! `spinel-bench`: see `--help` and the `bench` library docs.

#![forbid(unsafe_code)]

use std::{io::IsTerminal, process::ExitCode};

use bench::{cli, compare, memory, report, runner};

fn main() -> ExitCode {
    let (config, output) = match cli::parse(std::env::args_os()) {
        Ok(cli::Command::Run(config, output)) => (config, output),
        Ok(cli::Command::Compare(options)) => return run_compare(&options),
        Ok(cli::Command::Memory(options)) => return run_memory(&options),
        Err(e) => return ExitCode::from(cli::exit_for(&e)),
    };
    let live = !output.quiet && std::io::stderr().is_terminal();
    let result = runner::run(&config, |interval| {
        if live {
            eprintln!("{}", report::live_line(interval));
        }
    });
    let summary = match result {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("spinel-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    if output.json {
        println!("{}", report::json(&summary));
    } else {
        print!("{}", report::text(&summary));
    }
    let counts = &summary.stats.counts;
    if counts.corrupt > 0 || counts.errors_total() > 0 {
        eprintln!(
            "spinel-bench: {} corrupt values, {} errors",
            counts.corrupt,
            counts.errors_total()
        );
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

/// `spinel-bench compare`: progress on stderr, the table on stdout.
fn run_compare(options: &compare::Options) -> ExitCode {
    match compare::run(options, &mut |line| eprintln!("{line}")) {
        Ok(outcome) => {
            print!("{}", outcome.markdown);
            if !outcome.sweep.is_empty() {
                println!();
                print!("{}", compare::report_md::sweep_markdown(&outcome.sweep));
            }
            for path in &outcome.files {
                eprintln!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("spinel-bench compare: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `spinel-bench memory`: progress on stderr, the table on stdout; fails if any server
/// could not be measured.
fn run_memory(options: &memory::Options) -> ExitCode {
    let mut failures = Vec::new();
    let rows = memory::run(options, &mut failures);
    print!("{}", memory::markdown(options, &rows));
    for failure in &failures {
        eprintln!("spinel-bench memory: {failure}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
