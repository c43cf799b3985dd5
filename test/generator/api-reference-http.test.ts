/**
 * The API reference routes of the generated apps over HTTP, on Fastify (the example) and on
 * Express (the express fixture, the example's config emitted for Express): the document, the
 * page with its Content-Security-Policy and its drawn diagrams, and Redoc's bundle the package
 * ships.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import { createServer, type Server } from 'node:http';
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

      // The page's one script; the diagrams are drawn already, inline in the page.
      const answer = await fetch(`${base}/docs/redoc.standalone.js`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect((await answer.arrayBuffer()).byteLength).toBeGreaterThan(500_000);
      expect(html).toContain('<template data-tag="order"><svg id="state-diagram-order-0"');
      expect((await fetch(`${base}/docs/mermaid.min.js`)).status).toBe(404);
    } finally {
      await app.close();
    }
  });
});

// The README's Express form: the generated app mounted on an application of the user's.
describe('the express app mounted at /api of an app of its own', () => {
  it('should serve the page, its scripts and the document from under /api, the server URL /api', async () => {
    const routes = await buildExpressApp({ databaseUrl: 'sqlite::memory:' });
    const own = express();
    own.use('/api', routes.app);
    const server: Server = createServer(own);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const address = server.address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/api`;
      for (const page of ['/docs', '/docs/']) {
        const html = await (await fetch(`${base}${page}`)).text();
        expect(html).toContain('<script src="/api/docs/redoc.standalone.js"></script>');
        expect(html).toContain('Redoc.init("/api/openapi.json"');
      }
      expect((await fetch(`${base}/docs/redoc.standalone.js`)).status).toBe(200);
      const document = (await (await fetch(`${base}/openapi.json`)).json()) as {
        servers: { url: string }[];
      };
      expect(document.servers.map((entry) => entry.url)).toEqual(['/api']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await routes.close();
    }
  });
});

describe('apiReferenceRoutes', () => {
  it('should put every route under the prefix, below the mount the request came through', async () => {
    const routes = apiReferenceRoutes({
      document: '{}',
      title: 'A <b> & c',
      prefix: 'api/',
    });
    expect(routes.map((route) => route.path)).toEqual([
      '/api/openapi.json',
      '/api/docs',
      '/api/docs/redoc.standalone.js',
    ]);
    const html = String(await routes[1]!.read('/api/docs'));
    expect(html).toContain('<title>A &lt;b&gt; &amp; c</title>');
    expect(html).toContain('Redoc.init("/api/openapi.json"');
    expect(html).toContain('<script src="/api/docs/redoc.standalone.js"></script>');
    // Mounted under /v1 (a plugin prefix): the prefix is not doubled, the mount comes first.
    const mounted = String(await routes[1]!.read('/v1/api/docs?x=1'));
    expect(mounted).toContain('Redoc.init("/v1/api/openapi.json"');
    expect(mounted).toContain('<script src="/v1/api/docs/redoc.standalone.js"></script>');
  });

  it('should keep a server URL of the config that is not a path, and escape the mount', async () => {
    const [document, page] = apiReferenceRoutes({
      document: JSON.stringify({
        servers: [{ url: 'https://api.example.com' }, { url: '/v2', description: 'v2' }],
      }),
      title: 'T',
    });
    expect(JSON.parse(String(await document!.read('/api/openapi.json')))).toEqual({
      servers: [{ url: 'https://api.example.com' }, { url: '/api/v2', description: 'v2' }],
    });
    const html = String(await page!.read('/a"</script>/docs'));
    expect(html).toContain('<script src="/a&quot;&lt;/script&gt;/docs/redoc.standalone.js">');
    expect(html).toContain('Redoc.init("/a\\"\\u003c/script>/openapi.json"');
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
    await expect(document.read('/openapi.json')).rejects.toThrow('not yet');
    expect(await document.read('/openapi.json')).toBe('{"openapi":"3.1.0"}');
    expect(await document.read('/openapi.json')).toBe('{"openapi":"3.1.0"}');
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

describe('Redoc bundle of the built package', () => {
  it('should ship it Brotli-compressed in dist/ and serve it decompressed, the same bytes as Redoc', async () => {
    // The build the global setup made: the package's own copy, not the redoc devDependency.
    const built = (await import(
      path.join(ROOT, 'dist/runtime/index.js')
    )) as typeof import('../../src/runtime/index.js');
    const script = built
      .apiReferenceRoutes({ document: '{}', title: 'T' })
      .find((route) => route.path.endsWith('/redoc.standalone.js'))!;
    const served = (await script.read('/docs/redoc.standalone.js')) as Buffer;
    const redoc = readFileSync(path.join(ROOT, 'node_modules/redoc/bundles/redoc.standalone.js'));
    expect(Buffer.compare(Buffer.from(served), redoc)).toBe(0);
    const shipped = readFileSync(path.join(ROOT, 'dist/api-reference/redoc.standalone.js.br'));
    expect(shipped.length).toBeLessThan(redoc.length / 4);
  });
});
