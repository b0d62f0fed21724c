//! The decoded instruction: a small fixed-size `Copy` value that every part of
//! retrace (engines, CFG builder, timing model, disassembler) reads. Compressed
//! instructions decode to the base operation they expand to, with `len == 2`
//! and their original bits kept in `raw`.

/// Register width of the target: selects which encodings are legal and how
/// `*W` and compressed instructions decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Xlen {
    /// 32-bit registers (RV32).
    Rv32,
    /// 64-bit registers (RV64).
    Rv64,
}

impl Xlen {
    /// Mask of the bits an address or register holds (`0xffff_ffff` on RV32).
    pub fn mask(self) -> u64 {
        match self {
            Xlen::Rv32 => u32::MAX as u64,
            Xlen::Rv64 => u64::MAX,
        }
    }

    /// Register width in bits (32 or 64).
    pub fn bits(self) -> u32 {
        match self {
            Xlen::Rv32 => 32,
            Xlen::Rv64 => 64,
        }
    }
}

use crate::fp;

macro_rules! ops {
    ($( $(#[$m:meta])* $name:ident = $mn:literal ),* $(,)?) => {
        /// Every operation retrace decodes (base mnemonic as in the ISA manual).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Op { $( $(#[$m])* #[doc = $mn] $name ),* }

        impl Op {
            /// Every operation, in declaration order.
            pub const ALL: &'static [Op] = &[ $( Op::$name ),* ];
            /// The base mnemonic (`"addi"`, `"lr.w"`, `"amoadd.d"` …), without
            /// aliases and without the `.aq`/`.rl` suffixes.
            pub fn mnemonic(self) -> &'static str {
                match self { $( Op::$name => $mn ),* }
            }
        }
    };
}

ops! {
    // RV32I / RV64I
    Lui = "lui", Auipc = "auipc", Jal = "jal", Jalr = "jalr",
    Beq = "beq", Bne = "bne", Blt = "blt", Bge = "bge", Bltu = "bltu", Bgeu = "bgeu",
    Lb = "lb", Lh = "lh", Lw = "lw", Ld = "ld", Lbu = "lbu", Lhu = "lhu", Lwu = "lwu",
    Sb = "sb", Sh = "sh", Sw = "sw", Sd = "sd",
    Addi = "addi", Slti = "slti", Sltiu = "sltiu", Xori = "xori", Ori = "ori", Andi = "andi",
    Slli = "slli", Srli = "srli", Srai = "srai",
    Add = "add", Sub = "sub", Sll = "sll", Slt = "slt", Sltu = "sltu", Xor = "xor",
    Srl = "srl", Sra = "sra", Or = "or", And = "and",
    Addiw = "addiw", Slliw = "slliw", Srliw = "srliw", Sraiw = "sraiw",
    Addw = "addw", Subw = "subw", Sllw = "sllw", Srlw = "srlw", Sraw = "sraw",
    Fence = "fence", FenceTso = "fence.tso", Pause = "pause", FenceI = "fence.i",
    Ecall = "ecall", Ebreak = "ebreak",
    // Privileged
    Mret = "mret", Sret = "sret", Wfi = "wfi", SfenceVma = "sfence.vma",
    // Zicsr
    Csrrw = "csrrw", Csrrs = "csrrs", Csrrc = "csrrc",
    Csrrwi = "csrrwi", Csrrsi = "csrrsi", Csrrci = "csrrci",
    // M
    Mul = "mul", Mulh = "mulh", Mulhsu = "mulhsu", Mulhu = "mulhu",
    Div = "div", Divu = "divu", Rem = "rem", Remu = "remu",
    Mulw = "mulw", Divw = "divw", Divuw = "divuw", Remw = "remw", Remuw = "remuw",
    // A
    LrW = "lr.w", ScW = "sc.w", AmoswapW = "amoswap.w", AmoaddW = "amoadd.w",
    AmoxorW = "amoxor.w", AmoandW = "amoand.w", AmoorW = "amoor.w",
    AmominW = "amomin.w", AmomaxW = "amomax.w", AmominuW = "amominu.w", AmomaxuW = "amomaxu.w",
    LrD = "lr.d", ScD = "sc.d", AmoswapD = "amoswap.d", AmoaddD = "amoadd.d",
    AmoxorD = "amoxor.d", AmoandD = "amoand.d", AmoorD = "amoor.d",
    AmominD = "amomin.d", AmomaxD = "amomax.d", AmominuD = "amominu.d", AmomaxuD = "amomaxu.d",
    // F
    Flw = "flw", Fsw = "fsw",
    FmaddS = "fmadd.s", FmsubS = "fmsub.s", FnmsubS = "fnmsub.s", FnmaddS = "fnmadd.s",
    FaddS = "fadd.s", FsubS = "fsub.s", FmulS = "fmul.s", FdivS = "fdiv.s", FsqrtS = "fsqrt.s",
    FsgnjS = "fsgnj.s", FsgnjnS = "fsgnjn.s", FsgnjxS = "fsgnjx.s",
    FminS = "fmin.s", FmaxS = "fmax.s",
    FcvtWS = "fcvt.w.s", FcvtWuS = "fcvt.wu.s", FcvtLS = "fcvt.l.s", FcvtLuS = "fcvt.lu.s",
    FcvtSW = "fcvt.s.w", FcvtSWu = "fcvt.s.wu", FcvtSL = "fcvt.s.l", FcvtSLu = "fcvt.s.lu",
    FmvXW = "fmv.x.w", FmvWX = "fmv.w.x",
    FeqS = "feq.s", FltS = "flt.s", FleS = "fle.s", FclassS = "fclass.s",
    // D
    Fld = "fld", Fsd = "fsd",
    FmaddD = "fmadd.d", FmsubD = "fmsub.d", FnmsubD = "fnmsub.d", FnmaddD = "fnmadd.d",
    FaddD = "fadd.d", FsubD = "fsub.d", FmulD = "fmul.d", FdivD = "fdiv.d", FsqrtD = "fsqrt.d",
    FsgnjD = "fsgnj.d", FsgnjnD = "fsgnjn.d", FsgnjxD = "fsgnjx.d",
    FminD = "fmin.d", FmaxD = "fmax.d",
    FcvtWD = "fcvt.w.d", FcvtWuD = "fcvt.wu.d", FcvtLD = "fcvt.l.d", FcvtLuD = "fcvt.lu.d",
    FcvtDW = "fcvt.d.w", FcvtDWu = "fcvt.d.wu", FcvtDL = "fcvt.d.l", FcvtDLu = "fcvt.d.lu",
    FmvXD = "fmv.x.d", FmvDX = "fmv.d.x",
    FeqD = "feq.d", FltD = "flt.d", FleD = "fle.d", FclassD = "fclass.d",
    FcvtSD = "fcvt.s.d", FcvtDS = "fcvt.d.s",
}

/// A pattern matching every F and D operation, for the exhaustive
/// matches outside this crate that treat them alike (`Op::is_fp` is the
/// same set as a function; a test keeps the two equal).
#[macro_export]
macro_rules! fp_ops {
    () => {
        $crate::Op::Flw
            | $crate::Op::Fsw
            | $crate::Op::FmaddS
            | $crate::Op::FmsubS
            | $crate::Op::FnmsubS
            | $crate::Op::FnmaddS
            | $crate::Op::FaddS
            | $crate::Op::FsubS
            | $crate::Op::FmulS
            | $crate::Op::FdivS
            | $crate::Op::FsqrtS
            | $crate::Op::FsgnjS
            | $crate::Op::FsgnjnS
            | $crate::Op::FsgnjxS
            | $crate::Op::FminS
            | $crate::Op::FmaxS
            | $crate::Op::FcvtWS
            | $crate::Op::FcvtWuS
            | $crate::Op::FcvtLS
            | $crate::Op::FcvtLuS
            | $crate::Op::FcvtSW
            | $crate::Op::FcvtSWu
            | $crate::Op::FcvtSL
            | $crate::Op::FcvtSLu
            | $crate::Op::FmvXW
            | $crate::Op::FmvWX
            | $crate::Op::FeqS
            | $crate::Op::FltS
            | $crate::Op::FleS
            | $crate::Op::FclassS
            | $crate::Op::Fld
            | $crate::Op::Fsd
            | $crate::Op::FmaddD
            | $crate::Op::FmsubD
            | $crate::Op::FnmsubD
            | $crate::Op::FnmaddD
            | $crate::Op::FaddD
            | $crate::Op::FsubD
            | $crate::Op::FmulD
            | $crate::Op::FdivD
            | $crate::Op::FsqrtD
            | $crate::Op::FsgnjD
            | $crate::Op::FsgnjnD
            | $crate::Op::FsgnjxD
            | $crate::Op::FminD
            | $crate::Op::FmaxD
            | $crate::Op::FcvtWD
            | $crate::Op::FcvtWuD
            | $crate::Op::FcvtLD
            | $crate::Op::FcvtLuD
            | $crate::Op::FcvtDW
            | $crate::Op::FcvtDWu
            | $crate::Op::FcvtDL
            | $crate::Op::FcvtDLu
            | $crate::Op::FmvXD
            | $crate::Op::FmvDX
            | $crate::Op::FeqD
            | $crate::Op::FltD
            | $crate::Op::FleD
            | $crate::Op::FclassD
            | $crate::Op::FcvtSD
            | $crate::Op::FcvtDS
    };
}

/// A decoded instruction.
///
/// Field use by format (registers are `0..=31`; unused fields are 0):
/// - R: `rd`, `rs1`, `rs2`.
/// - I / loads / `jalr`: `rd`, `rs1`, `imm` (sign-extended).
/// - shifts by immediate: `imm` is the shift amount.
/// - S: `rs1`, `rs2`, `imm`. B: `rs1`, `rs2`, `imm` = byte offset from this pc.
/// - U (`lui`, `auipc`): `rd`, `imm` = the value added/loaded (already `<< 12`,
///   sign-extended from bit 31).
/// - J (`jal`): `rd`, `imm` = byte offset from this pc.
/// - CSR: `rd`, `rs1` (for the `*i` forms: the 5-bit zero-extended immediate),
///   `imm` = CSR number (0..4096).
/// - AMO / LR / SC: `rd`, `rs1` (address), `rs2`, `imm` = `aq << 1 | rl`.
/// - `fence`: `imm` = `fm << 8 | pred << 4 | succ`; `rd` and `rs1` hold the
///   fields the ISA reserves and tells implementations to ignore (normally 0).
/// - `fence.i`: `rd`, `rs1`, `imm` likewise hold the ignored fields (normally 0).
/// - `fence.tso`, `pause`, `ecall`, `ebreak`, `mret`, `sret`, `wfi`: no fields.
/// - `sfence.vma`: `rs1`, `rs2`.
/// - F/D loads and stores: as I and S, with `rd`/`rs2` an FP register.
/// - F/D operations with a rounding mode (`fadd.s`, `fsqrt.d`, `fcvt.*`):
///   `rd`, `rs1`, `rs2` as the operation uses them, `imm` = `rm` (0..=7;
///   5 and 6 are reserved and never decode).
/// - fused multiply-add (`fmadd.s` …): `imm` = `rs3 << 3 | rm`
///   ([`Inst::rs3`], [`Inst::rm`]).
/// - F/D operations without a rounding mode (`fsgnj.s`, `feq.d`,
///   `fmv.x.w`, `fclass.s` …): `rd`, `rs1`, `rs2` as used, `imm` = 0.
///
/// Whether a register field names an integer or an FP register is the
/// operation's business: [`Inst::reads`]/[`Inst::writes`] list the integer
/// ones, [`Inst::fp_reads`]/[`Inst::fp_writes`] the FP ones.
///
/// Compressed encodings use the fields of the instruction they expand to
/// (`c.li a0, 1` is `addi` with `rd = 10`, `rs1 = 0`, `imm = 1`).
///
/// `len` is 2 for a compressed encoding and 4 otherwise; `raw` holds the
/// encoding as it was in memory (16 bits zero-extended for compressed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Inst {
    /// The operation (compressed forms decode to what they expand to).
    pub op: Op,
    /// Destination register.
    pub rd: u8,
    /// First source register (or CSR immediate).
    pub rs1: u8,
    /// Second source register.
    pub rs2: u8,
    /// Length of the encoding in bytes: 2 or 4.
    pub len: u8,
    /// Immediate, as documented on the type.
    pub imm: i32,
    /// The encoding as found in memory.
    pub raw: u32,
}

