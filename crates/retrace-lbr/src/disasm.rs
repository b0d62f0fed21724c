//! The writer binary's x86-64 code as `objdump -d` prints it: instructions
//! with their control-flow kind, functions, and the coverage call sites.
//!
//! Conversion needs only a little of each instruction (where it is, where
//! the next one starts, whether and where it branches), and `objdump`
//! (GNU binutils) is on every machine that has the compiler that built the
//! writer, so its text is parsed rather than adding an x86 decoder.

use crate::Error;
use rustc_hash::FxHashMap;
use std::path::Path;
use std::process::Command;

/// What an instruction does to control flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// Conditional jump to a known address (or falls through).
    Cond(u64),
    /// Unconditional jump to a known address.
    Jump(u64),
    /// Jump through a register or memory.
    JumpIndirect,
    /// Call to a known address.
    Call(u64),
    /// Call through a register or memory.
    CallIndirect,
    /// Return.
    Ret,
    /// Never continues (hlt, ud2).
    Stop,
}

/// One instruction.
#[derive(Clone, Copy, Debug)]
pub struct Insn {
    /// Its address.
    pub addr: u64,
    /// The next instruction's address.
    pub next: u64,
    /// Control flow.
    pub flow: Flow,
    /// Index of the function it belongs to in [`Code::functions`].
    pub func: u32,
}

/// A function symbol as objdump lists it.
#[derive(Clone, Debug)]
pub struct Function {
    /// Name.
    pub name: String,
    /// Entry address.
    pub entry: u64,
    /// Whether it calls the coverage callback (is instrumented).
    pub instrumented: bool,
}

/// The code of one binary.
#[derive(Debug, Default)]
pub struct Code {
    /// Instructions in address order.
    pub insns: Vec<Insn>,
    /// Functions in address order.
    pub functions: Vec<Function>,
    /// Instruction index by address.
    pub at: FxHashMap<u64, usize>,
    /// Targets of indirect jumps whose jump table was found, by jump address.
    pub tables: FxHashMap<u64, Vec<u64>>,
    /// Entry of `__sanitizer_cov_trace_pc`.
    pub callback: Option<u64>,
    /// Address of the callback's first `ret`.
    pub callback_ret: Option<u64>,
    /// Conditional moves and sets (`cmov…`, `set…`): where a build
    /// computes a condition without branching on it.
    pub selects: rustc_hash::FxHashSet<u64>,
    /// The constant each conditional jump's condition compares with, by
    /// jump address, where a `cmp $IMM,…` in the jump's own block sets its
    /// flags: the tests of one `switch` share a source line but not their
    /// constants, so this tells them apart across two builds.
    pub compared: FxHashMap<u64, i64>,
    /// The width in bits of what each conditional jump's condition
    /// compares or tests, where a `cmp` or `test` in the jump's own block
    /// sets its flags: the source's types fix it (an `int` against a
    /// pointer), not the register allocation.
    pub compared_width: FxHashMap<u64, u8>,
    /// Each table jump's entries in index order (duplicates kept), where
    /// [`Code::tables`] has the distinct targets.
    pub table_entries: FxHashMap<u64, Vec<u64>>,
    /// Entry of `__sanitizer_cov_trace_switch` (writers built with trace-cmp).
    pub switch_hook: Option<u64>,
    /// Each instruction's mnemonic (without prefixes) and operands as
    /// objdump prints them, by index: what [`crate::dispatch`] evaluates.
    pub text: Vec<(Box<str>, Box<str>)>,
    /// Function entries whose address the program takes — named by an
    /// instruction other than a direct call or jump, or stored in its
    /// allocated data (function pointer tables, relocations): the only
    /// functions an indirect call can enter. None when the binary's data
    /// was not read (every function may be).
    pub address_taken: Option<rustc_hash::FxHashSet<u64>>,
}

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// The kind of one instruction from objdump's mnemonic and operands.
fn flow_of(mnemonic: &str, operands: &str) -> Flow {
    // Prefixes objdump prints before the mnemonic.
    let m = mnemonic
        .split_whitespace()
        .find(|w| !PREFIXES.contains(w))
        .unwrap_or("")
        .trim_end_matches('q');
    let target = || {
        operands
            .split_whitespace()
            .next()
            .filter(|t| !t.starts_with('*'))
            .and_then(parse_hex)
    };
    match m {
        "ret" | "iret" | "sysret" => Flow::Ret,
        "hlt" | "ud2" => Flow::Stop,
        "call" => target().map_or(Flow::CallIndirect, Flow::Call),
        "jmp" => target().map_or(Flow::JumpIndirect, Flow::Jump),
        _ if m.starts_with('j') || m.starts_with("loop") => {
            target().map_or(Flow::JumpIndirect, Flow::Cond)
        }
        _ => Flow::Next,
    }
}

