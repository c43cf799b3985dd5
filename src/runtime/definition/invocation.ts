/**
 * Delegating states (`machine`, `input`, `queue`, `forward` and the `@done` / `@done.<final>` /
 * `@fail` / `@timeout` transitions): definition-time checks and the normalized form the
 * interpreter reads when such a state is entered or left.
 */
import { InvalidStateConfigException, MachineInputValidationException } from '../errors.js';
import type { IssueCollector } from './issues.js';
import type { MachineDefinition } from './machine-definition.js';
import type { StateNode } from './state-node.js';
import type { JobDefinition } from './job.js';
import type { ChildInputConfig, Context, EventObject } from './types.js';
import { isPlainObject } from './validate-config.js';

/** Builds the child's initial context from the parent's context and the entering event. */
export type ChildInputMapper = (context: Context, event: EventObject) => Context;

/** History record types of one delegating state, prefixed with the parent machine id. */
export interface InvocationRecordTypes {
  /** `<m>.child.<child>.start`: the child was started (sync) or requested (async). */
  readonly start: string;
  readonly done: string;
  readonly fail: string;
  readonly timeout: string;
}

/** The normalized delegation of an atomic state: a child machine or a job actor. */
export type InvocationDefinition = MachineInvocation | JobInvocation;

/** What every delegation has. */
interface InvocationBase {
  /** Async without any `@done`: started and never awaited (no completion, no cancel on exit). */
  readonly fireAndForget: boolean;
  readonly mapInput: ChildInputMapper;
  /** `@timeout` delay in seconds (async only), `null` without `@timeout`. */
  readonly timeoutSeconds: number | null;
  readonly records: InvocationRecordTypes;
}

/** `job`: an async function run through the job queue (always asynchronous). */
export interface JobInvocation extends InvocationBase {
  readonly kind: 'job';
  readonly async: true;
  /** The job's name: `defineJob`'s `name`, the function's name, else the state's key. */
  readonly name: string;
  readonly job: JobDefinition<unknown, unknown>;
  /** Never set: lets `invocation?.machine` read "no child machine" for a job. */
  readonly machine?: undefined;
}

/** `machine`: a child machine, inline or through the job queue. */
export interface MachineInvocation extends InvocationBase {
  readonly kind: 'machine';
  /** The child definition, or its id when it is resolved at run time (`MacrostepOptions.machines`). */
  readonly machine: MachineDefinition | string;
  /** Definition id of the child. */
  readonly childMachineId: string;
  /** `queue` present: the child runs through the job queue; otherwise inside the parent's macrostep. */
  readonly async: boolean;
  /** `queue` given as a string: the queue the child's jobs go to. */
  readonly queue: string | null;
}

const EMPTY_INPUT: ChildInputMapper = () => ({});

/** True for a definition produced by `defineMachine`. */
export function isMachineDefinition(value: unknown): value is MachineDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'machine' &&
    typeof (value as { id?: unknown }).id === 'string' &&
    (value as { idMap?: unknown }).idMap instanceof Map
  );
}

/**
 * Checks the delegation keys of `node` (after its transitions were normalized) and returns the
 * normalized invocation, or `null` when the state does not delegate or its config is unusable.
 */
