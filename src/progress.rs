//! Progress on stderr for work that takes longer than a second: a [`Spinner`] for work
//! of unknown length (loading, evaluating), and the lines written so far for output
//! ([`LineCounter`], `dynalog gen`). Silent when stderr is not a terminal (a log file
//! gets no progress lines), and never shown for quick work. The environment variable
//! `DYNALOG_PROGRESS_DELAY_MS` changes the one second (the tests set it to 0).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Spinner {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

/// What a [`Spinner`] counts: a position read every tick, out of `total` if known.
struct Count {
    position: Arc<AtomicU64>,
    total: Option<u64>,
}

impl Spinner {
    /// Start timing `message`; the spinner appears only after one second.
    pub fn start(message: impl Into<String>) -> Spinner {
        Spinner::display(message.into(), None)
    }

    /// The spinner of an engine's commit: the facts the commit changed so far, when the
    /// engine counts them ([`dynalog_engines::Engine::progress`]), shown as
    /// `N facts so far, {message}`.
    pub fn evaluating(engine: &dyn dynalog_engines::Engine, message: &str) -> Spinner {
        match engine.progress() {
            Some(position) => Spinner::display(
                format!("facts so far, {message}"),
                Some(Count {
                    position,
                    total: None,
                }),
            ),
            None => Spinner::start(message),
        }
    }

    fn display(message: String, count: Option<Count>) -> Spinner {
        if !std::io::stderr().is_terminal() {
            return Spinner {
                stop: None,
                handle: None,
            };
        }
        let delay = std::env::var("DYNALOG_PROGRESS_DELAY_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(Duration::from_secs(1), Duration::from_millis);
        let (tx, rx) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            match rx.recv_timeout(delay) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            let total = count.as_ref().and_then(|c| c.total);
            let template = match (&count, total) {
                (None, _) => "{spinner} {msg} ({elapsed})",
                (Some(_), None) => "{spinner} {human_pos} {msg} ({elapsed})",
                (Some(_), Some(_)) => "{bar:30} {human_pos}/{human_len} {msg} ({elapsed})",
            };
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(message);
            loop {
                if let Some(c) = &count {
                    bar.set_position(c.position.load(Ordering::Relaxed));
                }
                bar.tick();
                if !matches!(
                    rx.recv_timeout(Duration::from_millis(100)),
                    Err(RecvTimeoutError::Timeout)
                ) {
                    break;
                }
            }
            bar.finish_and_clear();
        });
        Spinner {
            stop: Some(tx),
            handle: Some(handle),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A writer that counts the lines written through it; after a second, the count (a
/// bar when the number of lines is known in advance) is shown on stderr if it is a
/// terminal, until the counter is dropped. Each write is scanned for line ends when
/// stderr is a terminal (otherwise the writes pass through uncounted).
pub struct LineCounter<W: Write> {
    inner: W,
    /// Whether lines are counted: only when they are shown.
    counting: bool,
    lines: u64,
    /// `lines`, for the display thread (a plain store per write, no locked add).
    shown: Arc<AtomicU64>,
    _display: Spinner,
}

impl<W: Write> LineCounter<W> {
    /// Count the lines written to `inner`, shown as `N {message}`; `total` is the number
    /// expected, if known.
    pub fn new(inner: W, message: impl Into<String>, total: Option<u64>) -> LineCounter<W> {
        let shown = Arc::new(AtomicU64::new(0));
        let count = Count {
            position: shown.clone(),
            total,
        };
        let display = Spinner::display(message.into(), Some(count));
        LineCounter {
            inner,
            counting: display.handle.is_some(),
            lines: 0,
            shown,
            _display: display,
        }
    }
}

impl<W: Write> Write for LineCounter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        // Nothing is shown when stderr is not a terminal: nothing to count either.
        if self.counting {
            self.lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
            self.shown.store(self.lines, Ordering::Relaxed);
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_and_passed_on() {
        let mut out = Vec::new();
        {
            // As on a terminal, without drawing anything.
            let mut w = LineCounter {
                inner: &mut out,
                counting: true,
                lines: 0,
                shown: Arc::new(AtomicU64::new(0)),
                _display: Spinner {
                    stop: None,
                    handle: None,
                },
            };
            w.write_all(b"a\tb\nc").unwrap();
            write!(w, "\td\n\n").unwrap();
            w.flush().unwrap();
            assert_eq!(w.lines, 3);
            assert_eq!(w.shown.load(Ordering::Relaxed), 3);
        }
        assert_eq!(out, b"a\tb\nc\td\n\n");
    }
}
