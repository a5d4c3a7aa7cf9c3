# SPDX-License-Identifier: GPL-2.0
#
# Builds the cxlfabric modules out of tree against a Rust-enabled kernel:
#   make KDIR=/path/to/built/kernel        (or: cargo xtask build)
# The tree must be configured with CONFIG_RUST=y and built with LLVM=1 by the
# same rustc that builds the modules.

KDIR ?= /lib/modules/$(shell uname -r)/build

all: modules

modules modules_install clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 $@

.PHONY: all modules modules_install clean