export function normalizeInvocation(
  node: StateNode,
  machineId: string,
  issues: IssueCollector,
): InvocationDefinition | null {
  const config = node.config;
  const at = (key: string) => ({ path: node.route, key });
  // IssueCollector prefixes the machine and the state path.
  const label = 'it';
  if (config.target !== undefined) {
    issues.add(
      InvalidStateConfigException,
      at('target'),
      `'target' is set without 'job': only a fire-and-forget job actor moves on at once.`,
      `Add job: <async function> or put the target under on: { ... }.`,
    );
  }
  if (config.machine === undefined) {
    for (const key of ['input', 'queue'] as const) {
      // The root's `input` is the machine's typed input (typed-contracts.ts).
      if (key === 'input' && node.depth === 0) continue;
      if (config[key] !== undefined) {
        issues.add(
          InvalidStateConfigException,
          at(key),
          `'${key}' is set without 'machine'.`,
          `Add machine: <child machine> or remove '${key}'.`,
        );
      }
    }
    return null;
  }

  const reference: unknown = config.machine;
  const child = isMachineDefinition(reference) ? reference : null;
  if (child === null && (typeof reference !== 'string' || reference === '')) {
    issues.add(
      InvalidStateConfigException,
      at('machine'),
      `${label} has invalid 'machine' value. Must be a machine definition (defineMachine(...)) or a machine id.`,
    );
    return null;
  }
  // Parallel states are reported by validateStateConfig; compound and final ones here.
  if (node.type === 'parallel') return null;
  if (node.type !== 'atomic') {
    issues.add(
      InvalidStateConfigException,
      at('machine'),
      `${label} is ${node.type} and cannot delegate to a machine: only atomic states delegate.`,
      `Move 'machine' to an atomic state.`,
    );
    return null;
  }

  let valid = true;
  const problem = (key: string, message: string, fix?: string): void => {
    issues.add(InvalidStateConfigException, at(key), message, fix);
    valid = false;
  };

  const queue = config.queue;
  if (queue !== undefined && typeof queue !== 'boolean' && typeof queue !== 'string') {
    problem('queue', `${label} has invalid 'queue' value. Use true or a queue name.`);
  }
  const async = queue !== undefined && queue !== false;
  const mapInput = normalizeInput(config.input, label, problem, {
    machineId,
    route: node.route,
    child: child?.id ?? String(reference),
  });

  const doneKeys = [...node.on.keys()].filter((type) => type.startsWith('@done.'));
  const hasCatchAll = node.on.has('@done');
  const hasDone = hasCatchAll || doneKeys.length > 0;
  const fireAndForget = async && !hasDone;
  if (fireAndForget) {
    for (const key of ['@fail', '@timeout'] as const) {
      if (node.on.has(key)) {
        problem(
          key,
          `${label} has '${key}' without '@done'. Fire-and-forget machine delegation (queue without '@done') reports no outcome.`,
          `Add on: { '@done': ... } or remove '${key}'.`,
        );
      }
    }
    if (config.forward !== undefined) {
      problem(
        'forward',
        `${label} has 'forward' without '@done'. Fire-and-forget machine delegation does not support event forwarding.`,
        `Add on: { '@done': ... } or remove 'forward'.`,
      );
    }
  }
  if (!async) {
    if (config.forward !== undefined) {
      problem(
        'forward',
        `${label} has 'forward' without 'queue'. Event forwarding is only valid in async mode.`,
        `Add queue: true.`,
      );
    }
    if (node.on.has('@timeout')) {
      problem(
        '@timeout',
        `${label} has '@timeout' without 'queue': a synchronous child runs inside the parent's step and cannot time out.`,
        `Add queue: true or remove '@timeout'.`,
      );
    }
    if (!hasDone) {
      problem(
        'machine',
        `${label} delegates synchronously without '@done': nothing would ever leave it when the child finishes.`,
        `Add on: { '@done': ... }, or queue: true for fire-and-forget delegation.`,
      );
    }
  }

  const timeoutSeconds = async && !fireAndForget ? timeoutDelay(node, label, problem) : null;

  if (child !== null) checkFinalStateRouting(child, doneKeys, hasCatchAll, label, problem);
  if (!valid) return null;

  const childMachineId = child?.id ?? (reference as string);
  return Object.freeze({
    kind: 'machine',
    machine: child ?? (reference as string),
    childMachineId,
    async,
    queue: typeof queue === 'string' ? queue : null,
    fireAndForget,
    mapInput,
    timeoutSeconds,
    records: invocationRecords(machineId, childMachineId),
  });
}

/** The `@timeout` delay in seconds of an awaited asynchronous delegation, `null` without one. */
export function timeoutDelay(
  node: StateNode,
  label: string,
  problem: (key: string, message: string, fix?: string) => void,
): number | null {
  const timeout = node.on.get('@timeout');
  if (timeout === undefined) return null;
  const timers = timeout.branches.map((branch) => branch.timer);
  const first = timers.find((timer) => timer !== null) ?? null;
  if (first === null || first.kind !== 'after') {
    problem(
      '@timeout',
      `${label} has '@timeout' without a delay.`,
      `Use on: { '@timeout': { target: '...', after: { minutes: 5 } } }.`,
    );
    return null;
  }
  if (timers.some((timer) => timer !== null && timer.seconds !== first.seconds)) {
    problem(
      '@timeout',
      `${label} has '@timeout' branches with different 'after' delays.`,
      'Use one delay.',
    );
    return null;
  }
  return first.seconds;
}

