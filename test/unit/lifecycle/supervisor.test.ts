import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../../src/config/config-schema.js';
import { ConfigError, parseConfig } from '../../../src/config/load-config.js';
import { ListenError } from '../../../src/http/listen.js';
import {
  signalExitCode,
  supervise,
  type SupervisedTarget,
} from '../../../src/lifecycle/supervisor.js';
import { ListenerTlsError } from '../../../src/tls/listener-tls.js';
import { GENERATED_KEY_WARNING } from '../../../src/tokens/signing-key.js';
import { capturedLog, type CapturedLog } from '../../support/captured-log.js';
import { deferred, type Deferred } from '../../support/deferred.js';

// The supervisor with a target that does what each test tells it, and signals emitted on an
// EventEmitter in place of `process`: nothing is sent to the test runner.

const CONFIG = parseConfig('', 'inline.yaml');

/** A target whose start and drain end when the test says; what it was asked, in order. */
interface FakeTarget extends SupervisedTarget {
  readonly calls: string[];
  readonly started: Deferred<undefined>;
  readonly drained: Deferred<number>;
  /** Each reload waits for this, when set. */
  reloadGate: Promise<unknown> | undefined;
  inFlightNow: number;
  /** Resolves with the configuration of the next reload, when it begins. */
  nextReload(): Promise<GatewayConfig>;
  /** Resolves with the outcome the supervisor counts next (gateway_config_reloads_total). */
  nextCount(): Promise<string>;
}

function fakeTarget(): FakeTarget {
  const waiting: ((config: GatewayConfig) => void)[] = [];
  const counting: ((outcome: string) => void)[] = [];
  const target: FakeTarget = {
    calls: [],
    started: deferred<undefined>(),
    drained: deferred<number>(),
    reloadGate: undefined,
    inFlightNow: 0,
    start: () => {
      target.calls.push('start');
      return target.started.promise;
    },
    drain: () => {
      target.calls.push('drain');
      return target.drained.promise;
    },
    nextReload: () => new Promise((resolve) => waiting.push(resolve)),
    reload: async (config) => {
      target.calls.push('reload');
      waiting.shift()?.(config);
      await target.reloadGate;
      target.calls.push('reloaded');
    },
    inFlight: () => target.inFlightNow,
    abandon: () => target.calls.push('abandon'),
    drainingFields: () => ({ workers: 2 }),
    notReloadedMessage: 'configuration not reloaded; the test keeps the running one',
    nextCount: () => new Promise((resolve) => counting.push(resolve)),
    countReload: (outcome) => counting.shift()?.(outcome),
  };
  return target;
}

interface Run {
  readonly target: FakeTarget;
  readonly signals: EventEmitter;
  readonly log: CapturedLog;
  /** The configuration the target was built with. */
  readonly built: () => GatewayConfig;
  readonly ended: Promise<number>;
}

function run(reloadConfig: () => Promise<GatewayConfig> = () => Promise.resolve(CONFIG)): Run {
  const target = fakeTarget();
  const signals = new EventEmitter();
  const log = capturedLog();
  let built: GatewayConfig | undefined;
  const ended = supervise({
    config: CONFIG,
    reloadConfig,
    logger: log.logger,
    signals,
    target: (config) => {
      built = config;
      return target;
    },
  });
  return {
    target,
    signals,
    log,
    built: () => built ?? CONFIG,
    ended,
  };
}

const messages = (log: CapturedLog): unknown[] => log.lines().map((line) => line.msg);

describe('the supervisor on SIGTERM and SIGINT', () => {
  it('drains on the first signal and resolves with the exit code the drain ends with, after "stopped"', async () => {
    const { target, signals, log, ended } = run();
    target.started.resolve(undefined);
    signals.emit('SIGTERM', 'SIGTERM');
    expect(target.calls).toEqual(['start', 'drain']);
    expect(await log.until('draining')).toMatchObject({ signal: 'SIGTERM', workers: 2 });
    target.drained.resolve(0);
    expect(await ended).toBe(0);
    expect(messages(log).at(-1)).toBe('stopped');
  });

  it('drains on a signal that comes while the target starts, rather than exiting', async () => {
    const { target, signals, ended } = run();
    signals.emit('SIGINT', 'SIGINT');
    expect(target.calls).toEqual(['start', 'drain']);
    target.drained.resolve(1);
    expect(await ended).toBe(1);
  });

  it('exits at once on a second signal with 128 + its number, saying how many requests it cuts', async () => {
    const { target, signals, log, ended } = run();
    target.started.resolve(undefined);
    signals.emit('SIGTERM', 'SIGTERM');
    target.inFlightNow = 3;
    signals.emit('SIGINT', 'SIGINT');
    expect(await ended).toBe(130);
    expect(target.calls).toEqual(['start', 'drain', 'abandon']);
    expect(log.lines()).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'second signal: exiting now',
        signal: 'SIGINT',
        requests_cut: 3,
      }),
    );
    // The drain that ends afterwards says nothing more.
    target.drained.resolve(0);
    await target.drained.promise;
    expect(messages(log)).not.toContain('stopped');
  });

  it('ignores every signal once it has ended', async () => {
    const { target, signals, ended } = run();
    signals.emit('SIGTERM', 'SIGTERM');
    target.drained.resolve(0);
    expect(await ended).toBe(0);
    signals.emit('SIGTERM', 'SIGTERM');
    signals.emit('SIGINT', 'SIGINT');
    expect(target.calls).toEqual(['start', 'drain']);
  });

  it('logs a drain that fails as "shutdown failed" and exits 1', async () => {
    const { target, signals, log, ended } = run();
    signals.emit('SIGTERM', 'SIGTERM');
    target.drained.reject(new Error('the store would not close'));
    expect(await ended).toBe(1);
    expect(log.lines()).toContainEqual(
      expect.objectContaining({
        msg: 'shutdown failed',
        err: expect.objectContaining({ message: 'the store would not close' }) as unknown,
      }),
    );
    expect(messages(log)).not.toContain('stopped');
  });

  it('gives 128 + the signal number as the exit code, as a shell reports a process the signal stopped', () => {
    expect(signalExitCode('SIGINT')).toBe(130);
    expect(signalExitCode('SIGTERM')).toBe(143);
  });
});

