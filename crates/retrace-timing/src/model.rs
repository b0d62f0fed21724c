//! Core descriptions: what a target core costs, per instruction class and per
//! control-flow event, read from TOML and validated.
//!
//! The TOML schema is documented field by field in `docs/TIMING.md`; the
//! built-in presets in `presets/*.toml` are complete examples.

use retrace_isa::Xlen;
use serde::Deserialize;
use std::path::Path;

/// Timing classes: the rows of a core's latency and occupancy tables. The
/// ISA crate's one instruction taxonomy, under the name the timing tables
/// have always used.
pub use retrace_isa::Class as TimingClass;

/// Number of timing classes.
pub const CLASS_COUNT: usize = TimingClass::COUNT;

/// A value per timing class (cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassTable(pub [u32; CLASS_COUNT]);

impl ClassTable {
    /// The same value for every class.
    pub const fn uniform(cycles: u32) -> ClassTable {
        ClassTable([cycles; CLASS_COUNT])
    }
    /// The value for one class.
    #[inline(always)]
    pub fn get(&self, class: TimingClass) -> u32 {
        self.0[class as usize]
    }
}

/// How a core predicts conditional branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredictorKind {
    /// Always predict not taken.
    NotTaken,
    /// Backward taken, forward not taken.
    Btfn,
    /// A table of 2-bit saturating counters indexed by the branch address.
    Bimodal {
        /// Number of counters (a power of two).
        entries: u32,
    },
    /// 2-bit counters indexed by branch address XOR global history.
    Gshare {
        /// Number of counters (a power of two).
        entries: u32,
        /// Bits of global branch history.
        history_bits: u32,
    },
}

impl PredictorKind {
    /// Whether the prediction depends on run-time state (needs the
    /// `control` fidelity to be replayed exactly).
    pub fn is_dynamic(self) -> bool {
        matches!(
            self,
            PredictorKind::Bimodal { .. } | PredictorKind::Gshare { .. }
        )
    }
}

/// Branch, jump and return costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchModel {
    /// The conditional-branch predictor.
    pub predictor: PredictorKind,
    /// Extra cycles when a conditional branch or return is mispredicted.
    pub mispredict_penalty: u32,
    /// Extra cycles for every taken conditional branch (redirect bubble).
    pub taken_penalty: u32,
    /// Extra cycles for a `jal`.
    pub jal_penalty: u32,
    /// Extra cycles for a `jalr` that is not a return predicted by the
    /// return-address stack.
    pub jalr_penalty: u32,
    /// Extra cycles for a return whose target the return-address stack
    /// predicted (a wrong prediction costs `mispredict_penalty`).
    pub return_penalty: u32,
    /// Depth of the return-address stack; 0 means none (returns then cost
    /// `jalr_penalty` like any other `jalr`).
    pub ras_depth: u32,
}

/// A set-associative cache with LRU replacement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheModel {
    /// Capacity in bytes.
    pub size: u32,
    /// Associativity.
    pub ways: u32,
    /// Line size in bytes.
    pub line: u32,
    /// Extra cycles of a miss (the access blocks the pipeline that long).
    pub miss_penalty: u32,
}

impl CacheModel {
    /// Number of sets.
    pub fn sets(&self) -> u32 {
        self.size / (self.ways * self.line)
    }
}

/// How the core fetches instructions from memory: in aligned words, so an
/// instruction that spans two words (a 32-bit instruction at an address ≡ 2
/// mod 4 with compressed code, on a core that fetches 4-byte words) needs a
/// second fetch. Without the `[fetch]` table nothing is charged for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchModel {
    /// Bytes of one instruction fetch, aligned to its size.
    pub word_bytes: u32,
    /// Extra cycles of an instruction that spans two fetch words.
    pub split_penalty: u32,
    /// Extra cycles of a taken conditional branch whose fall-through
    /// instruction spans two fetch words: a core that prefetches the
    /// fall-through while the branch executes finishes that second fetch
    /// before it can redirect.
    pub taken_branch_split_fallthrough_penalty: u32,
}

impl FetchModel {
    /// No cost for instructions that span fetch words.
    pub const FREE: FetchModel = FetchModel {
        word_bytes: 4,
        split_penalty: 0,
        taken_branch_split_fallthrough_penalty: 0,
    };

    /// Whether the `len`-byte instruction at `pc` spans two fetch words.
    #[inline(always)]
    pub fn splits(&self, pc: u64, len: u8) -> bool {
        // word_bytes is a power of two (validated).
        (pc & u64::from(self.word_bytes - 1)) + u64::from(len) > u64::from(self.word_bytes)
    }
}

