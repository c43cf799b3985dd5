/**
 * The prose of the OpenAPI document: tag descriptions (machine description, states, Mermaid
 * diagram), operation summaries and descriptions that say what an endpoint does to the
 * instance, read from the manifest's transitions. Pure.
 */
import type { ManifestMachine, ManifestRoute, ManifestTransition } from '../manifest.js';

/** `order` -> `order`, `ticket_staff` -> `ticket staff`. */
export function machineNoun(machineId: string): string {
  return machineId.replace(/[_.-]+/g, ' ').trim();
}

/** The noun with its indefinite article: `an order`, `a ticket`. */
export function withArticle(noun: string): string {
  return `${/^[aeiou]/i.test(noun) ? 'an' : 'a'} ${noun}`;
}

/** A state id without its machine prefix, as a code span: `order.submitted` -> `` `submitted` ``. */
function stateName(machineId: string, stateId: string): string {
  return `\`${stateId.startsWith(`${machineId}.`) ? stateId.slice(machineId.length + 1) : stateId}\``;
}

function guardClause(transition: ManifestTransition): string {
  if (transition.guards.length === 0) return '';
  const names = transition.guards.map((guard) => `\`${guard}\``).join(', ');
  return ` when ${names} ${transition.guards.length === 1 ? 'passes' : 'pass'}`;
}

/** One transition as a clause: `moves the order from `submitted` to `approved``. */
function transitionClause(machineId: string, transition: ManifestTransition): string {
  const noun = `the ${machineNoun(machineId)}`;
  const from =
    transition.from === machineId ? 'in any state' : `in ${stateName(machineId, transition.from)}`;
  const text =
    transition.to === null
      ? `keeps ${noun} where it is (${from})`
      : transition.from === machineId
        ? `moves ${noun} to ${stateName(machineId, transition.to)} from any state`
        : `moves ${noun} from ${stateName(machineId, transition.from)} to ${stateName(machineId, transition.to)}`;
  const note = transition.description === null ? '' : ` (${transition.description})`;
  return `${text}${guardClause(transition)}${note}`;
}

function capitalize(text: string): string {
  return text.length === 0 ? text : text[0]!.toUpperCase() + text.slice(1);
}

/** The transitions of an event as one sentence. */
export function transitionsSentence(
  machineId: string,
  transitions: readonly ManifestTransition[],
): string {
  if (transitions.length === 0) return '';
  // Unguarded targetless transitions in several states read as one clause.
  const staying = transitions.filter(
    (transition) =>
      transition.to === null &&
      transition.guards.length === 0 &&
      transition.description === null &&
      transition.from !== machineId,
  );
  const clauses = transitions
    .filter((transition) => staying.length < 2 || !staying.includes(transition))
    .map((transition) => transitionClause(machineId, transition));
  if (staying.length >= 2) {
    const states = staying.map((transition) => stateName(machineId, transition.from));
    clauses.unshift(
      `keeps the ${machineNoun(machineId)} where it is (in ${states.slice(0, -1).join(', ')} or ${states[states.length - 1]})`,
    );
  }
  const last = clauses.pop()!;
  return `${capitalize(clauses.length === 0 ? last : `${clauses.join('; ')}; or ${last}`)}.`;
}

/** Summary of an operation: `Create an order`, `Send APPROVE to an order`. */
export function operationSummary(route: ManifestRoute): string {
  const target = withArticle(machineNoun(route.machineId));
  if (route.handler === 'events') return `Stream the committed states of ${target}`;
  if (route.read !== null) return `Read the ${route.read} of ${target}`;
  if (route.eventType === null) return `Create ${target}`;
  return route.childMachineId === null
    ? `Send ${route.eventType} to ${target}`
    : `Send ${route.eventType} to the ${machineNoun(route.childMachineId)} of ${target}`;
}

