//! The ivshmem server protocol (QEMU's `docs/specs/ivshmem-spec.rst`),
//! for `ivshmem-doorbell` devices; Debian ships no ivshmem-server.
//!
//! Every message is a little-endian `i64`, some with one file descriptor
//! (`SCM_RIGHTS`). A client that connects gets: the protocol version (0);
//! its peer id; `-1` with the shared memory; for each other peer, that
//! peer's id once per vector, each with the peer's eventfd for that
//! vector; then its own id once per vector with its own eventfds. Later,
//! a peer id with an fd announces a peer and one without says it left.
//!
//! The device model is itself a peer ([`MODEL_PEER`]) with one eventfd
//! per vector: a guest rings it by writing `MODEL_PEER << 16 | vector` to
//! BAR0's doorbell register. It rings a guest by writing to the guest's
//! eventfd for a vector, which QEMU turns into that MSI-X vector.

use anyhow::{bail, ensure, Context, Result};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// The protocol version this speaks.
pub const PROTOCOL_VERSION: i64 = 0;
/// The device model's peer id; clients get ids from 1.
pub const MODEL_PEER: u16 = 0;

/// One eventfd per vector of a peer.
pub struct Vectors(Vec<EventFd>);

impl Vectors {
    pub fn new(n: u32) -> Result<Vectors> {
        let fds = (0..n)
            .map(|_| {
                EventFd::from_value_and_flags(0, EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
            })
            .collect::<nix::Result<Vec<_>>>()
            .context("eventfd")?;
        Ok(Vectors(fds))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Rings vector `v` (an interrupt to the guest that owns these).
    pub fn ring(&self, v: u32) -> Result<()> {
        let fd = self.0.get(v as usize).context("no such vector")?;
        fd.write(1).context("eventfd write")?;
        Ok(())
    }

    /// Takes vector `v`'s pending rings (0 if none): a doorbell the guest
    /// rang.
    pub fn take(&self, v: u32) -> u64 {
        self.0
            .get(v as usize)
            .and_then(|fd| fd.read().ok())
            .unwrap_or(0)
    }

    pub fn fd(&self, v: u32) -> Option<BorrowedFd<'_>> {
        self.0.get(v as usize).map(AsFd::as_fd)
    }
}

/// Sends one message, with `fd` if given.
pub fn send(sock: &UnixStream, value: i64, fd: Option<RawFd>) -> Result<()> {
    let bytes = value.to_le_bytes();
    let iov = [IoSlice::new(&bytes)];
    let fds;
    let cmsg: Vec<ControlMessage> = match fd {
        Some(fd) => {
            fds = [fd];
            vec![ControlMessage::ScmRights(&fds)]
        }
        None => vec![],
    };
    let sent = sendmsg::<()>(sock.as_raw_fd(), &iov, &cmsg, MsgFlags::MSG_NOSIGNAL, None)
        .context("sendmsg")?;
    ensure!(sent == bytes.len(), "short send");
    Ok(())
}

/// Receives one message and its fd, if any (a client's side: the tests
/// and `cxlnic-model probe`).
pub fn recv(sock: &UnixStream) -> Result<(i64, Option<OwnedFd>)> {
    let mut bytes = [0u8; 8];
    let mut iov = [std::io::IoSliceMut::new(&mut bytes)];
    let mut space = nix::cmsg_space!(RawFd);
    let msg = recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .context("recvmsg")?;
    ensure!(msg.bytes == 8, "short message ({} bytes)", msg.bytes);
    let mut fd = None;
    for c in msg.cmsgs().context("control messages")? {
        if let ControlMessageOwned::ScmRights(fds) = c {
            for raw in fds {
                // SAFETY: the kernel just installed `raw` in this process
                // for us (SCM_RIGHTS); nothing else owns it.
                let owned = unsafe { OwnedFd::from_raw_fd(raw) };
                if fd.is_none() {
                    fd = Some(owned);
                }
            }
        }
    }
    Ok((i64::from_le_bytes(bytes), fd))
}

/// What a connected client got: its id, the shared memory, the model's
/// eventfds (to ring it) and its own (to be rung).
pub struct ClientSetup {
    pub id: i64,
    pub shm: OwnedFd,
    pub peers: Vec<(i64, Vec<OwnedFd>)>,
    pub own: Vec<OwnedFd>,
}

/// Reads a server's greeting as QEMU does, for `vectors` vectors and a
/// server that has exactly one other peer (the model).
pub fn client_setup(sock: &UnixStream, vectors: usize) -> Result<ClientSetup> {
    let (version, fd) = recv(sock)?;
    ensure!(
        version == PROTOCOL_VERSION && fd.is_none(),
        "version message {version}"
    );
    let (id, fd) = recv(sock)?;
    ensure!(id >= 0 && fd.is_none(), "id message {id}");
    let (minus_one, shm) = recv(sock)?;
    ensure!(minus_one == -1, "shared memory message {minus_one}");
    let shm = shm.context("no shared memory fd")?;
    let mut peers: Vec<(i64, Vec<OwnedFd>)> = vec![];
    let mut own = vec![];
    while own.len() < vectors {
        let (peer, fd) = recv(sock)?;
        let fd = fd.with_context(|| format!("peer {peer} without an eventfd"))?;
        if peer == id {
            own.push(fd);
        } else {
            match peers.iter_mut().find(|(p, _)| *p == peer) {
                Some((_, fds)) => fds.push(fd),
                None => peers.push((peer, vec![fd])),
            }
        }
    }
    Ok(ClientSetup {
        id,
        shm,
        peers,
        own,
    })
}

/// One device's server: a socket QEMU's `ivshmem-doorbell` connects to,
/// the device memory it hands out, and the model's own vectors.
pub struct Server {
    listener: UnixListener,
    shm: OwnedFd,
    vectors: u32,
    model: Vectors,
}

/// A connected guest: its id and the eventfds that interrupt it.
pub struct Guest {
    pub id: i64,
    pub irq: Vectors,
    pub sock: UnixStream,
}

impl Server {
    /// Listens at `path` (replacing a stale socket) to hand out `shm`.
    pub fn bind(path: &Path, shm: OwnedFd, vectors: u32) -> Result<Server> {
        ensure!((1..=64).contains(&vectors), "{vectors} vectors: 1 to 64");
        if path.exists() {
            std::fs::remove_file(path).with_context(|| format!("remove {}", path.display()))?;
        }
        let listener =
            UnixListener::bind(path).with_context(|| format!("bind {}", path.display()))?;
        Ok(Server {
            listener,
            shm,
            vectors,
            model: Vectors::new(vectors)?,
        })
    }

    /// The model's own vectors: doorbells the guest rings.
    pub fn doorbells(&self) -> &Vectors {
        &self.model
    }

    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// Accepts one client and greets it as client `id`: version, id,
    /// memory, the model's vectors, its own vectors.
    pub fn accept(&self, id: i64) -> Result<Guest> {
        ensure!(id > i64::from(MODEL_PEER) && id <= 0xffff, "client id {id}");
        let (sock, _) = self.listener.accept().context("accept")?;
        let irq = Vectors::new(self.vectors)?;
        send(&sock, PROTOCOL_VERSION, None)?;
        send(&sock, id, None)?;
        send(&sock, -1, Some(self.shm.as_raw_fd()))?;
        for v in 0..self.vectors {
            let fd = self.model.fd(v).context("model vector")?;
            send(&sock, i64::from(MODEL_PEER), Some(fd.as_raw_fd()))?;
        }
        for v in 0..self.vectors {
            let fd = irq.fd(v).context("guest vector")?;
            send(&sock, id, Some(fd.as_raw_fd()))?;
        }
        if irq.len() != self.vectors as usize {
            bail!("vectors lost");
        }
        Ok(Guest { id, irq, sock })
    }
}
