//! ELF loading: the parts of a RISC-V executable that retrace needs.
//!
//! [`Elf::parse`] reads an ELF file's bytes (with the `object` crate) into an
//! owned, validated description: register width from the ELF class, entry
//! point, the `PT_LOAD` segments, the executable sections (for the
//! disassembler), a sorted symbol table, the HTIF `tohost`/`fromhost`
//! addresses if the program defines them, and an identity hash of everything
//! that is loaded into memory. Every malformed input is an [`ElfError`],
//! never a panic: the loader is fuzzed by a property test.
//!
//! Segments are placed at their *physical* address (`p_paddr`), as QEMU's
//! `-kernel` loader and real boot ROMs do: picolibc links `.data` to run in
//! RAM (`p_vaddr`) but stores its initial image in flash (`p_paddr`), and its
//! start-up code copies it across. Loading at `p_vaddr` would leave the flash
//! copy empty and the copy would then zero the data.

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};
use object::Endianness;
use retrace_isa::{Fnv1a, Xlen};
use std::fmt;

/// What went wrong while reading an ELF file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElfError {
    /// The bytes do not start with the ELF magic number.
    #[error("not an ELF file (it does not start with \\x7fELF)")]
    NotElf,
    /// An ELF class other than 32 or 64 bits.
    #[error("unsupported ELF class {0} (expected 1 for ELF32 or 2 for ELF64)")]
    BadClass(u8),
    /// The ELF is for another processor.
    #[error("ELF file for machine {name} (e_machine {machine}), not RISC-V")]
    WrongMachine {
        /// `e_machine` from the header.
        machine: u16,
        /// A readable name for it.
        name: &'static str,
    },
    /// A big-endian RISC-V ELF (RISC-V is little-endian).
    #[error("big-endian ELF file; RISC-V programs are little-endian")]
    BigEndian,
    /// Not an executable (a relocatable object or a core dump).
    #[error("ELF type {0} is not an executable (ET_EXEC or ET_DYN); link the program first")]
    NotExecutable(u16),
    /// A header, table or segment extends past the end of the file, or is
    /// otherwise inconsistent.
    #[error("truncated or malformed ELF file: {0}")]
    Truncated(String),
    /// A segment whose address range wraps around the address space or
    /// whose file size exceeds its memory size.
    #[error("segment {index} at {addr:#x} (memsz {memsz:#x}, filesz {filesz:#x}) is out of range")]
    SegmentOutOfRange {
        /// Index in the program header table.
        index: usize,
        /// Its load (physical) address.
        addr: u64,
        /// Its memory size.
        memsz: u64,
        /// Its file size.
        filesz: u64,
    },
    /// No `PT_LOAD` segment at all: nothing to run.
    #[error("the ELF file has no loadable (PT_LOAD) segment")]
    NoSegments,
}

fn truncated(e: object::read::Error) -> ElfError {
    ElfError::Truncated(e.to_string())
}

/// Segment permission flags (`PF_R`, `PF_W`, `PF_X`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SegmentFlags(pub u32);

impl SegmentFlags {
    /// Executable.
    pub fn x(self) -> bool {
        self.0 & elf::PF_X != 0
    }
    /// Writable.
    pub fn w(self) -> bool {
        self.0 & elf::PF_W != 0
    }
    /// Readable.
    pub fn r(self) -> bool {
        self.0 & elf::PF_R != 0
    }
}

impl fmt::Display for SegmentFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = |b: bool, ch: char| if b { ch } else { '-' };
        write!(
            f,
            "{}{}{}",
            c(self.r(), 'r'),
            c(self.w(), 'w'),
            c(self.x(), 'x')
        )
    }
}

/// One `PT_LOAD` segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Address the segment runs at (`p_vaddr`).
    pub vaddr: u64,
    /// Address the segment is loaded at (`p_paddr`); see the module docs.
    pub paddr: u64,
    /// The bytes from the file (`p_filesz` of them).
    pub data: Vec<u8>,
    /// Size in memory; bytes past `data.len()` are zero.
    pub memsz: u64,
    /// Permissions.
    pub flags: SegmentFlags,
}

/// One section with `SHF_EXECINSTR` (what `objdump -d` disassembles).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeSection {
    /// Section name (`.text`, `.init` …).
    pub name: String,
    /// Address of its first byte.
    pub addr: u64,
    /// Its contents.
    pub data: Vec<u8>,
    /// Its index in the section header table.
    pub index: u16,
}