describe('the supervisor on SIGHUP', () => {
  it('hands the validated configuration to the target and sets the log level it names', async () => {
    const next = parseConfig('logging: { level: warn }', 'next.yaml');
    const { target, signals, log } = run(() => Promise.resolve(next));
    const reloaded = target.nextReload();
    signals.emit('SIGHUP', 'SIGHUP');
    expect((await reloaded).logging.level).toBe('warn');
    expect(log.logger.level).toBe('warn');
  });

  it('keeps the running configuration and logs the problems when the file does not validate', async () => {
    const { target, signals, log } = run(() =>
      Promise.reject(new ConfigError('gateway.yaml', ['(root): unknown key bogus'])),
    );
    signals.emit('SIGHUP', 'SIGHUP');
    const line = await log.until('configuration not reloaded; the test keeps the running one');
    expect(line).toMatchObject({ level: 50, problems: ['(root): unknown key bogus'] });
    expect(target.calls).toEqual(['start']);
  });

  it('counts a reload as applied once the target has applied it', async () => {
    const { target, signals } = run();
    const counted = target.nextCount();
    signals.emit('SIGHUP', 'SIGHUP');
    expect(await counted).toBe('applied');
    expect(target.calls).toEqual(['start', 'reload', 'reloaded']);
  });

  it('counts a reload as refused when the file does not validate', async () => {
    const { target, signals } = run(() =>
      Promise.reject(new ConfigError('gateway.yaml', ['(root): unknown key bogus'])),
    );
    const counted = target.nextCount();
    signals.emit('SIGHUP', 'SIGHUP');
    expect(await counted).toBe('refused');
  });

  it('applies reloads one after another, in the order the signals came', async () => {
    let read = 0;
    const { target, signals } = run(() => {
      read += 1;
      return Promise.resolve(CONFIG);
    });
    const gate = deferred<undefined>();
    target.reloadGate = gate.promise;
    const first = target.nextReload();
    signals.emit('SIGHUP', 'SIGHUP');
    signals.emit('SIGHUP', 'SIGHUP');
    await first;
    // Run side by side, the second file would have been read by now.
    expect(read).toBe(1);
    const second = target.nextReload();
    gate.resolve(undefined);
    await second;
    expect(read).toBe(2);
    expect(target.calls).toEqual(['start', 'reload', 'reloaded', 'reload']);
  });

  it('does not reload once a drain has begun', async () => {
    let calls = 0;
    const { target, signals, log } = run(() => {
      calls += 1;
      return calls === 1
        ? Promise.resolve(CONFIG)
        : Promise.reject(new ConfigError('gateway.yaml', ['the second one']));
    });
    signals.emit('SIGTERM', 'SIGTERM');
    signals.emit('SIGHUP', 'SIGHUP');
    signals.emit('SIGHUP', 'SIGHUP');
    // Reloads run in order: once the second is refused, the first has been decided.
    await log.until('configuration not reloaded; the test keeps the running one');
    expect(target.calls).toEqual(['start', 'drain']);
  });
});

describe('the supervisor at start', () => {
  it('logs a port that would not open as "cannot listen", once, and rejects with it', async () => {
    const { target, log, ended } = run();
    const error = new ListenError(
      'API port',
      '127.0.0.1',
      8080,
      Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' }),
    );
    target.started.reject(error);
    await expect(ended).rejects.toBe(error);
    expect(log.lines().filter((line) => line.level === 50)).toEqual([
      expect.objectContaining({
        msg: 'cannot listen',
        address: '127.0.0.1:8080',
        listener: 'API port',
        code: 'EADDRINUSE',
      }),
    ]);
  });

  it('logs any other failure as "start failed" and rejects with it', async () => {
    const { target, log, ended } = run();
    const error = new Error('worker 1 exited before listening (code 1)');
    target.started.reject(error);
    await expect(ended).rejects.toBe(error);
    expect(log.lines()).toContainEqual(
      expect.objectContaining({
        msg: 'start failed',
        err: expect.objectContaining({ message: error.message }) as unknown,
      }),
    );
  });

  it('logs a refused listener certificate as its one sentence, without a stack', async () => {
    const { target, log, ended } = run();
    const files = { certFile: '/etc/tls/cert.pem', keyFile: '/etc/tls/key.pem' };
    const error = new ListenerTlsError(files, 'the key does not match the certificate');
    target.started.reject(error);
    await expect(ended).rejects.toBe(error);
    const failed = log.lines().filter((line) => line.msg === 'start failed');
    expect(failed).toEqual([expect.objectContaining({ problems: [error.message] })]);
    expect(failed[0]).not.toHaveProperty('err');
  });

  it('generates one signing key when none is configured, warned once, for the start and every reload', async () => {
    const { target, signals, log, built } = run(() => Promise.resolve(CONFIG));
    const key = built().tokens.signingKey;
    expect(key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const reloaded = target.nextReload();
    signals.emit('SIGHUP', 'SIGHUP');
    expect((await reloaded).tokens.signingKey).toBe(key);
    expect(log.lines().filter((line) => line.msg === GENERATED_KEY_WARNING)).toHaveLength(1);
  });
});
