//! Disassembly text exactly as GNU `objdump -d` prints it.
//!
//! The reference is the installed `riscv64-unknown-elf-objdump` (binutils
//! 2.40) with its default options: it prefers aliases (`li`, `mv`, `ret`,
//! `beqz`, `sext.w`, …), prints compressed instructions under the name of the
//! 32-bit instruction they expand to, and — a quirk of 2.40 — prints the
//! register-immediate ALU operations under the register-register name
//! (`addi a0,a0,1` is `add a0,a0,1`, `andi` is `and`, `slli` is `sll`,
//! `csrrwi` is `csrrw`). Compressed HINT encodings whose alias needs a
//! non-zero register print under their `c.` name (`c.li zero,1`,
//! `c.slli64 a0`), as objdump does. `tests/objdump_agrees.rs` checks every
//! rule here against the real tool.
//!
//! objdump prints a branch or jump target as an absolute hex address followed
//! by ` <symbol+offset>`. This crate has no symbols: [`Disasm`] prints the
//! address only and [`Disasm::target`] returns it, so a caller with a symbol
//! table appends ` <sym+0x10>` itself:
//!
//! ```
//! use retrace_isa::{decode, disasm, Xlen};
//! let inst = decode(0x0100_006f, Xlen::Rv32).unwrap(); // j +16
//! let d = disasm(&inst, 0x8000_0000, Xlen::Rv32);
//! assert_eq!(d.to_string(), "j\t80000010");
//! assert_eq!(d.target(), Some(0x8000_0010));
//! // a caller with symbols: format!("{d} <{}>", "loop")
//! ```

use crate::csr;
use crate::fp;
use crate::inst::{Inst, Op, Xlen};
use std::fmt::{self, Write};

/// ABI names of the integer registers, as objdump prints them (`s0`, not `fp`).
const REG_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

/// The ABI name of integer register `r` (`zero`, `ra`, `sp`, …, `t6`);
/// `r` is taken modulo 32.
pub fn reg_name(r: u8) -> &'static str {
    REG_NAMES[(r & 31) as usize]
}

/// ABI names of the FP registers, as objdump prints them.
const FREG_NAMES: [&str; 32] = [
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
    "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
    "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
];

/// The ABI name of FP register `r` (`ft0`, …, `ft11`); `r` is taken
/// modulo 32.
pub fn freg_name(r: u8) -> &'static str {
    FREG_NAMES[(r & 31) as usize]
}

/// Rounding-mode names by `rm` value; 5 and 6 are reserved and never
/// decode.
const RM_NAMES: [&str; 8] = [
    "rne", "rtz", "rdn", "rup", "rmm", "unknown", "unknown", "dyn",
];

/// Fence predecessor/successor sets, indexed by the 4-bit `iorw` field;
/// objdump prints an empty set as `unknown`.
const FENCE_SETS: [&str; 16] = [
    "unknown", "w", "r", "rw", "o", "ow", "or", "orw", "i", "iw", "ir", "irw", "io", "iow", "ior",
    "iorw",
];

/// An instruction ready to print; see [`disasm`].
#[derive(Clone, Copy, Debug)]
pub struct Disasm {
    inst: Inst,
    pc: u64,
    xlen: Xlen,
}

/// Prepares `inst`, located at `pc`, for printing as objdump's mnemonic and
/// operands columns, separated by a tab (no tab when there are no operands,
/// as in `ret`). Branch and jump targets print as bare hex addresses; see
/// [`Disasm::target`] for appending a symbol. Printing allocates nothing.
pub fn disasm(inst: &Inst, pc: u64, xlen: Xlen) -> Disasm {
    Disasm {
        inst: *inst,
        pc,
        xlen,
    }
}

impl Disasm {
    /// The absolute branch or jump target printed as the last operand, if
    /// the instruction has one (conditional branches and `jal`). objdump
    /// follows it with ` <symbol+offset>`.
    pub fn target(&self) -> Option<u64> {
        self.inst
            .direct_target(self.pc)
            .map(|t| t & self.xlen.mask())
    }
}