/// One symbol of the ELF symbol table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Name.
    pub name: String,
    /// Value (address).
    pub addr: u64,
    /// Size in bytes (0 when unknown).
    pub size: u64,
    /// `STT_FUNC`.
    pub is_function: bool,
    /// `STB_GLOBAL` or `STB_WEAK`.
    pub is_global: bool,
    /// `STT_OBJECT` (a variable, array …).
    pub is_object: bool,
    /// Defined in an executable section.
    pub in_code: bool,
    /// Index of the section it is defined in (`st_shndx`; special values
    /// such as `SHN_ABS` kept as they are).
    pub section: u16,
}

/// A loaded ELF executable.
#[derive(Clone, Debug)]
pub struct Elf {
    /// Register width, from the ELF class.
    pub xlen: Xlen,
    /// Entry point.
    pub entry: u64,
    /// `PT_LOAD` segments in program-header order.
    pub segments: Vec<Segment>,
    /// Executable sections in section-header order.
    pub code_sections: Vec<CodeSection>,
    /// Symbols sorted by address, then name (mapping symbols excluded).
    pub symbols: Vec<Symbol>,
    /// Mapping symbols in executable sections, sorted by address: `true`
    /// where `$d` starts data embedded in code, `false` where `$x` starts
    /// instructions again (what objdump uses to tell them apart).
    pub data_marks: Vec<(u64, bool)>,
    /// Address of `tohost` (HTIF), if defined.
    pub tohost: Option<u64>,
    /// Address of `fromhost` (HTIF), if defined.
    pub fromhost: Option<u64>,
    /// The ISA the program was built for, from its RISC-V attributes
    /// section (`Tag_RISCV_arch`, e.g. `rv32i2p1_m2p0_a2p1_f2p2_c2p0`), if
    /// it has one: see [`Elf::extensions`].
    pub arch: Option<String>,
    /// Identity of the loaded contents; see [`Elf::identity`].
    identity: u64,
}

/// A readable name for an `e_machine` value.
pub fn machine_name(machine: u16) -> &'static str {
    match machine {
        elf::EM_386 => "Intel 80386",
        elf::EM_X86_64 => "x86-64",
        elf::EM_ARM => "ARM",
        elf::EM_AARCH64 => "AArch64",
        elf::EM_MIPS => "MIPS",
        elf::EM_PPC => "PowerPC",
        elf::EM_PPC64 => "PowerPC64",
        elf::EM_S390 => "IBM S/390",
        elf::EM_SPARCV9 => "SPARC V9",
        elf::EM_LOONGARCH => "LoongArch",
        elf::EM_RISCV => "RISC-V",
        elf::EM_NONE => "none",
        _ => "unknown",
    }
}

impl Elf {
    /// Parse an ELF file from its bytes.
    pub fn parse(data: &[u8]) -> Result<Elf, ElfError> {
        if data.len() < 4 || data[..4] != elf::ELFMAG {
            return Err(ElfError::NotElf);
        }
        let class = *data
            .get(4)
            .ok_or_else(|| ElfError::Truncated("ELF identification is cut short".into()))?;
        match class {
            elf::ELFCLASS32 => parse_as::<elf::FileHeader32<Endianness>>(data, Xlen::Rv32),
            elf::ELFCLASS64 => parse_as::<elf::FileHeader64<Endianness>>(data, Xlen::Rv64),
            other => Err(ElfError::BadClass(other)),
        }
    }

    /// A stable 64-bit identity of the program as loaded: FNV-1a over the
    /// ELF class, the entry point and every segment's load address, memory
    /// size, flags and file bytes. Two files that load the same image have the
    /// same identity even if their symbols or debug information differ, which
    /// is what a trace needs to check it belongs to a program.
    pub fn identity(&self) -> u64 {
        self.identity
    }

    /// The symbol covering or preceding `addr`, and the offset into it:
    /// the last symbol at an address `<= addr`, preferring among symbols at
    /// the same address a function, then a global one.
    pub fn symbol_for(&self, addr: u64) -> Option<(&Symbol, u64)> {
        let end = self.symbols.partition_point(|s| s.addr <= addr);
        let last = self.symbols[..end].last()?;
        let start = self.symbols[..end].partition_point(|s| s.addr < last.addr);
        let best = self.symbols[start..end]
            .iter()
            .max_by_key(|s| (s.is_function, s.is_global))?;
        Some((best, addr - best.addr))
    }

    /// `sym+0x10` (or `sym` at offset 0) for an address, if any symbol
    /// precedes it.
    pub fn describe(&self, addr: u64) -> Option<String> {
        self.symbol_for(addr).map(|(s, off)| {
            if off == 0 {
                s.name.clone()
            } else {
                format!("{}+{:#x}", s.name, off)
            }
        })
    }

