//! The functional engine's half of `--check`: the executed pc sequence of a
//! run, summarised as a [`PcSequence`] (the replay builds the other half);
//! and a run followed along the partial-program table ([`check_table`],
//! `retrace pp --check`).

use crate::observer::{CodeEvent, Observer, Retired, TrapEvent};
use crate::{Console, HostConfig, LoadError, Machine, MachineConfig, RunResult};
use retrace_program::{CheckReport, Checker, PpTable};
use retrace_trace::PcSequence;

/// Observer that summarises every executed pc.
#[derive(Default)]
pub struct PcSequenceObserver(pub PcSequence);

impl Observer for PcSequenceObserver {
    #[inline]
    fn retire(&mut self, ev: &Retired<'_>) {
        self.0.push(ev.pc, ev.inst.raw);
    }
}

/// Run `elf` (at most `max_insns` instructions) and summarise its executed pc
/// sequence.
pub fn functional_pc_sequence(
    elf: &retrace_program::Elf,
    host: HostConfig,
    max_insns: Option<u64>,
) -> Result<(RunResult, PcSequence), LoadError> {
    let mut m = Machine::new(elf, &MachineConfig::default(), host, Console::null())?;
    let mut obs = PcSequenceObserver::default();
    let run = m.run(max_insns, &mut obs);
    Ok((run, obs.0))
}

/// Feeds hart 0's retired instructions and traps to a [`Checker`].
struct CheckObserver<'a, 't> {
    checker: &'a mut Checker<'t>,
}

impl Observer for CheckObserver<'_, '_> {
    #[inline]
    fn retire(&mut self, ev: &Retired<'_>) {
        if ev.hart == 0 {
            self.checker.retire(ev.pc, ev.next_pc);
        }
    }
    fn trap(&mut self, ev: &TrapEvent) {
        if ev.hart == 0 {
            match ev.handler {
                Some(_) if ev.cause.is_call() => self.checker.call_trap(),
                Some(h) => self.checker.trap(h),
                None => {}
            }
        }
    }
    const CODE: bool = true;
    fn code(&mut self, ev: &CodeEvent<'_>) {
        if ev.hart == 0 {
            self.checker.code(ev.pc, ev.len, ev.base, ev.window);
        }
    }
}

/// Run `elf` (hart 0, at most `max_insns` instructions) and follow `table`
/// along the run instruction by instruction; indirect targets the table
/// lacks are added to it as the run reaches them, as a replay would.
pub fn check_table(
    elf: &retrace_program::Elf,
    table: &mut PpTable,
    host: HostConfig,
    max_insns: Option<u64>,
) -> Result<(RunResult, CheckReport), LoadError> {
    let mut machine = Machine::new(elf, &MachineConfig::default(), host, Console::null())?;
    let mut checker = Checker::new(table);
    let run = machine.run(
        max_insns,
        &mut CheckObserver {
            checker: &mut checker,
        },
    );
    Ok((run, checker.finish()))
}