macro_rules! classes {
    ($( $(#[$m:meta])* $name:ident = $key:literal ),* $(,)?) => {
        /// Instruction classes: the rows of a timing model's latency and
        /// occupancy tables, and the one taxonomy of operations retrace has.
        /// Finer where cores differ (load widths, `*W` divides); how a jump
        /// changes control flow is [`Flow`]'s business, not the class's.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Class { $( $(#[$m])* $name ),* }

        impl Class {
            /// Every class, in table order (`Class::X as usize` is its row).
            pub const ALL: [Class; Class::COUNT] = [ $( Class::$name ),* ];
            /// The class's key in core descriptions (`load_word`, `div_w`, …).
            pub fn key(self) -> &'static str {
                match self { $( Class::$name => $key ),* }
            }
        }
    };
}

classes! {
    /// Integer arithmetic, logic, compares, `lui`, `auipc`.
    Alu = "alu",
    /// Shifts (immediate and register).
    Shift = "shift",
    /// `mul`, `mulw`.
    Mul = "mul",
    /// `mulh`, `mulhsu`, `mulhu`.
    MulH = "mulh",
    /// `div`, `divu`, `rem`, `remu`.
    Div = "div",
    /// `divw`, `divuw`, `remw`, `remuw` (RV64).
    DivW = "div_w",
    /// `lb`, `lbu`.
    LoadByte = "load_byte",
    /// `lh`, `lhu`.
    LoadHalf = "load_half",
    /// `lw`, `lwu`.
    LoadWord = "load_word",
    /// `ld`.
    LoadDouble = "load_double",
    /// Stores of any width.
    Store = "store",
    /// Conditional branches.
    Branch = "branch",
    /// `jal` (direct jumps and calls).
    Jal = "jal",
    /// `jalr` (indirect jumps, indirect calls and returns).
    Jalr = "jalr",
    /// CSR instructions.
    Csr = "csr",
    /// `fence`, `fence.tso`, `pause`, `fence.i`, `sfence.vma`.
    Fence = "fence",
    /// LR, SC and AMOs.
    Amo = "amo",
    /// `ecall`, `ebreak` (and so semihosting calls), `mret`, `sret`, `wfi`.
    Ecall = "ecall",
    /// `fadd.s`, `fsub.s`.
    FpAddS = "fp_add_s",
    /// `fadd.d`, `fsub.d`.
    FpAddD = "fp_add_d",
    /// `fmul.s`.
    FpMulS = "fp_mul_s",
    /// `fmul.d`.
    FpMulD = "fp_mul_d",
    /// `fmadd.s`, `fmsub.s`, `fnmsub.s`, `fnmadd.s`.
    FpFmaS = "fp_fma_s",
    /// `fmadd.d`, `fmsub.d`, `fnmsub.d`, `fnmadd.d`.
    FpFmaD = "fp_fma_d",
    /// `fdiv.s`.
    FpDivS = "fp_div_s",
    /// `fdiv.d`.
    FpDivD = "fp_div_d",
    /// `fsqrt.s`.
    FpSqrtS = "fp_sqrt_s",
    /// `fsqrt.d`.
    FpSqrtD = "fp_sqrt_d",
    /// Sign injection (`fsgnj*.s`, and so `fmv.s`/`fneg.s`/`fabs.s`),
    /// `fmin.s`, `fmax.s`: FP results computed from FP operands without
    /// rounding.
    FpSgnjS = "fp_sgnj_s",
    /// The same in double precision (`fsgnj*.d`, `fmin.d`, `fmax.d`).
    FpSgnjD = "fp_sgnj_d",
    /// `feq`, `flt`, `fle`, `fclass`: an integer result from FP operands.
    FpCompare = "fp_compare",
    /// Every `fcvt.*` (FP↔integer and single↔double).
    FpCvt = "fp_cvt",
    /// The bit moves between integer and FP registers (`fmv.x.w`,
    /// `fmv.w.x`, `fmv.x.d`, `fmv.d.x`).
    FpMove = "fp_move",
    /// `flw`, `fld`.
    FpLoad = "fp_load",
    /// `fsw`, `fsd`.
    FpStore = "fp_store",
}

impl Class {
    /// Number of classes.
    pub const COUNT: usize = Class::FpStore as usize + 1;

    /// Whether the class is one of the F/D classes.
    pub const fn is_fp(self) -> bool {
        self as u8 >= Class::FpAddS as u8
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// How an instruction changes control flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flow {
    /// Falls through to `pc + len`.
    Next,
    /// Conditional branch to `pc + imm` or fall-through.
    CondBranch,
    /// Direct unconditional jump to `pc + imm` that does not link `ra`/`t0`
    /// (a `jal` linking another register is a `Jump` that also writes `rd`).
    Jump,
    /// Direct call (`jal` linking `ra`/`t0`) to `pc + imm`.
    Call,
    /// Indirect call (`jalr` linking `ra`/`t0`).
    IndirectCall,
    /// Return (`jalr x0, 0(ra)` or `t0`).
    Return,
    /// Other indirect jump (jump tables, tail calls through a register).
    IndirectJump,
    /// Environment call (`ecall`).
    Ecall,
    /// Breakpoint (`ebreak`, which may be part of a semihosting sequence).
    Ebreak,
    /// Trap return (`mret`, `sret`).
    TrapReturn,
}

/// What kind of memory access an instruction makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// An ordinary load.
    Load,
    /// An ordinary store.
    Store,
    /// `lr.w` / `lr.d`: a load that sets a reservation.
    LoadReserved,
    /// `sc.w` / `sc.d`: a store that succeeds only while the reservation holds.
    StoreConditional,
    /// An atomic read-modify-write (`amoadd.w`, …).
    Amo,
}

/// The memory access an instruction makes: address `x[rs1] + imm` for loads
/// and stores, `x[rs1]` for LR/SC/AMOs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemAccess {
    /// Access width in bytes: 1, 2, 4 or 8.
    pub bytes: u8,
    /// Whether a loaded value is sign-extended to XLEN (true for `lb`, `lh`,
    /// `lw`, `ld` and for LR/AMO results; false for `lbu`, `lhu`, `lwu` and
    /// for stores, which extend nothing).
    pub signed: bool,
    /// Load, store, or one of the atomic kinds.
    pub kind: MemKind,
}

