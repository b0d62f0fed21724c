//! The in-order pipeline, single- or dual-issue: a register scoreboard, an
//! issue clock and the issue group still open. [`Pipeline::issue`] is *the*
//! timing rule of retrace — the cycle-level engine and the replay's path
//! timing both end here.

use crate::cpi::{CpiAccount, CpiPart};
use crate::model::{BranchModel, CoreModel, FetchModel, Unit};
use crate::path::{Events, Signature};
use retrace_isa::{Flow, Inst, Op};

/// The scoreboard's slots: `x0`–`x31`, then `f0`–`f31`, then the
/// non-pipelined units ([`Unit`]), each held as the cycle it is free again.
/// A [`Signature`] names slots by these numbers.
pub(crate) const SLOTS: usize = 66;
/// The first FP register's slot.
pub(crate) const FP_BASE: u8 = 32;
/// The integer divider's slot.
const INT_DIV_SLOT: u8 = 64;
/// The FP divider's slot.
const FP_DIV_SLOT: u8 = 65;
/// Not a scoreboard slot: the [`Signature`] entry that holds the open issue
/// group's pipes ([`Pipeline::signature`]), after every real slot.
pub(crate) const GROUP_SLOT: u8 = SLOTS as u8;
/// The internal clock starts here, not at 0, so that "the cycle before the
/// issue clock" — where an open issue group is — always exists, also in a
/// pipeline made from a signature; [`Pipeline::cycle`] subtracts it.
const ORIGIN: u64 = 1;

fn unit_slot(unit: Unit) -> u8 {
    match unit {
        Unit::IntDiv => INT_DIV_SLOT,
        Unit::FpDiv => FP_DIV_SLOT,
    }
}

/// Pipeline state: the cycle at which the next instruction may issue, for
/// each register (integer and FP apart) the cycle at which its newest value
/// may be consumed, for each non-pipelined unit the cycle it is free, and on
/// a dual-issue core the pipes of the instruction issued in the cycle before
/// the issue clock when the next one may still join it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    /// The issue clock, plus [`ORIGIN`].
    cycle: u64,
    ready: [u64; SLOTS],
    /// The open issue group: the pipes ([`crate::Pipes::mask`]) of the one
    /// instruction issued at `cycle - 1` that another may still issue
    /// beside; 0 when there is none (always, on a single-issue core).
    group: u8,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline::new()
    }
}

impl Pipeline {
    /// An idle pipeline at cycle 0.
    pub fn new() -> Pipeline {
        Pipeline {
            cycle: ORIGIN,
            ready: [0; SLOTS],
            group: 0,
        }
    }

    /// The cycle at which the next instruction may issue on its own (one
    /// may still join the open issue group a cycle earlier): the elapsed
    /// time.
    #[inline]
    pub fn cycle(&self) -> u64 {
        self.cycle - ORIGIN
    }

    /// Close any open issue group and hold the issue stage for `cycles`
    /// more cycles (none: only close the group): a stall from outside the
    /// core's own rule. `retrace
    /// mca` uses it to time a block under a rule of another model's
    /// (`llvm-mca`'s in-order write-back) without changing this one.
    pub fn stall(&mut self, cycles: u64) {
        self.cycle += cycles;
        self.group = 0;
    }

    /// Issue one instruction.
    ///
    /// It issues when the issue stage is free (after a fetch stall on an
    /// instruction-cache miss, and after the second fetch of an instruction
    /// at `pc` that spans two fetch words) and every register it reads is
    /// ready; its
    /// result is ready `latency` cycles later (plus a data-cache miss); the
    /// next instruction may issue `occupancy` cycles later, plus any
    /// data-cache miss stall and control-flow penalty.
    ///
    /// On a dual-issue core an instruction may instead issue in the same
    /// cycle as the one before it (pair with it) when that one left its
    /// issue group open — it took one cycle, stalled for nothing and did
    /// not redirect fetch — and this one needs no fetch stall, has its
    /// operands and unit ready in that cycle, and the two can be put on
    /// different pipes. A pair closes the group.
    ///
    /// On a core with late execution ([`crate::LateAlu`]) an instruction of
    /// a listed class may issue up to `stages` cycles before its operands
    /// are ready; if one is not ready when it issues it executes late, and
    /// its result (and a misprediction's redirect) comes `stages` cycles
    /// later.
    #[inline]
    pub fn issue(&mut self, model: &CoreModel, pc: u64, inst: &Inst, ev: Events) {
        let costs = Costs::of(model);
        let facts = OpFacts::of(model, inst.op);
        self.issue_op(&costs, &facts, pc, inst, facts.flow(inst), ev, &mut ());
    }

    /// [`Pipeline::issue`] that also adds each term it adds to the clock to
    /// its part of `acct`'s stack ([`crate::cpi`]): the same rule, so the
    /// parts sum to the cycles the instruction took.
    pub fn issue_accounting(
        &mut self,
        model: &CoreModel,
        pc: u64,
        inst: &Inst,
        ev: Events,
        acct: &mut CpiAccount,
    ) {
        let costs = Costs::of(model);
        let facts = OpFacts::of(model, inst.op);
        self.issue_op(&costs, &facts, pc, inst, facts.flow(inst), ev, acct);
    }

