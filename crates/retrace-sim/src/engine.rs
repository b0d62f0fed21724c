//! The functional engine: executes decoded blocks of straight-line code.
//!
//! Speed comes from doing per instruction only what the instruction needs:
//! - **Decode once.** Instructions are decoded into blocks (straight-line
//!   runs ending at a branch, jump, or system/CSR instruction) kept in a
//!   cache indexed by the block's start address (one `u32` slot per
//!   halfword of RAM, so a lookup is an index, not a hash). A store that
//!   hits decoded code, and `fence.i`, flush the cache; the rest of the block
//!   after such a store is not executed from stale decodings.
//! - **Monomorphised XLEN.** The executor is generic over `const RV64: bool`
//!   so no instruction tests the register width at run time.
//! - **Monomorphised observer.** Hooks are generic calls; with `()` they
//!   vanish.
//! - **Exact budgets, checked per block.** A block runs whole when the
//!   remaining instruction budget covers it, otherwise only its first
//!   `budget` instructions.
//! - **A slow path** for everything rare (CSRs, traps, `ecall`, semihosting,
//!   `mret`, `fence.i`), with the exact retired count at hand.

use crate::csr::{mstatus, Cause, Priv};
use crate::fpu;
use crate::hart::Hart;
use crate::memory::{Memory, Reservation};
use crate::observer::{HostExits, Observer, Retired, TrapEvent};
use crate::semihost;
use crate::sync::{self, HartState, SyncEvent, SyncOp, SyncOutcome};
use crate::translate::{
    Env, ExitRecord, Translator, HOT, MAX_FLUSHES, REFUSED, SYNC_BLOCKED, SYNC_DONE, SYNC_LEAVE,
    TRANSLATED,
};
use crate::{Fault, Machine, StopReason};
use retrace_isa::csr::{self, Csr};
use retrace_isa::{decode, Inst, Op, Xlen};

/// Longest block; long enough to amortise the per-block work, short enough
/// that a flush or a partial block wastes little.
pub(crate) const MAX_BLOCK: usize = 64;

/// Data addresses the engine collects for an observer that takes them in
/// bulk before handing them over ([`Observer::addresses`]): 512 KiB, few
/// enough hand-overs that waking the thread that takes them is rare.
pub(crate) const ADDRESS_LOG: usize = 1 << 16;

/// Exit records ([`ExitRecord`]) one entry into observed host code may
/// leave: 256 KiB, enough that the entries' own cost is spread over
/// thousands of blocks.
pub(crate) const EXIT_LOG: usize = 1 << 14;

/// Room in the address log before an entry into observed host code: the
/// entry runs no further than the room lasts, so a nearly full log would
/// make entries of a block or two.
const HOST_ADDRESS_ROOM: usize = 1 << 12;

/// The semihosting entry sequence around `ebreak`.
const SEMI_PRE: u32 = 0x01f0_1013; // slli x0, x0, 0x1f
const SEMI_EBREAK: u32 = 0x0010_0073; // ebreak
const SEMI_POST: u32 = 0x4070_5013; // srai x0, x0, 7

#[derive(Clone, Copy, Debug)]
struct Block {
    pc: u64,
    /// Bytes of code covered.
    bytes: u32,
    first: u32,
    len: u32,
}

/// Decoded-block cache.
pub(crate) struct BlockCache {
    base: u64,
    /// Block index + 1 for each halfword where a block starts, 0 if none.
    map: Vec<u32>,
    blocks: Vec<Block>,
    insts: Vec<Inst>,
    /// The address of each instruction in `insts`: read once per block
    /// executed, for the hart's last executed pc.
    pcs: Vec<u64>,
    pub flushes: u64,
}

/// Why building a block failed.
enum Fetch {
    /// The pc is outside memory.
    Access,
    /// The first instruction does not decode.
    Illegal(u32),
}

impl BlockCache {
    pub fn new(mem: &Memory) -> BlockCache {
        BlockCache {
            base: mem.base(),
            map: vec![0; (mem.size() / 2) as usize],
            blocks: Vec::new(),
            insts: Vec::new(),
            pcs: Vec::new(),
            flushes: 0,
        }
    }

    #[inline(always)]
    fn lookup(&self, pc: u64) -> Option<usize> {
        let slot = (pc.wrapping_sub(self.base) >> 1) as usize;
        match self.map.get(slot) {
            Some(&id) if id != 0 && pc & 1 == 0 => Some(id as usize - 1),
            _ => None,
        }
    }

    fn build(&mut self, pc: u64, mem: &mut Memory, xlen: Xlen) -> Result<usize, Fetch> {
        let slot = (pc.wrapping_sub(self.base) >> 1) as usize;
        if slot >= self.map.len() || pc & 1 != 0 {
            return Err(Fetch::Access);
        }
        let first = self.insts.len();
        let mut a = pc;
        while self.insts.len() - first < MAX_BLOCK {
            let Some(bits) = fetch(mem, a) else { break };
            let inst = match decode(bits, xlen) {
                Ok(i) => i,
                Err(e) => {
                    if a == pc {
                        return Err(Fetch::Illegal(e.bits()));
                    }
                    break;
                }
            };
            self.insts.push(inst);
            self.pcs.push(a);
            a += u64::from(inst.len);
            if ends_block(inst.op) {
                break;
            }
        }
        if self.insts.len() == first {
            return Err(Fetch::Access);
        }
        let bytes = (a - pc) as u32;
        mem.mark_code(pc, u64::from(bytes));
        self.blocks.push(Block {
            pc,
            bytes,
            first: first as u32,
            len: (self.insts.len() - first) as u32,
        });
        self.map[slot] = self.blocks.len() as u32;
        Ok(self.blocks.len() - 1)
    }

    pub fn flush(&mut self, mem: &mut Memory) {
        for b in &self.blocks {
            self.map[((b.pc - self.base) >> 1) as usize] = 0;
        }
        mem.clear_code(self.blocks.iter().map(|b| (b.pc, u64::from(b.bytes))));
        self.blocks.clear();
        self.insts.clear();
        self.pcs.clear();
        self.flushes += 1;
    }
}

/// The instruction bits at `pc`: 4 bytes, or 2 at the very end of memory.
fn fetch(mem: &Memory, pc: u64) -> Option<u32> {
    if let Some(b) = mem.read::<4>(pc) {
        return Some(u32::from_le_bytes(b));
    }
    mem.read::<2>(pc).map(|b| u32::from(u16::from_le_bytes(b)))
}

/// Where an operation leaves the block it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockEnd {
    /// Straight-line: the block goes on after it.
    No,
    /// A control transfer the block executor runs: the block ends after it.
    Transfer,
    /// The slow path runs it: the block ends before it.
    Slow,
}

/// Where `op` leaves its block. The match is exhaustive, with no catch-all,
/// so a new operation does not compile until it is placed here: a control
/// transfer left out would otherwise run on into the fall-through
/// instructions. The tests check every operation against [`Inst::flow`] and
/// against what the block executor does with it.
const fn block_end(op: Op) -> BlockEnd {
    use Op::*;
    match op {
        Jal | Jalr | Beq | Bne | Blt | Bge | Bltu | Bgeu => BlockEnd::Transfer,
        Ecall | Ebreak | Mret | Sret | Wfi | SfenceVma | FenceI | Csrrw | Csrrs | Csrrc
        | Csrrwi | Csrrsi | Csrrci => BlockEnd::Slow,
        // F and D run in the block: whether they may (`mstatus.FS`, `frm`)
        // can change only at a CSR write or a trap, both of which end a
        // block, and an illegal one leaves it as any exception does.
        retrace_isa::fp_ops!() => BlockEnd::No,
        Lui | Auipc | Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu | Sb | Sh | Sw | Sd | Addi | Slti
        | Sltiu | Xori | Ori | Andi | Slli | Srli | Srai | Add | Sub | Sll | Slt | Sltu | Xor
        | Srl | Sra | Or | And | Addiw | Slliw | Srliw | Sraiw | Addw | Subw | Sllw | Srlw
        | Sraw | Fence | FenceTso | Pause | Mul | Mulh | Mulhsu | Mulhu | Div | Divu | Rem
        | Remu | Mulw | Divw | Divuw | Remw | Remuw | LrW | ScW | AmoswapW | AmoaddW | AmoxorW
        | AmoandW | AmoorW | AmominW | AmomaxW | AmominuW | AmomaxuW | LrD | ScD | AmoswapD
        | AmoaddD | AmoxorD | AmoandD | AmoorD | AmominD | AmomaxD | AmominuD | AmomaxuD => {
            BlockEnd::No
        }
    }
}

/// Whether a block ends after `op`.
#[inline]
fn ends_block(op: Op) -> bool {
    !matches!(block_end(op), BlockEnd::No)
}

/// How a block's execution ended early.
enum BlockExit {
    /// Ran to its end (or the budget's end).
    Done,
    /// The instruction at the returned index needs the slow path.
    Slow,
    /// The instruction at the returned index raised an exception.
    Trap(Cause, u64),
    /// A store hit decoded code or `tohost` got an exit value; the
    /// instruction at index - 1 retired.
    Store,
}

/// Normalise a result to the XLEN: sign-extend from bit 31 on RV32.
#[inline(always)]
fn sx<const RV64: bool>(v: u64) -> u64 {
    if RV64 {
        v
    } else {
        v as i32 as i64 as u64
    }
}

/// An effective address: the low 32 bits on RV32.
#[inline(always)]
fn ea<const RV64: bool>(v: u64) -> u64 {
    if RV64 {
        v
    } else {
        v & 0xffff_ffff
    }
}

