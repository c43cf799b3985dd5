/**
 * Resolves behavior references (inline keys, functions, classes, validation guards, parameterized
 * tuples) once, at definition time, into plain callables the interpreter runs without lookups.
 */
import { BehaviorNotFoundException, InvalidBehaviorDefinitionException } from '../errors.js';
import { asValidationGuard, isValidationGuard } from './validation-guard.js';
import type { IssueCollector, IssueLocation } from './issues.js';
import type { BehaviorArgs, BehaviorConfig, ValidationGuardDefinition } from './behavior-types.js';

/** The behavior registries of `behavior` a reference can point into. */
export type BehaviorKind = 'guards' | 'actions' | 'calculators' | 'outputs' | 'listeners';

/** The word used for a kind in history record types (`<m>.guard.<name>.pass`). */
const RECORD_WORD: Record<BehaviorKind, string> = {
  guards: 'guard',
  actions: 'action',
  calculators: 'calculator',
  outputs: 'output',
  listeners: 'listener',
};

/** A behavior ready to run: resolved callable, its tuple parameters and its history names. */
export interface ResolvedBehavior {
  readonly kind: BehaviorKind;
  /** Inline key, or the function / class / validation guard name. */
  readonly name: string;
  readonly run: (args: BehaviorArgs) => unknown;
  /** Tuple parameters without the reserved `@` keys. */
  readonly params: Readonly<Record<string, unknown>>;
  /** Set for validation guards. */
  readonly validation: ValidationGuardDefinition | null;
  /** `[listener, { '@queue': true }]`: run later by a job, not inline. */
  readonly queued: boolean;
  /** Precomputed history types: `<m>.<kind>.<name>.start|finish|pass|fail`. */
  readonly startType: string;
  readonly finishType: string;
  readonly passType: string;
  readonly failType: string;
}

type Runnable = { run(args: BehaviorArgs): unknown };
type ClassLike = (new () => Runnable) & { name: string };
type AnyFunction = (args: BehaviorArgs) => unknown;

const EMPTY_PARAMS: Readonly<Record<string, unknown>> = Object.freeze({});

function isBehaviorClass(value: unknown): value is ClassLike {
  if (typeof value !== 'function') return false;
  const prototype = (value as { prototype?: { run?: unknown } }).prototype;
  return prototype !== undefined && typeof prototype.run === 'function';
}

function isParams(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !isValidationGuard(value)
  );
}

/** `[behavior, { ...params }]`, as opposed to a list of two behaviors. */
export function isBehaviorTuple(
  value: unknown,
): value is readonly [unknown, Record<string, unknown>] {
  return Array.isArray(value) && value.length === 2 && isParams(value[1]);
}

/** Resolves the behavior references of one machine; classes are instantiated once here. */
export class BehaviorRegistry {
  private readonly instances = new Map<ClassLike, Runnable>();

  constructor(
    private readonly machineId: string,
    private readonly behavior: BehaviorConfig,
    private readonly issues: IssueCollector,
  ) {}

  /** One entry or a list of entries; problems are recorded, unresolvable entries left out. */
  resolveList(list: unknown, kind: BehaviorKind, where: IssueLocation): ResolvedBehavior[] {
    if (list === undefined || list === null) return [];
    const entries = Array.isArray(list) && !isBehaviorTuple(list) ? list : [list];
    const resolved: ResolvedBehavior[] = [];
    for (const entry of entries) {
      const behavior = this.resolve(entry, kind, where);
      if (behavior !== null) resolved.push(behavior);
    }
    return resolved;
  }

  /** One entry (reference or tuple); `null` after recording a problem. */
  resolve(entry: unknown, kind: BehaviorKind, where: IssueLocation): ResolvedBehavior | null {
    if (isBehaviorTuple(entry)) {
      const [reference, rawParams] = entry;
      const params: Record<string, unknown> = {};
      let queued = false;
      for (const [name, value] of Object.entries(rawParams)) {
        if (name === '@queue') queued = value !== false;
        else if (!name.startsWith('@')) params[name] = value;
      }
      return this.resolveReference(reference, kind, where, Object.freeze(params), queued);
    }
    return this.resolveReference(entry, kind, where, EMPTY_PARAMS, false);
  }

