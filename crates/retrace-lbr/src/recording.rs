//! The `.lbr` file: one recorded run's pair counts and how they were
//! obtained. A first line `retrace-lbr 1` names the kind and version; the
//! rest is one JSON object ([`Recording`]), so other tools can read it.

use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// First line of every `.lbr` file.
pub const FILE_TAG: &str = "retrace-lbr 1";

/// How pair counts were obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The control program counted every pair.
    Exact,
    /// Counts estimated from instruction-address samples of the code blocks.
    Sampled,
}

/// Both sides' pair counts: equal when nothing was lost.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Pairs the writer wrote (its own count, stored at exit).
    pub writer_pairs: u64,
    /// Pairs the control program read.
    pub reader_pairs: u64,
    /// Switch values the writer wrote (see [`PairCount::value`]).
    #[serde(default)]
    pub writer_values: u64,
    /// Switch values the control program read.
    #[serde(default)]
    pub reader_values: u64,
    /// Times the writer found the buffer full and waited.
    pub writer_waits: u64,
    /// Blocks run by threads other than the writing one (not recorded).
    pub foreign_calls: u64,
    /// Blocks run after the writer's exit handler (not recorded).
    pub late_calls: u64,
    /// Whether the writer's exit handler ran (otherwise its last pairs were
    /// never published and `writer_pairs` is unknown).
    pub writer_finished: bool,
}

/// What sampling saw.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Sampling {
    /// Sampling period, nanoseconds of the control thread's CPU time.
    pub period_ns: u64,
    /// All samples of the control thread.
    pub samples: u64,
    /// Samples whose address fell in a code block.
    pub in_blocks: u64,
    /// Samples the kernel dropped (its ring was full).
    pub lost: u64,
    /// Code blocks made (distinct pairs).
    pub blocks: u64,
}

/// One pair: a transition from the block of site `from` to the block of
/// site `to` (file addresses of the writer; `from == 0` is the first block
/// of the run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairCount {
    /// Previous site (file address).
    pub from: u64,
    /// This site (file address).
    pub to: u64,
    /// The value the `switch` of `from`'s block dispatched on, when the
    /// writer was built with trace-cmp (it tells apart the dispatch's
    /// machine paths between the same two sites).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub value: Option<u64>,
    /// How the comparisons `from`'s block made came out, when the writer
    /// was built with trace-cmp: bits 0-2 their number (7: seven or more),
    /// then three bits per comparison for the last four, newest first
    /// (bit 0 equal, bit 1 below unsigned, bit 2 below signed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub relations: Option<u16>,
    /// Times it occurred: exact, or estimated from samples.
    pub count: u64,
    /// The exact count, when the run kept one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub exact: Option<u64>,
    /// Samples that landed in this pair's code block.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub samples: Option<u64>,
}

/// Pairs in a row: the blocks of the sites `before` ran (nearest first),
/// then that of `from`, then that of `to` (file addresses; 0 for a site
/// before the run's first block). Counted exactly, in exact recordings
/// only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainCount {
    /// The sites before the pair, nearest first.
    pub before: Vec<u64>,
    /// The pair's previous site.
    pub from: u64,
    /// The pair's site.
    pub to: u64,
    /// Times they ran in this order.
    pub count: u64,
    /// Where the pair returns from its first site's function: the site of
    /// the block that called it, as the control program's call stack
    /// followed the run; 0 for a pair that does not return (and in older
    /// files).
    #[serde(skip_serializing_if = "is_zero", default)]
    pub caller: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One recorded run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Recording {
    /// The writer that ran (as given).
    pub writer: String,
    /// FNV-1a 64 of the writer file's bytes, hex: ties the counts to it.
    pub writer_hash: String,
    /// The analysed program (the ordinary build of the same sources) named
    /// at record time, whose addresses `convert` writes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub analysed: Option<String>,
    /// FNV-1a 64 of the analysed program's bytes, hex.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub analysed_hash: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// How counts were obtained.
    pub method: Method,
    /// Run-time minus file address of the writer's code (PIE load bias).
    pub load_bias: u64,
    /// The writer's exit code, or the signal that ended it (negative).
    pub exit: i32,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// The two sides' counts.
    pub counts: Counts,
    /// Sampling details (sampled recordings).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sampling: Option<Sampling>,
    /// Every distinct pair with its count, sorted by (from, to, value).
    pub pairs: Vec<PairCount>,
    /// Every distinct chain of two pairs with its count, sorted (exact
    /// recordings; empty in sampled ones and in older files).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub chains: Vec<ChainCount>,
}

impl Recording {
    /// Write the file.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let mut text = String::from(FILE_TAG);
        text.push('\n');
        text.push_str(&serde_json::to_string(self).expect("a recording serialises"));
        text.push('\n');
        std::fs::write(path, text).map_err(|e| Error::io(path, e))
    }

    /// Read a file written by [`Recording::save`].
    pub fn load(path: &Path) -> Result<Recording, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            Error::BadInput(format!(
                "{} is not a retrace lbr recording (binary data; record one with `retrace lbr record`)",
                path.display()
            ))
        })?;
        let (tag, body) = text.split_once('\n').unwrap_or((text, ""));
        if tag != FILE_TAG {
            return Err(Error::BadInput(format!(
                "{} is not a retrace lbr recording (its first line is not `{FILE_TAG}`; record one with `retrace lbr record`)",
                path.display()
            )));
        }
        serde_json::from_str(body).map_err(|e| {
            Error::BadInput(format!(
                "{} is damaged or truncated ({e}); record it again",
                path.display()
            ))
        })
    }
}

/// FNV-1a 64 of `bytes`, hex.
pub fn fnv_hex(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}
