/**
 * A machine's state diagram in Mermaid (`stateDiagram-v2`): compound states nest, parallel
 * regions are separated by `--`, transitions are labelled with their event and guards, and a
 * state's `description` is shown under its name. Pure and deterministic (document order).
 */
import type { MachineDefinition } from '../../runtime/definition/machine-definition.js';
import { isLeaf, type StateNode } from '../../runtime/definition/state-node.js';

/** Mermaid id of a state: its route with `.` made safe (Mermaid ids take no dots). */
function mermaidId(node: StateNode): string {
  return node.route.replace(/[^A-Za-z0-9_]/g, '_') || 'root';
}

/** Text Mermaid shows verbatim: no line breaks, no characters of its own syntax. */
function label(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/;/g, ',')
    .replace(/:/g, ' -')
    .replace(/[{}"<>#]/g, ' ')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/**
 * The transitions a state declares, one arrow per target: Mermaid draws two arrows between the
 * same states (two self-loops above all) on top of each other, so their labels are joined.
 */
function transitionLines(node: StateNode, indent: string): string[] {
  const from = mermaidId(node);
  const labels = new Map<string, string[]>();
  for (const transition of node.on.values()) {
    for (const branch of transition.branches) {
      const guards = branch.guards.map((guard) => guard.name);
      const to = branch.target === null ? from : mermaidId(branch.target);
      const list = labels.get(to) ?? [];
      list.push(
        label(`${transition.eventType}${guards.length > 0 ? ` [${guards.join(', ')}]` : ''}`),
      );
      labels.set(to, list);
    }
  }
  return [...labels].map(([to, texts]) => `${indent}${from} --> ${to} : ${texts.join(', ')}`);
}

/** Declarations and transitions of the children of `parent` (a compound or the root). */
function childLines(parent: StateNode, indent: string): string[] {
  const lines: string[] = [];
  if (parent.initial !== null) lines.push(`${indent}[*] --> ${mermaidId(parent.initial)}`);
  for (const child of parent.children) lines.push(...stateLines(child, indent));
  return lines;
}

function stateLines(node: StateNode, indent: string): string[] {
  const id = mermaidId(node);
  const lines = [`${indent}state "${label(node.key)}" as ${id}`];
  const description = node.config.description;
  // Mermaid shows a description under atomic states only (a composite takes none).
  if (isLeaf(node) && description !== undefined && description.trim() !== '')
    lines.push(`${indent}${id} : ${label(description)}`);
  if (node.type === 'compound') {
    lines.push(`${indent}state ${id} {`, ...childLines(node, `${indent}  `), `${indent}}`);
  } else if (node.type === 'parallel') {
    const regions = node.children.map((region) => stateLines(region, `${indent}  `));
    lines.push(`${indent}state ${id} {`);
    regions.forEach((region, index) => {
      if (index > 0) lines.push(`${indent}  --`);
      lines.push(...region);
    });
    lines.push(`${indent}}`);
  }
  lines.push(...transitionLines(node, indent));
  if (node.type === 'final') lines.push(`${indent}${id} --> [*]`);
  return lines;
}

/**
 * The Mermaid source of a machine's state diagram.
 *
 * @example machineDiagram(orderMachine) // 'stateDiagram-v2\n  [*] --> draft\n  ...'
 */
export function machineDiagram(definition: MachineDefinition): string {
  const root = definition.root;
  const lines = ['stateDiagram-v2', ...childLines(root, '  ')];
  for (const transition of root.on.values()) {
    // Root-level handlers apply in every state: drawn as a self-loop note on the machine.
    const events = transition.branches.map((branch) =>
      label(
        `${transition.eventType}${branch.guards.length > 0 ? ` [${branch.guards.map((g) => g.name).join(', ')}]` : ''}`,
      ),
    );
    lines.push(
      `  note right of ${mermaidId(root.initial ?? root)} : in every state ${events.join(', ')}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
