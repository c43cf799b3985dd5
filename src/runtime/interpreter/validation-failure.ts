/**
 * Turning a returned validation failure into the thrown error in-memory callers expect.
 */
import { MachineValidationException } from '../errors.js';
import type { MacrostepResult, ValidationFailure } from './types.js';

/** The MachineValidationException (422 `{ message, errors }`) of a validation failure. */
export function toValidationException(
  failure: ValidationFailure,
  machineId?: string,
): MachineValidationException {
  return new MachineValidationException(
    failure.message,
    failure.errors,
    machineId === undefined ? {} : { machine: machineId },
  );
}

/**
 * Returns `result`, or throws its validation failure as a MachineValidationException.
 *
 * @example const { snapshot } = throwIfValidationFailed(transition(machine, current, event))
 */
export function throwIfValidationFailed(result: MacrostepResult): MacrostepResult {
  if (result.validationFailure !== null)
    throw toValidationException(result.validationFailure, result.snapshot.machineId);
  return result;
}
