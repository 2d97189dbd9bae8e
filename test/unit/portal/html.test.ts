import { describe, expect, it } from 'vitest';
import { escapeHtml, html } from '../../../src/portal/html.js';

// The tag under another name: prettier lays out the markup of `html` templates, and these
// tests need theirs exactly as written.
const tag = html;

describe('escapeHtml', () => {
  it('writes & < > " and \' as character references, and nothing else differently', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;',
    );
    expect(escapeHtml('plain text, ünïcode ✓ and /slashes/')).toBe(
      'plain text, ünïcode ✓ and /slashes/',
    );
    expect(escapeHtml('')).toBe('');
  });
});

describe('html templates', () => {
  it('escape every text and number put into them', () => {
    const label = '<script>alert(1)</script>';
    expect(tag`<td title="${label}">${label}${7}</td>`.text).toBe(
      '<td title="&lt;script&gt;alert(1)&lt;/script&gt;">&lt;script&gt;alert(1)&lt;/script&gt;7</td>',
    );
  });

  it('keep HTML made by a template as it is, in lists too, and write nothing for absent values', () => {
    const rows = ['a&b', 'c'].map((cell) => tag`<li>${cell}</li>`);
    expect(tag`<ul>${rows}</ul>${undefined}${null}${false}`.text).toBe(
      '<ul><li>a&amp;b</li><li>c</li></ul>',
    );
  });

  it('do not take an object that merely looks like template HTML as HTML', () => {
    const forged = { text: '<b>bold</b>' } as unknown as string;
    expect(tag`${forged}`.text).toBe('{&quot;text&quot;:&quot;&lt;b&gt;bold&lt;/b&gt;&quot;}');
  });
});