/// A target core: everything the timing rules need.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreModel {
    /// Short name (`rocket`, or the TOML file's `name`).
    pub name: String,
    /// One line saying what this core is and where its numbers come from.
    pub description: String,
    /// Whether the core runs RV32 programs.
    pub rv32: bool,
    /// Whether the core runs RV64 programs.
    pub rv64: bool,
    /// Cycles from an instruction's issue until a dependent instruction may
    /// issue (1 = back to back).
    pub latency: ClassTable,
    /// Cycles an instruction holds the issue stage (1 = fully pipelined).
    pub occupancy: ClassTable,
    /// Cycles an instruction keeps its [`Unit`] busy: the next instruction
    /// on the same unit issues no earlier (1 for every class without a
    /// unit, and for a pipelined one).
    pub busy: ClassTable,
    /// While the FP divide/square-root unit is busy, no FP operation
    /// issues (an FPU that takes one operation at a time), not only the
    /// next divide: `busy.fp_blocks_all`.
    pub fp_blocks_all: bool,
    /// Branch, jump and return costs.
    pub branch: BranchModel,
    /// Instruction cache, if any.
    pub icache: Option<CacheModel>,
    /// Data cache, if any.
    pub dcache: Option<CacheModel>,
    /// Extra cycles of entering a trap handler (an exception, or an
    /// `ecall`/`ebreak` that traps), after the pipeline has drained: see
    /// [`crate::Pipeline::trap`].
    pub trap_penalty: u32,
    /// Instruction fetch: the cost of instructions that span fetch words.
    pub fetch: FetchModel,
    /// The clock frequency in hertz, if the description gives one: reports
    /// then show time beside cycles. Timing itself is in cycles.
    pub frequency_hz: Option<u64>,
    /// The floating-point extensions the core implements, if the
    /// description says (`float`); unsaid, a program's are not checked.
    pub float: Option<FloatUnit>,
    /// Instructions that may issue in one cycle: 1 (single issue) or 2
    /// (dual issue, on the pipes [`CoreModel::pipes`] says).
    pub issue_width: u32,
    /// Per class, the pipes an instruction may issue on (dual issue only).
    pub pipes: PipeTable,
    /// The classes that may execute late, and how many stages later
    /// (`late_alu`, `late_alu_stages`); none by default.
    pub late_alu: LateAlu,
}

/// An early/late ALU: instructions of some classes may issue before their
/// operands are ready and execute that many stages further down the
/// pipeline instead, as SiFive's 7 series runs simple integer operations
/// either in its address-generation stage or two stages later (LLVM review
/// D153666, "RISCV: Model bypass for SiFive7"). What it changes in the
/// timing rule is [`crate::Pipeline::issue`]'s business.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LateAlu {
    /// The classes that may execute late, bit `class as usize` each.
    classes: u64,
    /// How many stages after the issue stage the late unit executes (the
    /// most an operand may still be outstanding at issue); 0 when no class
    /// may execute late.
    pub stages: u32,
}

impl LateAlu {
    /// No class executes late.
    pub const NONE: LateAlu = LateAlu {
        classes: 0,
        stages: 0,
    };

    /// The largest `late_alu_stages` a description may give.
    pub const MAX_STAGES: u32 = 16;

    /// Late execution for `classes`, `stages` stages after issue (no class
    /// at all, or 0 stages, is [`LateAlu::NONE`]).
    pub fn new(classes: &[TimingClass], stages: u32) -> LateAlu {
        let classes = classes.iter().fold(0u64, |m, &c| m | 1 << c as usize);
        if classes == 0 || stages == 0 {
            LateAlu::NONE
        } else {
            LateAlu { classes, stages }
        }
    }

    /// Whether instructions of `class` may execute late.
    #[inline(always)]
    pub fn covers(&self, class: TimingClass) -> bool {
        self.classes & 1 << class as usize != 0
    }

    /// The classes that may execute late, in table order.
    pub fn classes(&self) -> impl Iterator<Item = TimingClass> + '_ {
        TimingClass::ALL.into_iter().filter(|&c| self.covers(c))
    }

    /// The stages a `class` instruction may run late by: [`LateAlu::stages`]
    /// for a class it covers, else 0.
    #[inline(always)]
    pub fn stages_of(&self, class: TimingClass) -> u32 {
        if self.covers(class) {
            self.stages
        } else {
            0
        }
    }
}

/// The issue pipes of a dual-issue core that an instruction may use: two
/// instructions issue together only on different pipes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Deserialize)]
pub enum Pipes {
    /// Pipe A only.
    A,
    /// Pipe B only.
    B,
    /// Either pipe.
    #[default]
    AB,
}

impl Pipes {
    /// The pipes as a bit set: A is 1, B is 2.
    pub fn mask(self) -> u8 {
        match self {
            Pipes::A => 1,
            Pipes::B => 2,
            Pipes::AB => 3,
        }
    }