/// What the tohost watch found.
pub(crate) struct Htif {
    pub addr: u64,
    pub exit: Option<u32>,
}

/// Execute `insts` (the start of a block at `hart.pc`). Returns how many
/// retired and how it ended.
#[inline(always)]
fn exec<const RV64: bool, O: Observer>(
    hart: &mut Hart,
    mem: &mut Memory,
    htif: &mut Htif,
    insts: &[Inst],
    obs: &mut O,
    log: &mut [std::mem::MaybeUninit<u64>],
    logged: &mut usize,
) -> (usize, BlockExit) {
    let h = hart.id;
    let mut pc = hart.pc;
    // A data address, to the observer: for one that takes them in bulk,
    // into `log`, whose room the caller made for a whole block (at most one
    // address per instruction), with the count in a local rather than in
    // the observer — stores to the observer's own fields on every access
    // cost the loop far more than their instruction count.
    macro_rules! note_address {
        ($at:expr) => {{
            if O::BULK_ADDRESSES {
                if let Some(slot) = log.get_mut(*logged) {
                    slot.write($at);
                    *logged += 1;
                }
            } else {
                obs.memory(h, $at);
            }
        }};
    }
    for (i, inst) in insts.iter().enumerate() {
        let x = &mut hart.x;
        let rd = (inst.rd & 31) as usize;
        let a = x[(inst.rs1 & 31) as usize];
        let b = x[(inst.rs2 & 31) as usize];
        let imm = inst.imm as i64 as u64;
        let mut next = pc.wrapping_add(u64::from(inst.len));
        let mut addr = None;
        // A store reached HTIF or decoded code: retire the instruction here
        // and leave the block, so the engine can stop or flush the cache.
        macro_rules! leave_after_store {
            () => {{
                x[0] = 0;
                if O::ENABLED && O::RETIRE {
                    obs.retire(&Retired {
                        hart: h,
                        pc,
                        inst,
                        next_pc: next,
                        mem_addr: addr,
                    });
                }
                hart.pc = next;
                return (i + 1, BlockExit::Store);
            }};
        }
        macro_rules! load {
            ($n:literal, $conv:expr) => {
                load!($n, $conv, x)
            };
            // `$regs`: the register file loaded into.
            ($n:literal, $conv:expr, $regs:ident) => {{
                let at = ea::<RV64>(a.wrapping_add(imm));
                match mem.read::<$n>(at) {
                    Some(v) => $regs[rd] = $conv(v),
                    None => {
                        hart.pc = pc;
                        return (i, BlockExit::Trap(Cause::LOAD_ACCESS, at));
                    }
                }
                addr = Some(at);
                if O::ENABLED {
                    note_address!(at);
                }
            }};
        }
        macro_rules! store {
            ($n:literal, $v:expr) => {
                store!($n, $v, b)
            };
            // `$whole`: the register stored, which `tohost` reads.
            ($n:literal, $v:expr, $whole:expr) => {{
                let at = ea::<RV64>(a.wrapping_add(imm));
                if !mem.write::<$n>(h, at, $v) {
                    hart.pc = pc;
                    return (i, BlockExit::Trap(Cause::STORE_ACCESS, at));
                }
                addr = Some(at);
                if O::ENABLED {
                    note_address!(at);
                }
                if at == htif.addr || mem.code_written {
                    let whole: u64 = $whole;
                    if at == htif.addr && whole & 1 != 0 {
                        htif.exit = Some((ea::<RV64>(whole) >> 1) as u32);
                    }
                    if htif.exit.is_some() || mem.code_written {
                        leave_after_store!();
                    }
                }
            }};
        }
        macro_rules! branch {
            ($cond:expr) => {{
                let taken = $cond;
                let target = ea::<RV64>(pc.wrapping_add(imm));
                hart.stats.branches += 1;
                if taken {
                    hart.stats.taken += 1;
                    next = target;
                }
                if O::ENABLED {
                    obs.branch(h, pc, inst, taken, target);
                }
            }};
        }
        macro_rules! amo {
            ($n:literal, $f:expr) => {{
                let at = ea::<RV64>(a);
                if at & ($n - 1) != 0 {
                    hart.pc = pc;
                    return (i, BlockExit::Trap(Cause::STORE_MISALIGNED, at));
                }
                let old = match mem.read::<$n>(at) {
                    Some(v) => from_le::<$n>(v),
                    None => {
                        hart.pc = pc;
                        return (i, BlockExit::Trap(Cause::STORE_ACCESS, at));
                    }
                };
                let f: fn(u64, u64) -> u64 = $f;
                let new = f(old, b);
                mem.write::<$n>(h, at, to_le::<$n>(new));
                x[rd] = old;
                addr = Some(at);
                if O::ENABLED {
                    note_address!(at);
                }
                if mem.code_written {
                    leave_after_store!();
                }
            }};
        }
        match inst.op {
            Op::Lui => x[rd] = imm,
            Op::Auipc => x[rd] = sx::<RV64>(pc.wrapping_add(imm)),
            Op::Jal => {
                let target = ea::<RV64>(pc.wrapping_add(imm));
                x[rd] = sx::<RV64>(next);
                if O::ENABLED {
                    obs.jump(h, pc, inst, inst.flow(), target);
                }
                next = target;
            }
            Op::Jalr => {
                let target = ea::<RV64>(a.wrapping_add(imm)) & !1;
                x[rd] = sx::<RV64>(next);
                if O::ENABLED {
                    obs.jump(h, pc, inst, inst.flow(), target);
                }
                next = target;
            }
            Op::Beq => branch!(a == b),
            Op::Bne => branch!(a != b),
            Op::Blt => branch!((a as i64) < (b as i64)),
            Op::Bge => branch!((a as i64) >= (b as i64)),
            Op::Bltu => branch!(a < b),
            Op::Bgeu => branch!(a >= b),
            Op::Lb => load!(1, |v: [u8; 1]| v[0] as i8 as i64 as u64),
            Op::Lbu => load!(1, |v: [u8; 1]| u64::from(v[0])),
            Op::Lh => load!(2, |v| i16::from_le_bytes(v) as i64 as u64),
            Op::Lhu => load!(2, |v| u64::from(u16::from_le_bytes(v))),
            Op::Lw => load!(4, |v| i32::from_le_bytes(v) as i64 as u64),
            Op::Lwu => load!(4, |v| u64::from(u32::from_le_bytes(v))),
            Op::Ld => load!(8, u64::from_le_bytes),
            Op::Sb => store!(1, [b as u8]),
            Op::Sh => store!(2, (b as u16).to_le_bytes()),
            Op::Sw => store!(4, (b as u32).to_le_bytes()),
            Op::Sd => store!(8, b.to_le_bytes()),
            Op::Addi => x[rd] = sx::<RV64>(a.wrapping_add(imm)),
            Op::Slti => x[rd] = u64::from((a as i64) < (imm as i64)),
            Op::Sltiu => x[rd] = u64::from(a < sx::<RV64>(imm)),
            Op::Xori => x[rd] = a ^ imm,
            Op::Ori => x[rd] = a | imm,
            Op::Andi => x[rd] = a & imm,
            Op::Slli => x[rd] = sx::<RV64>(a << (imm & 63)),
            Op::Srli => x[rd] = sx::<RV64>(ea::<RV64>(a) >> (imm & 63)),
            Op::Srai => x[rd] = ((a as i64) >> (imm & 63)) as u64,
            Op::Add => x[rd] = sx::<RV64>(a.wrapping_add(b)),
            Op::Sub => x[rd] = sx::<RV64>(a.wrapping_sub(b)),
            Op::Sll => x[rd] = sx::<RV64>(a << (b & shmask::<RV64>())),
            Op::Slt => x[rd] = u64::from((a as i64) < (b as i64)),
            Op::Sltu => x[rd] = u64::from(a < b),
            Op::Xor => x[rd] = a ^ b,
            Op::Srl => x[rd] = sx::<RV64>(ea::<RV64>(a) >> (b & shmask::<RV64>())),
            Op::Sra => x[rd] = ((a as i64) >> (b & shmask::<RV64>())) as u64,
            Op::Or => x[rd] = a | b,
            Op::And => x[rd] = a & b,
            Op::Addiw => x[rd] = a.wrapping_add(imm) as i32 as i64 as u64,
            Op::Slliw => x[rd] = ((a as u32) << (imm & 31)) as i32 as i64 as u64,
            Op::Srliw => x[rd] = ((a as u32) >> (imm & 31)) as i32 as i64 as u64,
            Op::Sraiw => x[rd] = ((a as i32) >> (imm & 31)) as i64 as u64,
            Op::Addw => x[rd] = a.wrapping_add(b) as i32 as i64 as u64,
            Op::Subw => x[rd] = a.wrapping_sub(b) as i32 as i64 as u64,
            Op::Sllw => x[rd] = ((a as u32) << (b & 31)) as i32 as i64 as u64,
            Op::Srlw => x[rd] = ((a as u32) >> (b & 31)) as i32 as i64 as u64,
            Op::Sraw => x[rd] = ((a as i32) >> (b & 31)) as i64 as u64,
            Op::Fence | Op::FenceTso | Op::Pause => {}
            Op::Mul => x[rd] = sx::<RV64>(a.wrapping_mul(b)),
            Op::Mulh => x[rd] = mulh::<RV64>(a, b),
            Op::Mulhsu => x[rd] = mulhsu::<RV64>(a, b),
            Op::Mulhu => x[rd] = mulhu::<RV64>(a, b),
            Op::Div => x[rd] = if RV64 { div64(a, b) } else { div32(a, b) },
            Op::Divu => x[rd] = if RV64 { divu64(a, b) } else { divu32(a, b) },
            Op::Rem => x[rd] = if RV64 { rem64(a, b) } else { rem32(a, b) },
            Op::Remu => x[rd] = if RV64 { remu64(a, b) } else { remu32(a, b) },
            Op::Mulw => x[rd] = a.wrapping_mul(b) as i32 as i64 as u64,
            Op::Divw => x[rd] = div32(a, b),
            Op::Divuw => x[rd] = divu32(a, b),
            Op::Remw => x[rd] = rem32(a, b),
            Op::Remuw => x[rd] = remu32(a, b),
            Op::LrW | Op::LrD => {
                let n: u64 = if inst.op == Op::LrW { 4 } else { 8 };
                let at = ea::<RV64>(a);
                if at & (n - 1) != 0 {
                    hart.pc = pc;
                    return (i, BlockExit::Trap(Cause::LOAD_MISALIGNED, at));
                }
                let Some(v) = read_reserved(mem, at, n) else {
                    hart.pc = pc;
                    return (i, BlockExit::Trap(Cause::LOAD_ACCESS, at));
                };
                mem.reserve(
                    h,
                    Reservation {
                        addr: at,
                        size: n as u8,
                        value: v,
                    },
                );
                x[rd] = v;
                addr = Some(at);
                if O::ENABLED {
                    note_address!(at);
                }
            }
            Op::ScW | Op::ScD => {
                let n: u64 = if inst.op == Op::ScW { 4 } else { 8 };
                let at = ea::<RV64>(a);
                if at & (n - 1) != 0 {
                    hart.pc = pc;
                    return (i, BlockExit::Trap(Cause::STORE_MISALIGNED, at));
                }
                let Some(current) = read_reserved(mem, at, n) else {
                    hart.pc = pc;
                    return (i, BlockExit::Trap(Cause::STORE_ACCESS, at));
                };
                let ok = match mem.take_reservation(h) {
                    Some(r) => r.addr == at && u64::from(r.size) == n && r.value == current,
                    None => false,
                };
                if ok {
                    if n == 4 {
                        mem.write::<4>(h, at, (b as u32).to_le_bytes());
                    } else {
                        mem.write::<8>(h, at, b.to_le_bytes());
                    }
                }
                x[rd] = u64::from(!ok);
                addr = Some(at);
                if O::ENABLED {
                    note_address!(at);
                }
                if mem.code_written {
                    leave_after_store!();
                }
            }
            Op::AmoswapW => amo!(4, |_, b| b),
            Op::AmoaddW => amo!(4, |a, b| a.wrapping_add(b)),
            Op::AmoxorW => amo!(4, |a, b| a ^ b),
            Op::AmoandW => amo!(4, |a, b| a & b),
            Op::AmoorW => amo!(4, |a, b| a | b),
            Op::AmominW => amo!(4, |a, b| if (a as i32) < (b as i32) { a } else { b }),
            Op::AmomaxW => amo!(4, |a, b| if (a as i32) > (b as i32) { a } else { b }),
            Op::AmominuW => amo!(4, |a, b| if (a as u32) < (b as u32) { a } else { b }),
            Op::AmomaxuW => amo!(4, |a, b| if (a as u32) > (b as u32) { a } else { b }),
            Op::AmoswapD => amo!(8, |_, b| b),
            Op::AmoaddD => amo!(8, |a, b| a.wrapping_add(b)),
            Op::AmoxorD => amo!(8, |a, b| a ^ b),
            Op::AmoandD => amo!(8, |a, b| a & b),
            Op::AmoorD => amo!(8, |a, b| a | b),
            Op::AmominD => amo!(8, |a, b| if (a as i64) < (b as i64) { a } else { b }),
            Op::AmomaxD => amo!(8, |a, b| if (a as i64) > (b as i64) { a } else { b }),
            Op::AmominuD => amo!(8, |a, b| a.min(b)),
            Op::AmomaxuD => amo!(8, |a, b| a.max(b)),
            Op::Ecall
            | Op::Ebreak
            | Op::Mret
            | Op::Sret
            | Op::Wfi
            | Op::SfenceVma
            | Op::FenceI
            | Op::Csrrw
            | Op::Csrrs
            | Op::Csrrc
            | Op::Csrrwi
            | Op::Csrrsi
            | Op::Csrrci => {
                hart.pc = pc;
                return (i, BlockExit::Slow);
            }
            // F and D. The loads and stores are the integer ones with the
            // FP register file; everything else is `fpu::execute`, out of
            // line. Either traps as illegal when `mstatus.FS` is Off.
            Op::Flw | Op::Fld | Op::Fsw | Op::Fsd if !fpu::enabled(hart.csr.mstatus) => {
                hart.pc = pc;
                return (
                    i,
                    BlockExit::Trap(Cause::ILLEGAL_INSTRUCTION, u64::from(inst.raw)),
                );
            }
            Op::Flw => {
                let f = &mut hart.fp.f;
                load!(4, |v| fpu::box_s(u32::from_le_bytes(v)), f);
                fpu::dirty(&mut hart.csr.mstatus);
            }
            Op::Fld => {
                let f = &mut hart.fp.f;
                load!(8, u64::from_le_bytes, f);
                fpu::dirty(&mut hart.csr.mstatus);
            }
            Op::Fsw => {
                let v = hart.fp.f[(inst.rs2 & 31) as usize];
                store!(4, (v as u32).to_le_bytes(), v)
            }
            Op::Fsd => {
                let v = hart.fp.f[(inst.rs2 & 31) as usize];
                store!(8, v.to_le_bytes(), v)
            }
            retrace_isa::fp_ops!() => {
                if fpu::execute::<RV64>(inst, &mut hart.fp, x, &mut hart.csr.mstatus).is_err() {
                    hart.pc = pc;
                    return (
                        i,
                        BlockExit::Trap(Cause::ILLEGAL_INSTRUCTION, u64::from(inst.raw)),
                    );
                }
            }
        }
        x[0] = 0;
        if O::ENABLED && O::RETIRE {
            obs.retire(&Retired {
                hart: h,
                pc,
                inst,
                next_pc: next,
                mem_addr: addr,
            });
        }
        pc = next;
    }
    hart.pc = pc;
    (insts.len(), BlockExit::Done)
}

