/**
 * Versions of a stored instance, pure (docs/versioning.md): which version an instance's snapshot
 * is at compared with the definition about to run it (`planVersion`), and the migration of a
 * snapshot along a chain of steps (`migrateSnapshot`): states mapped (renames, merges, removed
 * states to a target, compound targets entering their initial states, regions a parallel state
 * gained entering theirs), context transformed and checked, and one history record of kind
 * migration. The engine writes the result through the commit step; nothing here does I/O.
 */
import type { ZodType } from 'zod';
import type { MachineDefinition } from '../definition/machine-definition.js';
import { chainFrom, type MigrationDefinition } from '../definition/migrations.js';
import { byDocumentOrder, isLeaf, type StateNode } from '../definition/state-node.js';
import type { Context } from '../definition/types.js';
import { isZodSchema } from '../definition/validate-config.js';
import { FINGERPRINT_PREFIX } from '../definition/versions.js';
import { InstanceMigrationFailedException, VersionFenceException } from '../errors.js';
import { HistoryWriter } from './history.js';
import type { MacrostepResult, MachineSnapshot } from './types.js';

/** What running `definition` on a stored snapshot takes. */
export type VersionPlan =
  /** The snapshot is at the definition's version (or cannot be told apart from it). */
  | { kind: 'current' }
  /** Migrate first along `chain` (from the stored version to the definition's). */
  | { kind: 'migrate'; from: string; chain: readonly MigrationDefinition[] }
  /** Run on `definition`, an older version kept loaded (pinned mode). */
  | { kind: 'pinned'; definition: MachineDefinition }
  /** Written by a version this definition does not know: the version fence refuses writes. */
  | { kind: 'unknown'; version: string };

/** The history record type of a migration: `<machine>.migration`. */
export function migrationRecordType(machineId: string): string {
  return `${machineId}.migration`;
}

/**
 * The version a stored snapshot counts as: its recorded one, or, for rows written before
 * versions were recorded, the oldest version the machine's migrations start at (else its own).
 */
export function storedVersion(
  definition: MachineDefinition,
  snapshot: Pick<MachineSnapshot, 'version'>,
): string {
  if (snapshot.version !== undefined) return snapshot.version;
  return oldestVersion(definition) ?? definition.version;
}

function oldestVersion(definition: MachineDefinition): string | undefined {
  const migrations = definition.migrations;
  if (migrations === undefined || migrations.size === 0) return undefined;
  const targets = new Set([...migrations.values()].map((step) => step.to));
  // The start of the chain: a version steps start at but none lead to.
  return (
    [...migrations.keys()].find((from) => !targets.has(from)) ?? migrations.keys().next().value
  );
}

/**
 * How `definition` (the newest version a process runs, with its pinned versions and migrations)
 * takes a stored snapshot: a pinned version runs on its own definition before any migration. A version it does not know is `unknown` when it was named explicitly
 * (a newer deploy's, or one without a migration): a fingerprinted version that is unknown counts
 * as the current one, as every snapshot did before versions were recorded, since any edit of an
 * unversioned machine changes its fingerprint.
 */
export function planVersion(
  definition: MachineDefinition,
  snapshot: Pick<MachineSnapshot, 'version'>,
): VersionPlan {
  // Mock definitions of tests carry no version.
  if (definition.version === undefined) return { kind: 'current' };
  const stored = storedVersion(definition, snapshot);
  if (stored === definition.version) return { kind: 'current' };
  const old = definition.pinned?.get(stored);
  if (old !== undefined) return { kind: 'pinned', definition: old };
  const chain = chainFrom(stored, definition.version, definition.migrations ?? new Map());
  if (chain !== null) return { kind: 'migrate', from: stored, chain };
  if (stored.startsWith(FINGERPRINT_PREFIX)) return { kind: 'current' };
  return { kind: 'unknown', version: stored };
}

/** The refusal of a snapshot written by a version `definition` does not know. */
export function versionFence(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  version: string,
): VersionFenceException {
  return new VersionFenceException(
    `Machine '${snapshot.id}' of '${definition.id}' was last written by version '${version}', which this process (version '${definition.version}') neither runs nor migrates from, so it does not write it. ` +
      `If '${version}' is newer (a deploy migrated the instance), serve it from processes running '${version}'; ` +
      `if it is older, declare a migration from '${version}' to '${definition.version}' or keep '${version}' loaded (pinned) (docs/versioning.md).`,
    { machine: definition.id, key: snapshot.id, version, current: definition.version },
  );
}

