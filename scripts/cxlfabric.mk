# SPDX-License-Identifier: GPL-2.0
#
# What every module directory's Kbuild includes: the parts of the support
# layer a module uses, and the project's crates it links.
#
#   $(eval $(call cxlf_support,MODULE,MAIN,PARTS))
#
# MODULE uses PARTS of `support/` (its file names: `netdev`, `pci`, ...)
# and nothing else: its crate root MAIN.rs gets `--cfg cxlf_support="P"`
# for each part P (support/mod.rs compiles only those), and the module
# links the C helpers of those parts that have any (support/helpers/P.c,
# built here as support_P.o). A part that uses others names them in
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
cxlf_needs_pci := coherent dma driver mm sharedmem
cxlf_needs_ratelimit := time
cxlf_needs_sharedmem := coherent mm

cxlf_c_parts := $(basename $(notdir $(wildcard $(src)/../support/helpers/*.c)))

define cxlf_support
cxlf_parts_$(1) := $$(sort $(3) $$(foreach p,$(3),$$(cxlf_needs_$$(p))))
RUSTFLAGS_$(2).o += $$(foreach p,$$(cxlf_parts_$(1)),--cfg 'cxlf_support="$$(p)"') \
	--env-set CXLF_BINDINGS=$$(obj)/cxlf_bindings.rs
$$(obj)/$(2).o: $$(obj)/cxlf_bindings.rs
$(1)-y += $$(addprefix support_,$$(addsuffix .o,$$(filter $$(cxlf_c_parts),$$(cxlf_parts_$(1)))))
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
