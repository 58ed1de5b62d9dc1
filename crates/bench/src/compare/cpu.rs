//! CPU accounting from /proc: a process's CPU time (`/proc/PID/stat`, utime + stime of all
//! its threads, exited ones included, in 10 ms ticks), a server's CPU time to the
//! nanosecond (`/proc/PID/task/*/schedstat`, its live threads), per-core busy time
//! (`/proc/stat`), and from those the CPU that *other* processes used on our cores during a
//! run ("foreign" CPU), which marks the run as disturbed.
//!
//! ```text
//!   foreign = busy(server and client cores) - CPU(our servers) - CPU(this process)
//!   busy    = user + nice + system          (idle, iowait, irq and softirq left out)
//!   noisy   = foreign > noise_pct of one core over the run, or steal > 2 %
//! ```
//!
//! irq and softirq time are left out of `busy` because loopback traffic is processed in
//! softirq context, and with IRQ time accounting that time is charged to no process: it
//! would otherwise show up as foreign CPU in every run.

use std::time::{Duration, Instant};

use nix::unistd::{sysconf, SysconfVar};

/// Steal above this share of the cores' time marks a run noisy (the hypervisor took CPU).
pub const STEAL_PCT_MAX: f64 = 2.0;

/// Clock ticks per second of /proc times (`sysconf(_SC_CLK_TCK)`; Linux reports USER_HZ,
/// 100).
pub fn ticks_per_sec() -> f64 {
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(ticks)) if ticks > 0 => ticks as f64,
        _ => 100.0,
    }
}

/// utime + stime, in ticks, from the text of `/proc/PID/stat`. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_pid_stat_ticks(text: &str) -> Option<u64> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// CPU seconds used so far by process `pid` (all threads), or `None` if it is gone.
pub fn process_cpu_secs(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(parse_pid_stat_ticks(&text)? as f64 / ticks_per_sec())
}

/// Nanoseconds on CPU, the first field of the text of a `/proc/PID/task/TID/schedstat`.
pub fn parse_schedstat_ns(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// CPU seconds used so far by the live threads of process `pid`, to the nanosecond
/// (schedstat), or, where the kernel has no schedstat, from `/proc/PID/stat` in ticks.
///
/// A server's threads live as long as it does, so the sum over live threads is its CPU time;
/// 10 ms ticks would be a coarse measure of a run that uses 0.1 to 1 CPU-s. Not for a
/// process whose threads come and go (the load generator): theirs vanish when they exit.
pub fn server_cpu_secs(pid: u32) -> Option<f64> {
    threads_cpu_ns(pid).map(|ns| ns as f64 / 1e9).or_else(|| process_cpu_secs(pid))
}

fn threads_cpu_ns(pid: u32) -> Option<u64> {
    let mut total_ns = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let path = task.ok()?.path().join("schedstat");
        // A thread that exited since the listing has nothing more to add.
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        total_ns += parse_schedstat_ns(&text)?;
    }
    Some(total_ns)
}

/// CPU seconds used so far by this process (the load generator, all threads).
pub fn self_cpu_secs() -> f64 {
    process_cpu_secs(std::process::id()).unwrap_or(0.0)
}

/// One core's counters from /proc/stat, in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreTimes {
    /// user + nice + system.
    pub busy: u64,
    pub steal: u64,
    /// All of the first eight fields.
    pub total: u64,
}

/// Per-core counters, indexed by CPU number (`None` for a CPU not listed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSnapshot {
    pub cores: Vec<Option<CoreTimes>>,
}

