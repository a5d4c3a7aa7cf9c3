//! A small KTAP parser for KUnit results (`/sys/kernel/debug/kunit/<suite>/results`
//! or the kernel log). It counts leaf cases: a result line is a leaf unless
//! deeper-indented results directly precede it (then it summarises a suite
//! or a parameterised case). A suite whose plan promises more cases than it
//! reports (the kernel oopsed mid-suite) yields failed "missing" cases.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    /// `suite.case`, or `suite.case.param` for parameterised cases.
    pub name: String,
    pub outcome: Outcome,
}

struct ResultLine<'a> {
    indent: usize,
    ok: bool,
    name: &'a str,
    skip: bool,
}

fn parse_result_line(line: &str) -> Option<ResultLine<'_>> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    let (ok, rest) = if let Some(rest) = trimmed.strip_prefix("not ok ") {
        (false, rest)
    } else if let Some(rest) = trimmed.strip_prefix("ok ") {
        (true, rest)
    } else {
        return None;
    };
    let (_number, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let (name, directive) = match rest.split_once('#') {
        Some((name, directive)) => (name.trim(), directive.trim()),
        None => (rest.trim(), ""),
    };
    let skip = directive.to_ascii_uppercase().starts_with("SKIP");
    Some(ResultLine {
        indent,
        ok,
        name: name.trim_start_matches("- "),
        skip,
    })
}

/// Strips a `[    1.234567] ` printk timestamp so kernel-log input parses too.
fn strip_timestamp(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix('[') {
        if let Some((stamp, tail)) = rest.split_once("] ") {
            if stamp.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
                return tail;
            }
        }
    }
    line
}

/// Parses one KTAP document and returns its leaf cases.
pub fn parse(text: &str) -> Vec<CaseResult> {
    // Open subtests, innermost last: (indent of its lines, name, planned cases, seen results).
    let mut open: Vec<(usize, String, Option<usize>, usize)> = Vec::new();
    let mut results = Vec::new();
    let mut last_result_indent: Option<usize> = None;

    for raw in text.lines() {
        let line = strip_timestamp(raw.trim_end());
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();

        if let Some(name) = trimmed.strip_prefix("# Subtest:") {
            open.retain(|(i, ..)| *i < indent);
            open.push((indent, name.trim().to_string(), None, 0));
            continue;
        }
        if let Some(plan) = trimmed.strip_prefix("1..") {
            if let (Some(top), Ok(n)) = (open.last_mut(), plan.trim().parse::<usize>()) {
                if top.0 == indent {
                    top.2 = Some(n);
                }
            }
            continue;
        }
        let Some(result) = parse_result_line(line) else {
            continue;
        };

        // Results at a shallower indent close the subtests nested below them.
        while open.last().is_some_and(|(i, ..)| *i > result.indent) {
            let (_, name, planned, seen) = open.pop().unwrap();
            if let Some(planned) = planned {
                for missing in seen + 1..=planned {
                    results.push(CaseResult {
                        name: format!("{}.<case {missing} missing>", qualified(&open, &name)),
                        outcome: Outcome::Fail,
                    });
                }
            }
        }
        let is_leaf = last_result_indent.is_none_or(|last| last <= result.indent);
        last_result_indent = Some(result.indent);
        if let Some(top) = open.last_mut() {
            if top.0 == result.indent {
                top.3 += 1;
            }
        }
        if is_leaf {
            let prefix: Vec<&str> = open
                .iter()
                .filter(|(i, ..)| *i <= result.indent)
                .map(|(_, n, ..)| n.as_str())
                .collect();
            let mut name = prefix.join(".");
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(result.name);
            let outcome = if result.skip {
                Outcome::Skip
            } else if result.ok {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            results.push(CaseResult { name, outcome });
        }
    }
    // Subtests still open at the end of input never finished.
    while let Some((_, name, planned, seen)) = open.pop() {
        let planned = planned.unwrap_or(seen + 1);
        for missing in seen + 1..=planned {
            results.push(CaseResult {
                name: format!("{}.<case {missing} missing>", qualified(&open, &name)),
                outcome: Outcome::Fail,
            });
        }
    }
    results
}

fn qualified(outer: &[(usize, String, Option<usize>, usize)], name: &str) -> String {
    let mut parts: Vec<&str> = outer.iter().map(|(_, n, ..)| n.as_str()).collect();
    parts.push(name);
    parts.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(text: &str) -> Vec<(String, Outcome)> {
        parse(text)
            .into_iter()
            .map(|c| (c.name, c.outcome))
            .collect()
    }

    #[test]
    fn debugfs_results_with_a_failure_and_a_skip() {
        // The shape lib/kunit/debugfs.c prints for one suite.
        let text = "KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: demo\n    1..3\n    ok 1 a\n        # b: EXPECTATION FAILED at x.rs:3\n    not ok 2 b\n    ok 3 c # SKIP not here\nnot ok 1 demo\n";
        assert_eq!(
            outcomes(text),
            vec![
                ("demo.a".into(), Outcome::Pass),
                ("demo.b".into(), Outcome::Fail),
                ("demo.c".into(), Outcome::Skip),
            ]
        );
    }

    #[test]
    fn kernel_log_form_with_timestamps() {
        let text = "[    1.000000]     KTAP version 1\n[    1.000001]     # Subtest: s\n[    1.000002]     1..2\n[    1.000003]     ok 1 x\n[    1.000004]     ok 2 y\n[    1.000005] ok 1 s\n";
        assert_eq!(
            outcomes(text),
            vec![("s.x".into(), Outcome::Pass), ("s.y".into(), Outcome::Pass)]
        );
    }

    #[test]
    fn parameterised_case_counts_its_params() {
        let text = "    # Subtest: s\n    1..1\n        # Subtest: p\n        ok 1 p0\n        not ok 2 p1\n    not ok 1 p\nnot ok 1 s\n";
        assert_eq!(
            outcomes(text),
            vec![
                ("s.p.p0".into(), Outcome::Pass),
                ("s.p.p1".into(), Outcome::Fail)
            ]
        );
    }

    #[test]
    fn suite_cut_short_reports_missing_cases() {
        let text = "    # Subtest: s\n    1..3\n    ok 1 a\n";
        let got = outcomes(text);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], ("s.a".into(), Outcome::Pass));
        assert!(got[1..].iter().all(|(_, o)| *o == Outcome::Fail));
    }

    #[test]
    fn empty_input_has_no_cases() {
        assert!(parse("").is_empty());
        assert!(parse("random console noise\n").is_empty());
    }
}
