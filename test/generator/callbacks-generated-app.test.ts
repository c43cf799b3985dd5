/**
 * Callback URLs and webhooks in the generated app: the callbacks fixture's config is generated
 * (`renderProject`, into test-artifacts/) and its `buildApp` started on a listening server on a
 * SQLite file. The generated route tables mount the callback and webhook routes: a minted URL
 * sends its event once, a signed delivery is applied once; without a webhook's secret the app
 * refuses to start, naming the variable.
 */
import { createHmac } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../../src/app/app-parts.js';
import { renderProject } from '../../src/generator/generate.js';
import { send } from '../runtime/http/support/servers.js';
import { ROOT } from './support.js';

process.env['MACHINE_CALLBACK_SECRET'] = 'generated-secret';

type BuildApp = (options: { databaseUrl: string; worker: boolean }) => Promise<BuiltApp<unknown>>;

let buildApp: BuildApp;
let outputDir: string;
let dataDir: string;

beforeAll(async () => {
  const project = await renderProject({
    config: 'fixtures/generator/callbacks/machine-routes.config.ts',
    cwd: ROOT,
  });
  outputDir = project.outputDir;
  rmSync(outputDir, { recursive: true, force: true });
  for (const file of project.files) {
    const target = path.join(outputDir, file.path);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, file.contents);
  }
  buildApp = (
    (await import(pathToFileURL(path.join(outputDir, 'app.gen.ts')).href)) as {
      buildApp: BuildApp;
    }
  ).buildApp;
  dataDir = mkdtempSync(path.join(tmpdir(), 'mr-callbacks-app-'));
}, 120_000);
afterAll(() => {
  rmSync(outputDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the generated app of a config with callbacks and webhooks (SQLite file)', () => {
  it('should refuse to start without the webhook secret, naming the variable', async () => {
    delete process.env['TEST_STRIPE_SECRET'];
    await expect(
      buildApp({ databaseUrl: `sqlite:${path.join(dataDir, 'refused.db')}`, worker: false }),
    ).rejects.toMatchObject({
      code: 'MR_SIGNING_SECRET_MISSING',
      message: expect.stringMatching(/TEST_STRIPE_SECRET/),
    });
  });

  it('should serve the callback URL once and apply a signed delivery once', async () => {
    process.env['TEST_STRIPE_SECRET'] = 'whsec_app';
    const built = await buildApp({
      databaseUrl: `sqlite:${path.join(dataDir, 'machines.db')}`,
      worker: false,
    });
    try {
      const url = await built.listen(0, '127.0.0.1');
      const created = await send(url, 'POST', '/approvals/create');
      const id = (created.body as { data: { id: string } }).data.id;
      const requested = await send(url, 'POST', `/approvals/${id}/request`, {
        body: { payload: { expiresAt: Date.now() + 3_600_000 } },
      });
      const callback = (requested.body as { data: { output: { callbackUrl: string } } }).data.output
        .callbackUrl;
      expect((await send(url, 'POST', callback, { body: { approver: 'ann' } })).status).toBe(200);
      expect(await send(url, 'POST', callback, { body: { approver: 'ann' } })).toMatchObject({
        status: 409,
        body: { code: 'MR_CALLBACK_USED' },
      });

      const raw = JSON.stringify({
        type: 'payment_intent.succeeded',
        data: { object: { amount: 9, metadata: { orderNumber: 'APP-1' } } },
      });
      const t = Math.floor(Date.now() / 1000);
      const headers = {
        'content-type': 'application/json',
        'x-delivery-id': 'evt_app',
        'stripe-signature': `t=${t},v1=${createHmac('sha256', 'whsec_app').update(`${t}.${raw}`).digest('hex')}`,
      };
      const first = await send(url, 'POST', '/approvals/webhooks/stripe', { raw, headers });
      expect(first).toMatchObject({ status: 200, body: { data: { output: { paid: [9] } } } });
      const again = await send(url, 'POST', '/approvals/webhooks/stripe', { raw, headers });
      expect(again.body).toEqual(first.body);
    } finally {
      await built.close({ timeoutMs: 1000 });
    }
  });
});
