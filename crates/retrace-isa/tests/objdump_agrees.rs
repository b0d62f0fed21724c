//! The oracle: GNU `riscv64-unknown-elf-objdump -d` and retrace-isa must
//! agree on every instruction line — same decode-or-reject verdict, same
//! mnemonic, same operands.
//!
//! Inputs:
//! - every `.elf` under `programs/bin/` (the example programs);
//! - picolibc's `libc.a` for rv32imac/ilp32 and rv64imac/lp64 (real compiler
//!   output, hundreds of thousands of instructions), and for the hard-float
//!   rv32imafc/ilp32f, rv32imafdc/ilp32d and rv64imafdc/lp64d;
//! - `tests/data/every_instruction.s`, assembled for both XLENs: every
//!   instruction and every alias case written out by hand;
//! - generated sweeps, assembled with `.insn` so objdump sees raw words:
//!   all 16-bit encodings, every major opcode × funct3 × funct7 with
//!   varied registers, random immediates per opcode, and every CSR number.
//!
//! The sweeps are assembled for `rv{32,64}imafdc_zicsr_zifencei_zihintpause`:
//! objdump prints `pause` only when the ELF declares Zihintpause, and F/D
//! instructions only when it declares F and D; retrace-isa always decodes
//! them. The sweep enumerates every F/D operation row (OP-FP `funct7` ×
//! `funct3` × every `rs2` selector, the FMA opcodes × `fmt` × `rm`).
//!
//! Deliberate differences with objdump (binutils 2.40), each accepted by
//! name in [`Tally::check`] and nowhere else:
//! - reserved encodings objdump prints ([`reserved_but_objdump_decodes`]),
//!   including F/D operations with the reserved rounding modes 5 and 6,
//!   which objdump prints with the operand `unknown`;
//! - `fcvt.d.s`, `fcvt.d.w`, `fcvt.d.wu` with a rounding mode other than
//!   `rne`: legal (the conversion is exact and ignores it) and decoded
//!   here, printed by objdump 2.40 as `.4byte` ([`exact_conversion_with_rm`]).
//!
//! One trial per source (`objdump_agrees::programs::sort-rv32-O2`,
//! `objdump_agrees::picolibc-rv64`, `objdump_agrees::sweep-rv32`, …), run in
//! parallel by libtest's pool. Every mismatch of a source is collected; its
//! trial fails with the count and the first 50. Without the tools a trial is
//! reported ignored with the reason, unless `RETRACE_REQUIRE_TOOLS=1`, which
//! makes a missing tool a failure (CI). `RETRACE_OBJDUMP_MISMATCHES=FILE`
//! writes the full list of mismatches of the trials that ran.

use retrace_isa::{decode, disasm, DecodeError, Inst, Op, Xlen};
use retrace_testkit::programs::{example_programs, scratch_dir};
use retrace_testkit::tools::{self, BINUTILS, OBJDUMP as OBJDUMP_TOOL};
use retrace_testkit::trials::{self, Completion, Failed, Trial};
use retrace_testkit::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

const OBJDUMP: &str = "riscv64-unknown-elf-objdump";
const AS: &str = "riscv64-unknown-elf-as";
const GCC: &str = "riscv64-unknown-elf-gcc";

