//! A hierarchical-wheel slot's contents: a queue of references to slab entries, deleted lazily,
//! stored in fixed-size chunks of one shared arena.
//!
//! A [`Ref`] is `(index, seq, low)`: a timer's slab index, the insertion number it had when the
//! reference was pushed, and the low 32 bits of its deadline. Every insert and reset gives a
//! timer a new `seq`, so a reference is *live* iff the slab slot at `index` is occupied and
//! holds that `seq` ([`stamped`](crate::stamped)), or, for a timer moved in place, names it as
//! its home ([`moved`](super::moved)); any other reference is *dead* (its timer was cancelled,
//! reset elsewhere, or fired) and is skipped.
//!
//! A [`Bucket`] is a FIFO list of [`CHUNK`]-reference chunks in the [`Chunks`] arena: pushes
//! fill the tail chunk, reads walk from a cursor in the head chunk, and emptied chunks go to
//! a free list that every bucket shares. Memory therefore follows the references wherever the
//! timers are, and once the arena has reached the working set nothing is allocated. The arena
//! grows by pages of [`PAGE`] chunks, so growth never copies a chunk (a doubling `Vec` would
//! copy the whole arena in one push).
//!
//! Cancel and reset never touch a bucket: they read and write the timer's own slab entry, and
//! its old reference goes dead where it lies. Compared with an intrusive doubly-linked list
//! this saves the two neighbours' cache lines on every removal, and a cascade walks contiguous
//! memory without reading the slab at all (each deadline is rebuilt from `low`; dead references
//! are carried along). Dead references are found and dropped where the slab is read anyway:
//! when the ready bucket hands timers out, and when the wheel compacts (see
//! [`hierarchical`](super)). Those slab reads are independent of each other, so
//! the CPU overlaps their misses instead of chasing one `next` pointer after another.
//!
//! # Invariants
//! - A bucket's `len` counts its references from the read cursor on, live or dead. An empty
//!   bucket owns no chunk, and its `fill` is [`CHUNK`].
//! - Every chunk is in exactly one bucket's list or in the free list.
//! - A level-0 bucket and the ready bucket hold increasing `seq`s: a reference that would
//!   come after a later one goes to the wheel's ordered store of overtaken timers instead
//!   (see [`hierarchical`](super)). Coarser buckets may hold any order: cascades sort the
//!   references out when they reach level 0.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | push, pop | O(1): one store or load in a hot chunk; a chunk taken from or given to the free list every 64 |
//! | compact_some | O(chunks read, at most [`WINDOW`]): one slab read per reference, independent of each other |
//! | front, last | O(1) |
//! | grow | a new page every [`PAGE`] chunks (12 KiB, zeroed); nothing copied |
//! | memory | 12 B per reference + under one 768 B chunk per non-empty slot, in pages of 12 KiB, + 8 B per chunk |

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::slab::{Slab, NIL};
use crate::stamped::Stamped;

/// A reference from a bucket to a slab entry: 12 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ref {
    pub(crate) index: u32,
    pub(crate) seq: u32,
    /// The low 32 bits of the timer's deadline. A timer below level
    /// [`FAR`](super::level::FAR) agrees with the cursor on every bit from 30 up, so a cascade
    /// rebuilds its deadline from these without reading the slab.
    pub(crate) low: u32,
}

impl Ref {
    /// The reference a push of the timer at slab `index`, with order `seq` and `deadline`,
    /// leaves in a bucket.
    #[inline(always)]
    pub(crate) fn to(index: u32, seq: u32, deadline: crate::Tick) -> Self {
        Self {
            index,
            seq,
            low: deadline as u32,
        }
    }

    /// Whether this reference still names its timer (for a timer moved in place, whether it
    /// is the timer's home: see [`moved`](super::moved)).
    #[inline]
    pub(crate) fn is_live<T>(self, slab: &Slab<Stamped<T>>) -> bool {
        super::moved::is_live(slab, self.index, self.seq)
    }
}

/// References per chunk: 64 × 12 B = 768 B, twelve cache lines.
pub(crate) const CHUNK: usize = 64;

/// The most chunks one [`Chunks::compact_some`] reads.
pub(crate) const WINDOW: usize = 16;

