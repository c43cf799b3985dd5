/**
 * A machine's version (docs/versioning.md): the `version` of its config when given, else a
 * fingerprint of its structure, the parts a stored instance depends on: the state tree (keys,
 * types, initial states), the transitions (event types, targets, guard names) and the shape of
 * the context (its zod schema as JSON Schema, or the JSON type of each initial value).
 *
 * The fingerprint is stable across processes and across the order keys are written in (every
 * map is sorted before hashing): renaming a state, adding a transition or changing a context
 * key's type changes it; reordering keys, editing an action's body or a description does not.
 */
import { createHash } from 'node:crypto';
import { z, type ZodType } from 'zod';
import type { StateNode } from './state-node.js';
import { isPlainObject, isZodSchema } from './validate-config.js';

/** Prefix of fingerprinted versions, so they never clash with an explicit `version`. */
export const FINGERPRINT_PREFIX = 'fp-';

/**
 * The version a definition carries: `config.version` as a string when set, else the structural
 * fingerprint (`fp-` and 16 hex digits).
 */
export function machineVersion(root: StateNode, config: Record<string, unknown>): string {
  const explicit = config.version;
  if (typeof explicit === 'string' && explicit !== '') return explicit;
  if (typeof explicit === 'number' && Number.isFinite(explicit)) return String(explicit);
  return machineFingerprint(root, config.context);
}

/** The structural fingerprint of a state tree and context (see the module comment). */
export function machineFingerprint(root: StateNode, context: unknown): string {
  const shape = { states: stateShape(root), context: contextShape(context) };
  const digest = createHash('sha256').update(stableJson(shape)).digest('hex');
  return `${FINGERPRINT_PREFIX}${digest.slice(0, 16)}`;
}

function stateShape(node: StateNode): unknown {
  const on: Record<string, unknown> = {};
  for (const [eventType, transition] of node.on) {
    on[eventType] = transition.branches.map((branch) => ({
      target: branch.target?.id ?? null,
      guards: branch.guards.map((guard) => guard.name),
    }));
  }
  const children: Record<string, unknown> = {};
  for (const child of node.children) children[child.key] = stateShape(child);
  return {
    type: node.type,
    initial: node.initial?.key ?? null,
    on,
    states: children,
    machine: node.invocation === null ? null : childMachineName(node.invocation.machine),
  };
}

function childMachineName(machine: string | { readonly id: string } | undefined): string | null {
  if (machine === undefined) return null;
  return typeof machine === 'string' ? machine : machine.id;
}

/** The context's shape: its schema as JSON Schema, or each initial value's JSON type. */
export function contextShape(context: unknown): unknown {
  if (isZodSchema(context)) {
    try {
      return z.toJSONSchema(context as ZodType, { unrepresentable: 'any' });
    } catch {
      // A schema another zod build made, or one JSON Schema cannot express: its keys still count.
      const shape = (context as { shape?: unknown }).shape;
      return isPlainObject(shape) ? Object.keys(shape).sort() : 'schema';
    }
  }
  if (!isPlainObject(context)) return {};
  const types: Record<string, string> = {};
  for (const [key, value] of Object.entries(context)) types[key] = jsonType(value);
  return types;
}

/** The JSON type of a value: `string`, `number`, `boolean`, `array`, `object` or `null`. */
export function jsonType(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** JSON with every object's keys sorted, so the text does not depend on insertion order. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (!isPlainObject(item)) return item;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(item).sort()) sorted[key] = item[key];
    return sorted;
  });
}
