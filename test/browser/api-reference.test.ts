/**
 * The example server's API reference in a real browser: Debian's Chromium, headless, driven by
 * playwright-core. The page loads from the app alone (every request stays on its origin: no
 * CDN, no fonts from elsewhere), lists every operation of openapi.json, and draws the state
 * diagram of each machine. The screenshot is kept in test-artifacts/ (gitignored).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADLESS_CHROMIUM_ARGS, chromiumExecutable } from '../../src/cli/mermaid-svg.js';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import { ROOT } from '../generator/support.js';

const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const openapi = JSON.parse(
  readFileSync(path.join(ROOT, 'generated-example/openapi.json'), 'utf8'),
) as { paths: Record<string, Record<string, { operationId: string }>>; tags: { name: string }[] };
const operationIds = Object.values(openapi.paths).flatMap((item) =>
  Object.values(item).map((op) => op.operationId),
);

let app: App;
let baseUrl: string;
let browser: Browser;

beforeAll(async () => {
  const executablePath = chromiumExecutable();
  if (executablePath === undefined || !existsSync(executablePath))
    throw new Error(
      "No Chromium: install Debian's chromium package (.ci/run does) or set MACHINE_ROUTES_CHROMIUM.",
    );
  app = await buildApp({ databaseUrl: 'sqlite::memory:' });
  baseUrl = await app.listen(0);
  browser = await chromium.launch({ executablePath, args: HEADLESS_CHROMIUM_ARGS });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('the API reference page of the example server', () => {
  it('should serve the OpenAPI document it was generated with', async () => {
    const response = await fetch(`${baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(await response.json()).toEqual(openapi);
  });

  it('should load offline, list every operation and draw the state diagrams', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const answered: string[] = [];
    page.on('response', (answer) => answered.push(answer.url()));
    const failed: string[] = [];
    page.on('requestfailed', (request) =>
      failed.push(`${request.url()} ${request.failure()?.errorText}`),
    );

    const response = await page.goto(`${baseUrl}/docs`);
    expect(response?.status()).toBe(200);
    // Redoc renders one section per operation, with the operationId in its id.
    await page.waitForSelector('[id$="/operation/order.submit"]', { timeout: 60_000 });
    // Mermaid replaces each ```mermaid block of a tag description with an SVG.
    await page.waitForFunction(
      `document.querySelectorAll('figure.state-diagram svg').length >= ${openapi.tags.length}`,
      undefined,
      { timeout: 60_000 },
    );

    const rendered = await page.$$eval('[id*="/operation/"]', (nodes) =>
      nodes.map((node) => node.id.slice(node.id.lastIndexOf('/operation/') + '/operation/'.length)),
    );
    expect([...new Set(rendered)].sort()).toEqual([...operationIds].sort());
    const diagrams = await page.$$eval('figure.state-diagram svg', (svgs) =>
      svgs.map((svg) => svg.querySelectorAll('g.node, g.statediagram-state').length),
    );
    expect(diagrams).toHaveLength(openapi.tags.length);
    expect(diagrams.every((nodes) => nodes > 0)).toBe(true);
    const orderDiagram = await page.$eval(
      '[id="tag/order"] figure.state-diagram',
      (figure) => figure.textContent ?? '',
    );
    expect(orderDiagram).toContain('APPROVE [withinLimit]');

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'api-reference.png'), fullPage: false });
    await page.locator('[id="tag/order"]').screenshot({
      path: path.join(ARTIFACTS, 'api-reference-order.png'),
    });

    expect(errors).toEqual([]);
    // Nothing came from outside the app's origin: Redoc and Mermaid are served from
    // node_modules by the app, and the page's Content-Security-Policy refuses Redoc's one
    // outside reference (the footer's logo), before any connection is made.
    const foreign = (url: string): boolean =>
      !url.startsWith(baseUrl) && !/^(data|blob):/.test(url);
    expect(answered.filter(foreign)).toEqual([]);
    expect(failed).toEqual(requests.filter(foreign).map((url) => `${url} csp`));
    expect(requests).toContain(`${baseUrl}/docs/redoc.standalone.js`);
    expect(requests).toContain(`${baseUrl}/docs/mermaid.min.js`);
    await page.close();
  }, 120_000);
});
