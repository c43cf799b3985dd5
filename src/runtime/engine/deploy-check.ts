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
  InstanceMigrationFailedException,
  MigrationDryRunFailedException,
  VersionNotCoveredException,
  RemovedHistoryEventException,
  RemovedStateInUseException,
  RunningChildrenOrphanedException,
  type MachineRoutesError,
} from '../errors.js';
import { initialize } from '../interpreter/initialize.js';
import type { MigrationDefinition } from '../definition/migrations.js';
import {
  migratedStateId,
  migrateSnapshot,
  migrateStates,
  planVersion,
} from '../interpreter/migrate-snapshot.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type {
  LiveChildCount,
  LiveInstances,
  LiveStateCount,
} from '../persistence/live-instances.js';
import { delegatesTo } from './versioning/migration-children.js';

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
  const uncoveredVersions = new Map<string, { version: string; active: number; example: string }>();
  for (const row of live.states) {
    const definition = byId.get(row.machineId);
    if (definition === undefined) continue;
    // Versions (docs/versioning.md): a row of an older version is checked through its migration.
    const plan = planVersion(definition, rowSnapshot(row));
    if (plan.kind === 'unknown') {
      const key = `${row.machineId}\u0000${plan.version}`;
      const seen = uncoveredVersions.get(key) ?? {
        version: plan.version,
        active: 0,
        example: row.example ?? '',
      };
      seen.active += row.active;
      uncoveredVersions.set(key, seen);
      // Its states are still checked below: a removed one is named too.
    }
    if (plan.kind === 'migrate') {
      const issue = uncoveredState(definition, row, plan.chain);
      if (issue !== null) issues.push(issue);
      continue;
    }
    if (definition.idMap.has(row.stateId)) continue;
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
  for (const [key, seen] of uncoveredVersions) {
    const machineId = key.slice(0, key.indexOf('\u0000'));
    const definition = byId.get(machineId)!;
    if (seen.active === 0) continue;
    issues.push({
      blocking: true,
      error: new VersionNotCoveredException(
        `${seen.active} active instance${seen.active === 1 ? ' of machine' : 's of machine'} '${machineId}' (e.g. '${seen.example}') ${seen.active === 1 ? 'was' : 'were'} last written by version '${seen.version}', which this deploy (version '${definition.version}') neither runs nor migrates from: ` +
          `the version fence would refuse ${seen.active === 1 ? 'its' : 'their'} next writes (409). If this deploy rolls back, add a down migration (defineMigration({ from: '${seen.version}', to: '${definition.version}' })); otherwise add the migration from '${seen.version}'.`,
        { machine: machineId, key: seen.version, active: seen.active, blocking: true },
      ),
    });
  }
  for (const row of live.children ?? []) {
    const definition = byId.get(row.machineId);
    if (definition === undefined) continue;
    const issue = orphanedChildren(definition, row);
    if (issue !== null) issues.push(issue);
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
    if (stored.instances === undefined) {
      issues.push(...contextIssues(definition, stored.contexts));
      continue;
    }
    // Contexts of the definition's version are checked as they are; older ones through a dry
    // run of their migration (its output is what the definition will read).
    const current: Record<string, unknown>[] = [];
    const failures: { id: string; message: string }[] = [];
    let tried = 0;
    for (const instance of stored.instances) {
      const plan = planVersion(definition, instance);
      if (plan.kind === 'current') current.push(instance.context);
      if (plan.kind !== 'migrate') continue;
      tried += 1;
      try {
        current.push(
          migrateSnapshot(definition, instance, plan.chain, { history: false }).snapshot.context,
        );
      } catch (error) {
        // Uncovered states are reported per state above; the dry run reports the context's failures.
        if (error instanceof InstanceMigrationFailedException && error.details.path === undefined)
          failures.push({ id: instance.id, message: error.message });
      }
    }
    if (failures.length > 0) {
      issues.push({
        blocking: true,
        error: new MigrationDryRunFailedException(
          `The migration of machine '${definition.id}' to version '${definition.version}' failed on ${failures.length} of ${tried} sampled stored contexts, e.g. instance '${failures[0]!.id}': ${failures[0]!.message}`,
          { machine: definition.id, key: failures[0]!.id, count: failures.length, blocking: true },
        ),
      });
    }
    if (current.length > 0) issues.push(...contextIssues(definition, current));
  }
  return issues;
}

