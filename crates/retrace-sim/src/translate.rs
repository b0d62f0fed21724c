//! The translating engine: hot blocks of the functional engine turned into
//! host code with Cranelift, the interpreter in [`crate::engine`] kept as
//! the reference and as the path for everything rare.
//!
//! What a translated block does is a subset of what the interpreter does,
//! chosen so that the translation never has to decide anything the
//! interpreter decides in its slow paths:
//! - It runs a *prefix* of the block: the integer and M instructions, loads,
//!   stores and the closing branch or jump. At the first instruction it does
//!   not translate (CSRs, AMOs, LR/SC, floating point) it stops and says so,
//!   and the interpreter runs the rest of the block from there.
//! - An `ecall` that closes a block is made from host code when it is a
//!   synchronisation call ([`crate::sync`]) that completes at once: the
//!   block calls the very function the interpreter's slow path calls when
//!   no observer watches, so the objects, the harts it wakes and the result
//!   are the same, and goes on after it. A call that blocks ends the
//!   hart's turn as in the interpreter; anything else (another `ecall`, a
//!   wrong call, which changes nothing) stops the block before the `ecall`
//!   for the interpreter. Multi-hart programs that synchronise every few
//!   dozen instructions then stay in host code between turns.
//! - Before any access that is out of memory, and before any store that
//!   could hit decoded code, `tohost`, or another hart's reservation, it
//!   stops *before* the instruction; the interpreter then executes it (and
//!   raises the trap, flushes the cache or ends the run) exactly as it
//!   would have anyway. So traps, self-modifying code and HTIF exits never
//!   happen inside host code.
//! - It writes back the registers it changed at every exit, so the hart's
//!   state at a stop is the state before the stopping instruction.
//!
//! Runs without an observer are translated, and so are runs whose
//! observer takes branches, jumps and data addresses after the fact
//! ([`crate::Observer::HOST_CODE`], a recorder): for those the blocks are
//! translated again ([`Translator::new`]'s `observed`), to leave an
//! [`ExitRecord`] at each closing branch or jump and each data address in
//! the engine's log, which the engine hands to the observer when the entry
//! into host code returns, before any other hook; their synchronisation
//! calls are the interpreter's, which tells the observer. The cycle-level
//! engine, which needs every instruction as it retires, stays interpreted.
//! Differential tests run every bundled program both ways and compare
//! outputs, exit codes, instruction and branch counts
//! (`tests/translate.rs`), and recordings byte for byte
//! (`tests/record_host.rs`).
//!
//! A block is translated once it has run [`HOT`] times, so cold code costs
//! no compile time. A cache flush (a store into code, `fence.i`) drops the
//! translations with the blocks; after [`MAX_FLUSHES`] flushes a program is
//! taken to rewrite its code too often to be worth translating.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlags, Signature, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{isa::CallConv, Context};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module};
use retrace_isa::{Inst, Op};
use std::cell::RefCell;

/// Executions before a block is translated. Compiling a block costs about
/// as much as interpreting it some thousand times; below 128, short
/// multi-hart runs (stencil, reduce on 8 harts) spent a fifth of their time
/// compiling blocks that ran a few hundred times (measured 2026-12-02 with
/// 32, 128, 512 and 2048; long single-hart runs did not notice).
pub(crate) const HOT: u32 = 128;

/// Cache flushes after which translation stops for the run.
pub(crate) const MAX_FLUSHES: u64 = 64;

/// The entry into host code: `(registers, env, block) -> stopped`, `block`
/// a translated block's address ([`Translator::code`]). Blocks use
/// Cranelift's `tail` convention so each can jump straight into the next;
/// the entry, a function of the host's convention, calls the first.
pub(crate) type EntryFn = unsafe extern "C" fn(*mut u64, *mut Env, usize) -> u64;

/// What translated blocks share with the engine during one entry into host
/// code ([`Translator::run`]).
#[repr(C)]
#[derive(Default)]
pub(crate) struct Env {
    /// First byte of the range of decoded code (`Memory`'s `code_lo`).
    pub code_lo: u64,
    /// Its length in bytes.
    pub code_span: u64,
    /// Live LR reservations: non-zero sends every store to the interpreter.
    pub resv_live: u64,
    /// Where the hart goes on: the next block, or the instruction host code
    /// stopped before.
    pub next_pc: u64,
    /// Instructions the hart may still retire in this entry.
    pub budget: u64,
    /// Instructions retired, conditional branches, taken ones.
    pub retired: u64,
    pub branches: u64,
    pub taken: u64,
    /// The block cache's map (block id + 1 per halfword of memory).
    pub map: usize,
    /// The translations by block id ([`Translator::code`]) and their count.
    pub code: usize,
    pub code_len: u64,
    /// For synchronisation calls made from host code
    /// (`crate::engine::sync_from_host`): the machine's `SyncState`, its
    /// `Memory`, the hart's `last_pc` and the hart's id.
    pub sync: usize,
    pub memory: usize,
    pub last_pc: usize,
    pub hart: u64,
    /// For observed runs ([`Translator::new`]'s `observed`): where the next
    /// exit record ([`ExitRecord`]) goes, where the next data address goes
    /// (the engine's address log), and the address of the last instruction
    /// retired. The engine makes room for as many records and addresses
    /// as `budget` instructions could leave, so the code checks none.
    pub exits: usize,
    pub addrs: usize,
    pub last: u64,
}

/// What an observed translation leaves at each block's closing branch or
/// jump, for the engine to tell the observer after the entry into host
/// code returns ([`crate::Observer::HOST_CODE`]): the address of the
/// block's [`ExitSite`] plus its [`ExitKind`] times two plus a branch's
/// outcome, and a `jalr`'s target (anything for the others).
pub(crate) type ExitRecord = [u64; 2];

/// A translated block's closing branch or jump, as the observer's hooks
/// take it, kept where its exit records point ([`Translator`]'s `sites`).
/// Aligned so that an address leaves three bits for the rest of a record.
#[repr(align(8))]
pub(crate) struct ExitSite {
    pub inst: Inst,
    pub pc: u64,
    /// A branch's or `jal`'s target.
    pub target: u64,
    /// `inst.flow()` and `inst.fallthrough(pc)`, worked out once here
    /// rather than at each of the site's records.
    pub flow: retrace_isa::Flow,
    pub fall: u64,
}