    /// [`Pipeline::issue_op`] keeping `acct`, out of line: the cycle-level
    /// engine's loop then holds one copy of the rule, the plain one.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn issue_op_accounting(
        &mut self,
        costs: &Costs,
        facts: &OpFacts,
        pc: u64,
        inst: &Inst,
        flow: Flow,
        ev: Events,
        acct: &mut CpiAccount,
    ) {
        self.issue_op(costs, facts, pc, inst, flow, ev, acct);
    }

    /// [`Pipeline::issue`] with the per-model and per-operation facts
    /// already looked up: the rule itself, which both the cycle-level engine
    /// (with facts tabulated once per core) and [`Pipeline::issue`] use.
    /// With a [`Ledger`] that keeps no account (`()`) the accounting
    /// compiles away, so the plain rule costs what it did before there was
    /// one.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn issue_op<L: Ledger>(
        &mut self,
        costs: &Costs,
        facts: &OpFacts,
        pc: u64,
        inst: &Inst,
        flow: Flow,
        ev: Events,
        ledger: &mut L,
    ) {
        let mut start = self.cycle;
        if ev.fetch_miss {
            start += costs.fetch_miss;
        }
        // The second fetch of an instruction that spans two words comes
        // before it can start (picorv32 with compressed code).
        let split = if costs.fetch.split_penalty != 0 && costs.fetch.splits(pc, inst.len) {
            u64::from(costs.fetch.split_penalty)
        } else {
            0
        };
        start += split;
        // Dual issue: without a fetch stall, try the open group's cycle
        // first. Both pipes together are {A, B}: the two fit on different
        // pipes unless both need the same one. If an operand or the unit
        // is not ready there, the waits below take the instruction to the
        // cycle it would have had alone (max(cycle - 1, t) = max(cycle, t)
        // for any t ≥ cycle).
        if self.group != 0 && (self.group | facts.pipe) == 3 && start == self.cycle {
            start -= 1;
        }
        let free = start;
        // x0 is never written (see below), so `ready[0]` stays 0 and reading
        // it never delays; the facts say which fields are really registers
        // and in which file (`f5` is slot 37, not `x5`'s 5). Instructions
        // with an FP register, a third operand or a non-pipelined unit take
        // the general path, out of line; the integer ones (but divides)
        // keep the short one.
        //
        // An instruction that may execute late (`facts.late` stages after
        // issue, [`crate::LateAlu`]) waits only until its operands are at
        // most that many cycles from ready; if one is not ready when it
        // issues, it executes late: its result comes `late` cycles after
        // the early one, and so does a misprediction's redirect. Every
        // other instruction has `late` = 0, which makes both the same wait
        // as without late execution and `late_by` 0.
        // The integer instructions that always execute at issue keep the
        // shortest path, as before there was late execution.
        let late = u64::from(facts.late);
        let (operands, rd, late_by) = if facts.special {
            let (operands, issue, need) = self.special_waits(facts, inst, start);
            start = issue;
            (
                operands,
                usize::from(inst.rd & 31 | facts.rd_file) & 63,
                if need > start { late } else { 0 },
            )
        } else if late == 0 {
            if facts.reads_rs1 {
                start = start.max(self.ready[usize::from(inst.rs1 & 31)]);
            }
            if facts.reads_rs2 {
                start = start.max(self.ready[usize::from(inst.rs2 & 31)]);
            }
            (start, usize::from(inst.rd & 31), 0)
        } else {
            let mut need = 0;
            if facts.reads_rs1 {
                need = self.ready[usize::from(inst.rs1 & 31)];
            }
            if facts.reads_rs2 {
                need = need.max(self.ready[usize::from(inst.rs2 & 31)]);
            }
            start = start.max(need.saturating_sub(late));
            (
                start,
                usize::from(inst.rd & 31),
                if need > start { late } else { 0 },
            )
        };
        let mem_stall = if ev.data_miss { costs.data_miss } else { 0 };
        let (taken, mut mispredict) = control_penalty(&costs.branch, flow, ev);
        if mispredict != 0 {
            mispredict += late_by;
        }
        let fallthrough = taken_split_fallthrough(&costs.fetch, pc, inst, flow, ev);
        // Issued in the open group's cycle: paired with the one before.
        let paired = start < self.cycle;
        if let Some(a) = ledger.account() {
            // A paired instruction starts no cycle of its own: it charges
            // only what it adds beyond the issue clock (occupancy beyond
            // one, stalls, penalties), and nothing to `base`, which counts
            // issue cycles. One that tried the open group and had to wait
            // is charged its waits from the issue clock, as if it had not.
            let (free, operands) = if paired {
                (start, start)
            } else {
                let free = free.max(self.cycle);
                (free, operands.max(free))
            };
            let rs1 = usize::from(inst.rs1 & 31 | facts.rs1_file) & 63;
            let rs2 = usize::from(inst.rs2 & 31 | facts.rs2_file) & 63;
            let s = &mut a.stack;
            if ev.fetch_miss {
                s.charge(CpiPart::ICache, costs.fetch_miss);
            }
            s.charge(CpiPart::Fetch, split + fallthrough);
            if operands > free {
                // The operand waited for is the one ready last (rs1, then
                // rs2, then rs3 on a tie): before this instruction
                // overwrites any. One that may execute late waited until
                // `late` cycles before it.
                let last = operands + late;
                let r = if facts.reads_rs1 && self.ready[rs1] == last {
                    rs1
                } else if facts.reads_rs2 && self.ready[rs2] == last {
                    rs2
                } else {
                    usize::from(FP_BASE) | rs3_of(inst)
                };
                let part = if r >= usize::from(FP_BASE) {
                    CpiPart::Fp
                } else if a.is_loaded(r as u8) {
                    CpiPart::LoadUse
                } else {
                    CpiPart::Interlock
                };
                a.stack.charge(part, operands - free);
            }
            if start > operands {
                let part = if facts.unit == INT_DIV_SLOT {
                    CpiPart::Div
                } else {
                    CpiPart::Fp
                };
                a.stack.charge(part, start - operands);
            }
            let occupancy = u64::from(facts.occupancy);
            let s = &mut a.stack;
            s.charge(CpiPart::Base, if paired { 0 } else { occupancy.min(1) });
            s.charge(facts.occupancy_part, occupancy.saturating_sub(1));
            s.charge(CpiPart::DCache, mem_stall);
            s.charge(CpiPart::Taken, taken);
            s.charge(CpiPart::Mispredict, mispredict);
            if facts.writes_rd && rd != 0 && rd < usize::from(FP_BASE) {
                a.wrote(rd as u8, facts.mem);
            }
        }
        // x0 (slot 0) is never written; f0 (slot 32) is a register like
        // any other.
        if facts.writes_rd && rd != 0 {
            self.ready[rd] = start + u64::from(facts.latency) + mem_stall + late_by;
        }
        let stall = mem_stall + taken + mispredict + fallthrough;
        self.cycle = start + u64::from(facts.occupancy) + stall;
        // The group stays open for one more instruction when this one
        // opened it (a pair fills it), took one cycle, stalled for nothing
        // and did not redirect fetch: a taken branch or a jump ends the
        // fetch group, so what follows it starts a cycle of its own.
        // `facts.pipe` is 0 on a single-issue core: the group never opens.
        self.group = if facts.pipe != 0
            && !paired
            && facts.occupancy == 1
            && stall == 0
            && !redirects(flow, ev)
        {
            facts.pipe
        } else {
            0
        };
    }

    /// The waits of an instruction with [`OpFacts::special`]: for its
    /// operands in either register file (a fused multiply-add's `rs3`
    /// too), giving the cycle they are ready (less `facts.late`, for one
    /// that may execute late), and then for its non-pipelined unit, giving
    /// the cycle it issues — which also makes the unit busy from then on;
    /// and the cycle its last operand is ready.
    #[inline(never)]
    fn special_waits(&mut self, facts: &OpFacts, inst: &Inst, mut start: u64) -> (u64, u64, u64) {
        let mut need = 0;
        if facts.reads_rs1 {
            need = self.ready[usize::from(inst.rs1 & 31 | facts.rs1_file) & 63];
        }
        if facts.reads_rs2 {
            need = need.max(self.ready[usize::from(inst.rs2 & 31 | facts.rs2_file) & 63]);
        }
        if facts.reads_rs3 {
            need = need.max(self.ready[usize::from(FP_BASE) | rs3_of(inst)]);
        }
        start = start.max(need.saturating_sub(u64::from(facts.late)));
        let operands = start;
        let unit = usize::from(facts.unit);
        if unit != 0 {
            start = start.max(self.ready[unit]);
            self.ready[unit] = start + u64::from(facts.busy);
        }
        (operands, start, need)
    }

    /// Enter a trap handler (an exception, or an `ecall`/`ebreak` that
    /// traps): exceptions are precise, so every instruction issued before
    /// the trap completes first — the issue clock waits for the last
    /// result in flight — and fetch is then redirected to the handler,
    /// which costs the core's `trap_penalty`. The handler's first
    /// instruction issues into an empty pipeline. The trapping instruction
    /// itself is issued before this (an `ecall`) or not at all (a fault:
    /// it does not retire).
    #[inline]
    pub fn trap(&mut self, model: &CoreModel) {
        self.trap_op(&Costs::of(model), &mut ());
    }

    /// [`Pipeline::trap`] that adds its cycles to `acct`'s trap part.
    pub fn trap_accounting(&mut self, model: &CoreModel, acct: &mut CpiAccount) {
        self.trap_op(&Costs::of(model), acct);
    }

    /// [`Pipeline::trap`] with the core's costs looked up.
    #[inline]
    pub(crate) fn trap_op<L: Ledger>(&mut self, costs: &Costs, ledger: &mut L) {
        let drained = self.ready.iter().copied().fold(self.cycle, u64::max);
        let after = drained + costs.trap;
        if let Some(a) = ledger.account() {
            a.stack.charge(CpiPart::Trap, after - self.cycle);
        }
        self.cycle = after;
        self.ready = [0; SLOTS];
        self.group = 0;
    }

    /// The state that matters for the future, relative to the current cycle:
    /// registers whose values are not yet ready, and units still busy (by
    /// their slots: `x0`–`x31` are 0–31, `f0`–`f31` 32–63, the integer
    /// divider 64, the FP divider 65); then, on a dual-issue core, an open
    /// issue group as the entry `(66, pipes)` — not a register, and its
    /// number is the pipe mask, not cycles ([`Signature::registers`] leaves
    /// it out).
    ///
    /// With a group open, a value ready exactly at the issue clock still
    /// matters (relative time 0): it is not ready in the group's cycle, so
    /// it keeps an instruction that reads it out of the group.
    pub fn signature(&self) -> Signature {
        let since = self.cycle - u64::from(self.group != 0);
        let pending = self
            .ready
            .iter()
            .enumerate()
            .filter(|(_, &r)| r > since)
            .map(|(reg, &r)| (reg as u8, (r - self.cycle) as u32))
            .chain((self.group != 0).then_some((GROUP_SLOT, u32::from(self.group))))
            .collect();
        Signature(pending)
    }

    /// A pipeline at cycle 0 in the state a signature describes.
    pub fn from_signature(sig: &Signature) -> Pipeline {
        let mut p = Pipeline::new();
        for &(reg, rel) in sig.0.iter() {
            if reg == GROUP_SLOT {
                p.group = (rel & 3) as u8;
            } else if let Some(r) = p.ready.get_mut(usize::from(reg)) {
                *r = p.cycle + u64::from(rel);
            }
        }
        p
    }
}

