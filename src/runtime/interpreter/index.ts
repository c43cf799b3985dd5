// Public surface of interpreter/ (re-exported by src/runtime/index.ts).
export { initialize, startAndTransition } from './initialize.js';
export { transition } from './transition.js';
export {
  availableEvents,
  type AvailableEventsOptions,
  type ForwardingState,
} from './available-events.js';
export { explainAvailableEvents, type ExplainedAvailableEvent } from './explain-events.js';
export { resolveOutput, responseContext, type ResolveOutputOptions } from './output.js';
export { toValidationException, throwIfValidationFailed } from './validation-failure.js';
export { createMachine, type CreateMachineOptions, type MachineActor } from './create-machine.js';
export { matchesState } from './state-view.js';
export type {
  AvailableEvent,
  HistoryRecord,
  HistorySource,
  MacrostepOptions,
  MacrostepResult,
  MachineSnapshot,
  ValidationFailure,
} from './types.js';
export {
  planScenarioStep,
  availableScenarios,
  activeScenario,
  findScenario,
  keptAfter,
  NO_SCENARIO_STEP,
  type ScenarioRequest,
  type ScenarioStep,
  type ScenarioSummary,
} from './scenarios.js';
export type { ActiveScenario, StoredScenario } from './types.js';
// Delegation and messaging, the pure halves: effects, child completion, forwarding rules,
// forwarded outputs, messaging, child rows as data, and the commit plan of a step.
export type {
  ChildSlot,
  StartChildEffect,
  PersistChildEffect,
  CancelChildEffect,
  JobSlot,
  StartJobEffect,
  CancelJobEffect,
  SendEffect,
  ListenerEffect,
  MacrostepEffect,
} from './effects.js';
export {
  completeChild,
  completeJob,
  resolveJobOutcome,
  type ChildCompletion,
  type ReportedJobOutcome,
} from './complete-child.js';
export type { ChildError, ChildOutcome, JobOutcome } from './child-outcomes.js';
export {
  resolveForward,
  activeForwardingStates,
  childAccepts,
  forwardedEventsResolver,
  availableEventsWithForwards,
  recordForwardedEvent,
  type ForwardTarget,
  type ActiveForwardingState,
} from './forwarding.js';
export {
  forwardedChildData,
  resolveForwardOutput,
  type ForwardedChildData,
  type ForwardOutputInput,
} from './forward-output.js';
export { createMessaging, type MessagingFunctions, type MessagingSource } from './messaging.js';
export {
  ACTIVE_CHILD_STATUSES,
  type ChildRow,
  type ChildRowChange,
  type ChildStatus,
} from './child-rows.js';
export {
  planCommit,
  completionJob,
  type CommitInput,
  type CommitPlan,
  type InstanceWrite,
  type PlannedStep,
} from './plan-commit.js';
export type { JobKind, JobPayloads, PlannedJob } from './job-payloads.js';
export {
  candidateBound,
  dueFire,
  dueTimers,
  nextFireAt,
  type ActiveStay,
  type DueFire,
  type TimerFireState,
  type TimerFireStatus,
} from './due-timers.js';
export { pendingTimers, type PendingTimer } from './pending-timers.js';
