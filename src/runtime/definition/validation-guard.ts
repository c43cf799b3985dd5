/**
 * Validation guards: guards whose failure rejects the event (422) instead of recording a silent
 * TRANSITION_FAIL.
 */
import type { BehaviorArgs, Context, GuardFunction, ValidationGuardDefinition } from './types.js';

/** What `defineValidationGuard` accepts. */
export interface ValidationGuardInput<C extends Context = Context> {
  /** Returns true when the event may proceed. */
  check: GuardFunction<C>;
  /** Error message, or a function building it from the behavior arguments. */
  message: string | ((args: BehaviorArgs<C>) => string);
  /** Error key of the 422 body; default `<machineId>.guard.<name>.fail`. */
  field?: string;
  /** Name used in history records and the default error key; default the inline key. */
  name?: string;
}

/**
 * Defines a validation guard. Use it under `behavior.guards` (inline key) or directly in a
 * transition's `guards`.
 *
 * @example defineValidationGuard({ check: ({ event }) => Number(event.payload?.amount) > 0,
 *   message: 'Amount must be positive', field: 'payload.amount' })
 */
export function defineValidationGuard<C extends Context = Context>(
  input: ValidationGuardInput<C>,
): ValidationGuardDefinition<C> {
  const definition: ValidationGuardDefinition<C> = {
    kind: 'validationGuard',
    check: input.check,
    message: input.message,
    ...(input.field === undefined ? {} : { field: input.field }),
    ...(input.name === undefined ? {} : { name: input.name }),
  };
  return Object.freeze(definition);
}

/** True for a value made by `defineValidationGuard`. */
export function isValidationGuard(value: unknown): value is ValidationGuardDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'validationGuard'
  );
}
