/**
 * A `machine-routes worker` process SIGKILLed inside a child start job, default job settings
 * (timeout 300 s, poll every 1 s): another worker, already running, runs the job again within
 * seconds of the kill, not after the timeout nor at pg-boss's maintenance pass (docs/
 * persistence.md "Dead holders"). Before the kill the worker is stopped (SIGSTOP) for 3 s: alive
 * but starved, its job is not run a second time meanwhile. On a SQLite file and on PostgreSQL.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/index.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { queueBackends } from '../../support/queue-backends.js';
import { onboardingMachine } from './fixtures/machines.js';

const CLI = fileURLToPath(new URL('./fixtures/cli.ts', import.meta.url));
const CONFIG = fileURLToPath(new URL('./fixtures/machine-routes.config.ts', import.meta.url));
const KILLS = 3;
/** The bounds of the issue: 2 s on SQLite, 5 s on PostgreSQL, from the kill to the job's end. */
const BOUND_MS: Record<string, number> = { 'sqlite file': 2_000, postgres: 5_000 };

const backends = await queueBackends('delegation/dead-worker');

describe.each(backends)('a worker killed mid-job on $name, default job settings', (backend) => {
  let url: string;
  let producer: MachineRuntime;
  const processes: FixtureProcess[] = [];

  const worker = async (env: Record<string, string>): Promise<FixtureProcess> => {
    const started = startFixture(CLI, ['worker', '--config', CONFIG, '--database', url], env);
    processes.push(started);
    await started.waitForLine((line) => line.startsWith('Worker running'), 60_000);
    return started;
  };
  const at = async (id: string) => (await producer.restore(onboardingMachine, id)).value;

  beforeAll(async () => {
    url = await backend.setUp();
    producer = await MachineRuntime.open({ databaseUrl: url, worker: false });
  }, 60_000);
  afterAll(async () => {
    for (const started of processes) started.child.kill('SIGKILL');
    await Promise.all(processes.map((started) => started.exited));
    await producer?.close();
    await backend.tearDown();
  });

  it("should run a dead worker's job again within seconds, and not while the worker lives", async () => {
    const recoveries: number[] = [];
    for (let kill = 0; kill < KILLS; kill += 1) {
      const doomed = await worker({ MR_TEST_BLOCK_CHILD_ENTRY: '1' });
      const { snapshot } = await producer.create(onboardingMachine);
      await doomed.waitForLine((line) => line.startsWith('CHILD_ENTRY '), 60_000);
      const survivor = await worker({});

      // Alive but starved: the job stays with it.
      doomed.child.kill('SIGSTOP');
      await sleep(3_000);
      expect(await at(snapshot.id)).toEqual(['onboarding.starting']);
      doomed.child.kill('SIGCONT');

      doomed.child.kill('SIGKILL');
      const killedAt = performance.now();
      while ((await at(snapshot.id))[0] !== 'onboarding.done') await sleep(20);
      recoveries.push(performance.now() - killedAt);
      expect(await doomed.exited).toBe('SIGKILL');

      const types = (await producer.history(onboardingMachine, snapshot.id)).map((r) => r.type);
      expect(types.filter((type) => type.startsWith('onboarding.child.'))).toEqual([
        'onboarding.child.slow_start.start',
        'onboarding.child.slow_start.done',
      ]);
      survivor.child.kill('SIGTERM');
      expect(await survivor.exited).toBe(0);
    }
    process.stdout.write(
      `job re-run after a worker kill (${backend.name}): ${recoveries.map((ms) => ms.toFixed(0)).join(', ')} ms\n`,
    );
    for (const ms of recoveries) expect(ms).toBeLessThan(BOUND_MS[backend.name]!);
  }, 400_000);
});