    /// The first symbol with this name (functions first).
    pub fn symbol_named(&self, name: &str) -> Option<&Symbol> {
        self.symbols
            .iter()
            .filter(|s| s.name == name)
            .max_by_key(|s| s.is_function)
    }

    /// Lowest and one-past-highest load address over all segments.
    pub fn load_extent(&self) -> (u64, u64) {
        let lo = self.segments.iter().map(|s| s.paddr).min().unwrap_or(0);
        let hi = self
            .segments
            .iter()
            .map(|s| s.paddr + s.memsz)
            .max()
            .unwrap_or(0);
        (lo, hi)
    }
}

fn parse_as<H>(data: &[u8], xlen: Xlen) -> Result<Elf, ElfError>
where
    H: FileHeader<Endian = Endianness>,
    H::Word: Into<u64>,
{
    let header = H::parse(data).map_err(truncated)?;
    let endian = header.endian().map_err(truncated)?;
    if endian != Endianness::Little {
        return Err(ElfError::BigEndian);
    }
    let machine = header.e_machine(endian);
    if machine != elf::EM_RISCV {
        return Err(ElfError::WrongMachine {
            machine,
            name: machine_name(machine),
        });
    }
    let kind = header.e_type(endian);
    if kind != elf::ET_EXEC && kind != elf::ET_DYN {
        return Err(ElfError::NotExecutable(kind));
    }
    let entry: u64 = header.e_entry(endian).into();
    let limit = match xlen {
        Xlen::Rv32 => 1u64 << 32,
        Xlen::Rv64 => u64::MAX,
    };

    let mut segments = Vec::new();
    let mut hash = Fnv1a::new();
    hash.u64(u64::from(xlen.bits()));
    hash.u64(entry);
    for (index, ph) in header
        .program_headers(endian, data)
        .map_err(truncated)?
        .iter()
        .enumerate()
    {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let paddr: u64 = ph.p_paddr(endian).into();
        let vaddr: u64 = ph.p_vaddr(endian).into();
        let memsz: u64 = ph.p_memsz(endian).into();
        let filesz: u64 = ph.p_filesz(endian).into();
        let out_of_range = ElfError::SegmentOutOfRange {
            index,
            addr: paddr,
            memsz,
            filesz,
        };
        if filesz > memsz || !matches!(paddr.checked_add(memsz), Some(end) if end <= limit) {
            return Err(out_of_range);
        }
        let bytes = ph.data(endian, data).map_err(|()| {
            ElfError::Truncated(format!("segment {index} extends past the end of the file"))
        })?;
        let flags = SegmentFlags(ph.p_flags(endian));
        hash.u64(paddr);
        hash.u64(memsz);
        hash.u64(u64::from(flags.0));
        hash.u64(bytes.len() as u64);
        hash.bytes(bytes);
        segments.push(Segment {
            vaddr,
            paddr,
            data: bytes.to_vec(),
            memsz,
            flags,
        });
    }
    if segments.is_empty() {
        return Err(ElfError::NoSegments);
    }

    let sections = header.sections(endian, data).map_err(truncated)?;
    let mut code_sections = Vec::new();
    let mut code_index = Vec::new();
    for (index, sh) in sections.iter().enumerate() {
        let flags: u64 = sh.sh_flags(endian).into();
        let is_code = sh.sh_type(endian) == elf::SHT_PROGBITS
            && flags & u64::from(elf::SHF_EXECINSTR) != 0
            && flags & u64::from(elf::SHF_ALLOC) != 0;
        code_index.push(is_code);
        if !is_code {
            continue;
        }
        let name = sections
            .section_name(endian, sh)
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let bytes = sh.data(endian, data).map_err(|_| {
            ElfError::Truncated(format!("section {name} extends past the end of the file"))
        })?;
        code_sections.push(CodeSection {
            name,
            addr: sh.sh_addr(endian).into(),
            data: bytes.to_vec(),
            index: index as u16,
        });
    }

    // A missing or broken symbol table still leaves a runnable program, so
    // symbols are best effort: only the headers and segments are required.
    let mut symbols = Vec::new();
    let mut data_marks = Vec::new();
    if let Ok(table) = sections.symbols(endian, data, elf::SHT_SYMTAB) {
        for sym in table.iter() {
            let Ok(name) = sym.name(endian, table.strings()) else {
                continue;
            };
            let kind = sym.st_type();
            let shndx = sym.st_shndx(endian);
            let in_code = code_index.get(usize::from(shndx)).copied().unwrap_or(false);
            if in_code && (name == b"$d" || name.starts_with(b"$d.")) {
                data_marks.push((sym.st_value(endian).into(), true));
            } else if in_code && (name == b"$x" || name.starts_with(b"$x")) {
                data_marks.push((sym.st_value(endian).into(), false));
            }
            // Mapping symbols (`$x`, `$d`) mark code/data, not places.
            if name.is_empty()
                || name.starts_with(b"$")
                || kind == elf::STT_SECTION
                || kind == elf::STT_FILE
                || shndx == elf::SHN_UNDEF
            {
                continue;
            }
            let bind = sym.st_bind();
            symbols.push(Symbol {
                name: String::from_utf8_lossy(name).into_owned(),
                addr: sym.st_value(endian).into(),
                size: sym.st_size(endian).into(),
                is_function: kind == elf::STT_FUNC,
                is_global: bind == elf::STB_GLOBAL || bind == elf::STB_WEAK,
                is_object: kind == elf::STT_OBJECT,
                in_code,
                section: shndx,
            });
        }
    }
    symbols.sort_by(|a, b| (a.addr, &a.name).cmp(&(b.addr, &b.name)));
    data_marks.sort();
    let find = |n: &str| symbols.iter().find(|s| s.name == n).map(|s| s.addr);
    let tohost = find("tohost");
    let fromhost = find("fromhost");
    let arch = sections
        .iter()
        .find(|sh| sh.sh_type(endian) == elf::SHT_RISCV_ATTRIBUTES)
        .and_then(|sh| sh.data(endian, data).ok())
        .and_then(arch_attribute);

    Ok(Elf {
        xlen,
        entry,
        segments,
        code_sections,
        tohost,
        fromhost,
        arch,
        symbols,
        data_marks,
        identity: hash.finish(),
    })
}