/// Give a bulk observer ([`Observer::BULK_ADDRESSES`]) the data addresses
/// in `log`, if any, and empty it.
pub(crate) fn hand_over_addresses<O: Observer>(log: &mut Vec<u64>, h: usize, obs: &mut O) {
    if !log.is_empty() {
        obs.addresses(h, log);
        log.clear();
    }
}

/// Room in the address log `log` for `need` addresses (a block has at most
/// one per instruction), handing it to the observer when full.
#[inline(always)]
fn make_address_room<O: Observer>(log: &mut Vec<u64>, h: usize, obs: &mut O, need: usize) {
    if log.capacity() - log.len() < need {
        hand_over_addresses(log, h, obs);
        log.reserve(ADDRESS_LOG);
    }
}

/// A little-endian value of `N` bytes, sign-extended from its top bit (the
/// way AMOs and LR return values).
#[inline(always)]
fn from_le<const N: usize>(v: [u8; N]) -> u64 {
    let mut b = [0u8; 8];
    b[..N].copy_from_slice(&v);
    let raw = u64::from_le_bytes(b);
    let shift = 64 - 8 * N as u32;
    (((raw << shift) as i64) >> shift) as u64
}

#[inline(always)]
fn to_le<const N: usize>(v: u64) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&v.to_le_bytes()[..N]);
    out
}

#[inline(always)]
fn shmask<const RV64: bool>() -> u64 {
    if RV64 {
        63
    } else {
        31
    }
}

// The high halves of products: signed × signed, signed × unsigned,
// unsigned × unsigned. On RV32 the operands are kept sign-extended, so the
// 32-bit halves are taken first where the operand is unsigned.
#[inline(always)]
pub(crate) fn mulh<const RV64: bool>(a: u64, b: u64) -> u64 {
    if RV64 {
        ((i128::from(a as i64) * i128::from(b as i64)) >> 64) as u64
    } else {
        ((a as i64 * b as i64) >> 32) as i32 as i64 as u64
    }
}
#[inline(always)]
pub(crate) fn mulhsu<const RV64: bool>(a: u64, b: u64) -> u64 {
    if RV64 {
        ((i128::from(a as i64) * i128::from(b)) >> 64) as u64
    } else {
        ((a as i64 * i64::from(b as u32)) >> 32) as i32 as i64 as u64
    }
}
#[inline(always)]
pub(crate) fn mulhu<const RV64: bool>(a: u64, b: u64) -> u64 {
    if RV64 {
        ((u128::from(a) * u128::from(b)) >> 64) as u64
    } else {
        ((u64::from(a as u32) * u64::from(b as u32)) >> 32) as i32 as i64 as u64
    }
}

