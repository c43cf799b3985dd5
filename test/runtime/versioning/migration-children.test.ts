/**
 * A migration and the child rows of delegating states (docs/versioning.md "Delegating states"),
 * with the durable queue running, on a SQLite file and PostgreSQL. v1 of `claim` delegates to
 * an `approver` child in `reviewing` and in `checking`; v2 renames `reviewing` to `inReview`
 * (still delegating to `approver`) and removes `checking` (its instances go to `manual`). After
 * the migration (eager, and lazy on the next event):
 * - the child of a renamed delegating state is pointed at `inReview`, and its completion routes
 *   the parent's `@done` (before: the row kept `claim.reviewing`, the completion was ignored and
 *   the parent waited for good);
 * - the child of a removed one is cancelled, and its completion changes nothing.
 * Before the migration, the eager dry run lists both rows (moved, cancelled) and
 * `check --database`'s comparison warns of the running child of the removed state.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  MachineRuntime,
  defineMachine,
  defineMigration,
  migrateInstances,
} from '../../../src/runtime/index.js';
import { checkDeploy } from '../../../src/runtime/engine/deploy-check.js';
import { readLiveInstances } from '../../../src/runtime/persistence/live-instances.js';
import { durableBackends } from '../../support/durable-backends.js';

const backends = await durableBackends('versioning/migration-children');
const DEADLINE = { timeout: 30_000, interval: 25 };

const approver = defineMachine({
  config: {
    id: 'approver',
    version: 'a1',
    initial: 'waiting',
    states: { waiting: { on: { APPROVE: 'approved' } }, approved: { type: 'final' } },
  },
});

const claimV1 = defineMachine({
  config: {
    id: 'claim',
    version: 'v1',
    initial: 'idle',
    states: {
      idle: { on: { REVIEW: 'reviewing', CHECK: 'checking' } },
      reviewing: { machine: approver, queue: true, on: { '@done': 'closed' } },
      checking: { machine: approver, queue: true, on: { '@done': 'closed' } },
      closed: { type: 'final' },
    },
  },
});

const claimV2 = defineMachine({
  config: {
    id: 'claim',
    version: 'v2',
    initial: 'idle',
    states: {
      idle: { on: { REVIEW: 'inReview' } },
      inReview: { machine: approver, queue: true, on: { '@done': 'closed', NUDGE: {} } },
      manual: { on: { CLOSE: 'closed' } },
      closed: { type: 'final' },
    },
  },
  migrations: [
    defineMigration({
      from: 'v1',
      to: 'v2',
      states: { reviewing: 'inReview', checking: 'manual' },
    }),
  ],
});

describe.each(backends)(
  'a migration and the child rows of delegating states on $name',
  (backend) => {
    let url: string;
    let runtime: MachineRuntime;
    const open = (machine: typeof claimV1) =>
      MachineRuntime.open({
        databaseUrl: url,
        migrate: true,
        machines: [machine],
        jobQueue: { pollIntervalMs: 20, backoffMs: 0 },
      });

    beforeAll(async () => {
      url = await backend.setUp();
    }, 60_000);
    afterAll(async () => {
      await runtime?.close();
      await backend.tearDown();
    });

    /** v1 instances, each waiting in a delegating state with its child running. */
    async function delegatingV1(events: string[]): Promise<string[]> {
      const v1 = await open(claimV1);
      const ids: string[] = [];
      for (const type of events) {
        const { snapshot } = await v1.create(claimV1);
        await v1.send(claimV1, snapshot.id, { type });
        ids.push(snapshot.id);
      }
      for (const id of ids)
        await vi.waitFor(async () => {
          expect((await v1.children(id))[0]?.status).toBe('running');
        }, DEADLINE);
      await v1.close();
      return ids;
    }
    const childOf = async (id: string) =>
      (await runtime.store.findChildren({ parentRootEventId: id }))[0]!;

    it('should point the child of a renamed delegating state at its new id and cancel the removed one', async () => {
      const [reviewed, checked, lazy] = await delegatingV1(['REVIEW', 'CHECK', 'REVIEW']);
      runtime = await open(claimV2);

      const report = await migrateInstances(runtime.context, claimV2, { batch: 10 });
      expect(report.failed).toEqual([]);
      // The lazy path: the next event migrates the third instance first, in the locked step.
      await runtime.send(claimV2, lazy!, { type: 'NUDGE' });

      for (const id of [reviewed!, lazy!]) {
        expect((await runtime.read(claimV2, id)).snapshot.value).toEqual(['claim.inReview']);
        expect(await childOf(id)).toMatchObject({
          parentStateId: 'claim.inReview',
          status: 'running',
        });
      }
      expect((await runtime.read(claimV2, checked!)).snapshot.value).toEqual(['claim.manual']);
      const removed = await childOf(checked!);
      expect(removed).toMatchObject({ parentStateId: 'claim.checking', status: 'cancelled' });

      // The children decide: the renamed state's @done is routed, the removed one's is not.
      for (const id of [reviewed!, lazy!, checked!])
        await runtime.send(approver, (await childOf(id)).id, { type: 'APPROVE' });
      for (const id of [reviewed!, lazy!])
        await vi.waitFor(async () => {
          expect((await runtime.read(claimV2, id)).snapshot.value).toEqual(['claim.closed']);
        }, DEADLINE);
      expect((await runtime.read(claimV2, checked!)).snapshot.value).toEqual(['claim.manual']);
      const history = (await runtime.history(claimV2, reviewed!)).map((record) => record.type);
      expect(history.indexOf('claim.migration')).toBeGreaterThan(-1);
      expect(history.some((type) => type.includes('@done'))).toBe(true);
    }, 60_000);

    it('should list the child rows in the dry run and warn of them in check --database', async () => {
      const [reviewed, checked] = await delegatingV1(['REVIEW', 'CHECK']);
      runtime ??= await open(claimV2);
      // What `check --database` reads and reports, before the deploy writes anything.
      const issues = checkDeploy(
        [claimV2, approver],
        await readLiveInstances(runtime.store, ['claim', 'approver']),
      );
      const orphaned = issues.filter(
        (issue) => issue.error.code === 'MR_RUNNING_CHILDREN_ORPHANED',
      );
      expect(orphaned.map((issue) => issue.blocking)).toEqual([false]);
      expect(orphaned[0]!.error.message).toContain(
        "1 running child ('approver') of machine 'claim' waits in delegating state 'claim.checking' (version 'v1')",
      );
      expect(orphaned[0]!.error.message).toContain(
        "maps it to 'claim.manual', which delegates to no 'approver'",
      );

      const dry = await migrateInstances(runtime.context, claimV2, { dryRun: true });
      const listed = new Map(dry.migrated.map((row) => [row.id, row.children]));
      expect(listed.get(reviewed!)).toEqual([
        {
          id: (await childOf(reviewed!)).id,
          childMachineId: 'approver',
          from: 'claim.reviewing',
          change: 'moved',
          to: 'claim.inReview',
        },
      ]);
      expect(listed.get(checked!)).toEqual([
        {
          id: (await childOf(checked!)).id,
          childMachineId: 'approver',
          from: 'claim.checking',
          change: 'cancelled',
          to: null,
        },
      ]);
      // A dry run writes nothing: the rows are as they were.
      expect(await childOf(checked!)).toMatchObject({
        parentStateId: 'claim.checking',
        status: 'running',
      });

      // Once migrated, nothing is left to warn of.
      expect((await migrateInstances(runtime.context, claimV2)).failed).toEqual([]);
      const after = checkDeploy(
        [claimV2, approver],
        await readLiveInstances(runtime.store, ['claim', 'approver']),
      );
      expect(after.filter((issue) => issue.error.code === 'MR_RUNNING_CHILDREN_ORPHANED')).toEqual(
        [],
      );
    }, 60_000);
  },
);
