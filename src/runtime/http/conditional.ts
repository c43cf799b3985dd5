/**
 * Conditional requests on instances (RFC 9110 §8.8.3, §13): the `ETag` of an instance's
 * committed version, `If-None-Match` on reads (304) and `If-Match` on event routes (412).
 *
 * The entity tag is strong, `"<instance id>:<sequence>"`: the sequence number of the last
 * history record names one committed version, and every answer about that version is built from
 * it alone (an answer while a lock is held, `isProcessing: true`, carries no tag: it describes a
 * moment, not a version). Strong because `If-Match` compares strongly: a weak tag could never
 * satisfy it. The instance id is part of the tag so that a tag of one instance never matches
 * another (a model record rebound to a new machine starts again at low sequences).
 */
import { PreconditionFailedException } from '../errors.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { EndpointRequest, EndpointResponse } from './types.js';

/** The entity tag of an instance's committed version, quoted: `"01J...:7"`. */
export function etagOf(snapshot: Pick<MachineSnapshot, 'id' | 'sequence'>): string {
  return `"${snapshot.id}:${snapshot.sequence}"`;
}

/** One entry of an `If-Match` / `If-None-Match` list. */
interface EntityTag {
  weak: boolean;
  /** With its quotes, as `etagOf` writes it. */
  tag: string;
}

/**
 * The entries of an `If-Match` / `If-None-Match` value: `'*'`, or the tags it lists. Entries
 * that are no entity tag are left out, so a malformed value matches nothing (a precondition
 * that cannot be satisfied fails, it is not ignored).
 */
function entityTags(value: string): '*' | EntityTag[] {
  if (value.trim() === '*') return '*';
  const tags: EntityTag[] = [];
  for (const match of value.matchAll(/(W\/)?("[\x21\x23-\x7e\x80-\xff]*")/g)) {
    tags.push({ weak: match[1] !== undefined, tag: match[2]! });
  }
  return tags;
}

/** A request header without copying the request's headers (hot paths read one or two). */
export function headerOf(request: EndpointRequest, name: string): string | undefined {
  return request.header !== undefined ? request.header(name) : request.headers[name];
}

/**
 * Whether a read's `If-None-Match` names the version it would answer (weak comparison, RFC 9110
 * §13.1.2): the answer is then a 304 without a body.
 */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const tags = entityTags(ifNoneMatch);
  return tags === '*' || tags.some((entry) => entry.tag === etag);
}

/**
 * The send precondition of an `If-Match` header (RFC 9110 §13.1.1, strong comparison), for
 * `SendOptions.precondition`: `undefined` without the header. `*` accepts any existing instance.
 */
export function ifMatchPrecondition(
  ifMatch: string | undefined,
): ((snapshot: MachineSnapshot) => boolean) | undefined {
  if (ifMatch === undefined) return undefined;
  const tags = entityTags(ifMatch);
  if (tags === '*') return () => true;
  const strong = tags.filter((entry) => !entry.weak).map((entry) => entry.tag);
  return (snapshot) => strong.includes(etagOf(snapshot));
}

/** The body of a 412: what failed, and the tag of the version the instance is at now. */
export interface PreconditionFailedBody {
  message: string;
  /** The instance's current `ETag`; `null` when it has no machine yet (a model record). */
  etag: string | null;
}

/** The 412 answer of a refused precondition (nothing was written). */
export function preconditionFailedResponse(error: PreconditionFailedException): EndpointResponse {
  const snapshot = error.snapshot as MachineSnapshot | null;
  const etag = snapshot === null ? null : etagOf(snapshot);
  const body: PreconditionFailedBody = {
    message:
      etag === null
        ? 'Precondition Failed: the record has no machine yet, so no version can match If-Match.'
        : `Precondition Failed: the instance is at ${etag} now; read it again and send with that ETag.`,
    etag,
  };
  // `{ message }` plus the tag: the one error body errorResponse does not build.
  return { status: 412, body, ...(etag === null ? {} : { headers: { etag } }) };
}

/** `response` with the `ETag` of `snapshot`'s version (other headers kept). */
export function withEtag(response: EndpointResponse, snapshot: MachineSnapshot): EndpointResponse {
  response.headers = { ...response.headers, etag: etagOf(snapshot) };
  return response;
}
