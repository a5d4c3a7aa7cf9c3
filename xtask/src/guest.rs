//! The line protocol the guest init (`tests/vm/init`) writes on ttyS1:
//!
//! ```text
//! @@ HELLO mode=test host=0 kernel=...
//! @@ SCENARIO ok|fail|skip <name> [detail]
//! @@ BEGIN <kind> <name>
//! @|<line of the block>
//! @@ END
//! @@ DONE
//! @@ KILL-ME                     (multi-host: the harness kills this VM)
//! @@ PAUSE-ME <ms>                (multi-host: the harness stops this VM
//!                                  for <ms>, at most a minute)
//! @@ POKE <offset> <hex bytes>   (multi-host: the harness writes the
//!                                 bytes into the shared pool at region
//!                                 offset <offset>, from outside the VMs)
//! @@ NIC stop|start|inject <port> <fault>
//!                                (the harness tells the CXL-NIC device
//!                                 model; see tools/cxlnic-model)
//! ```

use crate::ktap::Outcome;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub kind: String,
    pub name: String,
    pub text: String,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Scenario {
    pub name: String,
    pub outcome: Outcome,
    pub detail: String,
}

#[derive(Debug, Default)]
pub struct GuestReport {
    pub hello: Option<String>,
    pub scenarios: Vec<Scenario>,
    pub blocks: Vec<Block>,
    pub done: bool,
    /// A scenario asked the host to kill this VM (`@@ KILL-ME`): the
    /// multi-host lease tests need a host to die without warning.
    pub kill_requested: bool,
    /// Writes into the shared pool that scenarios ask the host to make
    /// (`@@ POKE`), in order: a peer or a fault damaging pool memory.
    pub pokes: Vec<Poke>,
    /// Commands for the NIC device model (`@@ NIC`), in order.
    pub nic: Vec<String>,
    /// Pauses a scenario asked for (`@@ PAUSE-ME <ms>`), in order: the
    /// host stops the VM (SIGSTOP) for that long, up to a minute, as a
    /// machine that stalls without crashing.
    pub pauses: Vec<u64>,
}

/// A write into the shared CXL pool, at an offset of the 2-way region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poke {
    pub offset: u64,
    pub bytes: Vec<u8>,
}

impl Poke {
    fn parse(offset: &str, hex: &str) -> Option<Poke> {
        let offset = u64::from_str_radix(offset.trim_start_matches("0x"), 16).ok()?;
        if !hex.len().is_multiple_of(2) || hex.is_empty() {
            return None;
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(Poke { offset, bytes })
    }

    /// Where the bytes live in the type-3 devices' backing files: the
    /// region interleaves `ways` devices (ordered by serial, as cxlctl
    /// builds it) every `granularity` bytes, and each device's DPA is its
    /// file offset. One piece per granule touched.
    pub fn locate(&self, ways: u64, granularity: u64) -> Vec<(usize, u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut done = 0usize;
        while done < self.bytes.len() {
            let off = self.offset + done as u64;
            let in_granule = off % granularity;
            let n = ((granularity - in_granule) as usize).min(self.bytes.len() - done);
            let device = ((off / granularity) % ways) as usize;
            let dpa = off / (granularity * ways) * granularity + in_granule;
            out.push((device, dpa, self.bytes[done..done + n].to_vec()));
            done += n;
        }
        out
    }
}

/// `text` up to and including its last newline: what the guest has
/// finished writing so far.
pub fn complete_lines(text: &str) -> &str {
    text.rfind('\n').map_or("", |end| &text[..=end])
}

impl GuestReport {
    pub fn parse(text: &str) -> GuestReport {
        let mut report = GuestReport::default();
        let mut current: Option<Block> = None;
        for raw in text.lines() {
            let line = raw.trim_end_matches('\r');
            if let Some(block) = current.as_mut() {
                if let Some(body) = line.strip_prefix("@|") {
                    block.text.push_str(body);
                    block.text.push('\n');
                    continue;
                }
                if line == "@@ END" {
                    report.blocks.push(current.take().unwrap());
                    continue;
                }
                // A block cut off by a new command: keep what arrived.
                report.blocks.push(current.take().unwrap());
            }
            let Some(command) = line.strip_prefix("@@ ") else {
                continue;
            };
            let mut words = command.splitn(4, ' ');
            match words.next() {
                Some("HELLO") => report.hello = Some(command["HELLO ".len()..].to_string()),
                Some("DONE") => report.done = true,
                Some("KILL-ME") => report.kill_requested = true,
                Some("PAUSE-ME") => {
                    if let Some(ms) = words.next().and_then(|w| w.parse::<u64>().ok()) {
                        report.pauses.push(ms.min(60_000));
                    }
                }
                Some("NIC") => report
                    .nic
                    .push(command["NIC ".len().min(command.len())..].to_string()),
                Some("POKE") => {
                    if let Some(p) = Poke::parse(
                        words.next().unwrap_or_default(),
                        words.next().unwrap_or_default(),
                    ) {
                        report.pokes.push(p);
                    }
                }
                Some("BEGIN") => {
                    current = Some(Block {
                        kind: words.next().unwrap_or_default().to_string(),
                        name: words.next().unwrap_or_default().to_string(),
                        text: String::new(),
                    })
                }
                Some("SCENARIO") => {
                    let outcome = match words.next() {
                        Some("ok") => Outcome::Pass,
                        Some("skip") => Outcome::Skip,
                        _ => Outcome::Fail,
                    };
                    report.scenarios.push(Scenario {
                        name: words.next().unwrap_or("<unnamed>").to_string(),
                        outcome,
                        detail: words.next().unwrap_or_default().to_string(),
                    });
                }
                _ => {}
            }
        }
        if let Some(block) = current {
            report.blocks.push(block);
        }
        report
    }