impl Op {
    /// Whether [`Inst::flow`] depends on more than the operation: for `jal`
    /// and `jalr` the registers linked and used decide call, return or
    /// jump; every other operation's flow is its operation's alone (so a
    /// per-operation table may hold it).
    #[inline]
    pub fn flow_depends_on_operands(self) -> bool {
        matches!(self, Op::Jal | Op::Jalr)
    }

    /// Whether the operation exists only on RV64 (`ld`, `addw`, `amoadd.d`, …).
    pub fn is_rv64_only(self) -> bool {
        use Op::*;
        matches!(
            self,
            Ld | Lwu
                | Sd
                | Addiw
                | Slliw
                | Srliw
                | Sraiw
                | Addw
                | Subw
                | Sllw
                | Srlw
                | Sraw
                | Mulw
                | Divw
                | Divuw
                | Remw
                | Remuw
                | LrD
                | ScD
                | AmoswapD
                | AmoaddD
                | AmoxorD
                | AmoandD
                | AmoorD
                | AmominD
                | AmomaxD
                | AmominuD
                | AmomaxuD
                | FcvtLS
                | FcvtLuS
                | FcvtSL
                | FcvtSLu
                | FcvtLD
                | FcvtLuD
                | FcvtDL
                | FcvtDLu
                | FmvXD
                | FmvDX
        )
    }

