/**
 * The admin console of the example server in a real browser (Debian's Chromium, headless,
 * playwright-core), with the app at the root and as a plugin under `/api`: the operator logs in
 * through the browser's own HTTP Basic prompt (the example's `operator` middleware), lists the
 * orders, filters them by state, opens one, sees its statechart with the current state marked,
 * sees an event sent by someone else arrive in the timeline live (the admin state stream), then
 * cancels it and sees the state, the diagram and the timeline follow. Assertions are on the
 * rendered DOM; a screenshot goes to test-artifacts/ (gitignored) for a person to look at.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, machineRoutes, type App } from '../../generated-example/app.gen.js';
import { ROOT } from '../generator/support.js';
import { launchChromium } from '../support/reference-page.js';

const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const TOKEN = 'operator-token';

let directory: string;
let app: App;
let mounted: FastifyInstance;
let browser: Browser;
const origins: Record<string, string> = {};

beforeAll(async () => {
  directory = mkdtempSync(path.join(tmpdir(), 'machine-routes-console-'));
  browser = await launchChromium();
  app = await buildApp({ databaseUrl: `sqlite:${path.join(directory, 'root.db')}` });
  origins[''] = await app.listen(0);
  mounted = Fastify();
  await mounted.register(machineRoutes, {
    prefix: '/api',
    databaseUrl: `sqlite:${path.join(directory, 'mounted.db')}`,
  });
  origins['/api'] = await mounted.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await mounted?.close();
  rmSync(directory, { recursive: true, force: true });
});

async function post(url: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: 'POST',
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  if (response.status >= 300) throw new Error(`${url} answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

/** A new order through the public API, submitted unless `draft`. */
async function order(base: string, draft = false): Promise<string> {
  const created = (await post(`${base}/orders/create`)) as { data: { id: string } };
  const id = created.data.id;
  if (!draft) await post(`${base}/orders/${id}/submit`, { payload: { amount: 2500 } });
  return id;
}

async function rowIds(page: Page): Promise<string[]> {
  return page.$$eval('#instances tbody tr', (rows) =>
    rows.map((row) => row.getAttribute('data-id') ?? ''),
  );
}

describe.each(['', '/api'])('the admin console of the example server at "%s"', (mount) => {
  it('should refuse the page and its API without the operator token', async () => {
    const base = `${origins[mount]}${mount}`;
    for (const url of [`${base}/admin/console`, `${base}/admin/api/machines`]) {
      const response = await fetch(url);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Basic /);
    }
  });

  it('should list, filter by state, open an order, mark its state, follow it live and cancel it', async () => {
    const base = `${origins[mount]}${mount}`;
    const submitted = [await order(base), await order(base)];
    const draft = await order(base, true);
    const context = await browser.newContext({
      viewport: { width: 1400, height: 1000 },
      // The browser answers the console's Basic challenge, as a person typing the token would.
      httpCredentials: { username: 'operator', password: TOKEN },
    });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('dialog', (dialog) => void dialog.accept());
    const answers: string[] = [];
    page.on('response', (answer) => answers.push(`${answer.status()} ${answer.url()}`));

    const response = await page.goto(`${base}/admin/console#/order`);
    expect(response?.status()).toBe(200);
    await page.waitForFunction(`document.querySelectorAll('#instances tbody tr').length >= 3`);
    expect(await rowIds(page)).toEqual(expect.arrayContaining([...submitted, draft]));

    // Filter by state: only the submitted orders, each showing its state.
    await page.selectOption('#state-filter', 'order.submitted');
    await page.waitForFunction(`document.querySelectorAll('#instances tbody tr').length === 2`);
    expect((await rowIds(page)).sort()).toEqual([...submitted].sort());
    const states = await page.$$eval('#instances tbody td.state', (cells) =>
      cells.map((cell) => cell.textContent),
    );
    expect(states).toEqual(['submitted', 'submitted']);

    // Open one: the statechart drawn by generate, its current state marked.
    const id = submitted[0]!;
    await page.click(`#instances tbody tr[data-id="${id}"] a`);
    await page.waitForSelector('#instance-view:not([hidden])');
    await page.waitForSelector('#diagram svg g.node.mr-current');
    const marked = await page.$$eval('#diagram svg .mr-current', (nodes) =>
      nodes.map((node) => [node.getAttribute('data-current'), node.textContent?.trim()]),
    );
    expect(marked).toEqual([['order.submitted', expect.stringContaining('submitted')]]);
    expect(await page.textContent('#current-state')).toBe('submitted');
    await page.waitForSelector('#live[data-live="open"]');

    // Someone else's event arrives in the timeline without a reload (the admin state stream).
    const quoted = await fetch(`${base}/orders/${id}/quote?quantity=2`);
    expect(quoted.status).toBe(200);
    await page.waitForSelector('#timeline li[data-type="QUOTE"]', { timeout: 15_000 });

    // Cancel it from the console: state, diagram and timeline follow.
    await page.click('#actions button[data-action="cancel"]');
    await page.waitForFunction(
      `document.getElementById('current-state')?.textContent === 'cancelled'`,
    );
    await page.waitForSelector('#diagram svg g.node.mr-current[data-current="order.cancelled"]');
    // The record is drawn from the repair's answer; the timeline is read again after it.
    await page.waitForFunction(
      `document.querySelector('#timeline li')?.getAttribute('data-type') === 'CANCEL'`,
    );
    const top = await page.$eval('#timeline li', (item) => ({
      type: item.getAttribute('data-type'),
      text: item.textContent,
    }));
    expect(top.type).toBe('CANCEL');
    expect(top.text).toContain('operator:console');
    expect(await page.isDisabled('#actions button[data-action="cancel"]')).toBe(true);

    const types = await page.$$eval('#timeline li', (items) =>
      items.map((item) => item.getAttribute('data-type')),
    );
    expect(types.indexOf('CANCEL')).toBeLessThan(types.indexOf('QUOTE'));

    // The other submitted order: its pending EXPIRE timer fired from its row, through the
    // timer's own path.
    await page.goto(`${base}/admin/console#/order/${submitted[1]!}`);
    await page.waitForSelector('#timers button[data-action="fire"]');
    await page.click('#timers button[data-action="fire"]');
    await page.waitForFunction(
      `document.getElementById('current-state')?.textContent === 'expired'`,
    );
    await page.waitForSelector('#diagram svg g.node.mr-current[data-current="order.expired"]');
    await page.goto(`${base}/admin/console#/order/${id}`);
    await page.waitForSelector('#diagram svg g.node.mr-current[data-current="order.cancelled"]');
    if (mount === '') {
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, 'admin-console.png'), fullPage: true });
    }
    expect(errors).toEqual([]);
    // Everything the page asked for came from under the mount (relative URLs): 200, or the
    // 401 challenge the browser answered with the credentials.
    expect(
      answers.filter((line) => !/^(200|401) /.test(line) || !line.includes(` ${base}/admin/`)),
    ).toEqual([]);
    expect(answers).toContain(`200 ${base}/admin/console/diagram/order`);
    await context.close();
  }, 120_000);
});
