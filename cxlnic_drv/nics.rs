// SPDX-License-Identifier: GPL-2.0

//! The NICs this driver has bound, for `/dev/cxlnic`: an ioctl names an
//! interface by its ifindex, which is looked up here, never kept.
//!
//! Each entry holds counted references (the port, and the interface
//! for its name and namespace) and is removed when its NIC goes, before
//! the interface is unregistered. An ioctl that found a port keeps only
//! its own references while it runs; a port whose NIC went meanwhile
//! answers `ENODEV` (its offload is shut down first: `kvs::Kvs`).
//!
//! Locks: `list`, a leaf (held only to search and change the list).

use crate::port::Port;
use crate::support::kvec::VecExt;
use crate::support::netdev::NetdevRef;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

struct Bound {
    dev: NetdevRef,
    port: Arc<Port>,
}

#[pin_data]
pub(crate) struct Nics {
    #[pin]
    list: Mutex<KVec<Bound>>,
}

impl Nics {
    pub(crate) fn new() -> Result<Arc<Nics>> {
        Arc::pin_init(
            pin_init!(Nics {
                list <- new_mutex!(KVec::new(), "cxlnic:nics"),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds a bound NIC's port and interface.
    pub(crate) fn add(&self, dev: NetdevRef, port: Arc<Port>) -> Result {
        self.list.lock().push(Bound { dev, port }, GFP_KERNEL)?;
        Ok(())
    }

    /// Removes `port`'s entry (its NIC goes).
    pub(crate) fn remove(&self, port: &Arc<Port>) {
        let gone = {
            let mut list = self.list.lock();
            let at = list.iter().position(|b| Arc::ptr_eq(&b.port, port));
            at.and_then(|i| list.swap_remove(i))
        };
        // The interface reference goes after the lock.
        drop(gone);
    }

    /// The port and interface whose ifindex, in the caller's network
    /// namespace, is `ifindex`.
    pub(crate) fn find(&self, ifindex: u32) -> Option<(Arc<Port>, NetdevRef)> {
        let list = self.list.lock();
        list.iter()
            .find(|b| b.dev.get().ifindex_here() == Some(ifindex))
            .map(|b| (b.port.clone(), b.dev.get().hold()))
    }
}
