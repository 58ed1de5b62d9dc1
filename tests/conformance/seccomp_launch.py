"""Runs a program under a seccomp filter that refuses some io_uring calls with an errno, as
a container runtime's default profile does: `python3 seccomp_launch.py --deny
io_uring_setup,io_uring_enter --errno EPERM -- PROGRAM ARGS...`.

No libseccomp: the classic-BPF program is written out here, installed with
prctl(PR_SET_NO_NEW_PRIVS) and prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER), and kept across
the exec and by every thread the program starts. x86_64 and aarch64 only: on another
architecture it refuses to run rather than run the program unfiltered, and a call of another
ABI (x32, a 32-bit one) kills the process."""

import argparse
import ctypes
import errno
import os
import platform
import struct
import sys

# <linux/audit.h>
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# io_uring's calls have the same numbers on both (added to every table at once, Linux 5.1);
# epoll_create1 (to make a loop fail to set up) does not.
IO_URING = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427}
SYSCALLS = {"x86_64": {**IO_URING, "epoll_create1": 291},
            "aarch64": {**IO_URING, "epoll_create1": 20}}
X32_SYSCALL_BIT = 0x40000000

# <linux/filter.h> / <linux/bpf_common.h>
BPF_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
BPF_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
BPF_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K
# <linux/seccomp.h>: struct seccomp_data { int nr; __u32 arch; ... }
OFFSET_NR, OFFSET_ARCH = 0, 4
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
# <linux/prctl.h>
PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS, SECCOMP_MODE_FILTER = 22, 38, 2


def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


def program(arch, denied, errno_value):
    """arch wrong: kill. x32: kill. A denied number: the errno. Anything else: allowed."""
    body = [
        insn(BPF_LD_W_ABS, 0, 0, OFFSET_ARCH),
        insn(BPF_JEQ_K, 1, 0, arch),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        insn(BPF_LD_W_ABS, 0, 0, OFFSET_NR),
        insn(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    # Each compare jumps over the rest of the compares and the ALLOW to the ERRNO return.
    for i, nr in enumerate(denied):
        body.append(insn(BPF_JEQ_K, len(denied) - i, 0, nr))
    body.append(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    body.append(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | (errno_value & 0xFFFF)))
    return body


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(denied, errno_value):
    arch = AUDIT_ARCH.get(platform.machine())
    if arch is None:
        sys.exit(f"seccomp_launch: no filter for architecture {platform.machine()}")
    insns = program(arch, denied, errno_value)
    code = ctypes.create_string_buffer(b"".join(insns))
    prog = SockFprog(len(insns), ctypes.cast(code, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        sys.exit(f"seccomp_launch: PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        sys.exit(f"seccomp_launch: PR_SET_SECCOMP: {os.strerror(ctypes.get_errno())}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deny", required=True, help="comma-separated calls: io_uring_setup, "
                        "io_uring_enter, io_uring_register, epoll_create1")
    parser.add_argument("--errno", required=True, choices=["EPERM", "ENOSYS", "EACCES"])
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        parser.error("no program to run")
    if platform.machine() not in SYSCALLS:
        sys.exit(f"seccomp_launch: no filter for architecture {platform.machine()}")
    denied = [SYSCALLS[platform.machine()][name] for name in args.deny.split(",")]
    install(denied, getattr(errno, args.errno))
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