/// The kinds of [`ExitSite`], as exit records say them.
pub(crate) struct ExitKind;
impl ExitKind {
    pub const BRANCH: u64 = 0;
    pub const JAL: u64 = 1;
    pub const JALR: u64 = 2;
}

/// What a synchronisation call from host code did, and what the block then
/// returns: completed (the block retires the `ecall` and goes on), left to
/// the interpreter (the block stops before the `ecall`, as before any
/// instruction it does not translate), or blocked (the block stops at the
/// `ecall`, which did not retire, and the hart's turn ends).
pub(crate) const SYNC_DONE: u64 = 0;
pub(crate) const SYNC_LEAVE: u64 = 1;
pub(crate) const SYNC_BLOCKED: u64 = 2;

const ENV_CODE_LO: i32 = 0;
const ENV_CODE_SPAN: i32 = 8;
const ENV_RESV_LIVE: i32 = 16;
const ENV_NEXT_PC: i32 = 24;
const ENV_BUDGET: i32 = 32;
const ENV_RETIRED: i32 = 40;
const ENV_BRANCHES: i32 = 48;
const ENV_TAKEN: i32 = 56;
const ENV_MAP: i32 = 64;
const ENV_CODE: i32 = 72;
const ENV_CODE_LEN: i32 = 80;
const ENV_EXITS: i32 = 120;
const ENV_ADDRS: i32 = 128;
const ENV_LAST: i32 = 136;
// The offsets above are the fields' (a wrong one would corrupt the engine).
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(Env, code_len) == ENV_CODE_LEN as usize);
    assert!(offset_of!(Env, exits) == ENV_EXITS as usize);
    assert!(offset_of!(Env, addrs) == ENV_ADDRS as usize);
    assert!(offset_of!(Env, last) == ENV_LAST as usize);
};

/// A block goes straight on into the next only while the budget covers a
/// whole block of the longest kind.
const CHAIN_BUDGET: i64 = crate::engine::MAX_BLOCK as i64;

/// Whether the translation runs `op` (otherwise the block stops before it).
fn translated(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Lui | Auipc
            | Jal
            | Jalr
            | Beq
            | Bne
            | Blt
            | Bge
            | Bltu
            | Bgeu
            | Lb
            | Lh
            | Lw
            | Ld
            | Lbu
            | Lhu
            | Lwu
            | Sb
            | Sh
            | Sw
            | Sd
            | Addi
            | Slti
            | Sltiu
            | Xori
            | Ori
            | Andi
            | Slli
            | Srli
            | Srai
            | Add
            | Sub
            | Sll
            | Slt
            | Sltu
            | Xor
            | Srl
            | Sra
            | Or
            | And
            | Addiw
            | Slliw
            | Srliw
            | Sraiw
            | Addw
            | Subw
            | Sllw
            | Srlw
            | Sraw
            | Fence
            | FenceTso
            | Pause
            | Mul
            | Mulh
            | Mulhsu
            | Mulhu
            | Div
            | Divu
            | Rem
            | Remu
            | Mulw
            | Divw
            | Divuw
            | Remw
            | Remuw
    )
}

/// The host-code generator and the code it made.
pub(crate) struct Translator {
    module: JITModule,
    ctx: Context,
    fbc: FunctionBuilderContext,
    /// The memory the code addresses: its host address, size and guest base.
    data: usize,
    len: u64,
    base: u64,
    htif: u64,
    rv64: bool,
    /// Whether the code is for an observed run (see [`Translator::new`]).
    pub observed: bool,
    /// Per block id: executions so far, or [`TRANSLATED`] / [`REFUSED`].
    pub counts: Vec<u32>,
    /// Per block id: its translation's address, 0 if none.
    pub code: Vec<usize>,
    /// The entry into host code.
    entry: EntryFn,
    /// The `ecall`s translated blocks make synchronisation calls with
    /// (each block passes its own): boxed, so their addresses, which the
    /// code holds, never move.
    #[allow(clippy::vec_box)]
    ecalls: Vec<Box<Inst>>,
    /// The closing branches and jumps of observed translations, which
    /// their exit records point to: boxed, so that they never move.
    #[allow(clippy::vec_box)]
    sites: Vec<Box<ExitSite>>,
    /// The direct links of the translations' exits to a fixed address
    /// (`Emit::go_on`): per exit, the translation found there the first
    /// time, 0 until then. Boxed, so their addresses, which the code
    /// holds, never move; zeroed when the translations are forgotten.
    #[allow(clippy::vec_box)]
    links: Vec<Box<u64>>,
    /// Blocks translated (over the whole run).
    pub translated: u64,
}

/// A block whose translation is in [`Translator::code`].
pub(crate) const TRANSLATED: u32 = u32::MAX;
/// A block that cannot be translated (its first instruction is not).
pub(crate) const REFUSED: u32 = u32::MAX - 1;

impl Translator {
    /// A translator for code that addresses the `len` bytes at host address
    /// `data` as guest memory from `base`; `htif` is the `tohost` address
    /// (`u64::MAX` if none). `None` when the host has no Cranelift back
    /// end: the interpreter then runs everything.
    ///
    /// `observed` makes code for an observer that takes its branches,
    /// jumps and data addresses after the fact
    /// ([`crate::Observer::HOST_CODE`]): each block also leaves an
    /// [`ExitRecord`] at its closing branch or jump, its data addresses in
    /// the engine's log and its last pc in [`Env`], and leaves
    /// synchronisation calls to the interpreter (which tells the observer
    /// of them). Code for unobserved runs does none of that, and so costs
    /// them nothing.
    pub fn new(
        data: usize,
        len: u64,
        base: u64,
        htif: u64,
        rv64: bool,
        observed: bool,
    ) -> Option<Translator> {
        let mut flags = settings::builder();
        flags.set("opt_level", "none").ok()?;
        flags.set("use_colocated_libcalls", "false").ok()?;
        flags.set("is_pic", "false").ok()?;
        flags.set("enable_verifier", "false").ok()?;
        // Cranelift's tail calls, how blocks chain, need frame pointers.
        flags.set("preserve_frame_pointers", "true").ok()?;
        let isa = cranelift_native::builder()
            .ok()?
            .finish(settings::Flags::new(flags))
            .ok()?;
        let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let mut ctx = module.make_context();
        let mut fbc = FunctionBuilderContext::new();
        let entry = Self::make_entry(&mut module, &mut ctx, &mut fbc)?;
        Some(Translator {
            module,
            ctx,
            fbc,
            entry,
            data,
            len,
            base,
            htif,
            rv64,
            observed,
            counts: Vec::new(),
            code: Vec::new(),
            ecalls: Vec::new(),
            sites: Vec::new(),
            links: Vec::new(),
            translated: 0,
        })
    }