/// The operand column, built from pieces so that nothing is allocated.
enum Arg {
    Reg(u8),
    /// FP register.
    FReg(u8),
    /// Signed decimal immediate.
    Dec(i32),
    /// Unsigned hex immediate with `0x`.
    Hex(u32),
    /// Branch/jump target: hex address without `0x`.
    Addr(u64),
    /// `imm(reg)`.
    Mem(i32, u8),
    /// `(reg)`.
    Ind(u8),
    Csr(csr::Csr),
    Text(&'static str),
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Arg::Reg(r) => f.write_str(reg_name(r)),
            Arg::FReg(r) => f.write_str(freg_name(r)),
            Arg::Dec(v) => write!(f, "{v}"),
            Arg::Hex(v) => write!(f, "0x{v:x}"),
            Arg::Addr(a) => write!(f, "{a:x}"),
            Arg::Mem(off, r) => write!(f, "{off}({})", reg_name(r)),
            Arg::Ind(r) => write!(f, "({})", reg_name(r)),
            // objdump prints an unnamed CSR as bare hex.
            Arg::Csr(c) => match c.name() {
                Some(n) => f.write_str(n),
                None => write!(f, "0x{:x}", c.0),
            },
            Arg::Text(s) => f.write_str(s),
        }
    }
}

/// Writes `mnemonic[suffix]`, then a tab and the comma-separated operands.
fn out(f: &mut fmt::Formatter<'_>, mnem: &str, suffix: &str, args: &[Arg]) -> fmt::Result {
    f.write_str(mnem)?;
    f.write_str(suffix)?;
    for (i, a) in args.iter().enumerate() {
        f.write_char(if i == 0 { '\t' } else { ',' })?;
        fmt::Display::fmt(a, f)?;
    }
    Ok(())
}

