/**
 * Typed contracts (spec 9.0.0, "Typed contracts: `with` renamed to `input`"), declared with zod:
 *
 * - a machine's typed **input** (root `input: z.object(...)`): what a parent must pass when it
 *   starts the machine as a child; the child's start parses the mapped input with it;
 * - a typed **output** (a state's `output: z.object(...)`): built from the context (and computed
 *   values) by the schema's keys, parsed; a child's `@done` carries it;
 * - a typed **failure** (root `failure: z.object(...)`): built from a failed child's error
 *   (`message`, `code`, `name` and the error's own fields) and its input; `@fail` carries it.
 *
 * What can be known from the definitions is checked here, at definition time (so `check`
 * reports it at the key's place): a parent `input` naming a key its declared context lacks, a
 * child input schema whose required keys the parent's mapping does not pass, a typed output
 * whose required keys the declared context lacks, a contract that is not a zod object. The rest
 * is checked at run time with the same exceptions (`interpreter/typed-contracts.ts`).
 */
import type { ZodType } from 'zod';
import {
  MachineFailureResolutionException,
  MachineInputValidationException,
  MachineOutputResolutionException,
} from '../errors.js';
import { isMachineDefinition } from './invocation.js';
import type { IssueCollector } from './issues.js';
import type { MachineDefinition } from './machine-definition.js';
import type { StateNode } from './state-node.js';
import type { MachineConfig } from './types.js';
import { isPlainObject, isZodSchema } from './validate-config.js';

/** A zod object schema's keys: all of them, and those without a default that must be present. */
export interface ContractKeys {
  readonly all: readonly string[];
  readonly required: readonly string[];
}

/** The keys of a zod object schema, or `null` when `schema` is not one. */
export function contractKeys(schema: unknown): ContractKeys | null {
  if (!isZodSchema(schema)) return null;
  const shape = (schema as { shape?: unknown }).shape;
  if (!isPlainObject(shape)) return null;
  const all = Object.keys(shape);
  // A field that accepts `undefined` (optional, or with a default) need not be passed.
  const required = all.filter((key) => {
    const field = shape[key];
    return isZodSchema(field) && !field.safeParse(undefined).success;
  });
  return { all, required };
}

/** The machine's root `input` or `failure` contract: the schema, `null` when absent or unusable. */
export function rootContract(
  config: MachineConfig,
  key: 'input' | 'failure',
  issues: IssueCollector,
): ZodType | null {
  const value = (config as unknown as Record<string, unknown>)[key];
  if (value === undefined) return null;
  if (contractKeys(value) !== null) return value as ZodType;
  const Exception =
    key === 'input' ? MachineInputValidationException : MachineFailureResolutionException;
  issues.add(
    Exception,
    { path: '', key },
    `root '${key}' must be a zod object schema (the machine's typed ${key}).`,
    `Use ${key}: z.object({ ... }).`,
  );
  return null;
}

/** The keys of the declared context (`context` object or zod object schema), `null` when undeclared. */
export function declaredContextKeys(config: MachineConfig): readonly string[] | null {
  const context = config.context;
  if (context === undefined) return null;
  if (isZodSchema(context)) return contractKeys(context)?.all ?? null;
  return isPlainObject(context) ? Object.keys(context) : null;
}

/**
 * The definition-time checks of every delegating state's `input` and every typed state output
 * of one machine (`contextKeys`: its declared context, `computed`: its computed value names).
 */
export function checkTypedContracts(
  machineId: string,
  nodes: readonly StateNode[],
  contextKeys: readonly string[] | null,
  computed: readonly string[],
  issues: IssueCollector,
): void {
  for (const node of nodes) {
    checkChildInput(machineId, node, contextKeys, issues);
    checkTypedOutput(node, contextKeys, computed, issues);
  }
}

function checkChildInput(
  machineId: string,
  node: StateNode,
  contextKeys: readonly string[] | null,
  issues: IssueCollector,
): void {
  const invocation = node.invocation;
  const input = node.config.input;
  if (invocation === null || invocation === undefined || invocation.kind !== 'machine') return;
  // [childKey, parentKey] pairs of a key list or rename map; a function is known at run time only.
  let pairs: [string, string][] | null = null;
  if (Array.isArray(input) && input.every((key) => typeof key === 'string'))
    pairs = (input as string[]).map((key) => [key, key]);
  else if (isPlainObject(input) && Object.values(input).every((key) => typeof key === 'string'))
    pairs = Object.entries(input as Record<string, string>);
  const where = { path: node.route, key: 'input' };
  if (pairs !== null && contextKeys !== null) {
    const missing = pairs.map(([, parent]) => parent).filter((key) => !contextKeys.includes(key));
    if (missing.length > 0) {
      issues.add(
        MachineInputValidationException,
        where,
        `its 'input' passes ${list(missing)} to child machine '${invocation.childMachineId}', but machine '${machineId}' has no such context key (context keys: ${contextKeys.join(', ') || 'none'}).`,
        `Name keys of '${machineId}' context in 'input', or add ${list(missing)} to its context.`,
      );
    }
  }
  const child = isMachineDefinition(invocation.machine) ? invocation.machine : null;
  const childInput = child === null ? null : contractKeys(childTypedInput(child));
  if (childInput === null || child === null) return;
  const passed = pairs === null ? null : pairs.map(([childKey]) => childKey);
  if (passed === null && input !== undefined) return;
  const unmet = childInput.required.filter((key) => !(passed ?? []).includes(key));
  if (unmet.length > 0) {
    issues.add(
      MachineInputValidationException,
      where,
      `child machine '${child.id}' requires input ${list(unmet)} (its input schema), which this state's 'input' does not pass.`,
      `Pass them in 'input' (e.g. input: [${childInput.required.map((key) => `'${key}'`).join(', ')}]) or make them optional in '${child.id}' input schema.`,
    );
  }
}

function checkTypedOutput(
  node: StateNode,
  contextKeys: readonly string[] | null,
  computed: readonly string[],
  issues: IssueCollector,
): void {
  const output = node.config.output;
  if (!isZodSchema(output)) return;
  const keys = contractKeys(output);
  const where = { path: node.route, key: 'output' };
  if (keys === null) {
    issues.add(
      MachineOutputResolutionException,
      where,
      `its typed 'output' must be a zod object schema: the output is built from the context by its keys.`,
      `Use output: z.object({ ... }).`,
    );
    return;
  }
  if (contextKeys === null) return;
  const missing = keys.required.filter(
    (key) => !contextKeys.includes(key) && !computed.includes(key),
  );
  if (missing.length > 0) {
    issues.add(
      MachineOutputResolutionException,
      where,
      `its typed 'output' requires ${list(missing)}, which the context does not have (context keys: ${contextKeys.join(', ') || 'none'}).`,
      `Add ${list(missing)} to the context or to behavior.computed, or make them optional in the output schema.`,
    );
  }
}

/** The typed input of a machine definition (`null` when it declares none). */
export function childTypedInput(child: MachineDefinition): ZodType | null {
  // `?? null`: definitions from an older copy of the package have no contracts.
  return child.typedInput ?? null;
}

function list(keys: readonly string[]): string {
  return keys.map((key) => `'${key}'`).join(', ');
}