    /// The description's spelling: `A`, `B`, `AB`.
    pub fn name(self) -> &'static str {
        match self {
            Pipes::A => "A",
            Pipes::B => "B",
            Pipes::AB => "AB",
        }
    }
}

/// The pipes per timing class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeTable(pub [Pipes; CLASS_COUNT]);

impl PipeTable {
    /// The pipes of one class.
    #[inline(always)]
    pub fn get(&self, class: TimingClass) -> Pipes {
        self.0[class as usize]
    }
}

/// Which floating-point extensions a core implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FloatUnit {
    /// Neither F nor D.
    None,
    /// F (single precision) only.
    Single,
    /// F and D.
    Double,
}

impl FloatUnit {
    /// Whether the core implements the standard extension `letter`: F
    /// and D as it says; any other letter is not this field's to check.
    pub fn implements(self, letter: char) -> bool {
        match letter {
            'f' => self != FloatUnit::None,
            'd' => self == FloatUnit::Double,
            _ => true,
        }
    }

    /// The description's spelling: `none`, `single`, `double`.
    pub fn name(self) -> &'static str {
        match self {
            FloatUnit::None => "none",
            FloatUnit::Single => "single",
            FloatUnit::Double => "double",
        }
    }
}

impl CoreModel {
    /// Whether the core supports programs of this register width.
    pub fn supports(&self, xlen: Xlen) -> bool {
        match xlen {
            Xlen::Rv32 => self.rv32,
            Xlen::Rv64 => self.rv64,
        }
    }

    /// Whether every cost depends only on the instruction stream and branch
    /// outcomes (no predictor tables, no caches): then `fast` replay is exact.
    pub fn is_context_free(&self) -> bool {
        !self.branch.predictor.is_dynamic()
            && self.branch.ras_depth == 0
            && self.icache.is_none()
            && self.dcache.is_none()
    }

    /// The same core without its data cache (for the exactness check of the
    /// `control` fidelity, and to separate data-dependent error).
    pub fn without_dcache(&self) -> CoreModel {
        CoreModel {
            dcache: None,
            name: format!("{}-nodcache", self.name),
            ..self.clone()
        }
    }

    /// Parse a core description from TOML text. `origin` names the source
    /// (a file path or `preset NAME`) in error messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<CoreModel, ModelError> {
        let raw: RawModel = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            let mut message = e.message().to_string();
            // A number too large for its field: the reader names the type,
            // not the field; quote the line so the field is in the message.
            if message.contains("expected u32") {
                if let Some(src) = text.lines().nth(line.saturating_sub(1)) {
                    message = format!(
                        "{} (in `{}`; cycle counts go up to {MAX_CYCLES}, sizes up to 1048576)",
                        message.replace("expected u32", "expected a whole number"),
                        src.trim()
                    );
                }
            }
            ModelError::Syntax {
                origin: origin.to_string(),
                line,
                column,
                message,
            }
        })?;
        raw.validate(origin)
    }

    /// Read a core description from a TOML file.
    pub fn from_file(path: &Path) -> Result<CoreModel, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        CoreModel::from_toml(&text, &path.display().to_string())
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, column)
}

/// What is wrong with a core description.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelError {
    /// The file could not be read.
    #[error("{path}: cannot read core description: {message}")]
    Io {
        /// The path.
        path: String,
        /// The operating system's reason.
        message: String,
    },
    /// TOML syntax error, unknown field or value of the wrong type.
    #[error("{origin}:{line}:{column}: {message}")]
    Syntax {
        /// File or preset.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the TOML reader said (names the field and what is allowed).
        message: String,
    },
    /// A field has a value outside its allowed range.
    #[error("{origin}: field `{field}` = {value}: {allowed}")]
    Invalid {
        /// File or preset.
        origin: String,
        /// Dotted field path (`icache.ways`).
        field: String,
        /// The value found.
        value: String,
        /// What is allowed.
        allowed: String,
    },
}

/// The largest cycle count a core description may give (a latency, an
/// occupancy, a penalty): a million cycles, far beyond any real core, and
/// small enough that the timing rule's sums of them cannot overflow.
pub const MAX_CYCLES: u32 = 1_000_000;

// ----- the TOML schema -------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    name: String,
    #[serde(default)]
    description: String,
    xlen: Vec<u32>,
    #[serde(default)]
    trap_penalty: u32,
    frequency_mhz: Option<f64>,
    float: Option<FloatUnit>,
    #[serde(default = "default_issue_width")]
    issue_width: u32,
    #[serde(default)]
    late_alu: Vec<String>,
    #[serde(default = "default_late_alu_stages")]
    late_alu_stages: u32,
    #[serde(default)]
    latency: RawClasses<u32>,
    #[serde(default)]
    occupancy: RawClasses<u32>,
    pipes: Option<RawClasses<Pipes>>,
    #[serde(default)]
    busy: RawBusy,
    #[serde(default)]
    branch: RawBranch,
    icache: Option<RawCache>,
    dcache: Option<RawCache>,
    fetch: Option<RawFetch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFetch {
    #[serde(default = "default_word_bytes")]
    word_bytes: u32,
    #[serde(default)]
    split_penalty: u32,
    #[serde(default)]
    taken_branch_split_fallthrough_penalty: u32,
}

