//! Whether io_uring can carry the loops, asked once before any loop starts.
//!
//! The probe asks what the loops will ask, all at once: one full-size ring per loop, each
//! with its receive-buffer ring registered and one `io_uring_enter` that completes a no-op.
//! So a seccomp filter that lets `io_uring_setup` through but refuses `io_uring_enter` or
//! `io_uring_register` (a partial filter), or a memory limit that allows one ring but not
//! eight, shows here, where `--io auto` can still choose epoll for every loop alike, and not
//! in a worker of a server that already serves.

use std::{io, time::Duration};

use io_uring::{
    opcode,
    types::{SubmitArgs, Timespec},
    IoUring, Probe,
};

use super::{bufring::BufRing, build_ring, BUF_GROUP, SQ_ENTRIES};
use crate::UringNeeds;

/// How long the probe's no-op may take to complete (it completes inline; this only guards
/// against a wait that never ends).
const NOP_WAIT: Duration = Duration::from_secs(1);

/// See [`crate::probe_uring_for`].
///
/// The rings live on a helper thread: tearing a ring down leaves work for the thread that
/// used it, which later interrupts that thread's next blocking socket call (a `recv` with
/// SO_RCVTIMEO fails with EINTR; seen on Linux 6.18). The caller's thread stays clean.
pub(crate) fn probe(needs: UringNeeds) -> Result<(), String> {
    std::thread::Builder::new()
        .name("rt-uring-probe".into())
        .spawn(move || probe_here(needs))
        .map_err(|e| format!("cannot start the io_uring probe thread: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the io_uring probe panicked".into()))
}

fn probe_here(needs: UringNeeds) -> Result<(), String> {
    let loops = needs.loops.max(1);
    let mut held: Vec<(IoUring, BufRing)> = Vec::with_capacity(loops);
    let mut outcome = Ok(());
    for index in 0..loops {
        // Only a later ring's failure says which: the first stands for "any ring".
        let which =
            if index > 0 { format!(" (at ring {} of {loops})", index + 1) } else { "".into() };
        match one_ring(&needs, index == 0) {
            Ok(pair) => held.push(pair),
            Err(why) => {
                outcome = Err(format!("{why}{which}"));
                break;
            }
        }
    }
    for (ring, mut bufs) in held {
        // Unregistered, the memory is ours again; otherwise it is leaked (see `BufRing`).
        if ring.submitter().unregister_buf_ring(BUF_GROUP).is_ok() {
            bufs.free();
        }
    }
    outcome
}

/// One loop's ring, as `Uring::new` makes it, with its buffer ring, after one enter; the
/// first also checks the features and opcodes the driver uses.
fn one_ring(needs: &UringNeeds, check_features: bool) -> Result<(IoUring, BufRing), String> {
    let mut ring = build_ring(SQ_ENTRIES).map_err(|e| refused("io_uring_setup", &e))?;
    if check_features {
        check_kernel(&ring)?;
    }
    let mut bufs = BufRing::new(&ring.submitter(), needs.recv_buffers, needs.recv_buffer_bytes)
        .map_err(|e| refused("io_uring_register (receive-buffer ring)", &e))?;
    if let Err(why) = enter_nop(&mut ring) {
        if ring.submitter().unregister_buf_ring(BUF_GROUP).is_ok() {
            bufs.free();
        }
        return Err(why);
    }
    Ok((ring, bufs))
}

/// The features and opcodes the driver relies on.
fn check_kernel(ring: &IoUring) -> Result<(), String> {
    if !ring.params().is_feature_ext_arg() {
        return Err("kernel lacks IORING_FEAT_EXT_ARG (timed waits; Linux 5.11+)".into());
    }
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| refused("io_uring_register (opcode probe)", &e))?;
    let needed = [
        (opcode::AcceptMulti::CODE, "accept"),
        (opcode::RecvMulti::CODE, "recv"),
        (opcode::Send::CODE, "send"),
        (opcode::AsyncCancel::CODE, "async cancel"),
        (opcode::Close::CODE, "close"),
        (opcode::PollAdd::CODE, "poll"),
        // Multishot receive (6.0) has no opcode of its own; SEND_ZC arrived in the same
        // release, so its presence stands for it.
        (opcode::SendZc::CODE, "send_zc (stands for multishot recv, Linux 6.0+)"),
    ];
    match needed.iter().find(|(code, _)| !probe.is_supported(*code)) {
        Some((_, name)) => Err(format!("io_uring lacks the {name} opcode")),
        None => Ok(()),
    }
}

