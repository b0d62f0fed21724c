//! The machine's physical memory: one RAM region shared by every hart.
//!
//! Every access makes at most one bounds check (`addr - base` against the
//! size). Misaligned loads and stores are performed byte-wise, as QEMU does
//! for M-mode accesses on the `virt` machine, so programs that rely on it
//! behave the same.
//!
//! Memory also keeps two pieces of state that several harts share:
//! - the set of halfwords that hold decoded instructions (`code` bits), so a
//!   store that hits code can be detected with one range compare on the common
//!   path and the decoded-instruction cache invalidated;
//! - each hart's LR reservation, so a store by one hart breaks another hart's
//!   reservation on the same address.

/// A load reservation made by `lr.w`/`lr.d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Reserved address (naturally aligned).
    pub addr: u64,
    /// Access size in bytes (4 or 8).
    pub size: u8,
    /// The value `lr` read, compared again by `sc` (QEMU's semantics: an SC
    /// succeeds when the reserved location still holds the loaded value).
    pub value: u64,
}

/// RAM plus the shared bookkeeping described in the module docs.
#[derive(Clone, Debug)]
pub struct Memory {
    base: u64,
    data: Vec<u8>,
    /// One bit per halfword: some decoded block covers it.
    code: Vec<u64>,
    code_lo: u64,
    code_span: u64,
    /// Set when a store hit decoded code; the engine flushes its cache.
    pub(crate) code_written: bool,
    resv: Vec<Option<Reservation>>,
    resv_live: u32,
}

impl Memory {
    /// Zeroed RAM of `size` bytes at physical address `base`, for `harts`
    /// harts. The allocation is zeroed lazily by the operating system, so a
    /// large RAM costs only the pages a program touches.
    pub fn new(base: u64, size: u64, harts: usize) -> Memory {
        // At least 8 bytes, so the bounds checks in `read`/`write` never
        // underflow.
        let size = usize::try_from(size).unwrap_or(usize::MAX).max(8);
        Memory {
            base,
            data: vec![0; size],
            code: vec![0; size.div_ceil(128)],
            code_lo: 0,
            code_span: 0,
            code_written: false,
            resv: vec![None; harts],
            resv_live: 0,
        }
    }