    /// The entry: the host's convention, calls a block with `tail`'s.
    fn make_entry(
        module: &mut JITModule,
        ctx: &mut Context,
        fbc: &mut FunctionBuilderContext,
    ) -> Option<EntryFn> {
        let host = module.target_config().default_call_conv;
        ctx.func.signature = Signature::new(host);
        for _ in 0..3 {
            ctx.func.signature.params.push(AbiParam::new(types::I64));
        }
        ctx.func.signature.returns.push(AbiParam::new(types::I64));
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, fbc);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            b.seal_block(entry);
            let p = b.block_params(entry).to_vec();
            let sig = b.import_signature(block_signature());
            let call = b.ins().call_indirect(sig, p[2], &[p[0], p[1]]);
            let r = b.inst_results(call)[0];
            b.ins().return_(&[r]);
            b.finalize();
        }
        let id = module
            .declare_anonymous_function(&ctx.func.signature)
            .ok()?;
        module.define_function(id, ctx).ok()?;
        module.finalize_definitions().ok()?;
        module.clear_context(ctx);
        let f = module.get_finalized_function(id);
        // SAFETY: compiled from a function of exactly this signature.
        Some(unsafe { std::mem::transmute::<*const u8, EntryFn>(f) })
    }

    /// Run the translated block at `code` and whatever blocks it chains
    /// into, on the registers `x`.
    ///
    /// # Safety
    /// `code` is one of [`Translator::code`]'s; the memory the translator
    /// was made for ([`Translator::addresses`]) is alive and not otherwise
    /// borrowed; `env`'s map and code table are the block cache's map and
    /// this translator's `code`, unchanged since they were put there.
    /// Returns 0 when the last block went on to a next one that is not
    /// translated (or the budget would not cover it); 1 when a block
    /// stopped before an instruction for the interpreter; [`SYNC_BLOCKED`]
    /// when the hart blocked in a synchronisation call. `env`'s `sync`,
    /// `memory`, `last_pc` and `hart` must be as
    /// `crate::engine::sync_from_host` requires.
    pub unsafe fn run(&self, x: &mut [u64; 32], env: &mut Env, code: usize) -> u64 {
        // SAFETY: as the caller promises.
        unsafe { (self.entry)(x.as_mut_ptr(), env, code) }
    }

    /// Whether the code made addresses this memory.
    pub fn addresses(&self, data: usize, len: u64, base: u64) -> bool {
        (self.data, self.len, self.base) == (data, len, base)
    }

    /// Forget every translation (the block cache was flushed). The code
    /// stays mapped until the translator is dropped.
    pub fn forget(&mut self) {
        self.counts.clear();
        self.code.clear();
        // No code made before runs again (the table is empty, and no
        // link may lead into it): the links go with it.
        for link in &mut self.links {
            **link = 0;
        }
    }

    /// Translate the block `insts` at `pcs`. `None` when its first
    /// instruction is not translated, or Cranelift refuses.
    pub fn translate(&mut self, insts: &[Inst], pcs: &[u64]) -> Option<usize> {
        let k = insts.iter().take_while(|i| translated(i.op)).count();
        // Observed code's closing branch or jump, for its exit records.
        let site = match insts[..k].last() {
            Some(&inst) if self.observed && k == insts.len() => {
                let kind = match inst.op {
                    Op::Jal => ExitKind::JAL,
                    Op::Jalr => ExitKind::JALR,
                    Op::Beq | Op::Bne | Op::Blt | Op::Bge | Op::Bltu | Op::Bgeu => ExitKind::BRANCH,
                    _ => 0,
                };
                let pc = pcs[k - 1];
                let target = pc.wrapping_add(inst.imm as i64 as u64);
                let target = if self.rv64 {
                    target
                } else {
                    target & 0xffff_ffff
                };
                self.sites.push(Box::new(ExitSite {
                    inst,
                    pc,
                    target,
                    flow: inst.flow(),
                    fall: inst.fallthrough(pc),
                }));
                let site: &ExitSite = self.sites.last()?;
                site as *const ExitSite as u64 | kind << 1
            }
            _ => 0,
        };
        // An `ecall` (always a block's last instruction) is a
        // synchronisation call, made from host code, or left to the
        // interpreter (`Emit::ecall`; always in observed code, whose
        // observer must see the call).
        let ecall = if !self.observed && k + 1 == insts.len() && insts[k].op == Op::Ecall {
            self.ecalls.push(Box::new(insts[k]));
            let inst: &Inst = self.ecalls.last()?;
            Some((inst as *const Inst as usize, pcs[k]))
        } else {
            None
        };
        if k == 0 && ecall.is_none() {
            return None;
        }
        self.module.clear_context(&mut self.ctx);
        self.ctx.func.signature = block_signature();
        let emit = Emit {
            rv64: self.rv64,
            data: self.data as i64,
            len: self.len,
            base: self.base,
            htif: self.htif,
            observed: self.observed,
            site,
            call_conv: self.module.target_config().default_call_conv,
            links: RefCell::new(std::mem::take(&mut self.links)),
        };
        {
            let mut b = FunctionBuilder::new(&mut self.ctx.func, &mut self.fbc);
            emit.block(&mut b, &insts[..k], &pcs[..k], k < insts.len(), ecall);
            b.finalize();
        }
        self.links = emit.links.into_inner();
        let id = self
            .module
            .declare_anonymous_function(&self.ctx.func.signature)
            .ok()?;
        self.module.define_function(id, &mut self.ctx).ok()?;
        self.module.finalize_definitions().ok()?;
        self.translated += 1;
        Some(self.module.get_finalized_function(id) as usize)
    }
}

