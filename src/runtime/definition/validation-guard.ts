/**
 * Validation guards: guards whose failure rejects the event (422) instead of recording a silent
 * TRANSITION_FAIL.
 */
import type { Context, EventObject } from './types.js';
import type { BehaviorArgs, GuardFunction, ValidationGuardDefinition } from './behavior-types.js';

/** What `defineValidationGuard` accepts. */
export interface ValidationGuardInput<C extends Context = Context, E = EventObject> {
  /** Returns true when the event may proceed. */
  check: GuardFunction<C, E>;
  /** Error message, or a function building it from the behavior arguments. */
  message: string | ((args: BehaviorArgs<C, E>) => string);
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
export function defineValidationGuard<C extends Context = Context, E = EventObject>(
  input: ValidationGuardInput<C, E>,
): ValidationGuardDefinition<C, E> {
  const definition: ValidationGuardDefinition<C, E> = {
    kind: 'validationGuard',
    check: input.check,
    message: input.message,
    ...(input.field === undefined ? {} : { field: input.field }),
    ...(input.name === undefined ? {} : { name: input.name }),
  };
  return Object.freeze(definition);
}

/**
 * The validation guard a `behavior.guards` entry stands for: a `defineValidationGuard` result,
 * or the same input written inline (`{ check, message, field }`), whose functions then see the
 * machine's context and events as every other inline behavior does. `null` for anything else.
 */
export function asValidationGuard(value: unknown): ValidationGuardDefinition | null {
  if (isValidationGuard(value)) return value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const input = value as Partial<ValidationGuardInput>;
  if (typeof input.check !== 'function') return null;
  if (typeof input.message !== 'string' && typeof input.message !== 'function') return null;
  return defineValidationGuard(input as ValidationGuardInput);
}

/** True for a value made by `defineValidationGuard`. */
export function isValidationGuard(value: unknown): value is ValidationGuardDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'validationGuard'
  );
}