    /// First address.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.data.len() as u64
    }

    /// Does `[addr, addr + len)` lie inside RAM?
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        let off = addr.wrapping_sub(self.base);
        off < self.size() && len <= self.size() - off
    }

    /// The bytes `[addr, addr + len)`, if inside RAM.
    pub fn slice(&self, addr: u64, len: u64) -> Option<&[u8]> {
        if !self.contains(addr, len) {
            return None;
        }
        let off = (addr - self.base) as usize;
        Some(&self.data[off..off + len as usize])
    }

    /// Mutable bytes `[addr, addr + len)`, if inside RAM. Writes through this
    /// bypass code-change detection; use it only while loading.
    pub fn slice_mut(&mut self, addr: u64, len: u64) -> Option<&mut [u8]> {
        if !self.contains(addr, len) {
            return None;
        }
        let off = (addr - self.base) as usize;
        Some(&mut self.data[off..off + len as usize])
    }

    /// The RAM's host address and size, for code that addresses it directly
    /// (the translating engine).
    pub(crate) fn host_view(&mut self) -> (usize, u64) {
        (self.data.as_mut_ptr() as usize, self.data.len() as u64)
    }

    /// The range of addresses that may hold decoded code: first byte and
    /// length (a store outside it cannot hit code).
    pub(crate) fn code_range(&self) -> (u64, u64) {
        (self.code_lo, self.code_span)
    }

    /// Whether some hart holds an LR reservation.
    pub(crate) fn reservations_live(&self) -> bool {
        self.resv_live != 0
    }

    /// Write bytes (from the host side, e.g. semihosting reads), with the
    /// same code-change and reservation bookkeeping as a program store.
    pub fn write_bytes(&mut self, addr: u64, bytes: &[u8]) -> bool {
        let Some(s) = self.slice_mut(addr, bytes.len() as u64) else {
            return false;
        };
        s.copy_from_slice(bytes);
        for a in (addr & !1..addr + bytes.len() as u64).step_by(2) {
            self.note_store(usize::MAX, a, 2);
        }
        true
    }

    /// Read a little-endian value of `N` bytes.
    #[inline(always)]
    pub fn read<const N: usize>(&self, addr: u64) -> Option<[u8; N]> {
        let off = addr.wrapping_sub(self.base);
        if off > (self.data.len() - N) as u64 {
            return None;
        }
        let off = off as usize;
        self.data.get(off..off + N)?.try_into().ok()
    }

    /// Write a little-endian value of `N` bytes on behalf of `hart`.
    #[inline(always)]
    pub fn write<const N: usize>(&mut self, hart: usize, addr: u64, v: [u8; N]) -> bool {
        let off = addr.wrapping_sub(self.base);
        if off > (self.data.len() - N) as u64 {
            return false;
        }
        let off = off as usize;
        if let Some(d) = self.data.get_mut(off..off + N) {
            d.copy_from_slice(&v);
        } else {
            return false;
        }
        self.note_store(hart, addr, N as u64);
        true
    }

    #[inline(always)]
    fn note_store(&mut self, hart: usize, addr: u64, len: u64) {
        // A 4-byte instruction starting 2 bytes before `addr` covers it too,
        // and both of its halfwords are marked, so checking the halfwords of
        // the stored bytes is enough.
        // One compare: the last stored byte's offset from the code range,
        // wrapping below it, against the range widened by the store length.
        let last = addr.wrapping_add(len - 1).wrapping_sub(self.code_lo);
        if last < self.code_span + (len - 1) {
            self.check_code(addr, len);
        }
        if self.resv_live != 0 {
            self.break_reservations(hart, addr, len);
        }
    }

    #[cold]
    fn check_code(&mut self, addr: u64, len: u64) {
        let first = addr & !1;
        let mut a = first;
        while a < addr + len {
            let h = ((a - self.base) >> 1) as usize;
            if self
                .code
                .get(h / 64)
                .is_some_and(|w| w >> (h % 64) & 1 != 0)
            {
                self.code_written = true;
                return;
            }
            a += 2;
        }
    }

    #[cold]
    fn break_reservations(&mut self, hart: usize, addr: u64, len: u64) {
        for (h, r) in self.resv.iter_mut().enumerate() {
            if h == hart {
                continue;
            }
            if let Some(res) = r {
                if addr < res.addr + u64::from(res.size) && res.addr < addr + len {
                    *r = None;
                    self.resv_live -= 1;
                }
            }
        }
    }

    /// Mark `[addr, addr + len)` as holding decoded instructions.
    pub(crate) fn mark_code(&mut self, addr: u64, len: u64) {
        if self.code_span == 0 {
            self.code_lo = addr;
            self.code_span = len;
        } else {
            let lo = self.code_lo.min(addr);
            let hi = (self.code_lo + self.code_span).max(addr + len);
            self.code_lo = lo;
            self.code_span = hi - lo;
        }
        let mut a = addr & !1;
        while a < addr + len {
            let h = ((a - self.base) >> 1) as usize;
            if let Some(w) = self.code.get_mut(h / 64) {
                *w |= 1 << (h % 64);
            }
            a += 2;
        }
    }

    /// Forget which halfwords hold code (`ranges` are the cached blocks).
    pub(crate) fn clear_code(&mut self, ranges: impl Iterator<Item = (u64, u64)>) {
        for (addr, len) in ranges {
            let mut a = addr & !1;
            while a < addr + len {
                let h = ((a - self.base) >> 1) as usize;
                if let Some(w) = self.code.get_mut(h / 64) {
                    *w = 0;
                }
                a += 2;
            }
        }
        self.code_lo = 0;
        self.code_span = 0;
        self.code_written = false;
    }

    /// Set `hart`'s reservation.
    pub fn reserve(&mut self, hart: usize, r: Reservation) {
        if let Some(slot) = self.resv.get_mut(hart) {
            if slot.is_none() {
                self.resv_live += 1;
            }
            *slot = Some(r);
        }
    }

    /// Take (and clear) `hart`'s reservation.
    pub fn take_reservation(&mut self, hart: usize) -> Option<Reservation> {
        let r = self.resv.get_mut(hart)?.take();
        if r.is_some() {
            self.resv_live -= 1;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_misaligned_access() {
        let mut m = Memory::new(0x1000, 16, 1);
        assert!(m.write(0, 0x1001, 0xdead_beefu32.to_le_bytes()));
        assert_eq!(m.read::<4>(0x1001), Some(0xdead_beefu32.to_le_bytes()));
        assert_eq!(m.read::<2>(0x1000), Some([0, 0xef]));
        assert_eq!(m.read::<8>(0x1008), Some([0; 8]));
        assert_eq!(m.read::<8>(0x1009), None);
        assert_eq!(m.read::<1>(0x0fff), None);
        assert_eq!(m.read::<1>(u64::MAX), None);
        assert!(!m.write(0, 0x100f, [0u8; 2]));
        assert!(m.contains(0x1000, 16));
        assert!(!m.contains(0x1000, 17));
    }

    #[test]
    fn store_to_code_is_noticed() {
        let mut m = Memory::new(0x1000, 64, 1);
        m.mark_code(0x1010, 4);
        assert!(m.write(0, 0x1020, [1u8]));
        assert!(!m.code_written);
        assert!(m.write(0, 0x100f, [1u8, 2]));
        assert!(m.code_written);
        m.clear_code([(0x1010, 4)].into_iter());
        assert!(m.write(0, 0x1012, [1u8]));
        assert!(!m.code_written);
    }

    #[test]
    fn other_harts_break_reservations() {
        let mut m = Memory::new(0x1000, 64, 2);
        let r = Reservation {
            addr: 0x1008,
            size: 4,
            value: 0,
        };
        m.reserve(0, r);
        m.write(0, 0x1008, [1u8]);
        assert_eq!(m.take_reservation(0), Some(r));
        m.reserve(0, r);
        m.write(1, 0x100b, [1u8]);
        assert_eq!(m.take_reservation(0), None);
    }
}