/// A translated block's signature: `(registers, env) -> stopped`, in
/// Cranelift's `tail` convention.
fn block_signature() -> Signature {
    let mut sig = Signature::new(CallConv::Tail);
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

/// The constants of one translation.
struct Emit {
    rv64: bool,
    data: i64,
    len: u64,
    base: u64,
    htif: u64,
    /// Code for an observed run ([`Translator::new`]), and its closing
    /// branch's or jump's exit record's first word but the outcome.
    observed: bool,
    site: u64,
    call_conv: CallConv,
    /// [`Translator`]'s links, which the block's exits add to.
    #[allow(clippy::vec_box)]
    links: RefCell<Vec<Box<u64>>>,
}

/// Where a block goes on: an address fixed at translation (a jump, the
/// fall-through, the instruction after an `ecall`), the target or the
/// fall-through of a conditional branch by its outcome `taken`, or an
/// address computed at run time (`jalr`).
#[derive(Clone, Copy)]
enum Next {
    Fixed(u64),
    Either {
        taken: Value,
        target: u64,
        fall: u64,
    },
    Computed(Value),
}

/// One guest register as a Cranelift variable, loaded at entry.
struct Regs {
    vars: [Option<Variable>; 32],
    /// Registers the block writes: stored back at every exit.
    written: u32,
}

impl Regs {
    fn get(&self, b: &mut FunctionBuilder, r: u8) -> Value {
        match self.vars[(r & 31) as usize] {
            Some(v) if r & 31 != 0 => b.use_var(v),
            _ => b.ins().iconst(types::I64, 0),
        }
    }
    fn set(&mut self, b: &mut FunctionBuilder, r: u8, v: Value) {
        let r = (r & 31) as usize;
        if r != 0 {
            if let Some(var) = self.vars[r] {
                b.def_var(var, v);
                self.written |= 1 << r;
            }
        }
    }
    /// Store the written registers back.
    fn write_back(&self, b: &mut FunctionBuilder, x: Value) {
        for r in 1..32 {
            if self.written >> r & 1 != 0 {
                if let Some(var) = self.vars[r] {
                    let v = b.use_var(var);
                    b.ins().store(MemFlags::trusted(), v, x, (r * 8) as i32);
                }
            }
        }
    }
}

impl Emit {
    /// Sign-extend from bit 31 on RV32 (how registers hold values there).
    fn sx(&self, b: &mut FunctionBuilder, v: Value) -> Value {
        if self.rv64 {
            v
        } else {
            let w = b.ins().ireduce(types::I32, v);
            b.ins().sextend(types::I64, w)
        }
    }
    /// An effective address: the low 32 bits on RV32.
    fn ea(&self, b: &mut FunctionBuilder, v: Value) -> Value {
        if self.rv64 {
            v
        } else {
            b.ins().band_imm(v, 0xffff_ffff)
        }
    }
    fn ea_const(&self, v: u64) -> u64 {
        if self.rv64 {
            v
        } else {
            v & 0xffff_ffff
        }
    }
    fn sx_const(&self, v: u64) -> u64 {
        if self.rv64 {
            v
        } else {
            v as i32 as i64 as u64
        }
    }
    /// The low 32 bits, operated on and sign-extended back (the `*W` forms).
    fn w(b: &mut FunctionBuilder, v: Value) -> Value {
        b.ins().ireduce(types::I32, v)
    }
    fn wx(b: &mut FunctionBuilder, v: Value) -> Value {
        b.ins().sextend(types::I64, v)
    }

    /// Call `f(a, b)`, one of the engine's own arithmetic functions.
    fn call(
        &self,
        b: &mut FunctionBuilder,
        f: extern "C" fn(u64, u64) -> u64,
        x: Value,
        y: Value,
    ) -> Value {
        let mut sig = Signature::new(self.call_conv);
        sig.params.push(AbiParam::new(types::I64));
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let sig = b.import_signature(sig);
        let callee = b.ins().iconst(types::I64, f as usize as i64);
        let call = b.ins().call_indirect(sig, callee, &[x, y]);
        b.inst_results(call)[0]
    }

    /// Add `n` to the `u64` at `env + at`.
    fn bump(b: &mut FunctionBuilder, env: Value, at: i32, n: Value) {
        let v = b.ins().load(types::I64, MemFlags::trusted(), env, at);
        let v = b.ins().iadd(v, n);
        b.ins().store(MemFlags::trusted(), v, env, at);
    }

    /// Leave the block before instruction `i`, at `pc`, when `cond` holds:
    /// the interpreter runs it.
    fn stop_if(&self, b: &mut FunctionBuilder, e: &Exits, cond: Value, i: usize, pc: u64) {
        let out = b.create_block();
        let on = b.create_block();
        b.set_cold_block(out);
        b.ins().brif(cond, out, &[], on, &[]);
        b.switch_to_block(out);
        b.seal_block(out);
        self.stop(b, e, i, pc);
        b.switch_to_block(on);
        b.seal_block(on);
    }

    /// Leave before instruction `i`, at `pc` (see [`Emit::stop_if`]).
    fn stop(&self, b: &mut FunctionBuilder, e: &Exits, i: usize, pc: u64) {
        self.observed_exit(b, e, i);
        let to = b.ins().iconst(types::I64, pc as i64);
        b.ins().store(MemFlags::trusted(), to, e.env, ENV_NEXT_PC);
        let n = b.ins().iconst(types::I64, i as i64);
        Self::bump(b, e.env, ENV_RETIRED, n);
        e.regs.write_back(b, e.x);
        let stopped = b.ins().iconst(types::I64, 1);
        b.ins().return_(&[stopped]);
    }

    /// What observed code leaves at every exit, after the block's first
    /// `k` instructions retired: the end of the address log, and the pc of
    /// the last instruction retired (if any retired here: otherwise an
    /// earlier block's is there already).
    fn observed_exit(&self, b: &mut FunctionBuilder, e: &Exits, k: usize) {
        let t = MemFlags::trusted();
        if let Some((p, logged)) = e.log {
            if logged > 0 {
                let end = b.ins().iadd_imm(p, (logged * 8) as i64);
                b.ins().store(t, end, e.env, ENV_ADDRS);
            }
        }
        if self.observed && k > 0 {
            let last = b.ins().iconst(types::I64, e.pcs[k - 1] as i64);
            b.ins().store(t, last, e.env, ENV_LAST);
        }
    }

    /// The exit record ([`ExitRecord`]) of observed code's closing branch
    /// or jump, going on at `next`.
    fn exit_record(&self, b: &mut FunctionBuilder, env: Value, next: Next) {
        let t = MemFlags::trusted();
        let at = b.ins().load(types::I64, t, env, ENV_EXITS);
        let id = b.ins().iconst(types::I64, self.site as i64);
        let word = match next {
            Next::Either { taken, .. } => {
                let taken = b.ins().uextend(types::I64, taken);
                b.ins().bor(id, taken)
            }
            _ => id,
        };
        b.ins().store(t, word, at, 0);
        if let Next::Computed(to) = next {
            b.ins().store(t, to, at, 8);
        }
        let at = b
            .ins()
            .iadd_imm(at, std::mem::size_of::<ExitRecord>() as i64);
        b.ins().store(t, at, env, ENV_EXITS);
    }

    /// A new link, 0 until its exit first finds a translation
    /// ([`Translator`]'s `links`): its address.
    fn link(&self) -> i64 {
        let mut links = self.links.borrow_mut();
        links.push(Box::new(0));
        let link: &u64 = links.last().expect("just pushed");
        link as *const u64 as i64
    }

    /// The block ran its `k` instructions and goes on at `next`; `taken`
    /// is its closing conditional branch's outcome, if it has one, and
    /// `closes` says it ends with a branch or jump (which observed code
    /// records, [`Emit::exit_record`]). Jumps
    /// straight into `next`'s translation when there is one and the budget
    /// covers it, otherwise returns to the engine. An exit to a fixed
    /// address keeps the translation it found there the first time in a
    /// link of its own and jumps through that from then on, without the
    /// map and the table.
    fn go_on(
        &self,
        b: &mut FunctionBuilder,
        e: &Exits,
        next: Next,
        k: usize,
        taken: Option<Value>,
        closes: bool,
    ) {
        let env = e.env;
        let t = MemFlags::trusted();
        if self.observed {
            if closes {
                self.exit_record(b, env, next);
            }
            self.observed_exit(b, e, k);
        }
        let next_pc = |b: &mut FunctionBuilder, at: u64| b.ins().iconst(types::I64, at as i64);
        let (next, link) = match next {
            Next::Fixed(at) => {
                let link = self.link();
                (next_pc(b, at), Some(b.ins().iconst(types::I64, link)))
            }
            Next::Either {
                taken,
                target,
                fall,
            } => {
                let (to, from) = (next_pc(b, target), next_pc(b, fall));
                let (lt, lf) = (self.link(), self.link());
                let (lt, lf) = (
                    b.ins().iconst(types::I64, lt),
                    b.ins().iconst(types::I64, lf),
                );
                let link = b.ins().select(taken, lt, lf);
                (b.ins().select(taken, to, from), Some(link))
            }
            Next::Computed(v) => (v, None),
        };
        b.ins().store(t, next, env, ENV_NEXT_PC);
        let n = b.ins().iconst(types::I64, k as i64);
        Self::bump(b, env, ENV_RETIRED, n);
        if let Some(taken) = taken {
            let one = b.ins().iconst(types::I64, 1);
            Self::bump(b, env, ENV_BRANCHES, one);
            let t = b.ins().uextend(types::I64, taken);
            Self::bump(b, env, ENV_TAKEN, t);
        }
        e.regs.write_back(b, e.x);
        let back = b.create_block();
        let look = b.create_block();
        let found = b.create_block();
        let jump = b.create_block();
        b.append_block_param(jump, types::I64);
        b.set_cold_block(back);
        // Budget for a whole block?
        let budget = b.ins().load(types::I64, t, env, ENV_BUDGET);
        let retired = b.ins().load(types::I64, t, env, ENV_RETIRED);
        let left = b.ins().isub(budget, retired);
        let enough = b
            .ins()
            .icmp_imm(IntCC::UnsignedGreaterThanOrEqual, left, CHAIN_BUDGET);
        if let Some(link) = link {
            // Linked already?
            let linked = b.create_block();
            b.ins().brif(enough, linked, &[], back, &[]);
            b.switch_to_block(linked);
            b.seal_block(linked);
            let f = b.ins().load(types::I64, t, link, 0);
            b.ins().brif(f, jump, &[f.into()], look, &[]);
        } else {
            b.ins().brif(enough, look, &[], back, &[]);
        }
        b.switch_to_block(look);
        b.seal_block(look);
        // An even address inside memory?
        let off = b.ins().iadd_imm(next, self.base.wrapping_neg() as i64);
        let inside = b
            .ins()
            .icmp_imm(IntCC::UnsignedLessThan, off, (self.len & !1) as i64);
        let odd = b.ins().band_imm(next, 1);
        let even = b.ins().icmp_imm(IntCC::Equal, odd, 0);
        let ok = b.ins().band(inside, even);
        let map_it = b.create_block();
        b.ins().brif(ok, map_it, &[], back, &[]);
        b.switch_to_block(map_it);
        b.seal_block(map_it);
        // The block there, and its translation.
        let map = b.ins().load(types::I64, t, env, ENV_MAP);
        let slot = b.ins().ushr_imm(off, 1);
        let slot = b.ins().ishl_imm(slot, 2);
        let at = b.ins().iadd(map, slot);
        let id = b.ins().uload32(t, at, 0);
        let id = b.ins().iadd_imm(id, -1);
        let len = b.ins().load(types::I64, t, env, ENV_CODE_LEN);
        // `id` is -1 (no block) or a block id; unsigned, both compare
        // against the table's length.
        let known = b.ins().icmp(IntCC::UnsignedLessThan, id, len);
        b.ins().brif(known, found, &[], back, &[]);
        b.switch_to_block(found);
        b.seal_block(found);
        let code = b.ins().load(types::I64, t, env, ENV_CODE);
        let slot = b.ins().ishl_imm(id, 3);
        let at = b.ins().iadd(code, slot);
        let f = b.ins().load(types::I64, t, at, 0);
        let store = b.create_block();
        b.ins().brif(f, store, &[], back, &[]);
        b.switch_to_block(store);
        b.seal_block(store);
        if let Some(link) = link {
            b.ins().store(t, f, link, 0);
        }
        b.ins().jump(jump, &[f.into()]);
        b.switch_to_block(jump);
        b.seal_block(jump);
        let f = b.block_params(jump)[0];
        let sig = b.import_signature(block_signature());
        b.ins().return_call_indirect(sig, f, &[e.x, env]);
        b.switch_to_block(back);
        b.seal_block(back);
        let zero = b.ins().iconst(types::I64, 0);
        b.ins().return_(&[zero]);
    }

    /// The `ecall` at `pc`, instruction `k` of the block, whose `Inst` is at
    /// host address `inst`: a synchronisation call made here, by the
    /// interpreter's own function (`crate::engine::sync_from_host`), with
    /// the registers written back first. Completed, the `ecall` retires and
    /// the block goes on after it as after any instruction; otherwise the
    /// block stops at the `ecall` with what the call returned
    /// ([`SYNC_LEAVE`]: the interpreter runs it; [`SYNC_BLOCKED`]).
    fn ecall(&self, b: &mut FunctionBuilder, e: &Exits, k: usize, pc: u64, inst: usize) {
        e.regs.write_back(b, e.x);
        let mut sig = Signature::new(self.call_conv);
        for _ in 0..4 {
            sig.params.push(AbiParam::new(types::I64));
        }
        sig.returns.push(AbiParam::new(types::I64));
        let sig = b.import_signature(sig);
        let f = crate::engine::SYNC_FROM_HOST[usize::from(self.rv64)];
        let callee = b.ins().iconst(types::I64, f as usize as i64);
        let at = b.ins().iconst(types::I64, pc as i64);
        let inst = b.ins().iconst(types::I64, inst as i64);
        let call = b.ins().call_indirect(sig, callee, &[e.x, e.env, at, inst]);
        let status = b.inst_results(call)[0];
        let done = b.create_block();
        let out = b.create_block();
        b.ins().brif(status, out, &[], done, &[]);
        b.switch_to_block(out);
        b.seal_block(out);
        b.ins().store(MemFlags::trusted(), at, e.env, ENV_NEXT_PC);
        let n = b.ins().iconst(types::I64, k as i64);
        Self::bump(b, e.env, ENV_RETIRED, n);
        b.ins().return_(&[status]);
        b.switch_to_block(done);
        b.seal_block(done);
        // The registers are in memory already, `a0` with the result.
        let stored = Regs {
            vars: e.regs.vars,
            written: 0,
        };
        let e = Exits {
            regs: &stored,
            ..*e
        };
        self.go_on(b, &e, Next::Fixed(pc + 4), k + 1, None, false);
    }

    /// The host address of `at` (guest address of an `n`-byte access),
    /// leaving before instruction `i` when the access is not inside memory.
    fn host_address(
        &self,
        b: &mut FunctionBuilder,
        e: &Exits,
        at: Value,
        n: u64,
        i: usize,
        pc: u64,
    ) -> Value {
        let off = b.ins().iadd_imm(at, self.base.wrapping_neg() as i64);
        let out = b
            .ins()
            .icmp_imm(IntCC::UnsignedGreaterThan, off, (self.len - n) as i64);
        self.stop_if(b, e, out, i, pc);
        b.ins().iadd_imm(off, self.data)
    }

    /// `insts` at `pcs`, the block's translated prefix; `stops` when an
    /// instruction follows that is not translated, which is `ecall`, the
    /// address of its `Inst` and its pc, when the block makes its
    /// synchronisation call from host code.
    fn block(
        &self,
        b: &mut FunctionBuilder,
        insts: &[Inst],
        pcs: &[u64],
        stops: bool,
        ecall: Option<(usize, u64)>,
    ) {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let x = b.block_params(entry)[0];
        let env = b.block_params(entry)[1];
        // Every register the block names, loaded once.
        let mut regs = Regs {
            vars: [None; 32],
            written: 0,
        };
        for inst in insts {
            for r in [inst.rd, inst.rs1, inst.rs2] {
                let r = (r & 31) as usize;
                if r != 0 && regs.vars[r].is_none() {
                    let var = b.declare_var(types::I64);
                    let v = b
                        .ins()
                        .load(types::I64, MemFlags::trusted(), x, (r * 8) as i32);
                    b.def_var(var, v);
                    regs.vars[r] = Some(var);
                }
            }
        }
        // Observed code logs data addresses from the log's end at entry,
        // one slot per access.
        let log = self.observed.then(|| {
            b.ins()
                .load(types::I64, MemFlags::trusted(), env, ENV_ADDRS)
        });
        let mut logged = 0;
        macro_rules! exits {
            () => {
                Exits {
                    regs: &regs,
                    x,
                    env,
                    pcs,
                    log: log.map(|p| (p, logged)),
                }
            };
        }
        // The access just made, at `at`, into the log.
        macro_rules! note_address {
            ($at:expr) => {
                if let Some(p) = log {
                    b.ins()
                        .store(MemFlags::trusted(), $at, p, (logged * 8) as i32);
                    logged += 1;
                }
            };
        }
        let flags = MemFlags::new().with_notrap();
        for (i, (inst, &pc)) in insts.iter().zip(pcs).enumerate() {
            let a = regs.get(b, inst.rs1);
            let c = regs.get(b, inst.rs2);
            let imm = inst.imm as i64;
            let next = pc.wrapping_add(u64::from(inst.len));
            let rd = inst.rd;
            macro_rules! set {
                ($v:expr) => {{
                    let v = $v;
                    regs.set(b, rd, v);
                }};
            }
            // A load of `$n` bytes by `$kind(type, flags, p, 0)`, or by
            // `$kind(flags, p, 0)` for the 32-bit ones, whose type is fixed.
            macro_rules! load {
                ($n:expr, $kind:ident) => {
                    load!($n, |p| b.ins().$kind(types::I64, flags, p, 0))
                };
                ($n:expr, $kind:ident, fixed) => {
                    load!($n, |p| b.ins().$kind(flags, p, 0))
                };
                ($n:expr, |$p:ident| $access:expr) => {{
                    let s = b.ins().iadd_imm(a, imm);
                    let at = self.ea(b, s);
                    let e = exits!();
                    let $p = self.host_address(b, &e, at, $n, i, pc);
                    note_address!(at);
                    let v = $access;
                    set!(v);
                }};
            }
            macro_rules! store {
                ($n:expr, $kind:ident) => {{
                    let s = b.ins().iadd_imm(a, imm);
                    let at = self.ea(b, s);
                    // Everything the interpreter's store checks after
                    // writing, checked before: it then does the store.
                    let tohost = b.ins().icmp_imm(IntCC::Equal, at, self.htif as i64);
                    let lo = b
                        .ins()
                        .load(types::I64, MemFlags::trusted(), env, ENV_CODE_LO);
                    let span = b
                        .ins()
                        .load(types::I64, MemFlags::trusted(), env, ENV_CODE_SPAN);
                    let last = b.ins().iadd_imm(at, $n - 1);
                    let last = b.ins().isub(last, lo);
                    let wide = b.ins().iadd_imm(span, $n - 1);
                    let code = b.ins().icmp(IntCC::UnsignedLessThan, last, wide);
                    let resv = b
                        .ins()
                        .load(types::I64, MemFlags::trusted(), env, ENV_RESV_LIVE);
                    let resv = b.ins().icmp_imm(IntCC::NotEqual, resv, 0);
                    let any = b.ins().bor(tohost, code);
                    let any = b.ins().bor(any, resv);
                    let e = exits!();
                    self.stop_if(b, &e, any, i, pc);
                    let p = self.host_address(b, &e, at, $n, i, pc);
                    note_address!(at);
                    b.ins().$kind(flags, c, p, 0);
                }};
            }
            macro_rules! branch {
                ($cc:expr) => {{
                    let taken = b.ins().icmp($cc, a, c);
                    let to = Next::Either {
                        taken,
                        target: self.ea_const(pc.wrapping_add(imm as u64)),
                        fall: next,
                    };
                    self.go_on(b, &exits!(), to, i + 1, Some(taken), true);
                    return;
                }};
            }
            macro_rules! w {
                ($op:ident) => {{
                    let (p, q) = (Self::w(b, a), Self::w(b, c));
                    let v = b.ins().$op(p, q);
                    set!(Self::wx(b, v))
                }};
            }
            macro_rules! mext {
                ($f:expr) => {{
                    let v = self.call(b, $f, a, c);
                    set!(v)
                }};
            }
            let shmask: i64 = if self.rv64 { 63 } else { 31 };
            match inst.op {
                Op::Lui => set!(b.ins().iconst(types::I64, imm)),
                Op::Auipc => set!(b.ins().iconst(
                    types::I64,
                    self.sx_const(pc.wrapping_add(imm as u64)) as i64
                )),
                Op::Jal => {
                    let link = b.ins().iconst(types::I64, self.sx_const(next) as i64);
                    set!(link);
                    let to = Next::Fixed(self.ea_const(pc.wrapping_add(imm as u64)));
                    self.go_on(b, &exits!(), to, i + 1, None, true);
                    return;
                }
                Op::Jalr => {
                    let s = b.ins().iadd_imm(a, imm);
                    let to = self.ea(b, s);
                    let to = b.ins().band_imm(to, !1);
                    let link = b.ins().iconst(types::I64, self.sx_const(next) as i64);
                    set!(link);
                    self.go_on(b, &exits!(), Next::Computed(to), i + 1, None, true);
                    return;
                }
                Op::Beq => branch!(IntCC::Equal),
                Op::Bne => branch!(IntCC::NotEqual),
                Op::Blt => branch!(IntCC::SignedLessThan),
                Op::Bge => branch!(IntCC::SignedGreaterThanOrEqual),
                Op::Bltu => branch!(IntCC::UnsignedLessThan),
                Op::Bgeu => branch!(IntCC::UnsignedGreaterThanOrEqual),
                Op::Lb => load!(1, sload8),
                Op::Lbu => load!(1, uload8),
                Op::Lh => load!(2, sload16),
                Op::Lhu => load!(2, uload16),
                Op::Lw => load!(4, sload32, fixed),
                Op::Lwu => load!(4, uload32, fixed),
                Op::Ld => load!(8, load),
                Op::Sb => store!(1, istore8),
                Op::Sh => store!(2, istore16),
                Op::Sw => store!(4, istore32),
                Op::Sd => store!(8, store),
                Op::Addi => {
                    let v = b.ins().iadd_imm(a, imm);
                    set!(self.sx(b, v))
                }
                Op::Slti => {
                    let v = b.ins().icmp_imm(IntCC::SignedLessThan, a, imm);
                    set!(b.ins().uextend(types::I64, v))
                }
                Op::Sltiu => {
                    let v = b.ins().icmp_imm(
                        IntCC::UnsignedLessThan,
                        a,
                        self.sx_const(imm as u64) as i64,
                    );
                    set!(b.ins().uextend(types::I64, v))
                }
                Op::Xori => set!(b.ins().bxor_imm(a, imm)),
                Op::Ori => set!(b.ins().bor_imm(a, imm)),
                Op::Andi => set!(b.ins().band_imm(a, imm)),
                Op::Slli => {
                    let v = b.ins().ishl_imm(a, imm & 63);
                    set!(self.sx(b, v))
                }
                Op::Srli => {
                    let e = self.ea(b, a);
                    let v = b.ins().ushr_imm(e, imm & 63);
                    set!(self.sx(b, v))
                }
                Op::Srai => set!(b.ins().sshr_imm(a, imm & 63)),
                Op::Add => {
                    let v = b.ins().iadd(a, c);
                    set!(self.sx(b, v))
                }
                Op::Sub => {
                    let v = b.ins().isub(a, c);
                    set!(self.sx(b, v))
                }
                Op::Sll => {
                    let s = b.ins().band_imm(c, shmask);
                    let v = b.ins().ishl(a, s);
                    set!(self.sx(b, v))
                }
                Op::Slt => {
                    let v = b.ins().icmp(IntCC::SignedLessThan, a, c);
                    set!(b.ins().uextend(types::I64, v))
                }
                Op::Sltu => {
                    let v = b.ins().icmp(IntCC::UnsignedLessThan, a, c);
                    set!(b.ins().uextend(types::I64, v))
                }
                Op::Xor => set!(b.ins().bxor(a, c)),
                Op::Srl => {
                    let s = b.ins().band_imm(c, shmask);
                    let e = self.ea(b, a);
                    let v = b.ins().ushr(e, s);
                    set!(self.sx(b, v))
                }
                Op::Sra => {
                    let s = b.ins().band_imm(c, shmask);
                    set!(b.ins().sshr(a, s))
                }
                Op::Or => set!(b.ins().bor(a, c)),
                Op::And => set!(b.ins().band(a, c)),
                Op::Addiw => {
                    let v = b.ins().iadd_imm(a, imm);
                    let v = Self::w(b, v);
                    set!(Self::wx(b, v))
                }
                Op::Slliw => {
                    let v = Self::w(b, a);
                    let v = b.ins().ishl_imm(v, imm & 31);
                    set!(Self::wx(b, v))
                }
                Op::Srliw => {
                    let v = Self::w(b, a);
                    let v = b.ins().ushr_imm(v, imm & 31);
                    set!(Self::wx(b, v))
                }
                Op::Sraiw => {
                    let v = Self::w(b, a);
                    let v = b.ins().sshr_imm(v, imm & 31);
                    set!(Self::wx(b, v))
                }
                Op::Addw => w!(iadd),
                Op::Subw => w!(isub),
                Op::Mulw => w!(imul),
                Op::Sllw | Op::Srlw | Op::Sraw => {
                    let v = Self::w(b, a);
                    let s = b.ins().band_imm(c, 31);
                    let s = Self::w(b, s);
                    let v = match inst.op {
                        Op::Sllw => b.ins().ishl(v, s),
                        Op::Srlw => b.ins().ushr(v, s),
                        _ => b.ins().sshr(v, s),
                    };
                    set!(Self::wx(b, v))
                }
                Op::Fence | Op::FenceTso | Op::Pause => {}
                Op::Mul => {
                    let v = b.ins().imul(a, c);
                    set!(self.sx(b, v))
                }
                Op::Mulh => mext!(if self.rv64 { ext::mulh64 } else { ext::mulh32 }),
                Op::Mulhsu => mext!(if self.rv64 {
                    ext::mulhsu64
                } else {
                    ext::mulhsu32
                }),
                Op::Mulhu => mext!(if self.rv64 {
                    ext::mulhu64
                } else {
                    ext::mulhu32
                }),
                Op::Div => mext!(if self.rv64 { ext::div64 } else { ext::div32 }),
                Op::Divu => mext!(if self.rv64 { ext::divu64 } else { ext::divu32 }),
                Op::Rem => mext!(if self.rv64 { ext::rem64 } else { ext::rem32 }),
                Op::Remu => mext!(if self.rv64 { ext::remu64 } else { ext::remu32 }),
                Op::Divw => mext!(ext::div32),
                Op::Divuw => mext!(ext::divu32),
                Op::Remw => mext!(ext::rem32),
                Op::Remuw => mext!(ext::remu32),
                _ => unreachable!("only translated operations reach here"),
            }
        }
        // Ran off the prefix: either the block's end without a transfer
        // (the longest block, or code that does not decode after it), or
        // an instruction the interpreter must run.
        let e = exits!();
        if let Some((inst, pc)) = ecall {
            self.ecall(b, &e, insts.len(), pc, inst);
            return;
        }
        let last = insts.len() - 1;
        if stops {
            let k = insts.len();
            self.stop(b, &e, k, pcs[last].wrapping_add(u64::from(insts[last].len)));
        } else {
            let to = pcs[last].wrapping_add(u64::from(insts[last].len));
            self.go_on(b, &e, Next::Fixed(to), insts.len(), None, false);
        }
    }
}

/// What every exit of a block needs: the registers to write back, and the
/// function's two parameters.
struct Exits<'a> {
    regs: &'a Regs,
    x: Value,
    env: Value,
    /// The pcs of the block's instructions.
    pcs: &'a [u64],
    /// In observed code: where the block's data addresses go (the log's
    /// end at entry), and how many it has logged so far.
    log: Option<(Value, usize)>,
}

/// The engine's own M-extension arithmetic, callable from host code.
mod ext {
    use crate::engine as e;
    macro_rules! wrap {
        ($($name:ident = $f:expr;)*) => {$(
            pub extern "C" fn $name(a: u64, b: u64) -> u64 {
                $f(a, b)
            }
        )*};
    }
    wrap! {
        mulh64 = e::mulh::<true>;
        mulh32 = e::mulh::<false>;
        mulhsu64 = e::mulhsu::<true>;
        mulhsu32 = e::mulhsu::<false>;
        mulhu64 = e::mulhu::<true>;
        mulhu32 = e::mulhu::<false>;
        div64 = e::div64;
        div32 = e::div32;
        divu64 = e::divu64;
        divu32 = e::divu32;
        rem64 = e::rem64;
        rem32 = e::rem32;
        remu64 = e::remu64;
        remu32 = e::remu32;
    }
}
