// Public surface of interpreter/ (re-exported by src/runtime/index.ts).
export { initialize } from './initialize.js';
export { transition } from './transition.js';
export {
  availableEvents,
  type AvailableEventsOptions,
  type ForwardingState,
} from './available-events.js';
export { resolveOutput, responseContext, type ResolveOutputOptions } from './output.js';
export { toValidationException, throwIfValidationFailed } from './validation-failure.js';
export { createMachine, type CreateMachineOptions, type MachineActor } from './create-machine.js';
export { matchesState } from './state-view.js';
export type {
  AvailableEvent,
  DeferredEffect,
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
