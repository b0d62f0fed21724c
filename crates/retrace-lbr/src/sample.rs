//! Acquisition (JP2024157581A's *operation information*): instruction-address
//! sampling of the control thread through `perf_event_open(2)`, software
//! `cpu-clock` event, samples read from the event's mmap ring.
//!
//! Raw syscall rather than a crate: the part used is small (one event, one
//! sample field) and the attribute layout is the kernel's stable ABI
//! (`PERF_ATTR_SIZE_VER5`, 112 bytes).

use crate::Error;
use std::sync::atomic::{fence, AtomicU64, Ordering};

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_SAMPLE_IP: u64 = 1;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
// perf_event_attr flag bits.
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5`.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 112);

/// Offsets in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

/// One sampling event on one thread and its ring.
pub struct Sampler {
    fd: libc::c_int,
    base: *mut u8,
    page: usize,
    data_len: usize,
    /// Records the kernel reported as lost (ring full).
    pub lost: u64,
}

// SAFETY: the mapping is read through atomics for head/tail and by one
// thread at a time (the owner).
unsafe impl Send for Sampler {}

impl Sampler {
    /// Sample thread `tid` every `period_ns` of its CPU time (disabled until
    /// [`Sampler::enable`]).
    pub fn open(tid: libc::pid_t, period_ns: u64) -> Result<Sampler, Error> {
        let attr = Attr {
            kind: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<Attr>() as u32,
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_period: period_ns.max(1000),
            sample_type: PERF_SAMPLE_IP,
            flags: FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
            wakeup_events: 0,
            ..Attr::default()
        };
        // SAFETY: the attribute is a valid, fully initialised struct.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const Attr,
                tid,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        } as libc::c_int;
        if fd < 0 {
            let err = std::io::Error::last_os_error();
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into());
            return Err(match err.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => Error::Perf(format!(
                    "perf_event_open refused ({err}); kernel.perf_event_paranoid is {paranoid}: \
                     run as root or with CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=1`; \
                     or record with --exact (no sampling)"
                )),
                Some(libc::ENOSYS) | Some(libc::ENOENT) | Some(libc::ENODEV) => Error::Perf(format!(
                    "perf_event_open: this kernel has no cpu-clock sampling ({err}); record with --exact"
                )),
                _ => Error::Perf(format!("perf_event_open failed: {err}; record with --exact")),
            });
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let data_len = page * 512; // 2 MiB: ~130k samples between reads
                                   // SAFETY: mapping the event's ring, 1 + 2^n pages as the ABI asks.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page + data_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = Error::os("mmap of the perf sample ring");
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        Ok(Sampler {
            fd,
            base: base.cast(),
            page,
            data_len,
            lost: 0,
        })
    }

    /// Start sampling.
    pub fn enable(&self) {
        // SAFETY: ioctl on our event descriptor.
        unsafe { libc::ioctl(self.fd, PERF_EVENT_IOC_ENABLE, 0) };
    }

    /// Stop sampling.
    pub fn disable(&self) {
        // SAFETY: as above.
        unsafe { libc::ioctl(self.fd, PERF_EVENT_IOC_DISABLE, 0) };
    }

    fn head_tail(&self) -> (&AtomicU64, &AtomicU64) {
        // SAFETY: both words are inside the first page and 8-aligned.
        unsafe {
            (
                AtomicU64::from_ptr(self.base.add(DATA_HEAD) as *mut u64),
                AtomicU64::from_ptr(self.base.add(DATA_TAIL) as *mut u64),
            )
        }
    }

    fn byte(&self, pos: u64) -> u8 {
        // SAFETY: the data area is `data_len` bytes after the first page.
        unsafe {
            *self
                .base
                .add(self.page + (pos as usize & (self.data_len - 1)))
        }
    }

    fn u64_at(&self, pos: u64) -> u64 {
        let mut b = [0u8; 8];
        for (i, x) in b.iter_mut().enumerate() {
            *x = self.byte(pos + i as u64);
        }
        u64::from_le_bytes(b)
    }

    /// Hand every sampled instruction address read so far to `f`.
    pub fn drain(&mut self, mut f: impl FnMut(u64)) {
        let (head, tail) = self.head_tail();
        let h = head.load(Ordering::Acquire);
        fence(Ordering::Acquire);
        let mut t = tail.load(Ordering::Relaxed);
        let mut lost = 0;
        while t < h {
            let kind = u32::from_le_bytes([
                self.byte(t),
                self.byte(t + 1),
                self.byte(t + 2),
                self.byte(t + 3),
            ]);
            let size = u16::from_le_bytes([self.byte(t + 6), self.byte(t + 7)]) as u64;
            if size < 8 {
                break; // a damaged record: stop rather than loop
            }
            match kind {
                PERF_RECORD_SAMPLE => f(self.u64_at(t + 8)),
                PERF_RECORD_LOST => lost += self.u64_at(t + 16),
                _ => {}
            }
            t += size;
        }
        tail.store(h, Ordering::Release);
        self.lost += lost;
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // SAFETY: our own mapping and descriptor, released once.
        unsafe {
            libc::munmap(self.base.cast(), self.page + self.data_len);
            libc::close(self.fd);
        }
    }
}