/// The costs of a core that do not depend on the instruction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Costs {
    /// Stall of an instruction-cache miss (0 without an instruction cache).
    pub fetch_miss: u64,
    /// Stall of a data-cache miss (0 without a data cache).
    pub data_miss: u64,
    /// Branch, jump and return costs.
    pub branch: BranchModel,
    /// Cycles of entering a trap handler after the drain.
    pub trap: u64,
    /// The cost of instructions that span fetch words.
    pub fetch: FetchModel,
}

impl Costs {
    pub(crate) fn of(model: &CoreModel) -> Costs {
        Costs {
            fetch_miss: model.icache.map_or(0, |c| u64::from(c.miss_penalty)),
            data_miss: model.dcache.map_or(0, |c| u64::from(c.miss_penalty)),
            branch: model.branch,
            trap: u64::from(model.trap_penalty),
            fetch: model.fetch,
        }
    }
}

/// What the timing rule needs to know about an operation, on one core. All
/// of it depends on the [`Op`] alone (not on operands), so a core tabulates
/// it once per operation instead of matching on the instruction every step.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpFacts {
    /// Cycles until the result may be consumed.
    pub latency: u32,
    /// Cycles the instruction holds the issue stage.
    pub occupancy: u32,
    /// `rs1` is a register operand.
    pub reads_rs1: bool,
    /// `rs2` is a register operand.
    pub reads_rs2: bool,
    /// `rs1`'s register file: 0 for the integer registers, 32 for FP.
    pub rs1_file: u8,
    /// `rs2`'s register file, as `rs1_file`.
    pub rs2_file: u8,
    /// A fused multiply-add: `rs3` (an FP register) is an operand.
    pub reads_rs3: bool,
    /// `rd` is written (when it is not x0).
    pub writes_rd: bool,
    /// `rd`'s register file, as `rs1_file`.
    pub rd_file: u8,
    /// The slot of the non-pipelined unit it occupies; 0 for none.
    pub unit: u8,
    /// The pipes it may issue on ([`crate::Pipes::mask`]) on a dual-issue
    /// core; 0 on a single-issue one.
    pub pipe: u8,
    /// Cycles it keeps that unit busy.
    pub busy: u32,
    /// The stages it may execute late by ([`crate::LateAlu`]); 0 when it
    /// always executes at issue.
    pub late: u8,
    /// It names an FP register, reads `rs3` or occupies a unit: its waits
    /// are [`Pipeline::special_waits`]'s.
    pub special: bool,
    /// It accesses data memory (load, store, LR/SC, AMO).
    pub mem: bool,
    /// The CPI part its occupancy beyond the first cycle goes to.
    pub occupancy_part: CpiPart,
    /// `jal`/`jalr`: the flow depends on the registers linked and used.
    operand_flow: bool,
    /// The flow, when it does not depend on operands.
    flow: Option<Flow>,
}

impl OpFacts {
    /// The facts of `op` on `model`, derived from the same [`retrace_isa::Class`]
    /// and register-use functions the rest of retrace uses.
    pub(crate) fn of(model: &CoreModel, op: Op) -> OpFacts {
        // Distinct non-zero registers in every field tell which fields the
        // operation reads and writes.
        let probe = Inst {
            op,
            rd: 3,
            rs1: 1,
            rs2: 2,
            len: 4,
            imm: 0,
            raw: 0,
        };
        let reads = probe.reads();
        let fp_reads = probe.fp_reads();
        let class = probe.class();
        let operand_flow = op.flow_depends_on_operands();
        let fp_rs1 = fp_reads[0].is_some();
        let fp_rs2 = fp_reads[1].is_some();
        let fp_rd = probe.fp_writes().is_some();
        let file = |fp: bool| if fp { FP_BASE } else { 0 };
        OpFacts {
            latency: model.latency.get(class),
            occupancy: model.occupancy.get(class),
            reads_rs1: reads.contains(&Some(1)) || fp_rs1,
            reads_rs2: reads.contains(&Some(2)) || fp_rs2,
            rs1_file: file(fp_rs1),
            rs2_file: file(fp_rs2),
            reads_rs3: fp_reads[2].is_some(),
            writes_rd: probe.writes() == Some(3) || fp_rd,
            rd_file: file(fp_rd),
            unit: Unit::of(class, model).map_or(0, unit_slot),
            pipe: if model.issue_width > 1 {
                model.pipes.get(class).mask()
            } else {
                0
            },
            busy: model.busy.get(class),
            // At most `LateAlu::MAX_STAGES`: it fits.
            late: model.late_alu.stages_of(class) as u8,
            special: fp_rs1
                || fp_rs2
                || fp_rd
                || fp_reads[2].is_some()
                || Unit::of(class, model).is_some(),
            mem: op.mem().is_some(),
            occupancy_part: CpiPart::occupancy_of(class),
            operand_flow,
            flow: (!operand_flow).then(|| probe.flow()),
        }
    }

    /// The control flow of `inst` (whose operation these facts describe).
    #[inline(always)]
    pub(crate) fn flow(&self, inst: &Inst) -> Flow {
        match self.flow {
            Some(f) if !self.operand_flow => f,
            _ => inst.flow(),
        }
    }
}

/// [`OpFacts`] of every operation on one core, indexed by `Op as u8`.
#[derive(Clone, Debug)]
pub(crate) struct OpTable(Box<[OpFacts; 256]>);

impl OpTable {
    pub(crate) fn new(model: &CoreModel) -> OpTable {
        let mut t = Box::new([OpFacts::default(); 256]);
        for &op in Op::ALL {
            t[op as u8 as usize] = OpFacts::of(model, op);
        }
        OpTable(t)
    }

