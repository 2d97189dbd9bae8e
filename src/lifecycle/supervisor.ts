import { constants } from 'node:os';
import type { GatewayConfig } from '../config/config-schema.js';
import { ConfigError } from '../config/load-config.js';
import type { Logger } from '../observability/create-logger.js';
import type { ReloadOutcome } from '../observability/metrics.js';
import { createSigningKeys } from '../tokens/signing-key.js';
import { logStartFailure } from './start-failure.js';

/** The exit code of a process stopped by `signal`, as a shell reports it: 128 + its number. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/**
 * What serves, as the supervisor drives it: one gateway (`oneGateway`, commands/serve.ts) or
 * a set of workers (`workerSet`, workers/primary.ts); the CLI picks one. Only this differs
 * between the two; the supervisor does the rest.
 */
export interface SupervisedTarget {
  /** Opens the ports; resolves once serving, rejects (everything freed) when it cannot. */
  start(): Promise<void>;
  /** Stops accepting and lets what is in flight finish: resolves with the exit code once stopped. */
  drain(): Promise<number>;
  /** Applies a validated configuration, its signing key resolved. */
  reload(config: GatewayConfig): Promise<void>;
  /** Requests in flight: what a second signal would cut. */
  inFlight(): number;
  /** A second signal: whatever still runs must end now. */
  abandon(): void;
  /** Fields the `draining` line adds to the signal's name. */
  drainingFields(): Readonly<Record<string, unknown>>;
  /** The line logged when a SIGHUP's file does not validate: who keeps the running configuration. */
  readonly notReloadedMessage: string;
  /** Counts a SIGHUP's outcome (gateway_config_reloads_total): applied, or refused. */
  countReload?(outcome: ReloadOutcome): void;
}

/** Where signals come from: `process`, or in a test an EventEmitter it emits on. */
export interface SignalSource {
  on(event: 'SIGTERM' | 'SIGINT' | 'SIGHUP', listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface SuperviseOptions {
  /** The configuration as loaded: its signing key is resolved here. */
  readonly config: GatewayConfig;
  /** Reads and validates the configuration file again (SIGHUP); throws ConfigError if it does not. */
  readonly reloadConfig: () => Promise<GatewayConfig>;
  readonly logger: Logger;
  /** Builds what serves, from the configuration with its signing key resolved. */
  readonly target: (config: GatewayConfig) => SupervisedTarget;
  readonly signals?: SignalSource;
}

/**
 * The lifecycle of `serve`, one process or a primary of workers: runs until SIGTERM/SIGINT,
 * then drains; a second SIGTERM/SIGINT during the drain exits at once (128 + the signal's
 * number: 130 for SIGINT), logging how many requests it cuts. SIGHUP reloads one after
 * another: a file that does not validate is reported and the running configuration stays.
 * The signing key is resolved here, once for every process of the set. Resolves with the
 * process exit code once every log line is written; rejects, everything already freed and
 * the reason logged, when the start fails.
 */
export function supervise(options: SuperviseOptions): Promise<number> {
  const { logger, signals = process } = options;
  const keys = createSigningKeys((message) => logger.warn(message));
  const resolveKey = (config: GatewayConfig): GatewayConfig => ({
    ...config,
    tokens: keys.resolve(config.tokens),
  });

  let settle: (code: number) => void = () => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const ended = new Promise<number>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  let state: 'running' | 'stopping' | 'ended' = 'running';
  // Written before the caller exits: log lines are batched otherwise.
  const end = (code: number): void => {
    state = 'ended';
    logger.flush(() => settle(code));
  };

  const target = options.target(resolveKey(options.config));

  // Handlers first: a signal that arrives while the ports open must drain, not kill.
  const stop = (signal: NodeJS.Signals): void => {
    if (state === 'ended') return;
    if (state === 'stopping') {
      // The operator will not wait for the drain: leave now, saying what that cuts.
      logger.warn({ signal, requests_cut: target.inFlight() }, 'second signal: exiting now');
      target.abandon();
      end(signalExitCode(signal));
      return;
    }
    state = 'stopping';
    logger.info({ signal, ...target.drainingFields() }, 'draining');
    target.drain().then(
      (code) => {
        if (state === 'ended') return;
        logger.info('stopped');
        end(code);
      },
      (error: unknown) => {
        if (state === 'ended') return;
        logger.error({ err: error }, 'shutdown failed');
        end(1);
      },
    );
  };
  signals.on('SIGTERM', stop);
  signals.on('SIGINT', stop);

  let reloading = Promise.resolve();
  signals.on('SIGHUP', () => {
    reloading = reloading.then(async () => {
      try {
        const next = resolveKey(await options.reloadConfig());
        // A drain finishes on the configuration it began with.
        if (state !== 'running') return;
        logger.level = next.logging.level;
        await target.reload(next);
        target.countReload?.('applied');
      } catch (error) {
        const problems = error instanceof ConfigError ? error.problems : [String(error)];
        logger.error({ problems }, target.notReloadedMessage);
        target.countReload?.('refused');
      }
    });
  });

  target.start().catch((error: unknown) => {
    if (state === 'ended') return;
    // The target has freed what it opened; the caller prints the reason and exits 1.
    logStartFailure(logger, error);
    state = 'ended';
    logger.flush(() => fail(error));
  });
  return ended;
}
