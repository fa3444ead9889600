//! A spinner on stderr for work that takes longer than a second; silent when stderr is
//! not a terminal, and never shown for quick work.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Spinner {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Start timing `message`; the spinner appears only after one second.
    pub fn start(message: impl Into<String>) -> Spinner {
        if !std::io::stderr().is_terminal() {
            return Spinner {
                stop: None,
                handle: None,
            };
        }
        let message = message.into();
        let (tx, rx) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            match rx.recv_timeout(Duration::from_secs(1)) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(message);
            while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_millis(100)) {
                bar.tick();
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
