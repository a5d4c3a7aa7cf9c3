//! Shared cases of the attached-thread bookkeeping (`table`, `quota`,
//! `seat`, `member`): suite `mchannel_core_table`. The table here is the
//! module's but for its locks (`Cell`s taken and put back: one thread,
//! and nothing that panics, which the kernel's objtool would flag) and its
//! keys (words, four of them to a probe start so that chains form).

use super::super::member::Membership;
use super::super::outcome::Outcome;
use super::super::quota::Refused;
use super::super::seat::{Holder, Seat};
use super::super::table::{slots_for, Book, Exclusive, Slot, Table, Words, TOMBSTONE};
use super::super::thread::RunState;
use core::cell::Cell;

/// What the module's slot holds for a thread, reduced to its channel and
/// its park item (a number here).
struct Thing {
    channel: u32,
    item: Option<u32>,
}

impl Holder<u32> for Thing {
    fn item(&mut self) -> &mut Option<u32> {
        &mut self.item
    }
}

type Value = Cell<Seat<Thing, u32>>;

/// Runs `f` on the seat in `v` (a slot's lock in the module).
fn seat<R>(v: &Value, f: impl FnOnce(&mut Seat<Thing, u32>) -> R) -> R {
    let mut seat = v.take();
    let out = f(&mut seat);
    v.set(seat);
    out
}

/// The book's lock, for one thread.
struct Single(Cell<Option<Book>>);

impl Single {
    fn new(max: usize, per_user: usize) -> Single {
        Single(Cell::new(Some(Book::new(max, per_user))))
    }
}

impl Exclusive<Book> for Single {
    fn with<R>(&self, f: impl FnOnce(&mut Book) -> R) -> R {
        let mut book = self.0.take();
        // Taken only by a call back into the lock, which `Exclusive`
        // rules out: an empty book then, which refuses every insert.
        let out = match book.as_mut() {
            Some(b) => f(b),
            None => f(&mut Book::new(0, 0)),
        };
        self.0.set(book);
        out
    }
}

type Threads<'a> = Table<Words, &'a [Slot<Value>], Single>;

/// Slots for 16 threads.
const SLOTS: usize = 32;

fn slots() -> [Slot<Value>; SLOTS] {
    core::array::from_fn(|_| Slot::new(Cell::new(Seat::new())))
}

/// A table of 16 threads, `per_user` for one user.
fn table(slots: &[Slot<Value>], per_user: usize) -> Option<Threads<'_>> {
    Table::new(slots, Single::new(16, per_user))
}

/// The `i`th key: four to a probe start.
fn key(i: usize) -> usize {
    0x1000 * (1 + i / 4) + 2 + i % 4
}

/// Attaches `key` on `channel` for `user`, as the module does.
fn attach(t: &Threads<'_>, key: usize, channel: u32, user: Option<u32>) -> Result<(), Refused> {
    t.insert(&key, user, |v| {
        let thing = Thing {
            channel,
            item: None,
        };
        let _ = seat(v, |s| s.sit(key, thing));
    })
}

/// `key`'s channel, checked against the seat's word as the module does.
fn channel_of(t: &Threads<'_>, key: usize) -> Option<u32> {
    seat(t.find(&key)?, |s| s.of(key).map(|th| th.channel))
}

fn detach(t: &Threads<'_>, key: usize) -> Option<Thing> {
    t.remove(&key, |v| seat(v, Seat::leave)).flatten()
}

/// Threads on `channel` (any, with `None`).
fn on_channel(t: &Threads<'_>, channel: Option<u32>) -> usize {
    t.used()
        .filter(|v| {
            seat(v, |s| {
                s.held()
                    .is_some_and(|th| channel.map_or(true, |c| c == th.channel))
            })
        })
        .count()
}

