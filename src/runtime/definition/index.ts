// Public surface of definition/ (re-exported by src/runtime/index.ts).
export { defineMachine, validateMachine } from './define-machine.js';
export type { MachineInput, TypedBehaviorConfig } from './typed-events.js';
export type {
  EventsFor,
  MachineEventUnion,
  MachineShape,
  TypedEventObject,
  UntypedEventObject,
} from './typed-events.js';
export type {
  MachineDefinition,
  MachineRecordTypes,
  ListenerDefinitions,
} from './machine-definition.js';
export { collectDefinitionIssues } from './collect-issues.js';
export {
  defineEvent,
  MachineEvent,
  eventTypeOf,
  toEventDefinition,
  deriveEventType,
  isUserEventType,
  isReservedEventType,
  type EventInput,
} from './event-type.js';
export { defineValidationGuard, type ValidationGuardInput } from './validation-guard.js';
export type { StateNode, TransitionDefinition, TransitionBranch, Handler } from './state-node.js';
export type { ResolvedBehavior, BehaviorKind } from './behavior-registry.js';
export type { TimerDefinition } from './timers.js';
export {
  defineJob,
  isJobDefinition,
  type DefineJobOptions,
  type JobDefinition,
  type JobFunction,
  type JobRunContext,
} from './job.js';
export { timedTransitions, type TimedTransition } from './timed-transitions.js';
export { scheduledTransitions, type CronTimer, type ScheduleConfig } from './schedules.js';
export {
  checkTimerRegistrations,
  registrationTimers,
  MISSED_FIRE_POLICIES,
  type MissedFirePolicy,
  type TimerRegistration,
} from './timer-registration.js';
export type * from './types.js';
export type * from './behavior-types.js';
export type * from './endpoint-config.js';
export {
  defineScenario,
  type ScenarioConfig,
  type ScenarioInput,
  type ScenarioEntry,
  type ScenarioDefinition,
  type ScenarioPlan,
  type ScenarioPlanConfig,
  type ScenarioBehaviorArgs,
  type ScenarioParamsOf,
  type ChildOutcomeLiteral,
  type ChildOverride,
  type ChildOverrideConfig,
} from './scenarios.js';
// Child machines as definitions declare them (the delegating state's invocation, child outputs).
export {
  defineChildOutput,
  requiresChildOutput,
  type ChildOutputArgs,
  type ChildOutputFunction,
  type ChildOutputView,
} from './child-output.js';
export {
  finalStateKeys,
  isMachineDefinition,
  type InvocationDefinition,
  type JobInvocation,
  type MachineInvocation,
  type InvocationRecordTypes,
  type ChildInputMapper,
} from './invocation.js';
export {
  defineMigration,
  type MigrationConfig,
  type MigrationDefinition,
  type MigrationInfo,
} from './migrations.js';
export { FINGERPRINT_PREFIX } from './versions.js';