impl fmt::Display for Disasm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Arg::*;
        use Op::*;
        let i = &self.inst;
        let (rd, rs1, rs2, imm) = (i.rd, i.rs1, i.rs2, i.imm);
        let c = i.is_compressed();
        let o = |f: &mut fmt::Formatter<'_>, m: &str, args: &[Arg]| out(f, m, "", args);
        let target = Addr(self.target().unwrap_or(0));
        match i.op {
            Lui if c && rd == 0 => o(f, "c.lui", &[Reg(rd), Hex((imm as u32) >> 12)]),
            Lui | Auipc => o(f, i.op.mnemonic(), &[Reg(rd), Hex((imm as u32) >> 12)]),
            Jal => match rd {
                0 => o(f, "j", &[target]),
                1 => o(f, "jal", &[target]),
                _ => o(f, "jal", &[Reg(rd), target]),
            },
            Jalr => match (rd, rs1, imm) {
                (0, 1, 0) => o(f, "ret", &[]),
                (0, _, 0) => o(f, "jr", &[Reg(rs1)]),
                (0, _, _) => o(f, "jr", &[Mem(imm, rs1)]),
                (1, _, 0) => o(f, "jalr", &[Reg(rs1)]),
                (1, _, _) => o(f, "jalr", &[Mem(imm, rs1)]),
                (_, _, 0) => o(f, "jalr", &[Reg(rd), Reg(rs1)]),
                _ => o(f, "jalr", &[Reg(rd), Mem(imm, rs1)]),
            },
            Beq if rs2 == 0 => o(f, "beqz", &[Reg(rs1), target]),
            Bne if rs2 == 0 => o(f, "bnez", &[Reg(rs1), target]),
            Bge if rs1 == 0 => o(f, "blez", &[Reg(rs2), target]),
            Bge if rs2 == 0 => o(f, "bgez", &[Reg(rs1), target]),
            Blt if rs2 == 0 => o(f, "bltz", &[Reg(rs1), target]),
            Blt if rs1 == 0 => o(f, "bgtz", &[Reg(rs2), target]),
            Beq | Bne | Blt | Bge | Bltu | Bgeu => {
                o(f, i.op.mnemonic(), &[Reg(rs1), Reg(rs2), target])
            }
            Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => o(f, i.op.mnemonic(), &[Reg(rd), Mem(imm, rs1)]),
            Sb | Sh | Sw | Sd => o(f, i.op.mnemonic(), &[Reg(rs2), Mem(imm, rs1)]),

            // Compressed HINTs: the alias needs rd != 0, so objdump falls
            // back to the compressed instruction's own name.
            Addi if c && rd == 0 && i.raw >> 13 == 2 => o(f, "c.li", &[Reg(rd), Dec(imm)]),
            Addi if c && rd == 0 && imm != 0 => o(f, "c.nop", &[Dec(imm)]),
            Slli if c && imm == 0 => o(f, "c.slli64", &[Reg(rd)]),
            Srli if c && imm == 0 => o(f, "c.srli64", &[Reg(rd)]),
            Srai if c && imm == 0 => o(f, "c.srai64", &[Reg(rd)]),
            Slli if c && rd == 0 => o(f, "c.slli", &[Reg(rd), Hex(imm as u32)]),
            // c.mv and c.add with rd = x0 expand to the same `add x0, x0, rs2`;
            // bit 12 tells which one was written.
            Add if c && rd == 0 && i.raw & 0x1000 == 0 => o(f, "c.mv", &[Reg(rd), Reg(rs2)]),
            Add if c && rd == 0 => o(f, "c.add", &[Reg(rd), Reg(rs2)]),
            // c.addi rd, 0 (a HINT) keeps the `add` spelling rather than `mv`.
            Addi if c && imm == 0 && rd == rs1 && rd != 0 => {
                o(f, "add", &[Reg(rd), Reg(rs1), Dec(imm)])
            }

            Addi if rd == 0 && rs1 == 0 && imm == 0 => o(f, "nop", &[]),
            Addi if rs1 == 0 => o(f, "li", &[Reg(rd), Dec(imm)]),
            Addi if imm == 0 => o(f, "mv", &[Reg(rd), Reg(rs1)]),
            Addi => o(f, "add", &[Reg(rd), Reg(rs1), Dec(imm)]),
            Sltiu if imm == 1 => o(f, "seqz", &[Reg(rd), Reg(rs1)]),
            Xori if imm == -1 => o(f, "not", &[Reg(rd), Reg(rs1)]),
            Andi if imm == 0xff => o(f, "zext.b", &[Reg(rd), Reg(rs1)]),
            Slti | Sltiu => o(f, i.op.mnemonic(), &[Reg(rd), Reg(rs1), Dec(imm)]),
            Xori => o(f, "xor", &[Reg(rd), Reg(rs1), Dec(imm)]),
            Ori => o(f, "or", &[Reg(rd), Reg(rs1), Dec(imm)]),
            Andi => o(f, "and", &[Reg(rd), Reg(rs1), Dec(imm)]),
            Addiw if imm == 0 => o(f, "sext.w", &[Reg(rd), Reg(rs1)]),
            Addiw => o(f, "addw", &[Reg(rd), Reg(rs1), Dec(imm)]),
            Slli | Srli | Srai | Slliw | Srliw | Sraiw => {
                let m = match i.op {
                    Slli => "sll",
                    Srli => "srl",
                    Srai => "sra",
                    Slliw => "sllw",
                    Srliw => "srlw",
                    _ => "sraw",
                };
                o(f, m, &[Reg(rd), Reg(rs1), Hex(imm as u32)])
            }
            Add if rs1 == 0 && c => o(f, "mv", &[Reg(rd), Reg(rs2)]),
            Sub if rs1 == 0 => o(f, "neg", &[Reg(rd), Reg(rs2)]),
            Subw if rs1 == 0 => o(f, "negw", &[Reg(rd), Reg(rs2)]),
            Slt if rs2 == 0 => o(f, "sltz", &[Reg(rd), Reg(rs1)]),
            Slt if rs1 == 0 => o(f, "sgtz", &[Reg(rd), Reg(rs2)]),
            Sltu if rs1 == 0 => o(f, "snez", &[Reg(rd), Reg(rs2)]),
            Add | Sub | Sll | Slt | Sltu | Xor | Srl | Sra | Or | And | Addw | Subw | Sllw
            | Srlw | Sraw | Mul | Mulh | Mulhsu | Mulhu | Div | Divu | Rem | Remu | Mulw | Divw
            | Divuw | Remw | Remuw => o(f, i.op.mnemonic(), &[Reg(rd), Reg(rs1), Reg(rs2)]),

            Fence if rd == 0 && rs1 == 0 && imm == 0xff => o(f, "fence", &[]),
            Fence if rd == 0 && rs1 == 0 && imm >> 8 == 0 => o(
                f,
                "fence",
                &[
                    Text(FENCE_SETS[(imm >> 4 & 15) as usize]),
                    Text(FENCE_SETS[(imm & 15) as usize]),
                ],
            ),
            FenceI if rd == 0 && rs1 == 0 && imm == 0 => o(f, "fence.i", &[]),
            // Fields the ISA tells implementations to ignore but objdump
            // does not accept: it prints the word as data.
            Fence | FenceI => write!(f, ".4byte\t0x{:x}", i.raw),
            FenceTso | Pause | Ecall | Ebreak | Mret | Sret | Wfi => o(f, i.op.mnemonic(), &[]),
            SfenceVma => match (rs1, rs2) {
                (0, 0) => o(f, "sfence.vma", &[]),
                (_, 0) => o(f, "sfence.vma", &[Reg(rs1)]),
                _ => o(f, "sfence.vma", &[Reg(rs1), Reg(rs2)]),
            },

            Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => self.csr(f),

            Flw | Fld => o(f, i.op.mnemonic(), &[FReg(rd), Mem(imm, rs1)]),
            Fsw | Fsd => o(f, i.op.mnemonic(), &[FReg(rs2), Mem(imm, rs1)]),
            op if op.is_fp() => self.fp(f),

            LrW | LrD => out(f, i.op.mnemonic(), aqrl(imm), &[Reg(rd), Ind(rs1)]),
            _ => out(
                f,
                i.op.mnemonic(),
                aqrl(imm),
                &[Reg(rd), Reg(rs2), Ind(rs1)],
            ),
        }
    }
}