    #[inline(always)]
    pub(crate) fn get(&self, op: Op) -> &OpFacts {
        &self.0[op as u8 as usize]
    }
}

/// The FP register a fused multiply-add reads third (`rs3`, kept in
/// `imm`'s bits 3 to 7).
#[inline(always)]
fn rs3_of(inst: &Inst) -> usize {
    (inst.imm >> 3) as usize & 31
}

/// Extra cycles of a taken conditional branch whose fall-through instruction
/// spans two fetch words: picorv32 prefetches the fall-through while the
/// branch executes and, when it is taken, still waits for that prefetch's
/// second word before fetching the target.
#[inline(always)]
fn taken_split_fallthrough(
    fetch: &FetchModel,
    pc: u64,
    inst: &Inst,
    flow: Flow,
    ev: Events,
) -> u64 {
    let penalty = fetch.taken_branch_split_fallthrough_penalty;
    if penalty != 0
        && flow == Flow::CondBranch
        && ev.taken
        && ev.fallthrough_len != 0
        && fetch.splits(inst.fallthrough(pc), ev.fallthrough_len)
    {
        u64::from(penalty)
    } else {
        0
    }
}

/// Whether `flow` (with `ev`) sends fetch elsewhere than the next
/// instruction.
#[inline(always)]
fn redirects(flow: Flow, ev: Events) -> bool {
    match flow {
        Flow::Next => false,
        Flow::CondBranch => ev.taken,
        // Jumps, calls, returns; and `ecall`, `ebreak`, `mret` go to a
        // handler or back from one.
        _ => true,
    }
}

/// Extra cycles that control flow costs after an instruction issues: the
/// penalty of going where it went (a taken branch, a jump, a return) and
/// that of a misprediction, apart for the CPI stack.
#[inline]
fn control_penalty(b: &BranchModel, flow: Flow, ev: Events) -> (u64, u64) {
    // In u64: a sum of two u32 penalties cannot wrap there.
    let (taken, mispredict) = match flow {
        Flow::CondBranch => (
            if ev.taken { b.taken_penalty } else { 0 },
            if ev.mispredict {
                b.mispredict_penalty
            } else {
                0
            },
        ),
        Flow::Jump | Flow::Call => (b.jal_penalty, 0),
        Flow::Return if b.ras_depth > 0 => {
            if ev.mispredict {
                (0, b.mispredict_penalty)
            } else {
                (b.return_penalty, 0)
            }
        }
        Flow::Return | Flow::IndirectJump | Flow::IndirectCall => (b.jalr_penalty, 0),
        _ => (0, 0),
    };
    (u64::from(taken), u64::from(mispredict))
}

/// Where the accounting form of the timing rule keeps its account: `()`
/// keeps none (the plain rule), a [`CpiAccount`] its own.
pub(crate) trait Ledger {
    /// The account to charge, if any.
    fn account(&mut self) -> Option<&mut CpiAccount>;
}

impl Ledger for () {
    #[inline(always)]
    fn account(&mut self) -> Option<&mut CpiAccount> {
        None
    }
}

impl Ledger for CpiAccount {
    #[inline(always)]
    fn account(&mut self) -> Option<&mut CpiAccount> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{preset, PRESETS};

    /// `[fetch]`: an instruction that spans two fetch words waits
    /// `split_penalty` before it starts; a taken conditional branch whose
    /// fall-through spans two words pays the other penalty, a not-taken
    /// one or one whose fall-through is unknown (length 0) does not.
    #[test]
    fn split_fetches_cost_what_the_model_says() {
        let text = "name = \"x\"\nxlen = [32]\n[fetch]\nword_bytes = 8\nsplit_penalty = 2\ntaken_branch_split_fallthrough_penalty = 5\n";
        let m = CoreModel::from_toml(text, "c.toml").unwrap();
        let add = retrace_testkit::asm::inst(Op::Add, 1, 2, 3, 0);
        let c_add = Inst { len: 2, ..add };
        let cycles = |pc: u64, inst: &Inst, ev: Events| {
            let mut p = Pipeline::new();
            p.issue(&m, pc, inst, ev);
            p.cycle()
        };
        let none = Events::default();
        // 8-byte words: a 4-byte instruction splits only at 6 mod 8.
        assert_eq!(cycles(0x1002, &add, none), 1);
        assert_eq!(cycles(0x1004, &add, none), 1);
        assert_eq!(cycles(0x1006, &add, none), 3);
        assert_eq!(cycles(0x1006, &c_add, none), 1);
        let beq = retrace_testkit::asm::inst(Op::Beq, 0, 1, 2, 64);
        let taken = |len| Events {
            taken: true,
            fallthrough_len: len,
            ..Events::default()
        };
        // The branch at 0x1002 falls through to 0x1006: split if 4 bytes.
        assert_eq!(cycles(0x1002, &beq, taken(4)), 6);
        assert_eq!(cycles(0x1002, &beq, taken(2)), 1);
        assert_eq!(cycles(0x1002, &beq, taken(0)), 1);
        assert_eq!(cycles(0x1000, &beq, taken(4)), 1);
        let not_taken = Events {
            fallthrough_len: 4,
            ..Events::default()
        };
        assert_eq!(cycles(0x1002, &beq, not_taken), 1);
        // A jump does not prefetch its fall-through.
        let jal = retrace_testkit::asm::inst(Op::Jal, 0, 0, 0, 64);
        assert_eq!(cycles(0x1002, &jal, taken(4)), 1);
    }

    /// The accounting rule times as the plain one, its parts sum to the
    /// cycles on every preset, and an operand wait is load-use exactly when
    /// a load wrote the register waited for.
    #[test]
    fn accounting_splits_the_cycles_exactly() {
        use crate::cpi::{CpiAccount, CpiPart};
        use retrace_testkit::asm::inst;
        let program = [
            inst(Op::Lw, 5, 2, 0, 0),
            inst(Op::Add, 6, 5, 1, 0),
            inst(Op::Mul, 7, 6, 6, 0),
            inst(Op::Add, 8, 7, 5, 0),
            inst(Op::Div, 9, 8, 7, 0),
            inst(Op::Beq, 0, 9, 8, 16),
            inst(Op::Jal, 1, 0, 0, 64),
            inst(Op::Jalr, 0, 1, 0, 0),
        ];
        for (name, _) in PRESETS {
            let model = preset(name).unwrap();
            for events in 0..16u8 {
                let (mut plain, mut counted) = (Pipeline::new(), Pipeline::new());
                let mut acct = CpiAccount::default();
                for (k, i) in program.iter().enumerate() {
                    let ev = Events {
                        fetch_miss: events & 1 != 0 && k % 3 == 0,
                        data_miss: events & 2 != 0,
                        taken: events & 4 != 0,
                        mispredict: events & 8 != 0,
                        fallthrough_len: 4,
                    };
                    let pc = 0x1000 + 2 * k as u64;
                    plain.issue(&model, pc, i, ev);
                    counted.issue_accounting(&model, pc, i, ev, &mut acct);
                }
                plain.trap(&model);
                counted.trap_accounting(&model, &mut acct);
                assert_eq!(plain, counted, "{name}");
                assert_eq!(acct.stack.total(), plain.cycle(), "{name} {events}");
                // `base` counts issue cycles: one per instruction on a
                // single-issue core, fewer when some pair.
                let base = acct.stack.get(CpiPart::Base);
                if model.issue_width == 1 {
                    assert_eq!(base, program.len() as u64);
                } else {
                    assert!(base <= program.len() as u64 && base > 0, "{name}");
                }
            }
        }
        // inorder5: `add` waits a cycle for the load before it (load-use),
        // and the second `add` for the multiply (another interlock).
        let model = preset("inorder5").unwrap();
        let mut p = Pipeline::new();
        let mut acct = CpiAccount::default();
        for i in &program[..4] {
            p.issue_accounting(&model, 0x1000, i, Events::default(), &mut acct);
        }
        assert_eq!(acct.stack.get(CpiPart::LoadUse), 1);
        assert_eq!(acct.stack.get(CpiPart::Interlock), 2);
    }

