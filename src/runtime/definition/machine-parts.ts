/**
 * The smaller parts of a normalized machine that `defineMachine` builds beside the state tree:
 * options, computed values, the context factory, pinned versions, the names scenarios may
 * override and the history record types.
 */
import type { ZodType } from 'zod';
import {
  InvalidBehaviorDefinitionException,
  InvalidMigrationDefinitionException,
  InvalidStateConfigException,
} from '../errors.js';
import type { StateTree } from './build-state-tree.js';
import { cloneContext } from './clone-context.js';
import type { IssueCollector } from './issues.js';
import type { MachineDefinition, MachineRecordTypes } from './machine-definition.js';
import type { Context, MachineConfig, MachineOptions } from './types.js';
import type { BehaviorConfig, ComputedFunction } from './behavior-types.js';
import { isPlainObject, isZodSchema } from './validate-config.js';

/**
 * `versioning: 'pin'` with `previous`: the older definitions by version (docs/versioning.md).
 * Each must be the same machine id at another version.
 */
export function pinnedVersions(
  input: { previous?: readonly MachineDefinition[]; versioning?: string } | undefined,
  machineId: string,
  version: string,
  issues: IssueCollector,
): ReadonlyMap<string, MachineDefinition> {
  const pinned = new Map<string, MachineDefinition>();
  if (input?.versioning !== 'pin') return pinned;
  for (const [index, old] of (input.previous ?? []).entries()) {
    if (old?.kind !== 'machine' || old.id !== machineId || old.version === version) {
      issues.add(
        InvalidMigrationDefinitionException,
        { path: '', key: `previous[${index}]` },
        `'previous' must hold older definitions of machine '${machineId}' (another version than '${version}').`,
      );
      continue;
    }
    pinned.set(old.version, old);
  }
  return pinned;
}

/** Without its own `max_transition_depth` a machine uses the runtime's (`MacrostepOptions`). */
export function machineOptions(config: MachineConfig): MachineOptions {
  const own = config.max_transition_depth;
  return Object.freeze({
    maxTransitionDepth: typeof own === 'number' && Number.isInteger(own) ? own : null,
    shouldPersist: config.should_persist !== false,
  });
}

export function normalizeComputed(
  behavior: BehaviorConfig,
  issues: IssueCollector,
): [string, ComputedFunction][] {
  const computed: [string, ComputedFunction][] = [];
  for (const [name, fn] of Object.entries(behavior.computed ?? {})) {
    if (typeof fn === 'function') computed.push([name, fn]);
    else
      issues.add(
        InvalidBehaviorDefinitionException,
        { path: '', key: `computed.${name}` },
        `computed value '${name}' must be a function ({ context }) => value.`,
      );
  }
  return computed;
}

export function contextFactory(
  context: MachineConfig['context'],
  issues: IssueCollector,
): () => Context {
  if (isZodSchema(context)) {
    const schema = context as ZodType<Context>;
    const probe = schema.safeParse({});
    if (!probe.success || !isPlainObject(probe.data)) {
      const detail = probe.success
        ? 'it does not produce an object'
        : probe.error.issues
            .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
            .join('; ');
      issues.add(
        InvalidStateConfigException,
        { path: '', key: 'context' },
        `the context schema cannot build an initial context from its defaults (${detail}).`,
        'Give every field a .default(...).',
      );
      return () => ({});
    }
    return () => schema.parse({});
  }
  const initial = isPlainObject(context) ? context : {};
  // The interpreter's context copy: ~10x faster than structuredClone on small JSON-like
  // contexts (every create and every stateless request builds one), same result.
  return () => cloneContext(initial);
}

/** Every guard and action name a scenario may override: inline keys and the names resolved in the tree. */
export function behaviorNames(
  tree: StateTree,
  behavior: BehaviorConfig,
): { guardNames: Set<string>; actionNames: Set<string> } {
  const guardNames = new Set(Object.keys(behavior.guards ?? {}));
  const actionNames = new Set(Object.keys(behavior.actions ?? {}));
  for (const node of tree.nodes) {
    for (const action of [...node.entry, ...node.exit]) actionNames.add(action.name);
    for (const transition of node.on.values()) {
      for (const branch of transition.branches) {
        for (const guard of branch.guards) guardNames.add(guard.name);
        for (const action of branch.actions) actionNames.add(action.name);
      }
    }
  }
  return { guardNames, actionNames };
}

export function recordTypes(machineId: string): MachineRecordTypes {
  return Object.freeze({
    start: `${machineId}.start`,
    finish: `${machineId}.finish`,
    entryStart: `${machineId}.entry.start`,
    entryFinish: `${machineId}.entry.finish`,
    exitStart: `${machineId}.exit.start`,
    exitFinish: `${machineId}.exit.finish`,
    listenEntryStart: `${machineId}.listen.entry.start`,
    listenEntryFinish: `${machineId}.listen.entry.finish`,
    listenExitStart: `${machineId}.listen.exit.start`,
    listenExitFinish: `${machineId}.listen.exit.finish`,
    listenTransitionStart: `${machineId}.listen.transition.start`,
    listenTransitionFinish: `${machineId}.listen.transition.finish`,
  });
}