    /// Whether the operation belongs to F or D (every F/D operation is
    /// declared after `flw`, so this is one compare).
    #[inline(always)]
    pub const fn is_fp(self) -> bool {
        self as u8 >= Op::Flw as u8
    }

    /// The standard extension an F/D operation belongs to (`"F"` or
    /// `"D"`), `None` for the integer operations (I, M, A, Zicsr,
    /// Zifencei). An engine that does not execute floating point reports
    /// these as it reported them before they decoded.
    pub const fn fp_extension(self) -> Option<&'static str> {
        if !self.is_fp() {
            return None;
        }
        Some(if (self as u8) < (Op::Fld as u8) {
            "F"
        } else {
            "D"
        })
    }

    /// The operation's class. Exhaustive on purpose: a new operation does
    /// not compile until it has one.
    pub const fn class(self) -> Class {
        use Op::*;
        match self {
            Lui | Auipc | Addi | Slti | Sltiu | Xori | Ori | Andi | Add | Sub | Slt | Sltu
            | Xor | Or | And | Addiw | Addw | Subw => Class::Alu,
            Slli | Srli | Srai | Sll | Srl | Sra | Slliw | Srliw | Sraiw | Sllw | Srlw | Sraw => {
                Class::Shift
            }
            Mul | Mulw => Class::Mul,
            Mulh | Mulhsu | Mulhu => Class::MulH,
            Div | Divu | Rem | Remu => Class::Div,
            Divw | Divuw | Remw | Remuw => Class::DivW,
            Lb | Lbu => Class::LoadByte,
            Lh | Lhu => Class::LoadHalf,
            Lw | Lwu => Class::LoadWord,
            Ld => Class::LoadDouble,
            Sb | Sh | Sw | Sd => Class::Store,
            Beq | Bne | Blt | Bge | Bltu | Bgeu => Class::Branch,
            Jal => Class::Jal,
            Jalr => Class::Jalr,
            Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => Class::Csr,
            Fence | FenceTso | Pause | FenceI | SfenceVma => Class::Fence,
            Ecall | Ebreak | Mret | Sret | Wfi => Class::Ecall,
            LrW | ScW | AmoswapW | AmoaddW | AmoxorW | AmoandW | AmoorW | AmominW | AmomaxW
            | AmominuW | AmomaxuW | LrD | ScD | AmoswapD | AmoaddD | AmoxorD | AmoandD | AmoorD
            | AmominD | AmomaxD | AmominuD | AmomaxuD => Class::Amo,
            Flw | Fld => Class::FpLoad,
            Fsw | Fsd => Class::FpStore,
            FaddS | FsubS => Class::FpAddS,
            FaddD | FsubD => Class::FpAddD,
            FmulS => Class::FpMulS,
            FmulD => Class::FpMulD,
            FmaddS | FmsubS | FnmsubS | FnmaddS => Class::FpFmaS,
            FmaddD | FmsubD | FnmsubD | FnmaddD => Class::FpFmaD,
            FdivS => Class::FpDivS,
            FdivD => Class::FpDivD,
            FsqrtS => Class::FpSqrtS,
            FsqrtD => Class::FpSqrtD,
            FcvtWS | FcvtWuS | FcvtLS | FcvtLuS | FcvtSW | FcvtSWu | FcvtSL | FcvtSLu | FcvtWD
            | FcvtWuD | FcvtLD | FcvtLuD | FcvtDW | FcvtDWu | FcvtDL | FcvtDLu | FcvtSD
            | FcvtDS => Class::FpCvt,
            FsgnjS | FsgnjnS | FsgnjxS | FminS | FmaxS => Class::FpSgnjS,
            FsgnjD | FsgnjnD | FsgnjxD | FminD | FmaxD => Class::FpSgnjD,
            FeqS | FltS | FleS | FclassS | FeqD | FltD | FleD | FclassD => Class::FpCompare,
            FmvXW | FmvWX | FmvXD | FmvDX => Class::FpMove,
        }
    }

    /// The memory access of a load, store, LR, SC or AMO; `None` otherwise.
    pub fn mem(self) -> Option<MemAccess> {
        use MemKind::*;
        use Op::*;
        let (bytes, signed, kind) = match self {
            Lb => (1, true, Load),
            Lbu => (1, false, Load),
            Lh => (2, true, Load),
            Lhu => (2, false, Load),
            Lw => (4, true, Load),
            Lwu => (4, false, Load),
            Ld => (8, true, Load),
            Sb => (1, false, Store),
            Sh => (2, false, Store),
            Sw => (4, false, Store),
            Sd => (8, false, Store),
            Flw => (4, false, Load),
            Fld => (8, false, Load),
            Fsw => (4, false, Store),
            Fsd => (8, false, Store),
            LrW => (4, true, LoadReserved),
            LrD => (8, true, LoadReserved),
            ScW => (4, true, StoreConditional),
            ScD => (8, true, StoreConditional),
            AmoswapW | AmoaddW | AmoxorW | AmoandW | AmoorW | AmominW | AmomaxW | AmominuW
            | AmomaxuW => (4, true, Amo),
            AmoswapD | AmoaddD | AmoxorD | AmoandD | AmoorD | AmominD | AmomaxD | AmominuD
            | AmomaxuD => (8, true, Amo),
            _ => return None,
        };
        Some(MemAccess {
            bytes,
            signed,
            kind,
        })
    }
}