    /// Dual issue on u74: two independent ALU operations share a cycle; two
    /// loads (both pipe A) do not, nor a multiply and a branch (both B); a
    /// dependent pair does not; a load pairs with an ALU operation either
    /// way round; a taken branch ends its group, a not-taken one does not;
    /// a third instruction starts a new cycle. The accounting sums to the
    /// cycles with `base` one per issue cycle, and the plain rule and a
    /// replay from the signature give the same times.
    #[test]
    fn dual_issue_pairs_on_different_pipes() {
        use crate::cpi::{CpiAccount, CpiPart};
        use retrace_testkit::asm::inst;
        let model = preset("u74").unwrap();
        assert_eq!(model.issue_width, 2);
        let run = |program: &[(Inst, Events)]| {
            let (mut p, mut q) = (Pipeline::new(), Pipeline::new());
            let mut acct = CpiAccount::default();
            for (k, (i, ev)) in program.iter().enumerate() {
                let pc = 0x1000 + 4 * k as u64;
                p.issue(&model, pc, i, *ev);
                q.issue_accounting(&model, pc, i, *ev, &mut acct);
            }
            assert_eq!(p, q);
            assert_eq!(acct.stack.total(), p.cycle(), "{program:?}");
            (p.cycle(), acct.stack.get(CpiPart::Base))
        };
        let none = Events::default();
        let plain = |is: &[Inst]| run(&is.iter().map(|&i| (i, none)).collect::<Vec<_>>()).0;
        let add = |rd, rs1| inst(Op::Add, rd, rs1, rs1, 0);
        let lw = |rd, rs1| inst(Op::Ld, rd, rs1, 0, 0);
        // Two independent adds: one cycle; a third: a second cycle.
        assert_eq!(plain(&[add(5, 1), add(6, 2)]), 1);
        assert_eq!(run(&[(add(5, 1), none), (add(6, 2), none)]).1, 1);
        assert_eq!(plain(&[add(5, 1), add(6, 2), add(7, 3)]), 2);
        assert_eq!(plain(&[add(5, 1), add(6, 2), add(7, 3), add(8, 4)]), 2);
        // Dependent: an add may still pair with the add it depends on, for
        // it executes late (two stages on, when the first's result is
        // there); a load that needs it as its address waits for it.
        assert_eq!(plain(&[add(5, 1), add(6, 5)]), 1);
        assert_eq!(plain(&[add(5, 1), lw(6, 5)]), 2);
        // Two loads: both on pipe A.
        assert_eq!(plain(&[lw(5, 1), lw(6, 2)]), 2);
        // A load and an add pair either way round (A and AB).
        assert_eq!(plain(&[lw(5, 1), add(6, 2)]), 1);
        assert_eq!(plain(&[add(6, 2), lw(5, 1)]), 1);
        // Multiply and branch: both on pipe B.
        let mul = inst(Op::Mul, 5, 1, 2, 0);
        let beq = inst(Op::Beq, 0, 3, 4, 64);
        assert_eq!(plain(&[mul, beq]), 2);
        assert_eq!(plain(&[lw(6, 7), beq]), 1);
        // A taken branch ends its group; a not-taken one leaves it open.
        let taken = Events {
            taken: true,
            ..none
        };
        assert_eq!(run(&[(beq, taken), (add(5, 1), none)]).0, 2);
        assert_eq!(run(&[(beq, none), (add(5, 1), none)]).0, 1);
        // A jump ends its group too.
        let jal = inst(Op::Jal, 1, 0, 0, 64);
        assert_eq!(plain(&[jal, add(5, 2)]), 2);
        // A data-cache miss stalls: nothing joins the load.
        let miss = Events {
            data_miss: true,
            ..none
        };
        let dmiss = u64::from(model.dcache.unwrap().miss_penalty);
        assert_eq!(run(&[(lw(5, 1), miss), (add(6, 2), none)]).0, 2 + dmiss);
        // The paired instruction's own fetch miss keeps it out of the group.
        let fmiss = Events {
            fetch_miss: true,
            ..none
        };
        let imiss = u64::from(model.icache.unwrap().miss_penalty);
        assert_eq!(run(&[(add(5, 1), none), (add(6, 2), fmiss)]).0, 2 + imiss);
        // A divide pairs (pipe B, occupancy 1), but the next divide waits
        // for the divider (busy 15) and the group is gone by then.
        let div = |rd| inst(Op::Div, rd, 1, 2, 0);
        assert_eq!(plain(&[lw(6, 7), div(5)]), 1);
        assert_eq!(plain(&[div(5), div(6)]), 16);
        // The open group crosses a signature: a path cut after the first
        // add times the second as part of the same cycle.
        let mut p = Pipeline::new();
        p.issue(&model, 0x1000, &lw(5, 1), none);
        let sig = p.signature();
        assert_eq!(sig.registers(), 1 << 5);
        assert!(sig.0.iter().any(|&(s, m)| s == GROUP_SLOT && m == 1));
        let mut q = Pipeline::from_signature(&sig);
        q.issue(&model, 0x1004, &add(6, 2), none);
        assert_eq!(q.cycle(), 0);
        assert_eq!(q.signature(), {
            p.issue(&model, 0x1004, &add(6, 2), none);
            p.signature()
        });
        // A value ready exactly at the issue clock is not ready in the
        // group's cycle: the signature keeps it (at 0), so a dependent
        // load after the cut does not pair, as without the cut.
        let mut p = Pipeline::new();
        p.issue(&model, 0x1000, &add(5, 1), none);
        assert!(p.signature().0.contains(&(5, 0)));
        let mut q = Pipeline::from_signature(&p.signature());
        q.issue(&model, 0x1004, &lw(6, 5), none);
        p.issue(&model, 0x1004, &lw(6, 5), none);
        assert_eq!((p.cycle(), q.cycle()), (2, 1));
        assert_eq!(p.signature(), q.signature());
        // A second load after the signature cannot join pipe A's group.
        let mut q = Pipeline::from_signature(&sig);
        q.issue(&model, 0x1004, &lw(6, 2), none);
        assert_eq!(q.cycle(), 1);
        // A trap drains and closes the group.
        let mut q = Pipeline::from_signature(&sig);
        q.trap(&model);
        assert!(q.signature().0.is_empty());
        // docs/TIMING.md's example: the issue clock after each.
        let mut p = Pipeline::new();
        let mut after = Vec::new();
        for i in [
            lw(10, 11),
            inst(Op::Addi, 12, 12, 0, 1),
            inst(Op::Ld, 13, 11, 0, 8),
            inst(Op::Ld, 14, 11, 0, 16),
            inst(Op::Add, 15, 10, 14, 0),
        ] {
            p.issue(&model, 0x1000, &i, none);
            after.push(p.cycle());
        }
        // The add issues 2 cycles before a4 is ready (late, in M2).
        assert_eq!(after, [1, 1, 2, 3, 4]);
        // Width 1: the same program on rocket never pairs.
        let rocket = preset("rocket").unwrap();
        let mut r = Pipeline::new();
        for i in [add(5, 1), add(6, 2), lw(7, 3), add(8, 4)] {
            r.issue(&rocket, 0x1000, &i, none);
        }
        assert_eq!(r.cycle(), 4);
        assert!(r.signature().0.iter().all(|&(s, _)| s < GROUP_SLOT));
    }

