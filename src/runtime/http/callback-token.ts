/**
 * Signed callback URLs (docs/callbacks.md): minting is a pure function of the instance, the
 * event, the expiry and a nonce (an HMAC-SHA256 under `MACHINE_CALLBACK_SECRET`), so actions
 * can mint one without I/O; verifying checks the signature before anything else, then expiry.
 * Whether a token was used is the store's (callback-handler.ts), not this module's.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SigningSecretMissingException } from '../errors.js';
import { callbackSegment } from './plan-callbacks.js';

/** The environment variable of the callback signing secret(s). */
export const CALLBACK_SECRET_ENV = 'MACHINE_CALLBACK_SECRET';
/** The environment variable of the base URL minted callback URLs start with. */
export const CALLBACK_BASE_URL_ENV = 'MACHINE_CALLBACK_BASE_URL';

const NONCE = /^[A-Za-z0-9_-]{1,64}$/;
const TOKEN = /^(\d{1,12})\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{43})$/;

/** Where minting and verifying take their secret and base URL. */
export interface CallbackSettings {
  /**
   * The signing secrets: the first signs, every one verifies (rotation: put the new one first,
   * drop the old one once its URLs expired). Default: `MACHINE_CALLBACK_SECRET`, comma-separated.
   */
  secret?: string | readonly string[];
  /** Origin (and path prefix) of minted URLs, e.g. `https://api.example.com`. Default: `MACHINE_CALLBACK_BASE_URL`, else none (a path). */
  baseUrl?: string;
}

/** What a callback URL is minted for. */
export interface CallbackMint {
  /** The registration's prefix, as in `register(machine, { prefix })` (`'orders'`). */
  prefix: string;
  /** The event the URL sends (one of the registration's `callbacks`). */
  event: string;
  /** When the URL stops working: epoch milliseconds or a Date (kept to the second). */
  expiresAt: number | Date;
  /** Distinguishes URLs of one instance, event and expiry (letters, digits, `_`, `-`); default `'0'`. */
  nonce?: string;
}

/** The signing secrets of `settings`, else of `MACHINE_CALLBACK_SECRET`; empty when none. */
export function callbackSecrets(
  settings: CallbackSettings = {},
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const value = settings.secret ?? env[CALLBACK_SECRET_ENV] ?? '';
  const list = typeof value === 'string' ? value.split(',') : [...value];
  return list.map((secret) => secret.trim()).filter((secret) => secret !== '');
}

/**
 * The secrets of an environment variable, or a {@link SigningSecretMissingException} naming it
 * and `route` (an app using callbacks or a webhook refuses to start without them).
 */
export function requireSecrets(name: string, route: string, secrets: string[]): string[] {
  if (secrets.length > 0) return secrets;
  throw new SigningSecretMissingException(
    `Route ${route} needs a signing secret: set the environment variable ${name} (a comma-separated list: the first signs, every one verifies).`,
    { key: name, route },
  );
}

/**
 * Mints the signed, expiring URL that sends `mint.event` to the instance `target` once
 * (`POST {baseUrl}/{prefix}/{id}/callbacks/{event}/{token}`, body: the event's payload). Pure
 * given its arguments: call it in an action with the behavior's args as `target` and an expiry
 * from the event or context, and keep the URL in context or hand it to a job.
 *
 * @example mintCallbackUrl(args, { prefix: 'orders', event: 'APPROVED', expiresAt: context.deadline })
 */
export function mintCallbackUrl(
  target: { machineId: string; id: string },
  mint: CallbackMint,
  settings: CallbackSettings = {},
): string {
  const secret = callbackSecrets(settings)[0];
  if (secret === undefined)
    throw new SigningSecretMissingException(
      `mintCallbackUrl: no signing secret: set the environment variable ${CALLBACK_SECRET_ENV}.`,
      { key: CALLBACK_SECRET_ENV },
    );
  const nonce = mint.nonce ?? '0';
  if (!NONCE.test(nonce))
    throw new TypeError(
      `mintCallbackUrl: the nonce '${nonce}' must be 1-64 letters, digits, '_' or '-'.`,
    );
  const expires = Math.floor(
    (typeof mint.expiresAt === 'number' ? mint.expiresAt : mint.expiresAt.getTime()) / 1000,
  );
  const token = `${expires}.${nonce}.${sign(secret, target.machineId, target.id, mint.event, expires, nonce)}`;
  const base = (settings.baseUrl ?? process.env[CALLBACK_BASE_URL_ENV] ?? '').replace(/\/+$/, '');
  const prefix = `/${mint.prefix.replace(/^\/+|\/+$/g, '')}`;
  return `${base}${prefix}/${encodeURIComponent(target.id)}/callbacks/${callbackSegment(mint.event)}/${token}`;
}

/** Outcome of {@link verifyCallbackToken}; `key` names the token in the store (its signature). */
export type CallbackVerdict =
  { kind: 'valid'; key: string; expiresAt: number } | { kind: 'invalid' } | { kind: 'expired' };

/**
 * Checks a token of `machineId`'s instance `id` and `event`: a token signed for another instance
 * or event, or changed in any part, is `invalid`; a genuine one past its expiry `expired`.
 */
export function verifyCallbackToken(
  token: string,
  claim: { machineId: string; id: string; event: string },
  secrets: readonly string[],
  nowMs: number,
): CallbackVerdict {
  const parts = TOKEN.exec(token);
  if (parts === null) return { kind: 'invalid' };
  const expires = Number(parts[1]);
  const nonce = parts[2]!;
  // Compared as text, not as decoded bytes: base64url's last character carries spare bits, so
  // several spellings decode alike, and the signature's text is the key that refuses a replay.
  const given = Buffer.from(parts[3]!, 'latin1');
  const genuine = secrets.some((secret) => {
    const expected = Buffer.from(
      sign(secret, claim.machineId, claim.id, claim.event, expires, nonce),
      'latin1',
    );
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
  if (!genuine) return { kind: 'invalid' };
  if (expires * 1000 <= nowMs) return { kind: 'expired' };
  return { kind: 'valid', key: parts[3]!, expiresAt: expires * 1000 };
}

function sign(
  secret: string,
  machineId: string,
  id: string,
  event: string,
  expires: number,
  nonce: string,
): string {
  return createHmac('sha256', secret)
    .update(`machine-routes callback v1\n${machineId}\n${id}\n${event}\n${expires}\n${nonce}`)
    .digest('base64url');
}
