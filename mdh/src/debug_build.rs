//! The note a kernel logs when it runs in a build with debug assertions:
//! compiled in the user's crate, such a kernel is two to three orders of
//! magnitude slower (matmul 512³: 1000× unoptimized, 90× even at
//! opt-level 3, where the standard library's checks of unchecked reads and
//! pointer offsets, on with debug assertions, run in its hot loops; see the
//! guide's first chapter, "Debug builds"), and nothing else would tell the user why.

use std::sync::atomic::{AtomicBool, Ordering};

static NOTED: AtomicBool = AtomicBool::new(false);

/// The profile settings that make the kernels of crate `package` fast in
/// debug builds: its dependencies optimized, and its own code (where
/// `mdh!` expands) optimized and without debug assertions.
pub fn hint(package: &str) -> String {
    format!(
        "[profile.dev.package.\"*\"] opt-level = 3 and [profile.dev.package.{package}] opt-level = 3, debug-assertions = false"
    )
}

/// Logs, once per process, that kernel `name` of crate `package` runs in
/// a debug build and how to optimize it. Generated code calls it when
/// `cfg!(debug_assertions)` holds in the crate that compiles the kernel.
#[cold]
pub fn note_debug_build(name: &str, package: &str) {
    if !NOTED.load(Ordering::Relaxed) && !NOTED.swap(true, Ordering::Relaxed) {
        log::warn!(
            "mdh: kernel `{name}` was compiled with debug assertions (a debug build), \
             where a kernel runs 100-1000x slower (the standard library's checks of \
             unchecked reads run in its loops, even when optimized). Build with \
             --release, or set {} in the workspace's Cargo.toml (kernels in a crate \
             of their own keep your code's debug assertions).",
            hint(package)
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
        note_debug_build("matmul", "my-app");
        note_debug_build("matmul", "my-app");
        note_debug_build("dot", "other");
        let records = RECORDER.0.lock().unwrap();
        assert_eq!(records.len(), 1, "{records:?}");
        assert!(
            records[0].starts_with("WARN mdh: kernel `matmul`"),
            "{records:?}"
        );
        assert!(records[0].contains(&hint("my-app")), "{records:?}");
        assert!(
            records[0]
                .contains("[profile.dev.package.my-app] opt-level = 3, debug-assertions = false"),
            "{records:?}"
        );
    }
}