// Division: by zero gives all ones (quotient) or the dividend (remainder);
// the one overflowing case, MIN / -1, gives MIN and 0.
#[inline(always)]
pub(crate) fn div64(a: u64, b: u64) -> u64 {
    if b == 0 {
        u64::MAX
    } else {
        (a as i64).wrapping_div(b as i64) as u64
    }
}
#[inline(always)]
pub(crate) fn divu64(a: u64, b: u64) -> u64 {
    a.checked_div(b).unwrap_or(u64::MAX)
}
#[inline(always)]
pub(crate) fn rem64(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        (a as i64).wrapping_rem(b as i64) as u64
    }
}
#[inline(always)]
pub(crate) fn remu64(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        a % b
    }
}
#[inline(always)]
pub(crate) fn div32(a: u64, b: u64) -> u64 {
    let (a, b) = (a as i32, b as i32);
    (if b == 0 { -1 } else { a.wrapping_div(b) }) as i64 as u64
}
#[inline(always)]
pub(crate) fn divu32(a: u64, b: u64) -> u64 {
    let (a, b) = (a as u32, b as u32);
    a.checked_div(b).unwrap_or(u32::MAX) as i32 as i64 as u64
}
#[inline(always)]
pub(crate) fn rem32(a: u64, b: u64) -> u64 {
    let (a, b) = (a as i32, b as i32);
    (if b == 0 { a } else { a.wrapping_rem(b) }) as i64 as u64
}
#[inline(always)]
pub(crate) fn remu32(a: u64, b: u64) -> u64 {
    let (a, b) = (a as u32, b as u32);
    (if b == 0 { a } else { a % b }) as i32 as i64 as u64
}

/// What one entry into host code did ([`Machine::run_translated`]).
struct Ran {
    /// It stopped before the instruction at `next_pc` (the interpreter runs
    /// it); otherwise `next_pc` is the next block.
    stopped: bool,
    /// The hart blocked (or exited) in a synchronisation call at `next_pc`.
    blocked: bool,
    next_pc: u64,
    retired: u64,
    branches: u64,
    taken: u64,
    /// The last instruction retired (observed code only).
    last_pc: u64,
}

/// What the slow path decided.
enum Slow {
    /// Continue at `hart.pc` (the instruction retired or trapped to a
    /// handler).
    Continue { retired: bool },
    /// The run stops for `reason`; the instruction retired if `retired`.
    Stop { reason: StopReason, retired: bool },
    /// The hart cannot run on: its synchronisation call blocked, or it
    /// exited. Nothing retired.
    Block,
}

/// The call, object and value of the synchronisation call the registers
/// `x` make (`a7`, `a0`, `a1`): the object is 0 for calls on none, the
/// value 0 for calls that take none.
#[inline(always)]
fn sync_arguments<const RV64: bool>(x: &[u64; 32]) -> (SyncOp, u64, u64) {
    let op = SyncOp((ea::<RV64>(x[17]) & 0xff) as u8);
    let object = if op.object_kind().is_some() {
        ea::<RV64>(x[10])
    } else {
        0
    };
    let value = match op {
        SyncOp::SEND => x[11],
        SyncOp::SET_HZ => ea::<RV64>(x[11]),
        _ => 0,
    };
    (op, object, value)
}