  private resolveReference(
    reference: unknown,
    kind: BehaviorKind,
    where: IssueLocation,
    params: Readonly<Record<string, unknown>>,
    queued: boolean,
  ): ResolvedBehavior | null {
    if (typeof reference === 'string') {
      const registered = (this.behavior[kind] as Record<string, unknown> | undefined)?.[reference];
      if (registered === undefined) {
        const known = Object.keys(this.behavior[kind] ?? {});
        this.issues.add(
          BehaviorNotFoundException,
          { path: where.path, key: reference },
          `${RECORD_WORD[kind]} '${reference}' (in ${where.key}) is not defined.`,
          `Add it under behavior.${kind}` +
            (known.length > 0 ? ` (known: ${known.join(', ')}).` : '.'),
        );
        return null;
      }
      return this.fromValue(registered, reference, kind, where, params, queued);
    }
    return this.fromValue(reference, undefined, kind, where, params, queued);
  }

  private fromValue(
    value: unknown,
    key: string | undefined,
    kind: BehaviorKind,
    where: IssueLocation,
    params: Readonly<Record<string, unknown>>,
    queued: boolean,
  ): ResolvedBehavior | null {
    // Inline `{ check, message }` objects are read only as `behavior.guards` entries (`key`): in
    // a list, an object is a tuple's params.
    const validation =
      kind === 'guards' && key !== undefined ? asValidationGuard(value) : validationGuard(value);
    if (validation !== null && kind === 'guards') {
      const name = key ?? validation.name ?? 'validationGuard';
      return this.make(kind, name, validation.check as AnyFunction, params, validation, queued);
    }
    if (isBehaviorClass(value)) {
      let instance = this.instances.get(value);
      if (instance === undefined) {
        instance = new value();
        this.instances.set(value, instance);
      }
      if (this.refusesAsync(instance.run, kind, key ?? value.name, where)) return null;
      const bound = instance.run.bind(instance) as AnyFunction;
      return this.make(kind, key ?? value.name, bound, params, null, queued);
    }
    if (typeof value === 'function') {
      if (this.refusesAsync(value, kind, key ?? (value.name || 'anonymous'), where)) return null;
      return this.make(
        kind,
        key ?? (value.name || 'anonymous'),
        value as AnyFunction,
        params,
        null,
        queued,
      );
    }
    this.issues.add(
      InvalidBehaviorDefinitionException,
      { path: where.path, key: key ?? String(value) },
      `${where.key} has an invalid ${RECORD_WORD[kind]} reference (${describe(value)}).`,
      `Use an inline key of behavior.${kind}, a function, a class with run(args), or [behavior, { ...params }]` +
        (kind === 'guards'
          ? `; a validation guard is defineValidationGuard(...) or { check, message } under behavior.guards.`
          : '.'),
    );
    return null;
  }

  // A behavior runs inside the synchronous macrostep: an async guard's Promise would count as
  // passing, and an async action's writes would land after the step was committed.
  private refusesAsync(
    run: unknown,
    kind: BehaviorKind,
    name: string,
    where: IssueLocation,
  ): boolean {
    if (!isAsyncFunction(run)) return false;
    this.issues.add(
      InvalidBehaviorDefinitionException,
      { path: where.path, key: name },
      `${RECORD_WORD[kind]} '${name}' (in ${where.key}) is an async function; behaviors run synchronously inside a macrostep.`,
      `Make it synchronous. Asynchronous work belongs in an endpoint action (before/after) or a job actor.`,
    );
    return true;
  }

  private make(
    kind: BehaviorKind,
    name: string,
    run: AnyFunction,
    params: Readonly<Record<string, unknown>>,
    validation: ValidationGuardDefinition | null,
    queued: boolean,
  ): ResolvedBehavior {
    const prefix = `${this.machineId}.${RECORD_WORD[kind]}.${name}`;
    return Object.freeze({
      kind,
      name,
      run,
      params,
      validation,
      queued,
      startType: `${prefix}.start`,
      finishType: `${prefix}.finish`,
      passType: `${prefix}.pass`,
      failType: `${prefix}.fail`,
    });
  }
}

function validationGuard(value: unknown): ValidationGuardDefinition | null {
  return isValidationGuard(value) ? value : null;
}

function isAsyncFunction(value: unknown): boolean {
  return typeof value === 'function' && value.constructor?.name === 'AsyncFunction';
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}
