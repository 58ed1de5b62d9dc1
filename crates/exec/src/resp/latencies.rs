//! LATENCY: HELP, LATEST, HISTORY and RESET (the latency monitor's events, kept by
//! `slowlog`), HISTOGRAM (per-command latency, from `crate::latency`'s figures) and DOCTOR
//! (Redis's report on the events, with the advice that applies to Spinel's).
//!
//! HISTOGRAM's `calls` are exact; its `histogram_usec` counts the calls that were timed,
//! one in `latency::SAMPLE` of each command (Redis times every call; Spinel does not, see
//! `crate::latency`), cumulative, under the keys Redis reports its levels by.

use proto_resp::SubcommandId;

use super::{config_kept, help, slowlog, Ctx};
use crate::Shared;

pub(super) fn run(ctx: &mut Ctx<'_>, id: SubcommandId) {
    use SubcommandId as S;
    match id {
        S::LatencyLatest => slowlog::latest(ctx),
        S::LatencyHistory => slowlog::history(ctx),
        S::LatencyReset => slowlog::latency_reset(ctx),
        S::LatencyHistogram => histogram(ctx),
        S::LatencyDoctor => doctor(ctx),
        _ => help::reply(ctx, help::LATENCY),
    }
}

/// LATENCY HISTOGRAM [command ...]: every command called since CONFIG RESETSTAT, or those
/// named (a container stands for its subcommands; unknown names are skipped), each with its
/// calls and latency histogram. None while `latency-tracking` is off, as in Redis.
fn histogram(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let tracking = config_kept::value(shared, "latency-tracking") == "yes";
    let stats = if tracking { shared.core.command_stats_since_reset() } else { Vec::new() };
    let named: Vec<Vec<u8>> = (2..ctx.argc()).map(|at| ctx.arg(at).to_ascii_lowercase()).collect();
    let mut rows: Vec<(&'static str, &crate::latency::Summary)> = Vec::new();
    let name_of = |slot: &usize| proto_resp::commands::stat_name(*slot);
    if named.is_empty() {
        rows.extend(stats.iter().filter_map(|(slot, sum)| Some((name_of(slot)?, sum))));
    }
    for name in &named {
        for (slot, sum) in &stats {
            let Some(shown) = name_of(slot) else { continue };
            let container = shown.split_once('|').map(|(c, _)| c.as_bytes());
            if shown.as_bytes() == name.as_slice() || container == Some(name.as_slice()) {
                rows.push((shown, sum));
            }
        }
    }
    let mut reply = ctx.reply();
    reply.map(rows.len());
    for (name, sum) in rows {
        reply.bulk(name.as_bytes());
        reply.map(2);
        reply.bulk(b"calls");
        reply.integer(sum.calls as i64);
        reply.bulk(b"histogram_usec");
        let levels = redis_levels(&sum.buckets);
        reply.map(levels.iter().filter(|(_, n)| *n > 0).count());
        let mut cumulative = 0;
        for (key_us, count) in levels.into_iter().filter(|(_, n)| *n > 0) {
            cumulative += count;
            reply.integer(key_us as i64);
            reply.integer(cumulative as i64);
        }
    }
}

/// Redis's last reporting level: durations are capped at one second, which falls in the
/// level of 1024 × 2^20 ns.
const LAST_LEVEL: usize = 20;

/// Spinel's buckets (up to 2^b µs) as Redis's reporting levels (up to 1024 × 2^b ns, with
/// the time past one second in the last), each under the key Redis shows it by: the
/// level's highest equivalent value in its histogram of two significant digits, 1032 ×
/// 2^b - 1 ns, in whole microseconds (1, 2, 4, 8, 16, 33, 66, 132 ...).
fn redis_levels(buckets: &[u64]) -> Vec<(u64, u64)> {
    let mut levels: Vec<(u64, u64)> =
        (0..=LAST_LEVEL).map(|b| (((1032u64 << b) - 1) / 1000, 0)).collect();
    for (bucket, count) in buckets.iter().enumerate() {
        levels[bucket.min(LAST_LEVEL)].1 += count;
    }
    levels
}

/// LATENCY DOCTOR: Redis's report, as verbatim text.
fn doctor(ctx: &mut Ctx<'_>) {
    let report = report(ctx.shared);
    ctx.reply().verbatim(b"txt", report.as_bytes());
}

fn report(shared: &Shared) -> String {
    let events = slowlog::events(shared);
    let threshold_ms =
        shared.redis.slowlog.latency_threshold_ms.load(std::sync::atomic::Ordering::Relaxed);
    if events.is_empty() && threshold_ms == 0 {
        return DISABLED.into();
    }
    let now_secs = super::now_unix_ms(shared) / 1000;
    let mut text = String::new();
    let mut advice = Advice::default();
    for (number, (name, samples, max_ms)) in events.iter().enumerate() {
        if number == 0 {
            text.push_str(SPIKES);
        }
        text.push_str(&event_line(number + 1, name, samples, *max_ms, now_secs));
        advice.note(name, shared, threshold_ms);
        text.push('\n');
    }
    advice.disable_thp = anon_huge_pages_bytes() > 0;
    let advices = advice.lines(shared, threshold_ms);
    match (events.is_empty(), advices.is_empty()) {
        (true, true) => text.push_str(NOTHING),
        (false, true) => text.push_str(NO_FIX),
        _ => {
            text.push_str("\nI have a few advices for you:\n\n");
            advices.iter().for_each(|line| text.push_str(line));
        }
    }
    text
}

/// One event's line: its samples' count, average and mean deviation, how often, the worst.
fn event_line(number: usize, name: &str, samples: &[(u64, u64)], max_ms: u64, now: u64) -> String {
    let count = samples.len() as u64;
    let avg = samples.iter().map(|(_, ms)| ms).sum::<u64>().checked_div(count).unwrap_or(0);
    let mad = samples
        .iter()
        .map(|(_, ms)| avg.abs_diff(*ms))
        .sum::<u64>()
        .checked_div(count)
        .unwrap_or(0);
    let oldest = samples.iter().map(|(secs, _)| *secs).min().unwrap_or(now);
    let period = now.saturating_sub(oldest).max(1);
    let per_sample = period as f64 / count as f64;
    format!(
        "{number}. {name}: {count} latency spikes (average {avg}ms, mean deviation {mad}ms, \
         period {per_sample:.2} sec). Worst all time event {max_ms}ms."
    )
}

/// Which of Redis's advices the events call for.
#[derive(Default)]
struct Advice {
    slowlog_enabled: bool,
    slowlog_tuning: bool,
    slowlog_inspect: bool,
    scheduler: bool,
    hz: bool,
    large_objects: bool,
    disable_thp: bool,
}

impl Advice {
    fn note(&mut self, event: &str, shared: &Shared, threshold_ms: u64) {
        match event {
            "command" => {
                let slower_than =
                    shared.redis.slowlog.slower_than_us.load(std::sync::atomic::Ordering::Relaxed);
                self.slowlog_enabled |= slower_than < 0;
                self.slowlog_tuning |=
                    slower_than >= 0 && (slower_than / 1000) as u64 > threshold_ms;
                self.slowlog_inspect = true;
                self.large_objects = true;
            }
            "fast-command" => self.scheduler = true,
            "expire-cycle" => {
                self.hz = true;
                self.large_objects = true;
            }
            _ => {}
        }
    }

    /// The advice paragraphs, in Redis's order.
    fn lines(&self, shared: &Shared, threshold_ms: u64) -> Vec<String> {
        let mut out = Vec::new();
        let threshold_us = threshold_ms * 1000;
        if self.slowlog_enabled {
            out.push(format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {threshold_us}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"));
        }
        if self.slowlog_tuning {
            out.push(format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {threshold_us}'.\n"));
        }
        if self.slowlog_inspect {
            out.push("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n".into());
        }
        if self.scheduler {
            out.push(SCHEDULER.into());
        }
        let hz = config_kept::value(shared, "hz").parse::<u64>().unwrap_or(10);
        if self.hz && hz < 100 {
            out.push("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n".into());
        }
        if self.large_objects {
            out.push("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n".into());
        }
        if self.disable_thp {
            out.push(THP.into());
        }
        out
    }
}

/// The process's anonymous huge pages (`/proc/self/smaps_rollup`), as Redis checks them.
fn anon_huge_pages_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/smaps_rollup") else { return 0 };
    text.lines()
        .filter_map(|line| line.strip_prefix("AnonHugePages:"))
        .filter_map(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}

const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";
const SPIKES: &str = "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n";
const NOTHING: &str = "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n";
const NO_FIX: &str = "\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n";
const SCHEDULER: &str = "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n";
const THP: &str = "- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n";

#[cfg(test)]
mod tests {
    /// Goal: Redis's level keys, and time past a second in the last level.
    #[test]
    fn levels() {
        let mut buckets = vec![0; 25];
        (buckets[0], buckets[5], buckets[6], buckets[24]) = (1, 2, 3, 4);
        let levels = super::redis_levels(&buckets);
        let keys: Vec<u64> = levels.iter().take(8).map(|(key, _)| *key).collect();
        assert_eq!(keys, [1, 2, 4, 8, 16, 33, 66, 132]);
        assert_eq!(levels[20], (1_082_130, 4));
        assert_eq!((levels[5].1, levels[6].1), (2, 3));
    }
}
