//! cxlctl against sysfs trees recorded in the emulated CXL machine
//! (`cargo xtask test` refreshes them in target/xtask/sysfs-*.json):
//! host bridge -> root port -> switch -> two 256 MiB volatile type-3
//! devices, before and after a 2-way 512 MiB region was created. Memdev
//! names follow asynchronous probe order, so they differ between boots; in
//! this recording mem0 is behind endpoint4 and mem1 behind endpoint3.

use cxlctl::region::{self, RegionRequest};
use cxlctl::snapshot::{materialize, Snapshot};
use cxlctl::sysfs::Sysfs;
use cxlctl::topology::{Kind, Topology};
use std::fs;
use std::path::Path;

fn recorded(name: &str) -> (tempfile::TempDir, Sysfs) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let snap: Snapshot = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    materialize(&snap, dir.path()).unwrap();
    let sys = Sysfs::new(dir.path());
    (dir, sys)
}

fn before() -> (tempfile::TempDir, Sysfs) {
    recorded("qemu-switch-2x256M-before.json")
}

fn after() -> (tempfile::TempDir, Sysfs) {
    recorded("qemu-switch-2x256M-after.json")
}

fn kind_and_parent(topo: &Topology, name: &str) -> (Kind, Option<String>) {
    let dev = topo.get(name).unwrap_or_else(|| panic!("{name} missing"));
    (dev.kind, dev.parent.clone())
}

#[test]
fn switched_topology_is_recognised() {
    let (_dir, sys) = before();
    let topo = Topology::read(&sys).unwrap();
    assert_eq!(kind_and_parent(&topo, "root0"), (Kind::Root, None));
    assert_eq!(
        kind_and_parent(&topo, "port1"),
        (Kind::HostBridge, Some("root0".into()))
    );
    assert_eq!(
        kind_and_parent(&topo, "port2"),
        (Kind::Switch, Some("port1".into()))
    );
    assert_eq!(
        kind_and_parent(&topo, "endpoint3"),
        (Kind::Endpoint, Some("port2".into()))
    );
    assert_eq!(
        kind_and_parent(&topo, "mem0"),
        (Kind::Memdev, Some("endpoint4".into()))
    );
    assert_eq!(
        kind_and_parent(&topo, "mem1"),
        (Kind::Memdev, Some("endpoint3".into()))
    );
    assert_eq!(
        kind_and_parent(&topo, "decoder0.0"),
        (Kind::Decoder, Some("root0".into()))
    );
    assert_eq!(
        topo.get("mem0").unwrap().attr_u64("ram/size"),
        Some(256 << 20)
    );
    assert_eq!(topo.get("decoder0.0").unwrap().attr("cap_ram"), Some("1"));
    assert_eq!(topo.of_kind(Kind::Region).count(), 0);
    assert_eq!(topo.of_kind(Kind::Dax).count(), 0);
}

#[test]
fn the_path_to_a_memdev_crosses_host_bridge_switch_and_endpoint() {
    let (_dir, sys) = before();
    let topo = Topology::read(&sys).unwrap();
    let names = |m: &str| -> Vec<(String, Kind)> {
        topo.path_to(m)
            .unwrap()
            .iter()
            .map(|d| (d.name.clone(), d.kind))
            .collect()
    };
    assert_eq!(
        names("mem0"),
        [
            ("port1".to_string(), Kind::HostBridge),
            ("port2".to_string(), Kind::Switch),
            ("endpoint4".to_string(), Kind::Endpoint)
        ]
    );
    assert_eq!(names("mem1")[2].0, "endpoint3");
    assert!(topo.path_to("mem9").is_err());
    assert!(topo.path_to("port2").is_err(), "not a memdev");
}

#[test]
fn table_shows_the_tree() {
    let (_dir, sys) = after();
    let table = Topology::read(&sys).unwrap().render_table();
    let line = |needle: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(needle))
            .unwrap_or_else(|| panic!("no {needle} in\n{table}"))
            .to_string()
    };
    assert!(line("port2").contains("switch-port"));
    assert!(line("mem1").contains("ram 256M"));
    assert!(line("region0").contains("size 512M ways 2"));
    assert!(line("region0").contains("committed"));
    assert!(line("dax0.0").contains("driver device_dax"));
    // Indentation follows the tree: mem1 is below endpoint3, below port2.
    let indent = |l: String| l.len() - l.trim_start().len();
    assert!(indent(line("mem1")) > indent(line("endpoint3")));
    assert!(indent(line("endpoint3")) > indent(line("port2")));
}

#[test]
fn json_lists_region_and_dax() {
    let (_dir, sys) = after();
    let topo = Topology::read(&sys).unwrap();
    let json = serde_json::to_value(&topo).unwrap();
    let devices = json["devices"].as_array().unwrap();
    let region = devices.iter().find(|d| d["name"] == "region0").unwrap();
    assert_eq!(region["kind"], "region");
    assert_eq!(region["parent"], "decoder0.0");
    assert_eq!(region["interleave_ways"], "2");
    let dax = devices.iter().find(|d| d["name"] == "dax0.0").unwrap();
    assert_eq!(dax["parent"], "dax_region0");
    let dax_region = devices.iter().find(|d| d["name"] == "dax_region0").unwrap();
    assert_eq!(dax_region["parent"], "region0");
}

