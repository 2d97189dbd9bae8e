import type { OtlpSettings } from './otlp-spans.js';
import type { SpanExport } from './span-sink.js';

/**
 * The span export, when `tracing.otlp` is set; undefined otherwise. The SDK is reached
 * through `import()` here and nowhere else: a gateway without an endpoint never loads it
 * (test/e2e/tracing.test.ts watches the modules a running gateway resolves).
 */
export async function loadSpanExport(
  settings: OtlpSettings | undefined,
): Promise<SpanExport | undefined> {
  if (settings === undefined) return undefined;
  const { createOtlpSpans } = await import('./otlp-spans.js');
  return createOtlpSpans(settings);
}
