//! The contract suite, instantiated for every implementation (a failure names both).

mod hashed {
    use tickwheel::{FromOptions, HashedWheel};
    tickwheel::contract_suite!(HashedWheel::<u64>::from_options);
}

mod hashed_small_ring {
    use tickwheel::{FromOptions, HashedWheel};
    // 64 slots: most timers wait in the heap beyond the ring's revolution.
    tickwheel::contract_suite!(|o: tickwheel::Options| HashedWheel::<u64>::from_options(
        o.hashed_slots(64)
    ));
}

mod hierarchical {
    use tickwheel::{FromOptions, HierarchicalWheel};
    tickwheel::contract_suite!(HierarchicalWheel::<u64>::from_options);
}

mod indexed_heap {
    use tickwheel::{FromOptions, IndexedHeap};
    tickwheel::contract_suite!(IndexedHeap::<u64>::from_options);
}

mod binary_indexed_heap {
    use tickwheel::{FromOptions, IndexedHeap};
    tickwheel::contract_suite!(IndexedHeap::<u64, 2>::from_options);
}

mod lazy_heap {
    use tickwheel::{FromOptions, LazyHeap};
    tickwheel::contract_suite!(LazyHeap::<u64>::from_options);
}

mod boxed_by_kind {
    // The trait-object path the load generator uses.
    tickwheel::contract_suite!(|o| tickwheel::Kind::Hierarchical.build::<u64>(o));
}
