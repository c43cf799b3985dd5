/**
 * `MachineOperations`: what an operator does with instances, without SQL (docs/operations.md).
 * The same calls back the `machine-routes instances` commands and the admin routes.
 */
import { InvalidOperationQueryException } from '../../errors.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { TimerRegistration } from '../../definition/timer-registration.js';
import type { HistoryRecord } from '../../interpreter/types.js';
import type { InstanceSummary } from '../../persistence/instance-queries.js';
import type { EventObject } from '../../definition/types.js';
import type { InstanceResult } from '../../persistence/types.js';
import type { MachineRuntime } from '../machine-runtime.js';
import {
  releaseLock,
  sendAsOperator,
  type FiredTimer,
  type OperatorOptions,
  type ReleasedLock,
  type RetriedJobs,
} from './repairs.js';
import { fireTimer, pause, resume, retryJobs } from './job-timer-repairs.js';
import { operatorStep, type OperatorStepResult } from './operator-steps.js';
import { checkedOperatorEvent } from './operator-payload.js';
import {
  historyPage,
  instanceRecord,
  listInstances,
  type HistoryPageOptions,
  type InstanceListOptions,
  type InstanceReadContext,
  type InstanceRecord,
  type Page,
} from './instance-reads.js';

/** Options of `new MachineOperations`. */
export interface MachineOperationsOptions {
  runtime: MachineRuntime;
  /** The machines it answers for (children included), by definition id. */
  machines: readonly MachineDefinition[];
  /** The runtime's timer registrations: which timers fire, for `show`'s pending timers. */
  timers?: readonly TimerRegistration[];
  /** Clock of lock expiry and timer views (default: the system clock). */
  now?: () => Date;
  /**
   * The event `cancel` sends, per machine id (`{ order: 'CANCEL' }`). A machine without one
   * refuses `cancel` unless the call names its event.
   */
  cancelEvents?: Readonly<Record<string, string>>;
}

/** Find, inspect and repair the instances of a runtime's machines. */
export class MachineOperations {
  readonly #machines: ReadonlyMap<string, MachineDefinition>;
  readonly #reads: InstanceReadContext;
  readonly #runtime: MachineRuntime;
  readonly #cancelEvents: Readonly<Record<string, string>>;
  readonly #timers: readonly TimerRegistration[];

  constructor(options: MachineOperationsOptions) {
    this.#machines = new Map(options.machines.map((machine) => [machine.id, machine]));
    const { runtime } = options;
    this.#runtime = runtime;
    this.#cancelEvents = options.cancelEvents ?? {};
    this.#timers = options.timers ?? [];
    this.#reads = {
      store: runtime.store,
      machine: (machineId) => this.machine(machineId),
      timers: options.timers ?? [],
      failedJobs: () => runtime.context.jobs.failedJobs(),
      now: options.now ?? (() => new Date()),
    };
  }

  /** The definition of `machineId`; `InvalidOperationQueryException` naming the known ones. */
  machine(machineId: string): MachineDefinition {
    const found = this.#machines.get(machineId);
    if (found !== undefined) return found;
    throw new InvalidOperationQueryException(
      `Unknown machine '${machineId}': operations know ${[...this.#machines.keys()].sort().join(', ')}.`,
      { machine: machineId, key: 'machine' },
    );
  }

  /** One page of the instances of `machineId` (see `InstanceListOptions` for order and filters). */
  list(machineId: string, options: InstanceListOptions = {}): Promise<Page<InstanceSummary>> {
    return listInstances(this.#reads, machineId, options);
  }

  /** Everything about one instance: state, context, lock, children, timers, scenario, failed jobs. */
  show(machineId: string, id: string): Promise<InstanceRecord> {
    return instanceRecord(this.#reads, machineId, id);
  }

  /** One page of an instance's history, as a timeline. */
  history(
    machineId: string,
    id: string,
    options: HistoryPageOptions = {},
  ): Promise<Page<HistoryRecord>> {
    return historyPage(this.#reads, machineId, id, options);
  }

  /**
   * Sends any event of the machine (endpoint or not: an operator-only event) to instance `id`,
   * through the runtime's locked step, waiting for a step in flight; its history names the
   * operator. The payload is checked against the event's schema first, as its endpoint would
   * check it (`MachineValidationException`, 422, nothing sent), and sent as the schema parses it.
   */
  async send(
    machineId: string,
    id: string,
    event: Omit<EventObject, 'actor'>,
    options: OperatorOptions,
  ): Promise<InstanceResult> {
    const definition = this.machine(machineId);
    const checked = await checkedOperatorEvent(definition, event);
    return sendAsOperator(this.#runtime, definition, id, checked, options);
  }

  /**
   * Cancels instance `id`: sends `options.event`, else the machine's configured cancel event
   * (`cancelEvents`), as `send` does. `InvalidOperationQueryException` when there is neither.
   */
  async cancel(
    machineId: string,
    id: string,
    options: OperatorOptions & { event?: string },
  ): Promise<InstanceResult> {
    const type = options.event ?? this.#cancelEvents[machineId];
    if (type === undefined) {
      throw new InvalidOperationQueryException(
        `Machine '${machineId}' has no cancel event: configure one in cancelEvents ({ ${machineId}: 'CANCEL' }) or pass the event to send.`,
        { machine: machineId, key: 'cancelEvents' },
      );
    }
    return this.send(machineId, id, { type }, options);
  }

  /**
   * Frees the lock of instance `id` when it is expired or its holder is dead, then records
   * `@operator.release` (the freed row) in its history through the locked step.
   */
  async releaseLock(
    machineId: string,
    id: string,
    options: OperatorOptions,
  ): Promise<ReleasedLock> {
    const definition = this.machine(machineId);
    await this.show(machineId, id);
    const released = await releaseLock(this.#runtime, id, options);
    if (released.released !== null) {
      await operatorStep(
        this.#runtime,
        definition,
        id,
        { action: 'release', payload: { lock: released.released } },
        options,
      );
    }
    return released;
  }

  /**
   * Pauses instance `id`: from its commit on, it refuses events (`InstancePausedException`, 409)
   * and fires no timers, until `resume`. Pausing a paused instance writes nothing.
   */
  pause(machineId: string, id: string, options: OperatorOptions): Promise<OperatorStepResult> {
    return pause(this.#runtime, this.machine(machineId), id, options);
  }

  /** Resumes a paused instance; its due timers fire at the next sweep. */
  resume(machineId: string, id: string, options: OperatorOptions): Promise<OperatorStepResult> {
    return resume(this.#runtime, this.machine(machineId), id, options);
  }

  /**
   * Puts the instance's failed jobs (child starts, completions, sends, job actors) back in the
   * queue with one more attempt: `jobId` only, else every failed job naming the instance.
   */
  async retry(
    machineId: string,
    id: string,
    options: OperatorOptions & { jobId?: string },
  ): Promise<RetriedJobs> {
    const record = await this.show(machineId, id);
    return retryJobs(this.#runtime, this.machine(machineId), record, options);
  }

  /**
   * Fires a pending timer of instance `id` now (`timer`: its key; optional when it has one
   * pending), through the timer path: its event and fire record as at its due time.
   */
  async fire(
    machineId: string,
    id: string,
    options: OperatorOptions & { timer?: string },
  ): Promise<FiredTimer> {
    const record = await this.show(machineId, id);
    const registration = this.#timers.find((entry) => entry.machine.id === machineId);
    return fireTimer(this.#runtime, registration, record, options);
  }
}
