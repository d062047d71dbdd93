// The fenced code blocks of the Markdown docs, for the doctests (test/docs/): which blocks there are, their
// language, and the fragment marker a block that is not a whole program carries on the line before its fence:
//   <!-- fragment: <why it does not run as is>; runnable: examples/<file> -->
// docs/api/ is left out: TypeDoc writes it from the code (npm run docs:check keeps it current).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The languages the doctests execute. */
export const EXECUTED = ['ts', 'typescript', 'js', 'javascript'] as const;

export interface Fragment {
  /** why the block is not a whole program */
  readonly reason: string;
  /** a complete, tested version of it (a path from the repository root), when one is useful */
  readonly runnable: string | undefined;
}

export interface CodeBlock {
  /** the Markdown file, from the repository root */
  readonly doc: string;
  /** 1-based line of the opening fence */
  readonly line: number;
  /** the fence's info string's first word ('' when none) */
  readonly lang: string;
  readonly code: string;
  /** the marker on the line before the fence, if any */
  readonly fragment: Fragment | undefined;
  /** the marker line was there but did not parse: the test reports it */
  readonly badMarker: string | undefined;
}

const MARKER = /^<!--\s*fragment:\s*(.*?)\s*-->$/;

/** README.md and docs/*.md (not docs/api/, not docs/model/), from the repository root `root`. */
export function docFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** Every fenced block of `doc` (a path from `root`), in order. */
export function codeBlocks(root: string, doc: string): CodeBlock[] {
  const lines = readFileSync(join(root, doc), 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open as unknown as [string, string, string, string];
    const closing = new RegExp(`^\\s*\\${fence[0]}{${fence.length},}\\s*$`);
    const end = lines.findIndex((l, j) => j > i && closing.test(l));
    const close = end === -1 ? lines.length : end;
    const code = lines
      .slice(i + 1, close)
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
      .join('\n');
    const before = (lines[i - 1] ?? '').trim();
    let fragment: Fragment | undefined;
    let badMarker: string | undefined;
    if (before.startsWith('<!--') && /fragment/.test(before)) {
      const m = MARKER.exec(before);
      if (!m || m[1]!.length === 0) badMarker = before;
      else {
        const [reason, ...rest] = m[1]!.split(/;\s*runnable:\s*/);
        fragment = { reason: reason!.trim(), runnable: rest.length > 0 ? rest.join('').trim() : undefined };
        if (fragment.reason.length === 0) badMarker = before;
      }
    }
    blocks.push({ doc, line: i + 1, lang: lang.toLowerCase(), code, fragment, badMarker });
    i = close;
  }
  return blocks;
}

/** Whether the doctests execute blocks of this language. */
export const isExecuted = (b: CodeBlock): boolean => (EXECUTED as readonly string[]).includes(b.lang);
