//! What an attached thread belongs to, and what the threads it creates
//! inherit.

use super::thread::RunState;

/// An attached thread's channel, whether the threads it creates join it,
/// and the user whose quota it counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Membership {
    channel: u32,
    follow_forks: bool,
    /// `None` if a privileged caller (`CAP_SYS_NICE`) attached it: then
    /// only such a caller may detach it.
    user: Option<u32>,
}

impl Membership {
    /// On channel `channel`; `follow_forks`: the threads it creates join
    /// too; `user`: the uid whose quota it counts against (`None`:
    /// privileged).
    pub fn new(channel: u32, follow_forks: bool, user: Option<u32>) -> Membership {
        Membership {
            channel,
            follow_forks,
            user,
        }
    }

    /// Its channel.
    pub fn channel(&self) -> u32 {
        self.channel
    }

    /// The user whose quota it counts against (`None`: privileged).
    pub fn user(&self) -> Option<u32> {
        self.user
    }

    /// Attached by a privileged caller.
    pub fn privileged(&self) -> bool {
        self.user.is_none()
    }

    /// What a thread it creates at `now_ns` starts with, if its forks are
    /// followed: the same channel and user, its forks followed too, and a
    /// run window with the budget and length `run` gives its next one.
    pub fn child(&self, run: &RunState, now_ns: u64) -> Option<(Membership, RunState)> {
        if !self.follow_forks {
            return None;
        }
        let (t_r, t_w) = run.next_ns();
        Some((*self, RunState::new(now_ns, t_w, t_r)))
    }
}