/// What one [`Chunks::compact_some`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// References read, each with its slab entry.
    pub(crate) read: usize,
    /// Dead references dropped.
    pub(crate) dropped: usize,
    /// Where the bucket's compaction goes on: after this chunk (`NIL`: at the head), or
    /// `None` once it reached the tail.
    pub(crate) resume: Option<u32>,
}

/// The chunks one [`Chunks::compact_some`] reads: positions count from the start of
/// `ids[0]`, whose references start at `start`; chunk `j` holds positions up to `ends[j]`
/// within it.
struct Window {
    ids: [u32; WINDOW],
    ends: [usize; WINDOW],
    k: usize,
    start: usize,
}

impl Window {
    /// References in the window.
    fn len(&self) -> usize {
        self.ends[..self.k].iter().sum::<usize>() - self.start
    }
}

impl Compacted {
    /// Nothing read: the bucket is done.
    pub(crate) const DONE: Compacted = Compacted {
        read: 0,
        dropped: 0,
        resume: None,
    };
}

/// One slot's references: a list of chunks with a read cursor. Plain indices, so `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bucket {
    /// First chunk (holding the read cursor), or `NIL` when empty.
    head: u32,
    /// Last chunk (being filled), or `NIL` when empty.
    tail: u32,
    /// Read cursor within `head`.
    pos: u32,
    /// References written into `tail`.
    fill: u32,
    /// References from the cursor on, live or dead.
    len: u32,
}

impl Bucket {
    /// No chunk. `fill` says the (absent) tail chunk is full, so a push needs a new chunk
    /// exactly when `fill == CHUNK`: one test on the push path.
    pub(crate) const EMPTY: Bucket = Bucket {
        head: NIL,
        tail: NIL,
        pos: 0,
        fill: CHUNK as u32,
        len: 0,
    };

    /// No reference at all, live or dead.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// References from the cursor on, live or dead.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }
}

/// Chunks per page of the arena: 12 KiB of references. Growth adds a page and never copies
/// the chunks already made, so no push pays for a copy of the arena; a page this small is
/// zeroed in a few page faults, so the push that takes one stays short.
const PAGE: usize = 16;

/// A chunk's place in the lists: the next chunk in its bucket (or in the free list), or
/// `NIL`; and how many times it was freed.
#[derive(Clone, Copy)]
struct Link {
    next: u32,
    freed: u32,
}

/// [`PAGE`] chunks' references.
type RefPage = Box<[[Ref; CHUNK]; PAGE]>;

/// [`PAGE`] chunks' links.
type LinkPage = Box<[Link; PAGE]>;

fn ref_page() -> RefPage {
    let page: Box<[[Ref; CHUNK]]> = alloc::vec![[Ref::default(); CHUNK]; PAGE].into();
    page.try_into().expect("a page's length")
}

fn link_page() -> LinkPage {
    Box::new(
        [Link {
            next: NIL,
            freed: 0,
        }; PAGE],
    )
}

/// The arena every bucket's chunks live in.
pub(crate) struct Chunks {
    /// Chunk `c` is chunk `c % PAGE` of page `c / PAGE`, with its link in `links`.
    refs: Vec<RefPage>,
    links: Vec<LinkPage>,
    /// Chunks made.
    made: usize,
    /// Head of the free list, or `NIL`.
    free: u32,
    /// Chunks in the free list.
    free_len: usize,
}

impl Chunks {
    /// An arena with room for `refs` references spread over `buckets` buckets before it grows
    /// (each bucket may leave one chunk partly filled), plus an eighth for the partly filled
    /// chunks of staged slots' buckets. No room is reserved when `refs` is 0.
    pub(crate) fn new(refs: usize, buckets: usize) -> Self {
        let chunks = if refs == 0 {
            0
        } else {
            (refs + refs / 8).div_ceil(CHUNK) + buckets
        };
        Self {
            refs: Vec::with_capacity(chunks.div_ceil(PAGE)),
            links: Vec::with_capacity(chunks.div_ceil(PAGE)),
            made: 0,
            free: NIL,
            free_len: 0,
        }
    }

    /// Chunk `c`'s references.
    #[inline(always)]
    fn chunk(&self, c: u32) -> &[Ref; CHUNK] {
        &self.refs[c as usize / PAGE][c as usize % PAGE]
    }

