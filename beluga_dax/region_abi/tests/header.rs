// SPDX-License-Identifier: GPL-2.0

//! The header and the Rust side name the same exported functions: every
//! function `beluga_region.h` declares (not its static inlines) is in
//! `SYMBOLS`, and nothing else is.

use std::collections::BTreeSet;

/// The functions `header` declares (prototypes ending in `;`), by name.
fn declared(header: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut stmt = String::new();
    for line in header.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with('*') || line.starts_with("/*") {
            continue;
        }
        stmt.push_str(line);
        stmt.push(' ');
        if line.ends_with(';') || line.ends_with('{') || line.ends_with('}') {
            let s = std::mem::take(&mut stmt);
            if s.contains("static inline") || !s.trim_end().ends_with(';') {
                continue;
            }
            if let Some(open) = s.find('(') {
                let name = s[..open]
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("");
                if name.starts_with("beluga_region_") {
                    names.insert(name.to_string());
                }
            }
        }
    }
    names
}

#[test]
fn symbols_match_the_header() {
    let header = include_str!("../../beluga_region.h");
    let declared = declared(header);
    let ours: BTreeSet<String> = beluga_region_abi::SYMBOLS
        .iter()
        .map(|s| String::from_utf8(s[..s.len() - 1].to_vec()).unwrap())
        .collect();
    assert_eq!(declared.len(), 9, "{declared:?}");
    assert_eq!(declared, ours);
}

#[test]
fn the_parser_sees_a_missing_declaration() {
    let header = include_str!("../../beluga_region.h");
    let cut = header.replace(
        "void beluga_region_access_end(const struct beluga_region *region);",
        "",
    );
    assert!(!declared(&cut).contains("beluga_region_access_end"));
    assert!(!declared(header).contains("beluga_region_page"));
}