/** What an operation does, its failure answers included. */
export function operationDescription(
  route: ManifestRoute,
  machine: ManifestMachine,
  child: ManifestMachine | null,
  statuses: readonly number[],
): string {
  const noun = machineNoun(route.machineId);
  const parts: string[] = [];
  if (route.handler === 'events') {
    parts.push(
      `Server-sent events: the ${noun}'s current state, then each state it commits (\`id\` is the sequence number: \`Last-Event-ID\` resumes after it); the stream ends after a final state. Sends no event and writes nothing.`,
    );
  } else if (route.read !== null) {
    parts.push(
      `Answers the ${noun}'s last committed state (\`${route.read}\`); sends no event and writes nothing.`,
      `With \`waitFor\`, answers once the ${noun} is in that state (or a final one), or when \`timeout\` passes, with the state it is in then.`,
    );
  } else if (route.eventType === null) {
    parts.push(
      `Creates ${withArticle(noun)} in ${machine.initialState.map((id) => stateName(route.machineId, id)).join(' and ')} and answers its id.`,
    );
    if (machine.description !== null) parts.push(machine.description);
  } else if (route.childMachineId !== null && child !== null && route.childEventType !== null) {
    parts.push(
      `Forwards \`${route.eventType}\` to the running ${machineNoun(route.childMachineId)} of the ${noun} (as \`${route.childEventType}\`).`,
      transitionsSentence(
        route.childMachineId,
        child.events[route.childEventType]?.transitions ?? [],
      ),
    );
  } else {
    // Create-or-send (docs/http.md "Create-or-send"): what the key does comes first.
    if (route.binding.kind === 'key')
      parts.push(
        `Create-or-send on the business key \`payload.${route.binding.field}\`: sends \`${route.eventType}\` to the ${noun} whose key it is; when no ${noun} has that key yet, one is created with the event applied, in one commit (concurrent first requests on one key create one ${noun}, the others are sent to it). A refused first event creates nothing.`,
      );
    parts.push(
      transitionsSentence(route.machineId, machine.events[route.eventType]?.transitions ?? []),
    );
  }
  const answers: string[] = [];
  if (statuses.includes(401)) answers.push('401 without valid credentials');
  if (statuses.includes(404)) answers.push(`404 when no such ${noun} exists`);
  if (statuses.includes(409))
    answers.push(`409 when the ${noun} is in no state that accepts \`${route.eventType}\``);
  if (statuses.includes(422))
    answers.push(
      route.read !== null
        ? '422 when `waitFor` names no state or `timeout` is out of range'
        : '422 when the payload or a validation guard rejects the event',
    );
  // `contention: { wait }`: the request queues for the lock first (docs/http.md "Contention policy").
  const busy =
    route.contention === undefined
      ? `while another request holds the ${noun}`
      : `when another request still holds the ${noun} after waiting ${route.contention.waitMs} ms for it (requests wait in order of arrival)`;
  if (statuses.includes(423)) answers.push(`423 ${busy}`);
  for (const [status, description] of Object.entries(route.actionStatuses))
    answers.push(`${status} from the endpoint action (${description.replace(/\.$/, '')})`);
  if (route.handler !== 'create' && usesIsProcessing(route, statuses))
    answers.push(`200 with \`isProcessing: true\` ${busy}`);
  if (answers.length > 0) parts.push(`Answers ${answers.join('; ')}.`);
  return parts.filter((part) => part !== '').join('\n\n');
}

function usesIsProcessing(route: ManifestRoute, statuses: readonly number[]): boolean {
  return route.method === 'GET' && route.binding.kind !== 'none' && !statuses.includes(423);
}

/** Tag description of a machine: its description, its states and its Mermaid diagram. */
export function machineTagDescription(machine: ManifestMachine): string {
  const parts: string[] = [];
  if (machine.description !== null) parts.push(machine.description);
  const states = Object.entries(machine.stateDescriptions).map(
    ([id, description]) => `- ${stateName(machine.id, id)}: ${description}`,
  );
  parts.push(
    `A new ${machineNoun(machine.id)} starts in ${machine.initialState.map((id) => stateName(machine.id, id)).join(' and ')}. \`data.state\` lists its active states: ${machine.stateIds.map((id) => stateName(machine.id, id)).join(', ')}.`,
  );
  if (states.length > 0) parts.push(states.join('\n'));
  parts.push(`\`\`\`mermaid\n${machine.diagram.trimEnd()}\n\`\`\``);
  return parts.join('\n\n');
}

/**
 * What a 400 of the route means: which part of this request could not be read (the body has a
 * JSON body only on event routes that take no query payload), and that nothing happened.
 */
export function badRequestDescription(route: ManifestRoute): string {
  const noun = machineNoun(route.machineId);
  const causes: string[] = [];
  if (route.handler !== 'create' && route.payloadSource === 'body' && route.eventType !== null)
    causes.push(
      `the body is not JSON, not a JSON object (\`{ "payload": ... }\` of ${route.eventType}) or nested over 32 levels`,
    );
  causes.push(
    route.payloadSource === 'query' && route.payloadSchema !== null
      ? `the query string carrying the ${route.eventType ?? 'event'} payload is malformed (bad percent-encoding, nested over 32 levels, over 1000 pairs)`
      : 'the query string is malformed (bad percent-encoding, nested over 32 levels, over 1000 pairs)',
  );
  if (route.idempotency !== undefined)
    causes.push('the Idempotency-Key header is not 1-255 printable ASCII characters');
  const outcome =
    route.handler === 'create'
      ? `no ${noun} is created`
      : route.eventType !== null && route.handler !== 'read' && route.handler !== 'events'
        ? `${route.eventType} is not sent to the ${noun}`
        : `the ${noun} is not read`;
  return `The request cannot be read: ${causes.join('; or ')}. Nothing happened: ${outcome}.`;
}

/** The description of the path parameter `name` of a route. */
export function pathParameterDescription(route: ManifestRoute, name: string): string {
  const noun = machineNoun(route.machineId);
  if (name === 'machineId')
    return `Id of the ${noun} instance: \`data.id\` of the answer that created it (a ULID). An unknown id is a 404.`;
  const model = route.binding.kind === 'model' ? route.binding.model : name;
  return `Key of the ${model} whose ${noun} the request addresses (route model binding). An unknown key is a 404.`;
}