/// The `Tag_RISCV_arch` string of a RISC-V attributes section: the
/// NUL-terminated string after tag 5 that starts with `rv32` or `rv64`.
/// (The section is a list of tagged values; the arch string is the only
/// one that starts so, and finding it this way needs no full parse and
/// cannot fail on a section that is damaged elsewhere.)
fn arch_attribute(section: &[u8]) -> Option<String> {
    let at = section
        .windows(5)
        .position(|w| w[0] == 5 && (&w[1..] == b"rv32" || &w[1..] == b"rv64"))?;
    let rest = &section[at + 1..];
    let end = rest.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&rest[..end]).ok().map(str::to_string)
}

impl Elf {
    /// The single-letter standard extensions the program was built for
    /// (`g` spelled out as `imafd`), in the order of the arch string;
    /// `None` without an arch attribute.
    pub fn extensions(&self) -> Option<String> {
        let arch = self.arch.as_deref()?;
        let mut letters = String::new();
        for (i, part) in arch.split('_').enumerate() {
            // The first part is `rv32` or `rv64`, its base, and (in the
            // long form) more letters with versions: `rv32i2p1`,
            // `rv32imac`; later parts are one extension each (`m2p0`) or
            // a multi-letter one (`zicsr2p0`), which is not a letter here.
            let body = if i == 0 { part.get(4..)? } else { part };
            let single =
                i == 0 || body.len() == 1 || body[1..].starts_with(|c: char| c.is_ascii_digit());
            if !single || body.starts_with(['z', 's', 'x']) {
                continue;
            }
            for c in body.chars().filter(char::is_ascii_lowercase) {
                if c == 'p' {
                    // A version's `p` (2p1), not the P extension.
                    continue;
                }
                let spelled = if c == 'g' {
                    "imafd".to_string()
                } else {
                    c.to_string()
                };
                for e in spelled.chars() {
                    if !letters.contains(e) {
                        letters.push(e);
                    }
                }
            }
        }
        Some(letters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 executable: one R+X PT_LOAD segment of `code` at
    /// 0x8000_0000 with 16 bytes of memory after it, no sections.
    fn tiny_elf(machine: u16, code: &[u8]) -> Vec<u8> {
        use retrace_testkit::elf::{ElfImage, PF_R, PF_X};
        ElfImage::riscv64()
            .machine(machine)
            .flags(PF_R | PF_X)
            .bss(16)
            .build(code)
    }

    /// The arch attribute of gcc's builds, in the long and the short
    /// form, and a damaged section.
    #[test]
    fn reads_the_extensions_a_program_was_built_for() {
        let with = |arch: &str| Elf {
            arch: Some(arch.to_string()),
            ..Elf::parse(&tiny_elf(elf::EM_RISCV, &[0x13, 0, 0, 0])).unwrap()
        };
        let fp = with("rv32i2p1_m2p0_a2p1_f2p2_c2p0_zicsr2p0_zmmul1p0");
        assert_eq!(fp.extensions().as_deref(), Some("imafc"));
        assert_eq!(with("rv64gc").extensions().as_deref(), Some("imafdc"));
        assert_eq!(with("rv32imac").extensions().as_deref(), Some("imac"));
        let mut section = b"Ariscv\0\x01\x05rv64i2p1_d2p2\0".to_vec();
        assert_eq!(arch_attribute(&section).as_deref(), Some("rv64i2p1_d2p2"));
        section.truncate(section.len() - 1);
        assert_eq!(arch_attribute(&section), None);
        assert_eq!(arch_attribute(b"garbage\x05rv3"), None);
    }

    #[test]
    fn reads_a_minimal_executable() {
        let e = Elf::parse(&tiny_elf(elf::EM_RISCV, &[0x13, 0, 0, 0])).unwrap();
        assert_eq!(e.xlen, Xlen::Rv64);
        assert_eq!(e.entry, 0x8000_0000);
        assert_eq!(e.segments.len(), 1);
        assert_eq!(e.segments[0].data, vec![0x13, 0, 0, 0]);
        assert_eq!(e.segments[0].memsz, 20);
        assert!(e.segments[0].flags.x());
        assert_eq!(e.load_extent(), (0x8000_0000, 0x8000_0014));
    }

    #[test]
    fn identity_depends_on_contents_only() {
        let a = Elf::parse(&tiny_elf(elf::EM_RISCV, &[0x13, 0, 0, 0])).unwrap();
        let b = Elf::parse(&tiny_elf(elf::EM_RISCV, &[0x13, 0, 0, 0])).unwrap();
        let c = Elf::parse(&tiny_elf(elf::EM_RISCV, &[0x93, 0, 0, 0])).unwrap();
        assert_eq!(a.identity(), b.identity());
        assert_ne!(a.identity(), c.identity());
    }

    #[test]
    fn names_a_foreign_machine() {
        let err = Elf::parse(&tiny_elf(elf::EM_X86_64, &[0x90])).unwrap_err();
        assert_eq!(
            err,
            ElfError::WrongMachine {
                machine: 62,
                name: "x86-64"
            }
        );
        assert!(err.to_string().contains("x86-64"));
    }

    #[test]
    fn rejects_non_elf_and_truncation() {
        assert_eq!(Elf::parse(b"#!/bin/sh\n").unwrap_err(), ElfError::NotElf);
        let full = tiny_elf(elf::EM_RISCV, &[0x13, 0, 0, 0]);
        for len in 4..full.len() {
            assert!(Elf::parse(&full[..len]).is_err(), "accepted {len} bytes");
        }
    }

    #[test]
    fn symbol_lookup_prefers_functions_and_reports_offsets() {
        let mut e = Elf::parse(&tiny_elf(elf::EM_RISCV, &[0x13, 0, 0, 0])).unwrap();
        let sym = |name: &str, addr, f| Symbol {
            name: name.into(),
            addr,
            size: 8,
            is_function: f,
            is_global: false,
            is_object: false,
            in_code: true,
            section: 1,
        };
        e.symbols = vec![
            sym("a_label", 0x100, false),
            sym("main", 0x100, true),
            sym("z", 0x200, false),
        ];
        assert_eq!(e.describe(0x100).as_deref(), Some("main"));
        assert_eq!(e.describe(0x1f0).as_deref(), Some("main+0xf0"));
        assert_eq!(e.describe(0x208).as_deref(), Some("z+0x8"));
        assert_eq!(e.describe(0x10), None);
        assert_eq!(e.symbol_named("z").map(|s| s.addr), Some(0x200));
    }

    proptest::proptest! {
        #[test]
        fn mutated_elf_never_panics(
            edits in proptest::collection::vec((0usize..200, proptest::prelude::any::<u8>()), 0..8),
            cut in 0usize..220,
        ) {
            let mut bytes = tiny_elf(elf::EM_RISCV, &[0x13, 0, 0, 0, 0x67, 0x80, 0, 0]);
            for (at, v) in edits {
                if let Some(b) = bytes.get_mut(at) {
                    *b = v;
                }
            }
            bytes.truncate(cut);
            let _ = Elf::parse(&bytes);
        }
    }
}