impl Code {
    /// Disassemble `binary` with `objdump` (`OBJDUMP` overrides the tool).
    pub fn load(binary: &Path) -> Result<Code, Error> {
        let tool = std::env::var_os("OBJDUMP").unwrap_or_else(|| "objdump".into());
        let out = Command::new(&tool)
            .args(["-d", "--no-show-raw-insn", "-w", "-j", ".text"])
            .arg(binary)
            .output()
            .map_err(|e| {
                Error::Tool(format!(
                    "cannot run {} to read {} ({e}); install GNU binutils or set OBJDUMP",
                    tool.to_string_lossy(),
                    binary.display()
                ))
            })?;
        if !out.status.success() {
            return Err(Error::BadInput(format!(
                "objdump cannot read {}: {}",
                binary.display(),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
            )));
        }
        let bytes = std::fs::read(binary).map_err(|e| Error::io(binary, e))?;
        let file = object::File::parse(&*bytes).ok();
        let read = |addr: u64, len: usize| -> Option<Vec<u8>> {
            use object::{Object, ObjectSection};
            let file = file.as_ref()?;
            file.sections().find_map(|s| {
                let start = s.address();
                if addr < start || addr + len as u64 > start + s.size() {
                    return None;
                }
                let data = s.data().ok()?;
                let at = (addr - start) as usize;
                data.get(at..at + len).map(<[u8]>::to_vec)
            })
        };
        let mut code = Code::parse_with_data(&String::from_utf8_lossy(&out.stdout), &read);
        if let (Some(file), Some(taken)) = (file.as_ref(), code.address_taken.as_mut()) {
            use object::{Object, ObjectSection, SectionFlags, SectionKind};
            let entries: rustc_hash::FxHashSet<u64> =
                code.functions.iter().map(|f| f.entry).collect();
            for section in file.sections() {
                let alloc = match section.flags() {
                    SectionFlags::Elf { sh_flags } => {
                        sh_flags & u64::from(object::elf::SHF_ALLOC) != 0
                    }
                    _ => true,
                };
                if !alloc || section.kind() == SectionKind::Text {
                    continue;
                }
                let Ok(data) = section.data() else { continue };
                for word in data.chunks_exact(8) {
                    let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                    if entries.contains(&v) {
                        taken.insert(v);
                    }
                }
            }
        } else {
            code.address_taken = None;
        }
        Ok(code)
    }

    /// Build from `objdump -d --no-show-raw-insn -w` text.
    pub fn parse(text: &str) -> Code {
        let mut code = Code::parse_with_data(text, &|_, _| None);
        code.address_taken = None;
        code
    }

