/**
 * Table-driven transition assertions: each row starts a fresh instance in a state with a
 * context, sends one event with its payload, and states what must follow: the state, the
 * context values, the output, or the refusal (a 422 validation message, an event the state
 * does not accept). Every row runs; the failure lists each failing row with the history of its
 * step, so a wrong guard or action shows where it went. No assertion library: it throws.
 */
import { isDeepStrictEqual } from 'node:util';
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import type { Context } from '../runtime/definition/types.js';
import { resolveOutput } from '../runtime/interpreter/output.js';
import type { HistoryRecord, MachineSnapshot } from '../runtime/interpreter/types.js';
import { TransitionTableFailure } from './errors.js';
import { resolveConfiguration, type StateSelection } from './start-at.js';
import type { TestRuntime } from './test-runtime.js';

/** One row: from `from` (with `context`), `event` (with `payload`) gives what the rest says. */
export interface TransitionRow {
  /** Shown in the failure (default: `from --event-->`). */
  name?: string;
  /** Where the instance starts (see `startAt`). */
  from: StateSelection;
  /** Context values it starts with, over the initial context. */
  context?: Context;
  event: string;
  payload?: Record<string, unknown>;
  /** The state after the event (leaf path(s), checked as `startAt` reads them). */
  to?: StateSelection;
  /** Context values after the event (only these keys are compared). */
  patch?: Context;
  /** The answer's `output` (the event's endpoint output, else the state's, else the context). */
  output?: unknown;
  /** The event is refused with this message (a validation guard's 422, an unhandled event). */
  rejects?: string | RegExp;
}

/** What each row did, in order (also when every row held). */
export interface TransitionRowResult {
  row: TransitionRow;
  problems: string[];
  history: HistoryRecord[];
}

/**
 * Runs every row of `rows` on `runtime` and throws `TransitionTableFailure` naming each
 * failing row, its problems and its step's history. Returns the results when all held.
 *
 * @example
 * await assertTransitions(t, orderMachine, [
 *   { from: 'draft', event: 'SUBMIT', payload: { amount: 500 }, to: 'submitted', patch: { total: 500 } },
 *   { from: 'submitted', context: { total: 20_000 }, event: 'APPROVE', rejects: 'Orders over 10000 need a manual approval.' },
 * ]);
 */
export async function assertTransitions(
  runtime: TestRuntime,
  definition: MachineDefinition,
  rows: readonly TransitionRow[],
): Promise<TransitionRowResult[]> {
  const results: TransitionRowResult[] = [];
  for (const row of rows) results.push(await runRow(runtime, definition, row));
  const failed = results
    .map((result, index) => ({ result, index }))
    .filter(({ result }) => result.problems.length > 0);
  if (failed.length > 0) {
    throw new TransitionTableFailure(
      `${failed.length} of ${rows.length} transition rows of '${definition.id}' failed:\n\n` +
        failed.map(({ result, index }) => describeFailure(index, result)).join('\n\n'),
      { machine: definition.id },
    );
  }
  return results;
}

async function runRow(
  runtime: TestRuntime,
  definition: MachineDefinition,
  row: TransitionRow,
): Promise<TransitionRowResult> {
  const problems: string[] = [];
  const instance = await runtime.startAt(
    definition,
    row.from,
    row.context === undefined ? {} : { context: row.context },
  );
  let refusal: Error | null = null;
  let answered: MachineSnapshot | null = null;
  try {
    answered = (await instance.send(row.event, row.payload)).snapshot;
  } catch (error) {
    refusal = error instanceof Error ? error : new Error(String(error));
  }
  const history = (await instance.history()).slice(1);
  // The answer's snapshot: a machine with `should_persist: false` keeps none.
  const snapshot = answered ?? (await instance.snapshot());
  if (row.rejects !== undefined) {
    if (refusal === null)
      problems.push(`expected the event to be refused (${String(row.rejects)}), it was accepted`);
    else if (!matchesMessage(refusal.message, row.rejects))
      problems.push(
        `expected refusal ${String(row.rejects)}, got ${refusal.name}: ${refusal.message}`,
      );
  } else if (refusal !== null) {
    problems.push(`the event was refused: ${refusal.name}: ${refusal.message}`);
  }
  if (row.to !== undefined) {
    const expected = resolveConfiguration(definition, row.to);
    if (!isDeepStrictEqual(snapshot.value, expected))
      problems.push(`state: expected ${expected.join(' + ')}, got ${snapshot.value.join(' + ')}`);
  }
  if (row.patch !== undefined) {
    for (const [key, value] of Object.entries(row.patch)) {
      if (!isDeepStrictEqual(snapshot.context[key], value))
        problems.push(
          `context.${key}: expected ${show(value)}, got ${show(snapshot.context[key])}`,
        );
    }
  }
  if (row.output !== undefined) {
    const endpoint = definition.endpoints.find((entry) => entry.eventType === row.event);
    const output = resolveOutput(definition, snapshot, endpoint?.output ?? null);
    if (!isDeepStrictEqual(output, row.output))
      problems.push(`output: expected ${show(row.output)}, got ${show(output)}`);
  }
  return { row, problems, history };
}

function matchesMessage(message: string, expected: string | RegExp): boolean {
  return typeof expected === 'string' ? message.includes(expected) : expected.test(message);
}

function describeFailure(index: number, { row, problems, history }: TransitionRowResult): string {
  const from = typeof row.from === 'string' ? row.from : row.from.join(' + ');
  const name = row.name ?? `${from} --${row.event}-->`;
  const lines = [`row ${index + 1}: ${name}`, ...problems.map((problem) => `  ✗ ${problem}`)];
  lines.push('  history of the step:');
  if (history.length === 0) lines.push('    (nothing recorded)');
  for (const record of history) {
    const payload = record.payload === null ? '' : ` ${show(record.payload)}`;
    lines.push(`    ${record.sequence}. ${record.type}${payload} [${record.value.join(', ')}]`);
  }
  return lines.join('\n');
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}