/** Options of {@link migrateSnapshot}. */
export interface MigrateOptions {
  /** The clock of the migration record. */
  now?: () => Date;
  /** `false`: no history record is built (a read's view of the migrated instance). */
  history?: boolean;
}

/**
 * Migrates a stored snapshot along `chain` to `definition`'s version: the snapshot after the
 * migration (sequence + 1, `version` the definition's) and its one history record, of type
 * `<machine>.migration`, whose payload names the versions and the states before. Throws
 * `InstanceMigrationFailedException` when a context function throws, a schema refuses its
 * output or the mapped states are not a configuration of the definition.
 */
export function migrateSnapshot(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  chain: readonly MigrationDefinition[],
  options: MigrateOptions = {},
): MacrostepResult {
  const from = chain[0]?.from ?? storedVersion(definition, snapshot);
  let paths = relativePaths(definition, snapshot.value);
  let context: Context = snapshot.context;
  for (const step of chain) {
    const info = { id: snapshot.id, from: step.from, to: step.to, states: paths };
    context = migrateContext(definition, snapshot, step, context, info, step === chain.at(-1));
    paths = [...new Set(paths.map((path) => mapPath(path, step.states)))];
  }
  const value = configuration(definition, snapshot, paths, from);
  const time = options.now === undefined ? Date.now() : options.now().getTime();
  const history = new HistoryWriter(
    definition.id,
    snapshot.id,
    snapshot.sequence,
    time,
    options.history !== false,
  );
  const payload = {
    from,
    to: definition.version,
    steps: chain.map((step) => `${step.from} -> ${step.to}`),
    previousValue: snapshot.value,
  };
  history.push(migrationRecordType(definition.id), 'internal', payload, value, {
    type: migrationRecordType(definition.id),
  });
  history.seal(context);
  const migrated: MachineSnapshot = {
    ...snapshot,
    value,
    context,
    sequence: history.lastSequence,
    version: definition.version,
  };
  return { snapshot: migrated, history: history.records, validationFailure: null, effects: [] };
}

/**
 * The states a snapshot is in after `chain` (its context left alone): what `check --database`
 * asks of every live state. Throws `InstanceMigrationFailedException` as `migrateSnapshot` does
 * for a state the chain leaves uncovered.
 */
export function migrateStates(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  chain: readonly MigrationDefinition[],
): string[] {
  let paths = relativePaths(definition, snapshot.value);
  for (const step of chain) paths = [...new Set(paths.map((path) => mapPath(path, step.states)))];
  return configuration(
    definition,
    snapshot,
    paths,
    chain[0]?.from ?? storedVersion(definition, snapshot),
  );
}

/**
 * The full id a state of the stored version has after `chain`: renames and removals mapped as
 * `migrateSnapshot` maps the instance's states (a mapped ancestor moves the states below it);
 * an unmapped state keeps its id. Used for the delegating state a child row names.
 */
export function migratedStateId(
  definition: MachineDefinition,
  chain: readonly MigrationDefinition[],
  stateId: string,
): string {
  let [path] = relativePaths(definition, [stateId]);
  for (const step of chain) path = mapPath(path!, step.states);
  return `${definition.id}.${path}`;
}

function relativePaths(definition: MachineDefinition, value: readonly string[]): string[] {
  const prefix = `${definition.id}.`;
  return value.map((id) => (id.startsWith(prefix) ? id.slice(prefix.length) : id));
}

/** A state path through one step's map: the longest mapped prefix (the path or an ancestor) is replaced. */
function mapPath(path: string, states: ReadonlyMap<string, string>): string {
  let key = path;
  for (;;) {
    const target = states.get(key);
    if (target !== undefined) return target + path.slice(key.length);
    const dot = key.lastIndexOf('.');
    if (dot < 0) return path;
    key = key.slice(0, dot);
  }
}