    /// Build from `objdump` text; `read(addr, len)` gives bytes of the
    /// binary's memory image, used to read jump tables.
    pub fn parse_with_data(text: &str, read: &dyn Fn(u64, usize) -> Option<Vec<u8>>) -> Code {
        let mut code = Code::default();
        let mut hints: Vec<(Option<u64>, String)> = Vec::new();
        let mut mnemonics: Vec<String> = Vec::new();
        for line in text.lines() {
            // "0000000000001150 <main>:"
            if let Some(head) = line.strip_suffix(">:") {
                if let Some((addr, name)) = head.split_once(" <") {
                    if let Some(entry) = parse_hex(addr) {
                        code.functions.push(Function {
                            name: name.to_string(),
                            entry,
                            instrumented: false,
                        });
                    }
                }
                continue;
            }
            // "    116a:\tcall   1c00 <__sanitizer_cov_trace_pc>"
            let Some((addr, rest)) = line.trim_start().split_once(":\t") else {
                continue;
            };
            let (Some(addr), false) = (parse_hex(addr), code.functions.is_empty()) else {
                continue;
            };
            let (rest, comment) = rest.split_once('#').unwrap_or((rest, ""));
            let rest = rest.trim();
            // "# 30f0 <_IO_stdin_used+0xf0>": the address a rip-relative
            // operand names (a jump table's base, for PIC code).
            let named = comment.split_whitespace().next().and_then(parse_hex);
            if rest.is_empty() || rest.starts_with("(bad)") {
                continue;
            }
            let (mnemonic, operands) = split_mnemonic(rest);
            let func = (code.functions.len() - 1) as u32;
            if let Some(prev) = code.insns.last_mut() {
                prev.next = addr;
            }
            hints.push((named, operands.to_string()));
            let m = mnemonic.split_whitespace().last().unwrap_or("");
            mnemonics.push(m.to_string());
            code.text.push((m.into(), operands.into()));
            if m.starts_with("cmov") || m.starts_with("set") {
                code.selects.insert(addr);
            }
            code.insns.push(Insn {
                addr,
                next: addr,
                flow: flow_of(mnemonic, operands),
                func,
            });
        }
        // The last instruction's length is unknown; nothing falls out of
        // the section anyway.
        for (i, insn) in code.insns.iter().enumerate() {
            code.at.insert(insn.addr, i);
        }
        // Addresses instructions name other than as a direct call's or
        // jump's target: rip-relative operands and immediates.
        let entries: rustc_hash::FxHashSet<u64> = code.functions.iter().map(|f| f.entry).collect();
        let mut taken = rustc_hash::FxHashSet::default();
        for (k, (named, operands)) in hints.iter().enumerate() {
            if matches!(
                code.insns[k].flow,
                Flow::Call(_) | Flow::Jump(_) | Flow::Cond(_)
            ) {
                continue;
            }
            let imm = operands.split([',', '$']).filter_map(|o| {
                o.trim()
                    .strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
            });
            for v in named.iter().copied().chain(imm) {
                if entries.contains(&v) {
                    taken.insert(v);
                }
            }
        }
        code.address_taken = Some(taken);
        code.find_jump_tables(&hints, read);
        code.find_compared(&hints, &mnemonics);
        code.switch_hook = code
            .functions
            .iter()
            .find(|f| f.name == "__sanitizer_cov_trace_switch")
            .map(|f| f.entry);
        code.callback = code
            .functions
            .iter()
            .find(|f| f.name == "__sanitizer_cov_trace_pc")
            .map(|f| f.entry);
        if let Some(cb) = code.callback {
            let cb_func = code.insns.iter().find(|i| i.addr == cb).map(|i| i.func);
            code.callback_ret = code
                .insns
                .iter()
                .find(|i| Some(i.func) == cb_func && i.flow == Flow::Ret)
                .map(|i| i.addr);
            for i in 0..code.insns.len() {
                if matches!(code.insns[i].flow, Flow::Call(t) | Flow::Jump(t) if t == cb) {
                    let f = code.insns[i].func as usize;
                    code.functions[f].instrumented = true;
                }
            }
        }
        code
    }

