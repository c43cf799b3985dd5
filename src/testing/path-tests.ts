/**
 * Generated path tests: one test per path of the machine's state graph (the paths
 * `machine-routes paths` lists, up to a bound), each run on a fresh test runtime against the
 * real behaviors. A path is driven event by event: a client event is sent (with the payload
 * the options give for it, else one made from its payload schema, under the scenario the
 * options name for it), a timer event is reached by advancing the clock by its duration,
 * a delegation outcome (`@done`, `@done.<final>`, `@fail`, `@timeout`) is produced by a fake of
 * the state's job or asynchronous child; after each step the configuration must be the
 * path's. A path the kit cannot drive (a synchronous child's outcome, a schedule) is listed
 * with the reason, never dropped.
 */
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import type { StateNode } from '../runtime/definition/state-node.js';
import { timedTransitions } from '../runtime/definition/timed-transitions.js';
import type { Context } from '../runtime/definition/types.js';
import { enumeratePaths, formatPath, type MachinePath } from '../generator/analysis/paths.js';
import { buildStateGraph } from '../generator/analysis/state-graph.js';
import { schemaPayload } from './schema-payload.js';
import { hang, reject, resolve, type FakeOutcome } from './fakes.js';
import { createTestRuntime, type TestRuntimeOptions } from './test-runtime.js';

/** Options of {@link generatePathTests}. */
export interface PathTestOptions {
  /**
   * Payload of each client event (a function gets the instance's context). An event left out
   * is sent with a payload made from its schema (its examples, else the smallest valid value),
   * or without one when it has no schema.
   */
  payloads?: Readonly<
    Record<string, Record<string, unknown> | ((context: Context) => Record<string, unknown>)>
  >;
  /**
   * A scenario (its slug) to play when a client event is sent: its plan's guard overrides let
   * the path pass a guard no payload satisfies (an external check), its `children` outcomes
   * answer the jobs it starts. The test runtime plays scenarios when this is given.
   */
  scenarios?: Readonly<Record<string, string>>;
  /** Output of each job (by name) or child machine (by id) whose `@done` a path takes (default `{}`). */
  outputs?: Readonly<Record<string, unknown>>;
  /** Context the instance is created with (over the initial context). */
  context?: Context;
  /** Most paths (default 100). */
  maxPaths?: number;
  /** Other machines the runtime needs (children by id, `sendTo` targets). */
  machines?: readonly MachineDefinition[];
  /** Store of each path's runtime (default `'memory'`). */
  store?: TestRuntimeOptions['store'];
}

/** One generated test: `run` rejects when the path does not go as the graph says. */
export interface PathTest {
  /** The path as `machine-routes paths` prints it. */
  name: string;
  path: MachinePath;
  run(): Promise<void>;
}

/** The generated tests, and the paths that cannot be driven with why. */
export interface PathTests {
  tests: PathTest[];
  undriven: { name: string; reason: string }[];
  /** More paths exist than `maxPaths`. */
  truncated: boolean;
}

/**
 * The path tests of `definition`. Register them with your runner:
 *
 * @example
 * const { tests, undriven } = generatePathTests(orderMachine, { payloads: { SUBMIT: { amount: 500 } } });
 * for (const test of tests) it(test.name, test.run);
 * it('drives every path', () => expect(undriven).toEqual([]));
 */
export function generatePathTests(
  definition: MachineDefinition,
  options: PathTestOptions = {},
): PathTests {
  const report = enumeratePaths(buildStateGraph(definition), options.maxPaths ?? 100);
  const result: PathTests = { tests: [], undriven: [], truncated: report.truncated };
  const payloads = new PayloadSource(definition, options);
  for (const path of report.paths) {
    const name = formatPath(path);
    const reason = undrivable(definition, path, payloads);
    if (reason !== null) result.undriven.push({ name, reason });
    else result.tests.push({ name, path, run: () => drive(definition, path, options, payloads) });
  }
  return result;
}

/** The payload of each client event: the options' own, else one made once from its schema. */
class PayloadSource {
  readonly #made = new Map<string, ReturnType<typeof schemaPayload>>();

  constructor(
    private readonly definition: MachineDefinition,
    private readonly options: PathTestOptions,
  ) {}

  /** Why `event` has no payload to send, or `null`. */
  missing(event: string): string | null {
    if (this.options.payloads?.[event] !== undefined) return null;
    const made = this.#schema(event);
    return made.kind === 'none' ? made.reason : null;
  }

  async payload(event: string, context: () => Promise<Context>) {
    const given = this.options.payloads?.[event];
    if (typeof given === 'function') return given(await context());
    if (given !== undefined) return given;
    const made = this.#schema(event);
    return made.kind === 'payload' ? made.payload : undefined;
  }

  #schema(event: string): ReturnType<typeof schemaPayload> {
    let made = this.#made.get(event);
    if (made === undefined) {
      made = schemaPayload(this.definition.events.get(event)?.payload);
      this.#made.set(event, made);
    }
    return made;
  }
}

/** Why a path cannot be driven, or `null`. */
function undrivable(
  definition: MachineDefinition,
  path: MachinePath,
  payloads: PayloadSource,
): string | null {
  for (const [index, event] of path.events.entries()) {
    const leaves = path.states[index]!.map((id) => definition.idMap.get(id)!);
    if (event.startsWith('@')) {
      const node = delegatingLeaf(leaves);
      if (node === null) return `step ${index + 1} (${event}) has no delegating state to answer it`;
      if (node.invocation!.kind === 'machine' && !node.invocation!.async)
        return `step ${index + 1} (${event}): '${node.route}' runs a synchronous child inside its parent's step, which no fake can answer`;
    } else {
      const timer = timerOf(definition, leaves, event);
      if (timer !== null && timer.timer.kind === 'cron')
        return `step ${index + 1} (${event}) is a schedule tick; advance the clock to its tick in a test of your own`;
      const missing = timer === null ? payloads.missing(event) : null;
      if (missing !== null)
        return `step ${index + 1} (${event}) needs a payload the kit cannot make from its schema (${missing}); give it in payloads.${event}`;
    }
  }
  return null;
}

