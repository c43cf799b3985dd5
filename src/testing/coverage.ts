/**
 * What a test run exercised: every committed step of a test runtime is recorded as a
 * transition (the configuration before it, the event that caused it, the configuration after)
 * and the states it entered. `close()` writes them to the coverage directory, one JSON file per
 * runtime, and `machine-routes coverage` compares them with each machine's state graph (the
 * `paths` analysis).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { transitionKey, type RecordedCoverage } from '../generator/analysis/coverage.js';
import type { VisitedTransition } from '../generator/analysis/paths.js';
import type { CommitEvent } from '../runtime/engine/index.js';
import type { HistoryRecord } from '../runtime/interpreter/types.js';

/** One transition taken: configuration before (leaf ids), event type, configuration after. */
export type TakenTransition = VisitedTransition;

/** What one machine's instances did in a run (read by `machine-routes coverage`). */
export interface MachineCoverageData extends RecordedCoverage {
  transitions: TakenTransition[];
  states: string[];
}

/** The contents of one coverage file: per machine id. */
export interface CoverageFile {
  version: 1;
  machines: Record<string, MachineCoverageData>;
}

/** Records the transitions and states of committed steps. */
export class CoverageRecorder {
  readonly #last = new Map<string, string[]>();
  readonly #machines = new Map<
    string,
    { transitions: Map<string, TakenTransition>; states: Set<string> }
  >();

  /**
   * Records one instance's committed step. `kept: false`: a step of a machine with
   * `should_persist: false`, computed from the stored state and not written back, so the next
   * step starts where this one started.
   */
  record(
    event: Pick<CommitEvent, 'instanceId' | 'machineId' | 'snapshot' | 'history'>,
    options: { kept?: boolean } = {},
  ): void {
    const machine = this.#machine(event.machineId);
    for (const record of event.history) for (const leaf of record.value) machine.states.add(leaf);
    for (const leaf of event.snapshot.value) machine.states.add(leaf);
    const from = this.#last.get(event.instanceId);
    if (options.kept !== false) this.#last.set(event.instanceId, event.snapshot.value);
    const trigger = from === undefined ? undefined : triggerOf(event.history);
    if (from === undefined || trigger === undefined) return;
    const taken = { from, event: trigger, to: event.snapshot.value };
    machine.transitions.set(transitionKey(taken), taken);
  }

  /** The recorded data, per machine id. */
  data(): CoverageFile {
    const machines: Record<string, MachineCoverageData> = {};
    for (const [id, machine] of [...this.#machines].sort(([a], [b]) => a.localeCompare(b))) {
      machines[id] = {
        transitions: [...machine.transitions.values()],
        states: [...machine.states].sort(),
      };
    }
    return { version: 1, machines };
  }

  /** Writes {@link data} as a new file in `directory` (created when missing). */
  writeTo(directory: string): string {
    mkdirSync(directory, { recursive: true });
    const file = path.join(
      directory,
      `coverage-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.json`,
    );
    writeFileSync(file, `${JSON.stringify(this.data())}\n`);
    return file;
  }

  #machine(id: string): { transitions: Map<string, TakenTransition>; states: Set<string> } {
    let machine = this.#machines.get(id);
    if (machine === undefined) {
      machine = { transitions: new Map(), states: new Set() };
      this.#machines.set(id, machine);
    }
    return machine;
  }
}

// `<machine>.transition.<route>.<@event>.start`: the record of a delegation outcome's transition.
const OUTCOME = /^[^.]+\.transition\..+?\.(@.+)\.start$/;

/**
 * The event a committed step answered: its external event (an event sent, a timer fire), else
 * the delegation outcome whose transition it took (`@done`, `@done.<final>`, `@fail`, `@timeout`).
 */
function triggerOf(history: readonly HistoryRecord[]): string | undefined {
  const external = history.find((record) => record.source === 'external');
  if (external !== undefined) return external.type;
  for (const record of history) {
    const outcome = OUTCOME.exec(record.type);
    if (outcome !== null) return outcome[1];
  }
  return undefined;
}
