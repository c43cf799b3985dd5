/**
 * Pinned mode outside requests (docs/versioning.md): a v1 instance of `work` while the runtime
 * runs v2 (which pins v1) has its job outcomes (done and fail), its child's completion, its
 * queued listener and its dispatched parallel regions computed on v1, with the durable queue
 * really running, on a SQLite file and PostgreSQL. v2 has none of those states: each path
 * computed with the newest definition (the code before) leaves the instance stuck or the job
 * failing. The timer and schedule sweeps are in pinned-timers.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/index.js';
import { durableBackends } from '../../support/durable-backends.js';
import { reviewer, workV1, workV2 } from './fixtures/work.js';

const backends = await durableBackends('versioning/pinned-work');
const DEADLINE = { timeout: 30_000, interval: 25 };

describe.each(backends)('pinned work outside requests on $name', (backend) => {
  let runtime: MachineRuntime;
  beforeAll(async () => {
    runtime = await MachineRuntime.open({
      databaseUrl: await backend.setUp(),
      migrate: true,
      // Only v2 is given: the registry knows v1 (and v1's child) through v2's `previous`.
      machines: [workV2],
      jobQueue: { pollIntervalMs: 20, backoffMs: 0 },
      parallelDispatch: { enabled: true, jobTries: 1 },
    });
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  /** A v1 instance sent `event` (runs on v1: the send path pins it). */
  const startV1 = async (event: string) => {
    const { snapshot } = await runtime.create(workV1);
    expect(snapshot.version).toBe('v1');
    // What the create started may still hold the lock for a moment: the spec's 423, nothing
    // applied; send again until it is free.
    await vi.waitFor(() => runtime.send(workV2, snapshot.id, { type: event }), {
      timeout: 10_000,
      interval: 50,
    });
    return snapshot.id;
  };
  const settles = (id: string, value: string[]) =>
    vi.waitFor(async () => {
      const read = await runtime.read(workV2, id);
      expect(read.snapshot.value).toEqual(value);
      return read.snapshot;
    }, DEADLINE);

  it("should apply a v1 job actor's outcome on v1 (done and fail)", async () => {
    const charged = await startV1('CHARGE');
    const broken = await startV1('BREAK');
    expect((await settles(charged, ['work.charged'])).version).toBe('v1');
    expect((await settles(broken, ['work.declined'])).version).toBe('v1');
    const types = (await runtime.history(workV2, broken)).map((record) => record.type);
    expect(types.some((type) => type.endsWith('.@fail.finish'))).toBe(true);
    expect(types).not.toContain('work.migration');
  });

  it("should route a v1 parent's child completion on v1", async () => {
    const parent = await startV1('DELEGATE');
    const [row] = await vi.waitFor(async () => {
      const rows = await runtime.children(parent);
      expect(rows[0]?.status).toBe('running');
      return rows;
    }, DEADLINE);
    await runtime.send(reviewer, row!.id, { type: 'DECIDE' });
    expect((await settles(parent, ['work.reviewed'])).version).toBe('v1');
  });

  it("should run a v1 instance's queued listener with v1's listener", async () => {
    const id = await startV1('LISTEN');
    expect((await settles(id, ['work.pinged'])).version).toBe('v1');
  });

  it("should merge a v1 instance's dispatched parallel regions on v1", async () => {
    const id = await startV1('SPLIT');
    const merged = await settles(id, ['work.merged']);
    expect(merged.version).toBe('v1');
    // Each region's entry ran (its own key), and both merged.
    expect(merged.context).toMatchObject({ a: true, b: true });
    const types = (await runtime.history(workV2, id)).map((record) => record.type);
    expect(types.filter((type) => type.endsWith('.region.merged'))).toHaveLength(2);
  });

  it('should run a v2 instance on v2 beside them', async () => {
    const { snapshot } = await runtime.create(workV2);
    const done = await runtime.send(workV2, snapshot.id, { type: 'FINISH' });
    expect(done.snapshot).toMatchObject({ value: ['work.done'], version: 'v2' });
  });
});
