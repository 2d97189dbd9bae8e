import type { GatewayConfig } from '../config/config-schema.js';
import { MAX_PATH_CHARS } from '../observability/access-log.js';
import { buildVersion } from '../observability/build-version.js';
import type { Logger } from '../observability/create-logger.js';
import { throttledWarnings } from '../observability/throttled-warnings.js';
import { loadSpanExport } from '../tracing/load-span-export.js';
import type { SpanExport } from '../tracing/span-sink.js';

/**
 * The process's span export, one for its life (`tracing.otlp` needs a restart). The
 * OpenTelemetry SDK is imported here, and only when an endpoint is configured.
 */
export function buildSpanExport(
  config: GatewayConfig,
  logger: Logger,
): Promise<SpanExport | undefined> {
  const exportProblem = (cause: string, suppressed: number): void =>
    logger.warn({ cause, suppressed }, 'span export problem (spans may be lost)');
  const { otlp } = config.tracing;
  return loadSpanExport(
    otlp === undefined
      ? undefined
      : {
          ...otlp,
          serviceName: config.tracing.serviceName,
          serviceVersion: buildVersion(),
          maxPathChars: MAX_PATH_CHARS,
          // With a collector down every batch fails: one line a minute, the rest counted.
          warn: throttledWarnings((_, cause, suppressed) => exportProblem(cause, suppressed))(
            'collector',
          ),
          warnAtShutdown: (cause) => exportProblem(cause, 0),
        },
  );
}