/// Mnemonics objdump decodes that retrace-isa deliberately reports as
/// [`DecodeError::Unsupported`] (debug-mode `dret` belongs to Sdext).
const OBJDUMP_ONLY: &[&str] = &["dret"];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Assembles `source` for one XLEN and returns the object's path.
fn assemble(dir: &Path, name: &str, source: &str, xlen: Xlen, extra: &str) -> PathBuf {
    let (march, mabi, defsym) = match xlen {
        Xlen::Rv32 => ("rv32imafdc_zicsr_zifencei", "ilp32", "RV64=0"),
        Xlen::Rv64 => ("rv64imafdc_zicsr_zifencei", "lp64", "RV64=1"),
    };
    let s = dir.join(format!("{name}.s"));
    let o = dir.join(format!("{name}.o"));
    std::fs::write(&s, source).unwrap();
    let out = Command::new(AS)
        .arg(format!("-march={march}{extra}"))
        .arg(format!("-mabi={mabi}"))
        .args(["--defsym", defsym, "-o"])
        .arg(&o)
        .arg(&s)
        .output()
        .expect("run the assembler");
    assert!(
        out.status.success(),
        "assembling {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    o
}

fn objdump(path: &Path) -> String {
    let out = Command::new(OBJDUMP)
        .arg("-d")
        .arg(path)
        .output()
        .expect("run objdump");
    assert!(
        out.status.success(),
        "objdump {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("objdump prints UTF-8")
}

/// One instruction line of objdump's output.
struct Line<'a> {
    addr: u64,
    word: u32,
    len: usize,
    mnemonic: &'a str,
    operands: String,
    text: &'a str,
}

/// Parses `addr:\tencoding\tmnemonic\toperands`, dropping objdump's trailing
/// ` <sym+off>` and `# comment` which need symbols this crate lacks.
fn parse_line(line: &str) -> Option<Line<'_>> {
    let (addr, rest) = line.split_once(":\t")?;
    let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
    let mut cols = rest.splitn(3, '\t');
    let encoding = cols.next()?.trim();
    let mnemonic = cols.next()?.trim();
    let mut operands = cols.next().unwrap_or("").trim().to_string();
    if let Some(i) = operands.find('#') {
        operands.truncate(i);
    }
    let trimmed = operands.trim_end();
    let trimmed = match trimmed.rfind(" <") {
        Some(i) if trimmed.ends_with('>') => &trimmed[..i],
        _ => trimmed,
    };
    let operands = trimmed.trim_end().to_string();
    // objdump prints the encoding as 16-bit parcels, low parcel first, or
    // as one 32-bit value.
    let parcels: Vec<&str> = encoding.split(' ').filter(|p| !p.is_empty()).collect();
    let (word, len) = match parcels.as_slice() {
        [w] if w.len() == 8 => (u32::from_str_radix(w, 16).ok()?, 4),
        [h] if h.len() == 4 => (u32::from_str_radix(h, 16).ok()?, 2),
        [lo, hi, ..] if lo.len() == 4 => (
            u32::from_str_radix(lo, 16).ok()? | u32::from_str_radix(hi, 16).ok()? << 16,
            2 * parcels.len(),
        ),
        _ => return None,
    };
    Some(Line {
        addr,
        word,
        len,
        mnemonic,
        operands,
        text: line,
    })
}

/// Encodings the ISA manual reserves, which retrace-isa rejects, but which
/// objdump prints as instructions:
/// - RV32 shifts by an immediate with `shamt[5]` set: reserved in the 32-bit
///   encodings, and reserved for custom extensions in RV32C (objdump does
///   not look at the XLEN there);
/// - `c.addi16sp` with a zero immediate (`nzimm == 0` is reserved);
/// - F/D operations with rounding mode 5 or 6 (reserved), which objdump
///   prints with a last operand `unknown`.
fn reserved_but_objdump_decodes(l: &Line, xlen: Xlen) -> bool {
    let reserved_rm = l.mnemonic.starts_with('f') && l.operands.ends_with(",unknown");
    if reserved_rm {
        return true;
    }
    let w = l.word;
    let rv32_shift = if l.len == 2 {
        let c_slli = w & 0xe003 == 0x0002;
        let c_srli_srai = w & 0xe803 == 0x8001;
        w & 0x1000 != 0 && (c_slli || c_srli_srai)
    } else {
        let slli_srli_srai = w & 0x307f == 0x1013;
        slli_srli_srai && w & (1 << 25) != 0
    };
    (xlen == Xlen::Rv32 && rv32_shift) || (l.len == 2 && w == 0x6101)
}

/// `fcvt.d.s`, `fcvt.d.w`, `fcvt.d.wu` with a rounding mode other than
/// `rne` (0): legal encodings (the conversions are exact, so the mode
/// changes nothing), which retrace-isa decodes and prints with the mode,
/// and which objdump 2.40 knows only with `rne` and prints as `.4byte`.
fn exact_conversion_with_rm(inst: &Inst) -> bool {
    matches!(inst.op, Op::FcvtDS | Op::FcvtDW | Op::FcvtDWu) && inst.rm() != Some(0)
}

/// What objdump prints for words it does not decode.
fn objdump_rejects(l: &Line) -> bool {
    matches!(
        l.mnemonic,
        ".byte" | ".2byte" | ".4byte" | ".8byte" | ".insn" | "(bad)" | "unknown"
    ) || (l.mnemonic == "unimp" && l.len == 2)
}