impl CpuSnapshot {
    /// Parses the text of /proc/stat; only the `cpuN` lines are read.
    pub fn parse(text: &str) -> CpuSnapshot {
        let mut cores: Vec<Option<CoreTimes>> = Vec::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let Some(name) = words.next() else { continue };
            let Some(index) = name.strip_prefix("cpu").and_then(|n| n.parse::<usize>().ok()) else {
                continue;
            };
            let v: Vec<u64> = words.take(8).filter_map(|w| w.parse().ok()).collect();
            if v.len() < 8 {
                continue;
            }
            let (user, nice, system, steal) = (v[0], v[1], v[2], v[7]);
            if cores.len() <= index {
                cores.resize(index + 1, None);
            }
            cores[index] =
                Some(CoreTimes { busy: user + nice + system, steal, total: v.iter().sum() });
        }
        CpuSnapshot { cores }
    }

    pub fn read() -> CpuSnapshot {
        CpuSnapshot::parse(&std::fs::read_to_string("/proc/stat").unwrap_or_default())
    }

    /// Counters of `later - self` summed over `cpus` (all CPUs when `cpus` is empty).
    pub fn delta(&self, later: &CpuSnapshot, cpus: &[usize]) -> CoreTimes {
        let all: Vec<usize> = (0..later.cores.len()).collect();
        let cpus = if cpus.is_empty() { &all[..] } else { cpus };
        let mut sum = CoreTimes::default();
        for &cpu in cpus {
            let (Some(Some(a)), Some(Some(b))) = (self.cores.get(cpu), later.cores.get(cpu)) else {
                continue;
            };
            sum.busy += b.busy.saturating_sub(a.busy);
            sum.steal += b.steal.saturating_sub(a.steal);
            sum.total += b.total.saturating_sub(a.total);
        }
        sum
    }
}

/// How disturbed a run was by other load on the machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// CPU used on our cores by anything but our servers and this process, in % of one
    /// core over the run.
    pub foreign_pct: f64,
    /// Steal time, in % of the cores' time.
    pub steal_pct: f64,
    pub noisy: bool,
}

/// Judges a run from /proc/stat before and after it, given the CPU seconds our own
/// processes used (`ours_secs`: the servers plus the load generator) over `wall`.
pub fn noise(
    before: &CpuSnapshot,
    after: &CpuSnapshot,
    cpus: &[usize],
    ours_secs: f64,
    wall: Duration,
    noise_pct_max: f64,
) -> Noise {
    let d = before.delta(after, cpus);
    let busy_secs = d.busy as f64 / ticks_per_sec();
    let wall_secs = wall.as_secs_f64().max(1e-3);
    let foreign_pct = 100.0 * (busy_secs - ours_secs).max(0.0) / wall_secs;
    let steal_pct = if d.total > 0 { 100.0 * d.steal as f64 / d.total as f64 } else { 0.0 };
    Noise {
        foreign_pct,
        steal_pct,
        noisy: foreign_pct > noise_pct_max || steal_pct > STEAL_PCT_MAX,
    }
}

