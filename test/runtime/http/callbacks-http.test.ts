/**
 * Callback URLs (`callbacks`, docs/callbacks.md) over real HTTP on Fastify and Express, on a
 * SQLite file and on PostgreSQL: an action mints a signed, expiring URL; a third party's POST
 * sends its one event, validated by the event's schema; a tampered, wrong-instance, expired or
 * used URL is refused with its typed body and writes nothing (rows counted in the store); two
 * concurrent uses, in one process or in two server processes on one PostgreSQL database,
 * commit the event once.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { approvalMachine, defineApprovalMachine } from '../../../fixtures/http/callback-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { mintCallbackUrl, verifyCallbackToken } from '../../../src/runtime/http/callback-token.js';
import { planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { useServerProcesses } from './support/server-processes.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';
import { countRows } from './support/store-writes.js';

const SERVER = fileURLToPath(new URL('./fixtures/approval-server.ts', import.meta.url));
const SECRET = 'test-callback-secret';
process.env['MACHINE_CALLBACK_SECRET'] = SECRET;

const OPTIONS: RegistrationOptions = {
  prefix: 'approvals',
  create: true,
  machineIdFor: ['REQUEST', 'APPROVED', 'PAID'],
  callbacks: ['APPROVED'],
};

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('callbacks-http');
if (postgres) backends.push(postgres);

/** Rows a send or a claim writes, the Idempotency-Key (used token) records included. */
async function written(store: Store): Promise<Record<string, number>> {
  const counts = await countRows(store);
  const sql = 'SELECT COUNT(*) AS n FROM machine_idempotency_keys';
  counts['machine_idempotency_keys'] =
    store instanceof SqliteStore
      ? (store.database.prepare(sql).get() as { n: number }).n
      : Number((await (store as PostgresStore).pool.query<{ n: string }>(sql)).rows[0]!.n);
  return counts;
}

/** The status of the used-token records of an instance's callback route. */
async function usedRecords(store: Store, id: string, registration = 'approval'): Promise<string[]> {
  const scope = `${registration}.callback.approved ${id}`;
  return store instanceof SqliteStore
    ? (
        store.database
          .prepare('SELECT status FROM machine_idempotency_keys WHERE scope = ?')
          .all(scope) as { status: string }[]
      ).map((row) => row.status)
    : (
        await (store as PostgresStore).pool.query<{ status: string }>(
          'SELECT status FROM machine_idempotency_keys WHERE scope = $1',
          [scope],
        )
      ).rows.map((row) => row.status);
}

interface Envelope {
  data: { id: string; state: string[]; output: { callbackUrl: string; approver: string | null } };
}
const data = (body: unknown) => (body as Envelope).data;
const HOUR = 3_600_000;

describe('callbacks registration option', () => {
  it('should plan one POST route per event, bound by machine id, with the token in the path', () => {
    const route = planRoutes(approvalMachine, OPTIONS).find((r) => r.handler === 'callback')!;
    expect(route).toMatchObject({
      name: 'approval.callback.approved',
      method: 'POST',
      path: '/approvals/{machineId}/callbacks/approved/{token}',
      eventType: 'APPROVED',
      binding: { kind: 'machineId', param: 'machineId' },
      middleware: [],
    });
    expect(route.errorStatuses).toEqual([400, 403, 404, 409, 410, 412, 413, 415, 422, 423, 500]);
    expect(() => planRoutes(approvalMachine, { prefix: 'a', callbacks: ['NOPE'] })).toThrow(
      /'callbacks' names 'NOPE', which is not a registered endpoint/,
    );
  });

  it('should mint purely: the same arguments give the same URL, any other part fails to verify', () => {
    const target = { machineId: 'approval', id: '01J00000000000000000000000' };
    const mint = {
      prefix: 'approvals',
      event: 'APPROVED',
      expiresAt: 4_000_000_000_000,
      nonce: 'n1',
    };
    const url = mintCallbackUrl(target, mint, { secret: 'a', baseUrl: 'https://api.test/' });
    expect(url).toBe(mintCallbackUrl(target, mint, { secret: 'a', baseUrl: 'https://api.test' }));
    expect(url).toMatch(
      /^https:\/\/api\.test\/approvals\/01J0+\/callbacks\/approved\/4000000000\.n1\.[\w-]{43}$/,
    );
    const token = url.slice(url.lastIndexOf('/') + 1);
    const claim = { machineId: 'approval', id: target.id, event: 'APPROVED' };
    expect(verifyCallbackToken(token, claim, ['a'], 0).kind).toBe('valid');
    // Rotation: a URL minted under the old secret verifies while the old one is still listed.
    expect(verifyCallbackToken(token, claim, ['b', 'a'], 0).kind).toBe('valid');
    expect(verifyCallbackToken(token, claim, ['b'], 0).kind).toBe('invalid');
    expect(verifyCallbackToken(token, { ...claim, event: 'PAID' }, ['a'], 0).kind).toBe('invalid');
    expect(
      verifyCallbackToken(token.replace('4000000000', '4000000001'), claim, ['a'], 0).kind,
    ).toBe('invalid');
    expect(verifyCallbackToken(token, claim, ['a'], 4_000_000_000_000).kind).toBe('expired');
  });

  it("should refuse another spelling of a signature's bytes (a second key for one URL's use)", () => {
    const target = { machineId: 'approval', id: '01J00000000000000000000000' };
    const claim = { machineId: 'approval', id: target.id, event: 'APPROVED' };
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let nonce = 0; nonce < 16; nonce += 1) {
      const mint = { prefix: 'approvals', event: 'APPROVED', expiresAt: 4e12, nonce: `n${nonce}` };
      const token = mintCallbackUrl(target, mint, { secret: 'a', baseUrl: '' }).split('/').at(-1)!;
      // The last of 43 characters holds 4 bits of the signature and 2 spare ones.
      const last = alphabet.indexOf(token.at(-1)!);
      const variant = `${token.slice(0, -1)}${alphabet[last ^ 1]}`;
      const signature = (value: string) => Buffer.from(value.split('.')[2]!, 'base64url');
      expect(signature(variant)).toEqual(signature(token));
      expect(verifyCallbackToken(variant, claim, ['a'], 0).kind).toBe('invalid');
    }
  });

  it('should refuse to mount callback routes without a secret, naming the variable', async () => {
    const saved = process.env['MACHINE_CALLBACK_SECRET'];
    delete process.env['MACHINE_CALLBACK_SECRET'];
    const runtime = await MachineRuntime.open({ databaseUrl: 'memory:', worker: false });
    try {
      const router = new MachineRouter({ runtime });
      expect(() => router.register(approvalMachine, OPTIONS)).toThrow(
        expect.objectContaining({
          code: 'MR_SIGNING_SECRET_MISSING',
          message: expect.stringMatching(/approval\.callback\.approved.*MACHINE_CALLBACK_SECRET/),
        }),
      );
    } finally {
      process.env['MACHINE_CALLBACK_SECRET'] = saved;
      await runtime.close();
    }
  });
});

