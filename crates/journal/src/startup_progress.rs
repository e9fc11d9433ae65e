//! How far start-up has got, as HDFS's NameNode reports it: four phases (loading the image,
//! loading the edits, saving a checkpoint, start-up safe mode), each made of steps with a
//! count and a total. Shown by the `StartupProgress` bean of `/jmx` and by
//! `/startupProgress`, both answered from the first moment of start-up: an operator
//! watching a NameNode load a large namespace sees how far it is, not a closed port.
//!
//! Pure bookkeeping: the caller passes the time. The loader updates a running step's
//! count through [`StartupProgress::set_count`], an atomic store, so the replay's hot loop
//! takes no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ferrite_http::Bean;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    LoadingFsImage,
    LoadingEdits,
    SavingCheckpoint,
    SafeMode,
}

pub const PHASES: [Phase; 4] = [
    Phase::LoadingFsImage,
    Phase::LoadingEdits,
    Phase::SavingCheckpoint,
    Phase::SafeMode,
];

impl Phase {
    /// HDFS's name, the prefix of the bean's attributes.
    pub fn name(self) -> &'static str {
        match self {
            Phase::LoadingFsImage => "LoadingFsImage",
            Phase::LoadingEdits => "LoadingEdits",
            Phase::SavingCheckpoint => "SavingCheckpoint",
            Phase::SafeMode => "SafeMode",
        }
    }

    fn desc(self) -> &'static str {
        match self {
            Phase::LoadingFsImage => "Loading fsimage",
            Phase::LoadingEdits => "Loading edits",
            Phase::SavingCheckpoint => "Saving checkpoint",
            Phase::SafeMode => "Safe mode",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A step's kind, for the steps HDFS names (an edits segment's step is named by its file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    Inodes,
    AwaitingReportedBlocks,
}

impl StepKind {
    fn name(self) -> &'static str {
        match self {
            StepKind::Inodes => "Inodes",
            StepKind::AwaitingReportedBlocks => "AwaitingReportedBlocks",
        }
    }

    fn desc(self) -> &'static str {
        match self {
            StepKind::Inodes => "inodes",
            StepKind::AwaitingReportedBlocks => "awaiting reported blocks",
        }
    }
}

/// What a new step is: a kind, or a file (and its size), with the total it counts to
/// (0 while unknown).
#[derive(Clone, Debug, Default)]
pub struct StepSpec {
    pub kind: Option<StepKind>,
    pub file: Option<String>,
    pub size: Option<u64>,
    pub total: u64,
}

#[derive(Clone, Debug, Default)]
struct Step {
    spec: StepSpec,
    count: u64,
    begin: Option<Instant>,
    end: Option<Instant>,
}

#[derive(Clone, Debug, Default)]
struct Track {
    begin: Option<Instant>,
    end: Option<Instant>,
    file: Option<String>,
    size: Option<u64>,
    steps: Vec<Step>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Status {
    #[default]
    Pending,
    Running,
    Complete,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Running => "RUNNING",
            Status::Complete => "COMPLETE",
        }
    }
}

/// Start-up's phases, shared by the loader that advances them and the HTTP server that
/// shows them.
pub struct StartupProgress {
    started: Instant,
    phases: Mutex<[Track; 4]>,
    /// The count of the step running last (see [`set_count`](Self::set_count)).
    live: AtomicU64,
}

impl StartupProgress {
    pub fn new(now: Instant) -> StartupProgress {
        StartupProgress {
            started: now,
            phases: Mutex::default(),
            live: AtomicU64::new(0),
        }
    }

    /// Start-up with nothing to load (no name directories, a memory NameNode, one the
    /// simulator replays itself): the image, edits and checkpoint phases are over at once.
    pub fn skip_loading(&self, now: Instant) {
        for p in [
            Phase::LoadingFsImage,
            Phase::LoadingEdits,
            Phase::SavingCheckpoint,
        ] {
            self.end_phase(p, now);
        }
    }

    pub fn begin_phase(&self, p: Phase, now: Instant) {
        self.phases.lock()[p.index()].begin.get_or_insert(now);
    }

