/**
 * Scenarios kept on instances (`machine_current_states.scenario_class` / `scenario_params`):
 * reading them before a step and what a step's commit writes. The one place the runtime's
 * send paths (own events, forwarded events) join the pure rules of `interpreter/scenarios.ts`
 * with the store; only called when scenarios are enabled.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import {
  keptAfter,
  planScenarioStep,
  type ScenarioRequest,
  type ScenarioStep,
} from '../interpreter/scenarios.js';
import type { MachineSnapshot, StoredScenario } from '../interpreter/types.js';
import type { CommitRequest, CurrentStateRow, Store } from './store.js';

/** A planned scenario step and what the instance kept before it. */
export interface KeptScenarioStep {
  kept: StoredScenario | null;
  step: ScenarioStep;
}

/** The scenario kept on an instance, from its `machine_current_states` rows. */
export function keptScenario(rows: readonly CurrentStateRow[]): StoredScenario | null {
  const row = rows.find((candidate) => candidate.scenarioClass !== null);
  return row === undefined
    ? null
    : { slug: row.scenarioClass as string, params: row.scenarioParams ?? {} };
}

/** Reads the kept scenario of `snapshot`'s instance and plans the step of `eventType`. */
export async function planKeptScenarioStep(
  store: Pick<Store, 'currentStates'>,
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  eventType: string,
  request: ScenarioRequest,
): Promise<KeptScenarioStep> {
  const kept = keptScenario(await store.currentStates(snapshot.id));
  return { kept, step: planScenarioStep(definition, snapshot, eventType, request, kept) };
}

/**
 * The `scenario` of the step's commit request: written whenever the instance keeps (or kept) a
 * scenario, so states the step enters carry it too; nothing otherwise.
 */
export function scenarioWrite(
  kept: StoredScenario | null,
  step: ScenarioStep,
): Pick<CommitRequest, 'scenario'> {
  const after = keptAfter(kept, step);
  return kept === null && after === null ? {} : { scenario: after };
}
