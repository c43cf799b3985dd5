/**
 * `<checkout>+otel` names a checkout's server with the OpenTelemetry SDK registered
 * (bench/http/otel-sdk.ts), beside the same checkout without it, in one A/B run:
 * `npx tsx bench/http/bound-cpu.ts sqlite . .+otel /tmp/untraced`. `+otel=<parts>` registers
 * only some of it (comma-separated: `context`, `traces`, `metrics`), to see what each costs.
 */
export const OTEL_SUFFIX = '+otel';

/** The directory of a checkout argument, without the `+otel` suffix. */
export function serverCheckout(checkout: string): string {
  const at = checkout.lastIndexOf(OTEL_SUFFIX);
  return at < 0 ? checkout : checkout.slice(0, at);
}

/** The environment of a checkout argument's server: BENCH_OTEL and BENCH_OTEL_PARTS. */
export function otelEnvironment(checkout: string): Record<string, string> {
  const at = checkout.lastIndexOf(OTEL_SUFFIX);
  if (at < 0) return { BENCH_OTEL: '0' };
  const parts = checkout.slice(at + OTEL_SUFFIX.length).replace(/^=/, '');
  return { BENCH_OTEL: '1', BENCH_OTEL_PARTS: parts === '' ? 'context,traces,metrics' : parts };
}