/// Hart `h`'s synchronisation call, its `ecall` `inst` at `pc`, on
/// registers `x`, with no observer to tell: `Ok(true)` when it completed
/// (the result is in `a0`, `last_pc` is the `ecall`'s; the caller moves the
/// pc on and counts the instruction), `Ok(false)` when the hart blocked or
/// exited (nothing retired), `Err` when the call is wrong (nothing
/// changed). Harts it completes are woken. The interpreter's slow path
/// and translated code ([`crate::translate`]) both make their calls here
/// (translated code after the channels' common case,
/// `SyncState::channel_call`, by the same rules), so the two cannot
/// differ.
#[inline(always)]
pub(crate) fn unobserved_sync_call<const RV64: bool>(
    sync: &mut sync::SyncState,
    memory: &Memory,
    x: &mut [u64; 32],
    last_pc: &mut u64,
    h: usize,
    pc: u64,
    inst: &Inst,
) -> Result<bool, sync::SyncError> {
    let (op, object, value) = sync_arguments::<RV64>(x);
    match sync.call_and_wake(h, pc, op, object, value, |at| memory.read::<16>(at), *inst)? {
        Some(result) => {
            x[10] = sx::<RV64>(result);
            *last_pc = pc;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// A synchronisation call made from translated code: the `ecall` `inst` at
/// `pc` of the hart whose registers are `x`, with the machine's parts that
/// `env` points to ([`Env`]'s `sync`, `memory`, `last_pc`, `hart`).
/// Returns [`SYNC_DONE`] (completed: `a0` holds the result; the block
/// retires the `ecall` and goes on), [`SYNC_BLOCKED`] (the hart blocked or
/// exited: nothing retired, the engine ends its turn as the slow path
/// does) or [`SYNC_LEAVE`] (not a synchronisation call, or a wrong one:
/// nothing changed, and the block stops before the `ecall` for the
/// interpreter to run it — trap, or stop the run with the error).
///
/// # Safety
/// `x` and `env` are what [`Machine::run_translated`] passed to host code,
/// during that call; `inst` points at a live `Inst`. Its pointers are to
/// disjoint fields of the machine (the sync state, the memory, the hart's
/// `last_pc`), none of which any Rust reference borrows while host code
/// runs; host code itself, the only other user of memory then, is
/// suspended in this call.
unsafe extern "C" fn sync_from_host<const RV64: bool>(
    x: *mut u64,
    env: *mut Env,
    pc: u64,
    inst: *const Inst,
) -> u64 {
    // SAFETY: as the caller promises.
    let (x, env) = unsafe { (&mut *(x as *mut [u64; 32]), &*env) };
    let call = ea::<RV64>(x[17]);
    if call & !0xff != sync::CALL_BASE {
        return SYNC_LEAVE;
    }
    // A channel's send or receive that completes at once, the most common
    // call by far, first (`sync_arguments`' operands: only a send's value
    // matters there).
    // SAFETY: as the caller promises.
    let sync = unsafe { &mut *(env.sync as *mut sync::SyncState) };
    if let Some(result) = sync.channel_call(SyncOp(call as u8), ea::<RV64>(x[10]), x[11]) {
        x[10] = sx::<RV64>(result);
        // SAFETY: as the caller promises.
        unsafe { *(env.last_pc as *mut u64) = pc };
        return SYNC_DONE;
    }
    // SAFETY: as the caller promises.
    unsafe { general_sync_from_host::<RV64>(x, env, pc, inst) }
}

/// [`sync_from_host`] for every call but a channel's that completes at
/// once: apart, so that those cost no more than they need.
///
/// # Safety
/// As [`sync_from_host`]'s.
#[inline(never)]
unsafe fn general_sync_from_host<const RV64: bool>(
    x: &mut [u64; 32],
    env: &Env,
    pc: u64,
    inst: *const Inst,
) -> u64 {
    // SAFETY: as the caller promises.
    let inst = unsafe { &*inst };
    // SAFETY: as the caller promises.
    let (sync, memory, last_pc) = unsafe {
        (
            &mut *(env.sync as *mut sync::SyncState),
            &*(env.memory as *const Memory),
            &mut *(env.last_pc as *mut u64),
        )
    };
    match unobserved_sync_call::<RV64>(sync, memory, x, last_pc, env.hart as usize, pc, inst) {
        Ok(true) => SYNC_DONE,
        Ok(false) => SYNC_BLOCKED,
        Err(_) => SYNC_LEAVE,
    }
}

/// [`sync_from_host`] for RV64 and RV32, as host code calls them.
pub(crate) const SYNC_FROM_HOST: [unsafe extern "C" fn(
    *mut u64,
    *mut Env,
    u64,
    *const Inst,
) -> u64; 2] = [sync_from_host::<false>, sync_from_host::<true>];

impl Machine {
    /// Run hart `h` for at most `budget` instructions, each idle trap
    /// ([`crate::HartStats::idle_traps`]: one taken with nothing retired
    /// since the previous) counting as one — a handler that traps at once
    /// retires nothing and must not run forever. Returns the stop reason,
    /// or `None` when the budget ran out first.
    ///
    /// Never inlined: this loop is the engine's speed, and inlined into the
    /// schedulers that call it ([`Machine::run`], [`crate::clocked`]) its
    /// register allocation moved with every change to them (a change to
    /// `run`'s hart loop once cost single-hart runs several per cent).
    #[inline(never)]
    pub(crate) fn run_hart<const RV64: bool, O: Observer>(
        &mut self,
        h: usize,
        mut budget: u64,
        obs: &mut O,
    ) -> Option<StopReason> {
        let xlen = if RV64 { Xlen::Rv64 } else { Xlen::Rv32 };
        if budget > 0 {
            if let Some(done) = self.sync.take_pending(h) {
                self.retire_completed_call::<RV64, O>(h, done, obs);
                budget -= 1;
            }
        }
        let mut idle_seen = self.harts[h].stats.idle_traps;
        loop {
            let idle = self.harts[h].stats.idle_traps;
            budget = budget.saturating_sub(idle - idle_seen);
            idle_seen = idle;
            if budget == 0 {
                return None;
            }
            if O::ENABLED && !obs.keep_going() {
                return Some(StopReason::Observer);
            }
            let pc = self.harts[h].pc;
            let id = match self.cache.lookup(pc) {
                Some(id) => id,
                None => match self.cache.build(pc, &mut self.memory, xlen) {
                    Ok(id) => {
                        if O::ENABLED && O::CODE {
                            self.decoded(h, id, obs);
                        }
                        id
                    }
                    Err(f) => {
                        let (cause, tval) = match f {
                            Fetch::Access => (Cause::FETCH_ACCESS, pc),
                            Fetch::Illegal(bits) => (Cause::ILLEGAL_INSTRUCTION, u64::from(bits)),
                        };
                        if let Some(stop) = self.trap(h, cause, tval, None, obs) {
                            return Some(stop);
                        }
                        continue;
                    }
                },
            };
            let block = self.cache.blocks[id];
            let n = (block.len as u64).min(budget) as usize;
            let first = block.first as usize;
            // Host code runs whole blocks, when there are and no observer
            // watches, or one that takes what host code tells it after
            // the fact (`Observer::HOST_CODE`); the interpreter goes on
            // where it stopped.
            let mut start = 0;
            let host_code = !O::ENABLED || (O::HOST_CODE && O::BULK_ADDRESSES && !O::RETIRE);
            if host_code && n == block.len as usize {
                if O::ENABLED {
                    // Room for the addresses of many blocks
                    // (`run_translated` lets host code run no further
                    // than the room lasts).
                    make_address_room(&mut self.address_log, h, obs, HOST_ADDRESS_ROOM);
                }
                if let Some(ran) = self.run_translated(h, id, budget, O::ENABLED) {
                    if O::ENABLED {
                        // Before any other hook can see the hart.
                        self.tell_exits(h, &ran, obs);
                    }
                    let hart = &mut self.harts[h];
                    hart.stats.instructions += ran.retired;
                    hart.stats.branches += ran.branches;
                    hart.stats.taken += ran.taken;
                    budget -= ran.retired;
                    hart.pc = ran.next_pc;
                    if ran.blocked {
                        return None;
                    }
                    // Stopped inside the block it started with: go on
                    // there at once, interpreted. (Anywhere else, the loop
                    // finds the block at the pc, or makes one.)
                    let at = ran.next_pc.wrapping_sub(block.pc);
                    if !ran.stopped || at >= u64::from(block.bytes) {
                        continue;
                    }
                    let pcs = &self.cache.pcs[first..first + n];
                    match pcs.iter().position(|&p| p == ran.next_pc) {
                        Some(i) => start = i,
                        None => continue,
                    }
                }
            }
            let insts = &self.cache.insts[first + start..first + n];
            let hart = &mut self.harts[h];
            let mut logged = 0;
            let log: &mut [std::mem::MaybeUninit<u64>] = if O::ENABLED && O::BULK_ADDRESSES {
                make_address_room(&mut self.address_log, h, obs, MAX_BLOCK);
                self.address_log.spare_capacity_mut()
            } else {
                &mut []
            };
            let (done, exit) = exec::<RV64, O>(
                hart,
                &mut self.memory,
                &mut self.htif,
                insts,
                obs,
                log,
                &mut logged,
            );
            if O::ENABLED && O::BULK_ADDRESSES {
                debug_assert!(logged <= done);
                let len = self.address_log.len() + logged;
                // SAFETY: `exec` initialised the first `logged` slots of the
                // spare capacity, in order.
                unsafe { self.address_log.set_len(len) };
            }
            hart.stats.instructions += done as u64;
            if O::ENABLED && done > 0 {
                hart.last_pc = self.cache.pcs[first + start + done - 1];
            }
            budget -= done as u64;
            let done = start + done;
            match exit {
                BlockExit::Done => {}
                BlockExit::Trap(cause, tval) => {
                    if let Some(stop) = self.trap(h, cause, tval, None, obs) {
                        return Some(stop);
                    }
                }
                BlockExit::Store => {
                    if let Some(code) = self.htif.exit.take() {
                        return Some(StopReason::Exit { code });
                    }
                    if self.memory.code_written {
                        self.flush_code();
                    }
                }
                BlockExit::Slow => {
                    let inst = self.cache.insts[first + done];
                    match self.slow::<RV64, O>(h, &inst, obs) {
                        Slow::Continue { retired } => {
                            if retired {
                                self.harts[h].stats.instructions += 1;
                                budget = budget.saturating_sub(1);
                            }
                        }
                        Slow::Stop { reason, retired } => {
                            if retired {
                                self.harts[h].stats.instructions += 1;
                            }
                            return Some(reason);
                        }
                        Slow::Block => return None,
                    }
                }
            }
        }
    }

    /// Tell the observer what observed host code left (`Ran`'s run on hart
    /// `h`): each closing branch and jump, by the same hook with the same
    /// arguments as the interpreter's, in order; then the hart's last pc.
    /// Its data addresses are in the log already.
    #[inline(never)]
    fn tell_exits<O: Observer>(&mut self, h: usize, ran: &Ran, obs: &mut O) {
        obs.host_exits(
            h,
            &HostExits {
                records: &self.exit_log,
            },
        );
        self.exit_log.clear();
        if ran.retired > 0 {
            self.harts[h].last_pc = ran.last_pc;
        }
    }

    /// Run block `id` on hart `h` as host code, with the blocks it chains
    /// into, retiring at most `budget` instructions — if it has been
    /// translated or is hot enough to be now; `None` leaves it to the
    /// interpreter. `observed` runs the code made for an observer
    /// (`Translator::new`), which leaves its exit records in
    /// `exit_log` and its data addresses in `address_log`: it then
    /// retires no more instructions than those have room for (at most one
    /// of each per instruction), and the caller made room in the address
    /// log for a whole block.
    #[inline(always)]
    fn run_translated(
        &mut self,
        h: usize,
        id: usize,
        mut budget: u64,
        observed: bool,
    ) -> Option<Ran> {
        if !self.translation {
            return None;
        }
        let (data, len) = self.memory.host_view();
        let base = self.memory.base();
        if !matches!(&self.translator, Some(t) if t.addresses(data, len, base) && t.observed == observed)
        {
            self.new_translator(data, len, base, observed);
        }
        let t = self.translator.as_deref_mut()?;
        if id >= t.counts.len() {
            t.counts.resize(id + 1, 0);
            t.code.resize(id + 1, 0);
        }
        let code = match t.counts[id] {
            TRANSLATED => t.code[id],
            _ => self.count_or_translate(id)?,
        };
        let t = self.translator.as_deref()?;
        let (code_lo, code_span) = self.memory.code_range();
        let (mut exits, mut addrs) = (0, 0);
        if observed {
            if self.exit_log.capacity() < EXIT_LOG {
                self.exit_log.reserve(EXIT_LOG);
            }
            let room = self.address_log.capacity() - self.address_log.len();
            budget = budget.min(room as u64).min(EXIT_LOG as u64);
            exits = self.exit_log.as_mut_ptr() as usize;
            addrs = self.address_log.spare_capacity_mut().as_mut_ptr() as usize;
        }
        let hart = &mut self.harts[h];
        let mut env = Env {
            code_lo,
            code_span,
            resv_live: u64::from(self.memory.reservations_live()),
            budget,
            map: self.cache.map.as_ptr() as usize,
            code: t.code.as_ptr() as usize,
            code_len: t.code.len() as u64,
            sync: &mut self.sync as *mut sync::SyncState as usize,
            memory: &self.memory as *const Memory as usize,
            last_pc: &mut hart.last_pc as *mut u64 as usize,
            hart: h as u64,
            exits,
            addrs,
            ..Env::default()
        };
        // SAFETY: `code` is this translator's, made for this memory
        // (checked above: same host address, size and base), which nothing
        // else borrows during the call; the map and the code table are the
        // cache's and the translator's own, neither changed during it. The
        // sync state, the memory and the hart's `last_pc`, which
        // synchronisation calls from host code use (`sync_from_host`), are
        // fields disjoint from the registers and from the translator, and
        // no reference to them lives across the call. Observed code writes
        // no more exit records and addresses than the budget (at most one
        // of each per instruction retired), which the room in both logs
        // covers, and nothing else touches the logs during the call.
        let status = unsafe { t.run(&mut hart.x, &mut env, code) };
        if observed {
            let size = std::mem::size_of::<ExitRecord>();
            let records = (env.exits - exits) / size;
            let logged = (env.addrs - addrs) / 8;
            // SAFETY: host code initialised that many of each, in order,
            // within their capacity.
            unsafe {
                self.exit_log.set_len(records);
                let len = self.address_log.len() + logged;
                self.address_log.set_len(len);
            }
        }
        Some(Ran {
            last_pc: env.last,
            stopped: status != 0,
            blocked: status == SYNC_BLOCKED,
            next_pc: env.next_pc,
            retired: env.retired,
            branches: env.branches,
            taken: env.taken,
        })
    }

    /// Block `id`, not translated yet, ran once more: its translation's
    /// address if that made it hot (and it translates), else `None`.
    #[inline(never)]
    fn count_or_translate(&mut self, id: usize) -> Option<usize> {
        let t = self.translator.as_deref_mut()?;
        match t.counts[id] {
            REFUSED => None,
            c if c + 1 < HOT => {
                t.counts[id] = c + 1;
                None
            }
            _ => {
                let b = self.cache.blocks[id];
                let (first, n) = (b.first as usize, b.len as usize);
                let insts = &self.cache.insts[first..first + n];
                let pcs = &self.cache.pcs[first..first + n];
                match t.translate(insts, pcs) {
                    Some(f) => {
                        t.code[id] = f;
                        t.counts[id] = TRANSLATED;
                        Some(f)
                    }
                    None => {
                        t.counts[id] = REFUSED;
                        None
                    }
                }
            }
        }
    }

    #[cold]
    fn new_translator(&mut self, data: usize, len: u64, base: u64, observed: bool) {
        let rv64 = self.xlen == Xlen::Rv64;
        self.translator =
            Translator::new(data, len, base, self.htif.addr, rv64, observed).map(Box::new);
        if self.translator.is_none() {
            self.translation = false;
        }
    }

    /// Drop every decoded block and its translation (code was written, or
    /// `fence.i`). A program that does it often runs interpreted from then
    /// on: translating code that changes costs more than it saves.
    pub(crate) fn flush_code(&mut self) {
        self.cache.flush(&mut self.memory);
        if let Some(t) = &mut self.translator {
            t.forget();
        }
        if self.cache.flushes >= MAX_FLUSHES {
            self.translation = false;
            self.translator = None;
        }
    }

    /// Tell the observer about the block `id` hart `h` just decoded, with
    /// the memory around it ([`crate::observer::CodeEvent`]).
    #[cold]
    fn decoded<O: Observer>(&mut self, h: usize, id: usize, obs: &mut O) {
        /// The window's alignment: a function copied into RAM usually
        /// arrives whole in one event.
        const WINDOW: u64 = 1024;
        let b = self.cache.blocks[id];
        let (base, size) = (self.memory.base(), self.memory.size());
        let end = b.pc + u64::from(b.bytes);
        let lo = (b.pc & !(WINDOW - 1)).max(base);
        let hi = (end + 4)
            .div_ceil(WINDOW)
            .saturating_mul(WINDOW)
            .min(base + size);
        let Some(window) = self.memory.slice(lo, hi - lo) else {
            return;
        };
        obs.code(&crate::observer::CodeEvent {
            hart: h,
            retired: self.harts[h].stats.instructions,
            pc: b.pc,
            len: u64::from(b.bytes),
            base: lo,
            window,
        });
    }

    /// Take a trap on hart `h` at its pc: into the handler at `mtvec` if
    /// the program installed one, otherwise stop the run with the cause.
    /// `call` is the `ecall` or `ebreak` that traps, if that is the cause.
    /// Architecturally it does not retire when it enters a handler
    /// (`minstret` does not count it, as on QEMU), but it occupied the
    /// pipeline and ends a partial program, so observers that time or replay
    /// instructions see it executed, going to the handler — and then the
    /// trap.
    fn trap<O: Observer>(
        &mut self,
        h: usize,
        cause: Cause,
        tval: u64,
        call: Option<&Inst>,
        obs: &mut O,
    ) -> Option<StopReason> {
        let (pc, mtvec) = (self.harts[h].pc, self.harts[h].csr.mtvec);
        let handler = (mtvec != 0).then_some(mtvec & !3);
        if let (Some(inst), Some(handler)) = (call, handler) {
            self.executed_slow(h, pc, inst, handler, obs);
        }
        let hart = &mut self.harts[h];
        if O::ENABLED {
            obs.trap(&TrapEvent {
                hart: h,
                pc,
                cause,
                tval,
                handler,
                retired: hart.stats.instructions,
            });
        }
        let Some(handler) = handler else {
            return Some(StopReason::Fault(Fault {
                hart: h,
                pc,
                cause,
                tval,
            }));
        };
        hart.stats.traps += 1;
        if hart.retired_at_last_trap == Some(hart.stats.instructions) {
            hart.stats.idle_traps += 1;
        }
        hart.retired_at_last_trap = Some(hart.stats.instructions);
        let c = &mut hart.csr;
        c.mepc = pc;
        c.mcause = cause.0;
        c.mtval = tval;
        let mie = c.mstatus & mstatus::MIE != 0;
        c.mstatus &= !(mstatus::MIE | mstatus::MPIE | mstatus::MPP);
        if mie {
            c.mstatus |= mstatus::MPIE;
        }
        c.mstatus |= (hart.privilege as u64) << 11;
        hart.privilege = Priv::Machine;
        hart.pc = handler;
        None
    }

    /// An instruction the block executor left to `slow` has executed at
    /// `pc`, going to `next_pc`: note it as the hart's last and tell an
    /// observer that takes `retire`.
    fn executed_slow<O: Observer>(
        &mut self,
        h: usize,
        pc: u64,
        inst: &Inst,
        next_pc: u64,
        obs: &mut O,
    ) {
        self.harts[h].last_pc = pc;
        if O::ENABLED && O::RETIRE {
            obs.retire(&Retired {
                hart: h,
                pc,
                inst,
                next_pc,
                mem_addr: None,
            });
        }
    }

    /// Execute one instruction that the block executor leaves to us.
    fn slow<const RV64: bool, O: Observer>(&mut self, h: usize, inst: &Inst, obs: &mut O) -> Slow {
        let pc = self.harts[h].pc;
        let next = pc + u64::from(inst.len);
        let illegal = |m: &mut Machine, obs: &mut O| match m.trap(
            h,
            Cause::ILLEGAL_INSTRUCTION,
            u64::from(inst.raw),
            None,
            obs,
        ) {
            Some(reason) => Slow::Stop {
                reason,
                retired: false,
            },
            None => Slow::Continue { retired: false },
        };
        let retire = |m: &mut Machine, obs: &mut O, next_pc: u64| {
            m.harts[h].x[0] = 0;
            m.harts[h].pc = next_pc;
            m.executed_slow(h, pc, inst, next_pc, obs);
            Slow::Continue { retired: true }
        };
        let user = self.harts[h].privilege == Priv::User;
        match inst.op {
            Op::Ecall => {
                if ea::<RV64>(self.harts[h].x[17]) & !0xff == sync::CALL_BASE {
                    return self.sync_call::<RV64, O>(h, inst, obs);
                }
                let cause = if user { Cause::ECALL_U } else { Cause::ECALL_M };
                match self.trap(h, cause, 0, Some(inst), obs) {
                    Some(reason) => Slow::Stop {
                        reason,
                        retired: false,
                    },
                    None => Slow::Continue { retired: false },
                }
            }
            Op::Ebreak => {
                if !user && inst.len == 4 && self.is_semihosting_call(pc) {
                    return self.semihosting::<RV64, O>(h, inst, obs);
                }
                match self.trap(h, Cause::BREAKPOINT, pc, Some(inst), obs) {
                    Some(reason) => Slow::Stop {
                        reason,
                        retired: false,
                    },
                    None => Slow::Continue { retired: false },
                }
            }
            Op::Mret => {
                if user {
                    return illegal(self, obs);
                }
                let hart = &mut self.harts[h];
                let c = &mut hart.csr;
                let mpp = (c.mstatus & mstatus::MPP) >> 11;
                let mpie = c.mstatus & mstatus::MPIE != 0;
                c.mstatus &= !(mstatus::MIE | mstatus::MPP);
                if mpie {
                    c.mstatus |= mstatus::MIE;
                }
                c.mstatus |= mstatus::MPIE;
                hart.privilege = if mpp == 3 { Priv::Machine } else { Priv::User };
                if hart.privilege != Priv::Machine {
                    c.mstatus &= !mstatus::MPRV;
                }
                let target = ea::<RV64>(c.mepc);
                if O::ENABLED {
                    obs.trap_return(h, pc, target);
                }
                retire(self, obs, target)
            }
            // No S-mode: `sret` is illegal everywhere.
            Op::Sret => illegal(self, obs),
            Op::SfenceVma if user => illegal(self, obs),
            Op::Wfi | Op::SfenceVma => retire(self, obs, next),
            Op::FenceI => {
                self.flush_code();
                retire(self, obs, next)
            }
            Op::Csrrw | Op::Csrrs | Op::Csrrc | Op::Csrrwi | Op::Csrrsi | Op::Csrrci => {
                match self.csr_op::<RV64>(h, inst) {
                    Ok(()) => retire(self, obs, next),
                    Err(()) => illegal(self, obs),
                }
            }
            // The block executor handles everything else.
            _ => illegal(self, obs),
        }
    }

    /// A call of the synchronisation API ([`crate::sync`]) by hart `h`'s
    /// `ecall`: done at once (it retires, like any instruction), or the
    /// hart blocks at it. Harts whose blocked calls it completes become
    /// runnable, and retire their calls when they next run.
    #[cold]
    #[inline(never)]
    fn sync_call<const RV64: bool, O: Observer>(
        &mut self,
        h: usize,
        inst: &Inst,
        obs: &mut O,
    ) -> Slow {
        // A scheduler that times the harts decides here, at the call,
        // whether this hart's turn goes on: the order of the calls is then
        // the order of the clocks at the calls themselves, not at the start
        // of the block the `ecall` ends (`crate::clocked`). Nothing has
        // happened yet; the hart stays at its `ecall`.
        if O::ENABLED && !obs.keep_going() {
            return Slow::Stop {
                reason: StopReason::Observer,
                retired: false,
            };
        }
        let hart = &mut self.harts[h];
        let pc = hart.pc;
        if !O::ENABLED {
            // Nobody to tell: the very function translated code calls.
            return match unobserved_sync_call::<RV64>(
                &mut self.sync,
                &self.memory,
                &mut hart.x,
                &mut hart.last_pc,
                h,
                pc,
                inst,
            ) {
                Ok(true) => {
                    hart.pc = pc + 4;
                    Slow::Continue { retired: true }
                }
                Ok(false) => Slow::Block,
                Err(error) => Slow::Stop {
                    reason: StopReason::Sync { hart: h, pc, error },
                    retired: false,
                },
            };
        }
        let (op, object, value) = sync_arguments::<RV64>(&hart.x);
        let retired = hart.stats.instructions;
        let memory = &self.memory;
        let step = match self
            .sync
            .call(h, pc, op, object, value, |at| memory.read::<16>(at))
        {
            Ok(step) => step,
            Err(error) => {
                return Slow::Stop {
                    reason: StopReason::Sync { hart: h, pc, error },
                    retired: false,
                }
            }
        };
        // A call done at once is seen executing first, then its event (as a
        // trap follows the `ecall` that enters a handler).
        if let Some(result) = step.result {
            let hart = &mut self.harts[h];
            hart.x[10] = sx::<RV64>(result);
            hart.pc = pc + 4;
            self.executed_slow(h, pc, inst, pc + 4, obs);
        }
        if O::ENABLED {
            let outcome = match (step.result, self.sync.state(h)) {
                (Some(_), _) => SyncOutcome::Done,
                (None, HartState::Exited) => SyncOutcome::Exited,
                (None, _) => SyncOutcome::Blocked,
            };
            obs.sync(&SyncEvent {
                hart: h,
                pc,
                op,
                object,
                value,
                result: step.result.unwrap_or(0),
                param: self.sync.param(object),
                retired,
                outcome,
            });
        }
        for &(w, result) in &step.woken {
            if O::ENABLED {
                if let HartState::Blocked { wait, pc } = self.sync.state(w) {
                    let waiter = &self.harts[w];
                    obs.sync(&SyncEvent {
                        hart: w,
                        pc,
                        op: wait.op,
                        object: wait.object,
                        value: if wait.op == SyncOp::SEND {
                            waiter.x[11]
                        } else {
                            0
                        },
                        result,
                        param: self.sync.param(wait.object),
                        retired: waiter.stats.instructions,
                        outcome: SyncOutcome::Resumed { by: h },
                    });
                }
            }
            // Every `ecall` decodes alike: the caller's stands for the
            // waiter's.
            self.sync.wake(w, *inst, result);
        }
        match step.result {
            Some(_) => Slow::Continue { retired: true },
            None => Slow::Block,
        }
    }

    /// Hart `h`'s blocked call, completed by another hart, retires: its
    /// result goes to `a0` and the hart goes on after the `ecall`.
    #[inline]
    fn retire_completed_call<const RV64: bool, O: Observer>(
        &mut self,
        h: usize,
        done: sync::Pending,
        obs: &mut O,
    ) {
        let next = done.pc + u64::from(done.inst.len);
        let hart = &mut self.harts[h];
        hart.x[10] = sx::<RV64>(done.result);
        hart.pc = next;
        hart.stats.instructions += 1;
        self.executed_slow(h, done.pc, &done.inst, next, obs);
    }

    fn is_semihosting_call(&self, pc: u64) -> bool {
        let word = |a: u64| self.memory.read::<4>(a).map(u32::from_le_bytes);
        word(pc.wrapping_sub(4)) == Some(SEMI_PRE)
            && word(pc) == Some(SEMI_EBREAK)
            && word(pc.wrapping_add(4)) == Some(SEMI_POST)
    }

    fn semihosting<const RV64: bool, O: Observer>(
        &mut self,
        h: usize,
        inst: &Inst,
        obs: &mut O,
    ) -> Slow {
        let hart = &mut self.harts[h];
        let pc = hart.pc;
        let (op, a1) = (ea::<RV64>(hart.x[10]), hart.x[11]);
        hart.stats.semihost_calls += 1;
        let instret = hart.stats.instructions;
        let a1 = ea::<RV64>(a1);
        match self.host.call(op, a1, &mut self.memory, RV64, instret) {
            semihost::Outcome::Return(v) => {
                let v = sx::<RV64>(v);
                let hart = &mut self.harts[h];
                hart.x[10] = v;
                // Continue at the `srai` that ends the sequence (a no-op).
                hart.pc = pc + 4;
                if self.memory.code_written {
                    self.flush_code();
                }
                if O::ENABLED {
                    obs.semihost(h, pc, op, v);
                }
                self.executed_slow(h, pc, inst, pc + 4, obs);
                Slow::Continue { retired: true }
            }
            semihost::Outcome::Exit(code) => {
                if O::ENABLED {
                    obs.semihost(h, pc, op, 0);
                }
                // The exit request retired (it is counted): observers that
                // count or time retired instructions must see it.
                self.executed_slow(h, pc, inst, pc + 4, obs);
                Slow::Stop {
                    reason: StopReason::Exit { code },
                    retired: true,
                }
            }
            semihost::Outcome::Denied(message) => Slow::Stop {
                reason: StopReason::Denied {
                    hart: h,
                    pc,
                    message,
                },
                retired: false,
            },
            semihost::Outcome::Unsupported(op) => Slow::Stop {
                reason: StopReason::UnsupportedSemihosting { hart: h, pc, op },
                retired: false,
            },
        }
    }

    /// A CSR instruction; `Err` means illegal instruction.
    fn csr_op<const RV64: bool>(&mut self, h: usize, inst: &Inst) -> Result<(), ()> {
        let hart = &mut self.harts[h];
        let csr = Csr(inst.imm as u16 & 0xfff);
        let (write, src) = match inst.op {
            Op::Csrrw => (true, hart.x[inst.rs1 as usize & 31]),
            Op::Csrrs | Op::Csrrc => (inst.rs1 != 0, hart.x[inst.rs1 as usize & 31]),
            Op::Csrrwi => (true, u64::from(inst.rs1)),
            _ => (inst.rs1 != 0, u64::from(inst.rs1)),
        };
        if (hart.privilege as u8) < csr.min_privilege() || (write && csr.is_read_only()) {
            return Err(());
        }
        let old = read_csr::<RV64>(hart, csr)?;
        if write {
            let new = match inst.op {
                Op::Csrrw | Op::Csrrwi => src,
                Op::Csrrs | Op::Csrrsi => old | src,
                _ => old & !src,
            };
            write_csr::<RV64>(hart, csr, new)?;
        }
        if inst.rd != 0 {
            hart.x[inst.rd as usize & 31] = sx::<RV64>(old);
        }
        Ok(())
    }
}

// CSR numbers as `u16` constants, for the range patterns below (a pattern
// cannot read a field of a constant).
const MHPMEVENT3: u16 = csr::MHPMEVENT3.0;
const MHPMEVENT31: u16 = csr::MHPMEVENT31.0;
const PMPCFG0: u16 = csr::PMPCFG0.0;
const PMPCFG15: u16 = csr::PMPCFG15.0;
const PMPADDR0: u16 = csr::PMPADDR0.0;
const PMPADDR63: u16 = csr::PMPADDR63.0;
const MHPMCOUNTER3: u16 = csr::MHPMCOUNTER3.0;
const MHPMCOUNTER31: u16 = csr::MHPMCOUNTER31.0;
const MHPMCOUNTER3H: u16 = csr::MHPMCOUNTER3H.0;
const MHPMCOUNTER31H: u16 = csr::MHPMCOUNTER31H.0;
const HPMCOUNTER3: u16 = csr::HPMCOUNTER3.0;
const HPMCOUNTER31: u16 = csr::HPMCOUNTER31.0;
const HPMCOUNTER3H: u16 = csr::HPMCOUNTER3H.0;
const HPMCOUNTER31H: u16 = csr::HPMCOUNTER31H.0;

/// The value of a CSR as the program reads it (before sign extension).
fn read_csr<const RV64: bool>(hart: &Hart, csr: Csr) -> Result<u64, ()> {
    let c = &hart.csr;
    let instret = hart.stats.instructions;
    let cycle = instret.wrapping_add(c.cycle_offset);
    let minstret = instret.wrapping_add(c.instret_offset);
    // The time CSR ticks at QEMU virt's 10 MHz timebase on the virtual
    // 1 GHz clock.
    let time = instret / 100;
    // `mcounteren` bit n lets U-mode read the counter whose number ends in n.
    let counter_ok = |bit: u16| hart.privilege == Priv::Machine || c.mcounteren >> bit & 1 != 0;
    let v = match csr {
        csr::CYCLE | csr::TIME | csr::INSTRET | csr::CYCLEH | csr::TIMEH | csr::INSTRETH
            if !counter_ok(csr.0 & 0x1f) =>
        {
            return Err(())
        }
        csr::CYCLEH | csr::TIMEH | csr::INSTRETH | csr::MCYCLEH | csr::MINSTRETH if RV64 => {
            return Err(())
        }
        csr::CYCLE | csr::MCYCLE => cycle,
        csr::TIME => time,
        csr::INSTRET | csr::MINSTRET => minstret,
        csr::CYCLEH | csr::MCYCLEH => cycle >> 32,
        csr::TIMEH => time >> 32,
        csr::INSTRETH | csr::MINSTRETH => minstret >> 32,
        Csr(HPMCOUNTER3..=HPMCOUNTER31)
        | Csr(MHPMCOUNTER3..=MHPMCOUNTER31)
        | Csr(MHPMEVENT3..=MHPMEVENT31) => 0,
        Csr(HPMCOUNTER3H..=HPMCOUNTER31H) | Csr(MHPMCOUNTER3H..=MHPMCOUNTER31H) if !RV64 => 0,
        csr::SATP => 0,
        csr::FFLAGS | csr::FRM | csr::FCSR if !fpu::enabled(c.mstatus) => return Err(()),
        csr::FFLAGS => u64::from(hart.fp.fflags),
        csr::FRM => u64::from(hart.fp.frm),
        csr::FCSR => u64::from(hart.fp.frm) << 5 | u64::from(hart.fp.fflags),
        csr::MSTATUS => {
            let uxl = if RV64 { mstatus::UXL64 } else { 0 };
            // SD, the top bit, summarises FS = Dirty.
            let sd = if c.mstatus & mstatus::FS == mstatus::FS {
                1 << (if RV64 { 63 } else { 31 })
            } else {
                0
            };
            c.mstatus | uxl | sd
        }
        csr::MSTATUSH if !RV64 => 0,
        csr::MISA => {
            // I, M, A, F, D, C and U; MXL in the top two bits.
            let ext = 1 << 8 | 1 << 12 | 1 | 1 << 5 | 1 << 3 | 1 << 2 | 1 << 20;
            if RV64 {
                2 << 62 | ext
            } else {
                1 << 30 | ext
            }
        }
        csr::MEDELEG => c.medeleg,
        csr::MIDELEG => c.mideleg,
        csr::MIE => c.mie,
        csr::MTVEC => c.mtvec,
        csr::MCOUNTEREN => c.mcounteren,
        csr::MCOUNTINHIBIT => c.mcountinhibit,
        csr::MSCRATCH => c.mscratch,
        csr::MEPC => c.mepc,
        csr::MCAUSE => c.mcause,
        csr::MTVAL => c.mtval,
        csr::MIP => c.mip,
        Csr(PMPCFG0..=PMPCFG15) => {
            let i = (csr.0 - PMPCFG0) as usize;
            // RV64 has only the even-numbered pmpcfg registers.
            if RV64 && i % 2 == 1 {
                return Err(());
            }
            c.pmpcfg[i]
        }
        Csr(PMPADDR0..=PMPADDR63) => c.pmpaddr[(csr.0 - PMPADDR0) as usize],
        csr::MVENDORID | csr::MARCHID | csr::MIMPID | csr::MCONFIGPTR => 0,
        csr::MHARTID => hart.id as u64,
        _ => return Err(()),
    };
    Ok(if RV64 { v } else { v & 0xffff_ffff })
}

fn write_csr<const RV64: bool>(hart: &mut Hart, csr: Csr, v: u64) -> Result<(), ()> {
    let v = if RV64 { v } else { v & 0xffff_ffff };
    if matches!(csr, csr::FFLAGS | csr::FRM | csr::FCSR) {
        let fp = &mut hart.fp;
        match csr {
            csr::FFLAGS => fp.fflags = (v & 0x1f) as u8,
            csr::FRM => fp.frm = (v & 7) as u8,
            _ => {
                fp.fflags = (v & 0x1f) as u8;
                fp.frm = (v >> 5 & 7) as u8;
            }
        }
        fpu::dirty(&mut hart.csr.mstatus);
        return Ok(());
    }
    let instret = hart.stats.instructions;
    let c = &mut hart.csr;
    // The write happens as the instruction retires, and suppresses that
    // instruction's own increment of the counter written (privileged spec,
    // "Hardware Performance Monitor"): the half not written keeps its value
    // from before the instruction (`instret`), and the next read sees the
    // written value, so offsets are taken against `instret + 1`.
    let after = instret.wrapping_add(1);
    match csr {
        csr::MCYCLE => {
            let cur = instret.wrapping_add(c.cycle_offset);
            let new = if RV64 { v } else { (cur & !0xffff_ffff) | v };
            c.cycle_offset = new.wrapping_sub(after);
        }
        csr::MCYCLEH if !RV64 => {
            let cur = instret.wrapping_add(c.cycle_offset);
            c.cycle_offset = ((cur & 0xffff_ffff) | v << 32).wrapping_sub(after);
        }
        csr::MINSTRET => {
            let cur = instret.wrapping_add(c.instret_offset);
            let new = if RV64 { v } else { (cur & !0xffff_ffff) | v };
            c.instret_offset = new.wrapping_sub(after);
        }
        csr::MINSTRETH if !RV64 => {
            let cur = instret.wrapping_add(c.instret_offset);
            c.instret_offset = ((cur & 0xffff_ffff) | v << 32).wrapping_sub(after);
        }
        Csr(MHPMCOUNTER3..=MHPMCOUNTER31) | Csr(MHPMEVENT3..=MHPMEVENT31) => {}
        Csr(MHPMCOUNTER3H..=MHPMCOUNTER31H) if !RV64 => {}
        // Bare mode only: satp writes are accepted and read back as 0.
        csr::SATP => {}
        csr::MSTATUS => {
            let mut new = v & mstatus::WRITABLE;
            // MPP is WARL over the implemented modes, M and U.
            if new & mstatus::MPP != mstatus::MPP {
                new &= !mstatus::MPP;
            }
            c.mstatus = new;
        }
        csr::MSTATUSH if !RV64 => {}
        csr::MISA => {}
        csr::MEDELEG => c.medeleg = v,
        csr::MIDELEG => c.mideleg = v,
        csr::MIE => c.mie = v,
        csr::MTVEC => c.mtvec = v,
        csr::MCOUNTEREN => c.mcounteren = v & 0xffff_ffff,
        csr::MCOUNTINHIBIT => c.mcountinhibit = v,
        csr::MSCRATCH => c.mscratch = v,
        csr::MEPC => c.mepc = v & !1,
        csr::MCAUSE => c.mcause = v,
        csr::MTVAL => c.mtval = v,
        csr::MIP => c.mip = v,
        Csr(PMPCFG0..=PMPCFG15) => {
            let i = (csr.0 - PMPCFG0) as usize;
            if RV64 && i % 2 == 1 {
                return Err(());
            }
            c.pmpcfg[i] = v;
        }
        Csr(PMPADDR0..=PMPADDR63) => c.pmpaddr[(csr.0 - PMPADDR0) as usize] = v,
        _ => return Err(()),
    }
    Ok(())
}

/// The aligned word (`n` = 4, sign-extended) or doubleword (`n` = 8) that
/// LR reserves and SC compares: both must read it the same way.
#[inline]
fn read_reserved(mem: &Memory, at: u64, n: u64) -> Option<u64> {
    if n == 4 {
        mem.read::<4>(at)
            .map(|v| i32::from_le_bytes(v) as i64 as u64)
    } else {
        mem.read::<8>(at).map(u64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retrace_isa::Flow;

    /// `op` with link and non-link registers and offsets, so that every
    /// flow its operands can give it shows up.
    fn probes(op: Op) -> impl Iterator<Item = Inst> {
        [0u8, 1, 5, 10].into_iter().flat_map(move |rd| {
            [0u8, 1, 5, 10].into_iter().flat_map(move |rs1| {
                [0, 8, -8].into_iter().map(move |imm| Inst {
                    op,
                    rd,
                    rs1,
                    rs2: 12,
                    len: 4,
                    imm,
                    raw: 0,
                })
            })
        })
    }

    #[test]
    fn every_control_transfer_ends_its_block() {
        for &op in Op::ALL {
            let transfers = probes(op).any(|i| i.flow() != Flow::Next);
            match block_end(op) {
                BlockEnd::Transfer => assert!(transfers, "{op:?} does not transfer control"),
                BlockEnd::No => assert!(!transfers, "{op:?} transfers control mid-block"),
                // The slow path runs both kinds (`ecall` and `csrrw` alike).
                BlockEnd::Slow => {}
            }
            assert_eq!(ends_block(op), block_end(op) != BlockEnd::No);
        }
    }

    #[test]
    fn the_block_executor_leaves_exactly_the_slow_operations_to_the_slow_path() {
        for &op in Op::ALL {
            let mut hart = Hart::new(0, 0x1000);
            // An aligned address inside memory for loads, stores and AMOs.
            hart.x[11] = 0x1800;
            // The FP unit on, as the C run-time's start-up code leaves it.
            hart.csr.mstatus |= mstatus::FS;
            let mut mem = Memory::new(0x1000, 0x1000, 1);
            let mut htif = Htif {
                addr: u64::MAX,
                exit: None,
            };
            let inst = Inst {
                op,
                rd: 10,
                rs1: 11,
                rs2: 12,
                len: 4,
                imm: 0,
                raw: 0,
            };
            let (done, exit) = exec::<true, ()>(
                &mut hart,
                &mut mem,
                &mut htif,
                &[inst],
                &mut (),
                &mut [],
                &mut 0,
            );
            let slow = matches!(exit, BlockExit::Slow);
            assert_eq!(slow, block_end(op) == BlockEnd::Slow, "{op:?}");
            assert_eq!(done, usize::from(!slow), "{op:?}");
        }
    }

    /// A CSR instruction at the hart's current count, then its retirement.
    fn write_and_retire(hart: &mut Hart, csr: Csr, v: u64) {
        write_csr::<false>(hart, csr, v).unwrap();
        hart.stats.instructions += 1;
    }

    /// On RV32 a write to either half of `minstret`/`mcycle` replaces the
    /// increment the writing instruction would make: the other half keeps
    /// its value from before, with no carry into or out of it. The engine
    /// once took the other half after the increment, so a counter at
    /// `0xffff_ffff` whose high half was written read back 0.
    #[test]
    fn rv32_counter_half_writes_suppress_the_writers_increment() {
        for (low, high) in [(csr::MINSTRET, csr::MINSTRETH), (csr::MCYCLE, csr::MCYCLEH)] {
            let mut hart = Hart::new(0, 0);
            write_and_retire(&mut hart, low, 0xffff_ffff);
            assert_eq!(read_csr::<false>(&hart, low), Ok(0xffff_ffff));
            write_and_retire(&mut hart, high, 0);
            assert_eq!(read_csr::<false>(&hart, low), Ok(0xffff_ffff), "{high}");
            assert_eq!(read_csr::<false>(&hart, high), Ok(0), "{high}");
            // Counter at 0x0_ffff_ffff: writing the low half must not let
            // the increment carry into the high half.
            write_and_retire(&mut hart, low, 5);
            assert_eq!(read_csr::<false>(&hart, low), Ok(5), "{low}");
            assert_eq!(read_csr::<false>(&hart, high), Ok(0), "{low}");
            // An instruction that writes nothing counts as usual.
            hart.stats.instructions += 1;
            assert_eq!(read_csr::<false>(&hart, low), Ok(6), "{low}");
        }
    }
}
