/**
 * Scenario isolation (issue 32; event-machine 9.10.3): work a step starts under a scenario keeps
 * the scenario (`CarriedScenario` in its payload), so a QA run never reaches a real side effect
 * through it. A queued listener's step plays the scenario again (queued-listener.ts); a child
 * starts under it when it defines the same slug (engine/jobs/child-jobs.ts); a job actor takes the
 * outcome the scenario gives its state, here, instead of running its function.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { JobOutcome } from './child-outcomes.js';
import { forcedOutcome } from './route-child-outcome.js';
import { macrostepFromSnapshot } from './macrostep-context.js';
import { resumeScenario } from './scenarios.js';
import type { CarriedScenario, MachineSnapshot, MacrostepOptions } from './types.js';

/** What a job actor's run names: its state, its id, the scenario it carries. */
export interface CarriedJobRun {
  parentStateId: string;
  jobId: string;
  scenario?: CarriedScenario;
}

/**
 * The outcome the carried scenario gives a job actor's state (its plan's `children` entry for
 * the state, else its continuation's), computed on the parent's `snapshot`; `null` when it gives
 * none (or carries no scenario): the job's function runs.
 */
export function scenarioJobOutcome(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  run: CarriedJobRun,
  options: Pick<MacrostepOptions, 'now' | 'machines' | 'maxTransitionDepth'> = {},
): JobOutcome | null {
  if (run.scenario === undefined) return null;
  const state = definition.idMap.get(run.parentStateId);
  const invocation = state?.invocation;
  if (invocation?.kind !== 'job') return null;
  const scenario = definition.scenarios.get(run.scenario.slug);
  const override =
    scenario?.plan.children.get(run.parentStateId) ??
    scenario?.continuation?.children.get(run.parentStateId);
  if (override?.kind !== 'outcome') return null;
  const active = resumeScenario(definition, run.scenario) ?? {
    slug: run.scenario.slug,
    plan: scenario!.plan,
    params: { ...run.scenario.params },
  };
  const macrostep = macrostepFromSnapshot(
    definition,
    snapshot,
    { type: `@job.${invocation.name}` },
    { ...options, scenario: active },
  );
  return forcedOutcome(macrostep, invocation, run.jobId, override) as JobOutcome;
}
