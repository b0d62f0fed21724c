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
    /// Register width in bits (32 or 64).
    pub fn bits(self) -> u32 {
        match self {
            Xlen::Rv32 => 32,
            Xlen::Rv64 => 64,
        }
    }
}

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
/// - `fence`: `imm` = `fm << 8 | pred << 4 | succ`.
/// - `sfence.vma`: `rs1`, `rs2`.
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

/// Instruction classes, the unit of the timing model's latency table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Integer arithmetic/logic, `lui`, `auipc`, compares.
    Alu,
    /// Shifts.
    Shift,
    /// `mul`, `mulw`.
    Mul,
    /// `mulh`, `mulhsu`, `mulhu`.
    MulH,
    /// Division and remainder.
    Div,
    /// Loads.
    Load,
    /// Stores.
    Store,
    /// Conditional branches.
    Branch,
    /// Direct jumps that are not calls (`jal x0`).
    Jump,
    /// Direct or indirect calls (link register `ra` or `t0`).
    Call,
    /// Function returns (`jalr x0, 0(ra)`).
    Return,
    /// Other indirect jumps.
    Indirect,
    /// CSR reads/writes.
    Csr,
    /// `fence`, `fence.i`, `sfence.vma`.
    Fence,
    /// LR/SC and AMOs.
    Amo,
    /// `ecall`, `ebreak`, `mret`, `sret`, `wfi`.
    System,
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