/// `ra` and `t0`: the registers the ISA manual's return-address-stack hints
/// treat as link registers.
#[inline]
fn is_link(r: u8) -> bool {
    r == 1 || r == 5
}

/// Keeps a register number unless it is `x0`, which never carries a value
/// and so never creates a dependency.
#[inline]
fn nz(r: u8) -> Option<u8> {
    (r != 0).then_some(r)
}

impl Inst {
    /// Whether this came from a 16-bit compressed encoding.
    #[inline]
    pub fn is_compressed(&self) -> bool {
        self.len == 2
    }

    /// The address of the next instruction in memory (`pc + len`).
    #[inline]
    pub fn fallthrough(&self, pc: u64) -> u64 {
        pc.wrapping_add(self.len as u64)
    }

    /// How this instruction changes control flow.
    ///
    /// `jal` linking `ra` or `t0` is a call, any other `jal` a jump; `jalr`
    /// linking `ra`/`t0` is an indirect call; `jalr x0, 0(ra)` (or `t0`) is
    /// a return; every other `jalr` (including `jalr x0, 8(ra)` and `jalr`
    /// linking a non-link register) is an indirect jump.
    #[inline(always)]
    pub fn flow(&self) -> Flow {
        use Op::*;
        match self.op {
            Jal if is_link(self.rd) => Flow::Call,
            Jal => Flow::Jump,
            Jalr if is_link(self.rd) => Flow::IndirectCall,
            Jalr if self.rd == 0 && is_link(self.rs1) && self.imm == 0 => Flow::Return,
            Jalr => Flow::IndirectJump,
            Beq | Bne | Blt | Bge | Bltu | Bgeu => Flow::CondBranch,
            Ecall => Flow::Ecall,
            Ebreak => Flow::Ebreak,
            Mret | Sret => Flow::TrapReturn,
            _ => Flow::Next,
        }
    }

