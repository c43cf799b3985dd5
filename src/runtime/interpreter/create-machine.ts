/**
 * A tiny in-memory actor around the pure functions, for scripts and tests that need no store.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { Context, EventObject } from '../definition/types.js';
import { availableEvents } from './available-events.js';
import { initialize } from './initialize.js';
import { resolveOutput } from './output.js';
import { transition } from './transition.js';
import type { AvailableEvent, HistoryRecord, MacrostepOptions, MachineSnapshot } from './types.js';
import { throwIfValidationFailed } from './validation-failure.js';

/** An in-memory instance of a machine. */
export interface MachineActor {
  /** Initializes the instance (once); returns the actor for chaining. */
  start(): MachineActor;
  /**
   * Sends an event and returns the new snapshot. Throws what `transition` throws, and a
   * MachineValidationException when a validation guard fails (the history is kept).
   */
  send(event: EventObject | string): MachineSnapshot;
  /** The current snapshot (starts the actor if needed). */
  snapshot(): MachineSnapshot;
  /** Every history record so far, in order. */
  readonly history: readonly HistoryRecord[];
  /** `resolveOutput` of the current snapshot. */
  output(): unknown;
  /** `availableEvents` of the current snapshot. */
  availableEvents(): AvailableEvent[];
}

/** Options of `createMachine`. */
export interface CreateMachineOptions extends Omit<MacrostepOptions, 'context'> {
  /** Values merged over the initial context. */
  context?: Context;
}

/**
 * Creates an in-memory actor.
 *
 * @example const actor = createMachine(orderMachine).start(); actor.send('SUBMIT');
 */
export function createMachine(
  definition: MachineDefinition,
  options: CreateMachineOptions = {},
): MachineActor {
  let current: MachineSnapshot | undefined;
  const history: HistoryRecord[] = [];
  const clock = options.now === undefined ? {} : { now: options.now };

  const ensure = (): MachineSnapshot => {
    if (current === undefined) {
      const result = initialize(definition, options);
      history.push(...result.history);
      current = result.snapshot;
      throwIfValidationFailed(result);
    }
    return current;
  };

  const actor: MachineActor = {
    start() {
      ensure();
      return actor;
    },
    send(event) {
      const result = transition(definition, ensure(), event, clock);
      history.push(...result.history);
      current = result.snapshot;
      throwIfValidationFailed(result);
      return current;
    },
    snapshot: ensure,
    history,
    output: () => resolveOutput(definition, ensure()),
    availableEvents: () => availableEvents(definition, ensure()),
  };
  return actor;
}