#[derive(Default)]
struct Tally {
    compared: usize,
    rejected_by_both: usize,
    /// Lines where retrace-isa decodes a legal word objdump rejects, by a
    /// named deliberate difference.
    deliberate: usize,
    /// Operations of the lines where both agreed on a decoded instruction.
    agreed: BTreeSet<Op>,
    mismatches: Vec<String>,
    per_source: BTreeMap<String, (usize, usize)>,
}

impl Tally {
    /// Compares every instruction line of one objdump listing.
    fn check_listing(&mut self, source: &str, listing: &str) {
        let mut xlen = None;
        let (mut lines, mut bad) = (0, 0);
        for raw in listing.lines() {
            if raw.contains("file format elf32-littleriscv") {
                xlen = Some(Xlen::Rv32);
            } else if raw.contains("file format elf64-littleriscv") {
                xlen = Some(Xlen::Rv64);
            }
            let Some(l) = parse_line(raw) else { continue };
            let xlen = xlen.expect("objdump names the file format before any instruction");
            lines += 1;
            if let Some(m) = self.check(&l, xlen) {
                bad += 1;
                self.mismatches.push(format!("{source} [{xlen:?}]: {m}"));
            }
        }
        let e = self.per_source.entry(source.to_string()).or_default();
        e.0 += lines;
        e.1 += bad;
    }

    fn check(&mut self, l: &Line, xlen: Xlen) -> Option<String> {
        self.compared += 1;
        if l.len > 4 {
            return match decode(l.word, xlen) {
                Err(DecodeError::TooLong { .. }) => {
                    self.rejected_by_both += 1;
                    None
                }
                other => Some(format!("{}  => expected TooLong, got {other:?}", l.text)),
            };
        }
        match decode(l.word, xlen) {
            Ok(inst) => {
                if objdump_rejects(l) && exact_conversion_with_rm(&inst) {
                    self.deliberate += 1;
                    return None;
                }
                if inst.len as usize != l.len {
                    return Some(format!("{}  => length {}", l.text, inst.len));
                }
                let ours = disasm(&inst, l.addr, xlen).to_string();
                let (m, ops) = ours.split_once('\t').unwrap_or((&ours, ""));
                if m == l.mnemonic && ops == l.operands {
                    self.agreed.insert(inst.op);
                    None
                } else {
                    Some(format!("{}  => ours: {ours:?}", l.text))
                }
            }
            Err(e) => {
                let ok = objdump_rejects(l)
                    || (matches!(e, DecodeError::Illegal { .. })
                        && reserved_but_objdump_decodes(l, xlen))
                    || (matches!(e, DecodeError::Unsupported { .. })
                        && OBJDUMP_ONLY.contains(&l.mnemonic));
                if ok {
                    self.rejected_by_both += 1;
                    None
                } else {
                    Some(format!("{}  => ours: {e}", l.text))
                }
            }
        }
    }

    /// The trial's verdict; the mismatches also go to [`ALL_MISMATCHES`].
    fn finish(self) -> Result<(), Failed> {
        let mut report = String::new();
        for (src, (n, bad)) in &self.per_source {
            writeln!(report, "  {src}: {n} lines, {bad} mismatches").unwrap();
        }
        eprintln!(
            "objdump oracle: {} instruction lines compared ({} rejected by both, {} deliberate differences), {} mismatches\n{report}",
            self.compared,
            self.rejected_by_both,
            self.deliberate,
            self.mismatches.len()
        );
        if self.compared == 0 {
            return Err("no instruction line was compared".into());
        }
        if let Some(src) = self.per_source.keys().next() {
            ALL_MISMATCHES
                .lock()
                .unwrap()
                .insert(src.clone(), self.mismatches.clone());
        }
        if self.mismatches.is_empty() {
            return Ok(());
        }
        let first: Vec<&str> = self
            .mismatches
            .iter()
            .take(50)
            .map(|s| s.as_str())
            .collect();
        Err(format!(
            "{} mismatches with objdump; first {}:\n{}",
            self.mismatches.len(),
            first.len(),
            first.join("\n")
        )
        .into())
    }
}

/// Every trial's mismatches by source, for `RETRACE_OBJDUMP_MISMATCHES`.
static ALL_MISMATCHES: Mutex<BTreeMap<String, Vec<String>>> = Mutex::new(BTreeMap::new());

