/**
 * Safe deploys: the definitions about to be deployed against what live instances hold
 * (`machine-routes check --database <url>`). Reported:
 *
 * - a state that live instances sit in but the definition no longer has (removed or renamed):
 *   blocking when active instances sit there (their next request would answer 409
 *   `StateNotInDefinitionException`), a warning when only done ones do;
 * - an external event type of persisted histories the definition no longer knows: a warning
 *   (histories are records; restore never replays them);
 * - a context key whose stored values no longer have the type the definition gives it: the
 *   context schema's, when the machine has one (zod), else the initial context value's type
 *   (`null` on either side fits any type). Blocking.
 */
import type { ZodType } from 'zod';
import { isZodSchema } from '../definition/validate-config.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import {
  ContextTypeChangedException,
  RemovedHistoryEventException,
  RemovedStateInUseException,
  type MachineRoutesError,
} from '../errors.js';
import { initialize } from '../interpreter/initialize.js';
import type { LiveInstances } from '../persistence/live-instances.js';

/** One finding of the deploy check. */
export interface DeployIssue {
  error: MachineRoutesError;
  /** Blocking findings make `check` exit 1; the others are printed as warnings. */
  blocking: boolean;
}

/** Compares the definitions with the live data read by `readLiveInstances`. */
export function checkDeploy(
  definitions: readonly MachineDefinition[],
  live: LiveInstances,
): DeployIssue[] {
  const byId = new Map(definitions.map((definition) => [definition.id, definition]));
  const issues: DeployIssue[] = [];
  for (const row of live.states) {
    const definition = byId.get(row.machineId);
    if (definition === undefined || definition.idMap.has(row.stateId)) continue;
    const blocking = row.active > 0;
    const known = [...definition.idMap.keys()].filter((id) => id !== definition.id);
    issues.push({
      blocking,
      error: new RemovedStateInUseException(
        `State '${row.stateId}' of machine '${row.machineId}' was removed or renamed, but ${removedStateSentences(row, known)}`,
        { machine: row.machineId, key: row.stateId, active: row.active, done: row.done, blocking },
      ),
    });
  }
  for (const row of live.events) {
    const definition = byId.get(row.machineId);
    if (definition === undefined || definition.eventTypes.has(row.type)) continue;
    issues.push({
      blocking: false,
      error: new RemovedHistoryEventException(
        `Event '${row.type}' of machine '${row.machineId}' is in ${row.count} persisted history record${row.count === 1 ? '' : 's'} but no longer in the definition. ` +
          `Histories stay readable (restore never replays them); tools reading them must know the old type.`,
        { machine: row.machineId, key: row.type, count: row.count, blocking: false },
      ),
    });
  }
  for (const stored of live.contexts) {
    const definition = byId.get(stored.machineId);
    if (definition === undefined || stored.contexts.length === 0) continue;
    issues.push(...contextIssues(definition, stored.contexts));
  }
  return issues;
}

/**
 * Who sits in a removed state and what follows for them, each verb agreeing with its count
 * (`1 active instance sits in it. Its next request ...`).
 */
function removedStateSentences(
  row: { active: number; done: number },
  known: readonly string[],
): string {
  const counts = [
    row.active > 0 ? `${row.active} active` : '',
    row.done > 0 ? `${row.done} done` : '',
  ].filter((count) => count !== '');
  const one = row.active + row.done === 1;
  const who = `${counts.join(' and ')} instance${one ? ' sits' : 's sit'} in it.`;
  if (row.active === 0) {
    return one
      ? `${who} It is done; reads of it answer 409 until it is archived.`
      : `${who} They are done; reads of them answer 409 until they are archived.`;
  }
  const oneActive = row.active === 1;
  const whose =
    row.done > 0
      ? `The active ${oneActive ? "one's next request" : "ones' next requests"}`
      : oneActive
        ? 'Its next request'
        : 'Their next requests';
  return (
    `${who} ${whose} would answer 409: keep the state, or move ${oneActive ? 'it' : 'them'} ` +
    `to one of ${known.join(', ')} before deploying.`
  );
}

/** The JSON type of a value: `string`, `number`, `boolean`, `array`, `object` or `null`. */
function jsonType(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function contextIssues(
  definition: MachineDefinition,
  contexts: readonly Record<string, unknown>[],
): DeployIssue[] {
  const configured = definition.config.context;
  const found = new Map<string, { expected: string; got: Map<string, number> }>();
  const note = (key: string, expected: string, got: string) => {
    const entry = found.get(key) ?? { expected, got: new Map<string, number>() };
    entry.got.set(got, (entry.got.get(got) ?? 0) + 1);
    found.set(key, entry);
  };
  if (isZodSchema(configured)) {
    const schema = configured as ZodType;
    for (const context of contexts) {
      const result = schema.safeParse(context);
      if (result.success) continue;
      for (const issue of result.error.issues) {
        const key = String(issue.path[0] ?? '');
        if (key === '') continue;
        note(key, issue.message, jsonType(context[key]));
      }
    }
  } else {
    const initial = initialize(definition).snapshot.context;
    for (const context of contexts) {
      for (const [key, value] of Object.entries(context)) {
        if (!Object.hasOwn(initial, key)) continue;
        const expected = jsonType(initial[key]);
        const got = jsonType(value);
        if (expected === 'null' || got === 'null' || expected === got) continue;
        note(key, `expected ${expected}`, got);
      }
    }
  }
  return [...found].map(([key, { expected, got }]) => {
    const count = [...got.values()].reduce((sum, n) => sum + n, 0);
    const types = [...got.keys()].join(', ');
    return {
      blocking: true,
      error: new ContextTypeChangedException(
        `Context key '${key}' of machine '${definition.id}' changed type: the definition says ${expected}, ${count} stored instance${count === 1 ? ' holds' : 's hold'} ${types}. ` +
          `Migrate the stored contexts or keep the old type (a schema can accept both).`,
        { machine: definition.id, key, count, blocking: true },
      ),
    };
  });
}
