//! Where the processor's heavy work runs: messages that may carry a rewrite (ext_proc body pieces of
//! some size, agentgateway's `extMcp` calls), off the async workers and one per core at a time. More at
//! once only makes each late: under 60 concurrent 14 MiB requests on 2 cores, 48 answers came after
//! Envoy's `message_timeout` had sent their requests on unchanged, each rewrite's work wasted
//! (issue 57). A message that finds no free slot within half of its time is declined at once instead
//! (counted `toolfit_extproc_declined_busy`), so the gateway fails open for it without waiting. So is one
//! whose expected cost (its bytes at the rate measured on earlier large messages) exceeds the time it
//! has left: under 100 concurrent 14 MiB requests, 17 of 18 rewrites started in time still finished after
//! Envoy had sent their requests on. The rate is lowered by an eighth at each such decline, so a rate
//! measured under a passing burst cannot keep later messages out: one runs and measures again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The work slots, one per core, and the count of messages declined for want of one.
pub struct Work {
    slots: Arc<Semaphore>,
    pub declined: Arc<AtomicU64>,
    /// Picoseconds per byte of the large jobs run so far (a moving average; 0 before the first).
    rate: Arc<AtomicU64>,
}

/// Jobs from this size on measure the rate (below it, a job's fixed costs would dominate).
const MEASURED_FROM: usize = 64 << 10;

/// Why a job gave no result.
#[derive(Debug, PartialEq, Eq)]
pub enum Undone {
    /// No slot came free within half of the time.
    Busy,
    /// The job panicked (the panic's message).
    Failed(String),
    /// The job ran past the time (its result is dropped when it ends).
    Late,
}

impl Work {
    /// `slots` jobs at once (the cores: `Work::per_core`).
    pub fn new(slots: usize) -> Work {
        Work { slots: Arc::new(Semaphore::new(slots.max(1))), declined: Arc::new(AtomicU64::new(0)), rate: Arc::new(AtomicU64::new(0)) }
    }

    pub fn per_core() -> Work {
        Work::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// `job` (on a message of `bytes`) on a work slot, within `timeout` in all (the wait for the slot
    /// included). Declined unrun when the wait passes half of it, or when the job's expected cost
    /// exceeds the time left: counted, and said in the log at the 1st, 2nd, 4th, 8th... time, so an
    /// overload is said and a long one cannot fill the log.
    pub async fn run<T: Send + 'static>(&self, bytes: usize, job: impl FnOnce() -> T + Send + 'static, timeout: Duration) -> Result<T, Undone> {
        let start = tokio::time::Instant::now();
        if self.expected(bytes) > timeout {
            return Err(self.decline(timeout, "its expected cost exceeds the message timeout"));
        }
        let Ok(Ok(slot)) = tokio::time::timeout(timeout / 2, self.slots.clone().acquire_owned()).await else {
            return Err(self.decline(timeout, "every core busy past half of the message timeout"));
        };
        let left = timeout.saturating_sub(start.elapsed());
        if self.expected(bytes) > left {
            return Err(self.decline(timeout, "its expected cost exceeds the time left"));
        }
        let running = self.spawn(slot, bytes, job);
        match tokio::time::timeout(left, running).await {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => Err(Undone::Failed(e.to_string())),
            Err(_) => Err(Undone::Late),
        }
    }

    /// `job` on a work slot, however long the wait and the job take: for work that must finish, whose
    /// input no rescue can answer (a response's held bytes). Still one per core; measured like the rest.
    pub async fn run_whole<T: Send + 'static>(&self, bytes: usize, job: impl FnOnce() -> T + Send + 'static) -> Result<T, Undone> {
        let slot = self.slots.clone().acquire_owned().await.map_err(|e| Undone::Failed(e.to_string()))?;
        self.spawn(slot, bytes, job).await.map_err(|e| Undone::Failed(e.to_string()))
    }

    /// `job` on the blocking pool, holding `slot` while it runs.
    fn spawn<T: Send + 'static>(&self, slot: OwnedSemaphorePermit, bytes: usize, job: impl FnOnce() -> T + Send + 'static) -> tokio::task::JoinHandle<T> {
        let rate = self.rate.clone();
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            let began = std::time::Instant::now();
            let done = job();
            // measured here, so a job that ends past its time (the ones the rate is for) counts too
            measured(&rate, bytes, began.elapsed());
            done
        })
    }

    /// What a job on `bytes` is expected to take at the measured rate (zero before any measure).
    fn expected(&self, bytes: usize) -> Duration {
        let ps = u128::from(self.rate.load(Ordering::Relaxed)).saturating_mul(bytes as u128);
        Duration::from_nanos(u64::try_from(ps / 1000).unwrap_or(u64::MAX))
    }

    fn decline(&self, timeout: Duration, why: &str) -> Undone {
        // each decline trusts the measured rate a little less (see the module's comment)
        let rate = self.rate.load(Ordering::Relaxed);
        self.rate.store(rate.saturating_sub(rate / 8), Ordering::Relaxed);
        let n = self.declined.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        if n.is_power_of_two() {
            log::warn!("toolfit: a message declined, sent on unchanged: {why} ({} ms; {n} so far)", timeout.as_millis());
        }
        Undone::Busy
    }
}