/// The `.aq`/`.rl`/`.aqrl` suffix of an LR/SC/AMO.
fn aqrl(imm: i32) -> &'static str {
    ["", ".rl", ".aq", ".aqrl"][(imm & 3) as usize]
}

impl Disasm {
    /// F/D operations other than loads and stores: the operands the
    /// operation has, in the register files `fp.rs` gives them, then the
    /// rounding mode unless it is `dyn` (objdump's default, which it
    /// omits). Sign injection of a register with itself prints as
    /// `fmv`/`fneg`/`fabs`.
    ///
    /// `fcvt.d.s`, `fcvt.d.w` and `fcvt.d.wu` are exact, and objdump
    /// (binutils 2.40) knows them only with `rm` = `rne` (0), which it
    /// omits; with another rounding mode (legal, and ignored by the
    /// operation) it prints the word as `.4byte`. Here such a word prints
    /// with its rounding mode, `,dyn` included: a deliberate difference,
    /// named in `tests/objdump_agrees.rs`.
    fn fp(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Arg::*;
        use Op::*;
        let i = &self.inst;
        let Some((Some(rd_fp), Some(rs1_fp), rs2, _)) = fp::operands(i.op) else {
            return write!(f, ".4byte\t0x{:x}", i.raw);
        };
        let reg = |fp: bool, r: u8| if fp { FReg(r) } else { Reg(r) };
        let name = i.op.mnemonic();
        if matches!(
            i.op,
            FsgnjS | FsgnjnS | FsgnjxS | FsgnjD | FsgnjnD | FsgnjxD
        ) && i.rs1 == i.rs2
        {
            let alias = match i.op {
                FsgnjS => "fmv.s",
                FsgnjnS => "fneg.s",
                FsgnjxS => "fabs.s",
                FsgnjD => "fmv.d",
                FsgnjnD => "fneg.d",
                _ => "fabs.d",
            };
            return out(f, alias, "", &[FReg(i.rd), FReg(i.rs1)]);
        }
        let mut args = [Text(""), Text(""), Text(""), Text(""), Text("")];
        let mut n = 0;
        let mut push = |a: Arg| {
            args[n] = a;
            n += 1;
        };
        push(reg(rd_fp, i.rd));
        push(reg(rs1_fp, i.rs1));
        if rs2 {
            push(FReg(i.rs2));
        }
        if let Some(rs3) = i.rs3() {
            push(FReg(rs3));
        }
        if let Some(rm) = i.rm() {
            let implicit = if matches!(i.op, FcvtDS | FcvtDW | FcvtDWu) {
                0
            } else {
                7
            };
            if rm != implicit {
                push(Text(RM_NAMES[rm as usize]));
            }
        }
        out(f, name, "", &args[..n])
    }