    /// Read the jump tables of indirect jumps in the two shapes gcc and
    /// clang emit on x86-64: position-independent (`lea TABLE(%rip),%r`,
    /// then 32-bit entries relative to TABLE) and absolute (`jmp
    /// *TABLE(,%r,8)`, 64-bit entries). A table ends at the first entry
    /// that leaves the jump's function.
    fn find_jump_tables(
        &mut self,
        hints: &[(Option<u64>, String)],
        read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
    ) {
        for (i, insn) in self.insns.iter().enumerate() {
            if insn.flow != Flow::JumpIndirect {
                continue;
            }
            let func = insn.func as usize;
            let lo = self.functions[func].entry;
            let hi = self.functions.get(func + 1).map_or(u64::MAX, |f| f.entry);
            let inside = |t: u64| t >= lo && t < hi && self.at.contains_key(&t);
            let mut targets = Vec::new();
            let operand = &hints[i].1;
            if let Some(table) = operand
                .strip_prefix("*0x")
                .and_then(|r| r.split_once("(,"))
                .and_then(|(a, _)| u64::from_str_radix(a, 16).ok())
            {
                for k in 0..4096u64 {
                    let Some(b) = read(table + 8 * k, 8) else {
                        break;
                    };
                    let t = u64::from_le_bytes(b.try_into().expect("8 bytes"));
                    if !inside(t) {
                        break;
                    }
                    targets.push(t);
                }
            } else if let Some(table) = {
                // The `lea TABLE(%rip)` just before the jump, of the
                // register the jump adds as its base when that can be
                // read (a nearby `lea` of another table, such as a lookup
                // the case computation reads, is not the jump's); else
                // one hoisted out of a loop; else any nearby.
                let nearby = |base: Option<&str>| {
                    (i.saturating_sub(6)..i)
                        .rev()
                        .filter(|&j| self.insns[j].func == insn.func)
                        .find_map(|j| {
                            let op = &hints[j].1;
                            let ok = op.contains("(%rip)")
                                && base.is_none_or(|b| op.ends_with(&format!(",{b}")));
                            hints[j].0.filter(|_| ok)
                        })
                };
                let base = self.table_base(i, hints);
                nearby(base.as_deref())
                    .or_else(|| self.hoisted_table(i, hints))
                    .or_else(|| nearby(None))
            } {
                for k in 0..4096u64 {
                    let Some(b) = read(table + 4 * k, 4) else {
                        break;
                    };
                    let off = i32::from_le_bytes(b.try_into().expect("4 bytes"));
                    let t = table.wrapping_add(off as i64 as u64);
                    if !inside(t) {
                        break;
                    }
                    targets.push(t);
                }
            }
            if !targets.is_empty() {
                self.table_entries.insert(insn.addr, targets.clone());
                targets.sort_unstable();
                targets.dedup();
                self.tables.insert(insn.addr, targets);
            }
        }
    }

    /// Fill [`Code::compared`]: walking back from each conditional jump over
    /// instructions that leave the flags alone (moves, `lea`, no-ops), the
    /// first other one, if it is `cmp $IMM,…`, gives the constant. Anything
    /// else (another flag-setter, a branch, the function's start) gives
    /// none.
    fn find_compared(&mut self, hints: &[(Option<u64>, String)], mnemonics: &[String]) {
        let keeps_flags = |m: &str| m.starts_with("mov") || m == "lea" || m.starts_with("nop");
        for (i, insn) in self.insns.iter().enumerate() {
            if !matches!(insn.flow, Flow::Cond(_)) {
                continue;
            }
            let setter = (0..i)
                .rev()
                .take_while(|&j| {
                    self.insns[j].func == insn.func && self.insns[j].flow == Flow::Next
                })
                .find(|&j| !keeps_flags(&mnemonics[j]));
            let Some(j) = setter
                .filter(|&j| mnemonics[j].starts_with("cmp") || mnemonics[j].starts_with("test"))
            else {
                continue;
            };
            if let Some(w) = operand_width(&mnemonics[j], &hints[j].1) {
                self.compared_width.insert(insn.addr, w);
            }
            if !mnemonics[j].starts_with("cmp") {
                continue;
            }
            let imm = hints[j]
                .1
                .strip_prefix('$')
                .and_then(|r| r.split(',').next())
                .and_then(|v| match v.strip_prefix('-') {
                    Some(neg) => parse_hex(neg).map(|n| (n as i64).wrapping_neg()),
                    None => parse_hex(v).map(|n| n as i64),
                });
            if let Some(imm) = imm {
                self.compared.insert(insn.addr, imm);
            }
        }
    }

