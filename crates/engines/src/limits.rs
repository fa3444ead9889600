//! The limits of one transaction ([`Limits`]), which one a refused transaction
//! exceeded ([`LimitExceeded`]), and the budget the engines check while they evaluate.

use crate::EngineError;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Per-transaction limits ([`crate::Engine::set_limits`]). A commit that exceeds one stops
/// (promptly: engines check while they evaluate, not after the fixpoint), returns an
/// [`EngineError::LimitExceeded`] naming the limit, and leaves the engine
/// exactly as it was before the transaction: the same facts, the same program; what
/// was staged is discarded and the next commits work normally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// The most facts one commit may change: facts added to the materialization plus
    /// facts removed from it, over all relations, base facts included (the net change,
    /// the size of [`crate::Engine::last_changes`]). Engines count a lower bound of it while
    /// they evaluate and stop as soon as it exceeds the limit; the semi-naive, remat,
    /// relational and chibi engines refuse exactly the commits whose net change exceeds
    /// it. The differential engine counts the changes of presence leaving its fixpoint
    /// loop, round by round, which is the net change when a commit only adds or only
    /// removes, but counts a fact whose derivation moves to a later round (after a
    /// deletion) once more per move: it may refuse a commit that deletes with a net
    /// change under the limit, never accept one over it. A rule change that makes it
    /// rebuild its dataflow (rules wider than the dataflow was built for) is checked
    /// against the exact net change once the new dataflow is done.
    ///
    /// The count includes the internal relations the analysis makes for aggregates,
    /// those an engine keeps (every engine but `diff` keeps an aggregate's input rows).
    ///
    /// How early the count stops a commit depends on the engine: the relational and
    /// chibi engines maintaining facts count the facts they add and remove as they go,
    /// and the differential engine the changes leaving its loop; but an evaluation
    /// from scratch (seminaive and remat at every commit, relational and chibi after a
    /// rule change) only knows that its result so far exceeds the previous
    /// materialization by N, so a commit whose new facts come slowly (a join deriving
    /// mostly duplicates) may run long before it is stopped: set [`Limits::max_time`]
    /// too.
    pub max_changes: Option<u64>,
    /// The most wall-clock time one commit may take. Checked while evaluating (at least
    /// every few thousand derivations); restoring the previous state after the limit
    /// is hit takes extra time (the differential engine rebuilds its dataflow from the
    /// previous program and base facts: about the time of loading them).
    pub max_time: Option<Duration>,
}

impl Limits {
    /// No limit.
    pub const NONE: Limits = Limits {
        max_changes: None,
        max_time: None,
    };

    pub fn is_none(&self) -> bool {
        *self == Limits::NONE
    }
}

/// Which limit a refused transaction exceeded, and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitExceeded {
    /// [`Limits::max_changes`].
    Changes(u64),
    /// [`Limits::max_time`].
    Time(Duration),
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitExceeded::Changes(n) => write!(
                f,
                "the transaction changes more than {n} facts, the limit of changes per commit; \
                 it was rolled back"
            ),
            LimitExceeded::Time(t) => write!(
                f,
                "the transaction took more than {} s, the limit of time per commit; it was \
                 rolled back",
                t.as_secs_f64()
            ),
        }
    }
}

/// The limits of one commit, shared by the threads evaluating it: the deadline, and
/// which limit stopped it once one did; and the engine's count of the commit's changes
/// so far ([`crate::Engine::progress`]), which every check of the changes raises.
#[derive(Debug)]
pub(crate) struct Budget {
    limits: Limits,
    deadline: Option<Instant>,
    /// 0: running; 1: too many changes; 2: too late.
    stopped: AtomicU8,
    progress: Arc<AtomicU64>,
}

impl Budget {
    /// The budget of a commit that starts now; `progress` is set to 0.
    pub(crate) fn new(limits: Limits, progress: Arc<AtomicU64>) -> Budget {
        progress.store(0, Ordering::Relaxed);
        Budget {
            limits,
            deadline: limits.max_time.map(|t| Instant::now() + t),
            stopped: AtomicU8::new(0),
            progress,
        }
    }

    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether a limit was hit.
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) != 0
    }

    /// Check the deadline; whether a limit was hit.
    #[inline]
    pub(crate) fn check_time(&self) -> bool {
        if let Some(d) = self.deadline
            && Instant::now() >= d
        {
            let _ = self
                .stopped
                .compare_exchange(0, 2, Ordering::Relaxed, Ordering::Relaxed);
        }
        self.stopped()
    }

    /// Check the deadline and a lower bound of the changes so far; whether a limit was
    /// hit. The bound is the commit's progress if it is the highest yet.
    #[inline]
    pub(crate) fn check(&self, changes: u64) -> bool {
        self.progress.fetch_max(changes, Ordering::Relaxed);
        if let Some(max) = self.limits.max_changes
            && changes > max
        {
            let _ = self
                .stopped
                .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed);
        }
        self.check_time()
    }

    /// The error of the limit that was hit, if one was.
    pub(crate) fn error(&self) -> Option<EngineError> {
        let limit = match self.stopped.load(Ordering::Relaxed) {
            1 => LimitExceeded::Changes(self.limits.max_changes.unwrap_or(0)),
            2 => LimitExceeded::Time(self.limits.max_time.unwrap_or_default()),
            _ => return None,
        };
        Some(EngineError::LimitExceeded(limit))
    }
}