/// A large job's time folded into the rate (a quarter weight to the newest).
fn measured(rate: &AtomicU64, bytes: usize, took: Duration) {
    if bytes < MEASURED_FROM {
        return;
    }
    let ps = u64::try_from(took.as_nanos().saturating_mul(1000) / bytes as u128).unwrap_or(u64::MAX);
    let old = rate.load(Ordering::Relaxed);
    let new = if old == 0 { ps } else { (old / 4).saturating_mul(3).saturating_add(ps / 4) };
    rate.store(new, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One slot held by a job longer than half the timeout: the next is declined without running, and
    /// counted; once the slot is free a job runs. The control: with two slots both run.
    #[tokio::test]
    async fn a_job_that_cannot_start_in_time_is_declined_unrun() {
        let work = Arc::new(Work::new(1));
        let ran = Arc::new(AtomicU64::new(0));
        let (w, r) = (work.clone(), ran.clone());
        let long = tokio::spawn(async move { w.run(0, move || std::thread::sleep(Duration::from_millis(300)), Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let r2 = r.clone();
        let declined = work.run(0, move || r2.fetch_add(1, Ordering::Relaxed), Duration::from_millis(100)).await;
        assert_eq!(declined, Err(Undone::Busy));
        assert_eq!((ran.load(Ordering::Relaxed), work.declined.load(Ordering::Relaxed)), (0, 1));
        assert_eq!(long.await.ok(), Some(Ok(())));
        let r3 = ran.clone();
        assert_eq!(work.run(0, move || r3.fetch_add(1, Ordering::Relaxed), Duration::from_millis(100)).await, Ok(0));
        // the control: two slots, the second job runs beside the long one
        let two = Arc::new(Work::new(2));
        let w = two.clone();
        let long = tokio::spawn(async move { w.run(0, || std::thread::sleep(Duration::from_millis(300)), Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(two.run(0, || 7, Duration::from_millis(100)).await, Ok(7));
        assert_eq!(long.await.ok(), Some(Ok(())));
    }

    /// A job past the timeout: Late, its result dropped; a large one still measures the rate (the
    /// jobs that end late are the ones it is for).
    #[tokio::test]
    async fn a_job_past_the_timeout_is_late() {
        let work = Work::new(1);
        assert_eq!(work.run(0, || std::thread::sleep(Duration::from_millis(200)), Duration::from_millis(50)).await, Err(Undone::Late));
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(work.expected(1 << 20), Duration::ZERO, "a small job measures nothing");
        assert_eq!(work.run(1 << 20, || std::thread::sleep(Duration::from_millis(200)), Duration::from_millis(50)).await, Err(Undone::Late));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(work.expected(1 << 20) >= Duration::from_millis(200), "{:?}", work.expected(1 << 20));
    }

    /// A large job measures the rate; a job whose cost at that rate exceeds its timeout is declined
    /// unrun (counted), a small one runs; each decline lowers the rate, so after a few one runs again.
    /// The control: a fresh `Work` (no rate yet) runs the same job.
    #[tokio::test]
    async fn a_job_expected_to_be_late_is_declined_unrun() {
        let work = Work::new(1);
        let mb = 1 << 20;
        assert_eq!(work.run(mb, || std::thread::sleep(Duration::from_millis(200)), Duration::from_secs(5)).await, Ok(()));
        let rate = work.expected(mb);
        assert!(rate >= Duration::from_millis(200) && rate < Duration::from_millis(400), "{rate:?}");
        let ran = Arc::new(AtomicU64::new(0));
        let r = ran.clone();
        assert_eq!(work.run(mb, move || r.fetch_add(1, Ordering::Relaxed), Duration::from_millis(100)).await, Err(Undone::Busy));
        assert_eq!((ran.load(Ordering::Relaxed), work.declined.load(Ordering::Relaxed)), (0, 1));
        assert_eq!(work.run(1024, || 3, Duration::from_millis(100)).await, Ok(3));
        let mut declines = 1;
        while work.run(mb, || (), Duration::from_millis(100)).await.is_err() {
            declines += 1;
            assert!(declines < 20, "the rate never came down");
        }
        assert!(declines > 3, "{declines}");
        // the control: no rate measured, the same job runs
        assert_eq!(Work::new(1).run(mb, || 5, Duration::from_millis(100)).await, Ok(5));
    }
}
