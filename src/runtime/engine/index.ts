// Public surface of engine/ (re-exported by src/runtime/index.ts): the effectful core.
export {
  MachineRuntime,
  type LockedInstance,
  type MachineEngine,
  type MachineRuntimeOptions,
  type OpenRuntimeOptions,
  type WithLockOptions,
} from './machine-runtime.js';
export type { CommitEvent, CommitListener } from './commit-events.js';
export {
  commitStep,
  writeCommit,
  finishCommit,
  prepareCommit,
  type CommitPort,
  type PreparedCommit,
} from './commit-step.js';
export type { CommitOptions, EngineServices, JobRunner, SendRetry } from './engine-services.js';
export { JOB_HANDLERS, toJobRequest, type JobHandlerTable } from './job-handlers.js';
export { DEFAULT_RUNTIME_CONFIG, loadRuntimeConfig, type MachineRuntimeConfig } from './config.js';
export {
  DEFAULT_PARALLEL_DISPATCH,
  loadParallelDispatchConfig,
  type ParallelDispatchSettings,
} from './parallel-dispatch-config.js';
export { startWorker, type RunningWorker, type StartWorkerOptions } from './worker.js';
export { sweepTimers, type SweepOptions, type SweepReport } from './timer-sweep.js';
export {
  DEFAULT_LOCK_SWEEP_INTERVAL_MS,
  LockSweeper,
  type ExpiredRowsReport,
  type LockSweeperOptions,
} from './lock-sweeper.js';
export { TimerWorker, type TimerWorkerOptions } from './timer-worker.js';
export { deliverDueFires, type DeliveryResult, type TimerHost } from './timer-delivery.js';
