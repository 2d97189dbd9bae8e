import { fromFetch, type HttpAnswer } from './http-answer.js';

export interface PollResult {
  /** From the first attempt to the answer with the wanted status. */
  readonly elapsedMs: number;
  readonly answer: HttpAnswer;
}

/**
 * Repeats an awaited request until it answers `status`, or until `deadlineMs` passes when one
 * is given (without one, only the test's timeout ends a wait that never comes); between
 * attempts it waits `intervalMs` (polling for a state change, not a fixed sleep).
 */
export async function pollStatus(
  request: () => Promise<Response>,
  status: number,
  {
    deadlineMs = Number.POSITIVE_INFINITY,
    intervalMs = 0,
  }: { deadlineMs?: number; intervalMs?: number } = {},
): Promise<PollResult> {
  const started = performance.now();
  let last: PollResult | undefined;
  while (performance.now() - started < deadlineMs) {
    const answer = await fromFetch(await request());
    last = { elapsedMs: performance.now() - started, answer };
    if (answer.status === status) return last;
    if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(
    `no ${status} within ${deadlineMs} ms; last answer: ${JSON.stringify(last ?? null)}`,
  );
}