    pub fn blocks<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Block> + 'a {
        self.blocks.iter().filter(move |b| b.kind == kind)
    }

    /// Lines of the guest's kernel log that mean something went wrong in
    /// the kernel, whatever the tests said.
    pub fn kernel_trouble(&self) -> Vec<String> {
        const MARKERS: &[&str] = &[
            "Oops",
            "BUG:",
            "WARNING:",
            "Call Trace",
            "Kernel panic",
            "general protection fault",
            "KASAN",
            "UBSAN",
        ];
        let mut trouble: Vec<String> = self
            .blocks("dmesg")
            .flat_map(|b| b.text.lines())
            .filter(|l| MARKERS.iter().any(|m| l.contains(m)))
            .map(str::to_string)
            .collect();
        trouble.extend(self.blocks("kmemleak").flat_map(|b| our_leaks(&b.text)));
        trouble
    }
}

/// The kmemleak reports whose allocation backtrace runs through one of
/// our modules (the kernel's own boot-time reports do not count), one
/// line each.
fn our_leaks(report: &str) -> Vec<String> {
    let ours: Vec<String> = crate::modules::all()
        .iter()
        .map(|m| format!("[{}]", m.name))
        .collect();
    let mut leaks = Vec::new();
    for entry in report.split("unreferenced object").skip(1) {
        if let Some(module) = ours.iter().find(|m| entry.contains(m.as_str())) {
            let head = entry.lines().next().unwrap_or_default().trim();
            leaks.push(format!(
                "kmemleak: unreferenced object {head} allocated in {module}"
            ));
        }
    }
    leaks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_still_being_written_is_not_acted_on() {
        let text = "@@ NIC inject 0 tx-head\n@@ NIC inject 0 com";
        let report = GuestReport::parse(complete_lines(text));
        assert_eq!(report.nic, ["inject 0 tx-head"]);
        assert_eq!(complete_lines("@@ POKE 0x10 ab"), "");
    }

    #[test]
    fn pauses_parse_capped_at_a_minute() {
        let r = GuestReport::parse("@@ PAUSE-ME 5000\n@@ PAUSE-ME x\n@@ PAUSE-ME 999999\n");
        assert_eq!(r.pauses, [5000, 60_000]);
    }

    #[test]
    fn pokes_parse_and_land_in_the_interleaved_devices() {
        let r = GuestReport::parse("@@ POKE 0x2ffe aabbccdd\n@@ POKE 10 zz\n@@ POKE 1 abc\n");
        assert_eq!(
            r.pokes,
            vec![Poke {
                offset: 0x2ffe,
                bytes: vec![0xaa, 0xbb, 0xcc, 0xdd]
            }]
        );
        // 0x2ffe is in granule 2 (device 0, DPA 0x1ffe); 0x3000 starts
        // granule 3 (device 1, DPA 0x1000).
        assert_eq!(
            r.pokes[0].locate(2, 4096),
            vec![(0, 0x1ffe, vec![0xaa, 0xbb]), (1, 0x1000, vec![0xcc, 0xdd])]
        );
    }

    #[test]
    fn parses_scenarios_blocks_and_done() {
        let text = "@@ HELLO mode=test host=0\r\n@@ SCENARIO ok a\r\n@@ SCENARIO fail b rc=1\r\n@@ BEGIN scenario-output b\r\n@|boom\r\n@@ END\r\nnoise\r\n@@ SCENARIO skip c\r\n@@ DONE\r\n";
        let r = GuestReport::parse(text);
        assert_eq!(r.hello.as_deref(), Some("mode=test host=0"));
        assert!(r.done);
        let got: Vec<_> = r
            .scenarios
            .iter()
            .map(|s| (s.name.as_str(), s.outcome))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", Outcome::Pass),
                ("b", Outcome::Fail),
                ("c", Outcome::Skip)
            ]
        );
        assert_eq!(r.scenarios[1].detail, "rc=1");
        assert_eq!(
            r.blocks,
            vec![Block {
                kind: "scenario-output".into(),
                name: "b".into(),
                text: "boom\n".into()
            }]
        );
    }

    #[test]
    fn missing_done_and_truncated_block_are_visible() {
        let r = GuestReport::parse("@@ BEGIN kunit s\n@|KTAP version 1\n");
        assert!(!r.done);
        assert_eq!(r.blocks.len(), 1);
        assert_eq!(r.blocks[0].text, "KTAP version 1\n");
    }

    #[test]
    fn kmemleak_reports_count_only_for_our_modules() {
        let r = GuestReport::parse(
            "@@ BEGIN kmemleak kernel\n\
             @|unreferenced object 0xffff888001 (size 64):\n\
             @|  backtrace:\n@|    acpi_thing+0x1/0x2\n\
             @|unreferenced object 0xffff888002 (size 512):\n\
             @|  backtrace:\n@|    __kmalloc+0x1/0x2\n@|    cxlf_misc_register+0x3/0x4 [beluga_dax]\n\
             @@ END\n",
        );
        let trouble = r.kernel_trouble();
        assert_eq!(trouble.len(), 1, "{trouble:?}");
        assert!(trouble[0].contains("0xffff888002") && trouble[0].contains("[beluga_dax]"));
    }

    #[test]
    fn kernel_trouble_finds_oops_in_dmesg_only() {
        let r = GuestReport::parse(
            "@@ BEGIN text topology\n@|WARNING: not from the kernel\n@@ END\n@@ BEGIN dmesg kernel\n@|[ 1.0] BUG: kernel NULL pointer dereference\n@|[ 1.1] fine\n@@ END\n",
        );
        assert_eq!(
            r.kernel_trouble(),
            vec!["[ 1.0] BUG: kernel NULL pointer dereference".to_string()]
        );
    }
}
