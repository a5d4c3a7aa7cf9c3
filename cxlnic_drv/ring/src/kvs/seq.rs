//! The seqlock discipline of a slot whose one writer and one reader are
//! on different sides (the host table: driver writes, device reads).
//!
//! The writer makes the version odd, stores the record's other bytes,
//! then stores the next even version, with a release barrier before each
//! version store. The reader loads the version (acquire), copies the
//! record, loads the version again after an acquire barrier, and keeps
//! the copy only if both loads saw the same even version: then no store
//! of the writer's fell between them, so the copy is one whole record.

use super::record::Record;

/// A read that met the writer: retry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Torn;

/// The record a seqlock read copied (`copy`), given the version loaded
/// before (`before`) and after (`after`) the copy; [`Torn`] if the writer
/// was at work.
pub fn read_stable(before: u32, copy: &Record, after: u32) -> Result<Record, Torn> {
    if before % 2 != 0 || before != after {
        return Err(Torn);
    }
    let mut r = *copy;
    r.word = before;
    Ok(r)
}

/// The versions a writer stores around its update of a slot now at
/// `version`: first the odd one, last the even one.
pub fn write_versions(version: u32) -> (u32, u32) {
    // Made even first, so a slot a bug left odd heals on its next write.
    let even = version & !1;
    (even.wrapping_add(1), even.wrapping_add(2))
}