    /// CSR instructions: `unimp`, the counter reads (`rdcycle`, …), `csrr`,
    /// `csrw`/`csrs`/`csrc` when `rd` is `x0`, else the full form; the
    /// immediate forms print under the register forms' names.
    fn csr(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Arg::*;
        use Op::*;
        let i = &self.inst;
        let (rd, csr) = (i.rd, csr::Csr(i.imm as u16));
        let src = match i.op {
            Csrrw | Csrrs | Csrrc => Reg(i.rs1),
            _ => Dec(i.rs1 as i32),
        };
        let (full, short) = match i.op {
            Csrrw | Csrrwi => ("csrrw", "csrw"),
            Csrrs | Csrrsi => ("csrrs", "csrs"),
            _ => ("csrrc", "csrc"),
        };
        // The F/D CSR aliases: reads (`frcsr`, `frrm`, `frflags`), swaps
        // (`fscsr`, `fsrm`, `fsflags`, without `rd` when it is `zero`) and
        // immediate swaps (`fsrmi`, `fsflagsi`, always with `rd`).
        let fp_csr = match csr {
            csr::FCSR => Some(("frcsr", "fscsr", None)),
            csr::FRM => Some(("frrm", "fsrm", Some("fsrmi"))),
            csr::FFLAGS => Some(("frflags", "fsflags", Some("fsflagsi"))),
            _ => None,
        };
        if let Some((read, swap, swap_imm)) = fp_csr {
            match i.op {
                Csrrs if i.rs1 == 0 => return out(f, read, "", &[Reg(rd)]),
                Csrrw if rd == 0 => return out(f, swap, "", &[src]),
                Csrrw => return out(f, swap, "", &[Reg(rd), src]),
                Csrrwi => {
                    if let Some(m) = swap_imm {
                        return out(f, m, "", &[Reg(rd), src]);
                    }
                }
                _ => {}
            }
        }
        // `csrw cycle, zero` is the canonical 32-bit unimp.
        if i.op == Csrrw && rd == 0 && i.rs1 == 0 && csr == csr::CYCLE {
            return out(f, "unimp", "", &[]);
        }
        if i.op == Csrrs && i.rs1 == 0 {
            let counter = match csr {
                csr::CYCLE => Some("rdcycle"),
                csr::TIME => Some("rdtime"),
                csr::INSTRET => Some("rdinstret"),
                csr::CYCLEH if self.xlen == Xlen::Rv32 => Some("rdcycleh"),
                csr::TIMEH if self.xlen == Xlen::Rv32 => Some("rdtimeh"),
                csr::INSTRETH if self.xlen == Xlen::Rv32 => Some("rdinstreth"),
                _ => None,
            };
            return match counter {
                Some(m) => out(f, m, "", &[Reg(rd)]),
                None => out(f, "csrr", "", &[Reg(rd), Csr(csr)]),
            };
        }
        if rd == 0 {
            out(f, short, "", &[Csr(csr), src])
        } else {
            out(f, full, "", &[Reg(rd), Csr(csr), src])
        }
    }
}
