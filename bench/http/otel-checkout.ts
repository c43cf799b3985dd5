/**
 * `<checkout>+otel` names a checkout's server with the OpenTelemetry SDK registered
 * (bench/http/otel-sdk.ts), beside the same checkout without it, in one A/B run:
 * `npx tsx bench/http/bound-cpu.ts sqlite . .+otel /tmp/untraced`.
 */
export const OTEL_SUFFIX = '+otel';

/** The directory of a checkout argument, without the `+otel` suffix. */
export function serverCheckout(checkout: string): string {
  return checkout.endsWith(OTEL_SUFFIX) ? checkout.slice(0, -OTEL_SUFFIX.length) : checkout;
}
