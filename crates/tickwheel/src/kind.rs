//! The index of implementations, for code that picks one at run time.
//!
//! | # | [`Kind`] | type | design |
//! |---|---|---|---|
//! | 1 | `hashed` | [`HashedWheel`] | one ring of 2^k one-tick slots for the next revolution; an indexed heap for the other timers |
//! | 2 | `hierarchical` | [`HierarchicalWheel`] | 11 levels × 64 slots, a crowded slot split into a finer wheel, cascading |
//! | 3 | `heap` | [`IndexedHeap`] | 4-ary min-heap with positions: O(log n) cancel, no tombstones |
//! | 4 | `lazy-heap` | [`LazyHeap`] | binary heap, cancel marks dead, rebuilt when more than half as many are dead as live |

use alloc::boxed::Box;
use core::fmt;
use core::str::FromStr;

use crate::{
    ConfigError, FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, LazyHeap, Options, Timer,
};

/// Names one of the four implementations.
///
/// ```
/// use tickwheel::{Kind, Options, Timer};
///
/// for kind in Kind::ALL {
///     let mut timer = kind.build::<u32>(Options::new()).unwrap();
///     timer.insert(1, 7).unwrap();
///     assert_eq!(timer.poll(1).unwrap().payload, 7);
///     assert_eq!(timer.name(), kind.name());
/// }
/// assert_eq!("lazy-heap".parse::<Kind>(), Ok(Kind::LazyHeap));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// [`HashedWheel`].
    Hashed,
    /// [`HierarchicalWheel`].
    Hierarchical,
    /// [`IndexedHeap`] (4-ary).
    IndexedHeap,
    /// [`LazyHeap`].
    LazyHeap,
}

impl Kind {
    /// Every implementation, in the order reports list them.
    pub const ALL: [Kind; 4] = [
        Kind::Hashed,
        Kind::Hierarchical,
        Kind::IndexedHeap,
        Kind::LazyHeap,
    ];

    /// The short name used on the command line and in reports.
    ///
    /// ```
    /// assert_eq!(tickwheel::Kind::IndexedHeap.name(), "heap");
    /// ```
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Hashed => "hashed",
            Kind::Hierarchical => "hierarchical",
            Kind::IndexedHeap => "heap",
            Kind::LazyHeap => "lazy-heap",
        }
    }

    /// Builds the implementation behind a box.
    ///
    /// # Errors
    /// [`ConfigError`] for out-of-range options.
    ///
    /// ```
    /// use tickwheel::{Kind, Options, Timer};
    /// let timer = Kind::Hashed.build::<()>(Options::new().capacity(10)).unwrap();
    /// assert_eq!(timer.capacity(), Some(10));
    /// ```
    pub fn build<T: Send + 'static>(
        self,
        options: Options,
    ) -> Result<Box<dyn Timer<T> + Send>, ConfigError> {
        Ok(match self {
            Kind::Hashed => Box::new(HashedWheel::<T>::from_options(options)?),
            Kind::Hierarchical => Box::new(HierarchicalWheel::<T>::from_options(options)?),
            Kind::IndexedHeap => Box::new(IndexedHeap::<T>::from_options(options)?),
            Kind::LazyHeap => Box::new(LazyHeap::<T>::from_options(options)?),
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a name that is not one of [`Kind::ALL`].
///
/// ```
/// let err = "splay".parse::<tickwheel::Kind>().unwrap_err();
/// assert!(err.to_string().contains("hashed, hierarchical, heap, lazy-heap"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownKind(pub alloc::string::String);

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown timer `{}`; expected one of: hashed, hierarchical, heap, lazy-heap",
            self.0
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for UnknownKind {}

impl FromStr for Kind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownKind(s.into()))
    }
}