/** `<m>.child.<name>.start|done|fail|timeout`. */
export function invocationRecords(machineId: string, name: string): InvocationRecordTypes {
  const prefix = `${machineId}.child.${name}`;
  return Object.freeze({
    start: `${prefix}.start`,
    done: `${prefix}.done`,
    fail: `${prefix}.fail`,
    timeout: `${prefix}.timeout`,
  });
}

/** The top-level final states of a machine: the ones whose entry finishes it. */
export function finalStateKeys(child: MachineDefinition): string[] {
  return child.root.children.filter((state) => state.type === 'final').map((state) => state.key);
}

function checkFinalStateRouting(
  child: MachineDefinition,
  doneKeys: readonly string[],
  hasCatchAll: boolean,
  label: string,
  problem: (key: string, message: string, fix?: string) => void,
): void {
  if (child.invalid) return;
  const finals = finalStateKeys(child);
  const routed = new Set<string>();
  for (const key of doneKeys) {
    const final = key.slice('@done.'.length);
    if (finals.includes(final)) {
      routed.add(final);
      continue;
    }
    problem(
      key,
      `${label} routes '${key}' but child machine '${child.id}' has no final state '${final}'` +
        (finals.length > 0
          ? ` (final states: ${finals.join(', ')}).`
          : ' (it has no top-level final state).'),
      finals.length > 0
        ? `Use one of: ${finals.map((name) => `'@done.${name}'`).join(', ')}.`
        : undefined,
    );
  }
  if (hasCatchAll || doneKeys.length === 0) return;
  const uncovered = finals.filter((final) => !routed.has(final));
  if (uncovered.length > 0) {
    problem(
      doneKeys[0] as string,
      `${label} has @done.{state} routing but child machine '${child.id}' has uncovered final states: ${uncovered.join(', ')}.`,
      `Add '@done' as a catch-all or route ${uncovered.map((name) => `'@done.${name}'`).join(', ')}.`,
    );
  }
}

/** The child's (or job's) input mapper of `input`: keys, a rename map or a function. */
export function normalizeInput(
  input: ChildInputConfig | undefined,
  label: string,
  problem: (key: string, message: string, fix?: string) => void,
  /**
   * The delegation of a child machine: a key list or map naming a key the parent's context
   * lacks then throws MachineInputValidationException (a job's input skips missing keys).
   */
  strict?: { machineId: string; route: string; child: string },
): ChildInputMapper {
  if (input === undefined) return EMPTY_INPUT;
  if (typeof input === 'function') {
    return (context, event) => {
      const result = input({ context, event });
      // A mapper returning the parent's own object would let the child share (and mutate) it.
      return isPlainObject(result) ? structuredClone(result) : {};
    };
  }
  if (Array.isArray(input)) {
    const keys = input as readonly unknown[];
    if (keys.every((key) => typeof key === 'string')) {
      const list = [...(keys as string[])];
      const pairs = list.map((key): [string, string] => [key, key]);
      return (context) => pick(context, pairs, strict);
    }
  } else if (isPlainObject(input) && Object.values(input).every((key) => typeof key === 'string')) {
    const pairs = Object.entries(input as Record<string, string>);
    return (context) => pick(context, pairs, strict);
  }
  problem(
    'input',
    `${label} has invalid 'input'. Use a list of context keys, a { childKey: 'parentKey' } map or a function ({ context, event }) => childContext.`,
  );
  return EMPTY_INPUT;
}

/** Copies `[childKey, parentKey]` pairs present in the parent context (deep copies, JSON-like). */
function pick(
  context: Context,
  pairs: readonly (readonly [string, string])[],
  strict?: { machineId: string; route: string; child: string },
): Context {
  const result: Context = {};
  for (const [childKey, parentKey] of pairs) {
    if (Object.hasOwn(context, parentKey)) result[childKey] = structuredClone(context[parentKey]);
    else if (strict !== undefined) {
      throw new MachineInputValidationException(
        `Machine '${strict.machineId}', state '${strict.route}': 'input' passes context key '${parentKey}' to child machine '${strict.child}', but the context has no '${parentKey}'. ` +
          `Set '${parentKey}' before the state is entered, or remove it from 'input'.`,
        { machine: strict.machineId, path: strict.route, key: parentKey },
      );
    }
  }
  return result;
}
