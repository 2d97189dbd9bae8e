import { startTrickle, type Trickle, type TrickleSample } from './trickle.js';

/** One client of the load: a request at a time, at most one started every `intervalMs`. */
export interface LoadClient {
  /** Resolves with the HTTP status (the trickle counts a failure without one as 0). */
  readonly request: () => Promise<number>;
  readonly intervalMs: number;
  /** Starts once the master is dead, not before (pairs that must reach the store cold). */
  readonly afterKill?: boolean;
}

export interface FailoverRun {
  /** Every answer of every client, by the time it was sent, to the last client's first 200 after the promotion. */
  readonly samples: readonly TrickleSample[];
  /** performance.now() when the master was dead (SIGKILL returned)… */
  readonly killedMs: number;
  /** …when the topology's own promotion was seen… */
  readonly promotedMs: number;
  /** …and when the first 200 after the last failed answer came (the kill's if none failed). */
  readonly wholeMs: number;
  /** The phases and the answers per second before the kill and until the promotion, in one line (figures, not bounds). */
  readonly report: string;
}

/** Clients sending at once, each a trickle of its own. */
export interface Load {
  /** Starts more clients. */
  add(clients: readonly LoadClient[]): void;
  /** Resolves once every client has an answer (already in or still to come) that `matches`. */
  everyClient(matches: (sample: TrickleSample) => boolean): Promise<void>;
  /** Stops every client; resolves with every answer, in the order they were sent. */
  stop(): Promise<TrickleSample[]>;
}

export function startLoad(clients: readonly LoadClient[]): Load {
  const trickles: Trickle[] = [];
  const add = (more: readonly LoadClient[]): void => {
    trickles.push(...more.map((client) => startTrickle(client.request, client.intervalMs)));
  };
  add(clients);
  return {
    add,
    async everyClient(matches) {
      await Promise.all(trickles.map((trickle) => trickle.next(matches)));
    },
    async stop() {
      const all = await Promise.all(trickles.map((trickle) => trickle.stop()));
      return all.flat().sort((a, b) => a.sentMs - b.sentMs);
    },
  };
}

/**
 * Kills a master while `clients` send requests, awaits the topology's promotion, then every
 * client's first 200 to a request sent after it: the gateways serve again without a restart.
 * Resolves with what it saw; asserts nothing itself.
 */
export async function failoverUnderLoad(options: {
  readonly label: string;
  readonly clients: readonly LoadClient[];
  readonly killMaster: () => Promise<void>;
  readonly awaitPromotion: () => Promise<void>;
}): Promise<FailoverRun> {
  const load = startLoad(options.clients.filter((client) => client.afterKill !== true));
  try {
    const startedMs = performance.now();
    await load.everyClient((sample) => sample.status === 200);
    await options.killMaster();
    const killedMs = performance.now();
    load.add(options.clients.filter((client) => client.afterKill === true));
    await options.awaitPromotion();
    const promotedMs = performance.now();
    await load.everyClient((sample) => sample.sentMs >= promotedMs && sample.status === 200);
    const samples = await load.stop();
    const failed = samples.filter((sample) => sample.status !== 200);
    const lastFailure = failed.at(-1);
    const wholeMs =
      lastFailure === undefined
        ? killedMs
        : (samples.find((sample) => sample.sentMs > lastFailure.sentMs && sample.status === 200)
            ?.answeredMs ?? promotedMs);
    const ms = (value: number): string => `${Math.round(value)} ms`;
    const rate = (from: number, to: number): string => {
      const answered = samples.filter((s) => s.answeredMs >= from && s.answeredMs < to).length;
      return `${Math.round((answered * 1000) / Math.max(1, to - from))}/s`;
    };
    const after = samples.filter((sample) => sample.answeredMs >= killedMs);
    const statuses = [...new Set(failed.map((sample) => sample.status))].join('/') || 'none';
    const report =
      `${options.label}: promotion seen ${ms(promotedMs - killedMs)} after the kill; ` +
      `${failed.length} of ${after.length} requests since failed (${statuses}); ` +
      `whole again ${ms(wholeMs - killedMs)} after the kill, ${ms(wholeMs - promotedMs)} from the promotion; ` +
      `answers ${rate(startedMs, killedMs)} before the kill, ${rate(killedMs, promotedMs)} until the promotion`;
    return { samples, killedMs, promotedMs, wholeMs, report };
  } finally {
    await load.stop();
  }
}
