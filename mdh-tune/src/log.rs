//! The tuning log: one JSON object per line, appended and flushed as each
//! candidate is measured, so an interrupted run loses nothing it measured;
//! `--resume` reads it back and goes on from there.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a tuning run is for; a log resumes only the same run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Start {
    pub kernel: String,
    pub backend: String,
    pub device: String,
    pub sizes: Vec<usize>,
    /// What candidates' results are compared with.
    #[serde(default)]
    pub checked_against: String,
}

/// What became of a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Correct; `time_s` is its median.
    Ok,
    /// Its result differs from the reference: never a winner.
    Wrong,
    /// It failed to build or to run.
    Failed,
    /// Its lower bound could not beat the best: not measured.
    Pruned,
}

impl From<mdh::gpu::bench::Status> for Status {
    fn from(s: mdh::gpu::bench::Status) -> Status {
        match s {
            mdh::gpu::bench::Status::Ok => Status::Ok,
            mdh::gpu::bench::Status::Wrong => Status::Wrong,
            mdh::gpu::bench::Status::Failed => Status::Failed,
        }
    }
}

/// One candidate of a plan type `P` (`CpuPlan`, `GpuPlan`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate<P> {
    /// The technique that proposed it (`None`: the default plan).
    pub technique: Option<String>,
    pub point: Option<Vec<usize>>,
    pub plan: P,
    pub status: Status,
    pub time_s: Option<f64>,
    pub lower_bound_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the GPU model predicted and the compiler reported (GPU
    /// candidates that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelNote>,
    /// Seconds of the budget spent when it was recorded.
    pub elapsed_s: f64,
}

/// The GPU model's prediction of a candidate (`gpu_model::predict`) and
/// the resources of its `mdh_main` (CUDA: ptxas' report) it was made with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelNote {
    /// The device row of the model (`generic`: the bound only).
    pub device: String,
    pub predicted_s: f64,
    /// What limits the plan: `fma`, `issue`, `shared`, `lsu`, `latency`,
    /// `l2`, `dram`, `launch` (`bound` for the generic model).
    pub limiter: String,
    pub blocks_per_unit: usize,
    pub waves: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_bytes: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record<P> {
    Start(Start),
    Candidate(Candidate<P>),
}

pub struct Log {
    path: PathBuf,
    file: File,
}

impl Log {
    /// Opens the log at `path`: appends to it when resuming (returning the
    /// candidates recorded so far), else starts it anew.
    pub fn open<P: serde::de::DeserializeOwned + Serialize>(
        path: &Path,
        start: &Start,
        resume: bool,
    ) -> Result<(Log, Vec<Candidate<P>>), String> {
        let mut done = Vec::new();
        if resume {
            let f = File::open(path).map_err(|e| {
                format!(
                    "cannot resume from {}: {e}; run without --resume to start a new tuning",
                    path.display()
                )
            })?;
            for (n, line) in BufReader::new(f).lines().enumerate() {
                let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
                // A line cut by an interrupt is the only one that may not
                // parse: the last one.
                let Ok(r) = serde_json::from_str::<Record<P>>(&line) else {
                    continue;
                };
                match r {
                    Record::Start(s) if s != *start => {
                        return Err(format!(
                            "{}:{}: the log is of another tuning ({} {} {:?} on {}); give the same --kernel, --backend and --size, or drop --resume",
                            path.display(),
                            n + 1,
                            s.kernel,
                            s.backend,
                            s.sizes,
                            s.device
                        ))
                    }
                    Record::Start(_) => {}
                    Record::Candidate(c) => done.push(c),
                }
            }
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(resume)
            .write(true)
            .truncate(!resume)
            .open(path)
            .map_err(|e| {
                format!(
                    "cannot write the tuning log {}: {e}; check the directory's permissions",
                    path.display()
                )
            })?;
        let mut log = Log {
            path: path.to_path_buf(),
            file,
        };
        // A cut last line must not glue onto the next record.
        log.file
            .write_all(b"\n")
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        log.append(&Record::<P>::Start(start.clone()))?;
        Ok((log, done))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record and pushes it to the disk.
    pub fn append<P: Serialize>(&mut self, r: &Record<P>) -> Result<(), String> {
        let mut line =
            serde_json::to_string(r).map_err(|e| format!("encoding a log record: {e}"))?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| format!("writing {}: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdh_core::plan::CpuPlan;

    fn candidate(t: f64) -> Candidate<CpuPlan> {
        Candidate {
            technique: Some("random".into()),
            point: Some(vec![1, 2]),
            plan: CpuPlan {
                nod: vec![0],
                cor: vec![0],
                l2: vec![4],
                l1: vec![2],
                reg: vec![1],
                order: vec![0],
                pack: vec![vec![]],
                stream: false,
                exact: false,
            },
            status: Status::Ok,
            time_s: Some(t),
            lower_bound_s: 0.0,
            error: None,
            model: None,
            elapsed_s: t,
        }
    }

    #[test]
    fn resuming_keeps_every_recorded_candidate_even_after_a_cut_line() {
        let path = std::env::temp_dir().join(format!("mdh-tune-log-{}.jsonl", std::process::id()));
        let start = Start {
            kernel: "k".into(),
            backend: "cpu".into(),
            device: "d".into(),
            sizes: vec![8],
            checked_against: "the reference interpreter".into(),
        };
        let (mut log, done) = Log::open::<CpuPlan>(&path, &start, false).unwrap();
        assert!(done.is_empty());
        log.append(&Record::Candidate(candidate(1.0))).unwrap();
        log.append(&Record::Candidate(candidate(2.0))).unwrap();
        // An interrupt in the middle of a write.
        log.file.write_all(b"{\"record\": \"candi").unwrap();
        drop(log);
        let (mut log, done) = Log::open(&path, &start, true).unwrap();
        assert_eq!(done, vec![candidate(1.0), candidate(2.0)]);
        log.append(&Record::Candidate(candidate(3.0))).unwrap();
        drop(log);
        let (_, done) = Log::open::<CpuPlan>(&path, &start, true).unwrap();
        assert_eq!(done.len(), 3);
        let other = Start {
            sizes: vec![9],
            ..start.clone()
        };
        let e = Log::open::<CpuPlan>(&path, &other, true).err().unwrap();
        assert!(e.contains("another tuning"), "{e}");
        // Without --resume: a new log.
        let (_, done) = Log::open::<CpuPlan>(&path, &start, false).unwrap();
        assert!(done.is_empty());
        std::fs::remove_file(&path).unwrap();
    }
}
