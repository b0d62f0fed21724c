//! The functional engine's half of `--check`: the executed pc sequence of a
//! run, summarised as a [`PcSequence`] (the replay builds the other half).

use crate::observer::{Observer, Retired};
use crate::{Console, HostConfig, LoadError, Machine, MachineConfig, RunResult};
use retrace_trace::PcSequence;

/// Observer that summarises every executed pc.
#[derive(Default)]
pub struct PcSequenceObserver(pub PcSequence);

impl Observer for PcSequenceObserver {
    #[inline]
    fn retire(&mut self, ev: &Retired<'_>) {
        self.0.push(ev.pc);
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
