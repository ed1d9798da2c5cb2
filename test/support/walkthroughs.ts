/**
 * The walkthroughs of the docs, as the docs runner reads them (docs/README.md, "Walkthroughs are tests").
 *
 * - A fenced block in `sh`, `bash` or `shell` is run; `no-run` after the language (```sh no-run) keeps
 *   it from running (e.g. `docker compose up`). Other languages are never run.
 * - A page's blocks run in order in one bash (`set -eo pipefail`), so variables carry from block to block;
 *   a command that fails fails the page.
 * - An `output` block right after a run block (blank lines between at most) states what that block
 *   prints: each of its lines must be a line of the output, in that order, other lines between allowed;
 *   `...` in a line stands for any text.
 */
export interface Walkthrough {
  blocks: { line: number; code: string; expected: string[] | null }[];
}

const RUN_LANGUAGES = new Set(['sh', 'bash', 'shell']);

/** The run blocks of a Markdown page, each with the output it states; throws on a misplaced `output` block. */
export function parseWalkthrough(markdown: string, page: string): Walkthrough {
  const lines = markdown.split('\n');
  const blocks: Walkthrough['blocks'] = [];
  let sinceRunBlock = Infinity; // non-blank lines since the last run block closed
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^```(\S*)(.*)$/.exec(lines[i]);
    if (!open) {
      if (lines[i].trim() !== '') sinceRunBlock += 1;
      continue;
    }
    const close = lines.indexOf('```', i + 1);
    if (close === -1) throw new Error(`${page}:${i + 1}: a code block is never closed`);
    const [, language, info] = open;
    const body = lines.slice(i + 1, close);
    if (language === 'output') {
      if (sinceRunBlock !== 0) throw new Error(`${page}:${i + 1}: an output block must follow a run block`);
      blocks[blocks.length - 1].expected = body.filter((line) => line.trim() !== '');
      sinceRunBlock = Infinity;
    } else if (RUN_LANGUAGES.has(language) && !info.split(/\s+/).includes('no-run')) {
      blocks.push({ line: i + 1, code: body.join('\n'), expected: null });
      sinceRunBlock = 0;
    } else {
      sinceRunBlock = Infinity;
    }
    i = close;
  }
  return { blocks };
}

const linePattern = (expected: string) =>
  new RegExp(`^${expected.trimEnd().split('...').map(escapeRegExp).join('.*')}$`);
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The first expected line that the output does not show in order, or null when all do. */
export function missingOutput(expected: string[], output: string): string | null {
  const actual = output.split('\n').map((line) => line.trimEnd());
  let at = 0;
  for (const line of expected) {
    const pattern = linePattern(line);
    while (at < actual.length && !pattern.test(actual[at])) at += 1;
    if (at === actual.length) return line;
    at += 1;
  }
  return null;
}
