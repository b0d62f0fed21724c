//! A minimal RISC-V executable (ELF64, or ELF32 for RV32) written byte by
//! byte: one `PT_LOAD` segment holding the code, entry at its start, no
//! sections. Enough for the loader, the engines and the command line,
//! without a cross compiler.

/// `EM_RISCV`.
pub const EM_RISCV: u16 = 243;
/// `EM_X86_64`, for "wrong machine" cases.
pub const EM_X86_64: u16 = 62;
/// Where the code goes unless told otherwise (the start of RAM on QEMU's
/// `virt` board).
pub const BASE: u64 = 0x8000_0000;
/// Segment flags: readable.
pub const PF_R: u32 = 4;
/// Segment flags: writable.
pub const PF_W: u32 = 2;
/// Segment flags: executable.
pub const PF_X: u32 = 1;

/// How to write the file: machine, load address, segment flags and the
/// zero-filled bytes after the code (`p_memsz - p_filesz`).
#[derive(Clone, Copy, Debug)]
pub struct ElfImage {
    /// `e_machine`.
    pub machine: u16,
    /// Load address and entry point.
    pub addr: u64,
    /// `p_flags` of the one segment.
    pub flags: u32,
    /// Bytes of memory beyond the file contents.
    pub bss: u64,
    /// ELF class: 64 (`ELFCLASS64`, an RV64 program) or 32 (`ELFCLASS32`,
    /// RV32).
    pub bits: u8,
}

impl ElfImage {
    /// RISC-V, code at [`BASE`], readable, writable and executable (so
    /// programs may store next to their code), no extra memory.
    pub fn riscv64() -> ElfImage {
        ElfImage {
            machine: EM_RISCV,
            addr: BASE,
            flags: PF_R | PF_W | PF_X,
            bss: 0,
            bits: 64,
        }
    }

    /// The same as [`ElfImage::riscv64`] as an ELF32 file: an RV32 program.
    pub fn riscv32() -> ElfImage {
        ElfImage {
            bits: 32,
            ..ElfImage::riscv64()
        }
    }

    /// The same with another `e_machine`.
    pub fn machine(self, machine: u16) -> ElfImage {
        ElfImage { machine, ..self }
    }

    /// The same loaded (and entered) at `addr`.
    pub fn at(self, addr: u64) -> ElfImage {
        ElfImage { addr, ..self }
    }

    /// The same with segment flags `flags`.
    pub fn flags(self, flags: u32) -> ElfImage {
        ElfImage { flags, ..self }
    }

    /// The same with `bss` zero bytes of memory after the code.
    pub fn bss(self, bss: u64) -> ElfImage {
        ElfImage { bss, ..self }
    }

    /// The file: ELF header (64 bytes), one program header (56), `code`;
    /// for ELF32 52 and 32 bytes.
    pub fn build(&self, code: &[u8]) -> Vec<u8> {
        if self.bits == 32 {
            return self.build32(code);
        }
        const EHSIZE: u16 = 64;
        const PHENTSIZE: u16 = 56;
        let mut f = Vec::with_capacity(120 + code.len());
        // e_ident: ELFCLASS64, little endian, version 1, System V ABI.
        f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        f.extend_from_slice(&self.machine.to_le_bytes());
        f.extend_from_slice(&1u32.to_le_bytes()); // e_version
        f.extend_from_slice(&self.addr.to_le_bytes()); // e_entry
        f.extend_from_slice(&u64::from(EHSIZE).to_le_bytes()); // e_phoff
        f.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
        f.extend_from_slice(&0u32.to_le_bytes()); // e_flags
                                                  // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
        for v in [EHSIZE, PHENTSIZE, 1, 64, 0, 0] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        let len = code.len() as u64;
        f.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        f.extend_from_slice(&self.flags.to_le_bytes());
        f.extend_from_slice(&u64::from(EHSIZE + PHENTSIZE).to_le_bytes()); // p_offset
        f.extend_from_slice(&self.addr.to_le_bytes()); // p_vaddr
        f.extend_from_slice(&self.addr.to_le_bytes()); // p_paddr
        f.extend_from_slice(&len.to_le_bytes()); // p_filesz
        f.extend_from_slice(&(len + self.bss).to_le_bytes()); // p_memsz
        f.extend_from_slice(&4u64.to_le_bytes()); // p_align
        f.extend_from_slice(code);
        f
    }

    fn build32(&self, code: &[u8]) -> Vec<u8> {
        const EHSIZE: u16 = 52;
        const PHENTSIZE: u16 = 32;
        let word = |v: u64| (v as u32).to_le_bytes();
        let mut f = Vec::with_capacity(84 + code.len());
        // e_ident: ELFCLASS32, little endian, version 1, System V ABI.
        f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        f.extend_from_slice(&self.machine.to_le_bytes());
        f.extend_from_slice(&1u32.to_le_bytes()); // e_version
        f.extend_from_slice(&word(self.addr)); // e_entry
        f.extend_from_slice(&u32::from(EHSIZE).to_le_bytes()); // e_phoff
        f.extend_from_slice(&0u32.to_le_bytes()); // e_shoff
        f.extend_from_slice(&0u32.to_le_bytes()); // e_flags
        for v in [EHSIZE, PHENTSIZE, 1, 40, 0, 0] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        let len = code.len() as u64;
        f.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        f.extend_from_slice(&u32::from(EHSIZE + PHENTSIZE).to_le_bytes()); // p_offset
        f.extend_from_slice(&word(self.addr)); // p_vaddr
        f.extend_from_slice(&word(self.addr)); // p_paddr
        f.extend_from_slice(&word(len)); // p_filesz
        f.extend_from_slice(&word(len + self.bss)); // p_memsz
        f.extend_from_slice(&self.flags.to_le_bytes());
        f.extend_from_slice(&4u32.to_le_bytes()); // p_align
        f.extend_from_slice(code);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_the_documented_one() {
        let f = ElfImage::riscv64().bss(16).build(&[0x13, 0, 0, 0]);
        assert_eq!(f.len(), 124);
        assert_eq!(u16::from_le_bytes([f[18], f[19]]), EM_RISCV);
        assert_eq!(&f[120..], &[0x13, 0, 0, 0]);
        let memsz = u64::from_le_bytes(f[104..112].try_into().unwrap());
        assert_eq!(memsz, 20);
    }

    #[test]
    fn elf32_layout() {
        let f = ElfImage::riscv32().bss(16).build(&[0x13, 0, 0, 0]);
        assert_eq!(f.len(), 88);
        assert_eq!(f[4], 1, "ELFCLASS32");
        assert_eq!(u16::from_le_bytes([f[18], f[19]]), EM_RISCV);
        assert_eq!(
            u32::from_le_bytes(f[24..28].try_into().unwrap()),
            0x8000_0000
        );
        assert_eq!(&f[84..], &[0x13, 0, 0, 0]);
        let memsz = u32::from_le_bytes(f[72..76].try_into().unwrap());
        assert_eq!(memsz, 20);
    }
}