    /// Ends `p`, and its step still running; a phase never begun is begun here, as HDFS
    /// marks a phase it skips (no checkpoint to save) begun and ended at once.
    pub fn end_phase(&self, p: Phase, now: Instant) {
        let mut phases = self.phases.lock();
        let live = self.live.load(Ordering::Relaxed);
        let t = &mut phases[p.index()];
        t.begin.get_or_insert(now);
        if t.end.is_none() {
            t.end = Some(now);
        }
        if let Some(s) = t.steps.last_mut().filter(|s| s.end.is_none()) {
            s.count = live;
            s.end = Some(now);
        }
    }

    pub fn set_file(&self, p: Phase, file: String, size: u64) {
        let mut phases = self.phases.lock();
        let t = &mut phases[p.index()];
        (t.file, t.size) = (Some(file), Some(size));
    }

    /// Starts a step of `p` (ending the one before it, if still running) whose count
    /// starts at 0.
    pub fn begin_step(&self, p: Phase, spec: StepSpec, now: Instant) {
        let mut phases = self.phases.lock();
        let live = self.live.swap(0, Ordering::Relaxed);
        let t = &mut phases[p.index()];
        if let Some(s) = t.steps.last_mut().filter(|s| s.end.is_none()) {
            s.count = live;
            s.end = Some(now);
        }
        t.steps.push(Step {
            spec,
            count: 0,
            begin: Some(now),
            end: None,
        });
    }

    /// The running step's count so far (of the step begun last).
    pub fn set_count(&self, count: u64) {
        self.live.store(count, Ordering::Relaxed);
    }

    /// The running step's total, once known.
    pub fn set_total(&self, p: Phase, total: u64) {
        if let Some(s) = self.phases.lock()[p.index()].steps.last_mut() {
            s.spec.total = total;
        }
    }

    /// What start-up has done as of `now`, the running step's count included.
    pub fn view(&self, now: Instant) -> View {
        let phases = self.phases.lock().clone();
        let live = self.live.load(Ordering::Relaxed);
        let phase = |t: &Track| PhaseView {
            status: match (t.begin, t.end) {
                (None, _) => Status::Pending,
                (Some(_), None) => Status::Running,
                (Some(_), Some(_)) => Status::Complete,
            },
            elapsed: ms(t.begin, t.end, now),
            file: t.file.clone(),
            size: t.size,
            steps: t
                .steps
                .iter()
                .map(|s| StepView {
                    kind: s.spec.kind,
                    file: s.spec.file.clone(),
                    size: s.spec.size,
                    count: if s.end.is_none() { live } else { s.count },
                    total: s.spec.total,
                    elapsed: ms(s.begin, s.end, now),
                })
                .collect(),
        };
        View {
            elapsed: ms(Some(self.started), phases[Phase::SafeMode.index()].end, now),
            phases: phases.each_ref().map(phase),
        }
    }
}

fn ms(from: Option<Instant>, to: Option<Instant>, now: Instant) -> u64 {
    match from {
        Some(b) => to.unwrap_or(now).saturating_duration_since(b).as_millis() as u64,
        None => 0,
    }
}

fn fraction(count: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        (count as f64 / total as f64).clamp(0.0, 1.0)
    }
}

/// Start-up progress at one moment: plain figures, times in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// From the start until safe mode ended (or the moment of the view).
    elapsed: u64,
    phases: [PhaseView; 4],
}

#[derive(Clone, Debug, Default)]
struct PhaseView {
    status: Status,
    elapsed: u64,
    file: Option<String>,
    size: Option<u64>,
    steps: Vec<StepView>,
}

#[derive(Clone, Debug, Default)]
struct StepView {
    kind: Option<StepKind>,
    file: Option<String>,
    size: Option<u64>,
    count: u64,
    total: u64,
    elapsed: u64,
}

impl View {
    fn phase(&self, p: Phase) -> &PhaseView {
        &self.phases[p.index()]
    }

