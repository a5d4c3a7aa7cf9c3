// SPDX-License-Identifier: GPL-2.0
/* sysfs directories of read-only attributes. */

#include "../helpers.h"

#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

/*
 * A sysfs directory of read-only attributes, all shown by one callback
 * with the directory's data pointer. The kobject is the core's
 * (kobject_create_and_add: its release is core code, so a delayed release,
 * CONFIG_DEBUG_KOBJECT_RELEASE, never calls into an unloaded module);
 * the attributes and the data pointer are this module's, freed once
 * kobject_del() has removed the files. In C: kobj_attribute and
 * container_of().
 */
struct cxlf_dir_attr {
	struct kobj_attribute ka;
	struct cxlf_dir *dir;
	unsigned int index;
};

struct cxlf_dir {
	struct kobject *kobj;
	void *data;
	ssize_t (*show)(void *data, unsigned int index, char *buf);
	struct cxlf_dir_attr *attrs;
	struct attribute **ptrs;
	struct attribute_group group;
};

static ssize_t cxlf_dir_show(struct kobject *kobj, struct kobj_attribute *ka,
			     char *buf)
{
	struct cxlf_dir_attr *a = container_of(ka, struct cxlf_dir_attr, ka);

	return a->dir->show(a->dir->data, a->index, buf);
}

static void cxlf_dir_free(struct cxlf_dir *d)
{
	kfree(d->ptrs);
	kfree(d->attrs);
	kfree(d);
}

/*
 * NULL from kobject_create_and_add() is -ENOMEM, or a duplicate name
 * (which the callers prevent).
 */
struct cxlf_dir *cxlf_dir_create(struct kobject *parent, const char *name,
				 void *data, const char *const *attr_names,
				 unsigned int nr_attrs,
				 ssize_t (*show)(void *data, unsigned int index,
						 char *buf))
{
	struct cxlf_dir *d = kzalloc(sizeof(*d), GFP_KERNEL);
	unsigned int i;
	int err;

	if (!d)
		return ERR_PTR(-ENOMEM);
	d->attrs = kcalloc(nr_attrs, sizeof(*d->attrs), GFP_KERNEL);
	d->ptrs = kcalloc(nr_attrs + 1, sizeof(*d->ptrs), GFP_KERNEL);
	if (!d->attrs || !d->ptrs) {
		cxlf_dir_free(d);
		return ERR_PTR(-ENOMEM);
	}
	for (i = 0; i < nr_attrs; i++) {
		sysfs_attr_init(&d->attrs[i].ka.attr);
		d->attrs[i].ka.attr.name = attr_names[i];
		d->attrs[i].ka.attr.mode = 0444;
		d->attrs[i].ka.show = cxlf_dir_show;
		d->attrs[i].dir = d;
		d->attrs[i].index = i;
		d->ptrs[i] = &d->attrs[i].ka.attr;
	}
	d->group.attrs = d->ptrs;
	d->data = data;
	d->show = show;
	d->kobj = kobject_create_and_add(name, parent);
	if (!d->kobj) {
		cxlf_dir_free(d);
		return ERR_PTR(-ENOMEM);
	}
	if (nr_attrs) {
		err = sysfs_create_group(d->kobj, &d->group);
		if (err) {
			kobject_put(d->kobj);
			cxlf_dir_free(d);
			return ERR_PTR(err);
		}
	}
	return d;
}

/*
 * kobject_del() removes the directory and its files and waits for running
 * show callbacks (kernfs drains its active references), so the
 * attributes, and the caller's data, may be freed once this returns.
 */
void cxlf_dir_destroy(struct cxlf_dir *d)
{
	kobject_del(d->kobj);
	kobject_put(d->kobj);
	cxlf_dir_free(d);
}

/* In C: struct cxlf_dir is private to this file. */
struct kobject *cxlf_dir_kobject(struct cxlf_dir *d)
{
	return d->kobj;
}
