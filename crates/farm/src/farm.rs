//! What the user supplies: the farm template's three routines.

/// A task farm: the manager creates tasks and processes results, workers do
/// tasks. Every process of the farm calls `run` with its own value; the
/// manager's `do_task` and the workers' `create_task`/`process_result` are
/// never called. With a writer rank (`FarmConfig::writer`) rank 0 only
/// creates tasks and `process_result` runs on the writer instead.
/// Tasks are numbered `0..total_tasks()`; sizes may vary.
pub trait Farm {
    /// Number of tasks (asked of rank 0 only).
    fn total_tasks(&self) -> u64;
    /// The bytes of task `id` (manager). Called once per task, when a worker
    /// first needs it.
    fn create_task(&mut self, id: u64) -> Vec<u8>;
    /// Computes a task (worker).
    fn do_task(&mut self, id: u64, task: &[u8]) -> Vec<u8>;
    /// Takes task `id`'s result (manager, or the writer when there is one):
    /// called exactly once per task.
    fn process_result(&mut self, id: u64, result: &[u8]);
}

type CreateFn<'a> = Box<dyn FnMut(u64) -> Vec<u8> + 'a>;
type DoFn<'a> = Box<dyn FnMut(u64, &[u8]) -> Vec<u8> + 'a>;
type ProcessFn<'a> = Box<dyn FnMut(u64, &[u8]) + 'a>;

/// A farm made of closures; a process needs only its role's closures.
///
/// ```no_run
/// let mut sum = 0u64;
/// let farm = wanmpi_farm::FarmBuilder::new(100)
///     .create(|id| id.to_le_bytes().to_vec())
///     .work(|_, t| t.iter().rev().copied().collect())
///     .process(|_, r| sum += r[7] as u64);
/// ```
pub struct FarmBuilder<'a> {
    total: u64,
    create: Option<CreateFn<'a>>,
    work: Option<DoFn<'a>>,
    process: Option<ProcessFn<'a>>,
}

impl<'a> FarmBuilder<'a> {
    pub fn new(total_tasks: u64) -> Self {
        FarmBuilder { total: total_tasks, create: None, work: None, process: None }
    }
    pub fn create(mut self, f: impl FnMut(u64) -> Vec<u8> + 'a) -> Self {
        self.create = Some(Box::new(f));
        self
    }
    pub fn work(mut self, f: impl FnMut(u64, &[u8]) -> Vec<u8> + 'a) -> Self {
        self.work = Some(Box::new(f));
        self
    }
    pub fn process(mut self, f: impl FnMut(u64, &[u8]) + 'a) -> Self {
        self.process = Some(Box::new(f));
        self
    }
    /// Which closures are there: (create, work, process).
    pub(crate) fn parts(&self) -> (bool, bool, bool) {
        (self.create.is_some(), self.work.is_some(), self.process.is_some())
    }
}

impl Farm for FarmBuilder<'_> {
    fn total_tasks(&self) -> u64 {
        self.total
    }
    fn create_task(&mut self, id: u64) -> Vec<u8> {
        self.create.as_mut().map_or_else(Vec::new, |f| f(id))
    }
    fn do_task(&mut self, id: u64, task: &[u8]) -> Vec<u8> {
        self.work.as_mut().map_or_else(Vec::new, |f| f(id, task))
    }
    fn process_result(&mut self, id: u64, result: &[u8]) {
        if let Some(f) = self.process.as_mut() {
            f(id, result)
        }
    }
}