fn default_word_bytes() -> u32 {
    4
}

fn default_issue_width() -> u32 {
    1
}

fn default_late_alu_stages() -> u32 {
    2
}

macro_rules! raw_classes {
    ($($field:ident => $class:ident),* $(,)?) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawClasses<T> { $( $field: Option<T>, )* }

        impl<T> Default for RawClasses<T> {
            fn default() -> Self {
                RawClasses { $( $field: None, )* }
            }
        }

        impl<T: Copy> RawClasses<T> {
            /// The values per class, with classes left out taking
            /// `fallback(class)`.
            fn values(&self, fallback: impl Fn(TimingClass) -> T) -> [T; CLASS_COUNT] {
                let mut t = [fallback(TimingClass::ALL[0]); CLASS_COUNT];
                $( t[TimingClass::$class as usize] =
                    self.$field.unwrap_or_else(|| fallback(TimingClass::$class)); )*
                t
            }
        }

        impl RawClasses<u32> {
            /// The table, with classes left out taking `fallback(class)`.
            fn table(&self, fallback: impl Fn(TimingClass) -> u32) -> ClassTable {
                ClassTable(self.values(fallback))
            }
        }
    };
}

raw_classes! {
    alu => Alu, shift => Shift, mul => Mul, mulh => MulH, div => Div, div_w => DivW,
    load_byte => LoadByte, load_half => LoadHalf, load_word => LoadWord,
    load_double => LoadDouble, store => Store, branch => Branch, jal => Jal, jalr => Jalr,
    csr => Csr, fence => Fence, amo => Amo, ecall => Ecall,
    fp_add_s => FpAddS, fp_add_d => FpAddD, fp_mul_s => FpMulS, fp_mul_d => FpMulD,
    fp_fma_s => FpFmaS, fp_fma_d => FpFmaD, fp_div_s => FpDivS, fp_div_d => FpDivD,
    fp_sqrt_s => FpSqrtS, fp_sqrt_d => FpSqrtD, fp_sgnj_s => FpSgnjS, fp_sgnj_d => FpSgnjD,
    fp_compare => FpCompare, fp_cvt => FpCvt, fp_move => FpMove,
    fp_load => FpLoad, fp_store => FpStore,
}

/// The `[busy]` table: how long an instruction keeps its non-pipelined unit
/// (the integer divider, the FP divider/square-root unit) from starting
/// the next instruction that needs it. Only the classes that have such a
/// unit are keys.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawBusy {
    div: Option<u32>,
    div_w: Option<u32>,
    fp_div_s: Option<u32>,
    fp_div_d: Option<u32>,
    fp_sqrt_s: Option<u32>,
    fp_sqrt_d: Option<u32>,
    #[serde(default)]
    fp_blocks_all: bool,
}

impl RawBusy {
    fn table(&self) -> ClassTable {
        let mut t = ClassTable::uniform(1);
        for (class, v) in [
            (TimingClass::Div, self.div),
            (TimingClass::DivW, self.div_w),
            (TimingClass::FpDivS, self.fp_div_s),
            (TimingClass::FpDivD, self.fp_div_d),
            (TimingClass::FpSqrtS, self.fp_sqrt_s),
            (TimingClass::FpSqrtD, self.fp_sqrt_d),
        ] {
            t.0[class as usize] = v.unwrap_or(1);
        }
        t
    }
}

/// A unit that does not accept a new operation until it has finished the
/// last one: while it is busy, the next instruction that needs it waits
/// (and only that instruction: the others issue past it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// The integer divider: `div`, `divu`, `rem`, `remu` and their `*w`
    /// forms.
    IntDiv,
    /// The FP divider and square-root unit: `fdiv` and `fsqrt`, single
    /// and double.
    FpDiv,
}