const cases = backends.flatMap((backend) =>
  (['fastify', 'express'] as AdapterName[]).map((adapter) => ({ backend, adapter })),
);

describe.each(cases)(
  'callback URLs over HTTP ($adapter, $backend.name)',
  ({ backend, adapter }) => {
    let runtime: MachineRuntime;
    let server: TestServer;
    const afterCalls: string[] = [];
    const withAfter = defineApprovalMachine('approvalAfter', 'approvals-after', (id) =>
      afterCalls.push(id),
    );

    beforeAll(async () => {
      await backend.setUp();
      runtime = await MachineRuntime.open({
        databaseUrl: backend.url(),
        migrate: true,
        worker: false,
      });
      const router = new MachineRouter({ runtime, logger: { error: () => {} } });
      router.register(approvalMachine, OPTIONS);
      router.register(withAfter, { ...OPTIONS, prefix: 'approvals-after' });
      server = await startServer(adapter, [router], { error: () => {} });
    }, 60_000);
    afterAll(async () => {
      await server?.close();
      await runtime?.close();
      await backend.tearDown();
    });

    /** A new pending approval and the callback URL its REQUEST minted (a path). */
    const pending = async (expiresAt = Date.now() + HOUR, nonce?: string, prefix = 'approvals') => {
      const created = await send(server.url, 'POST', `/${prefix}/create`);
      const id = data(created.body).id;
      const requested = await send(server.url, 'POST', `/${prefix}/${id}/request`, {
        body: { payload: { expiresAt, ...(nonce === undefined ? {} : { nonce }) } },
      });
      expect(requested.status).toBe(200);
      return { id, path: data(requested.body).output.callbackUrl };
    };
    const approve = (path: string, body: unknown = { approver: 'ann' }) =>
      send(server.url, 'POST', path, { body });

    it('should send the event once, and refuse the second use with 409, writing nothing', async () => {
      const { id, path } = await pending();
      expect(path).toMatch(new RegExp(`^/approvals/${id}/callbacks/approved/`));
      // The use is recorded in the event's own commit, not by a write after it.
      const completeAfter = vi.spyOn(runtime.store.idempotencyKeys, 'complete');
      const used = await approve(path);
      expect(used.status).toBe(200);
      expect(completeAfter).not.toHaveBeenCalled();
      completeAfter.mockRestore();
      expect(await usedRecords(runtime.store, id)).toEqual(['done']);
      expect(data(used.body)).toMatchObject({
        id,
        state: ['approval.approved'],
        output: { approver: 'ann' },
      });
      const before = await written(runtime.store);
      const replay = await approve(path, { approver: 'eve' });
      expect(replay).toMatchObject({ status: 409, body: { code: 'MR_CALLBACK_USED' } });
      expect(await written(runtime.store)).toEqual(before);
      expect((await runtime.store.load(id))!.context).toMatchObject({ approver: 'ann' });
    });

    it('should validate the payload by the event schema (422) without using the URL', async () => {
      const { path } = await pending();
      const invalid = await approve(path, { approver: '' });
      expect(invalid.status).toBe(422);
      expect(invalid.body).toMatchObject({ errors: { 'payload.approver': expect.any(Array) } });
      expect((await approve(path)).status).toBe(200);
    });

    it("should leave the URL usable after a validation guard's 422, its history kept", async () => {
      const { id, path } = await pending();
      const before = await written(runtime.store);
      const refused = await approve(path, { approver: 'mallory' });
      expect(refused).toMatchObject({
        status: 422,
        body: { errors: { 'payload.approver': ['This approver may not approve.'] } },
      });
      // The refusal's history is committed; the claim is freed, not recorded as a use.
      const after = await written(runtime.store);
      expect(after['machine_events']).toBeGreaterThan(before['machine_events']!);
      expect(after['machine_idempotency_keys']).toBe(before['machine_idempotency_keys']);
      expect(await usedRecords(runtime.store, id)).toEqual([]);
      expect((await runtime.store.load(id))!.value).toEqual(['approval.pending']);
      const corrected = await approve(path);
      expect(corrected.status).toBe(200);
      expect(data(corrected.body).state).toEqual(['approval.approved']);
      expect(await usedRecords(runtime.store, id)).toEqual(['done']);
      expect((await approve(path)).status).toBe(409);
    });

    it('should record the use in the commit when the endpoint has an after hook', async () => {
      const { id, path } = await pending(Date.now() + HOUR, undefined, 'approvals-after');
      expect(path).toMatch(new RegExp(`^/approvals-after/${id}/callbacks/approved/`));
      const completeAfter = vi.spyOn(runtime.store.idempotencyKeys, 'complete');
      const used = await approve(path);
      expect(used.status).toBe(200);
      expect(completeAfter).not.toHaveBeenCalled();
      completeAfter.mockRestore();
      expect(afterCalls).toContain(id);
      expect(await usedRecords(runtime.store, id, 'approvalAfter')).toEqual(['done']);
      expect(await approve(path)).toMatchObject({
        status: 409,
        body: { code: 'MR_CALLBACK_USED' },
      });
    });

    it('should refuse a tampered, wrong-instance or expired URL with its typed body, writing nothing', async () => {
      const { path } = await pending();
      const other = await pending();
      const expired = await pending(Date.now() - 1000);
      const before = await written(runtime.store);
      const last = path.at(-1) === 'A' ? 'B' : 'A';
      const tampered = await approve(`${path.slice(0, -1)}${last}`);
      expect(tampered).toMatchObject({
        status: 403,
        body: { code: 'MR_CALLBACK_INVALID', message: expect.any(String) },
      });
      const token = path.slice(path.lastIndexOf('/') + 1);
      const moved = await approve(`/approvals/${other.id}/callbacks/approved/${token}`);
      expect(moved).toMatchObject({ status: 403, body: { code: 'MR_CALLBACK_INVALID' } });
      const late = await approve(expired.path);
      expect(late).toMatchObject({ status: 410, body: { code: 'MR_CALLBACK_EXPIRED' } });
      const garbage = await approve(`/approvals/${other.id}/callbacks/approved/not-a-token`);
      expect(garbage.status).toBe(403);
      expect(await written(runtime.store)).toEqual(before);
    });

    it('should commit the event once for two concurrent uses of one URL', async () => {
      for (let round = 0; round < 5; round += 1) {
        const { id, path } = await pending(Date.now() + HOUR, `race${round}`);
        const answers = await Promise.all([approve(path), approve(path, { approver: 'bob' })]);
        expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
        const history = await runtime.store.history(id);
        expect(history.filter((record) => record.type === 'APPROVED')).toHaveLength(1);
      }
    });
  },
);

describe.runIf(postgres !== null)('callback URLs across two server processes on PostgreSQL', () => {
  const processes = useServerProcesses(postgres!, SERVER, [JSON.stringify(OPTIONS)], {
    env: { MACHINE_CALLBACK_SECRET: SECRET },
  });
  const { urls } = processes;

  it('should commit the event once when both processes are sent the URL at once', async () => {
    const [one, two] = urls as [string, string];
    for (let round = 0; round < 3; round += 1) {
      const created = await send(one, 'POST', '/approvals/create');
      const id = data(created.body).id;
      const requested = await send(one, 'POST', `/approvals/${id}/request`, {
        body: { payload: { expiresAt: Date.now() + HOUR } },
      });
      const path = data(requested.body).output.callbackUrl;
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          send(index % 2 === 0 ? one : two, 'POST', path, { body: { approver: `p${index}` } }),
        ),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(1);
      expect(statuses.filter((status) => status !== 200)).toEqual(Array(9).fill(409));
      const history = await processes.runtime.store.history(id);
      expect(history.filter((record) => record.type === 'APPROVED')).toHaveLength(1);
    }
  }, 120_000);
});