    /// Chunk `c`'s references, to write.
    #[inline(always)]
    fn chunk_mut(&mut self, c: u32) -> &mut [Ref; CHUNK] {
        &mut self.refs[c as usize / PAGE][c as usize % PAGE]
    }

    /// The chunk after `c` in its list, or `NIL`.
    #[inline(always)]
    fn next(&self, c: u32) -> u32 {
        self.links[c as usize / PAGE][c as usize % PAGE].next
    }

    #[inline(always)]
    fn next_mut(&mut self, c: u32) -> &mut u32 {
        &mut self.link_mut(c).next
    }

    #[inline(always)]
    fn link_mut(&mut self, c: u32) -> &mut Link {
        &mut self.links[c as usize / PAGE][c as usize % PAGE]
    }

    #[inline]
    fn alloc(&mut self) -> u32 {
        if self.free != NIL {
            let c = self.free;
            self.free = self.next(c);
            self.free_len -= 1;
            *self.next_mut(c) = NIL;
            return c;
        }
        self.grow()
    }

    #[cold]
    fn grow(&mut self) -> u32 {
        let c = self.made;
        if c / PAGE == self.refs.len() {
            self.refs.push(ref_page());
            self.links.push(link_page());
        }
        self.made += 1;
        c as u32
    }

    #[inline]
    fn release(&mut self, c: u32) {
        let free = self.free;
        let link = self.link_mut(c);
        link.freed = link.freed.wrapping_add(1);
        link.next = free;
        self.free = c;
        self.free_len += 1;
    }

    /// Whether a push to this bucket would take a new chunk (its tail chunk is full, or it has
    /// none): the one place the arena may grow.
    #[inline(always)]
    pub(crate) fn push_needs_chunk(b: &Bucket) -> bool {
        b.fill as usize == CHUNK
    }

    /// Appends a reference to a bucket.
    #[inline(always)]
    pub(crate) fn push(&mut self, b: &mut Bucket, r: Ref) {
        if Self::push_needs_chunk(b) {
            self.push_to_new_chunk(b, r);
        } else {
            self.push_to_tail(b, r);
        }
    }

    /// Appends a reference to a bucket whose tail chunk has room (the caller checked
    /// [`push_needs_chunk`](Self::push_needs_chunk)).
    #[inline(always)]
    pub(crate) fn push_to_tail(&mut self, b: &mut Bucket, r: Ref) {
        debug_assert!(!Self::push_needs_chunk(b));
        self.chunk_mut(b.tail)[b.fill as usize] = r;
        b.fill += 1;
        b.len += 1;
    }

    /// Appends a reference to a bucket whose tail chunk is full (or which has none), in a new
    /// tail chunk: once per [`CHUNK`] pushes, so out of line, which keeps the push small enough
    /// to inline. It writes `fill` outright rather than zeroing it and counting the push on
    /// top: the counting reads `fill` and `len` back as one 8-byte load, which cannot be
    /// forwarded from the 4-byte store just made and waited for the store queue to drain
    /// (`docs/bench-profile.md`).
    #[inline(never)]
    fn push_to_new_chunk(&mut self, b: &mut Bucket, r: Ref) {
        debug_assert!(Self::push_needs_chunk(b));
        let c = self.alloc();
        self.chunk_mut(c)[0] = r;
        if b.tail == NIL {
            b.head = c;
            b.pos = 0;
        } else {
            *self.next_mut(b.tail) = c;
        }
        b.tail = c;
        b.fill = 1;
        b.len += 1;
    }

    /// The references left in a bucket's first chunk when its cursor is at the start of that
    /// chunk (empty otherwise): what the next up to 64 pops will return.
    #[inline]
    pub(crate) fn fresh_chunk(&self, b: &Bucket) -> &[Ref] {
        if b.len == 0 || b.pos != 0 {
            return &[];
        }
        let end = if b.head == b.tail {
            b.fill as usize
        } else {
            CHUNK
        };
        &self.chunk(b.head)[..end]
    }

