/**
 * A runtime for tests of one's own machines: a real `MachineRuntime` on an in-memory or SQLite
 * file store, a virtual clock, and a job queue that runs only when the kit settles it. Every
 * call (`create`, `send`, `startAt`) settles what it caused before it returns (child starts,
 * completions, queued listeners, region jobs, sends between machines), and `advance('30d')`
 * moves the clock from one due time to the next, running each timer fire, schedule tick and
 * delayed job when it falls due, so the test's next line sees the result.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ManualClock } from '../runtime/clock.js';
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import type { TimerRegistration } from '../runtime/definition/timer-registration.js';
import type { Context, EventObject } from '../runtime/definition/types.js';
// The engine's public surface only (its barrel): its modules move, its exports stay.
import {
  MachineRuntime,
  sweepTimers,
  type ParallelDispatchSettings,
} from '../runtime/engine/index.js';
import type { HistoryRecord, MachineSnapshot } from '../runtime/interpreter/types.js';
import type { CreateOptions, InstanceResult, SendOptions } from '../runtime/persistence/types.js';
import { CoverageRecorder } from './coverage.js';
import { toMilliseconds, type Duration } from './duration.js';
import { UnsettledTimeException } from './errors.js';
import { Fakes } from './fakes.js';
import { writeInstanceAt, type StartAtOptions, type StateSelection } from './start-at.js';
import { TestJobQueue } from './test-queue.js';
import { nextDueTime } from './virtual-time.js';

/** Options of {@link createTestRuntime}. */
export interface TestRuntimeOptions {
  /** Machines the runtime runs (children by definition are found on their own). */
  machines?: readonly MachineDefinition[];
  /** Timer registrations (the config's `timers`): their timers and schedules fire on `advance`. */
  timers?: readonly TimerRegistration[];
  /**
   * `'memory'` (default), `'sqlite'` (a SQLite file in a temporary directory removed by
   * `close`), or `{ sqlite: path }` (a file of yours, kept).
   */
  store?: 'memory' | 'sqlite' | { sqlite: string };
  /** Where the virtual clock starts (default 2026-01-01T00:00:00Z, so runs are repeatable). */
  startTime?: Date | string | number;
  /** Play scenarios (`MACHINE_SCENARIOS_ENABLED`; default false). */
  scenarios?: boolean;
  /**
   * Parallel dispatch (docs/parallel-dispatch.md): `true`, or its settings; off by default. On,
   * entering a parallel state writes a region job per region with entry work, and the settle of
   * the call that entered it runs and merges them.
   */
  parallelDispatch?: boolean | Partial<ParallelDispatchSettings>;
  /** Extra attempts of a failed job (default 0: a job actor's first failure routes `@fail`). */
  jobRetries?: number;
  /**
   * Directory the transitions taken are written to on `close`, for `machine-routes coverage`
   * (default: the `MACHINE_ROUTES_COVERAGE` environment variable, else none).
   */
  coverageDir?: string;
}

/** What a settle or an advance ran. */
export interface SettleReport {
  /** Job attempts run (child starts and completions, job actors, listeners, region jobs, sends). */
  jobs: number;
  /** Timer fires and schedule ticks delivered. */
  fires: number;
}

/** An instance of a test runtime, with the runtime's calls bound to it. */
export interface TestInstance {
  readonly id: string;
  readonly definition: MachineDefinition;
  /** Sends an event (then settles); throws what `MachineRuntime.send` throws (422, 409, ...). */
  send(
    type: string,
    payload?: Record<string, unknown>,
    options?: SendOptions,
  ): Promise<InstanceResult>;
  /** The last committed snapshot. */
  snapshot(): Promise<MachineSnapshot>;
  /** Its active state ids (`['order.submitted']`). */
  state(): Promise<string[]>;
  /** Its persisted context. */
  context(): Promise<Context>;
  /** Its history, oldest first. */
  history(): Promise<HistoryRecord[]>;
}

/** Most settle rounds at one instant before the kit gives up (something re-arms itself forever). */
const MAX_ROUNDS = 10_000;

/**
 * A test runtime. `close()` it after each test (or file).
 *
 * @example
 * const t = await createTestRuntime({ machines: [orderMachine], timers: [{ machine: orderMachine }] });
 * const order = await t.create(orderMachine);
 * await order.send('SUBMIT', { amount: 500 });
 * await t.advance('15m');
 * expect(await order.state()).toEqual(['order.expired']);
 */
