/**
 * Opens a generated app's API reference page in headless Chromium (Debian's, driven by
 * playwright-core) and reports what a reader sees: the operations Redoc rendered, the state
 * diagrams drawn, and every request the page made with its answer. Shared by the in-repository
 * browser test and the packed-tarball test, which mount the app at the root and under `/api`.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { HEADLESS_CHROMIUM_ARGS, chromiumExecutable } from '../../src/generator/mermaid-svg.js';

/** What the page showed. */
export interface ReferencePage {
  page: Page;
  /** The operationIds Redoc rendered a section for, sorted, without repeats. */
  operations: string[];
  /** Per drawn diagram (`figure.state-diagram svg`), how many state nodes it has. */
  diagrams: number[];
  /** Each request the page made, `<status> <url>` (`failed <url> <reason>` when unanswered). */
  answers: string[];
  /** Uncaught errors of the page's scripts. */
  errors: string[];
}

/** Launches Chromium; fails naming what to install when there is none. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumExecutable();
  if (executablePath === undefined || !existsSync(executablePath))
    throw new Error(
      "No Chromium: install Debian's chromium package (.ci/run does) or set MACHINE_ROUTES_CHROMIUM.",
    );
  return chromium.launch({ executablePath, args: HEADLESS_CHROMIUM_ARGS });
}

/**
 * Opens `url` (a `/docs` page) and waits until Redoc rendered `firstOperation` and `diagrams`
 * state diagrams are drawn.
 */
export async function openReferencePage(
  browser: Browser,
  url: string,
  expected: { firstOperation: string; diagrams: number },
): Promise<ReferencePage> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const answers: string[] = [];
  page.on('response', (answer) => answers.push(`${answer.status()} ${answer.url()}`));
  page.on('requestfailed', (request) =>
    answers.push(`failed ${request.url()} ${request.failure()?.errorText}`),
  );
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  const response = await page.goto(url);
  if (response?.status() !== 200) throw new Error(`${url} answered ${response?.status()}`);
  // Redoc renders one section per operation, with the operationId in its id.
  await page.waitForSelector(`[id$="/operation/${expected.firstOperation}"]`, { timeout: 60_000 });
  await page.waitForFunction(
    `document.querySelectorAll('figure.state-diagram svg').length >= ${expected.diagrams}`,
    undefined,
    { timeout: 60_000 },
  );
  const rendered = await page.$$eval('[id*="/operation/"]', (nodes) =>
    nodes.map((node) => node.id.slice(node.id.lastIndexOf('/operation/') + '/operation/'.length)),
  );
  const diagrams = await page.$$eval('figure.state-diagram svg', (svgs) =>
    svgs.map((svg) => svg.querySelectorAll('g.node, g.statediagram-state').length),
  );
  return { page, operations: [...new Set(rendered)].sort(), diagrams, answers, errors };
}