/// Submits a no-op and waits for its completion: `io_uring_enter` as the loop calls it.
fn enter_nop(ring: &mut IoUring) -> Result<(), String> {
    let nop = opcode::Nop::new().build().user_data(1);
    // SAFETY: a no-op refers to no memory.
    unsafe { ring.submission().push(&nop) }.map_err(|_| "io_uring: the new ring is full")?;
    let ts = Timespec::from(NOP_WAIT);
    let args = SubmitArgs::new().timespec(&ts);
    ring.submitter().submit_with_args(1, &args).map_err(|e| refused("io_uring_enter", &e))?;
    match ring.completion().next() {
        Some(cqe) if cqe.result() >= 0 => Ok(()),
        Some(cqe) => Err(refused("io_uring no-op", &io::Error::from_raw_os_error(-cqe.result()))),
        None => Err("io_uring_enter: the no-op did not complete".into()),
    }
}

/// Why `call` failed, in words an operator can act on: the errno's name, and who refuses.
pub(super) fn refused(call: &str, e: &io::Error) -> String {
    let Some(code) = e.raw_os_error() else { return format!("{call} failed: {e}") };
    let name = errno_name(code);
    match code {
        libc::EPERM | libc::EACCES => format!("{call} refused ({name}): {}", who_refuses()),
        libc::ENOSYS => format!(
            "{call} not available (ENOSYS): {}",
            if seccomp_filtered() {
                SECCOMP_CAUSE
            } else {
                "the kernel was built without io_uring, or a seccomp filter hides it"
            }
        ),
        libc::ENOMEM => format!(
            "{call} failed (ENOMEM): not enough locked or kernel memory for the loops' rings \
             (fewer threads, -t, need less; or raise RLIMIT_MEMLOCK / the memory limit)"
        ),
        _ => format!("{call} failed ({name}): {e}"),
    }
}

const SECCOMP_CAUSE: &str = "a seccomp filter refuses it, as container runtimes' default \
                             profiles do (contrib/seccomp-io-uring.json allows it)";

/// EPERM from an io_uring call: the sysctl, a seccomp filter, or a security module.
fn who_refuses() -> String {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    match disabled {
        Some(2) => "the sysctl kernel.io_uring_disabled = 2 turns io_uring off".into(),
        Some(1) if !seccomp_filtered() => "the sysctl kernel.io_uring_disabled = 1 allows \
                                           io_uring only to kernel.io_uring_group"
            .into(),
        _ if seccomp_filtered() => SECCOMP_CAUSE.into(),
        _ => "a security module (SELinux, AppArmor) or a seccomp filter refuses it".into(),
    }
}

/// Whether a seccomp filter is in force on this process (`Seccomp: 2` in its status).
fn seccomp_filtered() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.strip_prefix("Seccomp:").is_some_and(|mode| mode.trim() == "2"))
    })
}

/// The symbolic name of the errors io_uring set-up can meet, else the number.
fn errno_name(code: i32) -> String {
    let name = match code {
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::ENOSYS => "ENOSYS",
        libc::ENOMEM => "ENOMEM",
        libc::EINVAL => "EINVAL",
        libc::EFAULT => "EFAULT",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::EAGAIN => "EAGAIN",
        libc::EBUSY => "EBUSY",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETIME => "ETIME",
        _ => return format!("errno {code}"),
    };
    name.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_their_errno_and_call() {
        let eperm = refused("io_uring_enter", &io::Error::from_raw_os_error(libc::EPERM));
        assert!(eperm.starts_with("io_uring_enter refused (EPERM): "), "{eperm}");
        let enosys = refused("io_uring_setup", &io::Error::from_raw_os_error(libc::ENOSYS));
        assert!(enosys.starts_with("io_uring_setup not available (ENOSYS): "), "{enosys}");
        let odd = refused("io_uring_setup", &io::Error::from_raw_os_error(9999));
        assert!(odd.starts_with("io_uring_setup failed (errno 9999): "), "{odd}");
    }
}