    /// The table of the position-independent jump at `i` whose base the
    /// compiler loaded once before a loop (`lea TABLE(%rip),%rB` far
    /// above; `add %rB,%rX; jmp *%rX` here): the last such `lea` of the
    /// base register in the function before the jump.
    fn hoisted_table(&self, i: usize, hints: &[(Option<u64>, String)]) -> Option<u64> {
        let func = self.insns[i].func;
        let base = self.table_base(i, hints)?;
        (0..i)
            .rev()
            .take_while(|&j| self.insns[j].func == func)
            .find(|&j| hints[j].1.contains("(%rip)") && hints[j].1.ends_with(&format!(",{base}")))
            .and_then(|j| hints[j].0)
    }

    /// The base register the position-independent jump at `i` adds to
    /// its table entry (`add %rB,%rX` just before it), if it reads so.
    fn table_base(&self, i: usize, hints: &[(Option<u64>, String)]) -> Option<String> {
        let func = self.insns[i].func;
        (i.saturating_sub(3)..i).rev().find_map(|j| {
            let (src, _) = hints[j].1.split_once(',')?;
            (src.starts_with('%') && self.insns[j].func == func).then(|| src.to_string())
        })
    }

    /// The instruction at `addr`.
    pub fn insn(&self, addr: u64) -> Option<&Insn> {
        self.at.get(&addr).map(|&i| &self.insns[i])
    }

    /// The sites a call of each instrumented function reaches first: the
    /// return addresses of the coverage calls that the code from the
    /// function's entry reaches without passing another coverage call
    /// (usually one, in the entry block). A pair from another function
    /// into one of them is a call; into any other site, a return (or a
    /// jump into the middle of a function) — what the control program's
    /// call stack goes by ([`crate::control::Functions`]).
    pub fn entry_sites(&self) -> rustc_hash::FxHashSet<u64> {
        let mut out = rustc_hash::FxHashSet::default();
        let Some(callback) = self.callback else {
            return out;
        };
        for f in self.functions.iter().filter(|f| f.instrumented) {
            let Some(&start) = self.at.get(&f.entry) else {
                continue;
            };
            let func = self.insns[start].func;
            let mut seen = rustc_hash::FxHashSet::default();
            let mut stack = vec![start];
            while let Some(u) = stack.pop() {
                if !seen.insert(u) || seen.len() > 4096 {
                    continue;
                }
                let insn = self.insns[u];
                if insn.func != func {
                    continue;
                }
                let at = |a: u64| self.at.get(&a).copied();
                let next = at(insn.next).filter(|_| insn.next != insn.addr);
                match insn.flow {
                    Flow::Call(t) if t == callback => {
                        out.insert(insn.next);
                    }
                    // A tail jump into the callback returns to the caller:
                    // its site is not in this function.
                    Flow::Jump(t) if t == callback => {}
                    Flow::Next | Flow::Call(_) | Flow::CallIndirect => stack.extend(next),
                    Flow::Cond(t) => stack.extend(next.into_iter().chain(at(t))),
                    Flow::Jump(t) => stack.extend(at(t)),
                    Flow::JumpIndirect | Flow::Ret | Flow::Stop => {}
                }
            }
        }
        out
    }

    /// The function that contains `addr` (by the last entry at or below it).
    pub fn function_of(&self, addr: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.entry <= addr);
        i.checked_sub(1).map(|i| &self.functions[i])
    }

    /// `name+0xoff` for an address.
    pub fn describe(&self, addr: u64) -> String {
        match self.function_of(addr) {
            Some(f) if addr == f.entry => f.name.clone(),
            Some(f) => format!("{}+{:#x}", f.name, addr - f.entry),
            None => format!("{addr:#x}"),
        }
    }

    /// The coverage call whose return address is `site`, if `site` is one.
    pub fn call_before(&self, site: u64) -> Option<&Insn> {
        let i = *self.at.get(&site)?;
        let call = self.insns.get(i.checked_sub(1)?)?;
        (call.next == site && self.callback.is_some_and(|cb| call.flow == Flow::Call(cb)))
            .then_some(call)
    }
}