    /// The instruction's class (a function of the operation alone).
    #[inline]
    pub fn class(&self) -> Class {
        self.op.class()
    }

    /// Whether this is a conditional branch to a lower address: the one
    /// definition of "backward" that static prediction (backward taken,
    /// forward not taken), the replay and loop analysis share.
    #[inline]
    pub fn is_backward_branch(&self) -> bool {
        matches!(self.op.class(), Class::Branch) && self.imm < 0
    }

    /// The target of a conditional branch or `jal`: `pc + imm`, wrapped to
    /// 64 bits. On RV32 mask the result with [`Xlen::mask`].
    #[inline]
    pub fn direct_target(&self, pc: u64) -> Option<u64> {
        match self.flow() {
            Flow::CondBranch | Flow::Jump | Flow::Call => {
                Some(pc.wrapping_add(self.imm as i64 as u64))
            }
            _ => None,
        }
    }

    /// The integer registers read, `x0` left out (reading `x0` creates no
    /// dependency). Implicit reads are not listed: `ecall`'s arguments are
    /// the environment's business.
    #[inline]
    pub fn reads(&self) -> [Option<u8>; 2] {
        use Op::*;
        if self.op.is_fp() {
            let int_rs1 = matches!(fp::operands(self.op), Some((_, Some(false), _, _)));
            return [if int_rs1 { nz(self.rs1) } else { None }, None];
        }
        match self.op {
            Lui | Auipc | Jal | Fence | FenceTso | Pause | FenceI | Ecall | Ebreak | Mret
            | Sret | Wfi | Csrrwi | Csrrsi | Csrrci => [None, None],
            Addi | Slti | Sltiu | Xori | Ori | Andi | Slli | Srli | Srai | Addiw | Slliw
            | Srliw | Sraiw | Jalr | Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu | LrW | LrD | Csrrw
            | Csrrs | Csrrc => [nz(self.rs1), None],
            _ => [nz(self.rs1), nz(self.rs2)],
        }
    }