export async function createTestRuntime(options: TestRuntimeOptions = {}): Promise<TestRuntime> {
  const clock = new ManualClock(options.startTime ?? '2026-01-01T00:00:00.000Z');
  let directory: string | null = null;
  let databaseUrl = 'memory:';
  if (options.store === 'sqlite') {
    directory = mkdtempSync(path.join(tmpdir(), 'machine-routes-test-'));
    databaseUrl = `sqlite:${path.join(directory, 'store.db')}`;
  } else if (typeof options.store === 'object') {
    databaseUrl = `sqlite:${path.resolve(options.store.sqlite)}`;
  }
  const fakes = new Fakes();
  const definitions = new Map<string, MachineDefinition>();
  let opened: MachineRuntime | null = null;
  const queue = new TestJobQueue(
    {
      get store() {
        return opened!.store;
      },
      get engine() {
        return opened!.context;
      },
      fakes,
      now: () => clock.now(),
      definition: (id) => definitions.get(id),
    },
    { retries: options.jobRetries ?? 0 },
  );
  const timers = options.timers ?? [];
  try {
    opened = await MachineRuntime.open({
      databaseUrl,
      // The test's own settings only: a developer's MACHINE_* variables do not leak in.
      env: {},
      jobs: queue,
      worker: false,
      lockSweepIntervalMs: false,
      machines: [...(options.machines ?? []), ...timers.map((timer) => timer.machine)],
      clock,
      scenariosEnabled: options.scenarios === true,
      ...parallelDispatchOption(options.parallelDispatch),
    });
  } catch (error) {
    if (directory !== null) rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  await opened.ready();
  const coverageDir = options.coverageDir ?? process.env['MACHINE_ROUTES_COVERAGE'];
  const runtime = new TestRuntime({
    runtime: opened,
    clock,
    queue,
    fakes,
    definitions,
    timers,
    directory,
    coverageDir: coverageDir === '' ? undefined : coverageDir,
  });
  for (const definition of options.machines ?? []) runtime.know(definition);
  for (const timer of timers) runtime.know(timer.machine);
  return runtime;
}

/** See {@link createTestRuntime}. */
export class TestRuntime {
  /** The runtime under test (for calls the kit does not wrap: `read`, `children`, ...). */
  readonly runtime: MachineRuntime;
  /** The virtual clock: moved only by `advance` / `advanceTo`. */
  readonly clock: ManualClock;
  /** Fakes of job actors and child machines, and every job run and child start so far. */
  readonly fakes: Fakes;
  /** Transitions taken on this runtime (see `machine-routes coverage`). */
  readonly coverage: CoverageRecorder;
  readonly #queue: TestJobQueue;
  readonly #definitions: Map<string, MachineDefinition>;
  readonly #timers: readonly TimerRegistration[];
  readonly #directory: string | null;
  readonly #coverageDir: string | undefined;
  #failuresSeen = 0;

  /** @internal Made by {@link createTestRuntime}. */
  constructor(parts: {
    runtime: MachineRuntime;
    clock: ManualClock;
    queue: TestJobQueue;
    fakes: Fakes;
    definitions: Map<string, MachineDefinition>;
    timers: readonly TimerRegistration[];
    directory: string | null;
    coverageDir: string | undefined;
  }) {
    this.runtime = parts.runtime;
    this.clock = parts.clock;
    this.fakes = parts.fakes;
    this.#queue = parts.queue;
    this.#definitions = parts.definitions;
    this.#timers = parts.timers;
    this.#directory = parts.directory;
    this.#coverageDir = parts.coverageDir;
    this.coverage = new CoverageRecorder();
    this.runtime.onCommit((event) => {
      this.coverage.record(event);
      this.fakes.recordCommit(event, this.clock.now());
    });
  }

  /** The virtual time now. */
  get now(): Date {
    return this.clock.now();
  }

  /** Jobs waiting in the queue (not due yet, or faked to hang), in due order. */
  get pendingJobs(): readonly { name: string; runAt: Date }[] {
    return this.#queue.pending.map((job) => ({ name: job.name, runAt: job.runAt }));
  }

  /** @internal Makes `definition` and the children it names by definition known to the kit. */
  know(definition: MachineDefinition): void {
    if (this.#definitions.get(definition.id) === definition) return;
    this.#definitions.set(definition.id, definition);
    for (const node of definition.idMap.values()) {
      const child = node.invocation?.machine;
      if (child !== undefined && typeof child !== 'string') this.know(child);
    }
  }

  /** Creates an instance (as `POST .../create` does), then settles. */
  async create(definition: MachineDefinition, options: CreateOptions = {}): Promise<TestInstance> {
    this.know(definition);
    const result = await this.runtime.create(definition, options);
    await this.settle();
    return this.instance(definition, result.snapshot.id);
  }

  /**
   * Creates an instance already in `states` (a leaf path such as `'submitted'`, the leaves of a
   * parallel configuration, or a compound state entered through its initial states) with
   * `options.context` merged over the initial context. An impossible configuration throws
   * `ImpossibleConfigurationException`, a context the schema refuses
   * `InvalidTestContextException`. No entry action runs and nothing is started; the states'
   * timers count from now.
   */
  async startAt(
    definition: MachineDefinition,
    states: StateSelection,
    options: StartAtOptions = {},
  ): Promise<TestInstance> {
    this.know(definition);
    const result = await writeInstanceAt(
      this.runtime.context,
      definition,
      states,
      this.clock.now(),
      options,
    );
    this.coverage.record({
      instanceId: result.snapshot.id,
      machineId: definition.id,
      snapshot: result.snapshot,
      history: result.history,
    });
    return this.instance(definition, result.snapshot.id);
  }

  /** The instance `id` of `definition`, as a {@link TestInstance}. */
  instance(definition: MachineDefinition, id: string): TestInstance {
    this.know(definition);
    return {
      id,
      definition,
      send: (type, payload, options) =>
        this.send(definition, id, payload === undefined ? { type } : { type, payload }, options),
      snapshot: () => this.runtime.restore(definition, id),
      state: async () => (await this.runtime.restore(definition, id)).value,
      context: async () => (await this.runtime.restore(definition, id)).context,
      history: () => this.runtime.history(definition, id),
    };
  }

  /** Sends an event to an instance, then settles (see `MachineRuntime.send` for what it throws). */
  async send(
    definition: MachineDefinition,
    id: string,
    event: EventObject,
    options?: SendOptions,
  ): Promise<InstanceResult> {
    this.know(definition);
    try {
      const result = await this.runtime.send(definition, id, event, options);
      // Nothing is committed for such a machine: the commit listener never hears of the step.
      if (!definition.options.shouldPersist)
        this.coverage.record(
          { instanceId: id, machineId: definition.id, ...result },
          { kept: false },
        );
      return result;
    } finally {
      await this.settle();
    }
  }

  /**
   * Runs everything due now, and what that causes, until nothing is left at this instant: jobs
   * first, then a timer sweep, again while either did something. Throws the first timer
   * delivery or job failure it met (a behavior that threw), after settling.
   */
  async settle(): Promise<SettleReport> {
    const report: SettleReport = { jobs: 0, fires: 0 };
    const errors: unknown[] = [];
    for (let round = 0; ; round += 1) {
      if (round >= MAX_ROUNDS)
        throw new UnsettledTimeException(
          `The test runtime did not settle at ${this.clock.now().toISOString()} after ${MAX_ROUNDS} rounds: jobs or timer fires keep falling due at the same instant (pending: ${this.pendingJobs.map((job) => job.name).join(', ') || 'none'}).`,
        );
      const jobs = await this.#queue.runDue();
      const swept =
        this.#timers.length === 0
          ? { delivered: 0 }
          : await sweepTimers({
              context: this.runtime.context,
              registrations: this.#timers,
              clock: this.clock,
              onError: (error: unknown) => errors.push(error),
            });
      report.jobs += jobs;
      report.fires += swept.delivered;
      if (jobs === 0 && swept.delivered === 0) break;
    }
    const failures = this.#queue.failures.slice(this.#failuresSeen);
    this.#failuresSeen = this.#queue.failures.length;
    errors.push(...failures.map((failure) => failure.error));
    if (errors.length > 0) throw errors[0];
    return report;
  }

  /**
   * Moves the virtual clock forward by `duration` (`'30d'`, `'15m'`, `'1h30m'`, ms), stopping
   * at each time a timer, schedule or delayed job falls due to run it (in due order), then
   * settles at the end time.
   */
  async advance(duration: Duration): Promise<SettleReport> {
    return this.advanceTo(this.clock.now().getTime() + toMilliseconds(duration));
  }

  /** `advance` to a point in time (not before now). */
  async advanceTo(time: Date | string | number): Promise<SettleReport> {
    const target = new Date(time);
    const report = await this.settle();
    for (;;) {
      const next = await nextDueTime(
        this.runtime.store,
        this.#timers,
        this.#queue.pending,
        this.clock.now(),
        target,
      );
      if (next === null) break;
      this.clock.set(next);
      add(report, await this.settle());
    }
    if (target.getTime() > this.clock.now().getTime()) this.clock.set(target);
    add(report, await this.settle());
    return report;
  }

  /** Writes the coverage file (when a directory is set), closes the runtime and its store. */
  async close(): Promise<void> {
    try {
      if (this.#coverageDir !== undefined) this.coverage.writeTo(this.#coverageDir);
      await this.runtime.close();
    } finally {
      if (this.#directory !== null) rmSync(this.#directory, { recursive: true, force: true });
    }
  }
}

function parallelDispatchOption(option: TestRuntimeOptions['parallelDispatch']): {
  parallelDispatch?: Partial<ParallelDispatchSettings>;
} {
  if (option === undefined || option === false) return {};
  return { parallelDispatch: option === true ? { enabled: true } : option };
}

function add(total: SettleReport, more: SettleReport): void {
  total.jobs += more.jobs;
  total.fires += more.fires;
}
