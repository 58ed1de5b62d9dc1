//! Thin wrappers over the system calls both drivers share: sockets, addresses, CPU pinning.
//!
//! Every `unsafe` here is a single libc call on plain values or on memory this module owns for
//! the duration of the call; nothing outlives the call.

use std::{
    io,
    mem::{size_of, MaybeUninit},
    net::{SocketAddr, SocketAddrV4, SocketAddrV6, TcpListener},
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
};

/// Turns a libc return value into `io::Result`, reading `errno` on -1.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Sets an integer socket option.
fn set_int_option(fd: RawFd, level: libc::c_int, name: libc::c_int, value: i32) -> io::Result<()> {
    // SAFETY: `value` lives on the stack for the whole call and the length passed is its size.
    let ret = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    check(ret).map(drop)
}

/// A `sockaddr_storage` filled from `addr`, and the length that is valid in it.
fn sockaddr_from(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero bytes are a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for every sockaddr type.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for every sockaddr type.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Reads a socket address the kernel wrote into `storage`; `None` for families other than
/// IPv4 and IPv6 (or a short length).
pub(crate) fn sockaddr_to(
    storage: &libc::sockaddr_storage,
    len: libc::socklen_t,
) -> Option<SocketAddr> {
    let len = len as usize;
    match storage.ss_family as libc::c_int {
        libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, and storage is aligned
            // for it.
            let sin =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a sockaddr_in6, and storage is aligned
            // for it.
            let sin6 = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                port,
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// See [`crate::listen`].
pub(crate) fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let owned = bound_socket(addr, true)?;
    let backlog = backlog.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: plain system call on integer arguments.
    check(unsafe { libc::listen(owned.as_raw_fd(), backlog) })?;
    Ok(TcpListener::from(owned))
}

/// See [`crate::probe_exclusive`].
pub(crate) fn probe_exclusive(addr: SocketAddr) -> io::Result<SocketAddr> {
    // Never listening, it has no queue in which a client's connection could wait, to be
    // reset when the probe closes.
    TcpListener::from(bound_socket(addr, false)?).local_addr()
}

/// A TCP socket bound to `addr` with SO_REUSEADDR (and SO_REUSEPORT when `reuse_port`).
fn bound_socket(addr: SocketAddr, reuse_port: bool) -> io::Result<OwnedFd> {
    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    let flags = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: plain system call on integer arguments.
    let fd = check(unsafe { libc::socket(domain, flags, 0) })?;
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if reuse_port {
        set_int_option(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    let (storage, len) = sockaddr_from(&addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes for the whole call.
    check(unsafe { libc::bind(fd, (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    Ok(owned)
}

/// See [`crate::pin_current_thread`].
pub(crate) fn pin_current_thread(cpu: usize) -> io::Result<()> {
    let bits = 8 * size_of::<libc::cpu_set_t>();
    if cpu >= bits {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("cpu {cpu} >= {bits}")));
    }
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { MaybeUninit::zeroed().assume_init() };
    // SAFETY: `cpu` is below the set's capacity (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    check(unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) }).map(drop)
}

/// Disables Nagle on an accepted socket: replies must leave at once, not wait for an ACK.
pub(crate) fn set_nodelay(fd: RawFd) -> io::Result<()> {
    set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
}

/// The peer address of a connected socket.
pub(crate) fn peer_addr(fd: RawFd) -> Option<SocketAddr> {
    // SAFETY: sockaddr_storage is plain old data; all-zero bytes are a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `storage` and `len` are valid for writes for the whole call; `len` says how
    // many bytes the kernel may write.
    let ret = unsafe {
        libc::getpeername(fd, (&mut storage as *mut libc::sockaddr_storage).cast(), &mut len)
    };
    check(ret).ok().and_then(|_| sockaddr_to(&storage, len))
}

/// accept4(2) with a non-blocking, close-on-exec result.
pub(crate) fn accept(listener: RawFd) -> io::Result<(RawFd, Option<SocketAddr>)> {
    // SAFETY: sockaddr_storage is plain old data; all-zero bytes are a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: `storage` and `len` are valid for writes for the whole call.
    let fd = check(unsafe {
        libc::accept4(
            listener,
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
            flags,
        )
    })?;
    Ok((fd, sockaddr_to(&storage, len)))
}

/// recv(2) into `buf`; `Ok(0)` is the peer's end of stream.
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call.
    check_size(unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) })
}

/// send(2) that neither blocks nor raises SIGPIPE.
pub(crate) fn send_nowait(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole call.
    check_size(unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags) })
}

/// sendmsg(2) of `iov` in order, neither blocking nor raising SIGPIPE.
pub(crate) fn sendmsg_nowait(fd: RawFd, iov: &[std::io::IoSlice<'_>]) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: an all-zero msghdr is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` is ABI-compatible with `iovec` on Unix; the kernel only reads through it.
    msg.msg_iov = iov.as_ptr().cast_mut().cast();
    msg.msg_iovlen = iov.len() as _;
    // SAFETY: `msg` points at `iov.len()` iovecs, each valid for reads of its length, for
    // the whole call.
    check_size(unsafe { libc::sendmsg(fd, &msg, flags) })
}

/// `SO_ZEROCOPY` (asm-generic/socket.h; not in `libc`).
const SO_ZEROCOPY: libc::c_int = 60;
/// `sock_extended_err::ee_origin` of a zero-copy notification.
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `sock_extended_err::ee_code` bit: the kernel copied the bytes after all.
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// Lets `fd` take `MSG_ZEROCOPY` sends (setsockopt `SO_ZEROCOPY`).
pub(crate) fn enable_zerocopy(fd: RawFd) -> io::Result<()> {
    set_int_option(fd, libc::SOL_SOCKET, SO_ZEROCOPY, 1)
}

/// [`sendmsg_nowait`] with `MSG_ZEROCOPY`: the kernel sends from the pages of `iov` and
/// reports on the socket's error queue when it no longer needs them ([`zerocopy_done`]).
pub(crate) fn sendmsg_zerocopy(fd: RawFd, iov: &[std::io::IoSlice<'_>]) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL | libc::MSG_ZEROCOPY;
    // SAFETY: an all-zero msghdr is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_ptr().cast_mut().cast();
    msg.msg_iovlen = iov.len() as _;
    // SAFETY: as in `sendmsg_nowait`; the pages stay the caller's business until the
    // notification (the kernel holds references to them, so nothing here can fault).
    check_size(unsafe { libc::sendmsg(fd, &msg, flags) })
}

/// A zero-copy notification: the sends numbered `first..=last` (counted per socket from 0,
/// one number per `MSG_ZEROCOPY` sendmsg that took bytes) are done with their pages;
/// `copied` when the kernel copied them anyway (loopback always does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ZerocopyDone {
    pub first: u32,
    pub last: u32,
    pub copied: bool,
}

/// Takes one notification from `fd`'s error queue without waiting: `Ok(None)` when the
/// queue is empty; other messages there (none are expected on a TCP socket) are skipped.
pub(crate) fn zerocopy_done(fd: RawFd) -> io::Result<Option<ZerocopyDone>> {
    // u64s: aligned for the cmsghdr the kernel writes at the start.
    let mut control = [0u64; 16];
    loop {
        // SAFETY: an all-zero msghdr is valid; no data buffer is needed for the error queue.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
        // SAFETY: `msg` points at `control`, valid for writes of its length for the call.
        match check_size(unsafe { libc::recvmsg(fd, &mut msg, flags) }) {
            Err(e) if is_would_block(&e) => return Ok(None),
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        // SAFETY: `msg` was filled by the kernel; CMSG_FIRSTHDR/NXTHDR stay within
        // `msg_controllen`, and each cmsg's data holds `cmsg_len` bytes.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cmsg.is_null() {
            // SAFETY: non-null and within the control buffer (above).
            let header = unsafe { &*cmsg };
            let ip = (header.cmsg_level == libc::SOL_IP && header.cmsg_type == libc::IP_RECVERR)
                || (header.cmsg_level == libc::SOL_IPV6 && header.cmsg_type == libc::IPV6_RECVERR);
            if ip {
                // SAFETY: an IP_RECVERR cmsg carries a sock_extended_err (unaligned read).
                let err: libc::sock_extended_err =
                    unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
                if err.ee_errno == 0 && err.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                    let copied = err.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0;
                    return Ok(Some(ZerocopyDone {
                        first: err.ee_info,
                        last: err.ee_data,
                        copied,
                    }));
                }
            }
            // SAFETY: as above.
            cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
        }
    }
}

/// How many bytes a send on the TCP socket `fd` would put on the wire at once: the peer's
/// advertised window when nothing is queued or unacknowledged, else 0 (also 0 when the
/// kernel does not say: `tcpi_snd_wnd` came with Linux 5.4).
pub(crate) fn tcp_send_room(fd: RawFd) -> usize {
    // struct tcp_info (linux/tcp.h): tcpi_unacked at 24, tcpi_notsent_bytes at 144,
    // tcpi_snd_wnd at 228, 232 bytes in all; read as u32s.
    let mut info = [0u32; 58];
    let mut len = size_of_val(&info) as libc::socklen_t;
    // SAFETY: `info` and `len` are valid for writes of their sizes for the whole call.
    let ret = unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, info.as_mut_ptr().cast(), &mut len)
    };
    if ret < 0 || (len as usize) < size_of_val(&info) {
        return 0;
    }
    let (unacked, notsent, window) = (info[24 / 4], info[144 / 4], info[228 / 4]);
    if unacked > 0 || notsent > 0 {
        return 0;
    }
    window as usize
}