/// Waits (at most `max_wait`) until the whole machine is idle: busy CPU over a quarter
/// second below `threshold_pct` of one core, after taking away `ours` (CPU seconds our
/// idle servers use, read by the closure at each try). Returns the seconds waited and
/// whether the machine was idle in the end.
pub fn wait_idle(
    max_wait: Duration,
    threshold_pct: f64,
    mut ours: impl FnMut() -> f64,
) -> (f64, bool) {
    let start = Instant::now();
    let window = Duration::from_millis(250);
    loop {
        let (a, ours_a) = (CpuSnapshot::read(), ours());
        std::thread::sleep(window);
        let (b, ours_b) = (CpuSnapshot::read(), ours());
        let busy = a.delta(&b, &[]).busy as f64 / ticks_per_sec() - (ours_b - ours_a);
        let busy_pct = 100.0 * busy.max(0.0) / window.as_secs_f64();
        let waited = start.elapsed();
        if busy_pct < threshold_pct {
            return (waited.as_secs_f64(), true);
        }
        if waited >= max_wait {
            return (waited.as_secs_f64(), false);
        }
        std::thread::sleep(window);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(cores: &[[u64; 8]]) -> String {
        let mut text = String::from("cpu  1 2 3 4 5 6 7 8 0 0\n");
        for (i, c) in cores.iter().enumerate() {
            let fields: Vec<String> = c.iter().map(u64::to_string).collect();
            text.push_str(&format!("cpu{i} {} 0 0\n", fields.join(" ")));
        }
        text.push_str("intr 12345 0 0\nctxt 99\n");
        text
    }

    /// Goal: the stat parser reads utime+stime after a command name with spaces and ")".
    #[test]
    fn pid_stat_fields() {
        let text = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 70 0 0 20 0 \
                    3 0 100 1000000 200 18446744073709551615";
        assert_eq!(parse_pid_stat_ticks(text), Some(320));
        assert_eq!(parse_pid_stat_ticks("garbage"), None);
        assert!(process_cpu_secs(std::process::id()).is_some());
    }

    /// Goal: schedstat gives a thread's time on CPU in nanoseconds, and a process's live
    /// threads add up to at least what a busy thread of ours just used. Method: a second
    /// thread spins until its own schedstat says 30 ms, and is still alive when we read.
    /// The total is checked against 30 ms, not against a reading taken before: other tests
    /// run on threads of this process, and one that exits in between takes its time along.
    #[test]
    fn schedstat_counts_live_threads() {
        assert_eq!(parse_schedstat_ns("123456789 2000 17\n"), Some(123_456_789));
        assert_eq!(parse_schedstat_ns(""), None);
        let own_ns = || {
            let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
            parse_schedstat_ns(&text).unwrap()
        };
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (spun_tx, spun_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            while own_ns() < 30_000_000 {
                std::hint::spin_loop();
            }
            spun_tx.send(()).unwrap();
            let _ = done_rx.recv();
        });
        spun_rx.recv().unwrap();
        let after = server_cpu_secs(std::process::id()).expect("our own process");
        done_tx.send(()).unwrap();
        spinner.join().unwrap();
        assert!(after >= 0.03, "live threads add up to {after} s");
    }

    /// Goal: /proc/stat parsing keeps per-core counters and ignores the aggregate line.
    #[test]
    fn proc_stat_parse_and_delta() {
        let a =
            CpuSnapshot::parse(&stat(&[[10, 1, 5, 100, 3, 0, 7, 0], [0, 0, 0, 50, 0, 0, 0, 2]]));
        assert_eq!(a.cores.len(), 2);
        assert_eq!(a.cores[0], Some(CoreTimes { busy: 16, steal: 0, total: 126 }));
        let b =
            CpuSnapshot::parse(&stat(&[[20, 1, 5, 190, 3, 0, 9, 0], [30, 0, 10, 60, 0, 0, 0, 2]]));
        assert_eq!(a.delta(&b, &[0]), CoreTimes { busy: 10, steal: 0, total: 102 });
        assert_eq!(a.delta(&b, &[1]).busy, 40);
        assert_eq!(a.delta(&b, &[]).busy, 50);
        assert_eq!(a.delta(&b, &[7]), CoreTimes::default(), "an unknown CPU adds nothing");
    }

    /// Goal: a run is noisy exactly when CPU beyond ours shows up on our cores. Method:
    /// synthetic /proc/stat samples 1 s apart (100 ticks) where server + client used 1.5
    /// CPU-s, with and without another process's extra load, and with steal.
    #[test]
    fn noisy_run_detection() {
        let ticks = ticks_per_sec() as u64;
        let before = CpuSnapshot::parse(&stat(&[[0; 8], [0; 8]]));
        let quiet = CpuSnapshot::parse(&stat(&[
            [ticks / 2, 0, 0, ticks / 2, 0, 0, 0, 0],
            [ticks * 3 / 4, 0, ticks / 4, 0, 0, 0, 0, 0],
        ]));
        let one_sec = Duration::from_secs(1);
        let n = noise(&before, &quiet, &[0, 1], 1.5, one_sec, 5.0);
        assert!(!n.noisy && n.foreign_pct.abs() < 1e-9, "{n:?}");
        // Another process took 30 % of core 0 on top of ours.
        let loud = CpuSnapshot::parse(&stat(&[
            [ticks / 2 + ticks * 3 / 10, 0, 0, ticks / 5, 0, 0, 0, 0],
            [ticks * 3 / 4, 0, ticks / 4, 0, 0, 0, 0, 0],
        ]));
        let n = noise(&before, &loud, &[0, 1], 1.5, one_sec, 5.0);
        assert!(n.noisy && (n.foreign_pct - 30.0).abs() < 1.5, "{n:?}");
        // The same load on a core we do not use does not count.
        let n = noise(&before, &loud, &[1], 1.0, one_sec, 5.0);
        assert!(!n.noisy, "{n:?}");
        // Softirq (loopback traffic) is not foreign; steal is its own reason.
        let stolen = CpuSnapshot::parse(&stat(&[
            [ticks / 2, 0, 0, ticks / 4, 0, 0, ticks / 5, ticks / 20],
            [ticks, 0, 0, 0, 0, 0, 0, 0],
        ]));
        let n = noise(&before, &stolen, &[0, 1], 1.5, one_sec, 5.0);
        assert!(n.foreign_pct < 1.0 && n.steal_pct > 2.0 && n.noisy, "{n:?}");
    }
}
