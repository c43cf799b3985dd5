/**
 * The example server's API reference in a real browser: Debian's Chromium, headless, driven by
 * playwright-core, with the app at the root and as a plugin under `/api` of an app of its own.
 * The page loads from the app alone (every request stays on its origin and under its mount: no
 * CDN, no fonts from elsewhere), lists every operation of openapi.json, and draws the state
 * diagram of each machine. The screenshot is kept in test-artifacts/ (gitignored).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, machineRoutes, type App } from '../../generated-example/app.gen.js';
import { ROOT } from '../generator/support.js';
import { launchChromium, openReferencePage } from '../support/reference-page.js';

const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const openapi = JSON.parse(
  readFileSync(path.join(ROOT, 'generated-example/openapi.json'), 'utf8'),
) as {
  paths: Record<string, Record<string, { operationId: string }>>;
  tags: { name: string }[];
  servers: { url: string }[];
};
// One diagram per machine's tag: the admin group's tag (config `admin`) has none.
const machineTags = openapi.tags.filter((tag) => tag.name !== 'admin');
const operationIds = Object.values(openapi.paths).flatMap((item) =>
  Object.values(item).map((op) => op.operationId),
);

let app: App;
let mounted: FastifyInstance;
let browser: Browser;
const origins: Record<string, string> = {};

beforeAll(async () => {
  browser = await launchChromium();
  app = await buildApp({ databaseUrl: 'sqlite::memory:' });
  origins[''] = await app.listen(0);
  // The README's plugin form: the routes, the document and the page under the plugin's prefix.
  mounted = Fastify();
  await mounted.register(machineRoutes, { prefix: '/api', databaseUrl: 'sqlite::memory:' });
  origins['/api'] = await mounted.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await mounted?.close();
});

describe.each(['', '/api'])('the API reference page of the example server at "%s"', (mount) => {
  it('should serve the OpenAPI document it was generated with, its server URL the mount', async () => {
    const response = await fetch(`${origins[mount]}${mount}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    const served = (await response.json()) as typeof openapi;
    expect(served.servers.map((server) => server.url)).toEqual([mount === '' ? '/' : mount]);
    expect({ ...served, servers: openapi.servers }).toEqual(openapi);
  });

  it('should load offline, from under its mount, list every operation and draw the state diagrams', async () => {
    const base = `${origins[mount]}${mount}`;
    const shown = await openReferencePage(browser, `${base}/docs`, {
      firstOperation: 'order.submit',
      diagrams: machineTags.length,
    });
    const { page } = shown;
    expect(shown.operations).toEqual([...operationIds].sort());
    expect(shown.diagrams).toHaveLength(machineTags.length);
    expect(shown.diagrams.every((nodes) => nodes > 0)).toBe(true);
    const orderDiagram = await page.$eval(
      '[id="tag/order"] figure.state-diagram',
      (figure) => figure.textContent ?? '',
    );
    expect(orderDiagram).toContain('APPROVE [withinLimit]');

    if (mount === '') {
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, 'api-reference.png'), fullPage: false });
      await page.locator('[id="tag/order"]').screenshot({
        path: path.join(ARTIFACTS, 'api-reference-order.png'),
      });
    }

    expect(shown.errors).toEqual([]);
    // Everything the page asked its own origin for came from under the mount and answered 200;
    // the one outside reference (Redoc's footer logo) is refused by the page's
    // Content-Security-Policy before any connection is made.
    const own = shown.answers.filter((line) => line.includes(` ${origins[mount]}/`));
    expect(own.filter((line) => !line.startsWith(`200 ${base}/`))).toEqual([]);
    expect(own).toContain(`200 ${base}/docs/redoc.standalone.js`);
    expect(own).toContain(`200 ${base}/openapi.json`);
    const foreign = shown.answers.filter(
      (line) => !line.includes(` ${origins[mount]}/`) && !/ (data|blob):/.test(line),
    );
    expect(foreign.every((line) => line.startsWith('failed ') && line.endsWith(' csp'))).toBe(true);
    await page.close();
  }, 120_000);
});
