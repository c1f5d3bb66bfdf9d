//! The note a kernel logs when it runs in a debug build: compiled in the
//! user's crate, a kernel built without optimizations is two to three orders
//! of magnitude slower (matmul 512³: see the README's first example), and
//! nothing else would tell the user why.

use std::sync::atomic::{AtomicBool, Ordering};

/// The profile setting the note recommends (the README's first example).
pub const HINT: &str = "[profile.dev.package.\"*\"] opt-level = 3";

static NOTED: AtomicBool = AtomicBool::new(false);

/// Logs, once per process, that kernel `name` runs in a debug build and how
/// to optimize it. Generated code calls it when `cfg!(debug_assertions)`
/// holds in the user's crate (the crate that compiles the kernel).
#[cold]
pub fn note_debug_build(name: &str) {
    if !NOTED.load(Ordering::Relaxed) && !NOTED.swap(true, Ordering::Relaxed) {
        log::warn!(
            "mdh: kernel `{name}` was compiled in a debug build; unoptimized, a kernel \
             runs 100-1000x slower. Optimize it in debug builds with `{HINT}` in the \
             workspace's Cargo.toml (or run with --release); ignore this if the build \
             is optimized with debug assertions."
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Keeps every record logged by this process.
    struct Recorder(Mutex<Vec<String>>);

    impl log::Log for Recorder {
        fn enabled(&self, _: &log::Metadata) -> bool {
            true
        }
        fn log(&self, record: &log::Record) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", record.level(), record.args()));
        }
        fn flush(&self) {}
    }

    static RECORDER: Recorder = Recorder(Mutex::new(Vec::new()));

    #[test]
    fn the_note_is_logged_once_with_the_hint() {
        log::set_logger(&RECORDER).unwrap();
        log::set_max_level(log::LevelFilter::Warn);
        note_debug_build("matmul");
        note_debug_build("matmul");
        note_debug_build("dot");
        let records = RECORDER.0.lock().unwrap();
        assert_eq!(records.len(), 1, "{records:?}");
        assert!(
            records[0].starts_with("WARN mdh: kernel `matmul`"),
            "{records:?}"
        );
        assert!(records[0].contains(HINT), "{records:?}");
    }
}
