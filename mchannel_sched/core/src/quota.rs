//! What unprivileged users hold of a [`Table`](super::table::Table): at
//! most `per_user` entries each, a bounded number of users at once, and
//! together never the last eighth of the table, so that an unprivileged
//! user cannot keep a privileged one from inserting.

/// Users with entries counted at once.
pub const QUOTA_USERS: usize = 64;

/// Why a table refused an insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The key is in the table already (`EEXIST`).
    Exists,
    /// The table is full, or its share for unprivileged users is
    /// (`ENOSPC`).
    Full,
    /// The user has its quota, or too many users hold entries (`EDQUOT`).
    Quota,
    /// The key's word is one the table reserves (`EINVAL`).
    Invalid,
}

/// The counts of entries per unprivileged user.
///
/// # Invariants
///
/// An entry with a non-zero count is the only one for its uid; `total` is
/// the sum of the counts.
#[derive(Debug)]
pub struct Quota {
    /// (uid, entries); a zero count is a free entry.
    users: [(u32, usize); QUOTA_USERS],
    total: usize,
    /// Most entries per user, and of all unprivileged users together.
    per_user: usize,
    shared: usize,
}

impl Quota {
    /// The quota of a table of `max_entries`, `per_user` of them per user.
    pub fn new(max_entries: usize, per_user: usize) -> Quota {
        // The last eighth (at least one) stays for privileged callers.
        let reserved = (max_entries / 8).max(1);
        // INVARIANT: no entry holds anything.
        Quota {
            users: [(0, 0); QUOTA_USERS],
            total: 0,
            per_user,
            shared: max_entries.saturating_sub(reserved),
        }
    }

    /// Counts one more entry for `uid`: [`Refused::Full`] when the
    /// unprivileged share of the table is used up, [`Refused::Quota`] when
    /// `uid`'s quota is (or too many users hold entries).
    pub fn charge(&mut self, uid: u32) -> Result<(), Refused> {
        if self.total >= self.shared {
            return Err(Refused::Full);
        }
        let at = match self.users.iter().position(|&(u, n)| n > 0 && u == uid) {
            Some(i) => i,
            None => self
                .users
                .iter()
                .position(|&(_, n)| n == 0)
                .ok_or(Refused::Quota)?,
        };
        let Some(entry) = self.users.get_mut(at) else {
            return Err(Refused::Quota);
        };
        if entry.1 >= self.per_user {
            return Err(Refused::Quota);
        }
        // INVARIANT: `uid`'s entry (found, or a free one), and the total,
        // grow together.
        *entry = (uid, entry.1.saturating_add(1));
        self.total = self.total.saturating_add(1);
        Ok(())
    }

    /// Counts one entry of `uid` less.
    pub fn release(&mut self, uid: u32) {
        if let Some(entry) = self.users.iter_mut().find(|e| e.1 > 0 && e.0 == uid) {
            // INVARIANT: as in `charge`.
            entry.1 = entry.1.saturating_sub(1);
            self.total = self.total.saturating_sub(1);
        }
    }

    /// Entries `uid` holds.
    pub fn of(&self, uid: u32) -> usize {
        self.users
            .iter()
            .find(|e| e.1 > 0 && e.0 == uid)
            .map_or(0, |e| e.1)
    }
}