    /// Takes the reference at a bucket's cursor, freeing each chunk as it is used up.
    #[inline(always)]
    pub(crate) fn pop(&mut self, b: &mut Bucket) -> Option<Ref> {
        if b.len == 0 {
            return None;
        }
        let r = self.chunk(b.head)[b.pos as usize];
        b.pos += 1;
        b.len -= 1;
        if b.len == 0 {
            debug_assert_eq!(b.head, b.tail);
            self.release(b.head);
            *b = Bucket::EMPTY;
        } else if b.pos as usize == CHUNK {
            let h = b.head;
            b.head = self.next(h);
            b.pos = 0;
            self.release(h);
        }
        Some(r)
    }

    /// Moves the references of a bucket's first chunk into `out` and frees that chunk; returns
    /// how many were moved (0 once the bucket is empty). For cascades, which push into other
    /// buckets while they read this one.
    #[inline]
    pub(crate) fn take_chunk(&mut self, b: &mut Bucket, out: &mut [Ref; CHUNK]) -> usize {
        if b.len == 0 {
            return 0;
        }
        let h = b.head;
        let end = if h == b.tail { b.fill } else { CHUNK as u32 };
        let n = (end - b.pos) as usize;
        out[..n].copy_from_slice(&self.chunk(h)[b.pos as usize..end as usize]);
        b.len -= n as u32;
        if h == b.tail {
            *b = Bucket::EMPTY;
        } else {
            b.head = self.next(h);
            b.pos = 0;
        }
        self.release(h);
        n
    }

    /// Frees chunk `c` and every chunk after it in its list.
    fn release_from(&mut self, mut c: u32) {
        while c != NIL {
            let next = self.next(c);
            self.release(c);
            c = next;
        }
    }

    /// Frees every chunk of a bucket and empties it.
    pub(crate) fn clear(&mut self, b: &mut Bucket) {
        self.release_from(b.head);
        *b = Bucket::EMPTY;
    }

    /// Frees every chunk of every bucket at once (the caller forgets its buckets).
    pub(crate) fn reset(&mut self) {
        let chunks = self.made as u32;
        for c in 0..chunks {
            let link = self.link_mut(c);
            link.next = if c + 1 < chunks { c + 1 } else { NIL };
            link.freed = link.freed.wrapping_add(1);
        }
        self.free = if chunks == 0 { NIL } else { 0 };
        self.free_len = chunks as usize;
    }

    /// Releases the pages no chunk was made in (the free chunks stay).
    pub(crate) fn shrink_to_fit(&mut self) {
        let pages = self.made.div_ceil(PAGE);
        self.refs.truncate(pages);
        self.links.truncate(pages);
        self.refs.shrink_to_fit();
        self.links.shrink_to_fit();
    }

    /// How many times chunk `c` was freed: unchanged iff `c` stayed in the bucket it was in.
    pub(crate) fn times_freed(&self, c: u32) -> u32 {
        self.links[c as usize / PAGE][c as usize % PAGE].freed
    }

    /// Chunks owned by buckets: `CHUNK` times this bounds the references they hold, in O(1).
    #[inline]
    pub(crate) fn in_use(&self) -> usize {
        self.made - self.free_len
    }

