/**
 * The `RateLimit` header (`"name";r=R;t=T, …`) held against what a test expects, where `t`
 * may be up to `elapsedMs` (rounded up to whole seconds) below the expected value: `t` counts
 * down from each bucket's first request, and a loaded machine puts seconds between the
 * requests of a test. `r` and the names are held exactly. Returns the header as it would be
 * compared: each `t` within the slack replaced by the expected one, so `toEqual` shows a diff
 * only where something is wrong.
 */
export function withinLimitClock(
  actual: string | readonly string[] | undefined,
  expected: string | undefined,
  elapsedMs: number,
): string | undefined {
  if (typeof actual !== 'string' || expected === undefined) return actual?.toString();
  const slackSec = Math.ceil(elapsedMs / 1000);
  const want = expected.split(', ');
  return actual
    .split(', ')
    .map((item, i) => {
      const got = /^(.*;r=\d+;t=)(\d+)$/.exec(item);
      const wanted = /^(.*;r=\d+;t=)(\d+)$/.exec(want[i] ?? '');
      if (got === null || wanted === null || got[1] !== wanted[1]) return item;
      const [t, w] = [Number(got[2]), Number(wanted[2])];
      return t <= w && t >= w - slackSec ? `${got[1]}${w}` : item;
    })
    .join(', ');
}
