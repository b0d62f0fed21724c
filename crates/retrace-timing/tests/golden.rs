//! Golden timing tests: short instruction sequences on each preset, with the
//! expected cycle counts derived by hand in the comments from the preset's
//! documented numbers. They pin down the rules of `Pipeline::issue`.
//!
//! The counts live in `tests/golden/TEST.txt`, one `case: cycles` line
//! each; `RETRACE_BLESS=1` rewrites them after an intended change of a
//! rule (then check the new numbers against the comments here, and update
//! whichever is wrong).

use retrace_isa::{Inst, Op};
use retrace_timing::{preset, CoreModel, CoreState, Resolved};

use retrace_testkit::asm::{inst as i, A0, A1, A2, A3, RA, SP};
use retrace_testkit::golden::Values;

/// One step of a sequence: instruction and what its execution decided.
struct Step(Inst, Resolved);

fn alu(op: Op, rd: u8, rs1: u8, rs2: u8) -> Step {
    Step(i(op, rd, rs1, rs2, 0), Resolved::fall_through(0))
}
fn load(op: Op, rd: u8, addr: u64) -> Step {
    Step(
        i(op, rd, SP, 0, 0),
        Resolved {
            next_pc: 0,
            taken: false,
            mem_addr: addr,
            fallthrough_len: 0,
        },
    )
}
/// `jal ra, 64`, going to `next`.
fn jal(next: u64) -> Step {
    Step(i(Op::Jal, RA, 0, 0, 64), Resolved::fall_through(next))
}
/// `ret` (`jalr x0, 0(ra)`), going to `next`.
fn ret(next: u64) -> Step {
    Step(i(Op::Jalr, 0, RA, 0, 0), Resolved::fall_through(next))
}
fn branch(taken: bool, backward: bool) -> Step {
    let imm = if backward { -8 } else { 8 };
    Step(
        i(Op::Beq, 0, A0, A1, imm),
        Resolved {
            next_pc: 0,
            taken,
            mem_addr: 0,
            fallthrough_len: 0,
        },
    )
}

/// Cycles of a sequence; every instruction is fetched from `pc`, `pc+4`, …
fn cycles(model: &CoreModel, steps: &[Step]) -> u64 {
    let mut core = CoreState::new(model);
    for (k, Step(inst, out)) in steps.iter().enumerate() {
        core.step(0x8000_0000 + 4 * k as u64, inst, *out);
    }
    core.cycles()
}