pub fn table_shapes_are_checked() -> Outcome {
    check_eq!(slots_for(16), Some(32));
    check_eq!(slots_for(17), Some(64));
    check_eq!(slots_for(usize::MAX), None);
    let s = slots();
    // A power of two above the keys, and nothing else.
    let book = |max| Single::new(max, max);
    check!(Threads::new(&s[..], book(16)).is_some());
    check!(Threads::new(&s[..24], book(8)).is_none());
    check!(Threads::new(&s[..16], book(16)).is_none());
    // Words 0 and 1 mark empty slots and tombstones.
    let t = ok!(table(&s, 16));
    check_eq!(t.slot_count(), SLOTS);
    check_eq!(attach(&t, 0, 1, None), Err(Refused::Invalid));
    check_eq!(attach(&t, TOMBSTONE, 1, None), Err(Refused::Invalid));
    check!(t.find(&TOMBSTONE).is_none());
    check_eq!(t.live(), 0);
    Ok(())
}

pub fn attach_then_detach_leaves_no_trace() -> Outcome {
    let s = slots();
    let t = ok!(table(&s, 16));
    let me = key(0);
    check_eq!(t.live(), 0);
    ok!(attach(&t, me, 7, None));
    check_eq!(t.live(), 1);
    check_eq!(channel_of(&t, me), Some(7));
    check_eq!(attach(&t, me, 8, None), Err(Refused::Exists));
    // The first attach stays.
    check_eq!(channel_of(&t, me), Some(7));
    check_eq!(on_channel(&t, Some(7)), 1);
    check_eq!(on_channel(&t, Some(8)), 0);
    let gone = detach(&t, me);
    check!(gone.is_some_and(|th| th.channel == 7));
    check_eq!(t.live(), 0);
    check_eq!(channel_of(&t, me), None);
    check!(detach(&t, me).is_none(), "removed once");
    check!(t.find(&me).is_none());
    Ok(())
}

pub fn a_full_table_refuses_and_frees_its_slots() -> Outcome {
    let s = slots();
    let t = ok!(table(&s, 16));
    for i in 0..16 {
        ok!(attach(&t, key(i), i as u32, None));
    }
    check_eq!(attach(&t, key(16), 16, None), Err(Refused::Full));
    // Every one is found under its own key, with its own state.
    for i in 0..16 {
        check_eq!(channel_of(&t, key(i)), Some(i as u32));
    }
    // A freed slot (a tombstone in a probe chain) takes the next one, and
    // the others are still found past it.
    check!(detach(&t, key(3)).is_some());
    ok!(attach(&t, key(16), 16, None));
    for i in 0..17 {
        let want = if i == 3 { None } else { Some(i as u32) };
        check_eq!(channel_of(&t, key(i)), want);
    }
    check_eq!(on_channel(&t, None), 16);
    for i in 0..17 {
        let _ = detach(&t, key(i));
    }
    check_eq!(t.live(), 0);
    check_eq!(on_channel(&t, None), 0);
    Ok(())
}

pub fn a_user_past_its_quota_gets_edquot() -> Outcome {
    let s = slots();
    let t = ok!(table(&s, 3));
    for i in 0..3 {
        ok!(attach(&t, key(i), 0, Some(1000)));
    }
    check_eq!(attach(&t, key(3), 0, Some(1000)), Err(Refused::Quota));
    check_eq!(t.user_entries(1000), 3);
    // Other users and privileged callers are not held by it.
    ok!(attach(&t, key(3), 0, Some(1001)));
    ok!(attach(&t, key(4), 0, None));
    check_eq!(t.user_entries(1001), 1);
    // A detach gives the quota back.
    check!(detach(&t, key(0)).is_some());
    check_eq!(t.user_entries(1000), 2);
    ok!(attach(&t, key(5), 0, Some(1000)));
    check_eq!(t.user_entries(1000), 3);
    for i in 0..6 {
        let _ = detach(&t, key(i));
    }
    check_eq!(t.user_entries(1000), 0);
    check_eq!(t.user_entries(1001), 0);
    check_eq!(t.live(), 0);
    Ok(())
}

