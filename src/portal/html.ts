/**
 * HTML made from data, escaped by construction: every value put into an `html` template is
 * escaped unless it is itself a piece of HTML made by `html` (or a list of them), so a label,
 * a username or a scope can never become markup (OWASP XSS Prevention Cheat Sheet, rule 1:
 * escape `& < > " '` in element content and quoted attribute values, which is every place a
 * value goes in these pages; none goes into a script, a style, a URL scheme or an unquoted
 * attribute).
 */

const BRAND = Symbol('html');

/** A piece of HTML that is safe to put into a page as it is. */
export interface Html {
  readonly [BRAND]: true;
  readonly text: string;
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** `text` as HTML text: `& < > " '` as their character references. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

function trusted(text: string): Html {
  return { [BRAND]: true, text };
}

function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && BRAND in value;
}

/** What a template takes: text and numbers (escaped), HTML, lists of them; nothing for the rest. */
export type HtmlValue = Html | string | number | false | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === false || value === null || value === undefined) return '';
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number') return escapeHtml(String(value));
  if (isHtml(value)) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  // Not a value the type allows (a caller's cast): written as escaped JSON, never trusted.
  return escapeHtml(JSON.stringify(value) ?? '');
}

/** The tag of HTML templates: `html\`<p>${label}</p>\`` escapes `label`. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return trusted(out);
}
