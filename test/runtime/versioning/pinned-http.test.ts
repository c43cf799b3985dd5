/**
 * Pinned mode over HTTP (docs/versioning.md "HTTP"): one process, one router, a real listening
 * server (Fastify and Express), on a SQLite file and PostgreSQL. `permit` v2 pins v1; v1 and v2
 * instances side by side:
 * - a route both versions have validates with the instance's own version's payload schema
 *   (v1's APPROVE takes `{ by }`, v2's `{ approverId }`) and runs its transition;
 * - REVIEW, which only v1 has, keeps a route for v1 instances (not in the newest route table);
 * - where a version cannot take the route (ESCALATE on a v1 instance, REVIEW on a v2 one) the
 *   answer is 409 `PinnedVersionRouteException`, nothing sent;
 * - reads answer a v1 instance with v1's available events;
 * - model-bound routes (the record's machine found through the model binder) do the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import type { ModelBinder, RegistrationOptions } from '../../../src/runtime/http/types.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { send, startServer, type TestServer } from '../http/support/servers.js';
import { permitV1, permitV2 } from './fixtures/permits.js';

const OPTIONS: RegistrationOptions = {
  prefix: 'permits',
  create: true,
  machineIdFor: ['APPROVE', 'PAY', 'ESCALATE'],
  reads: true,
};

/** Model-bound routes of the same machine: `/permit-records/{permit}/...`. */
const MODEL_OPTIONS: RegistrationOptions = {
  prefix: 'permit-records',
  name: 'permit_records',
  model: 'Permit',
  attribute: 'machineId',
  modelFor: ['APPROVE', 'PAY', 'ESCALATE'],
  reads: true,
};

/** The application's own records, each holding the id of its permit machine. */
type PermitRecord = { key: string; machineId: string | null };

/** A model binder over an in-process table of records (the application's own store). */
function recordBinder(records: Map<string, PermitRecord>): ModelBinder<PermitRecord> {
  return {
    find: (key) => records.get(key) ?? null,
    readMachineId: (record) => record.machineId,
    writeMachineId: (record, _attribute, id) => {
      record.machineId = id;
    },
  };
}

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('versioning_pinned_http');
if (postgres) backends.push(postgres);

interface Envelope {
  data: {
    id: string;
    state: string[];
    output: Record<string, unknown>;
    availableEvents?: { type: string }[];
  };
}

const cases = backends.flatMap((backend) =>
  (['fastify', 'express'] as const).map((adapter) => ({
    name: `${backend.name}, ${adapter}`,
    backend,
    adapter,
  })),
);