    /// Early and late execution on a single-issue core (so that pairing
    /// does not enter): ALU and shift operations and conditional branches
    /// may issue 2 cycles before their operands are ready and then execute
    /// late, their result 2 cycles after the early one. Latencies: ALU 1,
    /// `ld` 3, `mul` 3; a misprediction 3. The issue clock after each
    /// instruction, worked by hand; without `late_alu` the same programs
    /// time as they always did.
    #[test]
    fn late_alu_hand_worked() {
        use crate::cpi::{CpiAccount, CpiPart};
        use retrace_testkit::asm::inst;
        let text = |late: &str| {
            format!(
                "name = \"x\"\nxlen = [64]\n{late}[latency]\nload_double = 3\nmul = 3\n\
                 [branch]\nmispredict_penalty = 3\n"
            )
        };
        let late = CoreModel::from_toml(
            &text("late_alu = [\"alu\", \"shift\", \"branch\"]\nlate_alu_stages = 2\n"),
            "c.toml",
        )
        .unwrap();
        let early = CoreModel::from_toml(&text(""), "c.toml").unwrap();
        assert_eq!(late.late_alu.stages, 2);
        assert_eq!(early.late_alu, crate::LateAlu::NONE);
        let none = Events::default();
        let wrong = Events {
            mispredict: true,
            ..none
        };
        // The issue clock after each instruction, on `model`; the
        // accounting agrees and the replay from every cut point too.
        let after = |model: &CoreModel, program: &[(Inst, Events)]| {
            let mut p = Pipeline::new();
            let mut q = Pipeline::new();
            let mut acct = CpiAccount::default();
            let mut clocks = Vec::new();
            for (k, (i, ev)) in program.iter().enumerate() {
                let pc = 0x1000 + 4 * k as u64;
                let mut r = Pipeline::from_signature(&p.signature());
                let base = p.cycle();
                p.issue(model, pc, i, *ev);
                r.issue(model, pc, i, *ev);
                assert_eq!(base + r.cycle(), p.cycle(), "cut before {k}");
                assert_eq!(r.signature(), p.signature(), "cut before {k}");
                q.issue_accounting(model, pc, i, *ev, &mut acct);
                clocks.push(p.cycle());
            }
            assert_eq!(p, q);
            assert_eq!(acct.stack.total(), p.cycle());
            (clocks, acct.stack)
        };
        let plain = |model: &CoreModel, is: &[Inst]| {
            after(model, &is.iter().map(|&i| (i, none)).collect::<Vec<_>>()).0
        };
        let add = |rd, rs1| inst(Op::Add, rd, rs1, rs1, 0);
        let ld = |rd, rs1| inst(Op::Ld, rd, rs1, 0, 0);
        let mul = |rd, rs1| inst(Op::Mul, rd, rs1, rs1, 0);
        let slli = |rd, rs1| inst(Op::Slli, rd, rs1, 0, 3);
        let beq = |rs1| inst(Op::Beq, 0, rs1, 0, 64);
        // ALU → ALU: back to back, both early (x5 ready at 1, the second
        // issues at 1 with it ready).
        assert_eq!(plain(&late, &[add(5, 1), add(6, 5)]), [1, 2]);
        assert_eq!(plain(&early, &[add(5, 1), add(6, 5)]), [1, 2]);
        // Load → ALU: x5 ready at 3; the add issues at max(1, 3 − 2) = 1,
        // late (x5 not ready at 1), its result at 1 + 1 + 2 = 4. Without
        // late execution it waits until 3. The load-use wait is gone from
        // the account.
        assert_eq!(plain(&late, &[ld(5, 1), add(6, 5)]), [1, 2]);
        assert_eq!(plain(&early, &[ld(5, 1), add(6, 5)]), [1, 4]);
        // Late ALU → load address: x6 ready at 4 for an address, so the
        // load after an independent add issues at 4 (early: the add waits
        // until 3, x6 at 4, the independent add at 4, the load at 5).
        let chain = [ld(5, 1), add(6, 5), add(8, 9), ld(7, 6)];
        assert_eq!(plain(&late, &chain), [1, 2, 3, 5]);
        assert_eq!(plain(&early, &chain), [1, 4, 5, 6]);
        let (_, stack) = after(&late, &chain.map(|i| (i, none)));
        assert_eq!(stack.get(CpiPart::Interlock), 1);
        assert_eq!(stack.get(CpiPart::LoadUse), 0);
        // Late → late: each a cycle after the last (x6 at 4, the next add
        // at max(2, 4 − 2) = 2, x7 at 5, the next at 3, x8 at 6); a shift
        // too; then a load on x8 waits until 6.
        let chain = [ld(5, 1), add(6, 5), add(7, 6), slli(8, 7), ld(9, 8)];
        assert_eq!(plain(&late, &chain), [1, 2, 3, 4, 7]);
        assert_eq!(plain(&early, &chain), [1, 4, 5, 6, 7]);
        // A multiply cannot go late: it waits for the load (3), its
        // product is ready at 6; the add after it issues at
        // max(4, 6 − 2) = 4, late.
        let chain = [ld(5, 1), mul(6, 5), add(7, 6), ld(8, 7)];
        assert_eq!(plain(&late, &chain), [1, 4, 5, 8]);
        assert_eq!(plain(&early, &chain), [1, 4, 7, 8]);
        // A store waits for its data (x6, at 4) as for its address.
        let sd = inst(Op::Sd, 0, 2, 6, 0);
        assert_eq!(plain(&late, &[ld(5, 1), add(6, 5), sd]), [1, 2, 5]);
        // A branch on a load's result issues at 1, late. Predicted: done
        // at 2. Mispredicted: it resolves 2 cycles on, so 1 + 1 + 3 + 2
        // = 7 — what waiting for the load costs without late execution
        // (3 + 1 + 3). One that executes early pays 3 only.
        assert_eq!(plain(&late, &[ld(5, 1), beq(5)]), [1, 2]);
        let (clocks, stack) = after(&late, &[(ld(5, 1), none), (beq(5), wrong)]);
        assert_eq!(clocks, [1, 7]);
        assert_eq!(stack.get(CpiPart::Mispredict), 5);
        let (clocks, _) = after(&early, &[(ld(5, 1), none), (beq(5), wrong)]);
        assert_eq!(clocks, [1, 7]);
        let (clocks, _) = after(&late, &[(add(5, 1), none), (beq(5), wrong)]);
        assert_eq!(clocks, [1, 5]);
        // The trap drain waits for a late result too: x6 at 4, and this
        // core's trap_penalty is 0.
        let mut p = Pipeline::new();
        p.issue(&late, 0x1000, &ld(5, 1), none);
        p.issue(&late, 0x1004, &add(6, 5), none);
        p.trap(&late);
        assert_eq!(p.cycle(), 4);
    }

