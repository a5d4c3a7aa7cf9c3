//! The two ends of a pair (src, dst) and their sessions: [`SrcEnd`] at
//! the source (its buffers, the `ref_queue` it produces, the return ring
//! it consumes) and [`DstEnd`] at the destination (the `ref_queue` it
//! consumes, its lend table, the return ring it produces); and the
//! region's header and heartbeat lines.
//!
//! # Epochs and sessions
//!
//! Each host has an epoch, one more at each join (its heartbeat line).
//! A session of the pair is a pair of epochs (e_src, e_dst), agreed on
//! in two steps, each in a line only its writer writes:
//!
//! 1. The source sees a destination epoch it has not reset for (in the
//!    destination line): it suspects all its buffers that were not free,
//!    restarts both rings at its start position and publishes
//!    `ack_dst_epoch = e_dst` with its own epoch (source line).
//! 2. The destination sees a source epoch it has not acknowledged whose
//!    source line acknowledges its own epoch: it drops what is left of
//!    the old queue, takes the source's positions, publishes its held
//!    bitmap (the lend table: buffers of the source its stack still holds,
//!    of any session) and `ack_src_epoch = e_src`.
//! 3. The source sees the acknowledgement: the held buffers are reserved
//!    (they come back tagged 0, "an earlier session"), the rest free.
//!    Up. At step 2 the destination marks everything it holds old.
//!
//! A host that rejoins (new epoch, after a crash or reload) thus resets
//! the queues of all its pairs without either side reloading. A peer is
//! dead only when its lease expired (beluga's, observed by the module):
//! then [`SrcEnd::peer_dead`] stops sending and takes what was out as
//! unknown (not free: a host whose module went may live on, its stack
//! holding pages it lent), and [`DstEnd::peer_dead`] stops reading the
//! queue; the lend table stays until the stack lets go and gives back at
//! the next session. Until the dead peer rejoins with a new epoch, its
//! lines are ignored. A destination that rejoins after its module
//! reloaded first adopts ([`DstEnd::adopt`]) the buffers whose pages its
//! stack still holds: they are in its held bitmap, so the source keeps
//! them reserved until they come back.

mod dst_end;
mod frame;
mod region;
mod session;
mod src_end;

pub use dst_end::DstEnd;
pub use frame::{Frame, TxError};
pub use region::{attach, beat, format, heartbeat, join};
pub use session::Session;
pub use src_end::SrcEnd;
