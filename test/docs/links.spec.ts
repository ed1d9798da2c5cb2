import { existsSync, globSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

const PAGES = ['README.md', ...globSync('docs/**/*.md')];
// Pages that other branches bring; linked from the API guide before they land.
const ARRIVING = new Set(['docs/api/filters.md']);

const withoutCode = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const anchors = (file: string) =>
  new Set([...withoutCode(readFileSync(file, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)].map(([, h]) => slug(h)));

function brokenLinks(page: string): string[] {
  const links = [...withoutCode(readFileSync(page, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target);
  return links
    .filter((target) => !/^[a-z]+:/.test(target))
    .filter((target) => {
      const [path, anchor] = target.split('#');
      const file = path === '' ? page : normalize(join(dirname(page), path));
      if (ARRIVING.has(file)) return false;
      if (!existsSync(file)) return true;
      return anchor !== undefined && file.endsWith('.md') && !anchors(file).has(anchor);
    });
}

describe('links between the README and the docs', () => {
  it.each(PAGES)('%s links only to files and headings that exist', (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it('knows GitHub anchors', () => {
    expect(slug('Pause, test and rotate')).toBe('pause-test-and-rotate');
    expect(slug('`filter` and the audit log (DESIGN 7.1)')).toBe('filter-and-the-audit-log-design-71');
  });
});