    /// Late execution on u74, two instructions a cycle: an add pairs with
    /// the add it depends on (executing late, its result at 0 + 1 + 2 =
    /// 3), a branch with the add that sets its operand; a load cannot feed
    /// the add beside it (ready at 3 > 0 + 2), a multiply cannot pair with
    /// its producer. Cut at every point, the replay agrees.
    #[test]
    fn late_alu_pairs_on_u74() {
        use retrace_testkit::asm::inst;
        let model = preset("u74").unwrap();
        assert_eq!(model.late_alu.stages, 2);
        let none = Events::default();
        let run = |program: &[(Inst, Events)]| {
            let mut p = Pipeline::new();
            let mut clocks = Vec::new();
            for (k, (i, ev)) in program.iter().enumerate() {
                let pc = 0x1000 + 4 * k as u64;
                let mut r = Pipeline::from_signature(&p.signature());
                let base = p.cycle();
                p.issue(&model, pc, i, *ev);
                r.issue(&model, pc, i, *ev);
                assert_eq!(base + r.cycle(), p.cycle(), "cut before {k}");
                assert_eq!(r.signature(), p.signature(), "cut before {k}");
                clocks.push(p.cycle());
            }
            clocks
        };
        let plain = |is: &[Inst]| run(&is.iter().map(|&i| (i, none)).collect::<Vec<_>>());
        let add = |rd, rs1| inst(Op::Add, rd, rs1, rs1, 0);
        let ld = |rd, rs1| inst(Op::Ld, rd, rs1, 0, 0);
        let mul = |rd, rs1| inst(Op::Mul, rd, rs1, rs1, 0);
        let beq = |rs1| inst(Op::Beq, 0, rs1, 0, 64);
        // add x5 at 0 (early, x5 at 1) and add x6, x5 beside it (late,
        // x6 at 3): one cycle; a load on x6 issues at 3.
        assert_eq!(plain(&[add(5, 1), add(6, 5)]), [1, 1]);
        assert_eq!(plain(&[add(5, 1), add(6, 5), ld(7, 6)]), [1, 1, 4]);
        // A third add on x6 starts the next cycle (the pair closed the
        // group) and still executes late: x6 at 3 > 1.
        assert_eq!(
            plain(&[add(5, 1), add(6, 5), add(7, 6), ld(8, 7)]),
            [1, 1, 2, 5]
        );
        // Load → add: x5 at 3, the add issues at 1 (not beside the load).
        assert_eq!(plain(&[ld(5, 1), add(6, 5)]), [1, 2]);
        // Load → add → add: x6 at 4, the second add at 2.
        assert_eq!(plain(&[ld(5, 1), add(6, 5), add(7, 6)]), [1, 2, 3]);
        // Multiply → add: the product at 3, the add at 1, late.
        assert_eq!(plain(&[mul(5, 1), add(6, 5)]), [1, 2]);
        // Add → multiply: the multiply cannot go late; at 1.
        assert_eq!(plain(&[add(5, 1), mul(6, 5)]), [1, 2]);
        // Add → branch: they pair, the branch late. Predicted: one cycle;
        // mispredicted: 0 + 1 + 3 + 2 = 6.
        assert_eq!(plain(&[add(5, 1), beq(5)]), [1, 1]);
        let wrong = Events {
            mispredict: true,
            ..none
        };
        assert_eq!(run(&[(add(5, 1), none), (beq(5), wrong)]), [1, 6]);
        // An independent add and a branch: the branch executes early.
        assert_eq!(run(&[(add(5, 1), none), (beq(6), wrong)]), [1, 4]);
    }