    /// The integer register written, `None` for `x0` and for instructions
    /// that write none.
    #[inline]
    pub fn writes(&self) -> Option<u8> {
        use Op::*;
        if self.op.is_fp() {
            let int_rd = matches!(fp::operands(self.op), Some((Some(false), ..)));
            return if int_rd { nz(self.rd) } else { None };
        }
        match self.op {
            Sb | Sh | Sw | Sd | Beq | Bne | Blt | Bge | Bltu | Bgeu | Fence | FenceTso | Pause
            | FenceI | Ecall | Ebreak | Mret | Sret | Wfi | SfenceVma => None,
            _ => nz(self.rd),
        }
    }

    /// The FP registers read (`f0` included: it is an ordinary register):
    /// `rs1`, `rs2`, `rs3` where the operation reads them from the FP file.
    pub fn fp_reads(&self) -> [Option<u8>; 3] {
        match fp::operands(self.op) {
            Some((_, rs1, rs2, rs3)) => [
                (rs1 == Some(true)).then_some(self.rs1),
                rs2.then_some(self.rs2),
                rs3.then(|| self.rs3().unwrap_or(0)),
            ],
            None => [None; 3],
        }
    }

    /// The FP register written, if any.
    pub fn fp_writes(&self) -> Option<u8> {
        match fp::operands(self.op) {
            Some((Some(true), ..)) => Some(self.rd),
            _ => None,
        }
    }

    /// The rounding mode field (`rm`, 0..=7; 7 is `dyn`) of an F/D
    /// operation that has one.
    pub fn rm(&self) -> Option<u8> {
        fp::entry(self.op)
            .filter(|e| e.shape.has_rm())
            .map(|_| (self.imm & 7) as u8)
    }

    /// The third source register of a fused multiply-add.
    pub fn rs3(&self) -> Option<u8> {
        fp::entry(self.op)
            .filter(|e| e.shape == fp::Shape::Fma)
            .map(|_| ((self.imm >> 3) & 31) as u8)
    }

    /// The memory access this instruction makes, if any.
    #[inline]
    pub fn mem(&self) -> Option<MemAccess> {
        self.op.mem()
    }

