import { describe, expect, it } from 'vitest';
import { throttledWarnings } from '../../../src/observability/throttled-warnings.js';

describe('throttledWarnings', () => {
  it('passes one warning per subject a minute on, counting the rest into the next', () => {
    const passed: [string, string, number][] = [];
    let nowMs = 0;
    const warnings = throttledWarnings(
      (subject, reason, suppressed) => passed.push([subject, reason, suppressed]),
      () => nowMs,
    );
    const first = warnings('https://a.example');
    const second = warnings('https://b.example');
    first('refused');
    first('refused again');
    second('timed out');
    nowMs = 59_999;
    first('still within the minute');
    nowMs = 60_000;
    first('a minute later');
    expect(passed).toEqual([
      ['https://a.example', 'refused', 0],
      ['https://b.example', 'timed out', 0],
      ['https://a.example', 'a minute later', 2],
    ]);
  });
});