async function drive(
  definition: MachineDefinition,
  path: MachinePath,
  options: PathTestOptions,
  payloads: PayloadSource,
): Promise<void> {
  const timers = timedTransitions(definition).length > 0 ? [{ machine: definition }] : [];
  const t = await createTestRuntime({
    machines: [definition, ...(options.machines ?? [])],
    timers,
    scenarios: options.scenarios !== undefined,
    ...(options.store === undefined ? {} : { store: options.store }),
  });
  try {
    // A job or child answers when its state is entered, inside the settle of the step that
    // entered it: every fake of the path is in place before the first step.
    for (const [name, fake] of fakesOf(definition, path, options)) {
      if (fake.kind === 'job') t.fakes.job(name, fake.outcome);
      else t.fakes.child(name, fake.outcome);
    }
    const instance = await t.create(
      definition,
      options.context === undefined ? {} : { input: options.context },
    );
    await expectState(path, 0, instance.state);
    for (const [index, event] of path.events.entries()) {
      const leaves = path.states[index]!.map((id) => definition.idMap.get(id)!);
      const timer = timerOf(definition, leaves, event);
      if (event === '@timeout') {
        await t.advance((delegatingLeaf(leaves)!.invocation!.timeoutSeconds ?? 0) * 1000);
      } else if (event.startsWith('@')) {
        // `@done` / `@fail`: the fake answered when the state was entered.
      } else if (timer !== null && timer.timer.kind !== 'cron') {
        await t.advance(timer.timer.seconds * 1000);
      } else {
        const slug = options.scenarios?.[event];
        await instance.send(
          event,
          await payloads.payload(event, instance.context),
          slug === undefined ? undefined : { scenario: { kind: 'play', slug, params: {} } },
        );
      }
      await expectState(path, index + 1, instance.state);
    }
  } finally {
    await t.close();
  }
}

/** The fake of each job and child of the path, by name, answering the event the path takes there. */
function fakesOf(
  definition: MachineDefinition,
  path: MachinePath,
  options: PathTestOptions,
): Map<string, { kind: 'job' | 'child'; outcome: FakeOutcome }> {
  const fakes = new Map<string, { kind: 'job' | 'child'; outcome: FakeOutcome }>();
  path.states.forEach((state, index) => {
    const node = delegatingLeaf(state.map((id) => definition.idMap.get(id)!));
    if (node === null) return;
    const invocation = node.invocation!;
    const next = path.events[index] ?? '';
    const name = invocation.kind === 'job' ? invocation.name : invocation.childMachineId;
    const output = options.outputs?.[name] ?? {};
    let outcome: FakeOutcome;
    if (next === '@fail') outcome = reject(`generated path test: @fail of '${node.route}'`);
    else if (next.startsWith('@done') && invocation.kind === 'job') outcome = resolve(output);
    else if (next.startsWith('@done')) {
      const final = next.startsWith('@done.') ? next.slice('@done.'.length) : unhandledFinal(node);
      outcome = resolve(output, final === null ? {} : { final });
    } else outcome = hang();
    fakes.set(name, { kind: invocation.kind === 'job' ? 'job' : 'child', outcome });
  });
  return fakes;
}

/** A final state of the child that no `@done.<final>` of the state handles (so plain `@done` routes). */
function unhandledFinal(node: StateNode): string | null {
  const invocation = node.invocation!;
  const child =
    invocation.kind === 'machine' && typeof invocation.machine !== 'string'
      ? invocation.machine
      : null;
  if (child === null) return null;
  const final = child.root.children.find(
    (state) => state.type === 'final' && !node.handlers.has(`@done.${state.key}`),
  );
  return final?.key ?? null;
}

function delegatingLeaf(leaves: readonly StateNode[]): StateNode | null {
  return leaves.find((leaf) => leaf.invocation !== null) ?? null;
}

function timerOf(definition: MachineDefinition, leaves: readonly StateNode[], event: string) {
  const active = new Set(leaves.flatMap((leaf) => leaf.ancestors.map((node) => node.id)));
  return (
    timedTransitions(definition).find(
      (timer) => timer.eventType === event && active.has(timer.stateId),
    ) ?? null
  );
}

/**
 * Checks the configuration after step `index`, unless the path leaves it by a delegation
 * outcome: that ran in the same settle, the configuration is gone by now.
 */
async function expectState(
  path: MachinePath,
  index: number,
  state: () => Promise<string[]>,
): Promise<void> {
  const next = path.events[index];
  if (next !== undefined && next !== '@timeout' && next.startsWith('@')) return;
  const actual = await state();
  const expected = path.states[index]!;
  if (actual.join(',') === expected.join(',')) return;
  const step = index === 0 ? 'after create' : `after step ${index} (${path.events[index - 1]})`;
  throw new Error(
    `Path ${formatPath(path)}: ${step} the instance is in ${actual.join(' + ')}, the path expects ${expected.join(' + ')}. ` +
      `A guard that did not pass? Give the event a payload (payloads) or the instance a context (context) that satisfies it.`,
  );
}
