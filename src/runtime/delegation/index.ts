// Public surface of delegation/ (re-exported by src/runtime/index.ts): child machines,
// forwarding, messaging between machines, and the job-queue contract of the async parts.
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
export { isEffectOfKind } from './effects.js';
export {
  completeChild,
  completeJob,
  resolveJobOutcome,
  type ChildCompletion,
  type ReportedJobOutcome,
} from './complete-child.js';
export type { ChildError, ChildOutcome, JobOutcome } from '../interpreter/invoke-child.js';
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
  InMemoryJobQueue,
  type InMemoryJobQueueOptions,
  type Json,
  type JobHandler,
  type JobInfo,
  type JobOutbox,
  type JobQueue,
  type JobRequest,
} from './job-queue.js';
export {
  defineChildOutput,
  requiresChildOutput,
  type ChildOutputArgs,
  type ChildOutputFunction,
  type ChildOutputView,
} from '../definition/child-output.js';
export {
  finalStateKeys,
  isMachineDefinition,
  type InvocationDefinition,
  type JobInvocation,
  type MachineInvocation,
  type InvocationRecordTypes,
  type ChildInputMapper,
} from '../definition/invocation.js';
export {
  ACTIVE_CHILD_STATUSES,
  type ChildQuery,
  type ChildRow,
  type ChildRowChange,
  type ChildStatus,
  type ChildStore,
} from './child-rows.js';
export { DELEGATION_JOBS } from './shell.js';
