//! The syscall wrappers: the only `unsafe` code of the transport.

use super::*;

/// Room for a `SCM_TIMESTAMPNS` (16-byte timespec) and a `SO_RXQ_OVFL` (u32) message.
const CONTROL_WORDS: usize = 8;
/// Room for one `UDP_SEGMENT` (u16) message.
const GSO_CONTROL_WORDS: usize = 4;

pub(super) fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` is a live c_int for the whole call and the length passed is exactly
    // its size; the kernel only reads it. An invalid fd or option is reported as an error.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub(super) fn getsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are live, writable locals; `len` holds the size of `value`,
    // so the kernel writes at most that many bytes into it.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// CLOCK_REALTIME, the clock of SO_TIMESTAMPNS stamps.
fn realtime() -> Option<Duration> {
    // SAFETY: an all-zero timespec is a valid value; clock_gettime writes one timespec
    // into the pointer it is given, which points at this live local.
    let mut ts: libc::timespec = unsafe { zeroed() };
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

pub(super) struct Received {
    pub count: usize,
    /// The kernel's drop counter as of the newest datagram that carried it.
    pub drops: Option<u32>,
}

/// Read up to BATCH datagrams into `batch` without blocking.
pub(super) fn recvmmsg(fd: RawFd, batch: &mut RecvBatch) -> io::Result<Received> {
    // SAFETY (zeroed): mmsghdr, iovec and sockaddr_storage are plain C structs for which
    // all-zero bytes (null pointers, zero lengths) are valid values.
    let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
    let mut iovs: [libc::iovec; BATCH] = unsafe { zeroed() };
    let mut names: [libc::sockaddr_storage; BATCH] = unsafe { zeroed() };
    let mut control = [[0u64; CONTROL_WORDS]; BATCH];
    for ((((h, iov), name), ctl), slot) in hdrs
        .iter_mut()
        .zip(iovs.iter_mut())
        .zip(names.iter_mut())
        .zip(control.iter_mut())
        .zip(batch.buf.chunks_mut(SLOT))
    {
        iov.iov_base = slot.as_mut_ptr().cast();
        iov.iov_len = slot.len();
        h.msg_hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
        h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_hdr.msg_iov = iov;
        h.msg_hdr.msg_iovlen = 1;
        h.msg_hdr.msg_control = ctl.as_mut_ptr().cast();
        h.msg_hdr.msg_controllen = size_of::<[u64; CONTROL_WORDS]>() as _;
    }
    let n = loop {
        // SAFETY: `hdrs` holds BATCH initialised mmsghdrs. Each points at its own iovec
        // (one slot of SLOT bytes inside `batch.buf`), its own sockaddr_storage with
        // msg_namelen = its size, and its own 8-word control buffer with msg_controllen =
        // its size; all are locals or borrowed mutably for the whole call and none moves
        // while the kernel writes. MSG_DONTWAIT makes the call non-blocking; MSG_TRUNC only
        // changes the reported length. A null timeout is allowed.
        let rc = unsafe {
            libc::recvmmsg(
                fd,
                hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if rc >= 0 {
            break usize::try_from(rc).unwrap_or(0);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => {
                return Ok(Received {
                    count: 0,
                    drops: None,
                })
            }
            _ => return Err(e),
        }
    };
    let now = realtime();
    let mut drops = None;
    let mut stored = 0;
    for (h, name) in hdrs.iter().zip(names.iter()).take(n.min(BATCH)) {
        let full_len = h.msg_len as usize;
        let mut meta = RecvMeta {
            len: full_len.min(SLOT),
            from: from_storage(name).unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0))),
            truncated: full_len > SLOT || (h.msg_hdr.msg_flags & libc::MSG_TRUNC) != 0,
            age: None,
        };
        read_control(&h.msg_hdr, now, &mut meta, &mut drops);
        if let Some(m) = batch.meta.get_mut(stored) {
            *m = meta;
        }
        stored += 1;
    }
    Ok(Received {
        count: stored,
        drops,
    })
}

/// Walk the control messages the kernel wrote for one datagram.
fn read_control(
    hdr: &libc::msghdr,
    now: Option<Duration>,
    meta: &mut RecvMeta,
    drops: &mut Option<u32>,
) {
    // SAFETY: `hdr` is a msghdr the kernel just filled: msg_control points at our live
    // control buffer and msg_controllen says how much of it holds messages. CMSG_FIRSTHDR
    // and CMSG_NXTHDR only return headers inside that length (or null), and every data read
    // below checks cmsg_len against the size it reads and copies with read_unaligned.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let data = libc::CMSG_DATA(cmsg);
            let room = (c.cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
            if c.cmsg_level == libc::SOL_SOCKET {
                if c.cmsg_type == libc::SCM_TIMESTAMPNS && room >= size_of::<libc::timespec>() {
                    let ts: libc::timespec = std::ptr::read_unaligned(data.cast());
                    if let (Some(now), Ok(s), Ok(ns)) =
                        (now, u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec))
                    {
                        let at = Duration::new(s, ns);
                        meta.age = Some(now.saturating_sub(at).min(MAX_AGE));
                    }
                } else if c.cmsg_type == libc::SO_RXQ_OVFL && room >= size_of::<u32>() {
                    let d: u32 = std::ptr::read_unaligned(data.cast());
                    *drops = Some(drops.map_or(d, |old: u32| old.max(d)));
                }
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
}

pub(super) struct Sent {
    pub sent: u64,
    pub bytes: u64,
    pub failed: u64,
    pub calls: u64,
    pub gso_refused: bool,
}

/// Send a prefix of `out` (at most BATCH messages); returns how many datagrams of `out`
/// were dealt with (sent or given up) and the figures.
pub(super) fn sendmmsg(fd: RawFd, out: &[OutDatagram<'_>], gso: bool) -> (usize, Sent) {
    let mut r = Sent {
        sent: 0,
        bytes: 0,
        failed: 0,
        calls: 0,
        gso_refused: false,
    };
    // SAFETY (zeroed): plain C structs, all-zero is a valid value (null pointers, zero
    // lengths).
    let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
    let mut iovs: [libc::iovec; IOV_POOL] = unsafe { zeroed() };
    let mut names: [libc::sockaddr_storage; BATCH] = unsafe { zeroed() };
    let mut control = [[0u64; GSO_CONTROL_WORDS]; BATCH];
    // Per message: how many datagrams of `out` it carries and their total bytes.
    let mut plan = [(0usize, 0usize); BATCH];
    let mut msgs = 0;
    let mut used_iov = 0;
    let mut taken = 0;
    while msgs < BATCH && taken < out.len() {
        let Some(first) = out.get(taken) else { break };
        let seg = first.len();
        let mut n = 1;
        if gso && seg > 0 {
            while n < GSO_MAX_SEGMENTS
                && (n + 1) * seg <= GSO_MAX_BYTES
                && used_iov + 2 * (n + 1) <= IOV_POOL
            {
                match out.get(taken + n) {
                    Some(d) if d.to == first.to && d.len() == seg => n += 1,
                    _ => break,
                }
            }
        }
        if used_iov + 2 * n > IOV_POOL {
            break;
        }
        let iov_start = used_iov;
        for d in out.iter().skip(taken).take(n) {
            for part in [d.head, d.body] {
                if let Some(iov) = iovs.get_mut(used_iov) {
                    // The kernel only reads through iov_base for a send.
                    iov.iov_base = part.as_ptr() as *mut libc::c_void;
                    iov.iov_len = part.len();
                    used_iov += 1;
                }
            }
        }
        let (Some(h), Some(name), Some(ctl), Some(p)) = (
            hdrs.get_mut(msgs),
            names.get_mut(msgs),
            control.get_mut(msgs),
            plan.get_mut(msgs),
        ) else {
            break;
        };
        let (storage, len) = to_storage(&first.to);
        *name = storage;
        h.msg_hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
        h.msg_hdr.msg_namelen = len;
        h.msg_hdr.msg_iov = iovs.get_mut(iov_start).map_or(std::ptr::null_mut(), |v| v);
        h.msg_hdr.msg_iovlen = (used_iov - iov_start) as _;
        if n > 1 {
            set_gso_control(&mut h.msg_hdr, ctl, seg);
        }
        *p = (n, n * seg);
        msgs += 1;
        taken += n;
    }
    let mut k = 0;
    let mut waited = false;
    while k < msgs {
        let rest = hdrs.get_mut(k..msgs).unwrap_or(&mut []);
        r.calls += 1;
        // SAFETY: every mmsghdr in `rest` was initialised above: msg_name points at its own
        // sockaddr_storage with the matching length, msg_iov at `msg_iovlen` consecutive
        // iovecs inside `iovs`, each pointing into a datagram's head or body slice that
        // `out` borrows for the whole call; msg_control (when set) at its own buffer with
        // a valid UDP_SEGMENT message. All are live locals that do not move during the
        // call; the kernel only reads them and writes msg_len. MSG_DONTWAIT: never blocks.
        let rc = unsafe {
            libc::sendmmsg(
                fd,
                rest.as_mut_ptr(),
                rest.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if rc > 0 {
            for (n, bytes) in plan.iter().skip(k).take(rc as usize) {
                r.sent += *n as u64;
                r.bytes += *bytes as u64;
            }
            k += rc as usize;
            continue;
        }
        let e = io::Error::last_os_error();
        let (n, _) = plan.get(k).copied().unwrap_or((1, 0));
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) if !waited => {
                waited = true;
                let _ = wait_writable(fd, SEND_WAIT);
            }
            Some(libc::EIO | libc::EINVAL) if n > 1 => {
                // No GSO here after all: hand the rest back to be sent without it.
                r.gso_refused = true;
                let done: usize = plan.iter().take(k).map(|p| p.0).sum();
                return (done, r);
            }
            _ => {
                r.failed += n as u64;
                k += 1;
            }
        }
    }
    (taken, r)
}

fn set_gso_control(hdr: &mut libc::msghdr, ctl: &mut [u64; GSO_CONTROL_WORDS], seg: usize) {
    hdr.msg_control = ctl.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE of a u16 is 24 bytes on Linux, within the 32-byte buffer.
    hdr.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as _;
    // SAFETY: msg_control points at our live, 8-byte-aligned buffer with msg_controllen
    // set, so CMSG_FIRSTHDR returns its start (non-null); the header and the u16 after it
    // (at CMSG_DATA) lie inside the buffer, and write_unaligned has no alignment needs.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(hdr);
        if cmsg.is_null() {
            return;
        }
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = libc::UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
        let seg = u16::try_from(seg).unwrap_or(u16::MAX);
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), seg);
    }
}

fn wait_writable(fd: RawFd, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid, initialised pollfd that lives for the whole call, count 1.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    n > 0
}
