// Public surface of engine/ (re-exported by src/runtime/index.ts): the effectful core.
export { MachineRuntime } from './machine-runtime.js';
export type { MachineRuntimeOptions, OpenRuntimeOptions } from './options.js';
export type { MachineInstances } from './machine-instances.js';
export type { LockedInstance, WithLockOptions } from './with-lock.js';
export type {
  CommitOptions,
  EngineContext,
  EngineJobs,
  EngineSettings,
  MachineEngine,
  SendRetry,
} from './context.js';
export type { CommitEvent, CommitListener } from './commit-events.js';
export { commitChildRows, commitStep, prepareCommit, type PreparedCommit } from './commit-step.js';
export { runLocked, type LockedRun, type LockedStep, type LockMode } from './locked-step.js';
export {
  JOB_HANDLERS,
  type JobHandlerTable,
  type JobKindHandler,
  type JobRunner,
} from './jobs/job-handlers.js';
export { toJobRequest } from './jobs/job-requests.js';
export {
  DEFAULT_RUNTIME_CONFIG,
  loadRuntimeConfig,
  resolveSettings,
  type MachineRuntimeConfig,
  type ResolvedSettings,
  type SettingsSource,
} from './config.js';
export {
  DEFAULT_PARALLEL_DISPATCH,
  loadParallelDispatchConfig,
  type ParallelDispatchSettings,
} from './parallel-dispatch-config.js';
export { startWorker, type RunningWorker, type StartWorkerOptions } from './worker.js';
export { sweepTimers, type SweepOptions, type SweepReport } from './timers/timer-sweep.js';
export {
  DEFAULT_LOCK_SWEEP_INTERVAL_MS,
  LockSweeper,
  type ExpiredRowsReport,
  type LockSweeperOptions,
} from './lock-sweeper.js';
export {
  DEFAULT_RETENTION_SWEEP_INTERVAL_MS,
  HistoryRetentionSweeper,
  type HistoryRetentionOptions,
  type RetentionReport,
} from './history-retention.js';
export { TimerWorker, type TimerWorkerOptions } from './timers/timer-worker.js';
export { deliverDueFires, type DeliveryResult } from './timers/timer-delivery.js';
export {
  MachineOperations,
  type MachineOperationsOptions,
} from './operations/machine-operations.js';
export type {
  HistoryPageOptions,
  InstanceListOptions,
  InstanceRecord,
  LockView,
  Page,
} from './operations/instance-reads.js';
export type { OperatorOptions, ReleasedLock } from './operations/repairs.js';
export {
  migrateInstances,
  type EagerMigrationOptions,
  type EagerMigrationReport,
  type FailedInstance,
  type MigratedInstance,
} from './versioning/eager-migration.js';