    /// Drops the dead references of up to `max` (at most [`WINDOW`]) chunks of a bucket, the
    /// first one after chunk `after` (`NIL`: the head chunk), and frees the chunks left over.
    /// The references kept stay in order. An `ordered` bucket (a level-0 slot or a ready
    /// bucket) keeps its last one rather than emptying: a level-0 slot's occupancy also
    /// follows the overtaken store, which a compaction does not read.
    ///
    /// Every chunk but the head and the tail stays full: a window that ends short of the tail
    /// keeps enough dead references to fill its last chunk. The kept references are written
    /// in order from the window's first position on, so the write never passes the read. Each
    /// reference's slab entry is read once, and the reads are independent of each other, so
    /// their misses overlap.
    pub(crate) fn compact_some<T>(
        &mut self,
        b: &mut Bucket,
        slab: &Slab<Stamped<T>>,
        after: u32,
        max: usize,
        ordered: bool,
    ) -> Compacted {
        debug_assert!((1..=WINDOW).contains(&max));
        let first = if after == NIL {
            b.head
        } else {
            self.next(after)
        };
        if b.len == 0 || first == NIL {
            return Compacted::DONE;
        }
        let at_head = after == NIL;
        let mut w = Window {
            ids: [NIL; WINDOW],
            ends: [0; WINDOW],
            k: 0,
            start: if at_head { b.pos as usize } else { 0 },
        };
        let mut c = first;
        loop {
            w.ids[w.k] = c;
            w.ends[w.k] = if c == b.tail { b.fill as usize } else { CHUNK };
            w.k += 1;
            if c == b.tail || w.k == max {
                break;
            }
            c = self.next(c);
        }
        let last = w.ids[w.k - 1];
        let to_tail = last == b.tail;
        let beyond = self.next(last);
        let read = w.len();
        // Positions from the window's start: `end` is one past the last reference kept.
        let end = self.filter(&w, slab, to_tail, at_head && ordered);
        let kept = end - w.start;
        let out = if kept == 0 { 0 } else { end.div_ceil(CHUNK) };
        for &c in &w.ids[out..w.k] {
            self.release(c);
        }
        b.len -= (read - kept) as u32;
        if out == 0 {
            if at_head {
                b.head = beyond;
                b.pos = 0;
            } else {
                *self.next_mut(after) = beyond;
            }
        } else {
            *self.next_mut(w.ids[out - 1]) = beyond;
        }
        if to_tail {
            if out > 0 {
                b.tail = w.ids[out - 1];
                b.fill = (end - (out - 1) * CHUNK) as u32;
            } else if at_head {
                *b = Bucket::EMPTY;
            } else {
                b.tail = after;
                b.fill = CHUNK as u32;
            }
        }
        Compacted {
            read,
            dropped: read - kept,
            resume: (!to_tail).then(|| if out > 0 { w.ids[out - 1] } else { after }),
        }
    }

