import { startTrickle, type TrickleSample } from './trickle.js';

export interface FailoverRun {
  /** Every answer of the trickle, from before the kill to the first 200 sent after the promotion. */
  readonly samples: readonly TrickleSample[];
  /** performance.now() when the master was dead (SIGKILL returned)… */
  readonly killedMs: number;
  /** …when the topology's own promotion was seen… */
  readonly promotedMs: number;
  /** …and when the first 200 after the last failed answer came (the kill's if none failed). */
  readonly wholeMs: number;
  /** The phases in one line, for the test's output (figures, not bounds). */
  readonly report: string;
}

/**
 * Kills a master while `request` trickles (one credential, one gateway), awaits the
 * topology's promotion, then the first 200 to a request sent after it: the gateway serves
 * again without a restart. Resolves with what it saw; asserts nothing itself.
 */
export async function failoverUnderTrickle(options: {
  readonly label: string;
  readonly request: () => Promise<number>;
  readonly killMaster: () => Promise<void>;
  readonly awaitPromotion: () => Promise<void>;
}): Promise<FailoverRun> {
  const trickle = startTrickle(options.request);
  try {
    await trickle.next((sample) => sample.status === 200);
    await options.killMaster();
    const killedMs = performance.now();
    await options.awaitPromotion();
    const promotedMs = performance.now();
    await trickle.next((sample) => sample.sentMs >= promotedMs && sample.status === 200);
    const samples = await trickle.stop();
    const failed = samples.filter((sample) => sample.status !== 200);
    const lastFailure = failed.at(-1);
    const wholeMs =
      lastFailure === undefined
        ? killedMs
        : (samples.find((sample) => sample.sentMs > lastFailure.sentMs)?.answeredMs ?? promotedMs);
    const ms = (value: number): string => `${Math.round(value)} ms`;
    const after = samples.filter((sample) => sample.answeredMs >= killedMs);
    const statuses = [...new Set(failed.map((sample) => sample.status))].join('/') || 'none';
    const report =
      `${options.label}: promotion seen ${ms(promotedMs - killedMs)} after the kill; ` +
      `${failed.length} of ${after.length} requests since failed (${statuses}); ` +
      `whole again ${ms(wholeMs - killedMs)} after the kill, ${ms(wholeMs - promotedMs)} from the promotion`;
    return { samples, killedMs, promotedMs, wholeMs, report };
  } finally {
    await trickle.stop();
  }
}
