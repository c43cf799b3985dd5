/**
 * The API reference routes of the generated apps over HTTP, on Fastify (the example) and on
 * Express (the express fixture, the example's config emitted for Express): the document, the
 * page with its Content-Security-Policy, and the scripts from node_modules.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiReferenceRoutes } from '../../src/runtime/http/api-reference.js';
import { buildApp as buildFastifyApp } from '../../generated-example/app.gen.js';
import { buildApp as buildExpressApp } from './__snapshots__/express/app.gen.js';
import { validateConfig } from '../../src/generator/validate-config.js';
import { ROOT } from './support.js';

describe.each([
  ['fastify', buildFastifyApp, 'generated-example/openapi.json'],
  ['express', buildExpressApp, 'test/generator/__snapshots__/express/openapi.json'],
] as const)('the %s app with docs enabled', (_framework, buildApp, documentFile) => {
  it('should serve /openapi.json, /docs and the page scripts', async () => {
    const app = await buildApp({ databaseUrl: 'sqlite::memory:' });
    try {
      const base = await app.listen(0);
      const document = await fetch(`${base}/openapi.json`);
      expect(document.status).toBe(200);
      expect(await document.text()).toBe(readFileSync(path.join(ROOT, documentFile), 'utf8'));

      const page = await fetch(`${base}/docs`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      const html = await page.text();
      expect(html).toContain('<title>machine-routes example</title>');
      expect(html).toContain('<script src="/docs/redoc.standalone.js"></script>');

      for (const script of ['redoc.standalone.js', 'mermaid.min.js']) {
        const answer = await fetch(`${base}/docs/${script}`);
        expect(answer.status, script).toBe(200);
        expect(answer.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
        expect((await answer.arrayBuffer()).byteLength).toBeGreaterThan(500_000);
      }
    } finally {
      await app.close();
    }
  });
});

describe('apiReferenceRoutes', () => {
  it('should put every route under the prefix', async () => {
    const routes = apiReferenceRoutes({
      document: '{}',
      title: 'A <b> & c',
      prefix: 'api/',
    });
    expect(routes.map((route) => route.path)).toEqual([
      '/api/openapi.json',
      '/api/docs',
      '/api/docs/redoc.standalone.js',
      '/api/docs/mermaid.min.js',
    ]);
    const html = String(await routes[1]!.read());
    expect(html).toContain('<title>A &lt;b&gt; &amp; c</title>');
    expect(html).toContain('Redoc.init("/api/openapi.json"');
    expect(html).toContain('<script src="/api/docs/mermaid.min.js"></script>');
  });
});

describe('apiReferenceRoutes with a document loaded on demand', () => {
  it('should load the document on the first request only, and again after a failed load', async () => {
    let loads = 0;
    const routes = apiReferenceRoutes({
      document: async () => {
        loads += 1;
        if (loads === 1) throw new Error('not yet');
        return '{"openapi":"3.1.0"}';
      },
      title: 'T',
    });
    // Building the routes (at start) loads nothing.
    expect(loads).toBe(0);
    const document = routes.find((route) => route.path === '/openapi.json')!;
    await expect(document.read()).rejects.toThrow('not yet');
    expect(await document.read()).toBe('{"openapi":"3.1.0"}');
    expect(await document.read()).toBe('{"openapi":"3.1.0"}');
    expect(loads).toBe(2);
  });
});

describe('validateConfig', () => {
  it('should refuse docs without the openapi output kind', () => {
    const issues = validateConfig({
      registrations: [],
      docs: { enabled: true },
      output: { kinds: ['handlers', 'client'] },
    });
    expect(issues.map((issue) => issue.message)).toEqual([
      "docs.enabled serves the emitted openapi.json, but output.kinds (handlers, client) leaves it out. Add 'openapi' to output.kinds, or set docs.enabled to false.",
    ]);
    expect(validateConfig({ registrations: [], docs: { enabled: true } })).toEqual([]);
  });
});