impl Unit {
    /// The unit an instruction of `class` occupies on `model`, if it is
    /// one of them: divides on their dividers, and on a core whose FP
    /// divider blocks the whole FPU ([`CoreModel::fp_blocks_all`]) every
    /// FP operation other than loads and stores on the FP unit.
    pub fn of(class: TimingClass, model: &CoreModel) -> Option<Unit> {
        match class {
            TimingClass::Div | TimingClass::DivW => Some(Unit::IntDiv),
            TimingClass::FpDivS
            | TimingClass::FpDivD
            | TimingClass::FpSqrtS
            | TimingClass::FpSqrtD => Some(Unit::FpDiv),
            TimingClass::FpLoad | TimingClass::FpStore => None,
            c if c.is_fp() && model.fp_blocks_all => Some(Unit::FpDiv),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawBranch {
    predictor: String,
    entries: u32,
    history_bits: u32,
    mispredict_penalty: u32,
    taken_penalty: u32,
    jal_penalty: u32,
    jalr_penalty: u32,
    return_penalty: u32,
    ras_depth: u32,
}

impl Default for RawBranch {
    fn default() -> Self {
        RawBranch {
            predictor: "not-taken".into(),
            entries: 0,
            history_bits: 0,
            mispredict_penalty: 0,
            taken_penalty: 0,
            jal_penalty: 0,
            jalr_penalty: 0,
            return_penalty: 0,
            ras_depth: 0,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCache {
    size: u32,
    ways: u32,
    line: u32,
    miss_penalty: u32,
}

impl RawModel {
    fn validate(self, origin: &str) -> Result<CoreModel, ModelError> {
        let invalid = |field: &str, value: String, allowed: &str| ModelError::Invalid {
            origin: origin.to_string(),
            field: field.to_string(),
            value,
            allowed: allowed.to_string(),
        };
        if self.xlen.is_empty() || self.xlen.iter().any(|&x| x != 32 && x != 64) {
            return Err(invalid(
                "xlen",
                format!("{:?}", self.xlen),
                "a non-empty list of 32 and/or 64",
            ));
        }
        // Latency defaults to the occupancy given for the class, else 1: a core
        // that blocks for N cycles delivers its result after N cycles.
        let occupancy = self.occupancy.table(|_| 1);
        let latency = self.latency.table(|c| occupancy.get(c));
        // Every cycle count is bounded, so no sum the timing rule forms can
        // wrap: a value beyond the bound is a typo, not a core.
        let cycles = |field: &str, v: u32, min: u32| {
            if (min..=MAX_CYCLES).contains(&v) {
                Ok(v)
            } else {
                Err(invalid(
                    field,
                    v.to_string(),
                    &format!("{min} to {MAX_CYCLES} cycles"),
                ))
            }
        };
        let busy = self.busy.table();
        for class in TimingClass::ALL {
            cycles(&format!("occupancy.{class}"), occupancy.get(class), 1)?;
            cycles(&format!("latency.{class}"), latency.get(class), 1)?;
            cycles(&format!("busy.{class}"), busy.get(class), 1)?;
        }
        let b = &self.branch;
        cycles("trap_penalty", self.trap_penalty, 0)?;
        for (field, v) in [
            ("branch.mispredict_penalty", b.mispredict_penalty),
            ("branch.taken_penalty", b.taken_penalty),
            ("branch.jal_penalty", b.jal_penalty),
            ("branch.jalr_penalty", b.jalr_penalty),
            ("branch.return_penalty", b.return_penalty),
        ] {
            cycles(field, v, 0)?;
        }
        let power_of_two = |field: &str, v: u32| {
            if v.is_power_of_two() && v <= 1 << 20 {
                Ok(v)
            } else {
                Err(invalid(
                    field,
                    v.to_string(),
                    "a power of two from 1 to 1048576",
                ))
            }
        };
        let predictor = match b.predictor.as_str() {
            "not-taken" => PredictorKind::NotTaken,
            "btfn" => PredictorKind::Btfn,
            "bimodal" => PredictorKind::Bimodal {
                entries: power_of_two("branch.entries", b.entries)?,
            },
            "gshare" => {
                if b.history_bits == 0 || b.history_bits > 20 {
                    return Err(invalid(
                        "branch.history_bits",
                        b.history_bits.to_string(),
                        "1 to 20",
                    ));
                }
                PredictorKind::Gshare {
                    entries: power_of_two("branch.entries", b.entries)?,
                    history_bits: b.history_bits,
                }
            }
            other => {
                return Err(invalid(
                    "branch.predictor",
                    format!("{other:?}"),
                    "one of \"not-taken\", \"btfn\", \"bimodal\", \"gshare\"",
                ))
            }
        };
        if b.ras_depth > 1024 {
            return Err(invalid(
                "branch.ras_depth",
                b.ras_depth.to_string(),
                "0 to 1024",
            ));
        }
        let cache = |name: &str, c: Option<RawCache>| -> Result<Option<CacheModel>, ModelError> {
            let Some(c) = c else { return Ok(None) };
            power_of_two(&format!("{name}.line"), c.line)?;
            power_of_two(&format!("{name}.ways"), c.ways)?;
            power_of_two(&format!("{name}.size"), c.size)?;
            cycles(&format!("{name}.miss_penalty"), c.miss_penalty, 0)?;
            if c.line < 4 {
                return Err(invalid(
                    &format!("{name}.line"),
                    c.line.to_string(),
                    "a power of two from 4 to 1048576 bytes",
                ));
            }
            if u64::from(c.size) < u64::from(c.line) * u64::from(c.ways) {
                return Err(invalid(
                    &format!("{name}.size"),
                    c.size.to_string(),
                    &format!(
                        "at least ways × line = {} bytes",
                        u64::from(c.line) * u64::from(c.ways)
                    ),
                ));
            }
            Ok(Some(CacheModel {
                size: c.size,
                ways: c.ways,
                line: c.line,
                miss_penalty: c.miss_penalty,
            }))
        };
        let fetch = match self.fetch {
            None => FetchModel::FREE,
            Some(f) => {
                if !(f.word_bytes.is_power_of_two() && (2..=64).contains(&f.word_bytes)) {
                    return Err(invalid(
                        "fetch.word_bytes",
                        f.word_bytes.to_string(),
                        "a power of two from 2 to 64 bytes",
                    ));
                }
                cycles("fetch.split_penalty", f.split_penalty, 0)?;
                cycles(
                    "fetch.taken_branch_split_fallthrough_penalty",
                    f.taken_branch_split_fallthrough_penalty,
                    0,
                )?;
                FetchModel {
                    word_bytes: f.word_bytes,
                    split_penalty: f.split_penalty,
                    taken_branch_split_fallthrough_penalty: f
                        .taken_branch_split_fallthrough_penalty,
                }
            }
        };
        if !(1..=2).contains(&self.issue_width) {
            return Err(invalid(
                "issue_width",
                self.issue_width.to_string(),
                "1 (single issue) or 2 (dual issue)",
            ));
        }
        // Pipes matter only when two instructions may issue together: a
        // `[pipes]` table on a single-issue core is a mistake, not a no-op.
        if self.pipes.is_some() && self.issue_width == 1 {
            return Err(invalid(
                "pipes",
                "a table".into(),
                "only with issue_width = 2 (a single-issue core has one pipe)",
            ));
        }
        let pipes = PipeTable(self.pipes.unwrap_or_default().values(|_| Pipes::AB));
        if !(1..=LateAlu::MAX_STAGES).contains(&self.late_alu_stages) {
            return Err(invalid(
                "late_alu_stages",
                self.late_alu_stages.to_string(),
                &format!("1 to {} stages", LateAlu::MAX_STAGES),
            ));
        }
        let mut late = Vec::new();
        for key in &self.late_alu {
            let Some(class) = TimingClass::ALL.into_iter().find(|c| c.key() == key) else {
                let keys: Vec<&str> = TimingClass::ALL.iter().map(|c| c.key()).collect();
                return Err(invalid(
                    "late_alu",
                    format!("{key:?}"),
                    &format!("a list of instruction classes: {}", keys.join(", ")),
                ));
            };
            late.push(class);
        }
        let late_alu = LateAlu::new(&late, self.late_alu_stages);
        let frequency_hz = match self.frequency_mhz {
            None => None,
            Some(mhz) if mhz.is_finite() && (0.001..=100_000.0).contains(&mhz) => {
                Some((mhz * 1e6).round() as u64)
            }
            Some(mhz) => {
                return Err(invalid(
                    "frequency_mhz",
                    mhz.to_string(),
                    "0.001 to 100000 (MHz)",
                ))
            }
        };
        Ok(CoreModel {
            frequency_hz,
            float: self.float,
            name: self.name,
            description: self.description,
            rv32: self.xlen.contains(&32),
            rv64: self.xlen.contains(&64),
            latency,
            occupancy,
            busy,
            fp_blocks_all: self.busy.fp_blocks_all,
            branch: BranchModel {
                predictor,
                mispredict_penalty: b.mispredict_penalty,
                taken_penalty: b.taken_penalty,
                jal_penalty: b.jal_penalty,
                jalr_penalty: b.jalr_penalty,
                return_penalty: b.return_penalty,
                ras_depth: b.ras_depth,
            },
            icache: cache("icache", self.icache)?,
            dcache: cache("dcache", self.dcache)?,
            trap_penalty: self.trap_penalty,
            fetch,
            issue_width: self.issue_width,
            pipes,
            late_alu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_field_names_line_and_field() {
        let text = "name = \"x\"\nxlen = [32]\n[latency]\nalu = 1\nmull = 3\n";
        let err = CoreModel::from_toml(text, "core.toml").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("core.toml:5:"), "{msg}");
        assert!(msg.contains("mull") && msg.contains("mulh"), "{msg}");
    }

    #[test]
    fn bad_predictor_lists_allowed() {
        let text = "name = \"x\"\nxlen = [32]\n[branch]\npredictor = \"perceptron\"\n";
        let msg = CoreModel::from_toml(text, "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("branch.predictor") && msg.contains("gshare"),
            "{msg}"
        );
    }

    #[test]
    fn zero_occupancy_refused() {
        let text = "name = \"x\"\nxlen = [64]\n[occupancy]\ndiv = 0\n";
        let msg = CoreModel::from_toml(text, "c.toml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("occupancy.div"), "{msg}");
    }

    #[test]
    fn latency_defaults_to_occupancy() {
        let text = "name = \"x\"\nxlen = [32]\n[occupancy]\nload_word = 5\n";
        let m = CoreModel::from_toml(text, "c.toml").unwrap();
        assert_eq!(m.latency.get(TimingClass::LoadWord), 5);
        assert_eq!(m.latency.get(TimingClass::Alu), 1);
    }

    /// Each out-of-range number is reported against its own field, with
    /// the range allowed.
    #[test]
    fn numbers_out_of_range_name_their_field() {
        let base = "name = \"x\"\nxlen = [32]\n";
        let cache = "size = 1024\nways = 2\nline = 32\nmiss_penalty = 5\n";
        for (body, field) in [
            (
                "[branch]\ntaken_penalty = 4294967295\nmispredict_penalty = 1\n".to_string(),
                "branch.taken_penalty",
            ),
            ("[latency]\ndiv = 1000001\n".into(), "latency.div"),
            ("trap_penalty = 1000001\n".into(), "trap_penalty"),
            ("[occupancy]\nmul = 2000000\n".into(), "occupancy.mul"),
            (
                "[branch]\njalr_penalty = 1000001\n".into(),
                "branch.jalr_penalty",
            ),
            (
                format!("[icache]\n{}", cache.replace("line = 32", "line = 2")),
                "icache.line",
            ),
            (
                format!(
                    "[dcache]\n{}",
                    cache.replace("miss_penalty = 5", "miss_penalty = 3000000")
                ),
                "dcache.miss_penalty",
            ),
            (
                format!("[dcache]\n{}", cache.replace("size = 1024", "size = 16")),
                "dcache.size",
            ),
            (
                "[fetch]\nsplit_penalty = 1000001\n".into(),
                "fetch.split_penalty",
            ),
            (
                "[fetch]\ntaken_branch_split_fallthrough_penalty = 1000001\n".into(),
                "fetch.taken_branch_split_fallthrough_penalty",
            ),
            ("[fetch]\nword_bytes = 3\n".into(), "fetch.word_bytes"),
            ("[fetch]\nword_bytes = 128\n".into(), "fetch.word_bytes"),
            ("[fetch]\nword_bytes = 1\n".into(), "fetch.word_bytes"),
            (
                "[icache]\nsize = 1048576\nways = 1048576\nline = 1048576\nmiss_penalty = 1\n"
                    .into(),
                "icache.size",
            ),
        ] {
            let msg = CoreModel::from_toml(&format!("{base}{body}"), "c.toml")
                .unwrap_err()
                .to_string();
            assert!(msg.contains(&format!("`{field}`")), "{field}: {msg}");
        }
        // Beyond u32 the TOML reader refuses it; the line names the field.
        let msg = CoreModel::from_toml(
            &format!("{base}[branch]\ntaken_penalty = 4294967296\n"),
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.starts_with("c.toml:4:") && msg.contains("`taken_penalty = 4294967296`"),
            "{msg}"
        );
        // The largest allowed values load, and the timing rule's sums of
        // them stay far from wrapping.
        let big = format!(
            "{base}[branch]\ntaken_penalty = {MAX_CYCLES}\nmispredict_penalty = {MAX_CYCLES}\n"
        );
        let m = CoreModel::from_toml(&big, "c.toml").unwrap();
        assert_eq!(m.branch.taken_penalty, MAX_CYCLES);
    }

    #[test]
    fn trap_penalty_defaults_to_zero() {
        let text = "name = \"x\"\nxlen = [32]\n";
        assert_eq!(
            CoreModel::from_toml(text, "c.toml").unwrap().trap_penalty,
            0
        );
        let text = "name = \"x\"\nxlen = [32]\ntrap_penalty = 7\n";
        assert_eq!(
            CoreModel::from_toml(text, "c.toml").unwrap().trap_penalty,
            7
        );
    }

    /// Without a `[fetch]` table nothing is charged for split fetches; with
    /// one, the word defaults to 4 bytes and the penalties to 0; an unknown
    /// key is refused with the line.
    #[test]
    fn fetch_table_defaults_and_splits() {
        let base = "name = \"x\"\nxlen = [32]\n";
        let m = CoreModel::from_toml(base, "c.toml").unwrap();
        assert_eq!(m.fetch, FetchModel::FREE);
        let m =
            CoreModel::from_toml(&format!("{base}[fetch]\nsplit_penalty = 1\n"), "c.toml").unwrap();
        assert_eq!(
            m.fetch,
            FetchModel {
                word_bytes: 4,
                split_penalty: 1,
                taken_branch_split_fallthrough_penalty: 0
            }
        );
        // A 32-bit instruction spans two 4-byte words only at 2 mod 4; a
        // 16-bit one never does; with 8-byte words, only at 6 mod 8.
        let w4 = m.fetch;
        assert!(!w4.splits(0x1000, 4) && w4.splits(0x1002, 4) && w4.splits(0x1006, 4));
        assert!(!w4.splits(0x1002, 2) && !w4.splits(0x1000, 2));
        let w8 = FetchModel {
            word_bytes: 8,
            ..w4
        };
        assert!(!w8.splits(0x1002, 4) && w8.splits(0x1006, 4) && !w8.splits(0x1004, 4));
        let msg = CoreModel::from_toml(&format!("{base}[fetch]\nsplit = 1\n"), "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("c.toml:4:") && msg.contains("split_penalty"),
            "{msg}"
        );
    }

    /// `[busy]` takes only the classes that have a non-pipelined unit,
    /// defaults to 1, and refuses 0.
    #[test]
    fn busy_table_keys_and_defaults() {
        let base = "name = \"x\"\nxlen = [32]\n";
        let m = CoreModel::from_toml(base, "c.toml").unwrap();
        assert_eq!(m.busy, ClassTable::uniform(1));
        assert!(!m.fp_blocks_all);
        let m = CoreModel::from_toml(
            &format!("{base}[busy]\nfp_sqrt_d = 25\nfp_blocks_all = true\n"),
            "c.toml",
        )
        .unwrap();
        assert_eq!(m.busy.get(TimingClass::FpSqrtD), 25);
        assert_eq!(m.busy.get(TimingClass::FpDivD), 1);
        assert!(m.fp_blocks_all);
        assert_eq!(Unit::of(TimingClass::FpAddS, &m), Some(Unit::FpDiv));
        assert_eq!(Unit::of(TimingClass::FpLoad, &m), None);
        let msg = CoreModel::from_toml(&format!("{base}[busy]\nalu = 3\n"), "c.toml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("alu") && msg.contains("fp_div_s"), "{msg}");
        let msg = CoreModel::from_toml(&format!("{base}[busy]\ndiv = 0\n"), "c.toml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("busy.div"), "{msg}");
    }

    /// `late_alu` takes class keys, `late_alu_stages` 1 to 16 (default
    /// 2); an unknown class is refused with the list, and no class at all
    /// is no late execution.
    #[test]
    fn late_alu_keys_and_stages() {
        let base = "name = \"x\"\nxlen = [64]\n";
        let m = CoreModel::from_toml(base, "c.toml").unwrap();
        assert_eq!(m.late_alu, LateAlu::NONE);
        let m = CoreModel::from_toml(
            &format!("{base}late_alu = [\"alu\", \"branch\"]\n"),
            "c.toml",
        )
        .unwrap();
        assert_eq!(m.late_alu.stages, 2);
        assert!(m.late_alu.covers(TimingClass::Alu) && m.late_alu.covers(TimingClass::Branch));
        assert!(!m.late_alu.covers(TimingClass::Shift));
        assert_eq!(
            m.late_alu.classes().collect::<Vec<_>>(),
            [TimingClass::Alu, TimingClass::Branch]
        );
        assert_eq!(m.late_alu.stages_of(TimingClass::Mul), 0);
        let m = CoreModel::from_toml(
            &format!("{base}late_alu = []\nlate_alu_stages = 3\n"),
            "c.toml",
        )
        .unwrap();
        assert_eq!(m.late_alu, LateAlu::NONE);
        for (body, want) in [
            ("late_alu = [\"alus\"]\n", "div_w"),
            (
                "late_alu = [\"alu\"]\nlate_alu_stages = 0\n",
                "late_alu_stages",
            ),
            ("late_alu = [\"alu\"]\nlate_alu_stages = 17\n", "1 to 16"),
            ("late_alu = \"alu\"\n", "sequence"),
        ] {
            let msg = CoreModel::from_toml(&format!("{base}{body}"), "c.toml")
                .unwrap_err()
                .to_string();
            assert!(msg.contains(want), "{body}: {msg}");
        }
    }

    #[test]
    fn cache_geometry_checked() {
        let text = "name = \"x\"\nxlen = [32]\n[icache]\nsize = 1000\nways = 2\nline = 32\nmiss_penalty = 5\n";
        let msg = CoreModel::from_toml(text, "c.toml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("icache.size"), "{msg}");
    }
}