/// The operand width of a `cmp` or `test`: its suffix (`cmpl`), else its
/// register operands' (`%eax` 32, `%rax` 64, `%ax` 16, `%al` 8).
fn operand_width(mnemonic: &str, operands: &str) -> Option<u8> {
    let base = if mnemonic.starts_with("cmp") {
        "cmp"
    } else {
        "test"
    };
    match mnemonic.strip_prefix(base) {
        Some("b") => return Some(8),
        Some("w") => return Some(16),
        Some("l") => return Some(32),
        Some("q") => return Some(64),
        Some("") => {}
        _ => return None,
    }
    let reg = operands
        .split(',')
        .map(str::trim)
        .find_map(|o| o.strip_prefix('%'))?;
    let width = match reg {
        r if r.starts_with('r') && r[1..].chars().all(|c| c.is_ascii_digit()) => 64,
        r if r.starts_with('r') && r.ends_with('d') => 32,
        r if r.starts_with('r') && r.ends_with('w') => 16,
        r if r.starts_with('r') && r.ends_with('b') => 8,
        r if r.starts_with('r') => 64,
        r if r.starts_with('e') => 32,
        "ax" | "bx" | "cx" | "dx" | "si" | "di" | "bp" | "sp" => 16,
        r if r.ends_with('l') || r.ends_with('h') => 8,
        _ => return None,
    };
    Some(width)
}

/// Words objdump prints before a mnemonic.
const PREFIXES: &[&str] = &[
    "bnd", "notrack", "rep", "repz", "repnz", "data16", "lock", "cs", "ds",
];