function migrateContext(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  step: MigrationDefinition,
  context: Context,
  info: { id: string; from: string; to: string; states: readonly string[] },
  last: boolean,
): Context {
  const where = `Migrating machine '${snapshot.id}' of '${definition.id}' from '${step.from}' to '${step.to}'`;
  let next: Context = context;
  if (step.context !== null) {
    try {
      // The function gets a copy: a throw halfway leaves the stored snapshot as it was.
      next = step.context(structuredClone(context), info);
    } catch (error) {
      throw failed(
        definition,
        snapshot,
        step,
        `${where}: its context function threw: ${describe(error)}`,
      );
    }
    if (typeof next !== 'object' || next === null || Array.isArray(next))
      throw failed(
        definition,
        snapshot,
        step,
        `${where}: its context function returned ${JSON.stringify(next)}, not an object.`,
      );
  }
  const schemas: ZodType[] = [];
  if (step.contextSchema !== null) schemas.push(step.contextSchema);
  const own = definition.config.context;
  if (last && isZodSchema(own)) schemas.push(own as ZodType);
  for (const schema of schemas) {
    const result = schema.safeParse(next);
    if (result.success) {
      next = result.data as Context;
      continue;
    }
    const problems = result.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw failed(
      definition,
      snapshot,
      step,
      `${where}: the migrated context fails its schema (${problems}).`,
    );
  }
  return next;
}

/**
 * The definition's leaf ids for the mapped paths: compound targets enter their initial states,
 * parallel states every region, and regions with no active state (added by the new version)
 * their initial states. Throws when a path is no state, or two leaves exclude each other.
 */
function configuration(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  paths: readonly string[],
  from: string,
): string[] {
  const leaves = new Set<StateNode>();
  for (const path of paths) {
    const node = definition.idMap.get(`${definition.id}.${path}`);
    if (node === undefined || node === definition.root) {
      throw new InstanceMigrationFailedException(
        `Migrating machine '${snapshot.id}' of '${definition.id}' from '${from}' to '${definition.version}': its state '${path}' is not a state of '${definition.version}'. ` +
          `Map it in the migration's 'states' (e.g. states: { '${path}': '<a state of ${definition.version}>' }).`,
        { machine: definition.id, key: snapshot.id, path, from, to: definition.version },
      );
    }
    for (const leaf of initialLeaves(node)) leaves.add(leaf);
  }
  // Regions of an active parallel state with no active leaf enter their initial states.
  for (const leaf of [...leaves]) {
    for (const ancestor of leaf.ancestors) {
      if (ancestor.type !== 'parallel') continue;
      for (const region of ancestor.children) {
        if (![...leaves].some((other) => other.ancestors[region.depth] === region))
          for (const entered of initialLeaves(region)) leaves.add(entered);
      }
    }
  }
  const ordered = [...leaves].sort(byDocumentOrder);
  for (let i = 0; i < ordered.length; i += 1) {
    for (let j = i + 1; j < ordered.length; j += 1) {
      const [a, b] = [ordered[i]!, ordered[j]!];
      let depth = 0;
      while (
        a.ancestors[depth + 1] !== undefined &&
        a.ancestors[depth + 1] === b.ancestors[depth + 1]
      )
        depth += 1;
      if (a.ancestors[depth]!.type === 'parallel') continue;
      throw new InstanceMigrationFailedException(
        `Migrating machine '${snapshot.id}' of '${definition.id}' from '${from}' to '${definition.version}' puts it in both '${a.route}' and '${b.route}', which exclude each other. ` +
          `Map one of them elsewhere in the migration's 'states'.`,
        {
          machine: definition.id,
          key: snapshot.id,
          path: `${a.route}, ${b.route}`,
          from,
          to: definition.version,
        },
      );
    }
  }
  return ordered.map((leaf) => leaf.id);
}

/** The leaves a state's entry activates by default: itself, its initial child's, every region's. */
function initialLeaves(node: StateNode): StateNode[] {
  if (isLeaf(node)) return [node];
  if (node.type === 'parallel') return node.children.flatMap(initialLeaves);
  return node.initial === null ? [] : initialLeaves(node.initial);
}

function failed(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  step: MigrationDefinition,
  message: string,
): InstanceMigrationFailedException {
  return new InstanceMigrationFailedException(message, {
    machine: definition.id,
    key: snapshot.id,
    from: step.from,
    to: step.to,
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