    pub fn status(&self, p: Phase) -> Status {
        self.phase(p).status
    }

    pub fn count(&self, p: Phase) -> u64 {
        self.phase(p).steps.iter().map(|s| s.count).sum()
    }

    pub fn total(&self, p: Phase) -> u64 {
        self.phase(p).steps.iter().map(|s| s.total).sum()
    }

    pub fn elapsed(&self, p: Phase) -> u64 {
        self.phase(p).elapsed
    }

    pub fn elapsed_total(&self) -> u64 {
        self.elapsed
    }

    /// 1 once complete; otherwise the steps' counts over their totals.
    pub fn percent(&self, p: Phase) -> f64 {
        match self.status(p) {
            Status::Complete => 1.0,
            _ => fraction(self.count(p), self.total(p)),
        }
    }

    /// The phases' mean, or 1 once safe mode has ended, as HDFS weighs them.
    pub fn percent_total(&self) -> f64 {
        if self.status(Phase::SafeMode) == Status::Complete {
            return 1.0;
        }
        PHASES.iter().map(|&p| self.percent(p)).sum::<f64>() / PHASES.len() as f64
    }

    /// The `StartupProgress` bean: overall and per-phase count, elapsed time, total and
    /// percentage, under HDFS's attribute names.
    pub fn bean(&self, name: String) -> Bean {
        let mut b = Bean::new(name, "StartupProgress")
            .with("ElapsedTime", self.elapsed_total())
            .with("PercentComplete", self.percent_total());
        for p in PHASES {
            let n = p.name();
            b = b
                .with(&format!("{n}Count"), self.count(p))
                .with(&format!("{n}ElapsedTime"), self.elapsed(p))
                .with(&format!("{n}Total"), self.total(p))
                .with(&format!("{n}PercentComplete"), self.percent(p));
        }
        b
    }

    /// `/startupProgress`'s document: the phases with their steps.
    pub fn json(&self) -> Value {
        let phases: Vec<Value> = PHASES.iter().map(|&p| self.phase_json(p)).collect();
        json!({
            "elapsedTime": self.elapsed_total(),
            "percentComplete": self.percent_total(),
            "phases": phases,
        })
    }

    fn phase_json(&self, p: Phase) -> Value {
        let t = self.phase(p);
        let mut o = Map::new();
        o.insert("name".into(), p.name().into());
        o.insert("desc".into(), p.desc().into());
        o.insert("status".into(), t.status.as_str().into());
        o.insert("percentComplete".into(), self.percent(p).into());
        o.insert("elapsedTime".into(), t.elapsed.into());
        if let Some(f) = &t.file {
            o.insert("file".into(), f.clone().into());
        }
        if let Some(z) = t.size {
            o.insert("size".into(), z.into());
        }
        let done = t.status == Status::Complete;
        let steps: Vec<Value> = t.steps.iter().map(|s| step_json(s, done)).collect();
        o.insert("steps".into(), steps.into());
        Value::Object(o)
    }
}

fn step_json(s: &StepView, phase_done: bool) -> Value {
    let mut o = Map::new();
    if let Some(k) = s.kind {
        o.insert("name".into(), k.name().into());
        o.insert("desc".into(), k.desc().into());
    }
    o.insert("count".into(), s.count.into());
    if let Some(f) = &s.file {
        o.insert("file".into(), f.clone().into());
    }
    if let Some(z) = s.size {
        o.insert("size".into(), z.into());
    }
    o.insert("total".into(), s.total.into());
    let pct = if phase_done {
        1.0
    } else {
        fraction(s.count, s.total)
    };
    o.insert("percentComplete".into(), pct.into());
    o.insert("elapsedTime".into(), s.elapsed.into());
    Value::Object(o)
}

/// One journal segment as the edits phase shows it.
#[derive(Clone, Debug)]
pub struct SegmentInfo {
    pub file: String,
    pub size: u64,
    pub first: u64,
    /// Unknown for the segment still in progress.
    pub last: Option<u64>,
}

