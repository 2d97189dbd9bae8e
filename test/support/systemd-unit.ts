import { readFileSync } from 'node:fs';

/** A unit file's settings: section → key → every value given, in order (a key may repeat). */
export type SystemdUnit = ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;

/**
 * Reads a unit file as systemd does (systemd.syntax(7)): `[Section]` headers, `Key=Value`
 * lines, `#` and `;` comments, a trailing backslash joining the next line. An empty value
 * is kept: it resets a list setting (`CapabilityBoundingSet=`).
 */
export function readSystemdUnit(file: string): SystemdUnit {
  const sections = new Map<string, Map<string, string[]>>();
  let section: Map<string, string[]> | undefined;
  let pending = '';
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = pending + raw.trim();
    pending = '';
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.endsWith('\\')) {
      pending = `${line.slice(0, -1)} `;
      continue;
    }
    const header = /^\[(.+)\]$/.exec(line);
    if (header !== null) {
      section = new Map();
      sections.set(header[1] ?? '', section);
      continue;
    }
    const equals = line.indexOf('=');
    if (section === undefined || equals < 1) throw new Error(`${file}: not a setting: ${line}`);
    const key = line.slice(0, equals).trim();
    const values = section.get(key) ?? [];
    values.push(line.slice(equals + 1).trim());
    section.set(key, values);
  }
  return sections;
}

/** The values of a setting (none when it is not set). */
export function unitValues(unit: SystemdUnit, section: string, key: string): readonly string[] {
  return unit.get(section)?.get(key) ?? [];
}

/** The last value of a setting, which wins for a single-valued one; undefined when unset. */
export function unitValue(unit: SystemdUnit, section: string, key: string): string | undefined {
  return unitValues(unit, section, key).at(-1);
}

/** A time span of systemd.time(7) in seconds: `30`, `30s`, `1min 30s`, `2m`. */
export function timeSpanSec(span: string): number {
  const units: Record<string, number> = { '': 1, s: 1, sec: 1, m: 60, min: 60, h: 3600 };
  let total = 0;
  for (const part of span.trim().split(/\s+/)) {
    const match = /^(\d+)([a-z]*)$/.exec(part);
    const unit = units[match?.[2] ?? 'x'];
    if (match === null || unit === undefined) throw new Error(`not a time span: ${span}`);
    total += Number(match[1]) * unit;
  }
  return total;
}
