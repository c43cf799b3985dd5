/**
 * Typed migrations between versions of one machine (docs/versioning.md): `defineMigration` and
 * what `defineMachine({ migrations })` makes of them. A migration maps the states of version
 * `from` to states of version `to` (renames, merges, removed states to a target) and transforms
 * the context; a machine lists the steps from each version it still has instances of to its own
 * version, and the runtime applies the chain to an instance of an older version on its next
 * load (interpreter/migrate-snapshot.ts), or `machine-routes instances migrate` does, eagerly.
 */
import type { ZodType } from 'zod';
import { InvalidMigrationDefinitionException } from '../errors.js';
import type { IssueCollector } from './issues.js';
import type { StateNode } from './state-node.js';
import type { Context } from './types.js';
import { isPlainObject, isZodSchema } from './validate-config.js';

/** What a migration's context function is told besides the old context. */
export interface MigrationInfo {
  /** The instance id. */
  id: string;
  /** The version migrated from. */
  from: string;
  /** The version migrated to. */
  to: string;
  /** Active states before the step, relative to the machine (`approved`, `fulfillment.payment`). */
  states: readonly string[];
}

/** A migration as written (`defineMigration`). */
export interface MigrationConfig<TFrom extends Context = Context, TTo extends Context = Context> {
  /** The version whose instances this step migrates (`version` of that definition, or its fingerprint). */
  from: string | number;
  /** The version the step produces. */
  to: string | number;
  /**
   * Old state path to new state path (relative to the machine, dotted for nested states): a
   * rename (`approved: 'accepted'`), a merge (two keys, one target), a removed state sent to
   * another (`reviewing: 'applied'`). A key also maps the states below it (`fulfillment:
   * 'shipping'` moves `fulfillment.payment` to `shipping.payment`). A target that is a compound
   * or parallel state enters its initial states. Unmapped states keep their path.
   */
  states?: Readonly<Record<string, string>>;
  /** The new context from the old one; synchronous and pure. Default: the context unchanged. */
  context?(old: TFrom, info: MigrationInfo): TTo;
  /**
   * Checks the context the step produces (zod). The last step's output is also checked against
   * the machine's own context schema when it has one.
   */
  contextSchema?: ZodType<TTo>;
}

/** A normalized migration step. */
export interface MigrationDefinition {
  readonly kind: 'migration';
  readonly from: string;
  readonly to: string;
  /** Old path -> new path. */
  readonly states: ReadonlyMap<string, string>;
  readonly context: ((old: Context, info: MigrationInfo) => Context) | null;
  readonly contextSchema: ZodType | null;
}

/**
 * Declares one migration step of a machine (docs/versioning.md).
 *
 * @example
 * defineMigration<{ amount: string }, { amount: number }>({
 *   from: 'v1', to: 'v2',
 *   states: { approved: 'accepted', reviewing: 'applied' },
 *   context: (old) => ({ ...old, amount: Number(old.amount) }),
 * })
 */
export function defineMigration<TFrom extends Context = Context, TTo extends Context = Context>(
  config: MigrationConfig<TFrom, TTo>,
): MigrationConfig<TFrom, TTo> {
  return config;
}

/** Most steps a chain may take: a longer walk means the steps form a cycle. */
const MAX_CHAIN = 1000;

/**
 * Normalizes `defineMachine({ migrations })`, recording every problem: steps keyed by `from`,
 * each chain ending at `version`, the last steps' targets checked against the machine's states.
 */
