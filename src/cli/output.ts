import { styleText } from 'node:util';

type Style = 'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'cyan' | 'magenta';

/** Colours only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function colours(stream: NodeJS.WriteStream): (style: Style, text: string) => string {
  const on = stream.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
  return on ? (style, text) => styleText(style, text) : (_style, text) => text;
}

/** Left-aligned columns, for tables of nodes. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c] ?? 0))).join('  ')).join('\n');
}

const jsonValue = (_key: string, v: unknown): unknown => (typeof v === 'bigint' ? v.toString() : v instanceof Error ? v.message : v);

/** JSON that carries bigints (fences) as decimal strings. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, jsonValue, 2);
}

/** The same on one line: one record per line, for status streams (run, watch). */
export function toJsonLine(value: unknown): string {
  return JSON.stringify(value, jsonValue);
}

/** An error the CLI reports as one line and an exit code, without a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export function parsePositiveInt(name: string, max = 1_000_000): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > max) {
      throw new CliError(`${name} must be a whole number from 1 to ${max}, got "${value}"`, 2);
    }
    return n;
  };
}

export function parseUrls(name: string): (value: string) => string[] {
  return (value) => {
    const urls = value
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean);
    if (urls.length === 0) throw new CliError(`${name} needs at least one redis:// URL`, 2);
    for (const u of urls) {
      let ok = false;
      try {
        ok = ['redis:', 'rediss:'].includes(new URL(u).protocol);
      } catch {
        ok = false;
      }
      if (!ok) throw new CliError(`${name}: "${u}" is not a redis:// or rediss:// URL`, 2);
    }
    return urls;
  };
}