pub fn unprivileged_users_leave_room_for_root() -> Outcome {
    // 16 threads, an eighth (2) kept for privileged callers.
    let s = slots();
    let t = ok!(table(&s, 16));
    for i in 0..14 {
        // Several users: the share, not one quota, is what runs out.
        let uid = 1000 + (i % 3) as u32;
        ok!(attach(&t, key(i), 0, Some(uid)));
    }
    check_eq!(attach(&t, key(14), 0, Some(2000)), Err(Refused::Full));
    ok!(attach(&t, key(14), 0, None));
    ok!(attach(&t, key(15), 0, None));
    check_eq!(attach(&t, key(16), 0, None), Err(Refused::Full), "full");
    for i in 0..17 {
        let _ = detach(&t, key(i));
    }
    check_eq!(t.live(), 0);
    Ok(())
}

pub fn the_sweep_keeps_every_chain() -> Outcome {
    let s = slots();
    let t = ok!(table(&s, 16));
    for i in 0..16 {
        ok!(attach(&t, key(i), i as u32, None));
    }
    // Every other one detached: its tombstone goes only where no probe
    // chain passes, and every thread left is still found.
    for i in (0..16).step_by(2) {
        check!(detach(&t, key(i)).is_some());
    }
    check_eq!(t.tombstones(), 8);
    t.sweep();
    for i in 0..16 {
        let want = (i % 2 == 1).then_some(i as u32);
        check_eq!(channel_of(&t, key(i)), want);
    }
    // Detached ones attach again past what is left.
    for i in (0..16).step_by(2) {
        ok!(attach(&t, key(i), i as u32, None));
    }
    for i in 0..16 {
        check_eq!(channel_of(&t, key(i)), Some(i as u32));
    }
    // Once the table is empty, the sweep leaves no tombstone.
    for i in 0..16 {
        check!(detach(&t, key(i)).is_some());
    }
    check_eq!(t.sweep(), 0);
    check_eq!(t.live(), 0);
    Ok(())
}

pub fn a_slot_keeps_its_park_item() -> Outcome {
    // Every slot gets an item up front (the module's park items), so that
    // neither the fork probe allocates nor the exit probe frees.
    let s = slots();
    let t = ok!(table(&s, 16));
    for (n, v) in t.values().enumerate() {
        seat(v, |s| s.fill(&mut Some(n as u32)));
    }
    let me = key(0);
    let has_item = |t: &Threads<'_>| {
        t.find(&me)
            .and_then(|v| seat(v, |s| s.of(me).map(|th| th.item.is_some())))
    };
    ok!(attach(&t, me, 1, None));
    check_eq!(has_item(&t), Some(true));
    let gone = detach(&t, me);
    // The item stays with the slot.
    check_eq!(gone.map(|th| th.item.is_some()), Some(false));
    ok!(attach(&t, me, 2, None));
    check_eq!(has_item(&t), Some(true));
    let _ = detach(&t, me);
    // Every item comes out once, whether a seat or its thread held it.
    ok!(attach(&t, key(1), 3, None));
    let mut items = 0;
    for v in t.values() {
        let (spare, held) = seat(v, Seat::drain);
        items += usize::from(spare.is_some()) + usize::from(held.is_some());
    }
    check_eq!(items, SLOTS);
    check!(t.values().all(|v| !seat(v, |s| s.has_spare())));
    check_eq!(channel_of(&t, key(1)), Some(3));
    Ok(())
}

pub fn a_forked_thread_inherits_its_channel() -> Outcome {
    let mut run = RunState::new(0, 100_000, 50_000);
    run.set_budget(30_000);
    let parent = Membership::new(3, true, Some(1000));
    let (child, child_run) = ok!(parent.child(&run, 5_000));
    check_eq!(child, parent);
    check!(child.channel() == 3 && !child.privileged());
    check_eq!(child.user(), Some(1000));
    // The child starts with the budget the parent's next window has.
    check_eq!(child_run.next_ns(), (30_000, 100_000));
    check_eq!(child_run.budget_ns(), 30_000);
    // A thread attached alone does not take its children along.
    let alone = Membership::new(3, false, None);
    check!(alone.privileged());
    check!(alone.child(&run, 5_000).is_none());
    Ok(())
}
