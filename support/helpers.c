// SPDX-License-Identifier: GPL-2.0
/*
 * Each module compiles this file once, through its own <dir>/helpers.c
 * (an object linked into two modules is a kbuild error).
 */
#include <linux/slab.h>

#include "helpers.h"

/*
 * The miscdevice and a per-registration copy of the file operations, so
 * that .owner is the registering module: the VFS then holds a module
 * reference for every open file, and the module cannot be unloaded under
 * an open file.
 */
struct cxlf_misc {
	struct miscdevice misc;
	struct file_operations fops;
	void *data;
};

struct cxlf_misc *cxlf_misc_register(const char *name, umode_t mode,
				     const struct file_operations *template,
				     struct module *owner, void *data,
				     int *err)
{
	struct cxlf_misc *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	m->fops = *template;
	m->fops.owner = owner;
	m->data = data;
	m->misc.minor = MISC_DYNAMIC_MINOR;
	m->misc.name = name;
	m->misc.mode = mode;
	m->misc.fops = &m->fops;
	*err = misc_register(&m->misc);
	if (*err) {
		kfree(m);
		return NULL;
	}
	return m;
}

void cxlf_misc_deregister(struct cxlf_misc *m)
{
	misc_deregister(&m->misc);
	kfree(m);
}

int cxlf_misc_minor(const struct cxlf_misc *m)
{
	return m->misc.minor;
}

/* misc_open() points private_data at the miscdevice before ->open runs. */
void *cxlf_misc_data_of_open_file(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct cxlf_misc, misc)->data;
}

unsigned long cxlf_vma_start(const struct vm_area_struct *vma)
{
	return vma->vm_start;
}

unsigned long cxlf_vma_end(const struct vm_area_struct *vma)
{
	return vma->vm_end;
}

unsigned long cxlf_vma_flags(const struct vm_area_struct *vma)
{
	return vma->vm_flags;
}

unsigned long cxlf_vm_flag_shared(void)
{
	return VM_SHARED;
}

unsigned long cxlf_vm_flag_mayshare(void)
{
	return VM_MAYSHARE;
}

unsigned long cxlf_vm_flag_write(void)
{
	return VM_WRITE;
}
