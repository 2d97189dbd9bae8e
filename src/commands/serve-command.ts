import type { Argv } from 'yargs';
import type { GatewayConfig } from '../config/config-schema.js';
import { supervise } from '../lifecycle/supervisor.js';
import { createLogger } from '../observability/create-logger.js';
import { WORKER_ENV } from '../lifecycle/messages.js';
import { checkKeyMaterial } from './check-key-material.js';
import type { CliCommand } from './cli-command.js';
import { loadServeConfig, withWorkersOption, type ConfigArgs } from './config-options.js';
import { oneGateway } from './serve.js';

/**
 * What `serve` tells the CLI: that it serves (when it ends, drained, a second signal, a port
 * that would not open, the process exits at once, whatever a lingering handle would keep
 * alive), and the exit code it ended with.
 */
export interface ServeRun {
  serving: boolean;
  exitCode: number;
}

type ServeArgs = ConfigArgs & { workers: string | undefined };

function withServeOptions<T>(yargs: Argv<T>) {
  return withWorkersOption(yargs)
    .example('$0 serve -c gateway.yaml', 'serve with this configuration')
    .example('$0 serve --workers auto', 'one process per core on the API port');
}

/** `serve`: a worker of `serve --workers`, or the supervisor of one gateway or of the workers. */
export function serveCli(run: ServeRun): CliCommand {
  return (yargs) =>
    yargs.command('serve', 'Run the gateway', withServeOptions, async (args) => {
      const slot = await workerSlot();
      if (slot !== undefined) {
        // A worker of `serve --workers`: its configuration comes from the primary.
        const { serveWorker } = await import('../workers/worker.js');
        run.serving = true;
        run.exitCode = await serveWorker(slot);
        return;
      }
      await superviseServe(args, run);
    });
}

/** This process's slot when it is a worker forked by `serve --workers`, else undefined. */
async function workerSlot(): Promise<number | undefined> {
  const slot = process.env[WORKER_ENV];
  if (slot === undefined) return undefined;
  const { default: cluster } = await import('node:cluster');
  return cluster.isWorker ? Number(slot) : undefined;
}

/** Picks what serves (one gateway, or the primary of a set of workers) and supervises it. */
async function superviseServe(args: ServeArgs, run: ServeRun): Promise<void> {
  const config = loadServeConfig(args);
  await checkKeyMaterial(config, args.config, { startFiles: true });
  // SIGHUP validates what a start does, key material included, but for the files only a
  // start reads (see KeyMaterialScope).
  const reloadConfig = async (): Promise<GatewayConfig> => {
    const next = loadServeConfig(args);
    await checkKeyMaterial(next, args.config, { startFiles: false });
    return next;
  };
  const { workers } = config.server;
  const primary = workers === 1 ? undefined : await import('../lifecycle/primary.js');
  const count = primary?.resolveWorkerCount(workers) ?? 1;
  const set = count > 1 ? primary : undefined;
  const { level } = config.logging;
  const logger = set === undefined ? createLogger(level) : set.primaryLogger(level);
  // The supervisor resolves or rejects only after its log lines are written.
  run.serving = true;
  run.exitCode = await supervise({
    config,
    reloadConfig,
    logger,
    target: (resolved) =>
      set === undefined ? oneGateway(resolved, logger) : set.workerSet(resolved, count, logger),
  });
}