/// The socket's pending error (SO_ERROR, which clears it); 0 when none.
pub(crate) fn socket_error(fd: RawFd) -> i32 {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes of their sizes for the whole call.
    let ret = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, (&raw mut value).cast(), &mut len)
    };
    if ret < 0 {
        return io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
    }
    value
}

/// Makes the next close of `fd` reset the connection (SO_LINGER, zero seconds): the
/// kernel drops what it has not sent, and with it its hold on zero-copied pages.
pub(crate) fn set_abortive_close(fd: RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: `linger` is valid for reads of its size for the whole call. An error leaves
    // an ordinary close, which is still correct.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            std::mem::size_of_val(&linger) as libc::socklen_t,
        )
    };
}

/// Ends the writing half of `fd` (the peer reads the end of the stream once it has read
/// what is queued) while keeping the descriptor open.
pub(crate) fn shutdown_write(fd: RawFd) {
    // SAFETY: shutdown(2) touches no memory; an error (not connected) changes nothing.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

/// Closes a descriptor the caller owns and no pending kernel operation uses.
pub(crate) fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and drops it here; close errors on sockets carry no data
    // to recover, so the result is ignored.
    unsafe { libc::close(fd) };
}

/// Shuts a connected socket down both ways, without closing it: its loop then reads the
/// end of the stream and closes it as it would any connection the peer ended.
pub(crate) fn shutdown(fd: RawFd) {
    // SAFETY: shutdown(2) only acts on the socket `fd` names and touches no memory; the
    // caller guarantees `fd` still names the connection it means (see
    // `crate::shutdown_connection`). An error (not a socket, not connected) changes nothing.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// Sends `line` without waiting (the refusal of [`crate::Handler::accept`]) and closes.
pub(crate) fn refuse(fd: RawFd, line: &[u8]) {
    let _ = send_nowait(fd, line);
    close(fd);
}

/// A new epoll instance.
pub(crate) fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: plain system call on an integer argument.
    let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by epoll_create1 and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// epoll_ctl(2) with `events` and `token` as the event's data.
pub(crate) fn epoll_ctl(
    epfd: RawFd,
    op: libc::c_int,
    fd: RawFd,
    events: u32,
    token: u64,
) -> io::Result<()> {
    let mut event = libc::epoll_event { events, u64: token };
    // SAFETY: `event` is valid for the whole call (the kernel copies it).
    check(unsafe { libc::epoll_ctl(epfd, op, fd, &mut event) }).map(drop)
}

/// epoll_wait(2) into `events` (its spare capacity); `events` holds the ready ones after.
pub(crate) fn epoll_wait(
    epfd: RawFd,
    events: &mut Vec<libc::epoll_event>,
    timeout_ms: i32,
) -> io::Result<()> {
    events.clear();
    let capacity = events.capacity().min(i32::MAX as usize) as libc::c_int;
    // SAFETY: the kernel writes at most `capacity` events into the vector's spare capacity.
    let n = unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), capacity, timeout_ms) };
    match check(n) {
        Ok(n) => {
            // SAFETY: the kernel initialised the first `n` entries (n <= capacity).
            unsafe { events.set_len(n as usize) };
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        Err(e) => Err(e),
    }
}