    /// [`compact_some`](Self::compact_some)'s selection: marks the references to keep (the
    /// live ones; the last dead ones that fill the last chunk of a window short of the tail;
    /// with `keep_one`, the last one of a bucket that would empty), then moves them forward in
    /// order. The slab's answers only set bits, so the reads take no branch on them. Returns
    /// the end position.
    fn filter<T>(
        &mut self,
        w: &Window,
        slab: &Slab<Stamped<T>>,
        to_tail: bool,
        keep_one: bool,
    ) -> usize {
        // Bit `p % 64` of word `p / 64`: position `p` is kept; `valid` the positions read.
        let mut keep = [0u64; WINDOW];
        let mut valid = [0u64; WINDOW];
        let mut kept = 0;
        for j in 0..w.k {
            let from = if j == 0 { w.start } else { 0 };
            let mut word = 0u64;
            for (i, r) in self.chunk(w.ids[j])[from..w.ends[j]].iter().enumerate() {
                word |= u64::from(r.is_live(slab)) << (from + i);
            }
            keep[j] = word;
            valid[j] = (u64::MAX >> (CHUNK - w.ends[j] + from)) << from;
            kept += word.count_ones() as usize;
        }
        if to_tail {
            if keep_one && kept == 0 {
                let last = w.k - 1;
                keep[last] = 1 << (w.ends[last] - 1);
            }
        } else if kept > 0 {
            let mut pad = (w.start + kept).next_multiple_of(CHUNK) - (w.start + kept);
            for j in (0..w.k).rev() {
                let mut dead = !keep[j] & valid[j];
                while pad > 0 && dead != 0 {
                    let top = 1 << (63 - dead.leading_zeros());
                    keep[j] |= top;
                    dead &= !top;
                    pad -= 1;
                }
            }
        }
        // The write cursor: chunk `ids[wj]`, offset `wi`.
        let (mut wj, mut wi) = (0, w.start);
        for (j, &word) in keep[..w.k].iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let r = self.chunk(w.ids[j])[bits.trailing_zeros() as usize];
                bits &= bits - 1;
                self.chunk_mut(w.ids[wj])[wi] = r;
                wi += 1;
                if wi == CHUNK {
                    (wj, wi) = (wj + 1, 0);
                }
            }
        }
        wj * CHUNK + wi
    }

    /// A bucket's references from the cursor on, in order. For checks and rebuilds.
    pub(crate) fn iter(&self, b: &Bucket) -> impl Iterator<Item = Ref> + '_ {
        let (mut c, mut i, mut left) = (b.head, b.pos as usize, b.len);
        let tail = (b.tail, b.fill as usize);
        core::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let end = if c == tail.0 { tail.1 } else { CHUNK };
            if i == end {
                c = self.next(c);
                i = 0;
            }
            let r = self.chunk(c)[i];
            i += 1;
            left -= 1;
            Some(r)
        })
    }

    /// The reference at a bucket's cursor: what [`pop`](Self::pop) would return.
    #[inline]
    pub(crate) fn front(&self, b: &Bucket) -> Option<Ref> {
        (b.len != 0).then(|| self.chunk(b.head)[b.pos as usize])
    }

    /// The reference pushed last into a bucket that still holds it.
    #[inline]
    pub(crate) fn last(&self, b: &Bucket) -> Option<Ref> {
        (b.len != 0).then(|| self.chunk(b.tail)[b.fill as usize - 1])
    }

    /// The live references of a bucket, checking its length and chunk list. For invariant
    /// checks and rebuilds.
    pub(crate) fn collect_live<T>(&self, b: &Bucket, slab: &Slab<Stamped<T>>) -> Vec<Ref> {
        let all: Vec<Ref> = self.iter(b).collect();
        assert_eq!(all.len(), b.len as usize, "bucket length disagrees");
        if b.len == 0 {
            assert_eq!(
                *b,
                Bucket::EMPTY,
                "an empty bucket owns a chunk or is not full"
            );
        }
        all.into_iter().filter(|r| r.is_live(slab)).collect()
    }

    /// Chunks in the free list. For invariant checks.
    pub(crate) fn free_chunks(&self) -> usize {
        let mut n = 0;
        let mut c = self.free;
        while c != NIL {
            n += 1;
            assert!(n <= self.made, "free chunk list has a cycle");
            c = self.next(c);
        }
        assert_eq!(
            n, self.free_len,
            "free chunk count disagrees with the free list"
        );
        n
    }

    /// Chunks in a bucket's list. For invariant checks: also checks that the list holds
    /// exactly `len` references from the read cursor to the tail's `fill` (every chunk but the
    /// tail full), so no chunk is linked behind a tail with room.
    pub(crate) fn chunks_of(&self, b: &Bucket) -> usize {
        let mut n = 0;
        let mut c = b.head;
        while c != NIL {
            n += 1;
            assert!(n <= self.made, "bucket chunk list has a cycle");
            if c == b.tail {
                assert_eq!(self.next(c), NIL, "tail chunk has a successor");
            }
            c = self.next(c);
        }
        let held = match n {
            0 => {
                assert_eq!(b.fill as usize, CHUNK, "an empty bucket's fill is CHUNK");
                0
            }
            _ => n * CHUNK - b.pos as usize - (CHUNK - b.fill as usize),
        };
        assert_eq!(held, b.len(), "a bucket's chunks hold other than its len");
        n
    }

    /// All chunks ever made.
    pub(crate) fn total_chunks(&self) -> usize {
        self.made
    }

    /// Bytes of heap memory held.
    pub(crate) fn allocated_bytes(&self) -> usize {
        (self.refs.capacity() + self.links.capacity()) * core::mem::size_of::<RefPage>()
            + self.refs.len() * PAGE * CHUNK * core::mem::size_of::<Ref>()
            + self.links.len() * PAGE * core::mem::size_of::<Link>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes the cost table states: a 12 B reference, a 768 B chunk.
    #[test]
    fn a_reference_is_12_bytes_and_a_chunk_768() {
        assert_eq!(core::mem::size_of::<Ref>(), 12);
        assert_eq!(CHUNK * core::mem::size_of::<Ref>(), 768);
    }

    fn stamped(seq: u32) -> Stamped<u32> {
        Stamped::new(0, seq, seq)
    }

    /// Pops the next live reference, dropping dead ones; also says how many were dropped.
    fn pop_live(
        chunks: &mut Chunks,
        b: &mut Bucket,
        slab: &Slab<Stamped<u32>>,
    ) -> (Option<Ref>, u64) {
        let mut skipped = 0;
        while let Some(r) = chunks.pop(b) {
            if r.is_live(slab) {
                return (Some(r), skipped);
            }
            skipped += 1;
        }
        (None, skipped)
    }

    /// `n` timers in the slab, each referenced once from `bucket` in order.
    fn filled(n: u32) -> (Slab<Stamped<u32>>, Chunks, Bucket) {
        let mut slab = Slab::new(None, 0);
        let mut chunks = Chunks::new(0, 0);
        let mut bucket = Bucket::EMPTY;
        for seq in 0..n {
            let key = slab.insert(stamped(seq)).unwrap();
            let r = Ref {
                index: key.index,
                seq,
                low: seq,
            };
            chunks.push(&mut bucket, r);
        }
        (slab, chunks, bucket)
    }

    /// Compacts a whole bucket, `max` chunks at a time; returns how many were dropped.
    fn compact_all(
        chunks: &mut Chunks,
        b: &mut Bucket,
        slab: &Slab<Stamped<u32>>,
        max: usize,
        ordered: bool,
    ) -> usize {
        let (mut after, mut dropped) = (NIL, 0);
        loop {
            let done = chunks.compact_some(b, slab, after, max, ordered);
            dropped += done.dropped;
            match done.resume {
                Some(next) => after = next,
                None => return dropped,
            }
        }
    }

    /// Compacting in windows, with pops and pushes between them, keeps every live reference
    /// in order and only drops dead ones; the chunk lists stay well formed throughout.
    #[test]
    fn compacting_a_window_at_a_time_keeps_order_between_pops_and_pushes() {
        let mut rnd = crate::test_rng::below(0x9E37_79B9_7F4A_7C15);
        for round in 0..300 {
            let n = 1 + rnd(700) as u32;
            let (mut slab, mut chunks, mut bucket) = filled(n);
            let mut expect: Vec<u32> = (0..n).collect();
            let dead_share = rnd(11);
            for seq in 0..n {
                if rnd(10) < dead_share {
                    slab.remove_at(seq);
                    expect.retain(|&s| s != seq);
                }
            }
            let mut next_seq = n;
            let mut after = NIL;
            let ordered = round % 2 == 0;
            loop {
                let before: Vec<u32> = chunks.iter(&bucket).map(|r| r.seq).collect();
                let max = 1 + rnd(4) as usize;
                let done = chunks.compact_some(&mut bucket, &slab, after, max, ordered);
                let now: Vec<u32> = chunks.iter(&bucket).map(|r| r.seq).collect();
                assert_eq!(before.len() - now.len(), done.dropped);
                assert!(done.read <= max * CHUNK);
                assert!(
                    now.iter().all(|s| before.contains(s)),
                    "nothing new appears"
                );
                let mut live: Vec<u32> = chunks
                    .collect_live(&bucket, &slab)
                    .iter()
                    .map(|r| r.seq)
                    .collect();
                if ordered {
                    assert!(now.windows(2).all(|w| w[0] < w[1]), "order kept");
                } else {
                    live.sort_unstable();
                }
                assert_eq!(live, expect, "every live reference kept, once");
                assert_eq!(
                    chunks.free_chunks() + chunks.chunks_of(&bucket),
                    chunks.total_chunks()
                );
                let Some(next) = done.resume else { break };
                after = next;
                // Between windows: pops at the head, and pushes at the tail.
                if rnd(3) == 0 {
                    for _ in 0..rnd(80) {
                        if let Some(r) = chunks.pop(&mut bucket) {
                            expect.retain(|&s| s != r.seq);
                        }
                    }
                    // The chunk to resume after may be freed: start again at the head.
                    after = NIL;
                }
                if rnd(3) == 0 {
                    for _ in 0..rnd(100) {
                        let key = slab.insert(stamped(next_seq)).unwrap();
                        let r = Ref {
                            index: key.index,
                            seq: next_seq,
                            low: 0,
                        };
                        chunks.push(&mut bucket, r);
                        expect.push(next_seq);
                        next_seq += 1;
                    }
                }
            }
            if expect.is_empty() {
                compact_all(&mut chunks, &mut bucket, &slab, WINDOW, ordered);
                if ordered {
                    assert!(
                        bucket.len() <= 1,
                        "an ordered all-dead bucket keeps at most one"
                    );
                } else {
                    assert_eq!(bucket, Bucket::EMPTY, "an all-dead bucket empties");
                }
            }
        }
    }

    #[test]
    fn dead_references_are_skipped_and_compacted_in_order() {
        let (mut slab, mut chunks, mut bucket) = filled(300);
        for index in (0..300).step_by(2) {
            slab.remove_at(index);
        }
        // Reuse a freed slot with a new seq: the old reference to it must stay dead.
        let reused = slab.insert(stamped(1_000)).unwrap();
        assert_eq!(chunks.collect_live(&bucket, &slab).len(), 150);
        let old = Ref {
            index: reused.index,
            seq: reused.index,
            low: 0,
        };
        assert!(!old.is_live(&slab));
        assert_eq!(compact_all(&mut chunks, &mut bucket, &slab, 2, true), 150);
        let seqs: Vec<u32> = chunks.iter(&bucket).map(|r| r.seq).collect();
        assert_eq!(seqs, (1..300).step_by(2).collect::<Vec<_>>());
        // 150 references fill three chunks; the other two went back to the free list.
        assert_eq!(chunks.chunks_of(&bucket), 3);
        assert_eq!(chunks.free_chunks(), 2);
        // Popping hands them out in order.
        let (first, skipped) = pop_live(&mut chunks, &mut bucket, &slab);
        assert_eq!((first.map(|r| r.seq), skipped), (Some(1), 0));
        assert_eq!(bucket.len(), 149);
        // Popping skips dead ones and reports them.
        slab.remove_at(3);
        slab.remove_at(5);
        let (next, skipped) = pop_live(&mut chunks, &mut bucket, &slab);
        assert_eq!((next.map(|r| r.seq), skipped), (Some(7), 2));
        // Compacting away everything frees every chunk.
        for index in (9..300).step_by(2) {
            slab.remove_at(index);
        }
        assert_eq!(compact_all(&mut chunks, &mut bucket, &slab, 2, false), 146);
        assert_eq!(bucket, Bucket::EMPTY);
        assert_eq!(chunks.free_chunks(), chunks.total_chunks());
    }

    #[test]
    fn fresh_chunk_shows_a_chunk_only_as_the_cursor_enters_it() {
        let (_slab, mut chunks, mut bucket) = filled(100);
        let seqs = |refs: &[Ref]| refs.iter().map(|r| r.seq).collect::<Vec<_>>();
        assert_eq!(
            seqs(chunks.fresh_chunk(&bucket)),
            (0..64).collect::<Vec<_>>()
        );
        chunks.pop(&mut bucket);
        assert!(
            chunks.fresh_chunk(&bucket).is_empty(),
            "cursor inside the chunk"
        );
        for _ in 1..64 {
            chunks.pop(&mut bucket);
        }
        assert_eq!(
            seqs(chunks.fresh_chunk(&bucket)),
            (64..100).collect::<Vec<_>>()
        );
        while chunks.pop(&mut bucket).is_some() {}
        assert!(chunks.fresh_chunk(&bucket).is_empty(), "empty bucket");
    }

    #[test]
    fn popping_and_taking_free_chunks_as_they_empty() {
        let (_slab, mut chunks, mut bucket) = filled(200);
        for seq in 0..70 {
            assert_eq!(chunks.pop(&mut bucket).map(|r| r.seq), Some(seq));
        }
        assert_eq!(chunks.free_chunks(), 1, "the first chunk was used up");
        let mut out = [Ref::default(); CHUNK];
        let mut seen = Vec::new();
        loop {
            let n = chunks.take_chunk(&mut bucket, &mut out);
            if n == 0 {
                break;
            }
            seen.extend(out[..n].iter().map(|r| r.seq));
        }
        assert_eq!(seen, (70..200).collect::<Vec<_>>());
        assert_eq!(bucket, Bucket::EMPTY);
        assert_eq!(chunks.free_chunks(), chunks.total_chunks());
        // Freed chunks are reused before the arena grows.
        let before = chunks.total_chunks();
        let mut other = Bucket::EMPTY;
        for seq in 0..3 * CHUNK as u32 {
            let r = Ref {
                index: 0,
                seq,
                low: 0,
            };
            chunks.push(&mut other, r);
        }
        assert_eq!(chunks.total_chunks(), before);
        assert_eq!(chunks.iter(&other).count(), 3 * CHUNK);
        assert_eq!(chunks.chunks_of(&other), 3);
        chunks.reset();
        assert_eq!(chunks.free_chunks(), chunks.total_chunks());
    }
}
