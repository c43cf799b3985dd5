/**
 * Renders Mermaid source to SVG with Mermaid itself (mermaid-isomorphic) in a headless Chromium,
 * offline: the page loads Mermaid from node_modules. Mermaid lays diagrams out in a browser
 * (it measures text), so there is no browserless renderer of the same output.
 *
 * Used by `diagram --format svg` and by `generate` for the reference page (config `docs`).
 * Needs `mermaid-isomorphic` and `playwright` (development dependencies of the app) and a Chromium:
 * `MACHINE_ROUTES_CHROMIUM` names its executable, else `/usr/bin/chromium` when present, else
 * Playwright's own browser.
 */
import { existsSync } from 'node:fs';

/** Flags for a sandboxless container that must never reach the network. */
export const HEADLESS_CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** The Chromium executable to launch, `undefined`: Playwright's own. */
export function chromiumExecutable(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const configured = env['MACHINE_ROUTES_CHROMIUM'];
  if (configured !== undefined && configured !== '') return configured;
  return existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined;
}

/** One diagram to draw: its Mermaid source and the prefix of its SVG's element ids. */
export interface MermaidDiagram {
  source: string;
  /** The SVG's id is `<prefix>-0`: diagrams shown on one page need prefixes of their own. */
  prefix?: string;
}

/**
 * SVG of each diagram, in order, drawn in one Chromium. Throws an Error naming what is missing
 * when it cannot draw.
 */
export async function renderMermaidSvgs(
  diagrams: readonly MermaidDiagram[],
  mermaidConfig: Record<string, unknown> = {},
): Promise<string[]> {
  let createMermaidRenderer: typeof import('mermaid-isomorphic').createMermaidRenderer;
  try {
    ({ createMermaidRenderer } = await import('mermaid-isomorphic'));
  } catch {
    throw new Error(
      'drawing a state diagram as SVG needs the packages mermaid-isomorphic and playwright: npm i -D mermaid-isomorphic playwright',
    );
  }
  const executablePath = chromiumExecutable();
  const render = createMermaidRenderer({
    launchOptions: {
      ...(executablePath === undefined ? {} : { executablePath }),
      args: HEADLESS_CHROMIUM_ARGS,
    },
  });
  // Concurrent calls share the renderer's one browser.
  const results = await Promise.all(
    diagrams.map(({ source, prefix }) => render([source], { prefix, mermaidConfig })),
  );
  return results.map(([result]) => {
    if (result === undefined || result.status === 'rejected') {
      const reason: unknown = result?.reason;
      throw new Error(
        `Mermaid could not render the diagram: ${reason instanceof Error ? reason.message : String(reason)}`,
      );
    }
    return result.value.svg;
  });
}

/** SVG of one Mermaid diagram. Throws an Error naming what is missing when it cannot render. */
export async function renderMermaidSvg(source: string): Promise<string> {
  const [svg] = await renderMermaidSvgs([{ source }]);
  return svg!;
}
