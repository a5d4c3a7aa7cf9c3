/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C side of the cxlfabric support layer: what the 6.12 Rust bindings lack
 * (struct miscdevice is not in bindings_helper.h, vm_flags is a union) and
 * static inline functions. Only the Rust wrappers in support/ call these.
 */
#ifndef CXLFABRIC_SUPPORT_HELPERS_H
#define CXLFABRIC_SUPPORT_HELPERS_H

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>

struct cxlf_misc;

struct cxlf_misc *cxlf_misc_register(const char *name, umode_t mode,
				     const struct file_operations *template,
				     struct module *owner, void *data,
				     int *err);
void cxlf_misc_deregister(struct cxlf_misc *misc);
int cxlf_misc_minor(const struct cxlf_misc *misc);
void *cxlf_misc_data_of_open_file(struct file *file);

unsigned long cxlf_vma_start(const struct vm_area_struct *vma);
unsigned long cxlf_vma_end(const struct vm_area_struct *vma);
unsigned long cxlf_vma_flags(const struct vm_area_struct *vma);
unsigned long cxlf_vm_flag_shared(void);
unsigned long cxlf_vm_flag_mayshare(void);
unsigned long cxlf_vm_flag_write(void);

#endif