/// The golden values of one test, in `tests/golden/{name}.txt`.
fn golden(name: &str) -> Values {
    Values::new(format!(
        "{}/tests/golden/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn no_caches(name: &str) -> CoreModel {
    let mut m = preset(name).unwrap();
    m.icache = None;
    m.dcache = None;
    m
}

#[test]
fn ideal_is_one_cycle_per_instruction() {
    let mut g = golden("ideal_is_one_cycle_per_instruction");
    let m = preset("ideal").unwrap();
    // Dependent chain, load-use, divide, taken branch: all 1 cycle each.
    let seq = [
        load(Op::Lw, A0, 0x8020_0000),
        alu(Op::Add, A1, A0, A0),
        alu(Op::Div, A2, A1, A0),
        branch(true, true),
    ];
    g.add(
        "load, dependent add, divide, taken branch",
        cycles(&m, &seq),
    );
    g.assert();
}

#[test]
fn inorder5_load_use_costs_one_bubble() {
    let mut g = golden("inorder5_load_use_costs_one_bubble");
    let m = preset("inorder5").unwrap();
    // lw issues at 0 (value ready at 2); add needs a0: issues at 2; ends 3.
    g.add(
        "lw, dependent add",
        cycles(
            &m,
            &[load(Op::Lw, A0, 0x8020_0000), alu(Op::Add, A1, A0, A0)],
        ),
    );
    // Independent add: back to back, 2.
    g.add(
        "lw, independent add",
        cycles(
            &m,
            &[load(Op::Lw, A0, 0x8020_0000), alu(Op::Add, A1, A2, A2)],
        ),
    );
    // Dependent ALU chain forwards: 3 adds, 3 cycles.
    let chain = [
        alu(Op::Add, A0, A1, A2),
        alu(Op::Add, A0, A0, A2),
        alu(Op::Add, A0, A0, A2),
    ];
    g.add("three dependent adds", cycles(&m, &chain));
    g.assert();
}

#[test]
fn inorder5_mul_div_and_control() {
    let mut g = golden("inorder5_mul_div_and_control");
    let m = preset("inorder5").unwrap();
    // mul at 0 (ready 3); dependent mul at 3; ends 4.
    g.add(
        "mul, dependent mul",
        cycles(&m, &[alu(Op::Mul, A0, A1, A2), alu(Op::Mul, A3, A0, A0)]),
    );
    // div blocks 34 cycles; an independent add issues at 34; ends 35.
    g.add(
        "div, independent add",
        cycles(&m, &[alu(Op::Div, A0, A1, A2), alu(Op::Add, A3, A1, A2)]),
    );
    // Static not-taken: taken branch 1 + 2 flush = 3; not taken 1.
    g.add("taken backward branch", cycles(&m, &[branch(true, true)]));
    g.add(
        "not-taken backward branch",
        cycles(&m, &[branch(false, true)]),
    );
    // jal: 1 + 1 bubble; jalr (ret): 1 + 2.
    g.add(
        "jal, ret",
        cycles(&m, &[jal(0x8000_0040), ret(0x8000_0004)]),
    );
    g.assert();
}

#[test]
fn picorv32_follows_the_cpi_table() {
    let mut g = golden("picorv32_follows_the_cpi_table");
    let m = preset("picorv32").unwrap();
    // add 3 + lw 5 + dependent add 3 (not pipelined: no extra wait) +
    // taken branch 5 + not-taken branch 3 + sw 5 + jal 3 + jalr 6 = 33.
    let seq = [
        alu(Op::Add, A0, A1, A2),
        load(Op::Lw, A0, 0x8020_0000),
        alu(Op::Add, A1, A0, A0),
        branch(true, false),
        branch(false, false),
        Step(i(Op::Sw, 0, SP, A0, 0), Resolved::fall_through(0)),
        jal(0),
        ret(0),
    ];
    g.add(
        "add lw add, taken and not-taken branch, sw jal jalr",
        cycles(&m, &seq),
    );
    // slli 3 (BARREL_SHIFTER: a shift is an ALU operation; the preset
    // once charged 4), mul 40, mulh 72, div 40.
    let mdu = [
        Step(i(Op::Slli, A0, A0, 0, 3), Resolved::fall_through(0)),
        alu(Op::Mul, A0, A0, A1),
        alu(Op::Mulh, A0, A0, A1),
        alu(Op::Div, A0, A0, A1),
    ];
    g.add("slli mul mulh div", cycles(&m, &mdu));
    // rdcycle (csrrs a0, cycle, x0) 4, one more than an ALU operation (the
    // preset once charged 3); a shift by register 3, like an add.
    let counters = [
        Step(i(Op::Csrrs, A0, 0, 0, 0xc00), Resolved::fall_through(0)),
        alu(Op::Sll, A0, A0, A1),
        alu(Op::Add, A0, A0, A1),
    ];
    g.add("rdcycle sll add", cycles(&m, &counters));
    g.assert();
}

/// Cycles of a sequence at explicit addresses (compressed code: each step
/// says where its instruction is and how long it is).
fn cycles_at(model: &CoreModel, steps: &[(u64, Step)]) -> u64 {
    let mut core = CoreState::new(model);
    for (pc, Step(inst, out)) in steps {
        core.step(*pc, inst, *out);
    }
    core.cycles()
}

/// A 16-bit (compressed) form of a step.
fn c(Step(inst, out): Step) -> Step {
    Step(Inst { len: 2, ..inst }, out)
}

/// A conditional branch taken or not, whose fall-through instruction is
/// `fallthrough_len` bytes long (as the code says).
fn branch_ft(taken: bool, fallthrough_len: u8) -> Step {
    Step(
        i(Op::Beq, 0, A0, A1, 0x7e),
        Resolved {
            next_pc: 0,
            taken,
            mem_addr: 0,
            fallthrough_len,
        },
    )
}

/// PicoRV32 with `COMPRESSED_ISA`: a 32-bit instruction at an address ≡ 2
/// (mod 4) spans two memory words and costs one cycle more, however it is
/// reached; a taken conditional branch whose fall-through is such an
/// instruction costs one more again (the core finishes prefetching it).
/// Every total below was measured on the RTL (Verilator, the preset's
/// configuration), from the start of the first instruction to the start of
/// the next one after the last, which is never split: the RTL charges a
/// split instruction's second fetch before it starts, the model to the
/// instruction itself, and the two agree on such a span.
#[test]
fn picorv32_compressed_fetch() {
    let mut g = golden("picorv32_compressed_fetch");
    let m = preset("picorv32").unwrap();
    let add = || alu(Op::Add, A0, A1, A2);
    let b = 0x8000_0000u64;
    // c.add @0, add @2 (split: 4), add @6 (split: 4), c.add @a: RTL 14.
    let seq = [
        (b, c(add())),
        (b + 2, add()),
        (b + 6, add()),
        (b + 0xa, c(add())),
    ];
    g.add("c.add, two split adds, c.add", cycles_at(&m, &seq));
    // Compressed instructions cost what their 32-bit forms do, at either
    // alignment: c.add @2, c.add @4, add @6 (split): RTL 3 + 3 + 4 = 10.
    let seq = [(b + 2, c(add())), (b + 4, c(add())), (b + 6, add())];
    g.add("c.add @2, c.add @4, split add", cycles_at(&m, &seq));
    // c.add @0, lw @2 (split: 6), sw @6 (split: 6), c.add @a: RTL 18.
    let seq = [
        (b, c(add())),
        (b + 2, load(Op::Lw, A0, 0x8020_0000)),
        (
            b + 6,
            Step(i(Op::Sw, 0, SP, A0, 0), Resolved::fall_through(0)),
        ),
        (b + 0xa, c(add())),
    ];
    g.add("c.add, split lw, split sw, c.add", cycles_at(&m, &seq));
    // The second fetch is not hidden under a long operation: c.add @0,
    // mul @2 (split: 41), add @6 (split: 4): RTL 48.
    let seq = [
        (b, c(add())),
        (b + 2, alu(Op::Mul, A0, A2, A3)),
        (b + 6, add()),
    ];
    g.add("c.add, split mul, split add", cycles_at(&m, &seq));
    // Landing on a split instruction: jal 3 + add 4 = 7; jalr 6 + 4 = 10;
    // a taken branch (aligned, aligned fall-through) 5 + 4 = 9.
    g.add(
        "jal to a split add",
        cycles_at(&m, &[(b, jal(b + 0x102)), (b + 0x102, add())]),
    );
    g.add(
        "jalr to a split add",
        cycles_at(&m, &[(b, ret(b + 0x102)), (b + 0x102, add())]),
    );
    g.add(
        "taken branch to a split add",
        cycles_at(&m, &[(b, branch_ft(true, 4)), (b + 0x102, add())]),
    );
    // Landing on a compressed instruction at 2 mod 4 costs nothing more:
    // jal 3 + c.add 3 = 6.
    g.add(
        "jal to c.add @2",
        cycles_at(&m, &[(b, jal(b + 0x102)), (b + 0x102, c(add()))]),
    );
    // A taken branch whose fall-through is split waits for its prefetch:
    // c.add @0 3, beq @2 (split, taken: 5 + 1 + 1), add @0x100 3: RTL 13.
    let seq = [
        (b, c(add())),
        (b + 2, branch_ft(true, 4)),
        (b + 0x100, add()),
    ];
    g.add("split beq taken, split fall-through", cycles_at(&m, &seq));
    // The same branch to its own fall-through (`beq x0, x0, .+4`): the
    // two penalties and the target's: c.add 3 + beq 7 + add @6 4 = 14.
    let seq = [(b, c(add())), (b + 2, branch_ft(true, 4)), (b + 6, add())];
    g.add(
        "split beq taken to its split fall-through",
        cycles_at(&m, &seq),
    );
    // A compressed branch @0 taken, the fall-through @2 a 32-bit
    // instruction: c.beqz 5 + 1, add @0x100 3: RTL 9. With a compressed
    // fall-through, no wait: 8.
    let seq = [(b, c(branch_ft(true, 4))), (b + 0x100, add())];
    g.add("c.beqz taken, split fall-through", cycles_at(&m, &seq));
    let seq = [(b, c(branch_ft(true, 2))), (b + 0x100, add())];
    g.add("c.beqz taken, compressed fall-through", cycles_at(&m, &seq));
    // Not taken, the split fall-through is simply the next instruction:
    // c.add 3, bne @2 (split) 4, add @6 (split) 4, c.add @a 3: RTL 14.
    let seq = [
        (b, c(add())),
        (b + 2, branch_ft(false, 4)),
        (b + 6, add()),
        (b + 0xa, c(add())),
    ];
    g.add(
        "split beq not taken, split fall-through",
        cycles_at(&m, &seq),
    );
    // jal does not prefetch: c.add 3 + jal @2 (split) 4 + add @0x100 3 = 10.
    let seq = [(b, c(add())), (b + 2, jal(b + 0x100)), (b + 0x100, add())];
    g.add("split jal, split fall-through", cycles_at(&m, &seq));
    g.assert();
}

#[test]
fn rocket_latencies_and_predictor() {
    let mut g = golden("rocket_latencies_and_predictor");
    let m = no_caches("rocket");
    // lb: latency 3 → dependent add issues at 3, ends 4. lw: 2 → 3.
    g.add(
        "lb, dependent add",
        cycles(
            &m,
            &[load(Op::Lb, A0, 0x8020_0000), alu(Op::Add, A1, A0, A0)],
        ),
    );
    g.add(
        "lw, dependent add",
        cycles(
            &m,
            &[load(Op::Lw, A0, 0x8020_0000), alu(Op::Add, A1, A0, A0)],
        ),
    );
    // div latency 33 (RocketModel's WriteIDiv), occupancy 1: independent
    // add at 1, dependent add at 33, ends 34.
    g.add(
        "div, independent add, dependent add",
        cycles(
            &m,
            &[
                alu(Op::Div, A0, A1, A2),
                alu(Op::Add, A3, A1, A2),
                alu(Op::Add, A3, A0, A0),
            ],
        ),
    );
    // divw latency 34 (WriteIDiv32): the dependent add at 34, ends 35.
    g.add(
        "divw, dependent add",
        cycles(&m, &[alu(Op::Divw, A0, A1, A2), alu(Op::Add, A3, A0, A0)]),
    );
    // Bimodal starts weakly not-taken: the first taken outcome of one branch
    // is mispredicted (1 + 3), the next is predicted (1). Same pc both times.
    let mut core = CoreState::new(&m);
    let b = i(Op::Bne, 0, A0, A1, -8);
    let taken = Resolved {
        next_pc: 0x8000_0000,
        taken: true,
        mem_addr: 0,
        fallthrough_len: 0,
    };
    core.step(0x8000_0008, &b, taken);
    g.add("bne taken, first time", core.cycles());
    core.step(0x8000_0008, &b, taken);
    g.add("bne taken, second time", core.cycles());
    g.add("mispredicts", core.stats().mispredicts);
    g.assert();
}

/// The E31's manual figures: LW 2, LH/LB 3, CSR reads 3, MUL 5, divides
/// charged their maximum 33, a 3-cycle misprediction, a 2-way 16 KiB
/// I-cache with 64-byte lines.
#[test]
fn e31_follows_its_manual() {
    let mut g = golden("e31_follows_its_manual");
    let m = no_caches("e31");
    // lh: latency 3 → the dependent add issues at 3, ends 4; lw: 2 → 3.
    g.add(
        "lh, dependent add",
        cycles(
            &m,
            &[load(Op::Lh, A0, 0x8020_0000), alu(Op::Add, A1, A0, A0)],
        ),
    );
    g.add(
        "lw, dependent add",
        cycles(
            &m,
            &[load(Op::Lw, A0, 0x8020_0000), alu(Op::Add, A1, A0, A0)],
        ),
    );
    // csrr a0, mcycle: latency 3 → the dependent add issues at 3, ends 4.
    g.add(
        "csr read, dependent add",
        cycles(
            &m,
            &[
                Step(i(Op::Csrrs, A0, 0, 0, 0xb00), Resolved::fall_through(0)),
                alu(Op::Add, A1, A0, A0),
            ],
        ),
    );
    // mul latency 5: an independent add at 1, the dependent one at 5, ends 6.
    g.add(
        "mul, independent add, dependent add",
        cycles(
            &m,
            &[
                alu(Op::Mul, A0, A1, A2),
                alu(Op::Add, A3, A1, A2),
                alu(Op::Add, A3, A0, A0),
            ],
        ),
    );
    // div: the dependent add waits the maximum 33, ends 34.
    g.add(
        "div, dependent add",
        cycles(&m, &[alu(Op::Div, A0, A1, A2), alu(Op::Add, A3, A0, A0)]),
    );
    // The BHT starts weakly not-taken: a first taken branch costs 1 + 3.
    g.add("bne taken, first time", cycles(&m, &[branch(true, true)]));
    // 16 KiB, 2 ways, 64-byte lines: 128 sets, so lines 8 KiB apart share
    // a set. Three of them fetched in turn, then the first again: the
    // third evicted the first (LRU), so four misses of 1 + 20 each.
    let full = preset("e31").unwrap();
    let nop = || alu(Op::Addi, 0, 0, 0);
    let at = |pc: u64| (pc, nop());
    g.add(
        "three lines of one set, then the first again",
        cycles_at(
            &full,
            &[
                at(0x8000_0000),
                at(0x8000_2000),
                at(0x8000_4000),
                at(0x8000_0000),
            ],
        ),
    );
    g.assert();
}

/// u74's early and late ALU (`late_alu` alu, shift, branch; 2 stages):
/// ALU 1, `ld` 3 on pipe A, `mul` 3 on pipe B, ALU on either pipe; the
/// same sequences with `late_alu` off for comparison.
#[test]
fn u74_early_and_late_alu() {
    let mut g = golden("u74_early_and_late_alu");
    let m = no_caches("u74");
    let ld = |rd, base| {
        Step(
            i(Op::Ld, rd, base, 0, 0),
            Resolved {
                next_pc: 0,
                taken: false,
                mem_addr: 0x8020_0000,
                fallthrough_len: 0,
            },
        )
    };
    // ld at 0 (a0 ready at 3); the add cannot join it (3 > 0 + 2), issues
    // at max(1, 3 - 2) = 1 and executes late: ends 2, a1 ready at 4.
    g.add(
        "ld, dependent add",
        cycles(&m, &[ld(A0, SP), alu(Op::Add, A1, A0, A0)]),
    );
    // A load on a1 waits for it: at 4, ends 5.
    g.add(
        "ld, dependent add, ld on its result",
        cycles(&m, &[ld(A0, SP), alu(Op::Add, A1, A0, A0), ld(A2, A1)]),
    );
    // add a0 at 0 (early, ready 1); add a3, a0 pairs with it at 0 and
    // executes late (a3 ready at 3): 1 cycle.
    g.add(
        "add, dependent add",
        cycles(&m, &[alu(Op::Add, A0, A1, A2), alu(Op::Add, A3, A0, A0)]),
    );
    // A third add on a3: the group is full, so at max(1, 3 - 2) = 1,
    // late again; ends 2.
    let three = [
        alu(Op::Add, A0, A1, A2),
        alu(Op::Add, A3, A0, A0),
        alu(Op::Add, A2, A3, A3),
    ];
    g.add("three dependent adds", cycles(&m, &three));
    // A multiply cannot execute late: it waits for the load until 3; ends 4.
    g.add(
        "ld, dependent mul",
        cycles(&m, &[ld(A0, SP), alu(Op::Mul, A1, A0, A0)]),
    );
    // Without late execution: the add waits for the load until 3, ends
    // 4; the three adds take a cycle each (the second cannot pair), 3.
    let mut off = m.clone();
    off.late_alu = retrace_timing::LateAlu::NONE;
    g.add(
        "late_alu off: ld, dependent add",
        cycles(&off, &[ld(A0, SP), alu(Op::Add, A1, A0, A0)]),
    );
    g.add("late_alu off: three dependent adds", cycles(&off, &three));
    g.assert();
}

#[test]
fn rocket_return_address_stack() {
    let mut g = golden("rocket_return_address_stack");
    let m = no_caches("rocket");
    let call = jal(0x8000_0040);
    // The call at 0x8000_0000 pushes 0x8000_0004; the return goes there: the
    // RAS predicts it, no penalty: 2 cycles.
    let good = ret(0x8000_0004);
    g.add(
        "call, return to the pushed address",
        cycles(&m, &[call, good]),
    );
    // A return elsewhere (longjmp-like) costs the 3-cycle mispredict.
    let call = jal(0x8000_0040);
    let bad = ret(0x8000_0100);
    g.add("call, return elsewhere", cycles(&m, &[call, bad]));
    g.assert();
}

#[test]
fn rocket_cache_misses() {
    let mut g = golden("rocket_cache_misses");
    let full = preset("rocket").unwrap();
    // First fetch misses the I-cache: issue at 20, ends 21; the next three
    // instructions are in the same 64-byte line: 24 in all.
    let seq = [
        alu(Op::Add, A0, A1, A2),
        alu(Op::Add, A0, A1, A2),
        alu(Op::Add, A0, A1, A2),
        alu(Op::Add, A0, A1, A2),
    ];
    g.add("four adds, the first fetch misses", cycles(&full, &seq));
    // D-cache only: lw misses: blocks 20 (ends 21), value ready at 2 + 20 = 22;
    // the dependent add issues at 22, ends 23. A second lw in the same line
    // hits: +1; its dependent add waits 1 more: +2.
    let mut m = no_caches("rocket");
    m.dcache = full.dcache;
    let seq = [
        load(Op::Lw, A0, 0x8020_0000),
        alu(Op::Add, A1, A0, A0),
        load(Op::Lw, A2, 0x8020_0008),
        alu(Op::Add, A3, A2, A2),
    ];
    g.add(
        "lw miss, dependent add, lw hit, dependent add",
        cycles(&m, &seq),
    );
    g.assert();
}

/// A trap: the pipeline drains (the issue clock waits for the last result
/// in flight), then entering the handler costs `trap_penalty`; the
/// handler's first instruction issues into an empty pipeline.
#[test]
fn traps_drain_then_pay_the_penalty() {
    let mut g = golden("traps_drain_then_pay_the_penalty");
    // Steps `before`, a trap, then `after`.
    let trapped = |m: &CoreModel, before: &[Step], after: &[Step]| {
        let mut core = CoreState::new(m);
        let mut pc = 0x8000_0000;
        for Step(inst, out) in before {
            core.step(pc, inst, *out);
            pc += 4;
        }
        core.trap();
        for Step(inst, out) in after {
            core.step(0x8000_0100, inst, *out);
        }
        assert_eq!(core.stats().traps, 1);
        core.cycles()
    };
    let add = || alu(Op::Add, A3, A1, A2);
    // ideal: no penalty, nothing in flight: add 1, trap 0, add 1 = 2.
    let m = preset("ideal").unwrap();
    g.add("ideal: add, trap, add", trapped(&m, &[add()], &[add()]));
    // inorder5: add ends at 1; nothing in flight; penalty 3 → 4; add 5.
    let m = preset("inorder5").unwrap();
    g.add("inorder5: add, trap, add", trapped(&m, &[add()], &[add()]));
    // mul issues at 0, ends at 1 with its result ready at 3: the drain
    // waits until 3, the penalty makes 6, the handler's add ends at 7.
    g.add(
        "inorder5: mul, trap, add",
        trapped(&m, &[alu(Op::Mul, A0, A1, A2)], &[add()]),
    );
    // picorv32: add 3, trap 3, add 3 = 9.
    let m = preset("picorv32").unwrap();
    g.add("picorv32: add, trap, add", trapped(&m, &[add()], &[add()]));
    // rocket: div (latency 33) ends at 1; the drain waits until 33, the
    // penalty 5 makes 38; the handler's add that reads the quotient's
    // register issues at once (nothing in flight): 39.
    let m = no_caches("rocket");
    g.add(
        "rocket: div, trap, dependent add",
        trapped(&m, &[alu(Op::Div, A0, A1, A2)], &[alu(Op::Add, A3, A0, A0)]),
    );
    // A trap with nothing before it: just the penalty.
    g.add("rocket: trap, add", trapped(&m, &[], &[add()]));
    g.assert();
}
