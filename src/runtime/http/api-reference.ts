/**
 * The API reference a generated app serves when its config enables `docs`: the OpenAPI
 * document at `<prefix>/openapi.json` and a Redoc page at `<prefix>/docs`. Its one script,
 * Redoc's standalone bundle, ships inside this package (the build copies it to
 * `dist/api-reference/`), never from a CDN: the page works offline, behind a strict firewall,
 * and the app installs nothing for it. The state diagrams were drawn by `generate` (SVG, in
 * `diagrams.gen.ts`): Mermaid does not run in the page, nor is it installed beside the server.
 *
 * Framework-neutral: a list of GET routes with their content type and body, which the
 * generated app mounts on Fastify or Express.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ApiReferenceUnavailableException } from '../errors.js';
import { FROM_SOURCES, OWN_ROOT } from '../own-root.js';

/** One GET route of the reference. */
export interface ApiReferenceRoute {
  /** The route's path inside the app (below the app's own mount path). */
  path: string;
  contentType: string;
  /** Further response headers (the page's Content-Security-Policy). */
  headers: Record<string, string>;
  /**
   * The body answering `requestPath`, the path the request arrived with, mount included
   * (Fastify's `request.url`, Express's `request.originalUrl`): the page's script and document
   * URLs, and the document's `servers`, carry the path the app is mounted under, which only the
   * request knows (a Fastify plugin's `prefix`, an Express `app.use('/api', ...)`).
   */
  read(requestPath: string): Promise<string | Buffer>;
}

/** Options of {@link apiReferenceRoutes}. */
export interface ApiReferenceOptions {
  /**
   * The OpenAPI document, as JSON text, or a function loading it on the first request (the
   * generated app imports its `openapi.gen.ts` then: a server that nobody asks for its document
   * never loads it; under tsx that module cost about 5 ms and 1 MB at each start).
   */
  document: string | (() => Promise<string>);
  /**
   * The SVG of each machine's state diagram by tag name (`generate` renders them into
   * `diagrams.gen.ts`), or a function loading them on the first request for the page. The page
   * shows each in place of the Mermaid source of its tag's description; a tag without one keeps
   * the source. Default none.
   */
  diagrams?: Readonly<Record<string, string>> | (() => Promise<Readonly<Record<string, string>>>);
  /** The page's title (the document's `info.title`). */
  title: string;
  /**
   * Where the reference sits inside the app (`/reference`: `/reference/docs`); default the app's
   * root. The path the app itself is mounted under is read from each request, not set here.
   */
  prefix?: string;
}

const require = createRequire(import.meta.url);

/**
 * Brotli-decompresses `data`; node:zlib (and its streams) loads on the first request for the page.
 * Required rather than `import()`ed: a dynamic import in the runtime's large chunk makes tsx
 * rewrite that whole chunk (scripts/build.js).
 */
async function decompress(data: Buffer): Promise<Buffer> {
  const { brotliDecompress } = require('node:zlib') as typeof import('node:zlib');
  return new Promise((resolve, reject) =>
    brotliDecompress(data, (error, result) => (error ? reject(error) : resolve(result))),
  );
}

/**
 * The page may load only from its own origin: Redoc's footer logo (a CDN image) is refused, so
 * the page makes no request elsewhere, and a description cannot pull anything in.
 */
const PAGE_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
].join('; ');

/**
 * Redoc's bundle: the package's own copy once built, Brotli-compressed (0.27 MB of a production
 * install instead of 1.1 MB; decompressed once, on the first request for it, and served as it was); run from
 * its sources (this repository), the `redoc` development dependency's. Missing, the server fails
 * at start, naming the file.
 */
function redocBundle(): () => Promise<Buffer> {
  const shipped = fileURLToPath(new URL('api-reference/redoc.standalone.js.br', OWN_ROOT));
  if (existsSync(shipped)) return async () => decompress(await readFile(shipped));
  if (FROM_SOURCES) {
    try {
      const plain = require.resolve('redoc/bundles/redoc.standalone.js');
      return () => readFile(plain);
    } catch {
      // reported below
    }
  }
  throw new ApiReferenceUnavailableException(
    `docs.enabled serves the API reference page with Redoc's bundle, which the installed machine-routes package lacks (${shipped}): reinstall machine-routes, or set docs.enabled to false.`,
    { path: shipped },
  );
}

/** Reads a file once, on first request. */
function cached<Body>(load: () => Promise<Body>): () => Promise<Body> {
  let body: Promise<Body> | null = null;
  return () => {
    body ??= load().catch((error: unknown) => {
      body = null;
      throw error;
    });
    return body;
  };
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!,
  );
}