    /// The signature is all the state there is, with late execution too:
    /// pseudo-random programs over a few registers (ALU, shifts, loads,
    /// stores, multiplies, divides, branches, jalr, FP), with random
    /// events, cut at every point and resumed from the signature, take
    /// the cycles they take uncut, on every preset and on u74 with the
    /// late unit 1 to 3 stages away.
    #[test]
    fn late_alu_cuts_anywhere() {
        use retrace_testkit::asm::inst;
        let mut models: Vec<CoreModel> = PRESETS.iter().map(|(n, _)| preset(n).unwrap()).collect();
        for stages in [1, 3] {
            let mut m = preset("u74").unwrap();
            m.late_alu = crate::LateAlu::new(
                &[
                    crate::TimingClass::Alu,
                    crate::TimingClass::Shift,
                    crate::TimingClass::Branch,
                    crate::TimingClass::Mul,
                    crate::TimingClass::FpAddD,
                ],
                stages,
            );
            models.push(m);
        }
        let ops = [
            Op::Add,
            Op::Addi,
            Op::Sll,
            Op::Ld,
            Op::Lw,
            Op::Sd,
            Op::Mul,
            Op::Div,
            Op::Beq,
            Op::Bne,
            Op::Jalr,
            Op::FaddD,
            Op::Fld,
            Op::FmvXD,
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for model in &models {
            for _ in 0..200 {
                let program: Vec<(Inst, Events)> = (0..24)
                    .map(|_| {
                        let r = next();
                        let reg = |k: u32| 5 + (r >> k) as u8 % 4;
                        let op = ops[(r % ops.len() as u64) as usize];
                        let ev = Events {
                            fetch_miss: r >> 40 & 15 == 0,
                            data_miss: r >> 44 & 7 == 0,
                            taken: r >> 47 & 1 == 0,
                            mispredict: r >> 48 & 3 == 0,
                            fallthrough_len: 4,
                        };
                        (inst(op, reg(8), reg(16), reg(24), 0), ev)
                    })
                    .collect();
                let mut whole = Pipeline::new();
                for (k, (i, ev)) in program.iter().enumerate() {
                    whole.issue(model, 0x1000 + 4 * k as u64, i, *ev);
                }
                for cut in 0..=program.len() {
                    let mut p = Pipeline::new();
                    for (k, (i, ev)) in program[..cut].iter().enumerate() {
                        p.issue(model, 0x1000 + 4 * k as u64, i, *ev);
                    }
                    let mut q = Pipeline::from_signature(&p.signature());
                    for (k, (i, ev)) in program.iter().enumerate().skip(cut) {
                        q.issue(model, 0x1000 + 4 * k as u64, i, *ev);
                    }
                    assert_eq!(
                        p.cycle() + q.cycle(),
                        whole.cycle(),
                        "{} cut {cut}",
                        model.name
                    );
                    assert_eq!(q.signature(), whole.signature(), "{} cut {cut}", model.name);
                }
            }
        }
    }

    /// A core description refuses an issue width other than 1 or 2, a
    /// `[pipes]` table on a single-issue core, and a pipe other than A, B,
    /// AB; unlisted classes take either pipe.
    #[test]
    fn issue_width_and_pipes_are_checked() {
        let base = "name = \"x\"\nxlen = [64]\n";
        for (body, want) in [
            ("issue_width = 3\n", "issue_width"),
            ("issue_width = 0\n", "issue_width"),
            ("[pipes]\nalu = \"A\"\n", "pipes"),
            ("issue_width = 2\n[pipes]\nalu = \"C\"\n", "AB"),
            ("issue_width = 2\n[pipes]\nalus = \"A\"\n", "alu"),
        ] {
            let msg = CoreModel::from_toml(&format!("{base}{body}"), "c.toml")
                .unwrap_err()
                .to_string();
            assert!(msg.contains(want), "{body}: {msg}");
        }
        let m = CoreModel::from_toml(
            &format!("{base}issue_width = 2\n[pipes]\nmul = \"B\"\n"),
            "c.toml",
        )
        .unwrap();
        use crate::model::{Pipes, TimingClass};
        assert_eq!(m.pipes.get(TimingClass::Mul), Pipes::B);
        assert_eq!(m.pipes.get(TimingClass::Alu), Pipes::AB);
        assert_eq!(OpFacts::of(&m, Op::Mul).pipe, 2);
        let one = CoreModel::from_toml(base, "c.toml").unwrap();
        assert_eq!(one.issue_width, 1);
        assert_eq!(OpFacts::of(&one, Op::Mul).pipe, 0);
    }

    /// FP registers are scoreboarded apart from the integer ones (`f5` is
    /// not `x5`), a fused multiply-add waits for its third operand, and a
    /// non-pipelined FP divider holds back the next divide but not the
    /// instructions between; the accounting puts those waits in `fp`.
    #[test]
    fn fp_registers_and_the_fp_divider() {
        use crate::cpi::{CpiAccount, CpiPart};
        use retrace_testkit::asm::inst;
        let model = preset("rocket").unwrap();
        let run = |program: &[Inst]| {
            let mut p = Pipeline::new();
            let mut acct = CpiAccount::default();
            for i in program {
                p.issue_accounting(&model, 0x1000, i, Events::default(), &mut acct);
            }
            assert_eq!(acct.stack.total(), p.cycle());
            (p.cycle(), acct.stack)
        };
        // fmul.d f5 (latency 7), then add x6, x5, x5: no wait.
        let fmul = inst(Op::FmulD, 5, 1, 2, 7);
        let (c, _) = run(&[fmul, inst(Op::Add, 6, 5, 5, 0)]);
        assert_eq!(c, 2);
        // fadd.d f6, f5, f5 waits for the product: issues at 7.
        let (c, s) = run(&[fmul, inst(Op::FaddD, 6, 5, 5, 7)]);
        assert_eq!(c, 8);
        assert_eq!(s.get(CpiPart::Fp), 6);
        // lw x5 then fadd on f5: no wait; fmv.x.d from f5 after the fmul
        // waits, and its integer result (latency 2) delays the add after.
        let (c, _) = run(&[inst(Op::Lw, 5, 2, 0, 0), inst(Op::FaddD, 6, 5, 5, 7)]);
        assert_eq!(c, 2);
        let (c, _) = run(&[fmul, inst(Op::FmvXD, 7, 5, 0, 0), inst(Op::Add, 8, 7, 7, 0)]);
        assert_eq!(c, 7 + 2 + 1);
        // fmadd.d f8, f1, f2, f5 (rs3 = 5 in imm bits 3..8) waits for f5.
        let fma = inst(Op::FmaddD, 8, 1, 2, 5 << 3 | 7);
        let (c, _) = run(&[fmul, fma]);
        assert_eq!(c, 8);
        let fma_other = inst(Op::FmaddD, 8, 1, 2, 6 << 3 | 7);
        let (c, _) = run(&[fmul, fma_other]);
        assert_eq!(c, 2);
        // f0 is an ordinary register: a wait on it is a wait.
        let (c, _) = run(&[inst(Op::FmulD, 0, 1, 2, 7), inst(Op::FaddD, 6, 0, 0, 7)]);
        assert_eq!(c, 8);
        // Two independent fdiv.d (busy 20): the second waits for the unit;
        // an add between them does not.
        let fdiv = |rd| inst(Op::FdivD, rd, 1, 2, 7);
        let (c, s) = run(&[fdiv(10), inst(Op::Add, 6, 5, 5, 0), fdiv(11)]);
        assert_eq!(c, 21);
        assert_eq!(s.get(CpiPart::Fp), 18);
        // On cv32e40p the FPU takes one operation at a time: an fadd.s
        // after an fdiv.s (latency and busy 19) waits for it even when
        // independent, an integer add does not, nor does an FP load.
        let cv = preset("cv32e40p").unwrap();
        let time = |program: &[Inst]| {
            let mut p = Pipeline::new();
            for i in program {
                p.issue(&cv, 0x1000, i, Events::default());
            }
            p.cycle()
        };
        let fdiv_s = inst(Op::FdivS, 10, 1, 2, 7);
        assert_eq!(time(&[fdiv_s, inst(Op::FaddS, 6, 5, 5, 7)]), 20);
        assert_eq!(time(&[fdiv_s, inst(Op::Add, 6, 5, 5, 0)]), 2);
        assert_eq!(time(&[fdiv_s, inst(Op::Flw, 6, 5, 0, 0)]), 2);
        assert_eq!(time(&[fdiv_s, inst(Op::FaddS, 6, 10, 5, 7)]), 20);
        // The trap drain waits for the divider's last result.
        let mut p = Pipeline::new();
        p.issue(&model, 0x1000, &fdiv(10), Events::default());
        assert_eq!(p.signature().0.len(), 2, "{:?}", p.signature());
        let mut q = Pipeline::from_signature(&p.signature());
        q.trap(&model);
        assert_eq!(q.cycle(), 19 + u64::from(model.trap_penalty));
    }

    /// The tabulated facts agree with the instruction's own answers for
    /// every operation and a spread of operand values, x0 included.
    #[test]
    fn op_facts_match_the_instruction() {
        for (name, _) in PRESETS {
            let model = preset(name).unwrap();
            let table = OpTable::new(&model);
            for &op in Op::ALL {
                for (rd, rs1, rs2, imm) in [(0, 0, 0, 0), (1, 5, 0, 0), (0, 1, 7, 0), (5, 1, 2, 8)]
                {
                    let inst = retrace_testkit::asm::inst(op, rd, rs1, rs2, imm);
                    let f = table.get(op);
                    let class = inst.class();
                    assert_eq!(f.latency, model.latency.get(class), "{op:?}");
                    assert_eq!(f.occupancy, model.occupancy.get(class), "{op:?}");
                    let late = model.late_alu.covers(class);
                    assert_eq!(u32::from(f.late), if late { 2 } else { 0 }, "{op:?}");
                    assert_eq!(f.flow(&inst), inst.flow(), "{op:?}");
                    assert_eq!(f.mem, inst.mem().is_some(), "{op:?}");
                    // Scoreboard slots: x0 is no register, f0 is slot 32.
                    let slot = |r: u8, file: u8| {
                        let s = r | file;
                        (s != 0).then_some(s)
                    };
                    let reads = [
                        f.reads_rs1.then(|| slot(rs1, f.rs1_file)).flatten(),
                        f.reads_rs2.then(|| slot(rs2, f.rs2_file)).flatten(),
                        f.reads_rs3
                            .then(|| slot(inst.rs3().unwrap(), FP_BASE))
                            .flatten(),
                    ];
                    let mut want: Vec<u8> = inst.reads().into_iter().flatten().collect();
                    want.extend(inst.fp_reads().into_iter().flatten().map(|r| r | FP_BASE));
                    let mut got: Vec<u8> = reads.into_iter().flatten().collect();
                    want.sort_unstable();
                    got.sort_unstable();
                    assert_eq!(got, want, "{op:?} reads");
                    let writes = f.writes_rd.then(|| slot(rd, f.rd_file)).flatten();
                    let want = inst.writes().or(inst.fp_writes().map(|r| r | FP_BASE));
                    assert_eq!(writes, want, "{op:?} writes");
                    assert_eq!(f.unit != 0, Unit::of(class, &model).is_some());
                }
            }
        }
    }
}
