//! Source lines of machine code, from the program's DWARF: for each
//! address, the function it lies in (the outermost one: code inlined into
//! a function counts at the line of its call site there) and its line as
//! an offset from the line where that function starts.
//!
//! That is how LLVM's sample profiles name code (`clang
//! -fprofile-sample-use`, the AutoFDO text format): by function and line
//! offset, so that a profile of one build applies to another build of the
//! same source. [`locate`] gives the offsets (and, for people, each
//! address's innermost `file:line`); the line tables are
//! read with `addr2line` (inlined frames) and `gimli` (where each function
//! starts).

use std::borrow::Cow;
use std::collections::HashMap;

/// Where an address's code is in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLine {
    /// The function's linkage name (the outermost frame's).
    pub function: String,
    /// The line minus the line where the function starts (its
    /// declaration's line); 0 when the line is before it.
    pub offset: u32,
}

/// Where an address's code is, both ways: as a sample profile names it
/// (the outermost function and a line offset in it) and as a person reads
/// it (the innermost frame's file and line: for code inlined from another
/// function, that function's line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The outermost function and the line offset in it.
    pub function_line: Option<SourceLine>,
    /// `file:line` of the innermost frame (the file as the DWARF names
    /// it, without a leading `./`).
    pub file_line: Option<String>,
}

/// Why a program's lines cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LinesError {
    /// No DWARF: the program was built without `-g`.
    #[error("it has no debugging information (.debug_info/.debug_line); build it with -g")]
    NoDwarf,
    /// The DWARF could not be read.
    #[error("its debugging information cannot be read: {0}")]
    Dwarf(String),
}

/// The [`Location`] of each address of `addrs`, from the ELF file `bytes`.
pub fn locate(bytes: &[u8], addrs: &[u64]) -> Result<Vec<Location>, LinesError> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(bytes).map_err(|e| LinesError::Dwarf(e.to_string()))?;
    if file.section_by_name(".debug_info").is_none()
        || file.section_by_name(".debug_line").is_none()
    {
        return Err(LinesError::NoDwarf);
    }
    let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[])))
    };
    let sections =
        gimli::DwarfSections::load(load).map_err(|e| LinesError::Dwarf(e.to_string()))?;
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let starts = start_lines(&dwarf).map_err(|e| LinesError::Dwarf(e.to_string()))?;
    let context =
        addr2line::Context::from_dwarf(dwarf).map_err(|e| LinesError::Dwarf(e.to_string()))?;
    let mut out = Vec::with_capacity(addrs.len());
    for &addr in addrs {
        let (mut innermost, mut outermost) = (None, None);
        if let Ok(mut frames) = context.find_frames(addr).skip_all_loads() {
            while let Ok(Some(frame)) = frames.next() {
                if innermost.is_none() {
                    innermost = frame.location.as_ref().and_then(|l| {
                        let file = l.file?;
                        Some(format!("{}:{}", file.trim_start_matches("./"), l.line?))
                    });
                }
                outermost = Some(frame);
            }
        }
        let line = outermost.and_then(|frame| {
            let name = frame.function.as_ref()?.raw_name().ok()?.into_owned();
            let line = frame.location.as_ref()?.line?;
            let start = starts.get(&name).copied().unwrap_or(line);
            Some(SourceLine {
                offset: line.saturating_sub(start),
                function: name,
            })
        });
        out.push(Location {
            function_line: line,
            file_line: innermost,
        });
    }
    Ok(out)
}

/// Each function's starting line (`DW_AT_decl_line` of the subprogram
/// that has its code, through `DW_AT_specification`/`DW_AT_abstract_origin`),
/// by linkage name (or name).
fn start_lines<R: gimli::Reader>(dwarf: &gimli::Dwarf<R>) -> gimli::Result<HashMap<String, u32>> {
    let mut starts = HashMap::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next()? {
        let unit = dwarf.unit(header)?;
        let mut entries = unit.entries();
        while let Some((_, entry)) = entries.next_dfs()? {
            // Functions with code only: not declarations (a C library's
            // prototype of `main` has a line of its own header).
            let has_code = entry.attr_value(gimli::DW_AT_low_pc)?.is_some()
                || entry.attr_value(gimli::DW_AT_ranges)?.is_some();
            if entry.tag() != gimli::DW_TAG_subprogram || !has_code {
                continue;
            }
            let (mut name, mut line) = (None, None);
            let mut die = entry.clone();
            // The concrete DIE, then what it refers to, for what it lacks.
            for _ in 0..3 {
                if name.is_none() {
                    for at in [gimli::DW_AT_linkage_name, gimli::DW_AT_name] {
                        if let Some(v) = die.attr_value(at)? {
                            if let Ok(s) = dwarf.attr_string(&unit, v) {
                                name = Some(s.to_string_lossy()?.into_owned());
                                break;
                            }
                        }
                    }
                }
                if line.is_none() {
                    line = die
                        .attr_value(gimli::DW_AT_decl_line)?
                        .and_then(|v| v.udata_value())
                        .map(|l| l as u32);
                }
                let origin = [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
                    .into_iter()
                    .find_map(|at| die.attr_value(at).ok().flatten());
                match origin {
                    Some(gimli::AttributeValue::UnitRef(offset))
                        if name.is_none() || line.is_none() =>
                    {
                        die = unit.entry(offset)?;
                    }
                    _ => break,
                }
            }
            if let (Some(name), Some(line)) = (name, line) {
                starts.entry(name).or_insert(line);
            }
        }
    }
    Ok(starts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use retrace_testkit::programs::example_program;

    #[test]
    fn lines_are_offsets_from_the_function_start() {
        let p = example_program("sort-rv32-O2");
        let bytes = p.bytes();
        let elf = crate::Elf::parse(&bytes).unwrap();
        let main = elf.symbols.iter().find(|s| s.name == "main").unwrap();
        let lines = locate(&bytes, &[main.addr, 0x10]).unwrap();
        let first = lines[0]
            .function_line
            .as_ref()
            .expect("main's first instruction has a line");
        assert_eq!(first.function, "main");
        // The prologue is at or just after the function's own line.
        assert!(first.offset <= 3, "{first:?}");
        assert_eq!(lines[1], Location::default(), "no code at 0x10");
        let at = lines[0].file_line.as_deref().unwrap();
        assert!(at.starts_with("src/sort.c:"), "{at}");
    }

    #[test]
    fn garbage_and_programs_without_dwarf_are_errors() {
        assert!(locate(b"\x7fELF garbage", &[0]).is_err());
        assert!(locate(&[], &[0]).is_err());
        let p = example_program("sort-rv32-O2");
        let mut bytes = p.bytes();
        // Rename the debugging sections: the file then has none.
        for name in [&b".debug_info"[..], b".debug_line"] {
            while let Some(at) = bytes.windows(name.len()).position(|w| w == name) {
                bytes[at + 1] = b'X';
            }
        }
        assert!(matches!(locate(&bytes, &[0]), Err(LinesError::NoDwarf)));
    }
}
