//! What a worker's circuit holds in memory, part by part: the meters behind
//! [`crate::Engine::memory`] for the differential engine.
//!
//! A meter measures one part when asked (a `size` in a session, `--stats` after a
//! run), not as the circuit runs: it costs nothing between reports. Arrangements are
//! measured through a handle on their trace that holds back no compaction (its
//! frontiers are empty), batch by batch, from the capacities of the batches' columns
//! (keys, values, times, diffs and their offsets): what is allocated, not only used. A
//! merge in progress is counted by its two inputs; the output it is building is not
//! reachable from outside, so a report taken while arrangements merge is low by up to
//! the merged part. The hand-written operators (`distinct`, `entries`, `last_join`)
//! share their state with their meters.

use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::TraceReader;
use differential_dataflow::trace::implementations::ord_neu::{OrdKeyBatch, OrdValBatch};
use differential_dataflow::trace::implementations::spine_fueled::Spine;
use differential_dataflow::trace::implementations::{Layout, OffsetList};
use std::rc::Rc;
use timely::progress::frontier::AntichainRef;

/// Records and bytes of one part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub records: u64,
    pub bytes: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.records += other.records;
        self.bytes += other.bytes;
    }
}

/// One part of a worker's circuit and how to measure it.
pub(crate) struct Meter {
    pub name: String,
    pub measure: Box<dyn Fn() -> Usage>,
}

impl Meter {
    pub(crate) fn new(name: impl Into<String>, measure: impl Fn() -> Usage + 'static) -> Meter {
        Meter {
            name: name.into(),
            measure: Box::new(measure),
        }
    }
}

/// The allocated bytes of a vector's elements.
pub(crate) fn vec_bytes<T>(v: &Vec<T>) -> u64 {
    (v.capacity() * std::mem::size_of::<T>()) as u64
}

/// A column of a batch whose allocated bytes can be counted.
pub(crate) trait Bytes {
    fn bytes(&self) -> u64;
}

impl<T> Bytes for Vec<T> {
    fn bytes(&self) -> u64 {
        vec_bytes(self)
    }
}

impl Bytes for OffsetList {
    fn bytes(&self) -> u64 {
        vec_bytes(&self.smol) + vec_bytes(&self.chonk)
    }
}

/// A batch of an arrangement whose bytes can be counted.
pub(crate) trait Measured {
    fn usage(&self) -> Usage;
}

impl<L: Layout> Measured for Rc<OrdValBatch<L>>
where
    L::KeyContainer: Bytes,
    L::ValContainer: Bytes,
    L::TimeContainer: Bytes,
    L::DiffContainer: Bytes,
    L::OffsetContainer: Bytes,
{
    fn usage(&self) -> Usage {
        let s = &self.storage;
        Usage {
            records: self.updates as u64,
            bytes: s.keys.bytes()
                + s.vals.offs.bytes()
                + s.vals.vals.bytes()
                + s.upds.offs.bytes()
                + s.upds.times.bytes()
                + s.upds.diffs.bytes(),
        }
    }
}

impl<L: Layout> Measured for Rc<OrdKeyBatch<L>>
where
    L::KeyContainer: Bytes,
    L::TimeContainer: Bytes,
    L::DiffContainer: Bytes,
    L::OffsetContainer: Bytes,
{
    fn usage(&self) -> Usage {
        let s = &self.storage;
        Usage {
            records: self.updates as u64,
            bytes: s.keys.bytes()
                + s.upds.offs.bytes()
                + s.upds.times.bytes()
                + s.upds.diffs.bytes(),
        }
    }
}

/// A meter of the arrangement `trace` holds. The meter's handle on the trace releases
/// its compaction at once: it reads what the arrangement keeps for its other readers
/// and keeps nothing alive itself.
pub(crate) fn trace_meter<B>(name: impl Into<String>, trace: &TraceAgent<Spine<B>>) -> Meter
where
    B: differential_dataflow::trace::implementations::spine_fueled::SpineBatch
        + Measured
        + Clone
        + 'static,
    Spine<B>: TraceReader<Batch = B>,
{
    let mut handle = trace.clone();
    handle.set_logical_compaction(AntichainRef::new(&[]));
    handle.set_physical_compaction(AntichainRef::new(&[]));
    Meter::new(name, move || {
        let mut usage = Usage::default();
        handle.map_spans(|span| {
            if let Some(batch) = span.inner.as_ref() {
                usage += batch.usage();
            }
        });
        usage
    })
}