/** A string literal for an inline script: `</script>` in it cannot end the script. */
function scriptString(text: string): string {
  return JSON.stringify(text).replace(/</g, '\\u003c');
}

/**
 * The path the app is mounted under, from the path a request arrived with and the route's own
 * path: `/api/docs` answered by `/docs` -> `/api`. A trailing slash (Express routes `/docs/`
 * to `/docs`) and the query are not part of it.
 */
function mountPathOf(requestPath: string, routePath: string): string {
  const pathname = requestPath.replace(/[?#].*$/, '').replace(/\/+$/, '');
  return pathname.endsWith(routePath) ? pathname.slice(0, pathname.length - routePath.length) : '';
}

/**
 * The document as served under `mount`: each server URL that is a path (the default `/`) gets
 * the mount in front, so "try it" and clients generated from the served document reach the
 * routes where they are; absolute server URLs are the user's own and stay.
 */
function documentAt(document: string, mount: string): string {
  if (mount === '') return document;
  const parsed = JSON.parse(document) as { servers?: { url: string }[] };
  parsed.servers = (parsed.servers ?? [{ url: '/' }]).map((server) =>
    server.url.startsWith('/')
      ? { ...server, url: `${mount}${server.url === '/' ? '' : server.url}` }
      : server,
  );
  return `${JSON.stringify(parsed, null, 2)}\n`;
}

/** `/api/` -> `/api`, `api` -> `/api`, `` -> ``. */
function normalizePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '' : `/${trimmed}`;
}

/**
 * The page: Redoc renders the document; each ```mermaid block of a tag's description (the state
 * diagram of each machine) is then replaced with the SVG `generate` drew of it, again whenever
 * Redoc re-renders.
 */
function page(title: string, base: string, diagrams: Readonly<Record<string, string>>): string {
  const script = `
const drawings = new Map(
  [...document.querySelectorAll('template[data-tag]')].map((template) => [template.dataset.tag, template]),
);
function drawDiagrams() {
  for (const code of document.querySelectorAll('pre > code.language-mermaid')) {
    const section = code.closest('[id^="tag/"]');
    const drawing = section === null ? undefined : drawings.get(section.id.slice('tag/'.length));
    if (drawing === undefined) continue;
    const figure = document.createElement('figure');
    figure.className = 'state-diagram';
    figure.append(drawing.content.cloneNode(true));
    code.parentElement.replaceWith(figure);
  }
}
new MutationObserver(drawDiagrams).observe(document.getElementById('redoc'), {
  childList: true,
  subtree: true,
});
Redoc.init(${scriptString(`${base}/openapi.json`)}, {
  expandResponses: '200,201',
  hideDownloadButton: false,
  jsonSampleExpandLevel: 3,
}, document.getElementById('redoc'));
`;
  const templates = Object.entries(diagrams)
    .map(([tag, svg]) => `<template data-tag="${escapeHtml(tag)}">${svg}</template>\n`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body { margin: 0; } figure.state-diagram { margin: 1em 0; overflow-x: auto; }</style>
</head>
<body>
${templates}<div id="redoc"></div>
<script src="${escapeHtml(`${base}/docs/redoc.standalone.js`)}"></script>
<script>${script}</script>
</body>
</html>
`;
}

/**
 * The routes of the reference: `<prefix>/openapi.json`, `<prefix>/docs` and the page's
 * script under `<prefix>/docs/`; wherever the app is mounted, the page loads them from there.
 *
 * @example for (const route of apiReferenceRoutes({ documentFile, title: 'Orders' })) app.get(route.path, ...)
 */
export function apiReferenceRoutes(options: ApiReferenceOptions): ApiReferenceRoute[] {
  const prefix = normalizePrefix(options.prefix);
  const redoc = redocBundle();
  const { document, diagrams = {} } = options;
  const loadDocument = typeof document === 'string' ? async () => document : cached(document);
  const loadDiagrams = typeof diagrams === 'function' ? cached(diagrams) : async () => diagrams;
  const documentPath = `${prefix}/openapi.json`;
  const pagePath = `${prefix}/docs`;
  return [
    {
      path: documentPath,
      contentType: 'application/json; charset=utf-8',
      headers: {},
      read: async (requestPath) =>
        documentAt(await loadDocument(), mountPathOf(requestPath, documentPath)),
    },
    {
      path: pagePath,
      contentType: 'text/html; charset=utf-8',
      headers: { 'content-security-policy': PAGE_POLICY },
      read: async (requestPath) =>
        page(options.title, `${mountPathOf(requestPath, pagePath)}${prefix}`, await loadDiagrams()),
    },
    {
      path: `${prefix}/docs/redoc.standalone.js`,
      contentType: 'text/javascript; charset=utf-8',
      headers: {},
      read: cached(redoc),
    },
  ];
}
