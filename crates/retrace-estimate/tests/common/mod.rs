//! What this crate's integration tests share (`mod common;` in each).

use retrace_estimate::{estimate_trace_stepwise, Estimate, Fidelity};
use retrace_program::{Addr, PpTable};
use retrace_timing::CoreModel;

/// The step-by-step replay of `trace` on `core` at `fidelity` against
/// `memo`, the memoised replay's estimate: they must agree on everything but
/// the memo's own counters ([`Estimate::same_results`]). `Err` names the
/// program (`name`), the fidelity and both estimates.
pub fn stepwise_agrees(
    name: &str,
    table: &PpTable,
    entry: Addr,
    trace: &[u8],
    core: &CoreModel,
    fidelity: Fidelity,
    memo: &Estimate,
) -> Result<(), String> {
    let cores = std::slice::from_ref(core);
    let step = estimate_trace_stepwise(table, entry, trace, cores, fidelity, None)
        .map_err(|e| format!("{name} on {} ({fidelity}, step by step): {e}", core.name))?[0]
        .0;
    if memo.same_results(&step) {
        Ok(())
    } else {
        Err(format!(
            "{name} on {} ({fidelity}): memoised replay {memo:?}, step by step {step:?}",
            core.name
        ))
    }
}
