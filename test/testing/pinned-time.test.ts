/**
 * Virtual time and operator reads on an instance pinned to an older version
 * (docs/versioning.md "Pinned versions"): `sub` v1 renews every day, v2 (which pins v1) every
 * seven days in the same state. A v1 instance must run on v1's timer: `advance('5d')` fires it
 * five times (the newest definition's timer alone makes the clock skip to the end, where the
 * missed fires collapse into one), and `MachineOperations.show` lists v1's timer with its next
 * fire a day after the last one. In-memory test runtime and a SQLite file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineMachine } from '../../src/runtime/definition/define-machine.js';
import { MachineOperations } from '../../src/runtime/engine/operations/machine-operations.js';
import { createTestRuntime, type TestRuntime } from '../../src/testing/index.js';

function sub(version: string, days: number) {
  return {
    config: {
      id: 'sub',
      version,
      initial: 'active',
      context: { renewals: 0 },
      states: {
        active: {
          on: {
            RENEW: { target: null, every: { days }, actions: 'renew' },
            CANCEL: 'cancelled',
          },
        },
        cancelled: { type: 'final' as const },
      },
    },
    behavior: {
      actions: {
        renew: ({ context }: { context: Record<string, unknown> }) => {
          context.renewals = Number(context.renewals) + 1;
        },
      },
    },
  };
}

const subV1 = defineMachine(sub('v1', 1));
const subV2 = defineMachine({ ...sub('v2', 7), versioning: 'pin', previous: [subV1] });

let t: TestRuntime | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe.each([
  ['memory', {}],
  ['sqlite file', { store: 'sqlite' as const }],
])('a pinned instance on virtual time (%s)', (_name, store) => {
  it("should fire the pinned version's every-timer, not the newest one's", async () => {
    t = await createTestRuntime({ ...store, timers: [{ machine: subV2 }] });
    const old = (await t.runtime.create(subV1)).snapshot.id;
    const fresh = (await t.runtime.create(subV2)).snapshot.id;
    const renewals = async (id: string) =>
      (await t!.runtime.read(subV2, id)).snapshot.context['renewals'];

    await t.advance('5d');
    expect(await renewals(old)).toBe(5);
    expect(await renewals(fresh)).toBe(0);
    await t.advance('2d');
    expect(await renewals(old)).toBe(7);
    expect(await renewals(fresh)).toBe(1);
    expect((await t.runtime.read(subV2, old)).snapshot.version).toBe('v1');
  });

  it("should show the pinned version's timers in the operator's record", async () => {
    t = await createTestRuntime({ ...store, timers: [{ machine: subV2 }] });
    const old = (await t.runtime.create(subV1)).snapshot.id;
    const fresh = (await t.runtime.create(subV2)).snapshot.id;
    await t.advance('1d');
    const operations = new MachineOperations({
      runtime: t.runtime,
      machines: [subV2],
      timers: [{ machine: subV2 }],
      now: () => t!.clock.now(),
    });
    const day = 24 * 60 * 60 * 1000;
    const dueIn = async (id: string) => {
      const [timer] = (await operations.show('sub', id)).timers;
      return Date.parse(timer!.dueAt!) - t!.clock.now().getTime();
    };
    expect(await dueIn(old)).toBe(day);
    expect(await dueIn(fresh)).toBe(6 * day);
  });
});
