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
 * a set of workers (`workerSet`, lifecycle/primary.ts); the CLI picks one. Only this differs
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

/** Where a supervision stands, and how it ends: the promise supervise() returns. */
interface Supervision {
  state: 'running' | 'stopping' | 'ended';
  readonly ended: Promise<number>;
  /** Resolves `ended` with the exit code, once every log line is written. */
  end(code: number): void;
  /** Rejects `ended` (a failed start), once every log line is written. */
  fail(error: unknown): void;
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
  const run = createSupervision(logger);
  const target = options.target(resolveKey(options.config));

  // Handlers first: a signal that arrives while the ports open must drain, not kill.
  const stop = stopOnSignal(run, target, logger);
  signals.on('SIGTERM', stop);
  signals.on('SIGINT', stop);
  signals.on(
    'SIGHUP',
    reloadOnHangup(run, target, logger, async () => resolveKey(await options.reloadConfig())),
  );

  target.start().catch((error: unknown) => {
    if (run.state === 'ended') return;
    // The target has freed what it opened; the caller prints the reason and exits 1.
    logStartFailure(logger, error);
    run.fail(error);
  });
  return run.ended;
}

function createSupervision(logger: Logger): Supervision {
  let settle: (code: number) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const ended = new Promise<number>((resolve, fail) => {
    settle = resolve;
    reject = fail;
  });
  const run: Supervision = {
    state: 'running',
    ended,
    // Written before the caller exits: log lines are batched otherwise.
    end(code) {
      run.state = 'ended';
      logger.flush(() => settle(code));
    },
    fail(error) {
      run.state = 'ended';
      logger.flush(() => reject(error));
    },
  };
  return run;
}

/** SIGTERM/SIGINT: the first drains, a second exits at once. */
function stopOnSignal(
  run: Supervision,
  target: SupervisedTarget,
  logger: Logger,
): (signal: NodeJS.Signals) => void {
  return (signal) => {
    if (run.state === 'ended') return;
    if (run.state === 'stopping') {
      // The operator will not wait for the drain: leave now, saying what that cuts.
      logger.warn({ signal, requests_cut: target.inFlight() }, 'second signal: exiting now');
      target.abandon();
      run.end(signalExitCode(signal));
      return;
    }
    run.state = 'stopping';
    logger.info({ signal, ...target.drainingFields() }, 'draining');
    target.drain().then(
      (code) => {
        if (run.state === 'ended') return;
        logger.info('stopped');
        run.end(code);
      },
      (error: unknown) => {
        if (run.state === 'ended') return;
        logger.error({ err: error }, 'shutdown failed');
        run.end(1);
      },
    );
  };
}

/** SIGHUP: reads the file again and applies it, one reload after another. */
function reloadOnHangup(
  run: Supervision,
  target: SupervisedTarget,
  logger: Logger,
  reloadConfig: () => Promise<GatewayConfig>,
): () => void {
  let reloading = Promise.resolve();
  return () => {
    reloading = reloading.then(async () => {
      try {
        const next = await reloadConfig();
        // A drain finishes on the configuration it began with.
        if (run.state !== 'running') return;
        logger.level = next.logging.level;
        await target.reload(next);
        target.countReload?.('applied');
      } catch (error) {
        const problems = error instanceof ConfigError ? error.problems : [String(error)];
        logger.error({ problems }, target.notReloadedMessage);
        target.countReload?.('refused');
      }
    });
  };
}
