/**
 * The API reference a generated app serves when its config enables `docs`: the OpenAPI
 * document at `<prefix>/openapi.json` and a Redoc page at `<prefix>/docs`, whose scripts
 * (Redoc's standalone bundle, Mermaid for the state diagrams in tag descriptions) come from the
 * installed packages, never from a CDN: the page works offline and behind a strict firewall.
 *
 * Framework-neutral: a list of GET routes with their content type and body, which the
 * generated app mounts on Fastify or Express.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

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
 * The file of a page script. `redoc` and `mermaid` are optional peer dependencies (only an app
 * serving its reference needs them): a missing one fails at start, naming the install.
 */
function resolveScript(name: string, file: string): string {
  try {
    return require.resolve(file);
  } catch {
    throw new Error(
      `docs.enabled serves the API reference page with the '${name}' package, which is not installed: npm i redoc@2 mermaid@11`,
    );
  }
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
 * The page: Redoc renders the document; each ```mermaid block of a description (the state
 * diagram of each machine's tag) is then drawn by Mermaid, again whenever Redoc re-renders.
 */
function page(title: string, base: string): string {
  const script = `
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'neutral' });
let drawn = 0;
async function drawDiagrams() {
  const blocks = document.querySelectorAll('pre > code.language-mermaid');
  for (const code of blocks) {
    const pre = code.parentElement;
    if (pre.dataset.diagram === 'pending') continue;
    pre.dataset.diagram = 'pending';
    const { svg } = await mermaid.render('state-diagram-' + drawn++, code.textContent);
    const figure = document.createElement('figure');
    figure.className = 'state-diagram';
    figure.innerHTML = svg;
    pre.replaceWith(figure);
  }
}
new MutationObserver(() => void drawDiagrams()).observe(document.getElementById('redoc'), {
  childList: true,
  subtree: true,
});
Redoc.init(${scriptString(`${base}/openapi.json`)}, {
  expandResponses: '200,201',
  hideDownloadButton: false,
  jsonSampleExpandLevel: 3,
}, document.getElementById('redoc'));
`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body { margin: 0; } figure.state-diagram { margin: 1em 0; overflow-x: auto; }</style>
</head>
<body>
<div id="redoc"></div>
<script src="${escapeHtml(`${base}/docs/redoc.standalone.js`)}"></script>
<script src="${escapeHtml(`${base}/docs/mermaid.min.js`)}"></script>
<script>${script}</script>
</body>
</html>
`;
}

/**
 * The routes of the reference: `<prefix>/openapi.json`, `<prefix>/docs` and the page's two
 * scripts under `<prefix>/docs/`; wherever the app is mounted, the page loads them from there.
 *
 * @example for (const route of apiReferenceRoutes({ documentFile, title: 'Orders' })) app.get(route.path, ...)
 */
export function apiReferenceRoutes(options: ApiReferenceOptions): ApiReferenceRoute[] {
  const prefix = normalizePrefix(options.prefix);
  const redoc = resolveScript('redoc', 'redoc/bundles/redoc.standalone.js');
  const mermaid = resolveScript('mermaid', 'mermaid/dist/mermaid.min.js');
  const javascript = 'text/javascript; charset=utf-8';
  const { document } = options;
  const loadDocument = typeof document === 'string' ? async () => document : cached(document);
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
        page(options.title, `${mountPathOf(requestPath, pagePath)}${prefix}`),
    },
    {
      path: `${prefix}/docs/redoc.standalone.js`,
      contentType: javascript,
      headers: {},
      read: cached(() => readFile(redoc)),
    },
    {
      path: `${prefix}/docs/mermaid.min.js`,
      contentType: javascript,
      headers: {},
      read: cached(() => readFile(mermaid)),
    },
  ];
}
