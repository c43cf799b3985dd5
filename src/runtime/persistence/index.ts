// Public surface of persistence/ (re-exported by src/runtime/index.ts).
export type {
  CommitRequest,
  CurrentStateRow,
  FindInStateOptions,
  HistoryQuery,
  InstanceInState,
  LockRequest,
  LockRow,
  Store,
  StoreKind,
  TimerCandidate,
  TimerCandidateQuery,
  TimerFireClaim,
  TimerFireRow,
} from './store.js';
export {
  InstanceLockedError,
  SequenceConflictError,
  StoreBusyError,
  TimerFireConflictError,
} from './store.js';
export type { ChildQuery, ChildStore } from './child-rows.js';
export type {
  HistoryPageQuery,
  InstanceListQuery,
  InstanceQueries,
  InstanceSummary,
  ListPosition,
} from './instance-queries.js';
export type { StoreTransaction, TransactionHook } from './transaction.js';
export type {
  CreateOptions,
  InstanceRead,
  InstanceResult,
  SendOptions,
  IdempotentSend,
} from './types.js';
export {
  IdempotencyClaimLostError,
  type IdempotencyClaim,
  type IdempotencyClaimResult,
  type IdempotencyCompletion,
  type IdempotencyKeyStore,
  type IdempotencyRecord,
  type StoredResponse,
} from './idempotency.js';
export {
  MemoryFlowControl,
  type FlowControlStore,
  type FlowRate,
  type FlowSlot,
  type FlowTokenResult,
} from './flow-control.js';
export type { TimerFailureRow, TimerFailureStore } from './timer-failures.js';
export type { HistoryRetentionStore, RetentionBatch } from './history-retention.js';
export { keptScenario } from './kept-scenarios.js';
export { MemoryStore } from './memory-store.js';
export { SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
export {
  openStore,
  parseStoreUrl,
  migrate,
  migrationStatus,
  type MigrationStatus,
  type OpenStoreOptions,
  type StoreLocation,
} from './open-store.js';
export { MIGRATIONS, type Migration } from './migrations.js';
export { LockManager, type AcquireOptions, type LockHandle } from './locks.js';
export { isInstanceId } from '../ids.js';
