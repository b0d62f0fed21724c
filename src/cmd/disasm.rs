//! `retrace disasm`: objdump-style disassembly of a RISC-V ELF file.
//!
//! The instruction lines match `riscv64-unknown-elf-objdump -d` (binutils
//! 2.40) exactly: the address column with objdump's leading-zero trimming,
//! the encoding padded as objdump pads it, the mnemonic and operands from
//! `retrace-isa`, the `<sym+off>` after branch targets, and the `# addr
//! <sym>` comment objdump adds when an `auipc`/`lui` result (or `gp`, `tp`,
//! `zero`) is used as a base ([`AddressComments`]). Data embedded in code (`$d` mapping symbols)
//! and runs of zero bytes are shown the way objdump shows them.

use crate::cmd::common::load_elf;
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_isa::objdump::AddressComments;
use retrace_isa::{decode, disasm, inst_len, Xlen};
use retrace_program::{CodeSection, Elf, Symbol};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace disasm`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  retrace disasm prog.elf\n  retrace disasm prog.elf --function main"
)]
pub struct Args {
    /// The program: a RISC-V ELF executable.
    pub program: PathBuf,
    /// Only this function (by symbol name).
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
}

/// Entry point of `retrace disasm`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let range = match &args.function {
        None => None,
        Some(name) => {
            let sym = elf.symbol_named(name).ok_or_else(|| {
                tag(
                    anyhow!(
                        "no symbol {name:?} in {}; list the functions with `retrace disasm {}`",
                        args.program.display(),
                        args.program.display()
                    ),
                    Status::BadInput,
                )
            })?;
            let end = if sym.size > 0 {
                sym.addr + sym.size
            } else {
                elf.symbols
                    .iter()
                    .map(|s| s.addr)
                    .find(|&a| a > sym.addr)
                    .unwrap_or(u64::MAX)
            };
            Some((sym.addr, end))
        }
    };
    let file = args.program.file_name().map_or_else(
        || args.program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let text = render(&elf, &file, range);
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// objdump's symbol for an address: the nearest at or below it; among
/// several at that address, one in the section being disassembled, else
/// the first in objdump's order (functions, then globals, then by name).
fn symbol_for<'e>(elf: &'e Elf, vma: u64, sec: &CodeSection) -> Option<&'e Symbol> {
    // Below every symbol objdump still names the first one (`<sym-0x20>`).
    let end = elf.symbols.partition_point(|s| s.addr <= vma).max(1);
    let top = elf.symbols.get(..end)?.last()?.addr;
    let start = elf.symbols[..end].partition_point(|s| s.addr < top);
    let same = &elf.symbols[start..end];
    // binutils' compare_symbols: functions, then objects, then global
    // before local, then by name.
    let order = |s: &&Symbol| (!s.is_function, !s.is_object, !s.is_global, s.name.clone());
    let in_sec = |s: &&&Symbol| s.section == sec.index;
    let mut sorted: Vec<&Symbol> = same.iter().collect();
    sorted.sort_by_key(order);
    sorted.iter().find(in_sec).or(sorted.first()).copied()
}

fn with_symbol(elf: &Elf, vma: u64, sec: &CodeSection) -> String {
    match symbol_for(elf, vma, sec) {
        Some(s) if s.addr == vma => format!("{vma:x} <{}>", s.name),
        Some(s) if s.addr > vma => format!("{vma:x} <{}-0x{:x}>", s.name, s.addr - vma),
        Some(s) => format!("{vma:x} <{}+0x{:x}>", s.name, vma - s.addr),
        None => format!("{vma:x}"),
    }
}

/// objdump's address column: the section's addresses with leading zeros
/// dropped in groups of four (always keeping one), the rest as spaces.
fn addr_chars(elf: &Elf, sec: &CodeSection) -> usize {
    let digits = if elf.xlen == Xlen::Rv64 { 16 } else { 8 };
    let last = format!("{:0digits$x}", sec.addr + sec.data.len() as u64);
    let zeros = last.bytes().take_while(|&b| b == b'0').count();
    if zeros == 0 || (zeros == last.len() && sec.addr == 0) {
        0
    } else {
        (zeros - 1) & !3
    }
}

fn fmt_addr(addr: u64, digits: usize, skip: usize) -> String {
    let full = format!("{addr:0digits$x}");
    let mut s: Vec<u8> = full.as_bytes()[skip..].to_vec();
    let mut i = 0;
    while i + 1 < s.len() && s[i] == b'0' {
        s[i] = b' ';
        i += 1;
    }
    String::from_utf8(s).unwrap_or_default()
}

/// The whole listing.
fn render(elf: &Elf, file: &str, range: Option<(u64, u64)>) -> String {
    let mut o = String::new();
    let bits = if elf.xlen == Xlen::Rv64 { 64 } else { 32 };
    let digits = bits / 4;
    let _ = write!(o, "\n{file}:     file format elf{bits}-littleriscv\n\n");
    let gp = elf
        .symbols
        .iter()
        .find(|s| s.name == "__global_pointer$")
        .map(|s| s.addr);
    let mut st = AddressComments::new(elf.xlen, gp);
    for sec in &elf.code_sections {
        let sec_end = sec.addr + sec.data.len() as u64;
        if let Some((lo, hi)) = range {
            if hi <= sec.addr || lo >= sec_end {
                continue;
            }
        }
        let _ = write!(o, "\nDisassembly of section {}:\n", sec.name);
        let skip = addr_chars(elf, sec);
        let (start, stop) = match range {
            Some((lo, hi)) => (lo.max(sec.addr), hi.min(sec_end)),
            None => (sec.addr, sec_end),
        };
        let mut pc = start;
        let mut last_label: Option<u64> = None;
        while pc < stop {
            // A label wherever a symbol of this section starts.
            if let Some(s) = symbol_for(elf, pc, sec).filter(|s| s.addr == pc && s.in_code) {
                if last_label != Some(pc) {
                    let _ = write!(o, "\n{:0digits$x} <{}>:\n", pc, s.name);
                    last_label = Some(pc);
                }
            }
            let off = (pc - sec.addr) as usize;
            let bytes = &sec.data[off..(stop - sec.addr) as usize];
            let next_sym = elf
                .symbols
                .iter()
                .map(|s| s.addr)
                .find(|&a| a > pc && a < stop)
                .unwrap_or(stop);
            let in_object =
                symbol_for(elf, pc, sec).is_some_and(|s| s.is_object && s.section == sec.index);
            let mapped_data = elf
                .data_marks
                .iter()
                .take_while(|(a, _)| *a <= pc)
                .last()
                .is_some_and(|(_, d)| *d);
            let next_mark = elf
                .data_marks
                .iter()
                .map(|(a, _)| *a)
                .find(|&a| a > pc)
                .unwrap_or(u64::MAX);
            let region_end = next_sym.min(next_mark).min(stop);
            // Runs of zero bytes are elided as objdump does: at least 8 (a
            // multiple of 4 unless they reach the end of the region), or 1
            // or 2 at its very end.
            // (objdump's regions end at symbols, not at mapping symbols).
            let zero_end = next_sym.min(stop);
            let zeros = bytes[..(zero_end - pc) as usize]
                .iter()
                .take_while(|&&b| b == 0)
                .count() as u64;
            let at_end = pc + zeros == zero_end;
            let zeros = if at_end { zeros } else { zeros & !3 };
            if zeros >= 8 || (at_end && zeros > 0 && zeros < 3) {
                o.push_str("\t...\n");
                pc += zeros;
                continue;
            }
            // Objects are dumped as hex by objdump itself.
            if in_object {
                pc = data_line(
                    &mut o,
                    pc,
                    &bytes[..(region_end - pc).min(16) as usize],
                    digits,
                    skip,
                );
                continue;
            }
            // `$d` regions: the RISC-V disassembler's `.byte/.short/.word/
            // .dword`, as long as fits before the next mapping symbol.
            if mapped_data {
                let left = (next_mark.min(sec_end) - pc).min(4);
                let n = if left == 3 { 2 } else { left } as usize;
                let mut v = [0u8; 8];
                v[..n].copy_from_slice(&bytes[..n]);
                let v = u64::from_le_bytes(v);
                let (col, dir) = match n {
                    1 => (
                        format!("{v:02x}                "),
                        format!(".byte\t0x{v:02x}"),
                    ),
                    2 => (
                        format!("{v:04x}                "),
                        format!(".short\t0x{v:04x}"),
                    ),
                    _ => (format!("{v:08x}          "), format!(".word\t0x{v:08x}")),
                };
                let _ = writeln!(o, "{}:\t{col}\t{dir}", fmt_addr(pc, digits, skip));
                pc += n as u64;
                continue;
            }
            let low = u16::from_le_bytes([bytes[0], *bytes.get(1).unwrap_or(&0)]);
            let len = inst_len(low).min(bytes.len());
            let mut word = [0u8; 4];
            word[..len].copy_from_slice(&bytes[..len]);
            let bits32 = u32::from_le_bytes(word);
            let enc = if len == 2 {
                format!("{:04x}                ", low)
            } else {
                format!("{bits32:08x}          ")
            };
            let _ = write!(o, "{}:\t{enc}\t", fmt_addr(pc, digits, skip));
            match decode(bits32, elf.xlen) {
                Ok(inst) if usize::from(inst.len) <= bytes.len() => {
                    let d = disasm(&inst, pc, elf.xlen);
                    let _ = write!(o, "{d}");
                    if let Some(t) = d.target() {
                        let with = with_symbol(elf, t, sec);
                        if let Some(sym) = with.split_once(' ').map(|(_, s)| s) {
                            let _ = write!(o, " {sym}");
                        }
                    }
                    if let Some(a) = st.step(&inst, pc) {
                        let _ = write!(o, " # {}", with_symbol(elf, a, sec));
                    }
                    o.push('\n');
                    pc += u64::from(inst.len);
                }
                // objdump's words for what it cannot decode.
                _ => {
                    if len == 2 && low == 0 {
                        o.push_str("unimp\n");
                    } else if len == 2 {
                        let _ = writeln!(o, ".2byte\t0x{low:x}");
                    } else {
                        let _ = writeln!(o, ".4byte\t0x{bits32:x}");
                    }
                    pc += len as u64;
                }
            }
        }
    }
    o
}

/// One objdump data line: up to 16 bytes as little-endian 16-bit chunks,
/// then the printable characters.
fn data_line(o: &mut String, pc: u64, bytes: &[u8], digits: usize, skip: usize) -> u64 {
    let n = bytes.len().clamp(1, 16);
    let _ = write!(o, "{}:\t", fmt_addr(pc, digits, skip));
    let mut hex = String::new();
    for chunk in bytes[..n].chunks(2) {
        match chunk {
            [a, b] => {
                let _ = write!(hex, "{b:02x}{a:02x} ");
            }
            [a] => {
                let _ = write!(hex, "{a:02x} ");
            }
            _ => {}
        }
    }
    let ascii: String = bytes[..n]
        .iter()
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    let _ = writeln!(o, "{hex:<40}    {ascii}");
    pc + n as u64
}