describe.each(cases)('pinned versions over HTTP ($name)', ({ backend, adapter }) => {
  let runtime: MachineRuntime;
  let router: MachineRouter;
  let server: TestServer;
  const logged: unknown[] = [];
  const records = new Map<string, PermitRecord>();

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
      machines: [permitV2],
    });
    router = new MachineRouter({ runtime, models: { Permit: recordBinder(records) } });
    router.register(permitV2, OPTIONS);
    router.register(permitV2, MODEL_OPTIONS);
    server = await startServer(adapter, [router], { error: (_m, meta) => logged.push(meta) });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  const path = (event: string) => {
    const route = router.routes.find((mounted) => mounted.route.eventType === event)!.route;
    return (id: string) => route.path.replace(/\{[^}]+\}/, id);
  };
  const readPath = (id: string) =>
    router.routes
      .find((mounted) => mounted.route.handler === 'read')!
      .route.path.replace(/\{[^}]+\}/, id);
  const post = (event: string, id: string, body: unknown = {}) =>
    send(server.url, 'POST', path(event)(id), { body: { payload: body } });

  it('should serve v1 and v2 instances side by side with their own routes and schemas', async () => {
    const old = (await runtime.create(permitV1)).snapshot.id;
    const created = await send(server.url, 'POST', '/permits/create', { body: {} });
    expect(created.status).toBe(201);
    const fresh = (created.body as Envelope).data.id;
    expect((await runtime.read(permitV2, fresh)).snapshot.version).toBe('v2');

    // REVIEW exists only in v1: it has a route, for v1 instances.
    const reviewed = await post('REVIEW', old);
    expect(reviewed.status).toBe(200);
    expect((reviewed.body as Envelope).data.state).toEqual(['permit.reviewing']);
    const refusedReview = await post('REVIEW', fresh);
    expect(refusedReview.status).toBe(409);
    expect((refusedReview.body as { message: string }).message).toMatch(
      /is at version 'v2'.*route of a pinned older version only/,
    );

    // APPROVE in both, with another payload: each instance validates with its own version's.
    expect((await post('APPROVE', old, { approverId: 7 })).status).toBe(422);
    expect((await post('APPROVE', fresh, { by: 'ann' })).status).toBe(422);
    const approvedOld = await post('APPROVE', old, { by: 'ann' });
    expect(approvedOld.status).toBe(200);
    expect((approvedOld.body as Envelope).data.state).toEqual(['permit.approved']);
    const approvedNew = await post('APPROVE', fresh, { approverId: 7 });
    expect(approvedNew.status).toBe(200);
    expect((approvedNew.body as Envelope).data.state).toEqual(['permit.accepted']);
    expect((await runtime.read(permitV2, old)).snapshot).toMatchObject({
      version: 'v1',
      context: { approvedBy: 'ann' },
    });
    expect((await runtime.read(permitV2, fresh)).snapshot.context).toEqual({ approver: 7 });

    // ESCALATE exists only in v2: a v1 instance cannot take it, and nothing is sent.
    const other = (await runtime.create(permitV1)).snapshot.id;
    const escalated = await post('ESCALATE', other);
    expect(escalated.status).toBe(409);
    expect((escalated.body as { message: string }).message).toMatch(
      /pinned to version 'v1', which has no endpoint .* \(event 'ESCALATE'\)/,
    );
    expect((await runtime.read(permitV2, other)).snapshot.value).toEqual(['permit.applied']);
    expect((await runtime.history(permitV2, other)).length).toBe(
      (await runtime.history(permitV1, other)).length,
    );

    // Reads answer with the instance's own version's available events.
    const readOld = await send(server.url, 'GET', readPath(other));
    expect(readOld.status).toBe(200);
    expect(
      ((readOld.body as Envelope).data.availableEvents ?? []).map((e) => e.type).sort(),
    ).toEqual(['APPROVE', 'REVIEW']);
    const readNew = await send(server.url, 'GET', readPath(fresh));
    expect(((readNew.body as Envelope).data.availableEvents ?? []).map((e) => e.type)).toEqual([
      'PAY',
    ]);

    // Both finish on their own version.
    expect((await post('PAY', old)).status).toBe(200);
    expect((await post('PAY', fresh)).status).toBe(200);
    expect((await runtime.read(permitV2, old)).snapshot).toMatchObject({
      status: 'done',
      version: 'v1',
    });
    // Unknown ids stay 404 on every route, a v1-only one included.
    expect((await post('REVIEW', 'nope')).status).toBe(404);
    expect((await post('APPROVE', 'nope', { approverId: 1 })).status).toBe(404);
    expect(logged).toEqual([]);
  });

  it('should serve model-bound routes of a pinned instance with its own version (gap of issue 31)', async () => {
    const old = (await runtime.create(permitV1)).snapshot.id;
    const fresh = (await runtime.create(permitV2)).snapshot.id;
    records.set('r-old', { key: 'r-old', machineId: old });
    records.set('r-new', { key: 'r-new', machineId: fresh });
    records.set('r-unbound', { key: 'r-unbound', machineId: null });
    const modelPath = (event: string, key: string) => {
      const route = router.routes.find(
        (mounted) =>
          mounted.route.registration === 'permit_records' && mounted.route.eventType === event,
      )!.route;
      return route.path.replace('{permit}', key);
    };
    const postModel = (event: string, key: string, body: unknown = {}) =>
      send(server.url, 'POST', modelPath(event, key), { body: { payload: body } });

    // The record's machine is v1: v1's payload schema, transition and output.
    expect((await postModel('APPROVE', 'r-old', { approverId: 7 })).status).toBe(422);
    const approvedOld = await postModel('APPROVE', 'r-old', { by: 'ann' });
    expect(approvedOld.status).toBe(200);
    expect((approvedOld.body as Envelope).data.state).toEqual(['permit.approved']);
    expect(((approvedOld.body as Envelope).data.availableEvents ?? []).map((e) => e.type)).toEqual([
      'PAY',
    ]);
    expect((await runtime.read(permitV2, old)).snapshot).toMatchObject({
      version: 'v1',
      context: { approvedBy: 'ann' },
    });
    // The record's machine is v2: v2's.
    expect((await postModel('APPROVE', 'r-new', { by: 'ann' })).status).toBe(422);
    const approvedNew = await postModel('APPROVE', 'r-new', { approverId: 3 });
    expect(approvedNew.status).toBe(200);
    expect((approvedNew.body as Envelope).data.state).toEqual(['permit.accepted']);

    // An event v1 lacks, on a v1 record: the documented 409, nothing sent.
    const other = (await runtime.create(permitV1)).snapshot.id;
    records.set('r-other', { key: 'r-other', machineId: other });
    const escalated = await postModel('ESCALATE', 'r-other');
    expect(escalated.status).toBe(409);
    expect((escalated.body as { code?: string; message: string }).message).toMatch(
      /pinned to version 'v1'/,
    );
    expect((await runtime.read(permitV2, other)).snapshot.value).toEqual(['permit.applied']);

    // A model-bound read of a v1 record lists v1's available events.
    const readRoute = router.routes.find(
      (mounted) =>
        mounted.route.registration === 'permit_records' && mounted.route.handler === 'read',
    )!.route;
    const readOld = await send(server.url, 'GET', readRoute.path.replace('{permit}', 'r-other'));
    expect(readOld.status).toBe(200);
    expect(
      ((readOld.body as Envelope).data.availableEvents ?? []).map((e) => e.type).sort(),
    ).toEqual(['APPROVE', 'REVIEW']);

    // A record without a machine gets one of the newest version; an unknown record is 404.
    const first = await postModel('APPROVE', 'r-unbound', { approverId: 9 });
    expect(first.status).toBe(200);
    const bound = records.get('r-unbound')!.machineId!;
    expect((await runtime.read(permitV2, bound)).snapshot).toMatchObject({
      version: 'v2',
      value: ['permit.accepted'],
    });
    expect((await postModel('APPROVE', 'nope', { approverId: 1 })).status).toBe(404);
    expect(logged).toEqual([]);
  });

  it('should keep the route table it returns (and documents) to the newest version', () => {
    const planned = new MachineRouter({ runtime }).register(permitV2, OPTIONS);
    expect(
      planned
        .map((route) => route.eventType)
        .filter(Boolean)
        .sort(),
    ).toEqual(['APPROVE', 'ESCALATE', 'PAY']);
  });
});