/// A register number, biased to the ones aliases care about.
fn reg(rng: &mut Rng) -> u32 {
    match rng.next_u32() % 8 {
        0 => 0,
        1 => 1,
        2 => 5,
        3 => 2,
        _ => rng.next_u32() % 32,
    }
}

/// Raw words for the sweep, as `(length, bits)`.
fn sweep_words(seed: u64) -> Vec<(usize, u32)> {
    let mut rng = Rng::new(seed);
    let mut words = Vec::new();
    // Every 16-bit encoding.
    for h in 0..=0xffffu32 {
        if h & 3 != 3 {
            words.push((2, h));
        }
    }
    let fields = |rng: &mut Rng| reg(rng) << 7 | reg(rng) << 15 | reg(rng) << 20;
    for opcode in 0..32u32 {
        if opcode & 7 == 7 {
            continue; // 48-bit and longer formats
        }
        let base = opcode << 2 | 3;
        // Every funct3 × funct7 with varied registers …
        for f3 in 0..8u32 {
            for f7 in 0..128u32 {
                words.push((4, base | f3 << 12 | f7 << 25 | fields(&mut rng)));
            }
        }
        // … and fully random immediates with special cases.
        for k in 0..600 {
            let w = match k % 4 {
                0 => rng.next_u32(),
                1 => rng.next_u32() & 0xfff0_7fff | fields(&mut rng) & (31 << 15),
                2 => (rng.next_u32() & 0x8000_0000) | fields(&mut rng) | rng.next_u32() & 0x7000,
                _ => {
                    rng.next_u32() & 0xfff0_0000
                        | fields(&mut rng) & 0xf_ff80
                        | rng.next_u32() & 0x7000
                }
            };
            words.push((4, (w & !0x7f) | base));
        }
    }
    // F and D: every OP-FP funct7 × funct3 × rs2 (rs2 selects the
    // conversion and must be zero for fsqrt/fmv/fclass), and the four FMA
    // opcodes × fmt × rm, with varied registers.
    for f7 in 0..128u32 {
        for f3 in 0..8u32 {
            for rs2 in 0..32u32 {
                let regs = fields(&mut rng) & !(31 << 20);
                words.push((4, f7 << 25 | rs2 << 20 | f3 << 12 | regs | 0x53));
            }
        }
    }
    for opcode in [0x43u32, 0x47, 0x4b, 0x4f] {
        for fmt in 0..4u32 {
            for rm in 0..8u32 {
                for _ in 0..4 {
                    let rs3 = reg(&mut rng);
                    let w = rs3 << 27 | fmt << 25 | rm << 12 | fields(&mut rng) | opcode;
                    words.push((4, w));
                }
            }
        }
    }
    // Every CSR with each instruction form.
    for csr in 0..4096u32 {
        let f3 = [1, 2, 3, 5, 6, 7][(csr % 6) as usize];
        let rs1 = if csr % 3 == 0 { 0 } else { reg(&mut rng) };
        let rd = if csr % 5 == 0 { 0 } else { reg(&mut rng) };
        words.push((4, csr << 20 | rs1 << 15 | f3 << 12 | rd << 7 | 0x73));
        words.push((4, csr << 20 | 0x2073 | (reg(&mut rng) << 7))); // csrr / rdcycle …
    }
    // Exact special words.
    for w in [
        0x0000_0073u32,
        0x0010_0073,
        0x1020_0073,
        0x3020_0073,
        0x1050_0073,
        0x7b20_0073,
        0x8330_000f,
        0x0100_000f,
        0x0ff0_000f,
        0x0000_100f,
        0xc000_1073,
        0x0000_0013,
    ] {
        words.push((4, w));
    }
    words
}

fn sweep_source(words: &[(usize, u32)]) -> String {
    let mut s = String::from("\t.text\n");
    for (len, w) in words {
        writeln!(s, "\t.insn {len}, 0x{w:x}").unwrap();
    }
    s
}

/// picolibc's libc.a for one `-march`/`-mabi`, if installed.
fn picolibc_archive(march: &str, mabi: &str) -> Option<PathBuf> {
    {
        let asked = Command::new(GCC)
            .args([
                &format!("-march={march}"),
                &format!("-mabi={mabi}"),
                "--specs=picolibc.specs",
                "-print-file-name=libc.a",
            ])
            .output()
            .ok()
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        let fallback = PathBuf::from(format!(
            "/usr/lib/picolibc/riscv64-unknown-elf/lib/{march}/{mabi}/libc.a"
        ));
        asked
            .filter(|p| p.is_absolute() && p.exists())
            .or_else(|| fallback.exists().then_some(fallback))
    }
}

