//! Where the processor's heavy work runs: messages that may carry a rewrite (ext_proc body pieces of
//! some size, agentgateway's `extMcp` calls), off the async workers and one per core at a time. More at
//! once only makes each late: under 60 concurrent 14 MiB requests on 2 cores, 48 answers came after
//! Envoy's `message_timeout` had sent their requests on unchanged, each rewrite's work wasted
//! (issue 57). A message that finds no free slot within half of its time is declined at once instead
//! (counted `toolfit_extproc_declined_busy`), so the gateway fails open for it without waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// The work slots, one per core, and the count of messages declined for want of one.
pub struct Work {
    slots: Arc<Semaphore>,
    pub declined: Arc<AtomicU64>,
}

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
        Work { slots: Arc::new(Semaphore::new(slots.max(1))), declined: Arc::new(AtomicU64::new(0)) }
    }

    pub fn per_core() -> Work {
        Work::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// `job` on a work slot, within `timeout` in all (the wait for the slot included). A wait past half
    /// of it declines the job unrun: counted, and said in the log at the 1st, 2nd, 4th, 8th... time, so
    /// an overload is said and a long one cannot fill the log.
    pub async fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static, timeout: Duration) -> Result<T, Undone> {
        let start = tokio::time::Instant::now();
        let Ok(Ok(slot)) = tokio::time::timeout(timeout / 2, self.slots.clone().acquire_owned()).await else {
            let n = self.declined.fetch_add(1, Ordering::Relaxed).saturating_add(1);
            if n.is_power_of_two() {
                log::warn!(
                    "toolfit: every core busy past half of the message timeout ({} ms): a message declined, sent on unchanged ({n} so far)",
                    timeout.as_millis()
                );
            }
            return Err(Undone::Busy);
        };
        let running = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            job()
        });
        match tokio::time::timeout(timeout.saturating_sub(start.elapsed()), running).await {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => Err(Undone::Failed(e.to_string())),
            Err(_) => Err(Undone::Late),
        }
    }
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
        let long = tokio::spawn(async move { w.run(move || std::thread::sleep(Duration::from_millis(300)), Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let r2 = r.clone();
        let declined = work.run(move || r2.fetch_add(1, Ordering::Relaxed), Duration::from_millis(100)).await;
        assert_eq!(declined, Err(Undone::Busy));
        assert_eq!((ran.load(Ordering::Relaxed), work.declined.load(Ordering::Relaxed)), (0, 1));
        assert_eq!(long.await.ok(), Some(Ok(())));
        let r3 = ran.clone();
        assert_eq!(work.run(move || r3.fetch_add(1, Ordering::Relaxed), Duration::from_millis(100)).await, Ok(0));
        // the control: two slots, the second job runs beside the long one
        let two = Arc::new(Work::new(2));
        let w = two.clone();
        let long = tokio::spawn(async move { w.run(|| std::thread::sleep(Duration::from_millis(300)), Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(two.run(|| 7, Duration::from_millis(100)).await, Ok(7));
        assert_eq!(long.await.ok(), Some(Ok(())));
    }

    /// A job past the timeout: Late, its result dropped.
    #[tokio::test]
    async fn a_job_past_the_timeout_is_late() {
        let work = Work::new(1);
        assert_eq!(work.run(|| std::thread::sleep(Duration::from_millis(200)), Duration::from_millis(50)).await, Err(Undone::Late));
    }
}
