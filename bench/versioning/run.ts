/**
 * The version lookup of pinned machines over HTTP (docs/versioning.md "HTTP"):
 * `npx tsx bench/versioning/run.ts`. A machine that pins older versions reads the instance's
 * version before its route's handler runs (one store read more per request); this measures what
 * that read costs against the same machine without versions, in one process, one SQLite file,
 * one Fastify app answering `inject`ed requests (no sockets: the per-request work of the router
 * and the store only, so the ratio shows the lookup at its largest share).
 *
 * Scenarios, alternating in every round (ROUNDS rounds of REQUESTS sequential requests each):
 * - `plain event` / `pinned event (v2)` / `pinned event (v1)`: POST of a self-transition to an
 *   instance of the unversioned machine, of the pinned machine's newest version, of its pinned
 *   v1 (which runs v1's handler);
 * - `plain read` / `pinned read (v2)`: the zero-write GET of an instance.
 * Prints the median microseconds per request of each, and the ratios to the unversioned machine.
 *
 * Environment: BENCH_REQUESTS (per round, default 2000), BENCH_ROUNDS (default 7).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { defineMachine } from '../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const INSTANCES = 200;

/** A counter: TICK increments, in one state, forever. */
function counter(id: string, version?: string) {
  return {
    config: {
      id,
      ...(version === undefined ? {} : { version }),
      initial: 'counting',
      context: { count: 0 },
      states: { counting: { on: { TICK: { actions: 'tick' } } } },
    },
    behavior: {
      actions: {
        tick: ({ context }: { context: Record<string, unknown> }) => {
          context.count = Number(context.count) + 1;
        },
      },
    },
    endpoints: ['TICK'],
  };
}

const plain = defineMachine(counter('plain'));
const pinnedV1 = defineMachine(counter('pinned', 'v1'));
const pinnedV2 = defineMachine({
  ...counter('pinned', 'v2'),
  versioning: 'pin',
  previous: [pinnedV1],
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'machine-routes-bench-versioning-'));
  const startLoad = loadavg()[0]!;
  const runtime = await MachineRuntime.open({
    databaseUrl: `sqlite:${join(dir, 'versioning.db')}`,
    migrate: true,
    worker: false,
    machines: [plain, pinnedV2],
  });
  const app = Fastify({ logger: false });
  try {
    const router = new MachineRouter({ runtime });
    router.register(plain, { prefix: 'plain', machineIdFor: ['TICK'], reads: true });
    router.register(pinnedV2, { prefix: 'pinned', machineIdFor: ['TICK'], reads: true });
    await mountFastify(app, router);
    await app.ready();
    const ids = async (definition: typeof plain): Promise<string[]> => {
      const out: string[] = [];
      for (let i = 0; i < INSTANCES; i += 1)
        out.push((await runtime.create(definition)).snapshot.id);
      return out;
    };
    const scenarios: {
      label: string;
      method: 'POST' | 'GET';
      path: (id: string) => string;
      ids: string[];
    }[] = [
      {
        label: 'plain event',
        method: 'POST',
        path: (id) => `/plain/${id}/tick`,
        ids: await ids(plain),
      },
      {
        label: 'pinned event (v2)',
        method: 'POST',
        path: (id) => `/pinned/${id}/tick`,
        ids: await ids(pinnedV2),
      },
      {
        label: 'pinned event (v1)',
        method: 'POST',
        path: (id) => `/pinned/${id}/tick`,
        ids: await ids(pinnedV1),
      },
      { label: 'plain read', method: 'GET', path: (id) => `/plain/${id}/status`, ids: [] },
      { label: 'pinned read (v2)', method: 'GET', path: (id) => `/pinned/${id}/status`, ids: [] },
    ];
    scenarios[3]!.ids = scenarios[0]!.ids;
    scenarios[4]!.ids = scenarios[1]!.ids;
    const perRequest = new Map<string, number[]>(scenarios.map((s) => [s.label, []]));
    const run = async (scenario: (typeof scenarios)[number], count: number): Promise<number> => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < count; i += 1) {
        const id = scenario.ids[i % scenario.ids.length]!;
        const response = await app.inject({
          method: scenario.method,
          url: scenario.path(id),
          ...(scenario.method === 'POST' ? { payload: { payload: {} } } : {}),
        });
        if (response.statusCode !== 200)
          throw new Error(`${scenario.label}: ${response.statusCode} ${response.body}`);
      }
      return Number(process.hrtime.bigint() - started) / 1000 / count;
    };
    // Warm-up: every path compiled and every statement prepared.
    for (const scenario of scenarios) await run(scenario, 200);
    for (let round = 0; round < ROUNDS; round += 1) {
      // A different first scenario each round spreads the host's drift over all of them.
      for (let k = 0; k < scenarios.length; k += 1) {
        const scenario = scenarios[(round + k) % scenarios.length]!;
        perRequest.get(scenario.label)!.push(await run(scenario, REQUESTS));
      }
    }
    const medians = new Map([...perRequest].map(([label, values]) => [label, median(values)]));
    console.log(
      `version lookup: ${ROUNDS} rounds x ${REQUESTS} sequential inject requests, ${INSTANCES} instances each, SQLite file`,
    );
    for (const [label, values] of perRequest)
      console.log(
        `${label.padEnd(20)} median ${medians.get(label)!.toFixed(1)} us/request (rounds: ${values.map((v) => v.toFixed(0)).join(', ')})`,
      );
    const ratio = (a: string, b: string) => (medians.get(a)! / medians.get(b)!).toFixed(2);
    console.log(`pinned event (v2) / plain event: ${ratio('pinned event (v2)', 'plain event')}x`);
    console.log(`pinned event (v1) / plain event: ${ratio('pinned event (v1)', 'plain event')}x`);
    console.log(`pinned read (v2) / plain read: ${ratio('pinned read (v2)', 'plain read')}x`);
    console.log(
      `load average: ${startLoad.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`,
    );
  } finally {
    await app.close();
    await runtime.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