/// epoll_pwait2(2): epoll_wait with a nanosecond timeout (Linux 5.11+; ENOSYS before).
pub(crate) fn epoll_pwait2(
    epfd: RawFd,
    events: &mut Vec<libc::epoll_event>,
    timeout: std::time::Duration,
) -> io::Result<()> {
    events.clear();
    let capacity = events.capacity().min(i32::MAX as usize) as libc::c_int;
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: the kernel writes at most `capacity` events into the vector's spare capacity;
    // `ts` lives for the whole call; a null signal mask means "leave the mask alone".
    let n = unsafe {
        libc::syscall(
            libc::SYS_epoll_pwait2,
            epfd,
            events.as_mut_ptr(),
            capacity,
            &ts as *const libc::timespec,
            std::ptr::null::<libc::sigset_t>(),
            0usize,
        )
    };
    match check_size(n as libc::ssize_t) {
        Ok(n) => {
            // SAFETY: the kernel initialised the first `n` entries (n <= capacity).
            unsafe { events.set_len(n) };
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        Err(e) => Err(e),
    }
}

/// prctl(PR_SET_TIMERSLACK) for the calling thread.
pub(crate) fn set_timer_slack(slack: std::time::Duration) -> io::Result<()> {
    let ns = slack.as_nanos().clamp(1, libc::c_ulong::MAX as u128) as libc::c_ulong;
    // SAFETY: plain system call on integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) }).map(drop)
}

/// Whether an error only means "not now" (the socket buffer is full or empty).
pub(crate) fn is_would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// See [`crate::release_free_memory`].
pub(crate) fn malloc_trim() {
    // SAFETY: malloc_trim has no preconditions; it only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// See [`crate::tune_allocator`].
pub(crate) fn fix_malloc_thresholds(mmap_bytes: i32, trim_bytes: i32) {
    // SAFETY: mallopt only changes allocator parameters; valid at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, mmap_bytes);
        libc::mallopt(libc::M_TRIM_THRESHOLD, trim_bytes);
    }
}

/// A new eventfd, non-blocking, with a zero counter.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain system call on integer arguments.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by eventfd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds one to an eventfd's counter, which makes it readable. Fails only when the counter
/// would overflow (it is drained long before) or the descriptor is bad.
pub(crate) fn eventfd_add(fd: RawFd) -> io::Result<()> {
    let one = 1u64.to_ne_bytes();
    // SAFETY: `one` is valid for reads of its 8 bytes for the whole call.
    check_size(unsafe { libc::write(fd, one.as_ptr().cast(), one.len()) }).map(drop)
}

/// Resets a non-blocking eventfd's counter to zero (nothing to do when it is zero).
pub(crate) fn eventfd_drain(fd: RawFd) {
    let mut count = [0u8; 8];
    // SAFETY: `count` is valid for writes of its 8 bytes for the whole call. EAGAIN (the
    // counter was zero already) is the only expected error and needs no handling.
    unsafe { libc::read(fd, count.as_mut_ptr().cast(), count.len()) };
}
