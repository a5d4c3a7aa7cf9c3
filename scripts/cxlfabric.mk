# SPDX-License-Identifier: GPL-2.0
#
# What every module directory's Kbuild includes: the parts of the support
# layer a module uses, and the project's crates it links.
#
#   $(eval $(call cxlf_support,MODULE,MAIN,PARTS))
#
# MODULE uses PARTS of the support crate (`support/lib.rs`, crate
# `cxlf_support`; PARTS are its file names: `netdev`, `pci`, ...) and
# nothing else. The crate is built for MODULE alone, as
# `cxlf_support_MODULE.o`, with `--cfg cxlf_support="P"` for each part P
# (`support/lib.rs` compiles only those), `CXLF_MODNAME` (its `pr_*!`
# prefix) and `CXLF_BINDINGS` (the generated bindings); MAIN.rs gets it as
# `--extern cxlf_support`, and the module links it, the `uapi` crate (`cxlf_uapi`) and
# the C helpers of its parts that have any (support/helpers/P.c, built
# here as support_P.o). A part that uses others names them in
# `cxlf_needs_P` below, so a module names only what it calls itself.
#
#   $(eval $(call cxlf_crate,NAME,ROOT,DEPS,RUSTFLAGS))
#
# The project's Rust crates inside a module, built as the kernel builds
# its own (`rust_common_cmd`: the kernel's target, flags and lints), each
# into `$(obj)/NAME.o`, linked into the module like any object, and
# `$(obj)/libNAME.rmeta`, what its dependents compile against. ROOT is
# the crate's root file, DEPS the crates it uses (built in this directory
# too), RUSTFLAGS extra flags (`--cfg ...`). A crate root that uses
# crates says so with `$(call cxlf_uses,OBJ,DEPS)`. A crate used by
# several modules of one directory is built once; each directory builds
# its own copy (Kbuild builds an object in one directory only).

# The parts each part uses (complete: what those use is listed too).
cxlf_needs_dax := driver fs
cxlf_needs_dma := coherent
cxlf_needs_miscdevice := fs mm sysfs
cxlf_needs_napi := coherent irq netdev
cxlf_needs_netdev := coherent
cxlf_needs_netlend := coherent netdev
cxlf_needs_pagemap := page
cxlf_needs_pci := coherent dma driver mm sharedmem
cxlf_needs_ratelimit := time
cxlf_needs_region := coherent page
cxlf_needs_rxfrag := coherent irq napi netdev page
cxlf_needs_sharedmem := coherent mm

cxlf_c_parts := $(basename $(notdir $(wildcard $(src)/../support/helpers/*.c)))

define cxlf_support
cxlf_parts_$(1) := $$(sort $(3) $$(foreach p,$(3),$$(cxlf_needs_$$(p))))
$(1)-y += cxlf_support_$(1).o cxlf_uapi.o beluga_region_abi.o \
	$$(addprefix support_,$$(addsuffix .o,$$(filter $$(cxlf_c_parts),$$(cxlf_parts_$(1)))))
RUSTFLAGS_cxlf_support_$(1).o += --emit=metadata=$$(obj)/libcxlf_support_$(1).rmeta \
	$$(foreach p,$$(cxlf_parts_$(1)),--cfg 'cxlf_support="$$(p)"') \
	--env-set CXLF_BINDINGS=$$(obj)/cxlf_bindings.rs --env-set CXLF_MODNAME=$(1) \
	--extern cxlf_uapi --extern beluga_region_abi
$$(obj)/cxlf_support_$(1).o: $$(src)/../support/lib.rs $$(obj)/cxlf_bindings.rs \
		$$(obj)/cxlf_uapi.o $$(obj)/beluga_region_abi.o FORCE
	+$$(call if_changed_rule,rustc_o_rs)
targets += cxlf_support_$(1).o
RUSTFLAGS_$(2).o += --extern cxlf_support=$$(obj)/libcxlf_support_$(1).rmeta
$$(obj)/$(2).o: $$(obj)/cxlf_support_$(1).o
endef

$(obj)/support_%.o: $(src)/../support/helpers/%.c FORCE
	$(call if_changed_rule,cc_o_c)

rustflags-y += -L $(obj)

# The support layer's own bindings (support/bindings/: what 6.12's
# `kernel::bindings` lacks), generated as the kernel generates its own:
# its bindgen, its C flags, `parameters` for what to generate.
cxlf_bindgen_parameters = $(shell grep -Ev '^\#|^$$' $(src)/../support/bindings/parameters)
quiet_cmd_cxlf_bindgen = BINDGEN $@
      cmd_cxlf_bindgen = \
	$(BINDGEN) $< $(cxlf_bindgen_parameters) --use-core --with-derive-default \
		--ctypes-prefix ffi --no-layout-tests --no-debug '.*' --no-doc-comments \
		--rust-target 1.68 --raw-line 'pub use kernel::bindings::*;' -o $@ -- \
		$(c_flags) -w -fno-builtin -D__BINDGEN__ -DMODULE
CFLAGS_cxlf_bindings.o += -I$(srctree)/drivers/dax
$(obj)/cxlf_bindings.rs: $(src)/../support/bindings/bindings_helper.h \
		$(src)/../support/bindings/parameters FORCE
	$(call if_changed_dep,cxlf_bindgen)
targets += cxlf_bindings.rs

# The user ABI (`uapi/`), a crate of the tools too, which the support
# crate re-exports (`support::uapi`), named `cxlf_uapi` here (the kernel
# has a `uapi` crate of its own): built once per directory that uses
# the support crate, like the crates below.
$(obj)/cxlf_uapi.o: $(src)/../uapi/src/lib.rs FORCE
	+$(call if_changed_rule,rustc_o_rs)
RUSTFLAGS_cxlf_uapi.o += --emit=metadata=$(obj)/libcxlf_uapi.rmeta \
	-Aunused_attributes -Aclippy::duplicated_attributes
targets += cxlf_uapi.o

# beluga_dax's region ABI (`beluga_dax/region_abi/`: the C types of
# `beluga_region.h`'s functions and their names), which the support
# crate's `region` part is glue over: types and constants only, it adds
# no code or symbol to a module.
$(obj)/beluga_region_abi.o: $(src)/../beluga_dax/region_abi/src/lib.rs FORCE
	+$(call if_changed_rule,rustc_o_rs)
RUSTFLAGS_beluga_region_abi.o += --emit=metadata=$(obj)/libbeluga_region_abi.rmeta \
	-Aunused_attributes -Aclippy::duplicated_attributes
targets += beluga_region_abi.o

# `-Aunused_attributes -Aclippy::duplicated_attributes`: the kernel adds
# `#![no_std]` to every crate, and the project's crates say it themselves
# for their host builds.
define cxlf_crate
RUSTFLAGS_$(1).o += --emit=metadata=$$(obj)/lib$(1).rmeta \
	-Aunused_attributes -Aclippy::duplicated_attributes \
	$(foreach d,$(3),--extern $(d)) $(4)
$$(obj)/$(1).o: $(2) $(foreach d,$(3),$$(obj)/$(d).o) FORCE
	+$$(call if_changed_rule,rustc_o_rs)
targets += $(1).o
endef

define cxlf_uses
RUSTFLAGS_$(basename $(1)).o += $(foreach d,$(2),--extern $(d))
$$(obj)/$(1): $(foreach d,$(2),$$(obj)/$(d).o)
endef