/// Split "prefix… mnemonic operands" after the mnemonic.
fn split_mnemonic(rest: &str) -> (&str, &str) {
    let mut pos = 0;
    loop {
        let tail = &rest[pos..];
        let trimmed = tail.trim_start();
        let start = pos + (tail.len() - trimmed.len());
        let len = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        pos = start + len;
        if len == 0 || !PREFIXES.contains(&&trimmed[..len]) || pos >= rest.len() {
            return (rest[..pos].trim(), rest[pos..].trim());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
0000000000001150 <main>:
    1150:\tpush   %r15
    116a:\tcall   1c00 <__sanitizer_cov_trace_pc>
    116f:\txor    %edx,%edx
    1171:\tje     11eb <main+0x9b>
    1173:\tbnd jmp *%rax
    1176:\tnotrack jmp *(%rax,%rdx,8)
    117a:\tcall   *%rdx
    117c:\trepz ret
    117e:\tjmp    1150 <main>

0000000000001c00 <__sanitizer_cov_trace_pc>:
    1c00:\tpush   %r12
    1c02:\tret
";

    #[test]
    fn the_constant_a_conditional_jump_compares_with() {
        let c = Code::parse(
            "\
0000000000001560 <apply>:
    1560:\tcmp    $0x5e,%dil
    1564:\tmov    %edx,%ecx
    1566:\tjg     1598 <apply+0x38>
    1568:\tcmp    $0xffffffffffffffff,%ecx
    156c:\tjle    1590 <apply+0x30>
    156e:\tsub    $0x25,%edi
    1571:\tjb     1590 <apply+0x30>
    1573:\tcmp    %ecx,%edx
    1575:\tja     1590 <apply+0x30>
    1577:\tcmp    $0x3,%eax
    157a:\tjmp    1580 <apply+0x20>
    1580:\tje     1590 <apply+0x30>
    1590:\tret
",
        );
        let got = |a: u64| c.compared.get(&a).copied();
        // Moves between the compare and the jump leave the flags alone.
        assert_eq!(got(0x1566), Some(0x5e));
        assert_eq!(got(0x156c), Some(-1));
        // Another flag-setter, a compare of two registers, or a compare in
        // another block: no constant.
        assert_eq!(got(0x1571), None);
        assert_eq!(got(0x1575), None);
        assert_eq!(got(0x1580), None);
        // What is compared is as wide as its source type.
        let width = |a: u64| c.compared_width.get(&a).copied();
        assert_eq!(width(0x1566), Some(8));
        assert_eq!(width(0x156c), Some(32));
        assert_eq!(width(0x1571), None);
        assert_eq!(width(0x1575), Some(32));
        assert_eq!(operand_width("test", "%rbx,%rbx"), Some(64));
        assert_eq!(operand_width("test", "%r8d,%r8d"), Some(32));
        assert_eq!(operand_width("cmpb", "$0x5,(%rdx,%rax,1)"), Some(8));
        assert_eq!(operand_width("cmp", "0x8(%rax),%cx"), Some(16));
        assert_eq!(operand_width("cmpxchg", "%eax,(%rdx)"), None);
    }

    #[test]
    fn a_jump_table_is_the_one_its_base_register_was_loaded_with() {
        // The shape of SQLite's serial-type switch at -O2: the table's base
        // loaded before a loop, another table's `lea` right before the
        // jump (the case computation's lookup).
        let text = "\
0000000000001000 <f>:
    1000:\tlea    0xff9(%rip),%rcx        # 2000 <tbl>
    1007:\tnop
    1008:\tlea    0x1ff1(%rip),%rdi        # 3000 <sizes>
    100f:\tmovzbl (%rdi,%rax,1),%eax
    1013:\tcmp    $0x2,%al
    1015:\tja     1030 <f+0x30>
    1017:\tmovslq (%rcx,%rax,4),%rdi
    101b:\tadd    %rcx,%rdi
    101e:\tjmp    *%rdi
    1020:\tnop
    1028:\tnop
    1030:\tret
";
        let mut data: FxHashMap<u64, u8> = FxHashMap::default();
        for (k, t) in [0x1020i64, 0x1028, 0x1030, 0x9000].iter().enumerate() {
            for (b, byte) in ((t - 0x2000) as i32).to_le_bytes().iter().enumerate() {
                data.insert(0x2000 + 4 * k as u64 + b as u64, *byte);
            }
        }
        for (k, byte) in [1u8, 2, 3, 4, 6, 8, 8, 8].iter().enumerate() {
            data.insert(0x3000 + k as u64, *byte);
        }
        let read = |a: u64, n: usize| (a..a + n as u64).map(|x| data.get(&x).copied()).collect();
        let c = Code::parse_with_data(text, &read);
        assert_eq!(c.tables.get(&0x101e), Some(&vec![0x1020, 0x1028, 0x1030]));
    }

    #[test]
    fn objdump_text_becomes_flows() {
        let c = Code::parse(SAMPLE);
        let flows: Vec<Flow> = c.insns.iter().map(|i| i.flow).collect();
        assert_eq!(
            flows,
            vec![
                Flow::Next,
                Flow::Call(0x1c00),
                Flow::Next,
                Flow::Cond(0x11eb),
                Flow::JumpIndirect,
                Flow::JumpIndirect,
                Flow::CallIndirect,
                Flow::Ret,
                Flow::Jump(0x1150),
                Flow::Next,
                Flow::Ret,
            ]
        );
        assert_eq!(c.callback, Some(0x1c00));
        assert_eq!(c.callback_ret, Some(0x1c02));
        assert!(c.functions[0].instrumented);
        assert!(!c.functions[1].instrumented);
        assert_eq!(c.call_before(0x116f).map(|i| i.addr), Some(0x116a));
        assert_eq!(c.describe(0x116f), "main+0x1f");
        assert_eq!(c.insn(0x1171).map(|i| i.next), Some(0x1173));
    }
}
