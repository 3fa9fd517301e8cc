//! The unit tests' random numbers: a xorshift generator, deterministic from its seed, so a
//! failing operation sequence replays exactly.

/// A generator of `u64`s from `seed` (not zero).
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
