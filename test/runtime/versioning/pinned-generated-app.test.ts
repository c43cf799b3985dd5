/**
 * Pinned versions in the generated app (docs/versioning.md "HTTP"): the config of a `permit`
 * machine whose v2 pins v1 is generated (`renderProject`, the files `generate` writes, into
 * test-artifacts/), and the generated `buildApp` is started on a real listening server, on a
 * SQLite file and PostgreSQL. The generated route tables hold the newest version's routes only
 * (as do the OpenAPI document and the client); the app still serves REVIEW, which only v1 has,
 * to v1 instances, answers 409 `MR_PINNED_VERSION_ROUTE` to a v2 instance, and answers the
 * routes both versions have with each instance's own version's schema.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../../../src/app/app-parts.js';
import { renderProject } from '../../../src/generator/generate.js';
import { ROOT } from '../../generator/support.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { permitV1, permitV2 } from './fixtures/permits.js';

const CONFIG = 'fixtures/versioning/permit-app.config.ts';

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('versioning_pinned_app');
if (postgres) backends.push(postgres);

type BuildApp = (options: { databaseUrl: string; worker: boolean }) => Promise<BuiltApp<unknown>>;

let buildApp: BuildApp;
let openapi: { paths: Record<string, unknown> };
let outputDir: string;

beforeAll(async () => {
  const project = await renderProject({ config: CONFIG, cwd: ROOT });
  outputDir = project.outputDir;
  rmSync(outputDir, { recursive: true, force: true });
  for (const file of project.files) {
    const target = path.join(outputDir, file.path);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, file.contents);
  }
  openapi = JSON.parse(
    project.files.find((file) => file.path === 'openapi.json')!.contents,
  ) as typeof openapi;
  const app = (await import(pathToFileURL(path.join(outputDir, 'app.gen.ts')).href)) as {
    buildApp: BuildApp;
  };
  buildApp = app.buildApp;
}, 120_000);
afterAll(() => rmSync(outputDir, { recursive: true, force: true }));

async function call(
  url: string,
  method: string,
  body?: unknown,
): Promise<{ status: number; body: { data?: { id: string; state: string[] }; message?: string } }> {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as never };
}

describe.each(backends)('the generated app of a pinned machine ($name)', (backend) => {
  let built: BuiltApp<unknown>;
  let url: string;

  beforeAll(async () => {
    await backend.setUp();
    built = await buildApp({ databaseUrl: backend.url(), worker: false });
    url = await built.listen(0, '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    await built?.close({ timeoutMs: 1000 });
    await backend.tearDown();
  });

  it('should document the newest version only', () => {
    expect(Object.keys(openapi.paths).sort()).toEqual([
      '/permits/create',
      '/permits/{machineId}',
      '/permits/{machineId}/approve',
      '/permits/{machineId}/escalate',
      '/permits/{machineId}/pay',
      '/permits/{machineId}/status',
    ]);
  });

  it('should serve the routes only a pinned version has to its instances', async () => {
    const old = (await built.runtime.create(permitV1)).snapshot.id;
    const created = await call(`${url}/permits/create`, 'POST', {});
    expect(created.status).toBe(201);
    const fresh = created.body.data!.id;

    // REVIEW: a v1-only route, served to a v1 instance, refused to a v2 one.
    const reviewed = await call(`${url}/permits/${old}/review`, 'POST', { payload: {} });
    expect(reviewed.status).toBe(200);
    expect(reviewed.body.data!.state).toEqual(['permit.reviewing']);
    const refused = await call(`${url}/permits/${fresh}/review`, 'POST', { payload: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/route of a pinned older version only/);
    expect((await call(`${url}/permits/nope/review`, 'POST', { payload: {} })).status).toBe(404);

    // APPROVE: both versions, each instance with its own version's schema.
    expect(
      (await call(`${url}/permits/${old}/approve`, 'POST', { payload: { approverId: 1 } })).status,
    ).toBe(422);
    const approvedOld = await call(`${url}/permits/${old}/approve`, 'POST', {
      payload: { by: 'ann' },
    });
    expect(approvedOld.status).toBe(200);
    expect(approvedOld.body.data!.state).toEqual(['permit.approved']);
    const approvedNew = await call(`${url}/permits/${fresh}/approve`, 'POST', {
      payload: { approverId: 2 },
    });
    expect(approvedNew.body.data!.state).toEqual(['permit.accepted']);

    // ESCALATE: v2 only, refused to a v1 instance.
    const other = (await built.runtime.create(permitV1)).snapshot.id;
    expect((await call(`${url}/permits/${other}/escalate`, 'POST', { payload: {} })).status).toBe(
      409,
    );
    expect((await built.runtime.read(permitV2, old)).snapshot.version).toBe('v1');
  });
});
