/**
 * Interpreter benchmark: machine-routes vs XState v5 on the same machine (machines.ts).
 *
 *   (a) transitions per second on one instance (the event cycle, repeated)
 *   (b) create + one event + snapshot per second
 *
 * Run: npx tsx bench/interpreter/run.ts. Each case warms up, then runs ROUNDS timed rounds of
 * about ROUND_MS each per library, alternating; the median rate is reported. machine-routes' figures include writing the
 * full history records of every event, which XState does not do.
 */
import { createActor } from 'xstate';
import { initialize, transition, type MachineSnapshot } from '../../src/runtime/index.js';
import { CYCLE, machineRoutesMachine, xstateMachine } from './machines.js';

const ROUNDS = 7;
const ROUND_MS = 400;
const WARMUP_MS = 800;

/** Runs `batch` (which does `size` operations) for about `ms`; returns operations per second. */
function measure(batch: () => void, size: number, ms: number): number {
  let operations = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    batch();
    operations += size;
    elapsed = performance.now() - start;
  }
  return (operations / elapsed) * 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/**
 * Measures both libraries round by round, alternating, so a noisy machine (shared CI cores)
 * slows both alike; prints each median and returns them.
 */
function compare(ours: () => void, theirs: () => void, size: number): [number, number] {
  measure(ours, size, WARMUP_MS);
  measure(theirs, size, WARMUP_MS);
  const oursRates: number[] = [];
  const theirRates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    oursRates.push(measure(ours, size, ROUND_MS));
    theirRates.push(measure(theirs, size, ROUND_MS));
  }
  const result: [number, number] = [median(oursRates), median(theirRates)];
  for (const [name, rates, value] of [
    ['machine-routes', oursRates, result[0]],
    ['xstate', theirRates, result[1]],
  ] as const) {
    const perRound = rates.map((rate) => Math.round(rate / 1000)).join(', ');
    console.log(
      `  ${name.padEnd(16)} median ${Math.round(value).toLocaleString('en-US').padStart(12)} ops/s  (rounds: ${perRound} k)`,
    );
  }
  console.log(`  ratio machine-routes / xstate: ${(result[0] / result[1]).toFixed(2)}x`);
  return result;
}

const events = CYCLE.map((type) => ({ type }));
const BATCH = 1000;

function transitionsCase(): [number, number] {
  let snapshot: MachineSnapshot = initialize(machineRoutesMachine).snapshot;
  let index = 0;
  const actor = createActor(xstateMachine).start();
  let xIndex = 0;
  return compare(
    () => {
      for (let i = 0; i < BATCH; i++) {
        snapshot = transition(
          machineRoutesMachine,
          snapshot,
          events[index] as { type: string },
        ).snapshot;
        index = index === events.length - 1 ? 0 : index + 1;
      }
    },
    () => {
      for (let i = 0; i < BATCH; i++) {
        actor.send(events[xIndex] as { type: string });
        xIndex = xIndex === events.length - 1 ? 0 : xIndex + 1;
      }
    },
    BATCH,
  );
}

function createCase(): [number, number] {
  const first = events[0] as { type: string };
  const kept: unknown[] = [];
  return compare(
    () => {
      for (let i = 0; i < 100; i++) {
        const started = initialize(machineRoutesMachine).snapshot;
        kept[i] = transition(machineRoutesMachine, started, first).snapshot;
      }
    },
    () => {
      for (let i = 0; i < 100; i++) {
        const actor = createActor(xstateMachine).start();
        actor.send(first);
        kept[i] = actor.getSnapshot();
      }
    },
    100,
  );
}

/** Both implementations must agree on the context after every event, or the comparison is moot. */
function checkSameSemantics(): void {
  let snapshot = initialize(machineRoutesMachine).snapshot;
  const actor = createActor(xstateMachine).start();
  for (const event of [...events, ...events]) {
    snapshot = transition(machineRoutesMachine, snapshot, event).snapshot;
    actor.send(event);
    if (JSON.stringify(snapshot.context) !== JSON.stringify(actor.getSnapshot().context)) {
      throw new Error(
        `Implementations diverge after ${event.type}: ${JSON.stringify(snapshot.context)} vs ${JSON.stringify(actor.getSnapshot().context)}`,
      );
    }
  }
}

checkSameSemantics();
console.log(
  `node ${process.version}, ${ROUNDS} rounds of ${ROUND_MS} ms after ${WARMUP_MS} ms warm-up\n`,
);
console.log('(a) transitions/s, one instance, cycle ' + CYCLE.join(' -> '));
transitionsCase();
console.log('\n(b) create + one event + snapshot per second');
createCase();