#[test]
fn plan_for_a_two_way_region() {
    let (_dir, sys) = before();
    let topo = Topology::read(&sys).unwrap();
    let plan = region::plan(
        &topo,
        &RegionRequest {
            ways: 2,
            size: 512 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(plan.root_decoder, "decoder0.0");
    assert_eq!(plan.granularity, 4096);
    assert_eq!(plan.dpa_per_device, 256 << 20);
    assert_eq!(
        plan.targets,
        vec![
            // By serial: mem1 (0x100, behind ds0) first, then mem0 (0x101).
            ("mem1".to_string(), "decoder3.0".to_string()),
            ("mem0".to_string(), "decoder4.0".to_string())
        ]
    );
}

#[test]
fn plan_honours_explicit_memdev_order() {
    let (_dir, sys) = before();
    let topo = Topology::read(&sys).unwrap();
    let req = RegionRequest {
        ways: 1,
        size: 256 << 20,
        memdevs: Some(vec!["mem1".into()]),
        ..Default::default()
    };
    let plan = region::plan(&topo, &req).unwrap();
    assert_eq!(
        plan.targets,
        vec![("mem1".to_string(), "decoder3.0".to_string())]
    );
}

#[test]
fn plan_refuses_impossible_requests_with_a_reason() {
    let (_dir, sys) = before();
    let topo = Topology::read(&sys).unwrap();
    let err = |req: RegionRequest| region::plan(&topo, &req).unwrap_err().to_string();
    let base = RegionRequest {
        ways: 2,
        size: 512 << 20,
        ..Default::default()
    };
    assert!(err(RegionRequest {
        size: 100 << 20,
        ..base.clone()
    })
    .contains("multiple of 512M"));
    assert!(err(RegionRequest {
        ways: 4,
        size: 1 << 30,
        ..base.clone()
    })
    .contains("need 4 memdevs"));
    assert!(err(RegionRequest {
        ways: 5,
        ..base.clone()
    })
    .contains("interleave ways"));
    assert!(err(RegionRequest {
        size: 1 << 30,
        ..base.clone()
    })
    .contains("256M of RAM capacity free"));
    assert!(err(RegionRequest {
        granularity: Some(3000),
        ..base.clone()
    })
    .contains("granularity"));
    assert!(err(RegionRequest {
        memdevs: Some(vec!["mem0".into(), "mem9".into()]),
        ..base.clone()
    })
    .contains("no memdev named mem9"));
    assert!(err(RegionRequest {
        root_decoder: Some("decoder3.0".into()),
        ..base
    })
    .contains("is not a root decoder"));
}

#[test]
fn plan_sees_capacity_already_allocated() {
    let (_dir, sys) = after();
    let topo = Topology::read(&sys).unwrap();
    let e = region::plan(
        &topo,
        &RegionRequest {
            ways: 2,
            size: 512 << 20,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("0 of RAM capacity free") || e.to_string().contains("capacity free"),
        "{e}"
    );
}

/// A failure half-way through creation undoes the steps already done: the
/// region is deleted again and the DPA that was allocated is freed.
#[test]
fn failed_create_rolls_back() {
    let (dir, sys) = before();
    let topo = Topology::read(&sys).unwrap();
    let plan = region::plan(
        &topo,
        &RegionRequest {
            ways: 2,
            size: 512 << 20,
            ..Default::default()
        },
    )
    .unwrap();

    // Stand in for the kernel: the root decoder offers region0 and the
    // region's attributes exist, but target1 cannot be written.
    let root_dir = dir
        .path()
        .join("devices/platform/ACPI0017:00/root0/decoder0.0");
    fs::write(root_dir.join("create_ram_region"), "region0\n").unwrap();
    let region_dir = root_dir.join("region0");
    fs::create_dir_all(region_dir.join("target1")).unwrap();
    for attr in [
        "interleave_granularity",
        "interleave_ways",
        "size",
        "target0",
        "commit",
    ] {
        fs::write(region_dir.join(attr), "").unwrap();
    }
    std::os::unix::fs::symlink(
        "../../../devices/platform/ACPI0017:00/root0/decoder0.0/region0",
        dir.path().join("bus/cxl/devices/region0"),
    )
    .unwrap();

    let err = format!("{:#}", region::create(&sys, &plan).unwrap_err());
    assert!(err.contains("target1"), "{err}");
    assert!(err.contains("removed again"), "{err}");

    let read = |p: &Path| fs::read_to_string(p).unwrap().trim().to_string();
    assert_eq!(read(&root_dir.join("delete_region")), "region0");
    let dec = |n: &str| {
        dir.path().join(format!(
            "devices/platform/ACPI0017:00/root0/port1/port2/endpoint{n}/decoder{n}.0"
        ))
    };
    // Both decoders were given DPA before target1 failed; both are freed.
    assert_eq!(read(&dec("3").join("dpa_size")), "0");
    assert_eq!(read(&dec("4").join("dpa_size")), "0");
    assert_eq!(read(&region_dir.join("target0")), "decoder3.0");
}