export function normalizeMigrations(
  input: unknown,
  version: string,
  idMap: ReadonlyMap<string, StateNode>,
  machineId: string,
  issues: IssueCollector,
): ReadonlyMap<string, MigrationDefinition> {
  const steps = new Map<string, MigrationDefinition>();
  if (input === undefined) return steps;
  const where = (index: number) => ({ path: '', key: `migrations[${index}]` });
  if (!Array.isArray(input)) {
    issues.add(
      InvalidMigrationDefinitionException,
      { path: '', key: 'migrations' },
      `'migrations' must be an array of defineMigration({ from, to, ... }).`,
    );
    return steps;
  }
  input.forEach((entry: unknown, index) => {
    const step = normalizeStep(entry, index, issues, where(index));
    if (step === null) return;
    if (steps.has(step.from)) {
      issues.add(
        InvalidMigrationDefinitionException,
        where(index),
        `two migrations start at version '${step.from}'.`,
        'Keep one step per version; chain them (v1 -> v2, v2 -> v3).',
      );
      return;
    }
    steps.set(step.from, step);
  });
  for (const step of steps.values()) {
    const chain = chainFrom(step.from, version, steps);
    if (chain === null) {
      issues.add(
        InvalidMigrationDefinitionException,
        { path: '', key: `migrations.${step.from}` },
        `the migrations from version '${step.from}' never reach the machine's version '${version}'.`,
        `Add a step to '${version}', or set the machine's version (config.version).`,
      );
      continue;
    }
    if (step.to !== version) continue;
    for (const [from, to] of step.states) {
      if (idMap.has(`${machineId}.${to}`)) continue;
      issues.add(
        InvalidMigrationDefinitionException,
        { path: '', key: `migrations.${step.from}.states.${from}` },
        `migration '${step.from}' -> '${step.to}' maps '${from}' to '${to}', which is not a state of the machine.`,
        `Map it to one of ${[...idMap.keys()]
          .filter((id) => id !== machineId)
          .map((id) => `'${id.slice(machineId.length + 1)}'`)
          .join(', ')}.`,
      );
    }
  }
  return steps;
}

/** The steps from version `from` to `version`, in order; `null` when the chain never gets there. */
export function chainFrom(
  from: string,
  version: string,
  steps: ReadonlyMap<string, MigrationDefinition>,
): MigrationDefinition[] | null {
  const chain: MigrationDefinition[] = [];
  let at = from;
  while (at !== version) {
    const step = steps.get(at);
    if (step === undefined || chain.length >= MAX_CHAIN) return null;
    chain.push(step);
    at = step.to;
  }
  return chain;
}

function versionText(value: unknown): string | null {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

function normalizeStep(
  entry: unknown,
  index: number,
  issues: IssueCollector,
  where: { path: string; key: string },
): MigrationDefinition | null {
  if (!isPlainObject(entry)) {
    issues.add(
      InvalidMigrationDefinitionException,
      where,
      `migration ${index} is not an object.`,
      `Use defineMigration({ from: 'v1', to: 'v2', states: { ... }, context: (old) => ... }).`,
    );
    return null;
  }
  const from = versionText(entry.from);
  const to = versionText(entry.to);
  if (from === null || to === null || from === to) {
    issues.add(
      InvalidMigrationDefinitionException,
      where,
      `migration ${index} needs two different versions 'from' and 'to', got ${JSON.stringify(entry.from)} -> ${JSON.stringify(entry.to)}.`,
      `Try { from: 'v1', to: 'v2' }.`,
    );
    return null;
  }
  const states = new Map<string, string>();
  if (entry.states !== undefined) {
    if (!isPlainObject(entry.states)) {
      issues.add(
        InvalidMigrationDefinitionException,
        where,
        `migration '${from}' -> '${to}': 'states' must map old state paths to new ones.`,
        `Try states: { approved: 'accepted' }.`,
      );
    } else {
      for (const [old, target] of Object.entries(entry.states)) {
        if (typeof target === 'string' && target !== '') states.set(old, target);
        else
          issues.add(
            InvalidMigrationDefinitionException,
            where,
            `migration '${from}' -> '${to}' maps '${old}' to ${JSON.stringify(target)}, not a state path.`,
          );
      }
    }
  }
  const context = entry.context;
  if (context !== undefined && typeof context !== 'function') {
    issues.add(
      InvalidMigrationDefinitionException,
      where,
      `migration '${from}' -> '${to}': 'context' must be a function (old) => new context.`,
    );
  }
  const schema = entry.contextSchema;
  if (schema !== undefined && !isZodSchema(schema)) {
    issues.add(
      InvalidMigrationDefinitionException,
      where,
      `migration '${from}' -> '${to}': 'contextSchema' must be a zod schema.`,
    );
  }
  return {
    kind: 'migration',
    from,
    to,
    states,
    context:
      typeof context === 'function'
        ? (context as (old: Context, info: MigrationInfo) => Context)
        : null,
    contextSchema: isZodSchema(schema) ? (schema as ZodType) : null,
  };
}