/**
 * Running children of a delegating state the deploy removes (or maps, through a migration, to a
 * state that delegates to something else): a warning, or `null`. A migration cancels their rows
 * and ignores their outcomes (docs/versioning.md "Delegating states"); without one, the parents
 * are refused by the removed-state check and the outcomes find no state to route.
 */
function orphanedChildren(definition: MachineDefinition, row: LiveChildCount): DeployIssue | null {
  const plan = planVersion(
    definition,
    typeof row.version === 'string' ? { version: row.version } : {},
  );
  // A pinned version runs its own states; an unknown one is the version check's to report.
  if (plan.kind === 'pinned' || plan.kind === 'unknown') return null;
  const target =
    plan.kind === 'migrate' ? migratedStateId(definition, plan.chain, row.stateId) : row.stateId;
  const invocation = definition.idMap.get(target)?.invocation;
  if (invocation != null && delegatesTo(invocation, row.childMachineId)) return null;
  const many = row.count !== 1;
  const where =
    plan.kind === 'migrate'
      ? `The migration to '${definition.version}' maps it to '${target}', which ${definition.idMap.has(target) ? `delegates to no '${row.childMachineId}'` : 'is no state of the deploy'}: it cancels ${many ? 'their rows' : 'its row'}, and ${many ? 'their outcomes are' : 'its outcome is'} ignored (the child instances are left as they are).`
      : `This deploy no longer has '${row.stateId}' delegating to '${row.childMachineId}': ${many ? 'their outcomes' : 'its outcome'} will find no state to route.`;
  return {
    blocking: false,
    error: new RunningChildrenOrphanedException(
      `${row.count} running child${many ? 'ren' : ''} ('${row.childMachineId}') of machine '${row.machineId}' ${many ? 'wait' : 'waits'} in delegating state '${row.stateId}'${row.version === null ? '' : ` (version '${row.version}')`}, e.g. of instance '${row.example}'. ${where} ` +
        `Map the state to one delegating to '${row.childMachineId}', or let the children finish before the deploy.`,
      { machine: row.machineId, key: row.stateId, count: row.count, blocking: false },
    ),
  };
}

/** A state row as a snapshot, for the version plan. */
function rowSnapshot(row: LiveStateCount): MachineSnapshot {
  return {
    machineId: row.machineId,
    id: row.example ?? '',
    value: [row.stateId],
    context: {},
    status: row.active > 0 ? 'active' : 'done',
    sequence: 0,
    ...(typeof row.version === 'string' ? { version: row.version } : {}),
  };
}

/** A state of an older version that its migration leaves uncovered, or `null`. */
function uncoveredState(
  definition: MachineDefinition,
  row: LiveStateCount,
  chain: readonly MigrationDefinition[],
): DeployIssue | null {
  try {
    migrateStates(definition, rowSnapshot(row), chain);
    return null;
  } catch (error) {
    if (!(error instanceof InstanceMigrationFailedException)) throw error;
    const blocking = row.active > 0;
    const from = chain[0]!.from;
    return {
      blocking,
      error: new RemovedStateInUseException(
        `State '${row.stateId}' of machine '${row.machineId}' (version '${from}') is not covered by the migration to '${definition.version}': ` +
          `${row.active} active and ${row.done} done instance${row.active + row.done === 1 ? ' sits' : 's sit'} in it (e.g. instance '${row.example ?? ''}'). ` +
          `Map '${row.stateId.slice(row.machineId.length + 1)}' in the migration's 'states'.`,
        {
          machine: row.machineId,
          key: row.stateId,
          version: from,
          example: row.example,
          active: row.active,
          done: row.done,
          blocking,
        },
      ),
    };
  }
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