/// One listing's trial: `source` names it, `listing` makes it.
fn listing_trial(
    name: String,
    needs: tools::Tools,
    source: String,
    listing: impl FnOnce() -> String + Send + 'static,
) -> Trial {
    trials::needing(name, needs, move || {
        let mut tally = Tally::default();
        tally.check_listing(&source, &listing());
        tally.finish()
    })
}

fn main() {
    let dir = scratch_dir("isa-objdump");
    let mut list = Vec::new();

    // The example programs.
    for p in example_programs() {
        let source = p.file_name();
        list.push(listing_trial(
            format!("objdump_agrees::programs::{}", p.name),
            OBJDUMP_TOOL,
            source,
            move || objdump(&p.path),
        ));
    }

    // picolibc: a missing library skips (or fails) like a missing tool.
    // The hard-float builds are real compiler output for F and D.
    for (march, mabi, tag) in [
        ("rv32imac", "ilp32", "rv32"),
        ("rv64imac", "lp64", "rv64"),
        ("rv32imafc", "ilp32f", "rv32imafc"),
        ("rv32imafdc", "ilp32d", "rv32imafdc"),
        ("rv64imafdc", "lp64d", "rv64gc"),
    ] {
        list.push(Trial::ignorable_test(
            format!("objdump_agrees::picolibc-{tag}"),
            move || {
                if let Some(reason) = BINUTILS.missing() {
                    return trials::skip(reason);
                }
                let Some(a) = picolibc_archive(march, mabi) else {
                    return trials::skip(format!(
                        "picolibc for {march} not installed (Debian: picolibc-riscv64-unknown-elf)"
                    ));
                };
                let source = a
                    .strip_prefix("/usr/lib/picolibc/riscv64-unknown-elf/lib")
                    .unwrap_or(&a);
                let mut tally = Tally::default();
                tally.check_listing(&format!("picolibc {}", source.display()), &objdump(&a));
                tally.finish().map(|()| Completion::Completed)
            },
        ));
    }

    // Hand-written instruction and alias cases, then the sweeps.
    for (xlen, tag, seed) in [(Xlen::Rv32, "rv32", 32), (Xlen::Rv64, "rv64", 64)] {
        let d = dir.clone();
        list.push(listing_trial(
            format!("objdump_agrees::every-instruction-{tag}"),
            BINUTILS,
            format!("every_instruction.s {tag}"),
            move || {
                let every =
                    std::fs::read_to_string(crate_dir().join("tests/data/every_instruction.s"))
                        .expect("tests/data/every_instruction.s");
                objdump(&assemble(
                    &d,
                    &format!("every_{tag}"),
                    &every,
                    xlen,
                    "_zihintpause",
                ))
            },
        ));
        let d = dir.clone();
        list.push(trials::needing(
            format!("objdump_agrees::sweep-{tag}"),
            BINUTILS,
            move || {
                let words = sweep_words(0x5eed_0000 + seed);
                let source = sweep_source(&words);
                let listing = objdump(&assemble(
                    &d,
                    &format!("sweep_{tag}"),
                    &source,
                    xlen,
                    "_zihintpause",
                ));
                let mut tally = Tally::default();
                tally.check_listing(&format!("sweep {tag}"), &listing);
                // The sweep is only a check of F and D if objdump decoded
                // every F/D operation of this XLEN and agreed on it.
                let missed: Vec<Op> = Op::ALL
                    .iter()
                    .copied()
                    .filter(|op| op.fp_extension().is_some())
                    .filter(|op| xlen == Xlen::Rv64 || !op.is_rv64_only())
                    .filter(|op| !tally.agreed.contains(op))
                    .collect();
                if !missed.is_empty() {
                    return Err(format!("no agreeing line for {missed:?}").into());
                }
                tally.finish()
            },
        ));
    }

    trials::run(list, move || {
        let _ = std::fs::remove_dir_all(&dir);
        if let Ok(path) = std::env::var("RETRACE_OBJDUMP_MISMATCHES") {
            let all = ALL_MISMATCHES.lock().unwrap();
            let lines: Vec<&str> = all.values().flatten().map(String::as_str).collect();
            std::fs::write(&path, lines.join("\n")).unwrap();
            eprintln!("all mismatches written to {path}");
        }
    })
}