/// Maps the txids a replay applies to the segments they come from, one step a segment, as
/// HDFS shows one step per edits file. Only for display: the replay reads every copy.
pub struct EditSteps {
    segments: Vec<SegmentInfo>,
    next: usize,
    /// The last txid of the segment being counted (`None`: open-ended, or none yet).
    current_last: Option<u64>,
    started: bool,
}

impl EditSteps {
    /// The segments (in txid order) that hold records after `after`.
    pub fn new(mut segments: Vec<SegmentInfo>, after: u64) -> EditSteps {
        segments.retain(|s| s.last.is_none_or(|l| l > after));
        for s in &mut segments {
            s.first = s.first.max(after + 1);
        }
        EditSteps {
            segments,
            next: 0,
            current_last: None,
            started: false,
        }
    }

    /// The step that begins with `txid`, if it opens a segment not yet counted. A txid no
    /// listed segment holds (one the listing missed) stays in the current step, or, before
    /// any, opens a step with no file, so that no replayed edit goes uncounted.
    pub fn enter(&mut self, txid: u64) -> Option<StepSpec> {
        if self.started && self.current_last.is_none_or(|l| txid <= l) {
            return None;
        }
        let found = self.segments[self.next..]
            .iter()
            .position(|s| s.last.is_none_or(|l| txid <= l));
        let Some(i) = found.map(|k| self.next + k) else {
            if self.started {
                return None;
            }
            (self.current_last, self.started) = (None, true);
            return Some(StepSpec::default());
        };
        let s = &self.segments[i];
        (self.next, self.current_last, self.started) = (i + 1, s.last, true);
        Some(StepSpec {
            kind: None,
            file: Some(s.file.clone()),
            size: Some(s.size),
            total: s.last.map_or(0, |l| l + 1 - s.first),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    fn inodes(total: u64) -> StepSpec {
        StepSpec {
            kind: Some(StepKind::Inodes),
            total,
            ..Default::default()
        }
    }

    #[test]
    fn phases_run_in_turn_and_a_running_step_shows_its_live_count() {
        let t0 = Instant::now();
        let p = StartupProgress::new(t0);
        let v = p.view(t0);
        assert!(PHASES.iter().all(|&ph| v.status(ph) == Status::Pending));
        assert_eq!(v.percent_total(), 0.0);

        p.begin_phase(Phase::LoadingFsImage, at(t0, 10));
        p.set_file(Phase::LoadingFsImage, "/n/fsimage_7".into(), 4096);
        p.begin_step(Phase::LoadingFsImage, inodes(1000), at(t0, 10));
        p.set_count(250);
        let v = p.view(at(t0, 30));
        assert_eq!(v.status(Phase::LoadingFsImage), Status::Running);
        assert_eq!(v.count(Phase::LoadingFsImage), 250);
        assert_eq!(v.percent(Phase::LoadingFsImage), 0.25);
        assert_eq!(v.elapsed(Phase::LoadingFsImage), 20);
        assert_eq!(v.percent_total(), 0.25 / 4.0);
        let doc = v.json();
        let phase = &doc["phases"][0];
        assert_eq!(phase["status"], "RUNNING");
        assert_eq!(phase["file"], "/n/fsimage_7");
        assert_eq!(phase["steps"][0]["name"], "Inodes");
        assert_eq!(phase["steps"][0]["count"], 250);
        assert_eq!(phase["steps"][0]["total"], 1000);

        p.set_count(1000);
        p.end_phase(Phase::LoadingFsImage, at(t0, 40));
        p.begin_phase(Phase::LoadingEdits, at(t0, 40));
        let seg = |f: &str, total| StepSpec {
            file: Some(f.into()),
            size: Some(1 << 20),
            total,
            ..Default::default()
        };
        p.begin_step(Phase::LoadingEdits, seg("edits_8-107", 100), at(t0, 40));
        p.set_count(100);
        // The next segment's step ends the one before with its count.
        p.begin_step(
            Phase::LoadingEdits,
            seg("edits_inprogress_108", 0),
            at(t0, 50),
        );
        p.set_count(7);
        let v = p.view(at(t0, 55));
        assert_eq!(v.count(Phase::LoadingFsImage), 1000, "kept once ended");
        assert_eq!(v.status(Phase::LoadingFsImage), Status::Complete);
        assert_eq!(v.count(Phase::LoadingEdits), 107);
        assert_eq!(v.total(Phase::LoadingEdits), 100);
        assert_eq!(v.percent(Phase::LoadingEdits), 1.0, "bounded");
        let steps = &v.json()["phases"][1]["steps"];
        assert_eq!(steps[0]["file"], "edits_8-107");
        assert!(
            steps[0].get("name").is_none(),
            "a segment's step has no kind"
        );
        assert_eq!(steps[1]["count"], 7);
        assert_eq!(steps[1]["elapsedTime"], 5);
    }

    #[test]
    fn edit_steps_follow_the_segments_past_the_image() {
        let seg = |file: &str, first, last| SegmentInfo {
            file: file.into(),
            size: 100,
            first,
            last,
        };
        let mut steps = EditSteps::new(
            vec![
                seg("edits_1-10", 1, Some(10)),
                seg("edits_11-20", 11, Some(20)),
                seg("edits_21-30", 21, Some(30)),
                seg("edits_inprogress_31", 31, None),
            ],
            15,
        );
        let first = steps
            .enter(16)
            .expect("the segment holding the image's next txid");
        assert_eq!(first.file.as_deref(), Some("edits_11-20"));
        assert_eq!(first.total, 5, "only what follows the image is replayed");
        assert!(steps.enter(17).is_none() && steps.enter(20).is_none());
        assert_eq!(steps.enter(21).unwrap().total, 10);
        let open = steps.enter(31).unwrap();
        assert_eq!(
            (open.file.as_deref(), open.total),
            (Some("edits_inprogress_31"), 0)
        );
        assert!(
            steps.enter(1_000).is_none(),
            "an open segment takes the rest"
        );

        let mut unlisted = EditSteps::new(vec![seg("edits_1-10", 1, Some(10))], 10);
        let spec = unlisted
            .enter(11)
            .expect("a step even with no segment listed");
        assert_eq!((spec.file, spec.total), (None, 0));
        assert!(unlisted.enter(12).is_none());
    }

    #[test]
    fn a_skipped_phase_is_complete_and_safe_mode_ending_completes_start_up() {
        let t0 = Instant::now();
        let p = StartupProgress::new(t0);
        for ph in [Phase::LoadingFsImage, Phase::LoadingEdits] {
            p.begin_phase(ph, t0);
            p.end_phase(ph, t0);
        }
        p.end_phase(Phase::SavingCheckpoint, at(t0, 5));
        p.begin_phase(Phase::SafeMode, at(t0, 5));
        p.begin_step(
            Phase::SafeMode,
            StepSpec {
                kind: Some(StepKind::AwaitingReportedBlocks),
                total: 10,
                ..Default::default()
            },
            at(t0, 5),
        );
        p.set_count(5);
        let v = p.view(at(t0, 9));
        assert_eq!(v.status(Phase::SavingCheckpoint), Status::Complete);
        assert_eq!(v.elapsed(Phase::SavingCheckpoint), 0);
        assert_eq!(v.percent_total(), (3.0 + 0.5) / 4.0);
        assert_eq!(v.elapsed_total(), 9);
        p.end_phase(Phase::SafeMode, at(t0, 12));
        let v = p.view(at(t0, 100));
        assert_eq!(v.percent_total(), 1.0);
        assert_eq!(
            v.elapsed_total(),
            12,
            "start-up's time stops with safe mode"
        );
        assert_eq!(v.count(Phase::SafeMode), 5);
        let bean = v.bean("Hadoop:service=NameNode,name=StartupProgress".into());
        assert_eq!(bean.get("SafeModeTotal"), Some(&Value::from(10)));
        assert_eq!(bean.get("SafeModePercentComplete"), Some(&Value::from(1.0)));
        assert_eq!(bean.get("ElapsedTime"), Some(&Value::from(12)));
    }
}