    /// For LR/SC/AMOs: the acquire (`aq`) and release (`rl`) bits.
    pub fn aq_rl(&self) -> Option<(bool, bool)> {
        self.op
            .mem()
            .filter(|m| !matches!(m.kind, MemKind::Load | MemKind::Store))
            .map(|_| (self.imm & 2 != 0, self.imm & 1 != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `flow_depends_on_operands` is true exactly where the registers and
    /// immediate change the flow: for every other operation, any fields
    /// give the same flow.
    #[test]
    fn flow_depends_on_operands_only_for_jal_and_jalr() {
        let with = |op, rd, rs1, imm| Inst {
            op,
            rd,
            rs1,
            rs2: 0,
            len: 4,
            imm,
            raw: 0,
        };
        for &op in Op::ALL {
            let flows: Vec<Flow> = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (5, 5, 8), (3, 1, -4)]
                .iter()
                .map(|&(rd, rs1, imm)| with(op, rd, rs1, imm).flow())
                .collect();
            let varies = flows.iter().any(|f| *f != flows[0]);
            assert_eq!(varies, op.flow_depends_on_operands(), "{op:?}: {flows:?}");
        }
    }
    use crate::decode;

    fn d(bits: u32) -> Inst {
        decode(bits, Xlen::Rv64).unwrap()
    }

    #[test]
    fn fp_ops_pattern_is_is_fp() {
        for &op in Op::ALL {
            assert_eq!(matches!(op, crate::fp_ops!()), op.is_fp(), "{op:?}");
        }
    }

    #[test]
    fn control_flow_kinds() {
        let cases = [
            (0x0000_8067, Flow::Return),       // ret
            (0x0000_8082, Flow::Return),       // c.jr ra
            (0x0000_8367, Flow::IndirectJump), // jalr t1, ra
            (0x0080_8067, Flow::IndirectJump), // jr 8(ra)
            (0x0002_8067, Flow::Return),       // jr t0
            (0x0005_00e7, Flow::IndirectCall), // jalr a0
            (0x0005_02e7, Flow::IndirectCall), // jalr t0, a0
            (0x0005_0567, Flow::IndirectJump), // jalr a0, a0
            (0x0000_9502, Flow::IndirectCall), // c.jalr a0
            (0x0080_00ef, Flow::Call),         // jal ra, +8
            (0x0080_02ef, Flow::Call),         // jal t0, +8
            (0x0080_006f, Flow::Jump),         // j +8
            (0x0080_056f, Flow::Jump),         // jal a0, +8
            (0x0000_a001, Flow::Jump),         // c.j 0
            (0x00b5_0463, Flow::CondBranch),   // beq a0, a1, +8
            (0x0000_c111, Flow::CondBranch),   // c.beqz a0, +4
            (0x0000_0073, Flow::Ecall),
            (0x0010_0073, Flow::Ebreak),
            (0x0000_9002, Flow::Ebreak), // c.ebreak
            (0x3020_0073, Flow::TrapReturn),
            (0x1020_0073, Flow::TrapReturn),
            (0x0000_0013, Flow::Next),
        ];
        for (bits, flow) in cases {
            assert_eq!(d(bits).flow(), flow, "{bits:#x}");
        }
        assert_eq!(d(0x0080_00ef).direct_target(0x1000), Some(0x1008));
        assert_eq!(d(0xfe00_0ee3).direct_target(0x1000), Some(0x0ffc)); // beqz zero, -4
        assert_eq!(d(0x0000_8067).direct_target(0x1000), None);
    }

    #[test]
    fn classes_registers_and_memory() {
        let ret = d(0x0000_8067);
        assert_eq!(
            (ret.class(), ret.reads(), ret.writes()),
            (Class::Jalr, [Some(1), None], None)
        );
        let sw = d(0x00a1_2623); // sw a0, 12(sp)
        assert_eq!(
            (sw.class(), sw.reads(), sw.writes()),
            (Class::Store, [Some(2), Some(10)], None)
        );
        assert_eq!(
            sw.mem(),
            Some(MemAccess {
                bytes: 4,
                signed: false,
                kind: MemKind::Store
            })
        );
        let lbu = d(0x0005_4503); // lbu a0, 0(a0)
        assert_eq!(lbu.mem().map(|m| (m.bytes, m.signed)), Some((1, false)));
        let amo = d(0x06b5_27af); // amoadd.w.aqrl a5, a1, (a0)
        assert_eq!((amo.class(), amo.aq_rl()), (Class::Amo, Some((true, true))));
        assert_eq!(amo.reads(), [Some(10), Some(11)]);
        let li = d(0x0000_4505); // c.li a0, 1
        assert_eq!(
            (li.reads(), li.writes(), li.is_compressed()),
            ([None, None], Some(10), true)
        );
        assert_eq!(d(0x0000_0013).writes(), None); // nop writes x0
        assert_eq!(d(0x02b5_0533).class(), Class::Mul);
        assert_eq!(d(0x02b5_1533).class(), Class::MulH);
        assert_eq!(d(0x02b5_453b).class(), Class::DivW); // divw
        assert_eq!(d(0x02b5_4533).class(), Class::Div);
        assert_eq!(d(0x3004_7073).reads(), [None, None]); // csrci mstatus, 8
                                                          // fcvt.w.s a0, fa1: reads an FP register, writes an integer one.
        let cvt = d(0xc005_9553);
        assert_eq!((cvt.reads(), cvt.writes()), ([None, None], Some(10)));
        assert_eq!(
            (cvt.fp_reads(), cvt.fp_writes()),
            ([Some(11), None, None], None)
        );
        // fsd fa0, 8(sp): integer base, FP data.
        let fsd = d(0x00a1_3427);
        assert_eq!((fsd.reads(), fsd.writes()), ([Some(2), None], None));
        assert_eq!(
            (fsd.fp_reads(), fsd.class()),
            ([None, Some(10), None], Class::FpStore)
        );
        // fmadd.d ft0, ft1, ft2, ft3: four FP registers, no integer ones.
        let fma = d(0x1a20_f043);
        assert_eq!(
            (fma.reads(), fma.writes(), fma.fp_writes()),
            ([None, None], None, Some(0))
        );
        assert_eq!(fma.fp_reads(), [Some(1), Some(2), Some(3)]);
        assert_eq!(fma.op.fp_extension(), Some("D"));
        assert_eq!(cvt.op.fp_extension(), Some("F"));
        assert_eq!(Op::Add.fp_extension(), None);
    }

    #[test]
    fn classes_agree_with_memory_accesses_and_flows() {
        use Class::*;
        for (i, c) in Class::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
        for &op in Op::ALL {
            let class = op.class();
            let from_mem = op.mem().map(|m| match (m.kind, m.bytes) {
                (MemKind::Load, _) if op.is_fp() => FpLoad,
                (MemKind::Store, _) if op.is_fp() => FpStore,
                (MemKind::Load, 1) => LoadByte,
                (MemKind::Load, 2) => LoadHalf,
                (MemKind::Load, 4) => LoadWord,
                (MemKind::Load, _) => LoadDouble,
                (MemKind::Store, _) => Store,
                _ => Amo,
            });
            let memory_class = matches!(
                class,
                LoadByte | LoadHalf | LoadWord | LoadDouble | Store | Amo | FpLoad | FpStore
            );
            assert_eq!(from_mem.is_some(), memory_class, "{op:?}");
            if let Some(c) = from_mem {
                assert_eq!(class, c, "{op:?}");
            }
            let probe = Inst {
                op,
                rd: 1,
                rs1: 2,
                rs2: 3,
                len: 4,
                imm: -4,
                raw: 0,
            };
            assert_eq!(probe.flow() == Flow::CondBranch, class == Branch, "{op:?}");
            assert_eq!(probe.is_backward_branch(), class == Branch, "{op:?}");
        }
        let beq_forward = d(0x00b5_0463);
        assert!(!beq_forward.is_backward_branch());
        assert!(d(0xfe00_0ee3).is_backward_branch());
    }
}
