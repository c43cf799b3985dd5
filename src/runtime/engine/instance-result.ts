/**
 * A step's outcome as callers see it (`InstanceResult`): a failed validation guard surfaces as
 * its `MachineValidationException` only once its history was committed.
 */
import type { MachineValidationException } from '../errors.js';
import type { MacrostepResult, StoredScenario } from '../interpreter/types.js';
import { toValidationException } from '../interpreter/validation-failure.js';
import type { InstanceResult } from '../persistence/types.js';

/** The result, or the validation failure thrown. `scenario`: what the instance keeps, when scenarios are enabled. */
export function finish(result: MacrostepResult, scenario?: StoredScenario | null): InstanceResult {
  if (result.validationFailure)
    throw toValidationException(result.validationFailure, result.snapshot.machineId);
  const instance: InstanceResult = {
    snapshot: result.snapshot,
    history: result.history,
    effects: result.effects,
  };
  if (scenario !== undefined) instance.scenario = scenario;
  return instance;
}

/** `finish` without throwing: the validation failure is an outcome an idempotent response stores. */
export function outcomeOf(
  result: MacrostepResult,
  scenario?: StoredScenario | null,
): InstanceResult | MachineValidationException {
  if (result.validationFailure)
    return toValidationException(result.validationFailure, result.snapshot.machineId);
  return finish(result, scenario);
}
