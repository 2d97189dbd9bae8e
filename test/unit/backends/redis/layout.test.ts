import { describe, expect, it } from 'vitest';
import { describeLayout, redisLayout } from '../../../../src/backends/redis/layout.js';
import { readDoc, section } from '../../../support/markdown.js';

/** The rows of docs/redis-layout.md's table under `## Redis key layout`: key and type. */
function docRows(): { key: string; type: string }[] {
  return section(readDoc('docs/redis-layout.md'), '## Redis key layout')
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [key = '', type = ''] = line
        .split('|')
        .slice(1)
        .map((cell) => cell.trim());
      return { key: key.replace(/^`|`$/g, ''), type };
    });
}

describe('the Redis key layout', () => {
  it('is the one docs/redis-layout.md documents, row for row', () => {
    expect(docRows()).toEqual(describeLayout());
  });

  it('starts every name with the configured prefix, so a deployment may choose its own', () => {
    const layout = redisLayout('tenant7:');
    expect(describeLayout('tenant7:').every((row) => row.key.startsWith('tenant7:'))).toBe(true);
    expect(layout.settings({ kind: 'key', key: 'ak_x', subject: 'ann' })).toBe(
      layout.key('ak_x', 'ann'),
    );
    expect(layout.settings({ kind: 'subject', subject: 'ann' })).toBe(layout.subject('ann'));
  });
});
